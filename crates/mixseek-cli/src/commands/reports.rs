//! The report commands: `leaderboard`, `executions`, `history`, `show`, `export`, `report`.
//! Each parses its arguments, opens the workspace database read-only and prints what
//! `mixseek_store::report` renders; the logic lives in the store crate.

use crate::context::Ctx;
use crate::error::CliError;
use mixseek_store::export::{ExportFormat, export};
use mixseek_store::report::{self, Format, html};
use mixseek_store::{LeaderboardScope, Store, StoreError, db_path};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// A store error, exiting by its class (see [`CliError::from_store`]): an unknown or
/// ambiguous id and a file that is not a mixseek database exit 2, a database locked by a
/// running `mixseek exec` or an I/O failure 1.
fn store_error(e: StoreError) -> CliError {
    CliError::from_store(&e)
}

fn open(ctx: &Ctx) -> Result<Store, CliError> {
    Store::open_read_only(db_path(&ctx.workspace()?)).map_err(store_error)
}

fn format_of(s: &str) -> Result<Format, CliError> {
    Format::parse(s).map_err(store_error)
}

fn print(text: &str) -> Result<ExitCode, CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush())?;
    Ok(ExitCode::SUCCESS)
}

/// Runs a blocking store call off the async runtime.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, CliError> + Send + 'static,
) -> Result<T, CliError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| crate::panic_hook::join_error(&e))?
}

/// `mixseek leaderboard [--execution ID | --latest | --all]`: each team's best round.
#[derive(clap::Args, Debug)]
pub(crate) struct LeaderboardArgs {
    /// Show this execution (an id or a unique prefix of one).
    #[arg(long, short = 'e', value_name = "ID", conflicts_with_all = ["latest", "all"])]
    pub execution: Option<String>,
    /// Show the most recently started execution (the default).
    #[arg(long, conflicts_with = "all")]
    pub latest: bool,
    /// Show each team's best round across all executions.
    #[arg(long)]
    pub all: bool,
    /// Output format.
    #[arg(long, short = 'f', default_value = "table", value_parser = Format::NAMES)]
    pub format: String,
}

pub(crate) async fn run_leaderboard(
    args: LeaderboardArgs,
    ctx: &Ctx,
) -> Result<ExitCode, CliError> {
    let fmt = format_of(&args.format)?;
    let store = open(ctx)?;
    let scope = match (args.execution, args.all) {
        (Some(id), _) => LeaderboardScope::Execution(id),
        (None, true) => LeaderboardScope::All,
        (None, false) => LeaderboardScope::Latest,
    };
    let text = blocking(move || {
        let (exec, rows) = store.leaderboard(&scope).map_err(store_error)?;
        if exec.is_none() && scope == LeaderboardScope::Latest {
            return Err(no_executions());
        }
        let mut text = report::leaderboard(&rows, exec.as_deref(), fmt).map_err(store_error)?;
        // table and Markdown: the execution's latest arena after its leaderboard (JSON and
        // CSV stay one list of rows)
        if let (Some(id), Format::Table | Format::Markdown) = (&exec, fmt)
            && let Some(arena) = store.latest_arena(id).map_err(store_error)?
        {
            text.push('\n');
            text.push_str(&report::arena(&arena, fmt).map_err(store_error)?);
        }
        Ok(text)
    })
    .await?;
    print(&text)
}

fn no_executions() -> CliError {
    CliError::failure("no executions recorded in this workspace yet")
        .with_hint("run one first, e.g. `mixseek exec \"your task\" -c orchestrator.toml`")
}

/// `mixseek executions`: the stored executions, newest first.
#[derive(clap::Args, Debug)]
pub(crate) struct ExecutionsArgs {
    /// Show at most this many executions.
    #[arg(long, short = 'n', value_name = "N")]
    pub limit: Option<usize>,
    /// Output format.
    #[arg(long, short = 'f', default_value = "table", value_parser = Format::NAMES)]
    pub format: String,
}

pub(crate) async fn run_executions(args: ExecutionsArgs, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let fmt = format_of(&args.format)?;
    let store = open(ctx)?;
    let text = blocking(move || {
        let rows = store.executions(args.limit).map_err(store_error)?;
        report::executions(&rows, fmt).map_err(store_error)
    })
    .await?;
    print(&text)
}

/// `mixseek history [--execution ID] [--team ID]`: every evaluated round with its decision.
#[derive(clap::Args, Debug)]
pub(crate) struct HistoryArgs {
    /// The execution (an id or a unique prefix; default: the most recent one).
    #[arg(long, short = 'e', value_name = "ID")]
    pub execution: Option<String>,
    /// Only this team.
    #[arg(long, short = 't', value_name = "TEAM_ID")]
    pub team: Option<String>,
    /// Output format.
    #[arg(long, short = 'f', default_value = "table", value_parser = Format::NAMES)]
    pub format: String,
}

pub(crate) async fn run_history(args: HistoryArgs, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let fmt = format_of(&args.format)?;
    let store = open(ctx)?;
    let text = blocking(move || {
        let exec = match &args.execution {
            Some(id) => store.resolve_execution(id).map_err(store_error)?,
            None => store
                .latest_execution()
                .map_err(store_error)?
                .ok_or_else(no_executions)?,
        };
        let rows = store
            .history(&exec, args.team.as_deref())
            .map_err(store_error)?;
        report::history(&rows, &exec, args.team.as_deref(), fmt).map_err(store_error)
    })
    .await?;
    print(&text)
}

