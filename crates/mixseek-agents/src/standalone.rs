//! One member agent outside a competition (`mixseek member`): a member file or one of the
//! original's bundled agents (`plain`, `web-search`, `code-exec`, their 0.1.0a22 files),
//! the workspace's prompt-builder settings, the built-in providers, and the original's time
//! limit (the command's `--timeout`, else the agent's `timeout_seconds`, else 30 s).

use crate::context::{AgentDeps, RoundContext};
use crate::member::{MemberOutput, build_member};
use mixseek_config::{
    ConfigIssue, EnvVars, LoadError, MemberSettings, Origin, SourceMap, Workspace,
};
use mixseek_core::{MemberStatus, Usage};
use mixseek_llm::{Env, ModelRegistry, RegistryConfig};
use mixseek_prompt::{PromptBuilder, PromptContext};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The original's bundled member agents, by name, with their files.
pub const BUNDLED_AGENTS: &[(&str, &str)] = &[
    ("code-exec", include_str!("../assets/agents/code-exec.toml")),
    ("plain", include_str!("../assets/agents/plain.toml")),
    (
        "web-search",
        include_str!("../assets/agents/web-search.toml"),
    ),
];

/// The time limit without `--timeout` or `timeout_seconds`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Which member to run.
#[derive(Debug, Clone)]
pub enum MemberSource {
    /// A member file (`[agent]`).
    File(PathBuf),
    /// A bundled agent by name.
    Bundled(String),
}

/// What `mixseek member` asks for.
#[derive(Debug, Clone)]
pub struct MemberRunOptions {
    /// The workspace (its `configs/prompt_builder.toml`, and where relative paths start).
    pub workspace: Workspace,
    /// The member.
    pub source: MemberSource,
    /// The task.
    pub prompt: String,
    /// `--timeout`: the whole execution's limit in seconds.
    pub timeout_seconds: Option<u64>,
    /// `--max-tokens`.
    pub max_tokens: Option<u64>,
    /// `--temperature`.
    pub temperature: Option<f64>,
    /// `MIXSEEK_*` variables.
    pub env: EnvVars,
    /// Provider keys and endpoints.
    pub llm_env: Env,
}

/// What went wrong before the member could run.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MemberRunError {
    /// The member file (or the prompt-builder file) does not load.
    #[error(transparent)]
    Config(#[from] LoadError),
    /// `--agent` names no bundled agent.
    #[error("Unknown member agent '{0}'. Available agents: code-exec, plain, web-search")]
    UnknownAgent(String),
    /// The providers or prompts could not be set up.
    #[error("{0}")]
    Setup(String),
}

/// One run of a member.
#[derive(Debug, Clone)]
pub struct MemberRun {
    /// The member's settings, as run (overrides applied).
    pub settings: MemberSettings,
    /// What it returned (a timeout or a build failure is an `ERROR`, as in the original).
    pub output: MemberOutput,
    /// The whole run's time, building included.
    pub elapsed: Duration,
    /// When the result was made.
    pub timestamp: chrono::DateTime<chrono::Utc>,
}

impl MemberRun {
    /// The member's name.
    pub fn name(&self) -> &str {
        self.settings.name.as_deref().unwrap_or("member")
    }
    /// The member's type.
    pub fn agent_type(&self) -> String {
        self.settings
            .agent_type
            .map_or_else(|| "plain".to_string(), |t| t.to_string())
    }
    /// Whether it ended `ERROR`.
    pub fn failed(&self) -> bool {
        self.output.status == MemberStatus::Error
    }
    /// The original's `usage_info` (`total_tokens`, `prompt_tokens`, `completion_tokens`,
    /// `requests`), with real counts; none for a member that made no call.
    pub fn usage_info(&self) -> Option<serde_json::Value> {
        let u: Usage = self.output.usage;
        (u.requests > 0).then(|| {
            serde_json::json!({
                "total_tokens": u.input_tokens + u.output_tokens,
                "prompt_tokens": u.input_tokens,
                "completion_tokens": u.output_tokens,
                "requests": u.requests,
            })
        })
    }
    /// The original's `metadata` (`model_id`, `temperature`, `max_tokens`).
    pub fn metadata(&self) -> serde_json::Value {
        serde_json::json!({
            "model_id": self.settings.model,
            "temperature": self.settings.temperature,
            "max_tokens": self.settings.max_tokens,
        })
    }
}

