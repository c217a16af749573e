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
    #[arg(
        short = 'f',
        long = "output-format",
        alias = "format",
        value_enum,
        default_value = "text"
    )]
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
pub fn preflight(
    ctx: &Ctx,
    config: &std::path::Path,
    overrides: &Overrides,
) -> Result<(PreflightReport, LoadReport), CliError> {
    let path = ctx.resolve_config_path(config)?;
    let report = mixseek_config::load(
        &path,
        &ctx.workspace,
        &mixseek_config::EnvVars::from_process(),
        overrides,
    );
    let mut pf = preflight::run(&report, |k| std::env::var(k).ok());
    // Templates compile and use only known variables; the time zone is valid.
    if let Some(settings) = &report.prompt_builder.value {
        let problems = mixseek_prompt::check_settings(settings);
        let tz = mixseek_prompt::resolve_time_zone(
            settings.timezone.as_deref(),
            mixseek_prompt::env_tz().as_deref(),
        );
        let cat = pf.category_mut("PromptBuilder");
        let mut messages: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        if let Err(e) = tz {
            messages.push(e.to_string());
        }
        if messages.is_empty() {
            cat.checks.push(preflight::Check {
                name: "templates".into(),
                status: CheckStatus::Ok,
                message: "テンプレートをコンパイルしました (team, evaluator, judgment)".into(),
                source_file: None,
            });
        } else {
            for m in messages {
                cat.checks.push(preflight::Check {
                    name: "templates".into(),
                    status: CheckStatus::Error,
                    message: m,
                    source_file: None,
                });
            }
        }
    }
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
        s.push_str(&format!(
            "❌ Preflight failed (errors: {})\n",
            report.error_count()
        ));
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
        return Err(
            CliError::usage("--config is required (the orchestrator TOML)")
                .with_hint("e.g. mixseek exec \"...\" -c configs/quickstart/orchestrator.toml"),
        );
    };
    let overrides = Overrides {
        timeout_per_team_seconds: args.timeout,
    };
    let (report, loaded) = preflight(ctx, &config, &overrides)?;
    if args.dry_run || !report.is_valid() {
        print_preflight(&report, args.format);
        return Ok(if report.is_valid() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(2)
        });
    }
    let config = match loaded.into_config() {
        Ok(c) => c,
        Err(e) => return Err(CliError::usage(e.to_string())),
    };
    let user_prompt = read_prompt(&args)?;
    if args.resume.is_none() && user_prompt.trim().is_empty() {
        return Err(CliError::usage("user_prompt cannot be empty")
            .with_hint("give the task as the PROMPT argument, `-` for stdin, or --prompt-file"));
    }
    for w in &config.warnings {
        tracing::warn!("{w}");
    }
    let cancel = tokio_util::sync::CancellationToken::new();
    let signal_cancel = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            let _ = crate::progress::write_stderr(
                b"\nInterrupted: no new work starts; committed rounds are kept. Press Ctrl-C again to exit at once.\n",
            );
            signal_cancel.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    if args.format == TextOrJson::Text && args.resume.is_none() {
        print!(
            "{}",
            crate::commands::exec_output::header(user_prompt.trim(), config.teams.len())
        );
    }
    let display: Option<std::sync::Arc<dyn mixseek_core::EventSink>> =
        if crate::progress::wanted(ctx.quiet) {
            Some(std::sync::Arc::new(crate::progress::ProgressBars::new()))
        } else {
            None
        };
    let opts = mixseek_orchestrator::RunOptions {
        user_prompt,
        resume: args.resume.clone(),
        force: args.force,
        cache: args.cache,
        max_cost_usd: args.max_cost_usd,
        max_tokens: args.max_tokens,
        cancel,
        display,
        env: None,
    };
    let summary = match mixseek_orchestrator::Orchestrator::new(config)
        .run(opts)
        .await
    {
        Ok(s) => s,
        Err(e) => {
            let hint = e.hint();
            let mut err = CliError::usage(e.to_string());
            if let Some(h) = hint {
                err = err.with_hint(h);
            }
            return Err(err);
        }
    };
    match args.format {
        TextOrJson::Text => print!("{}", crate::commands::exec_output::results(&summary)),
        TextOrJson::Json => println!("{}", to_json_pretty(&summary)),
    }
    if summary.status == mixseek_core::ExecutionStatus::Interrupted {
        eprintln!(
            "Execution {} interrupted. Resume it with:\n  mixseek exec --resume {} -c {}",
            summary.execution_id,
            summary.execution_id,
            config_arg(&args)
        );
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::from(summary.exit_code() as u8))
}

fn config_arg(args: &Args) -> String {
    args.config
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

/// The task: the argument, stdin for `-`, or `--prompt-file`.
fn read_prompt(args: &Args) -> Result<String, CliError> {
    if let Some(f) = &args.prompt_file {
        return std::fs::read_to_string(f).map_err(|e| {
            CliError::usage(format!("cannot read the prompt file {}: {e}", f.display()))
        });
    }
    match args.prompt.as_deref() {
        Some("-") => {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                .map_err(|e| CliError::usage(format!("cannot read the prompt from stdin: {e}")))?;
            Ok(s)
        }
        Some(p) => Ok(p.to_string()),
        None => Ok(String::new()),
    }
}
