//! The `mixseek` binary: argument parsing, logging set-up, and one module per command.
//! Everything below this crate returns values; only this crate prints.

#![allow(clippy::print_stdout, clippy::print_stderr)] // the CLI is the one crate that prints
#![warn(unreachable_pub)]
// The doc comments of the command-line types are clap's help text, where `[cache]` or
// `[prompt_builder]` names a TOML table, not an item to link.
#![allow(rustdoc::broken_intra_doc_links)]

mod commands;
mod context;
mod error;
mod huge_pages;
mod logging;
mod otel;
mod output;
mod panic_hook;
mod progress;
mod redact;
mod textwidth;

use clap::{CommandFactory, Parser, Subcommand};
use context::Ctx;
use error::CliError;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc instead of glibc's malloc for Rust's allocations: a run moves hundreds of
/// megabytes of prompt text through short-lived strings (a 1,000-team ranking is ≈ 100 kB per
/// prompt), which glibc served with much of the run's CPU time (see docs/benchmarks.md).
/// DuckDB's allocations go to mimalloc too (the crate's `override` feature, see Cargo.toml):
/// glibc kept the blocks DuckDB freed, and a long run's memory grew with them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "mixseek",
    version = concat!("version ", env!("CARGO_PKG_VERSION")),
    about = "MixSeek: Multi-agent framework CLI",
    long_about = "MixSeek runs LLM-agent team competitions: several teams answer one prompt over several rounds,\neach round is scored by weighted LLM-as-judge metrics and stored on a DuckDB leaderboard."
)]
struct Cli {
    /// Workspace directory (configs, mixseek.db, logs/). Default: $MIXSEEK_WORKSPACE, else ./mixseek-workspace
    #[arg(short = 'w', long, global = true, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Log level on stderr and in WORKSPACE/logs/mixseek.log [default: $MIXSEEK_LOG_LEVEL, else info]
    #[arg(long, global = true, value_enum)]
    log_level: Option<logging::LogLevel>,
    /// Log format [default: $MIXSEEK_LOG_FORMAT, else text]
    #[arg(long, global = true, value_enum)]
    log_format: Option<logging::LogFormat>,
    /// Do not log on stderr (also MIXSEEK_LOG_CONSOLE=0); the command's own output and errors are still printed
    #[arg(long, global = true)]
    no_log_console: bool,
    /// Do not write WORKSPACE/logs/mixseek.log (also MIXSEEK_LOG_FILE=0)
    #[arg(long, global = true)]
    no_log_file: bool,
    /// Export spans over OpenTelemetry (OTLP/HTTP, OTEL_EXPORTER_OTLP_ENDPOINT), prompts and answers included (PII-masked with [privacy])
    #[arg(long, global = true)]
    logfire: bool,
    /// Export spans over OpenTelemetry without prompt and answer texts
    #[arg(long, global = true)]
    logfire_metadata: bool,
    /// As --logfire (HTTP bodies are not captured)
    #[arg(long, global = true)]
    logfire_http: bool,
    /// No live progress display during `exec` (also MIXSEEK_NO_PROGRESS=1)
    #[arg(long, global = true)]
    no_progress: bool,
    /// Only errors on stderr; no progress display
    #[arg(short = 'q', long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// More detail on stderr
    #[arg(short = 'v', long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Create a workspace with sample configs (including an offline quick-start competition)
    Init(commands::init::Args),
    /// Run a competition: all teams, all rounds, evaluation, judgment, leaderboard
    Exec(commands::exec::Args),
    /// Run one team through its rounds with evaluation and judgment, without a store (development/testing)
    Team(commands::team::Args),
    /// Run one member agent once: a member file or a bundled agent (development/testing)
    Member(commands::member::Args),
    /// Score one submission with the evaluator's metrics (weights, scores, comments, overall score)
    Evaluate(commands::evaluate::Args),
    /// Show or validate a configuration
    #[command(subcommand)]
    Config(commands::config::ConfigCommand),
    /// Leaderboard of an execution, the latest one, or across all executions
    Leaderboard(commands::reports::LeaderboardArgs),
    /// List executions
    Executions(commands::reports::ExecutionsArgs),
    /// Round history of an execution / a team
    History(commands::reports::HistoryArgs),
    /// Details of an execution, a team, a round
    Show(commands::reports::ShowArgs),
    /// The workspace database: its schema version and origin (`status`), or upgrade it (`upgrade`)
    #[command(subcommand)]
    Db(commands::db::DbCommand),
    /// Export an execution (or all) as JSON, CSV or Parquet
    Export(commands::reports::ExportArgs),
    /// Write a self-contained HTML report of an execution
    Report(commands::reports::ReportArgs),
    /// Judge the teams' submissions pairwise and rate them (Bradley–Terry, confidence intervals)
    Arena(commands::arena::Args),
    /// Themes of the judges' comments: recurring criticisms and praises per team and metric
    Analyze(commands::analyze::Args),
    /// Experiments: a task set x configuration variants x repeats, sharded, merged, reported with confidence intervals
    #[command(subcommand)]
    Experiment(commands::experiment::ExperimentCommand),
    /// The web UI: start runs, watch them live, read results, compare executions
    Ui(commands::ui::Args),
    /// Send one request to a model (check a key, a base URL or a local server)
    Llm(commands::llm::Args),
    /// Render prompts exactly as a run would, or list template variables
    Prompt(commands::prompt::Args),
    /// Print shell completions
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

impl Command {
    /// The command's name, for the log file.
    fn name(&self) -> &'static str {
        match self {
            Command::Init(_) => "init",
            Command::Exec(a) if a.dry_run => "exec --dry-run",
            Command::Exec(_) => "exec",
            Command::Team(_) => "team",
            Command::Member(_) => "member",
            Command::Evaluate(_) => "evaluate",
            Command::Config(_) => "config",
            Command::Leaderboard(_) => "leaderboard",
            Command::Executions(_) => "executions",
            Command::History(_) => "history",
            Command::Show(_) => "show",
            Command::Db(_) => "db",
            Command::Export(_) => "export",
            Command::Report(_) => "report",
            Command::Llm(_) => "llm",
            Command::Ui(_) => "ui",
            Command::Experiment(_) => "experiment",
            Command::Arena(_) => "arena",
            Command::Analyze(_) => "analyze",
            Command::Prompt(_) => "prompt",
            Command::Completions { .. } => "completions",
        }
    }
}

