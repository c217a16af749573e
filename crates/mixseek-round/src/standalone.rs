//! One team run outside a competition (`mixseek team`): the team file with its member
//! references, the workspace's evaluator, judgment and prompt-builder files
//! (`WORKSPACE/configs/{evaluator,judgment,prompt_builder}.toml`, else the built-in
//! defaults), the built-in providers, no store (no ranking, events dropped).

use crate::controller::{RoundController, RoundSettings};
use crate::judgment::JudgmentClient;
use crate::report::TeamReport;
use mixseek_agents::{AgentDeps, TeamAgents, check_team};
use mixseek_config::{
    ConfigIssue, EnvVars, LoadError, OrchestratorSettings, Origin, Part, SourceMap, Workspace,
};
use mixseek_config::{load_evaluator, load_judgment, load_prompt_builder, load_team};
use mixseek_core::{Attachment, ExecutionId};
use mixseek_llm::{Env, ModelRegistry, RegistryConfig};
use mixseek_prompt::PromptBuilder;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What to run.
#[derive(Debug, Clone)]
pub struct StandaloneOptions {
    /// The workspace (configurations, logs).
    pub workspace: Workspace,
    /// The team TOML (already resolved to an existing path).
    pub team_file: PathBuf,
    /// The path as the user gave it (for messages).
    pub team_entry: String,
    /// The user prompt.
    pub prompt: String,
    /// Rounds at most (default 5).
    pub max_rounds: Option<u32>,
    /// Rounds always played (default `min(2, max_rounds)`).
    pub min_rounds: Option<u32>,
    /// `MIXSEEK_*` overrides of the settings files.
    pub env: EnvVars,
    /// Where API keys come from.
    pub llm_env: Env,
    /// The documents attached to the task (already extracted; default: none), shown in every
    /// team, judgment and evaluator prompt like a competition's.
    pub attachments: Vec<Attachment>,
}

/// The run could not start: bad configuration or an unusable model or member.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StandaloneError {
    /// The team, judgment, evaluator or prompt builder files could not be loaded.
    #[error(transparent)]
    Config(#[from] LoadError),
    /// A model, member or the evaluator could not be set up.
    #[error("{message}")]
    Setup {
        /// What went wrong.
        message: String,
        /// What to do about it.
        hint: Option<String>,
    },
}

impl StandaloneError {
    fn setup(message: impl Into<String>) -> Self {
        StandaloneError::Setup {
            message: message.into(),
            hint: None,
        }
    }
    /// What to do about it, when known.
    pub fn hint(&self) -> Option<&str> {
        match self {
            StandaloneError::Setup { hint, .. } => hint.as_deref(),
            StandaloneError::Config(_) => None,
        }
    }
}

/// A finished run: the report and whether the team completed.
#[derive(Debug, Clone)]
pub struct StandaloneRun {
    /// What to print.
    pub report: TeamReport,
    /// Whether the team completed (did not fail).
    pub completed: bool,
}

fn take<T>(part: Part<T>) -> Result<T, StandaloneError> {
    let Part {
        value,
        errors,
        warnings,
        ..
    } = part;
    for w in &warnings.items {
        tracing::warn!("{w}");
    }
    match value {
        Some(v) if errors.is_empty() => Ok(v),
        _ => {
            let mut issues = errors.items;
            if issues.is_empty() {
                issues.push(ConfigIssue::new("", "the file could not be loaded"));
            }
            Err(LoadError { issues }.into())
        }
    }
}

fn workspace_origin(ws: &Workspace, file: &str) -> Origin {
    let p = ws.configs_dir().join(file);
    if p.exists() {
        Origin::Workspace(p)
    } else {
        Origin::BuiltIn
    }
}

