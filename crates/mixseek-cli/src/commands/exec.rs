//! `mixseek exec`: preflight, then the competition.

use crate::commands::exec_output::RULE;
use crate::context::Ctx;
use crate::error::CliError;
use crate::output::{TextOrJson, to_json_pretty};
use mixseek_config::preflight::{self, CheckStatus, PreflightReport};
use mixseek_config::{LoadReport, LoadedUnit, Overrides};
use mixseek_core::ExecutionId;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
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
    /// Continue an interrupted execution from each team's last completed round (its stored
    /// task is used: no PROMPT)
    #[arg(long, value_name = "EXECUTION_ID", conflicts_with_all = ["prompt", "prompt_file"])]
    pub resume: Option<String>,
    /// Resume even if the configuration changed since the execution started
    #[arg(long, requires = "resume")]
    pub force: bool,
    /// The new execution's id (a UUID; default: a new one). The web UI uses it to follow the
    /// runs it starts
    #[arg(long, value_name = "UUID", conflicts_with = "resume", value_parser = parse_execution_id)]
    pub execution_id: Option<ExecutionId>,
    /// Attach a document to the task (repeatable): .txt, .md, .html, .pdf or .docx, extracted
    /// to text (capped) and given to every prompt in its own <attachments> tag; the execution
    /// stores its name, type, size, SHA-256 and text, never the file
    #[arg(long = "attach", value_name = "FILE", conflicts_with = "resume")]
    pub attach: Vec<PathBuf>,
    /// Use the response cache ([cache] dir, default WORKSPACE/.cache/llm)
    #[arg(long)]
    pub cache: bool,
    /// Stop starting teams and rounds once this many US dollars are spent (> 0; overrides
    /// max_cost_usd)
    #[arg(
        long,
        value_name = "USD",
        value_parser = parse_max_cost,
        allow_negative_numbers = true
    )]
    pub max_cost_usd: Option<f64>,
    /// Stop starting teams and rounds once this many tokens are used (≥ 1; overrides
    /// max_total_tokens)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
}

/// `--execution-id`: a UUID (execution ids are UUIDs; one also names files in the logs).
fn parse_execution_id(s: &str) -> Result<ExecutionId, String> {
    uuid::Uuid::parse_str(s.trim())
        .map(|u| ExecutionId::from(u.to_string()))
        .map_err(|_| format!("`{s}` is not a UUID (e.g. 1b4e28ba-2fa1-11d2-883f-0016d3cca427)"))
}

/// `--max-cost-usd`: a finite amount > 0.
fn parse_max_cost(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number (US dollars, e.g. 0.50)"))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!(
            "{s} is not a budget: give an amount > 0 (omit the flag for no limit)"
        ))
    }
}

/// Loads the configuration and runs every preflight check.
pub(crate) fn preflight(
    ctx: &Ctx,
    config: &std::path::Path,
    overrides: &Overrides,
) -> Result<(PreflightReport, LoadReport), CliError> {
    preflight_with(
        ctx,
        config,
        overrides,
        &mixseek_config::EnvVars::from_process(),
    )
}

