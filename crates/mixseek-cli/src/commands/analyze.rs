//! `mixseek analyze EXECUTION_ID [--team T] [--model M]`: the themes of the judges' comments
//! (recurring criticisms and praises per team and metric across rounds), stored and printed.
//! The engine lives in `mixseek_orchestrator::themes`, the rendering in
//! `mixseek_store::report`; the HTML report shows the latest analysis.

use crate::context::Ctx;
use crate::error::CliError;
use mixseek_llm::ModelRegistry;
use mixseek_orchestrator::themes::{self, ThemeError, ThemeOptions};
use mixseek_store::report::Format;
use mixseek_store::{Store, ThemeAnalysis, db_path};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// `mixseek analyze …`
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The execution (an id or a unique prefix).
    #[arg(value_name = "EXECUTION_ID")]
    pub execution: String,
    /// Only this team (its id or its name).
    #[arg(long, value_name = "TEAM")]
    pub team: Option<String>,
    /// The model that names themes, with a summary, a severity and quotes (e.g.
    /// `openai:gpt-4o-mini`, or `mock:themes` offline). Without it: keywords only (RAKE, no
    /// LLM call).
    #[arg(long, short = 'm', value_name = "PROVIDER:MODEL")]
    pub model: Option<String>,
    /// Orchestrator TOML whose [providers], [pricing], [cache] and [privacy] tables to use
    /// (with `mask_pii`, the stored themes and quotes are masked).
    #[arg(long = "llm-config", value_name = "ORCHESTRATOR.toml")]
    pub llm_config: Option<PathBuf>,
    /// Keywords kept per team and metric.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=100))]
    pub max_keywords: u16,
    /// Teams whose themes the model names at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub max_concurrent: u16,
    /// Timeout of one call to the model, in seconds.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub timeout_seconds: u64,
    /// Output format.
    #[arg(long, short = 'f', default_value = "table", value_parser = Format::NAMES)]
    pub format: String,
}

fn theme_error(e: ThemeError) -> CliError {
    match e {
        ThemeError::Store(e) => CliError::from_store(&e),
        ThemeError::Model { .. } => CliError::usage(e.to_string()).with_hint(
            "set the provider's API key variable, or pass --llm-config with a [providers.<name>] table",
        ),
        ThemeError::UnknownTeam { ref execution_id, .. } => {
            let hint = format!("`mixseek show {execution_id}` lists the teams");
            CliError::usage(e.to_string()).with_hint(hint)
        }
        ThemeError::NoRounds(_) => CliError::usage(e.to_string()),
    }
}

/// Runs `mixseek analyze`.
pub(crate) async fn run(args: Args, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let format = Format::parse(&args.format).map_err(|e| CliError::from_store(&e))?;
    let (registry, masker) = super::llm::llm_settings(args.llm_config.as_deref(), ctx)?;
    let registry = ModelRegistry::new(registry).map_err(|e| CliError::usage(e.to_string()))?;
    let store = Store::open(db_path(&ctx.workspace()?)).map_err(|e| CliError::from_store(&e))?;
    let execution = store
        .resolve_execution(&args.execution)
        .map_err(|e| CliError::from_store(&e))?;
    let options = ThemeOptions {
        team: args.team,
        model: args.model,
        max_keywords: usize::from(args.max_keywords),
        max_concurrent: usize::from(args.max_concurrent),
        timeout: Duration::from_secs(args.timeout_seconds),
        ..ThemeOptions::default()
    };
    let analysis = themes::analyze(&store, &execution, &options, &registry)
        .await
        .map_err(theme_error)?;
    if analysis.summary.failed_calls > 0 {
        tracing::warn!(
            failed = analysis.summary.failed_calls,
            calls = analysis.summary.llm_calls,
            "some calls to the theme model failed: their rounds have keyword themes only"
        );
    }
    let writer = store.writer(masker).map_err(|e| CliError::from_store(&e))?;
    writer
        .write_themes(&analysis)
        .await
        .map_err(|e| CliError::from_store(&e))?;
    // what is printed is what was stored (masked when [privacy] masks)
    let analysis = store
        .theme_analysis(&analysis.summary.analysis_id)
        .map_err(|e| CliError::from_store(&e))?
        .unwrap_or(analysis);
    let mut text =
        mixseek_store::report::themes(&analysis, format).map_err(|e| CliError::from_store(&e))?;
    text.push_str(&mock_note(&analysis, format));
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush())?;
    Ok(ExitCode::SUCCESS)
}

/// Under a table or Markdown: the mock provider's themes are made up (its quotes are not in
/// the comments, so they are dropped).
fn mock_note(a: &ThemeAnalysis, format: Format) -> String {
    let mocked = a
        .summary
        .model
        .as_deref()
        .is_some_and(|m| m.starts_with("mock:"));
    match (mocked, format) {
        (true, Format::Table | Format::Markdown) => "\nNote: themes named by the offline mock: \
             provider are made up (the keyword themes are real).\n"
            .into(),
        _ => String::new(),
    }
}