fn take<T>(part: mixseek_config::Part<T>) -> Result<T, MemberRunError> {
    for w in &part.warnings.items {
        tracing::warn!("{w}");
    }
    match part.value {
        Some(v) if part.errors.is_empty() => Ok(v),
        _ => {
            let mut issues = part.errors.items;
            if issues.is_empty() {
                issues.push(ConfigIssue::new("", "the file could not be loaded"));
            }
            Err(LoadError { issues }.into())
        }
    }
}

/// Loads the member (overrides applied), builds it and runs it on the prompt under the time
/// limit.
pub async fn run_member(options: MemberRunOptions) -> Result<MemberRun, MemberRunError> {
    let started = Instant::now();
    let (path, text) = match &options.source {
        MemberSource::File(p) => (p.clone(), None),
        MemberSource::Bundled(name) => {
            let Some((_, text)) = BUNDLED_AGENTS.iter().find(|(n, _)| n == name) else {
                return Err(MemberRunError::UnknownAgent(name.clone()));
            };
            (
                PathBuf::from(format!("<bundled agent {name}>")),
                Some(*text),
            )
        }
    };
    let mut settings = take(mixseek_config::load_member(&path, text, &options.env))?;
    if options.max_tokens.is_some() {
        settings.max_tokens = options.max_tokens;
    }
    if options.temperature.is_some() {
        settings.temperature = options.temperature;
    }
    let prompt_file = options.workspace.configs_dir().join("prompt_builder.toml");
    let origin = if prompt_file.exists() {
        Origin::Workspace(prompt_file)
    } else {
        Origin::BuiltIn
    };
    let prompt_settings = take(mixseek_config::load_prompt_builder(
        origin,
        None,
        &options.env,
        &mut SourceMap::default(),
    ))?;
    let prompts =
        PromptBuilder::new(&prompt_settings).map_err(|e| MemberRunError::Setup(e.to_string()))?;
    let registry = Arc::new(
        ModelRegistry::new(RegistryConfig::new().with_env(options.llm_env.clone()))
            .map_err(|e| MemberRunError::Setup(e.to_string()))?,
    );
    let limit = options
        .timeout_seconds
        .or(settings.timeout_seconds)
        .filter(|s| *s > 0)
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs);
    let deps = AgentDeps::new(registry, prompts);
    let dir = match &options.source {
        MemberSource::File(p) => p.parent().map(Path::to_path_buf),
        MemberSource::Bundled(_) => Some(options.workspace.root.clone()),
    };
    let ctx = RoundContext::new(PromptContext {
        user_prompt: options.prompt.clone(),
        round_number: 1,
        team_id: "standalone-member".into(),
        team_name: "standalone-member".into(),
        ..Default::default()
    });
    let output = match build_member(&settings, &deps, dir.as_deref()) {
        Err(e) => MemberOutput::error(
            format!("Execution failed: {e}"),
            Usage::default(),
            Vec::new(),
        ),
        Ok(agent) => {
            match tokio::time::timeout(limit, agent.execute(&options.prompt, &ctx)).await {
                Ok(o) => o,
                Err(_) => MemberOutput::error(
                    format!("Execution timeout after {}s", limit.as_secs()),
                    Usage::default(),
                    Vec::new(),
                ),
            }
        }
    };
    Ok(MemberRun {
        settings,
        output,
        elapsed: started.elapsed(),
        timestamp: chrono::Utc::now(),
    })
}