/// [`preflight`] with these `MIXSEEK_*` variables (an experiment variant's).
pub(crate) fn preflight_with(
    ctx: &Ctx,
    config: &std::path::Path,
    overrides: &Overrides,
    env: &mixseek_config::EnvVars,
) -> Result<(PreflightReport, LoadReport), CliError> {
    let report = super::config::load_report_with(ctx, config, overrides, env)?;
    let mut pf = preflight::run(&report, |k| std::env::var(k).ok());
    if report.orchestrator.value.is_some() {
        pf.insert_after(
            "認証",
            mixseek_evaluator::checks::metric_names(&report.evaluator),
        );
    }
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
            let file = report
                .prompt_builder
                .origin
                .file()
                .map(|p| p.display().to_string());
            for m in messages {
                cat.checks.push(preflight::Check {
                    name: "templates".into(),
                    status: CheckStatus::Error,
                    message: m,
                    source_file: file.clone(),
                });
            }
        }
    }
    // Members (and workflows' agent and command executors): what mixseek-agents can check
    // without building anything (type, command, provider-native tool), for every unit that
    // loaded.
    let mut member_checks = Vec::new();
    for unit in &report.teams {
        let Some(loaded) = &unit.part.value else {
            continue;
        };
        let team_id = loaded.id();
        let (problems, count, what) = match loaded {
            LoadedUnit::Team(team) => (
                mixseek_agents::check_team(&team.settings),
                team.settings.members.len(),
                "メンバーを確認しました",
            ),
            LoadedUnit::Workflow(w) => {
                let members: Vec<_> = w
                    .settings
                    .steps
                    .iter()
                    .flat_map(|s| &s.executors)
                    .filter_map(|e| e.to_member(&w.settings.default_model))
                    .collect();
                let problems = members
                    .iter()
                    .filter_map(|m| mixseek_agents::check_member(m).err())
                    .collect();
                (
                    problems,
                    members.len(),
                    "エージェント Executor を確認しました",
                )
            }
        };
        if problems.is_empty() {
            member_checks.push(preflight::Check {
                name: format!("{team_id}_members"),
                status: CheckStatus::Ok,
                message: format!("{what} ({count} 件)"),
                source_file: Some(unit.entry.clone()),
            });
        }
        for p in problems {
            let hint = p
                .hint()
                .map(|h| format!(" (hint: {h})"))
                .unwrap_or_default();
            let kind = if loaded.as_team().is_some() {
                "team"
            } else {
                "workflow"
            };
            member_checks.push(preflight::Check {
                name: format!("{team_id}_members"),
                status: CheckStatus::Error,
                message: format!("{kind} `{team_id}`: {p}{hint}"),
                source_file: Some(unit.entry.clone()),
            });
        }
    }
    if !member_checks.is_empty() {
        pf.insert_after(
            "ワークフロー",
            preflight::Category {
                category: "メンバー".into(),
                checks: member_checks,
            },
        );
    }
    Ok((pf, report))
}

/// `--dry-run` only: every local server the run would call (see
/// [`mixseek_llm::is_local_url`]) is asked whether it answers, in a category of its own
/// after 認証 (absent when the run calls no local server; public endpoints are not
/// contacted).
async fn server_checks(report: &mut PreflightReport, loaded: &LoadReport) {
    let Some(file) = loaded.orchestrator.value.as_ref() else {
        return;
    };
    let env = mixseek_llm::Env::process();
    let mut checks = Vec::new();
    for (provider, models) in preflight::providers_called(loaded) {
        let Some(base_url) =
            mixseek_llm::base_url_of(&provider, file.providers.get(&provider), &env)
        else {
            continue;
        };
        if !mixseek_llm::is_local_url(&base_url) {
            continue;
        }
        let (status, message) = match mixseek_llm::probe(&provider, &base_url).await {
            Ok(()) => (
                CheckStatus::Ok,
                format!("{provider} のサーバーが応答しました: {base_url}"),
            ),
            Err(e) => (
                CheckStatus::Error,
                format!(
                    "{provider} のサーバーに接続できません: {e} (needed by: {})",
                    models.join(", ")
                ),
            ),
        };
        checks.push(preflight::Check {
            name: format!("server_{provider}"),
            status,
            message,
            source_file: None,
        });
    }
    if !checks.is_empty() {
        report.insert_after(
            "認証",
            preflight::Category {
                category: "サーバー".into(),
                checks,
            },
        );
    }
}