/// `mixseek show EXECUTION_ID [--team ID] [--round N]`: an execution, a team's rounds, or one
/// round in full (submission, metric scores and comments, judgment, member outputs, usage).
#[derive(clap::Args, Debug)]
pub(crate) struct ShowArgs {
    /// The execution (an id or a unique prefix of one).
    pub execution_id: String,
    /// Show this team's rounds.
    #[arg(long, short = 't', value_name = "TEAM_ID")]
    pub team: Option<String>,
    /// With --team: show this round in full.
    #[arg(long, short = 'r', value_name = "N", requires = "team")]
    pub round: Option<u32>,
    /// Output format.
    #[arg(long, short = 'f', default_value = "table", value_parser = Format::NAMES)]
    pub format: String,
}

pub(crate) async fn run_show(args: ShowArgs, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let fmt = format_of(&args.format)?;
    let store = open(ctx)?;
    let text = blocking(move || {
        let exec = store
            .resolve_execution(&args.execution_id)
            .map_err(store_error)?;
        match (&args.team, args.round) {
            (None, _) => {
                let overview = store.execution_overview(&exec).map_err(store_error)?;
                report::show_execution(&overview, fmt).map_err(store_error)
            }
            (Some(team), None) => {
                let rounds = store.team_rounds(&exec, team).map_err(store_error)?;
                // the history also lists rounds that have no evaluation
                let history = store.history(&exec, Some(team)).map_err(store_error)?;
                if history.is_empty() {
                    return Err(CliError::usage(format!(
                        "team `{team}` has no rounds in execution {exec}"
                    ))
                    .with_hint(format!("`mixseek show {exec}` lists the teams")));
                }
                report::show_team(&exec, team, &rounds, &history, fmt).map_err(store_error)
            }
            (Some(team), Some(round)) => {
                let detail = store
                    .round_detail(&exec, team, round)
                    .map_err(store_error)?
                    .ok_or_else(|| {
                        CliError::usage(format!(
                            "no round {round} of team `{team}` in execution {exec}"
                        ))
                        .with_hint(format!(
                            "`mixseek show {exec} --team {team}` lists its rounds"
                        ))
                    })?;
                report::show_round(&detail, fmt).map_err(store_error)
            }
        }
    })
    .await?;
    print(&text)
}

/// `mixseek export (EXECUTION_ID | --all) --format json|csv|parquet -o PATH`.
#[derive(clap::Args, Debug)]
pub(crate) struct ExportArgs {
    /// The execution to export (an id or a unique prefix of one).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub execution_id: Option<String>,
    /// Export every execution.
    #[arg(long)]
    pub all: bool,
    /// `json` (one file) or `csv` / `parquet` (a directory with one file per table).
    #[arg(long, short = 'f', value_parser = ExportFormat::NAMES)]
    pub format: String,
    /// Output file (json) or directory (csv, parquet).
    #[arg(long, short = 'o', value_name = "PATH")]
    pub output: PathBuf,
}

pub(crate) async fn run_export(args: ExportArgs, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let format = ExportFormat::parse(&args.format).map_err(store_error)?;
    let store = open(ctx)?;
    let quiet = ctx.quiet;
    let text = blocking(move || {
        let ids = match &args.execution_id {
            Some(id) => Some(vec![store.resolve_execution(id).map_err(store_error)?]),
            None => None,
        };
        let done = export(&store, ids.as_deref(), format, &args.output).map_err(store_error)?;
        let rows: Vec<String> = done.rows.iter().map(|(t, n)| format!("{t}: {n}")).collect();
        Ok(format!(
            "Exported to {} ({})\n",
            args.output.display(),
            rows.join(", ")
        ))
    })
    .await?;
    if quiet {
        Ok(ExitCode::SUCCESS)
    } else {
        print(&text)
    }
}

/// `mixseek report EXECUTION_ID -o report.html`: a self-contained HTML report.
#[derive(clap::Args, Debug)]
pub(crate) struct ReportArgs {
    /// The execution (an id or a unique prefix of one).
    pub execution_id: String,
    /// The HTML file to write (`-` for standard output).
    #[arg(long, short = 'o', value_name = "PATH", default_value = "report.html")]
    pub output: PathBuf,
}

pub(crate) async fn run_report(args: ReportArgs, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let store = open(ctx)?;
    let quiet = ctx.quiet;
    let (exec, page) = blocking(move || {
        let exec = store
            .resolve_execution(&args.execution_id)
            .map_err(store_error)?;
        let overview = store.execution_overview(&exec).map_err(store_error)?;
        let (_, leaderboard) = store
            .leaderboard(&LeaderboardScope::Execution(exec.clone()))
            .map_err(store_error)?;
        let rounds = store.round_details(&exec).map_err(store_error)?;
        Ok((
            exec,
            html::render(&html::ReportData {
                overview: &overview,
                leaderboard: &leaderboard,
                rounds: &rounds,
            }),
        ))
    })
    .await?;
    if args.output.as_os_str() == "-" {
        return print(&page);
    }
    let hint = "check the free space and permissions there, or write elsewhere with -o";
    if let Some(parent) = args.output.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            CliError::failure(format!("cannot create {}: {e}", parent.display())).with_hint(hint)
        })?;
    }
    std::fs::write(&args.output, page).map_err(|e| {
        CliError::failure(format!("cannot write {}: {e}", args.output.display())).with_hint(hint)
    })?;
    if quiet {
        Ok(ExitCode::SUCCESS)
    } else {
        print(&format!(
            "Wrote {} (execution {exec})\n",
            args.output.display()
        ))
    }
}