fn main() -> ExitCode {
    let huge_pages = huge_pages::disable_unless_asked();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // `mixseek ui` also reads the original's MIXSEEK_UI__WORKSPACE (after -w, before
    // MIXSEEK_WORKSPACE).
    let ui_workspace = match &cli.command {
        Command::Ui(_) if cli.workspace.is_none() => std::env::var_os("MIXSEEK_UI__WORKSPACE")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        _ => None,
    };
    let workspace = match mixseek_config::Workspace::from_env(
        cli.workspace.as_deref().or(ui_workspace.as_deref()),
    ) {
        Ok(w) => w,
        Err(e) => {
            eprintln!(
                "{}",
                CliError::from(e).with_hint("pass --workspace DIR or set MIXSEEK_WORKSPACE")
            );
            return ExitCode::from(2);
        }
    };
    let log = match logging::LogSettings::resolve(
        cli.log_level,
        cli.log_format,
        cli.no_log_console,
        cli.no_log_file,
        |name| std::env::var(name).ok(),
    ) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{}", CliError::usage(e.message).with_hint(e.hint));
            return ExitCode::from(2);
        }
    };
    match logging::bool_var("MIXSEEK_NO_PROGRESS", |name| std::env::var(name).ok()) {
        Ok(from_env) => {
            if cli.no_progress || from_env == Some(true) {
                progress::disable();
            }
        }
        Err(e) => {
            eprintln!("{}", CliError::usage(e.message).with_hint(e.hint));
            return ExitCode::from(2);
        }
    }
    let otel = match otel::resolve(cli.logfire, cli.logfire_metadata, cli.logfire_http, |n| {
        std::env::var(n).ok()
    }) {
        Ok(mode) => mode.and_then(|m| {
            mixseek_llm::set_genai_attributes(true);
            mixseek_llm::set_trace_texts(m == otel::Mode::Full);
            otel::install(m, otel::Target::from_env(|n| std::env::var(n).ok()))
        }),
        Err(message) => {
            eprintln!("ERROR: {message}");
            return ExitCode::from(1);
        }
    };
    // The log file is opened at the first event once the workspace exists (the commands that
    // write create it), so nothing is created here.
    logging::init(&log, cli.quiet, cli.verbose, Some(&workspace.root), otel);
    if let Some(e) = huge_pages {
        tracing::debug!(error = %e, "transparent huge pages stay as the system has them");
    }
    // The built-in providers' keys are hidden from the first line on; a command that loads a
    // configuration adds its providers' keys and its `[privacy]` masking.
    redact::install(
        mixseek_core::PiiMasker::disabled(),
        mixseek_llm::api_key_values(&Default::default(), &mixseek_llm::Env::process()),
    );
    // From here on a panic is reported as a bug (one line, exit 1), see panic_hook.rs.
    panic_hook::install();
    let ctx = Ctx {
        workspace,
        quiet: cli.quiet,
        verbose: cli.verbose,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "{}",
                CliError::from_error(&e, 1)
                    .with_hint("the async runtime needs threads and an epoll instance")
            );
            return ExitCode::from(1);
        }
    };
    let name = cli.command.name();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(run(cli.command, &ctx))
    }));
    let result = match result {
        Ok(r) => r,
        Err(payload) => {
            // Tasks still running are dropped, blocking ones not waited for long.
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
            Err(panic_hook::report(payload.as_ref()))
        }
    };
    otel::shutdown();
    match result {
        // The reader of the output went away (`mixseek … | head -1`): a normal end, whichever
        // command was printing and however (see panic_hook.rs).
        Err(e) if e.closed_pipe => {
            tracing::info!(
                target: logging::AUDIT,
                "mixseek {name} stopped: its output was closed by the reader (exit 0)"
            );
            ExitCode::SUCCESS
        }
        Ok(code) => {
            tracing::info!(
                target: logging::AUDIT,
                "mixseek {name} finished ({})",
                if code == ExitCode::SUCCESS { "exit 0" } else { "non-zero exit" }
            );
            code
        }
        Err(e) => {
            tracing::info!(
                target: logging::AUDIT,
                "mixseek {name} failed (exit {}): {}",
                e.exit_code,
                e.message.lines().next().unwrap_or_default()
            );
            // Not `eprintln!`: a closed stderr must not turn the error into a panic.
            let _ = writeln!(std::io::stderr(), "{}", redact::text(&e.to_string()));
            e.exit()
        }
    }
}