pub(crate) fn render_preflight_text(report: &PreflightReport) -> String {
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

pub(crate) fn print_preflight(report: &PreflightReport, format: TextOrJson) {
    match format {
        TextOrJson::Text => print!("{}", render_preflight_text(report)),
        TextOrJson::Json => println!("{}", to_json_pretty(report)),
    }
}

pub(crate) async fn run(args: Args, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let Some(config) = args.config.clone() else {
        // The original's wording ("--config option is required").
        return Err(CliError::usage("--config オプションは必須です").with_hint(
            "--config (-c) names the orchestrator TOML, e.g. mixseek exec \"...\" -c configs/quickstart/orchestrator.toml",
        ));
    };
    let overrides = Overrides {
        timeout_per_team_seconds: args.timeout,
    };
    let (report, loaded) = match preflight(ctx, &config, &overrides) {
        Ok(r) => r,
        // `--dry-run -f json` always prints a parseable report, even without a config file.
        Err(e) if args.dry_run && args.format == TextOrJson::Json => {
            let message = match &e.hint {
                Some(h) => format!("{} ({h})", e.message),
                None => e.message.clone(),
            };
            let report =
                preflight::orchestrator_unavailable(&config.display().to_string(), &message);
            print_preflight(&report, args.format);
            return Ok(ExitCode::from(2));
        }
        Err(e) => return Err(e),
    };
    let mut report = report;
    if args.dry_run {
        server_checks(&mut report, &loaded).await;
    }
    // The attachments are read (and checked) before anything runs, a dry run included.
    let attachments = extract_attachments(&args.attach)?;
    if args.dry_run || !report.is_valid() {
        print_preflight(&report, args.format);
        return Ok(if report.is_valid() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(2)
        });
    }
    let settings = super::config::settings_snapshot(&loaded);
    let config = loaded.into_config()?;
    // From here on, keys and (with `[privacy] mask_pii`) personal data are masked in every
    // log line, error and echoed text (the orchestrator masks what it writes itself).
    crate::redact::install(
        config
            .file
            .privacy
            .masker()
            .map_err(|e| CliError::from_error(&e, 2))?,
        mixseek_llm::api_key_values(&config.file.providers, &mixseek_llm::Env::process()),
    );
    let user_prompt = read_prompt(&args)?;
    if args.resume.is_none() && user_prompt.trim().is_empty() {
        return Err(CliError::usage("user_prompt cannot be empty")
            .with_hint("give the task as the PROMPT argument, `-` for stdin, or --prompt-file"));
    }
    for w in &config.warnings {
        tracing::warn!("{w}");
    }
    // an older database is upgraded by the run's open: say so before it happens
    crate::commands::db::announce_upgrade(&config.workspace.db_path());
    let cancel = cancel_on_ctrl_c(
        b"\nInterrupted: no new work starts; committed rounds are kept. Press Ctrl-C again to exit at once.\n",
    );
    // The header: now for a new execution; for a resumed one when its stored task is known.
    let mut resume_header = None;
    if args.format == TextOrJson::Text {
        if args.resume.is_none() {
            print!(
                "{}",
                crate::commands::exec_output::header(
                    &crate::redact::text(user_prompt.trim()),
                    config.teams.len()
                )
            );
        } else {
            resume_header = Some(crate::commands::exec_output::ResumeHeader::new(
                config.teams.len(),
            ));
        }
    }
    let display: Option<std::sync::Arc<dyn mixseek_core::EventSink>> =
        match (crate::progress::wanted(ctx.quiet), resume_header) {
            (true, Some(h)) => Some(std::sync::Arc::new(
                mixseek_orchestrator::EventBus::new()
                    .with_secondary(std::sync::Arc::new(h))
                    .with_secondary(std::sync::Arc::new(crate::progress::ProgressBars::new())),
            )),
            (true, None) => Some(std::sync::Arc::new(crate::progress::ProgressBars::new())),
            (false, Some(h)) => Some(std::sync::Arc::new(h)),
            (false, None) => None,
        };
    // Test-only fault injection (debug builds, see panic_hook.rs): a bug inside one team's task.
    let display = match (display, crate::panic_hook::injected_team_fault()) {
        (Some(d), Some(f)) => Some(std::sync::Arc::new(
            mixseek_orchestrator::EventBus::new()
                .with_secondary(d)
                .with_secondary(f),
        ) as std::sync::Arc<dyn mixseek_core::EventSink>),
        (d, f) => d.or(f),
    };
    let opts = mixseek_orchestrator::RunOptions {
        user_prompt,
        resume: args.resume.clone(),
        execution_id: args.execution_id.clone(),
        settings: Some(settings),
        force: args.force,
        cache: args.cache,
        max_cost_usd: args.max_cost_usd,
        max_tokens: args.max_tokens,
        cancel,
        display,
        env: None,
        db_path: None,
        shared_runtimes: None,
        attachments,
        // The original leaves them: scripts may read the final state.
        remove_progress_files_at_end: false,
    };
    let arena = crate::commands::arena::AfterExec::of(&config, args.max_cost_usd, args.max_tokens);
    let summary = match mixseek_orchestrator::Orchestrator::new(config)
        .run(opts)
        .await
    {
        Ok(s) => s,
        // Bad input exits 2; a run the environment stopped (disk, a locked database) 1.
        Err(e) => {
            let mut err = CliError::from_orchestrator(&e);
            if let Some(id) = e.resumable_execution() {
                let resume = format!("Resume it with:\n  {}", resume_command(id, &args, ctx));
                err.hint = Some(match err.hint {
                    Some(h) => format!("{h}\n{resume}"),
                    None => resume,
                });
            }
            return Err(err);
        }
    };
    // `arena_config`: the arena of the teams' submissions, unless the run was interrupted
    // (a resumed run ends with it). Its failure leaves the execution as it is.
    let arena = match arena {
        Some(a) if summary.status != mixseek_core::ExecutionStatus::Interrupted => {
            match a.run(&summary).await {
                Ok(detail) => Some(detail),
                Err(e) => {
                    eprintln!(
                        "Arena skipped: {e}\nRun it later with:\n  mixseek arena {}",
                        summary.execution_id
                    );
                    None
                }
            }
        }
        _ => None,
    };
    match args.format {
        TextOrJson::Text => {
            print!("{}", crate::commands::exec_output::results(&summary));
            if let Some(detail) = &arena {
                let table =
                    mixseek_store::report::arena(detail, mixseek_store::report::Format::Table)
                        .map_err(|e| CliError::from_store(&e))?;
                print!(
                    "\n{table}{}",
                    crate::commands::arena::mock_note(detail, mixseek_store::report::Format::Table)
                );
            }
        }
        TextOrJson::Json => {
            let mut doc = serde_json::to_value(&summary).unwrap_or(serde_json::Value::Null);
            if let (Some(detail), Some(map)) = (&arena, doc.as_object_mut()) {
                map.insert(
                    "arena".into(),
                    serde_json::to_value(detail).unwrap_or(serde_json::Value::Null),
                );
            }
            println!("{}", to_json_pretty(&doc));
        }
    }
    // The response cache's hits and misses over the run (when it was on).
    let cache = mixseek_llm::process_stats();
    if args.cache || cache.hits + cache.misses > 0 {
        match args.format {
            TextOrJson::Text => println!("cache: {}", cache.summary()),
            TextOrJson::Json => tracing::info!(
                hits = cache.hits,
                misses = cache.misses,
                "cache: {}",
                cache.summary()
            ),
        }
    }
    if summary.status == mixseek_core::ExecutionStatus::Interrupted {
        eprintln!(
            "Execution {} interrupted. Resume it with:\n  {}",
            summary.execution_id,
            resume_command(&summary.execution_id, &args, ctx)
        );
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::from(summary.exit_code() as u8))
}