/// Loads everything, checks models and members, and plays the team's rounds.
pub async fn run_team(options: StandaloneOptions) -> Result<StandaloneRun, StandaloneError> {
    let ws = &options.workspace;
    let env = &options.env;
    let mut sources = SourceMap::default();
    let team = take(load_team(
        ws,
        &options.team_entry,
        &options.team_file,
        env,
        &mut sources,
        "",
    ))?;
    let evaluator_origin = workspace_origin(ws, "evaluator.toml");
    let evaluator_dir = evaluator_origin
        .file()
        .and_then(Path::parent)
        .map_or_else(|| ws.root.clone(), Path::to_path_buf);
    let evaluator_settings = take(load_evaluator(evaluator_origin, env, &mut sources))?;
    let judgment_settings = take(load_judgment(
        workspace_origin(ws, "judgment.toml"),
        env,
        &mut sources,
    ))?;
    let prompt_settings = take(load_prompt_builder(
        workspace_origin(ws, "prompt_builder.toml"),
        None,
        env,
        &mut sources,
    ))?;

    let max_rounds = options
        .max_rounds
        .unwrap_or(OrchestratorSettings::default().max_rounds);
    let min_rounds = options
        .min_rounds
        .unwrap_or(OrchestratorSettings::default().min_rounds.min(max_rounds));
    if !(1..=10).contains(&max_rounds) {
        return Err(StandaloneError::setup(format!(
            "max_rounds must be in 1..=10, got {max_rounds}"
        )));
    }
    if min_rounds < 1 || min_rounds > max_rounds {
        return Err(StandaloneError::setup(format!(
            "min_rounds ({min_rounds}) must be <= max_rounds ({max_rounds})"
        )));
    }

    if let Some(e) = check_team(&team.settings).into_iter().next() {
        return Err(StandaloneError::Setup {
            message: e.to_string(),
            hint: e.hint().map(str::to_string),
        });
    }
    let registry = Arc::new(
        ModelRegistry::new(RegistryConfig::new().with_env(options.llm_env.clone()))
            .map_err(|e| StandaloneError::setup(e.to_string()))?,
    );
    let mut models: Vec<(String, String)> =
        vec![("leader".into(), team.settings.leader.model.clone())];
    for m in &team.settings.members {
        if m.agent_type != Some(mixseek_config::MemberType::Command) {
            models.push((
                format!("member `{}`", m.name.as_deref().unwrap_or("")),
                m.model.clone().unwrap_or_default(),
            ));
        }
    }
    models.push(("judgment".into(), judgment_settings.model.clone()));
    for (who, model) in models {
        registry
            .check_model(&model)
            .map_err(|e| StandaloneError::Setup {
                message: format!("{who}: cannot use model `{model}`: {e}"),
                hint: None,
            })?;
    }

    let prompts =
        PromptBuilder::new(&prompt_settings).map_err(|e| StandaloneError::setup(e.to_string()))?;
    let evaluator = mixseek_evaluator::Evaluator::new(
        evaluator_settings,
        registry.clone(),
        Arc::new(prompts.clone()),
    )
    .map_err(|e| StandaloneError::setup(format!("evaluator: {e}")))?
    .with_working_dir(evaluator_dir);
    let judgment = JudgmentClient::new(&judgment_settings, &registry, prompts.clone())
        .map_err(|e| StandaloneError::setup(e.to_string()))?;
    let agents = TeamAgents::from_loaded(&team, AgentDeps::new(registry, prompts.clone()));
    let orchestrator = OrchestratorSettings {
        min_rounds,
        max_rounds,
        ..OrchestratorSettings::default()
    };
    let controller = RoundController::new(
        agents,
        prompts,
        Arc::new(evaluator),
        judgment,
        RoundSettings::new(&orchestrator),
    )
    .with_attachments(options.attachments);

    let execution_id = ExecutionId::new_v4();
    tracing::info!(
        execution_id = execution_id.as_str(),
        team_id = controller.team_id().as_str(),
        max_rounds,
        min_rounds,
        "running one team"
    );
    match controller
        .run(&execution_id, &options.prompt, Vec::new())
        .await
    {
        Ok(result) => Ok(StandaloneRun {
            report: TeamReport::from_result(&result),
            completed: true,
        }),
        Err(failure) => {
            let message = failure.error.to_string();
            let best = controller
                .finish_failed(
                    &execution_id,
                    &failure.rounds,
                    &message,
                    false,
                    failure.usage.total(),
                )
                .await
                .ok()
                .flatten();
            let report = TeamReport::from_failure(
                &execution_id,
                controller.team_id(),
                controller.team_name(),
                &failure,
                best,
            );
            Ok(StandaloneRun {
                report,
                completed: false,
            })
        }
    }
}
