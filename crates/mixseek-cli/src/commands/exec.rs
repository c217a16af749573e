//! `mixseek exec`: preflight, then the competition.

use crate::context::Ctx;
use crate::error::CliError;
use crate::output::{TextOrJson, to_json_pretty};
use mixseek_config::preflight::{self, CheckStatus, PreflightReport};
use mixseek_config::{LoadReport, Overrides};
use std::path::PathBuf;
use std::process::ExitCode;

pub const RULE: &str = "━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The task for every team (`-` reads it from stdin)
    #[arg(required_unless_present_any = ["prompt_file", "resume"])]
    pub prompt: Option<String>,
    /// Read the task from a file
    #[arg(long, value_name = "FILE", conflicts_with = "prompt")]
    pub prompt_file: Option<PathBuf>,
    /// Orchestrator TOML (relative: against the workspace, then the current directory)
    #[arg(short = 'c', long = "config")]
    pub config: Option<PathBuf>,
    /// Output format
    #[arg(short = 'f', long = "output-format", alias = "format", value_enum, default_value = "text")]
    pub format: TextOrJson,
    /// Per-team timeout in seconds (overrides timeout_per_team_seconds; must be > 0)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
    /// Run the preflight checks only (no LLM call); exit 0 when valid, 2 otherwise
    #[arg(long)]
    pub dry_run: bool,
    /// Continue an interrupted execution from each team's last completed round
    #[arg(long, value_name = "EXECUTION_ID")]
    pub resume: Option<String>,
    /// Resume even if the configuration changed since the execution started
    #[arg(long, requires = "resume")]
    pub force: bool,
    /// Use the response cache (WORKSPACE/cache)
    #[arg(long)]
    pub cache: bool,
    /// Stop starting rounds once this many US dollars are spent
    #[arg(long, value_name = "USD")]
    pub max_cost_usd: Option<f64>,
    /// Stop starting rounds once this many tokens are used
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
}

/// Loads the configuration and runs every preflight check.
pub fn preflight(ctx: &Ctx, config: &std::path::Path, overrides: &Overrides) -> Result<(PreflightReport, LoadReport), CliError> {
    let path = ctx.resolve_config_path(config)?;
    let report = mixseek_config::load(&path, &ctx.workspace, &mixseek_config::EnvVars::from_process(), overrides);
    let pf = preflight::run(&report, |k| std::env::var(k).ok());
    Ok((pf, report))
}

pub fn render_preflight_text(report: &PreflightReport) -> String {
    let mut s = String::new();
    s.push_str("🔍 Preflight Check Results\n");
    s.push_str(RULE);
    s.push('\n');
    for c in &report.categories {
        s.push_str(&format!("\n📋 {}\n", c.category));
        for ch in &c.checks {
            let icon = match ch.status {
                CheckStatus::Ok => "✅",
                CheckStatus::Error => "❌",
                CheckStatus::Skipped => "⏭️",
                CheckStatus::Warning => "⚠️",
            };
            s.push_str(&format!("  {icon} {}: {}\n", ch.name, ch.message));
            if let Some(f) = &ch.source_file {
                s.push_str(&format!("     📄 {f}\n"));
            }
        }
    }
    s.push('\n');
    s.push_str(RULE);
    s.push('\n');
    if report.is_valid() {
        s.push_str("✅ All checks passed\n");
    } else {
        s.push_str(&format!("❌ Preflight failed (errors: {})\n", report.error_count()));
    }
    s
}

pub fn print_preflight(report: &PreflightReport, format: TextOrJson) {
    match format {
        TextOrJson::Text => print!("{}", render_preflight_text(report)),
        TextOrJson::Json => println!("{}", to_json_pretty(report)),
    }
}

pub async fn run(args: Args, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let Some(config) = args.config.clone() else {
        return Err(CliError::usage("--config is required (the orchestrator TOML)")
            .with_hint("e.g. mixseek exec \"...\" -c configs/quickstart/orchestrator.toml"));
    };
    let overrides = Overrides { timeout_per_team_seconds: args.timeout };
    let (report, _loaded) = preflight(ctx, &config, &overrides)?;
    if args.dry_run || !report.is_valid() {
        print_preflight(&report, args.format);
        return Ok(if report.is_valid() { ExitCode::SUCCESS } else { ExitCode::from(2) });
    }
    Err(CliError::failure("running a competition is not available in this build yet")
        .with_hint("use --dry-run to check the configuration"))
}