/// The command that resumes `execution_id`: the same workspace (when one was given with
/// `-w` or MIXSEEK_WORKSPACE) and configuration, paths quoted for a POSIX shell.
fn resume_command(execution_id: &ExecutionId, args: &Args, ctx: &Ctx) -> String {
    let mut cmd = String::from("mixseek");
    if ctx.workspace.source != mixseek_config::WorkspaceSource::Default {
        cmd.push_str(" -w ");
        cmd.push_str(&shell_quote(&ctx.workspace.root.display().to_string()));
    }
    cmd.push_str(" exec --resume ");
    cmd.push_str(&shell_quote(execution_id.as_str()));
    if let Some(c) = &args.config {
        cmd.push_str(" -c ");
        cmd.push_str(&shell_quote(&c.display().to_string()));
    }
    cmd
}

/// `s` as one POSIX shell word: as is when it only has safe characters, else single-quoted.
fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A token cancelled by the first Ctrl-C (after printing `message`); a second Ctrl-C exits at
/// once with 130.
pub(crate) fn cancel_on_ctrl_c(message: &'static [u8]) -> tokio_util::sync::CancellationToken {
    let cancel = tokio_util::sync::CancellationToken::new();
    let signal_cancel = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            let _ = crate::progress::write_stderr(message);
            signal_cancel.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    cancel
}

/// `--attach`: each file extracted to text; the first that cannot be is an error naming it
/// (exit 2).
pub(crate) fn extract_attachments(
    files: &[PathBuf],
) -> Result<Vec<mixseek_core::Attachment>, CliError> {
    let limits = mixseek_attach::Limits::default();
    files
        .iter()
        .map(|f| {
            mixseek_attach::extract(f, &limits).map_err(|e| {
                let hint = e.hint();
                CliError::from_error(&e, crate::error::EXIT_BAD_INPUT).with_hint(hint)
            })
        })
        .collect()
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

#[cfg(test)]
mod resume_command_tests {
    use super::*;

    #[test]
    fn paths_are_quoted_for_the_shell() {
        assert_eq!(shell_quote("/tmp/ws-1/orch.toml"), "/tmp/ws-1/orch.toml");
        assert_eq!(shell_quote("/tmp/my ws"), "'/tmp/my ws'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn max_cost_must_be_a_positive_amount() {
        assert_eq!(parse_max_cost("0.5"), Ok(0.5));
        for bad in ["0", "-1", "NaN", "inf", "abc"] {
            assert!(parse_max_cost(bad).is_err(), "{bad}");
        }
    }
}
