//! The logic of `mixseek evaluate` (the CLI command is a thin wrapper): find and load the
//! evaluator file (explicit path, else `WORKSPACE/configs/evaluator.toml`, else the built-in
//! defaults with a log line) with `MIXSEEK_EVALUATOR__*` overrides, the workspace's prompt
//! builder settings (loaded as a run loads them, with `MIXSEEK_PROMPT_BUILDER__*`
//! overrides), a model registry reading the process environment, then evaluate one
//! submission as team `standalone-evaluation`.

use crate::error::EvaluatorError;
use crate::evaluator::{EvaluationOutcome, Evaluator};
use crate::plan::MetricKind;
use crate::request::{EvaluationRequest, STANDALONE_TEAM_ID};
use mixseek_config::load_evaluator;
use mixseek_config::{EnvVars, Origin, SourceMap};
use mixseek_llm::{Env, ModelRegistry, RegistryConfig};
use mixseek_prompt::{PromptBuilder, load_for_run};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What to evaluate and where the settings are.
#[derive(Debug, Clone)]
pub struct StandaloneArgs {
    /// The workspace (for `configs/evaluator.toml` and `configs/prompt_builder.toml`).
    pub workspace: PathBuf,
    /// An explicit evaluator file (already resolved); it must exist.
    pub config: Option<PathBuf>,
    /// The user prompt.
    pub prompt: String,
    /// The submission to score.
    pub submission: String,
    /// The documents attached to the task (already extracted; default: none), shown in the
    /// judges' prompts as in a competition.
    pub attachments: Vec<mixseek_core::Attachment>,
}

/// A finished standalone evaluation.
#[derive(Debug, Clone)]
pub struct Standalone {
    /// The scores.
    pub outcome: EvaluationOutcome,
    /// True when a judge was the offline `mock:` provider (the scores are made up).
    pub mock_judges: bool,
}

/// Why `mixseek evaluate` could not produce a score.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StandaloneError {
    /// Bad input: configuration, request (exit 2).
    #[error("{message}")]
    Input {
        /// What is wrong.
        message: String,
        /// What to do about it.
        hint: Option<String>,
    },
    /// The evaluation ran and failed (exit 1).
    #[error("{message}")]
    Failed {
        /// What failed.
        message: String,
        /// What to do about it.
        hint: Option<String>,
    },
}

pub(crate) fn input(message: impl Into<String>, hint: Option<&str>) -> StandaloneError {
    StandaloneError::Input {
        message: message.into(),
        hint: hint.map(str::to_string),
    }
}

pub(crate) fn from_evaluator(e: EvaluatorError) -> StandaloneError {
    let hint = match &e {
        EvaluatorError::Model { .. } => Some(
            "check default_model / model / judges in the evaluator file and the provider's API key variable (e.g. OPENAI_API_KEY)",
        ),
        EvaluatorError::UnknownMetric(_) => {
            Some("built-in metrics: ClarityCoherence, Coverage, LLMPlain, Relevance")
        }
        _ => None,
    };
    let message = format!("Evaluation failed: {e}");
    if e.is_input_error() {
        input(message, hint)
    } else {
        StandaloneError::Failed {
            message,
            hint: hint.map(str::to_string),
        }
    }
}

/// Loads the evaluator as `mixseek evaluate` does (explicit file, else the workspace's, else
/// the built-in defaults; the workspace's prompt builder settings; a registry reading the
/// process environment). Also says whether a judge is the offline `mock:` provider.
pub(crate) fn load_evaluator_for(
    workspace: &Path,
    config: Option<&Path>,
) -> Result<(Evaluator, bool), StandaloneError> {
    let origin = match config {
        Some(path) => {
            if !path.is_file() {
                return Err(input(
                    format!("Evaluation config file not found: {}", path.display()),
                    Some("check the path given with -c/--config"),
                ));
            }
            tracing::debug!(path = %path.display(), "Loading custom config");
            Origin::Explicit(path.to_path_buf())
        }
        None => {
            let implicit = workspace.join("configs").join("evaluator.toml");
            if implicit.is_file() {
                tracing::debug!(path = %implicit.display(), "Using default config");
                Origin::Workspace(implicit)
            } else {
                tracing::warn!(
                    "Configuration file not found: {}. Using default configuration.",
                    implicit.display()
                );
                Origin::BuiltIn
            }
        }
    };
    let mut sources = SourceMap::default();
    let part = load_evaluator(origin.clone(), &EnvVars::from_process(), &mut sources);
    for w in &part.warnings.items {
        tracing::warn!("{w}");
    }
    if !part.errors.is_empty() {
        let text: Vec<String> = part.errors.items.iter().map(ToString::to_string).collect();
        return Err(input(
            format!("invalid evaluator configuration:\n  {}", text.join("\n  ")),
            None,
        ));
    }
    let Some(settings) = part.value else {
        return Err(input(
            "the evaluator configuration could not be loaded",
            None,
        ));
    };
    // The prompt builder settings exactly as a run without an orchestrator file would load
    // them: WORKSPACE/configs/prompt_builder.toml (else the defaults) with the
    // MIXSEEK_PROMPT_BUILDER__* overrides.
    let pb = load_for_run(None, workspace, &EnvVars::from_process())
        .map_err(|e| input(format!("prompt builder settings: {e}"), None))?;
    for w in &pb.warnings {
        tracing::warn!("{w}");
    }
    let builder = PromptBuilder::new(&pb.settings)
        .map_err(|e| input(format!("prompt builder settings: {e}"), None))?;
    let registry =
        ModelRegistry::new(RegistryConfig::new().with_env(Env::process())).map_err(|e| {
            StandaloneError::Failed {
                message: e.to_string(),
                hint: None,
            }
        })?;
    let mut evaluator =
        Evaluator::new(settings, Arc::new(registry), Arc::new(builder)).map_err(from_evaluator)?;
    if let Some(dir) = origin
        .file()
        .and_then(|f| f.parent())
        .filter(|d| !d.as_os_str().is_empty())
    {
        evaluator = evaluator.with_working_dir(dir);
    }
    let mock_judges = evaluator
        .metrics()
        .iter()
        .any(|m| matches!(&m.kind, MetricKind::Llm(l) if l.uses_mock()));
    Ok((evaluator, mock_judges))
}

/// Loads everything and evaluates `args.submission`.
pub async fn run_standalone(args: StandaloneArgs) -> Result<Standalone, StandaloneError> {
    let (evaluator, mock_judges) = load_evaluator_for(&args.workspace, args.config.as_deref())?;
    let request = EvaluationRequest {
        team_id: Some(STANDALONE_TEAM_ID.into()),
        ..EvaluationRequest::new(args.prompt, args.submission).with_attachments(args.attachments)
    };
    let outcome = evaluator.evaluate(&request).await.map_err(from_evaluator)?;
    Ok(Standalone {
        outcome,
        mock_judges,
    })
}
