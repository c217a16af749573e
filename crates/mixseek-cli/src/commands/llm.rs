//! `mixseek llm MODEL "prompt" [--system S] [--schema FILE.json] [-f text|json]`: one request
//! to one model — the quickest way to check a key, a base URL or a local server. Prints the
//! answer (the validated object with `--schema`), then the model, attempts and usage. The
//! logic lives in `mixseek_llm::run_direct`.

use crate::context::Ctx;
use crate::error::CliError;
use crate::output::{TextOrJson, to_json_pretty};
use mixseek_llm::{
    DirectRequest, Env, ErrorKind, GenerationParams, LlmError, ModelRegistry, RegistryConfig,
    run_direct,
};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// `mixseek llm …`
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Model id `provider:model` (e.g. `openai:gpt-4o`, `anthropic:claude-sonnet-4-5`,
    /// `google-gla:gemini-2.5-flash`, `ollama:llama3.2` with a [providers.ollama] table,
    /// `mock:default` offline).
    pub model: String,
    /// The user prompt.
    pub prompt: String,
    /// System prompt.
    #[arg(long)]
    pub system: Option<String>,
    /// A JSON schema file: ask for a structured answer, validate it and repair it.
    #[arg(long, value_name = "FILE.json")]
    pub schema: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'f', long = "format", value_enum, default_value = "text")]
    pub format: TextOrJson,
    /// Orchestrator TOML whose [providers], [pricing] and [cache] tables to use.
    #[arg(short = 'c', long = "config")]
    pub config: Option<PathBuf>,
    /// Fallback model tried when the model fails (repeatable, in order).
    #[arg(long = "fallback", value_name = "MODEL")]
    pub fallbacks: Vec<String>,
    /// Sampling temperature.
    #[arg(long)]
    pub temperature: Option<f64>,
    /// Maximum output tokens.
    #[arg(long)]
    pub max_tokens: Option<u32>,
    /// Time limit of the call in seconds, retries included (default: the provider's
    /// timeout_seconds, 300).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Repair rounds for an invalid structured answer.
    #[arg(long, default_value_t = 2)]
    pub max_repairs: u32,
}

fn llm_error(e: LlmError) -> CliError {
    let mut message = e.to_string();
    if let Some(raw) = e.raw_output() {
        message.push_str("\nraw output:\n");
        message.push_str(raw);
    }
    match e.kind {
        ErrorKind::Config => CliError::usage(message).with_hint(
            "set the provider's API key variable, or define the provider in a [providers.<name>] table and pass -c",
        ),
        ErrorKind::Permanent if matches!(e.status, Some(401) | Some(403)) => {
            CliError::failure(message).with_hint("check the API key (and the base URL)")
        }
        ErrorKind::Transport => CliError::failure(message).with_hint("is the server running and the base URL right?"),
        _ => CliError::failure(message),
    }
}

/// A registry configuration reading the process environment and, with `config`, the
/// [providers], [pricing] and [cache] tables of that orchestrator file (errors in those tables
/// only stop the command; the rest of the file is not this command's business).
pub(crate) fn registry_config(
    config: Option<&std::path::Path>,
    ctx: &Ctx,
) -> Result<RegistryConfig, CliError> {
    llm_settings(config, ctx).map(|(registry, _)| registry)
}

/// [`registry_config`] and the masker of the file's `[privacy]` table (a disabled one without
/// a file), for the commands that store what they get (`arena`, `analyze`).
pub(crate) fn llm_settings(
    config: Option<&std::path::Path>,
    ctx: &Ctx,
) -> Result<(RegistryConfig, mixseek_core::PiiMasker), CliError> {
    let mut masker = mixseek_core::PiiMasker::disabled();
    let mut registry_config = RegistryConfig::new().with_env(Env::process());
    if let Some(path) = config {
        let path = ctx.resolve_config_path(path)?;
        let report = mixseek_config::load(
            &path,
            &ctx.workspace,
            &mixseek_config::EnvVars::from_process(),
            &mixseek_config::Overrides::default(),
        );
        let relevant: Vec<String> = report
            .orchestrator
            .errors
            .items
            .iter()
            .filter(|i| {
                ["providers", "pricing", "cache", "privacy"]
                    .iter()
                    .any(|t| i.key.starts_with(t))
            })
            .map(|i| format!("  - {i}"))
            .collect();
        if !relevant.is_empty() {
            return Err(CliError::usage(format!(
                "invalid LLM settings in {}:\n{}",
                path.display(),
                relevant.join("\n")
            )));
        }
        let file = report
            .orchestrator
            .value
            .ok_or_else(|| CliError::usage(format!("cannot read {}", path.display())))?;
        masker = file.privacy.masker().map_err(|e| {
            CliError::usage(format!("invalid [privacy] in {}: {e}", path.display()))
        })?;
        crate::redact::install(
            masker.clone(),
            mixseek_llm::api_key_values(&file.providers, &Env::process()),
        );
        registry_config = registry_config
            .with_providers(file.providers)
            .with_pricing(file.pricing)
            .with_cache(file.cache, Some(ctx.workspace()?));
    }
    Ok((registry_config, masker))
}

/// Runs `mixseek llm`.
pub(crate) async fn run(args: Args, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let registry_config = registry_config(args.config.as_deref(), ctx)?;
    let schema = match &args.schema {
        None => None,
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| {
                CliError::usage(format!("cannot read the schema {}: {e}", p.display()))
            })?;
            let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                CliError::usage(format!("the schema {} is not valid JSON: {e}", p.display()))
            })?;
            let name = p
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("response")
                .to_string();
            Some((name, value))
        }
    };
    let timeout = match args.timeout {
        Some(t) if !(t.is_finite() && t > 0.0) => {
            return Err(CliError::usage(
                "--timeout must be a positive number of seconds",
            ));
        }
        Some(t) => Some(Duration::from_secs_f64(t)),
        None => None,
    };
    let registry = ModelRegistry::new(registry_config).map_err(llm_error)?;
    let request = DirectRequest {
        model: args.model.clone(),
        prompt: args.prompt.clone(),
        system: args.system.clone(),
        schema,
        fallbacks: args.fallbacks.clone(),
        params: GenerationParams {
            temperature: args.temperature,
            max_tokens: args.max_tokens,
            ..GenerationParams::default()
        },
        timeout,
        max_repairs: Some(args.max_repairs),
    };
    let outcome = run_direct(&registry, &request).await.map_err(llm_error)?;
    match args.format {
        TextOrJson::Json => println!("{}", to_json_pretty(&outcome)),
        TextOrJson::Text => println!("{}", outcome.render_text(!ctx.quiet)),
    }
    Ok(ExitCode::SUCCESS)
}
