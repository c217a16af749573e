//! [`UnitAgents`]: what plays a round for one `[[orchestrator.teams]]` entry — a team (leader
//! and members) or a workflow (fixed steps). The round loop around it is the same for both.

use crate::context::{AgentDeps, RoundContext};
use crate::error::AgentError;
use crate::leader::LeaderOutcome;
use crate::team::TeamAgents;
use crate::workflow::WorkflowAgents;
use mixseek_config::LoadedUnit;
use mixseek_core::TeamId;

/// A team or a workflow, ready to play rounds.
// One per unit of a run: the size difference costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum UnitAgents {
    /// A leader with its members.
    Team(TeamAgents),
    /// A fixed list of steps.
    Workflow(WorkflowAgents),
}

impl UnitAgents {
    /// The agents of a loaded unit.
    pub fn from_loaded(unit: &LoadedUnit, deps: AgentDeps) -> Self {
        match unit {
            LoadedUnit::Team(t) => UnitAgents::Team(TeamAgents::from_loaded(t, deps)),
            LoadedUnit::Workflow(w) => UnitAgents::Workflow(WorkflowAgents::from_loaded(w, deps)),
        }
    }

    /// The team id (a workflow's `workflow_id`).
    pub fn team_id(&self) -> &TeamId {
        match self {
            UnitAgents::Team(t) => &t.settings().team_id,
            UnitAgents::Workflow(w) => &w.settings().workflow_id,
        }
    }

    /// The display name (a workflow's `workflow_name`).
    pub fn team_name(&self) -> &str {
        match self {
            UnitAgents::Team(t) => &t.settings().team_name,
            UnitAgents::Workflow(w) => &w.settings().workflow_name,
        }
    }

    /// The unit's own domain context (workflows have none).
    pub fn domain_context(&self) -> Option<&str> {
        match self {
            UnitAgents::Team(t) => t.settings().domain_context.as_deref(),
            UnitAgents::Workflow(_) => None,
        }
    }

    /// The unit's own answer language (workflows have none).
    pub fn language(&self) -> Option<&str> {
        match self {
            UnitAgents::Team(t) => t.settings().language.as_deref(),
            UnitAgents::Workflow(_) => None,
        }
    }

    /// Whether it is a workflow.
    pub fn is_workflow(&self) -> bool {
        matches!(self, UnitAgents::Workflow(_))
    }

    /// Plays one round on `prompt` (the rendered team prompt) in `ctx`.
    pub async fn run_round(
        &self,
        prompt: &str,
        ctx: &RoundContext,
    ) -> Result<LeaderOutcome, AgentError> {
        match self {
            UnitAgents::Team(t) => t.run_round(prompt, ctx).await,
            UnitAgents::Workflow(w) => w.run_round(prompt, ctx).await,
        }
    }
}

impl From<TeamAgents> for UnitAgents {
    fn from(t: TeamAgents) -> Self {
        UnitAgents::Team(t)
    }
}