async fn run(command: Command, ctx: &Ctx) -> Result<ExitCode, CliError> {
    panic_hook::inject_main_panic();
    match command {
        Command::Init(a) => commands::init::run(a, ctx).await,
        Command::Exec(a) => commands::exec::run(a, ctx).await,
        Command::Team(a) => commands::team::run(a, ctx).await,
        Command::Member(a) => commands::member::run(a, ctx).await,
        Command::Evaluate(a) => commands::evaluate::run(a, ctx).await,
        Command::Config(c) => commands::config::run(c, ctx).await,
        Command::Leaderboard(a) => commands::reports::run_leaderboard(a, ctx).await,
        Command::Executions(a) => commands::reports::run_executions(a, ctx).await,
        Command::History(a) => commands::reports::run_history(a, ctx).await,
        Command::Show(a) => commands::reports::run_show(a, ctx).await,
        Command::Db(c) => commands::db::run(c, ctx).await,
        Command::Export(a) => commands::reports::run_export(a, ctx).await,
        Command::Report(a) => commands::reports::run_report(a, ctx).await,
        Command::Llm(a) => commands::llm::run(a, ctx).await,
        Command::Ui(a) => commands::ui::run(a, ctx).await,
        Command::Experiment(c) => commands::experiment::run(c, ctx).await,
        Command::Arena(a) => commands::arena::run(a, ctx).await,
        Command::Analyze(a) => commands::analyze::run(a, ctx).await,
        Command::Prompt(a) => commands::prompt::run(a, ctx).await,
        Command::Completions { shell } => {
            let mut cmd = Cli::command();
            // Generated in memory: clap_complete panics on a failed write, and a closed pipe
            // must end the command quietly like every other's output.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "mixseek", &mut script);
            let mut out = std::io::stdout().lock();
            out.write_all(&script).and_then(|()| out.flush())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
