//! [`TeamAgents`]: a team's leader and members, built fresh for every round from the team
//! settings, and [`check_team`] for preflight.

use crate::context::{AgentDeps, RoundContext};
use crate::error::AgentError;
use crate::instructions::{join_system, leader_instruction};
use crate::leader::{Leader, LeaderConfig, LeaderOutcome, MemberTool};
use crate::member::{build_member, check_member};
use crate::params::{generation_params, request_timeout, with_model_settings};
use mixseek_config::{LoadedTeam, TeamSettings};
use std::path::{Path, PathBuf};

/// Every problem of a team's members that can be found without building anything (types,
/// provider-native tools, commands). For preflight.
pub fn check_team(settings: &TeamSettings) -> Vec<AgentError> {
    settings
        .members
        .iter()
        .filter_map(|m| check_member(m).err())
        .collect()
}

/// A team ready to play rounds.
#[derive(Debug, Clone)]
pub struct TeamAgents {
    settings: TeamSettings,
    /// Per member: the folder of the file that defined it (working directory of commands).
    member_dirs: Vec<Option<PathBuf>>,
    deps: AgentDeps,
}

impl TeamAgents {
    /// A team from settings whose members are resolved; `member_dirs[i]` is the folder of
    /// the file that defined member `i` (missing entries: none).
    pub fn new(settings: TeamSettings, member_dirs: Vec<Option<PathBuf>>, deps: AgentDeps) -> Self {
        Self {
            settings,
            member_dirs,
            deps,
        }
    }

    /// A team as loaded by `mixseek_config::load_team`: referenced members run in their
    /// file's folder, inline members in the team file's folder.
    pub fn from_loaded(team: &LoadedTeam, deps: AgentDeps) -> Self {
        let team_dir = team.file.parent().map(Path::to_path_buf);
        let dirs = (0..team.settings.members.len())
            .map(|i| match team.member_files.get(i).cloned().flatten() {
                Some(f) => f.parent().map(Path::to_path_buf),
                None => team_dir.clone(),
            })
            .collect();
        Self::new(team.settings.clone(), dirs, deps)
    }

    /// The team's settings.
    pub fn settings(&self) -> &TeamSettings {
        &self.settings
    }

    /// Builds the leader and fresh member agents (a member or model that cannot be used is an
    /// error: the round fails, as in the original).
    fn build_leader(&self) -> Result<Leader, AgentError> {
        let s = &self.settings;
        let mut tools = Vec::with_capacity(s.members.len());
        for (i, m) in s.members.iter().enumerate() {
            let dir = self.member_dirs.get(i).cloned().flatten();
            let agent = build_member(m, &self.deps, dir.as_deref())?;
            tools.push(MemberTool::new(
                m.effective_tool_name(),
                m.effective_tool_description(),
                agent,
            ));
        }
        let l = &s.leader;
        let model = self
            .deps
            .registry
            .model_with_fallbacks(&l.model, &l.fallback_models)
            .map_err(|e| AgentError::Model {
                agent: "leader".into(),
                model: l.model.clone(),
                source: Box::new(e),
            })?;
        let instruction = join_system(
            &leader_instruction(l.system_instruction.as_deref()),
            l.system_prompt.as_deref(),
        );
        let (params, request_timeout) = with_model_settings(
            generation_params(
                l.temperature,
                l.max_tokens,
                l.top_p,
                l.seed,
                l.stop_sequences.as_deref(),
            ),
            request_timeout(Some(l.timeout_seconds)),
            &l.model,
            l.model_settings.as_ref(),
            l.google_model_settings.as_ref(),
        );
        let config = LeaderConfig {
            model,
            instruction,
            params,
            request_timeout,
            max_tool_rounds: s.max_tool_rounds(),
            max_concurrent_members: usize::try_from(s.max_members()).unwrap_or(1),
            max_retries: l.max_retries,
        };
        Ok(Leader::new(config, tools, self.deps.clone()))
    }

    /// Plays one round: fresh agents, the leader run on `prompt` in `ctx`.
    pub async fn run_round(
        &self,
        prompt: &str,
        ctx: &RoundContext,
    ) -> Result<LeaderOutcome, AgentError> {
        self.build_leader()?.run(prompt, ctx).await
    }
}
