//! `mixseek experiment run | report | arena | list | merge | plan`: a task set × configuration
//! variants × repeats as ordinary executions (mixseek-experiment), sharded across machines,
//! merged, reported with bootstrap intervals, and its variants compared in an arena
//! (`experiment_arena.rs`).

use crate::context::Ctx;
use crate::error::{CliError, EXIT_BAD_INPUT, EXIT_FAILURE};
use crate::output::{TextOrJson, to_json_pretty};
use mixseek_config::{EnvVars, ExperimentFile, LoadedConfig, Overrides};
use mixseek_experiment::{ExperimentError, LoadedVariant, Progress, Runner, Shard};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(clap::Subcommand, Debug)]
pub(crate) enum ExperimentCommand {
    /// Run an experiment (or one shard of it): every task x variant x repeat as an execution; rerun to resume
    Run(RunArgs),
    /// Report an experiment: per variant the mean score with a bootstrap interval, paired comparisons against the baseline, per-task scores
    Report(ReportArgs),
    /// Judge the variants' submissions pairwise on every task (each pair twice, positions swapped) and rate the variants (Bradley-Terry, intervals over tasks)
    Arena(super::experiment_arena::ArenaArgs),
    /// List the experiments of a database
    List(ListArgs),
    /// Merge shard databases into one (idempotent: merging again or a rerun shard never duplicates an execution)
    Merge(MergeArgs),
    /// Write a Kubernetes Indexed Job manifest or a Slurm array script that runs the shards and the merge
    Plan(PlanArgs),
}

#[derive(clap::Args, Debug)]
pub(crate) struct RunArgs {
    /// The experiment file (TOML)
    pub file: PathBuf,
    /// Check everything (experiment file, task set, every variant's configuration,
    /// attachments) and estimate the LLM calls and the cost; run nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Run shard I of N (0-based): `I/N`, `auto/N` (I from JOB_COMPLETION_INDEX or
    /// SLURM_ARRAY_TASK_ID) or `auto` (N from SLURM_ARRAY_TASK_COUNT too)
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// The database the executions go to (default: the workspace's mixseek.db; with --shard,
    /// WORKSPACE/shards/NAME-I-of-N.db)
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Go on although the experiment's definition changed since it first ran, and resume
    /// executions whose configuration changed
    #[arg(long)]
    pub force: bool,
    /// Play items whose execution failed again (as new executions)
    #[arg(long)]
    pub retry_failed: bool,
    /// Executions running at once, instead of the experiment file's max_concurrent_executions
    /// (it is not part of the experiment's definition)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub max_concurrent_executions: Option<u32>,
    /// No progress lines on stderr
    #[arg(long)]
    pub no_progress: bool,
    /// Output format
    #[arg(
        short = 'f',
        long = "output-format",
        alias = "format",
        value_enum,
        default_value = "text"
    )]
    pub format: TextOrJson,
}

#[derive(clap::Args, Debug)]
pub(crate) struct ReportArgs {
    /// The experiment's name
    pub name: String,
    /// The database to read (default: the workspace's mixseek.db)
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Output format
    #[arg(short = 'f', long = "format", value_enum, default_value = "table")]
    pub format: ReportFormat,
    /// Write to this file instead of standard output
    #[arg(short = 'o', long, value_name = "PATH")]
    pub output: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReportFormat {
    Table,
    Json,
    Html,
}

#[derive(clap::Args, Debug)]
pub(crate) struct ListArgs {
    /// The database to read (default: the workspace's mixseek.db)
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Output format
    #[arg(short = 'f', long = "format", value_enum, default_value = "text")]
    pub format: TextOrJson,
}

#[derive(clap::Args, Debug)]
pub(crate) struct MergeArgs {
    /// The shard databases
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// The merged database (created when missing; merging into an existing one adds to it)
    #[arg(short = 'o', long, value_name = "PATH")]
    pub output: PathBuf,
    /// Output format
    #[arg(short = 'f', long = "format", value_enum, default_value = "text")]
    pub format: TextOrJson,
}

#[derive(clap::Args, Debug)]
pub(crate) struct PlanArgs {
    /// The experiment file (TOML), as the jobs will see it (relative to their working directory)
    pub file: PathBuf,
    /// How many shards
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub shards: u32,
    /// What to write
    #[arg(long, value_enum)]
    pub emit: Emit,
    /// Kubernetes: the container image with mixseek
    #[arg(long, default_value = "mixseek:latest")]
    pub image: String,
    /// Kubernetes: the PersistentVolumeClaim holding the workspace
    #[arg(long, default_value = "mixseek-workspace")]
    pub volume_claim: String,
    /// Kubernetes: a Secret whose keys become environment variables (the provider API keys)
    #[arg(long, value_name = "NAME")]
    pub secret: Option<String>,
    /// Executions each shard runs at once: passed to every shard's `experiment run` as
    /// --max-concurrent-executions and stated in the comments with the total over shards
    /// (default: the experiment file's max_concurrent_executions)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub per_shard_concurrency: Option<u32>,
    /// The workspace path the jobs use (default: /workspace on Kubernetes, the current
    /// workspace for Slurm)
    #[arg(long, value_name = "PATH")]
    pub job_workspace: Option<String>,
    /// Write to this file instead of standard output
    #[arg(short = 'o', long, value_name = "PATH")]
    pub output: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Emit {
    K8s,
    Slurm,
}

pub(crate) async fn run(cmd: ExperimentCommand, ctx: &Ctx) -> Result<ExitCode, CliError> {
    match cmd {
        ExperimentCommand::Run(a) => run_experiment(a, ctx).await,
        ExperimentCommand::Report(a) => report(a, ctx).await,
        ExperimentCommand::Arena(a) => super::experiment_arena::run(a, ctx, experiment_error).await,
        ExperimentCommand::List(a) => list(a, ctx).await,
        ExperimentCommand::Merge(a) => merge(a).await,
        ExperimentCommand::Plan(a) => plan(a, ctx),
    }
}

fn experiment_error(e: &ExperimentError) -> CliError {
    let code = if e.is_bad_input() {
        EXIT_BAD_INPUT
    } else {
        EXIT_FAILURE
    };
    let mut err = match e {
        ExperimentError::Store(s) => CliError::from_store(s),
        other => CliError::from_error(other, code),
    };
    if err.hint.is_none() {
        err.hint = e.hint();
    }
    err
}

/// Loads the experiment file: every problem, with its file and line.
fn load(ctx: &Ctx, file: &Path) -> Result<ExperimentFile, CliError> {
    let path = ctx.resolve_config_path(file)?;
    mixseek_config::load_experiment(&path).map_err(|issues| {
        let mut message = format!(
            "the experiment file {} has {} problem{}:",
            path.display(),
            issues.len(),
            if issues.len() == 1 { "" } else { "s" }
        );
        for i in &issues {
            let _ = write!(message, "\n  {i}");
        }
        CliError::usage(message).with_hint(
            "fix the lines named above; `docs/configuration.md` (Experiment file) lists every key",
        )
    })
}

/// Every variant's configuration with its overrides, through the same preflight as `exec`.
fn load_variants(ctx: &Ctx, e: &ExperimentFile) -> Result<Vec<LoadedVariant>, CliError> {
    let process = EnvVars::from_process();
    let mut out = Vec::new();
    let mut problems = String::new();
    for v in &e.variants {
        let env = v.merged_env(&process);
        let (report, loaded) =
            match super::exec::preflight_with(ctx, &v.config, &Overrides::default(), &env) {
                Ok(r) => r,
                Err(err) => {
                    let _ = write!(problems, "\n  variant `{}`: {}", v.name, err.message);
                    continue;
                }
            };
        if !report.is_valid() {
            for c in &report.categories {
                for ch in c
                    .checks
                    .iter()
                    .filter(|ch| ch.status == mixseek_config::preflight::CheckStatus::Error)
                {
                    let file = ch
                        .source_file
                        .as_deref()
                        .map(|f| format!(" ({f})"))
                        .unwrap_or_default();
                    let _ = write!(
                        problems,
                        "\n  variant `{}`: {}: {}{file}",
                        v.name, ch.name, ch.message
                    );
                }
            }
            continue;
        }
        match loaded.into_config() {
            Ok(config) => out.push(LoadedVariant {
                name: v.name.clone(),
                config,
            }),
            Err(err) => {
                let _ = write!(problems, "\n  variant `{}`: {err}", v.name);
            }
        }
    }
    if !problems.is_empty() {
        return Err(
            CliError::usage(format!("the experiment's variants do not load:{problems}")).with_hint(
                "check each variant with `mixseek exec --dry-run -c CONFIG` (an override of the \
             experiment file applies as the MIXSEEK_* variable of the same key would)",
            ),
        );
    }
    Ok(out)
}

/// Every distinct attachment of the task set, extracted once (the text is not kept): a file
/// that cannot be read is an error naming the task.
fn check_attachments(e: &ExperimentFile) -> Result<(usize, u64), CliError> {
    let limits = mixseek_attach::Limits::default();
    let mut seen = std::collections::HashSet::new();
    let mut bytes = 0u64;
    for t in &e.tasks {
        for p in &t.attachments {
            if !seen.insert(p.clone()) {
                continue;
            }
            let a = mixseek_attach::extract(p, &limits).map_err(|err| {
                let hint = err.hint();
                CliError::usage(format!(
                    "task `{}` ({}:{}): {err}",
                    t.id,
                    e.tasks_file.display(),
                    t.line
                ))
                .with_hint(hint)
            })?;
            bytes += a.size_bytes;
        }
    }
    Ok((seen.len(), bytes))
}

/// An upper bound of the LLM calls of one execution of `cfg`: per team and round, the leader
/// (one call per member it may hand a task to, plus its answer), each LLM metric's samples and
/// judges, and the judgment.
fn calls_per_execution(cfg: &LoadedConfig) -> u64 {
    let rounds = u64::from(cfg.orchestrator().max_rounds.max(1));
    let metrics: u64 = cfg
        .evaluator
        .metrics
        .iter()
        .filter(|m| m.command.is_none())
        .map(|m| u64::from(m.samples.unwrap_or(1).max(1)) * (m.judges.len().max(1) as u64))
        .sum();
    let mut total = 0u64;
    for unit in &cfg.teams {
        let members = match unit {
            mixseek_config::LoadedUnit::Team(t) => t.settings.members.len() as u64,
            mixseek_config::LoadedUnit::Workflow(w) => w
                .settings
                .steps
                .iter()
                .map(|s| s.executors.len() as u64)
                .sum(),
        };
        total += rounds * (members + 1 + metrics + 1);
    }
    total
}

fn shard_of(args: &RunArgs) -> Result<Shard, CliError> {
    match &args.shard {
        None => Ok(Shard::WHOLE),
        Some(s) => Shard::parse(s, |k| std::env::var(k).ok().filter(|v| !v.is_empty()))
            .map_err(|e| CliError::usage(e.to_string())),
    }
}

/// The database of a run: `--db`, else the shard's file, else the workspace's.
fn db_of(ctx: &Ctx, given: Option<&PathBuf>, shard: Shard, name: &str) -> PathBuf {
    match given {
        Some(p) => p.clone(),
        None if shard.count > 1 => ctx
            .workspace
            .root
            .join("shards")
            .join(shard.db_file_name(name)),
        None => ctx.workspace.db_path(),
    }
}

fn duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

fn progress_line(p: &Progress) -> String {
    let mut s = format!(
        "[{}/{}] done {} (failed {}), skipped {}, running {}, cost ${:.4}, tokens {}, {}",
        p.skipped + p.done,
        p.total,
        p.done,
        p.failed,
        p.skipped,
        p.running,
        p.cost_usd,
        p.tokens,
        duration(p.elapsed)
    );
    if let Some(eta) = p.eta {
        let _ = write!(s, ", ETA {}", duration(eta));
    }
    s
}

async fn run_experiment(args: RunArgs, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let shard = shard_of(&args)?;
    let mut experiment = load(ctx, &args.file)?;
    if let Some(n) = args.max_concurrent_executions {
        experiment.max_concurrent_executions = n as usize;
    }
    let variants = load_variants(ctx, &experiment)?;
    let (files, bytes) = {
        let e = experiment.clone();
        tokio::task::spawn_blocking(move || check_attachments(&e))
            .await
            .map_err(|e| crate::panic_hook::join_error(&e))??
    };
    let items_total = experiment.tasks.len() as u64
        * experiment.variants.len() as u64
        * u64::from(experiment.repeats);
    let mine = (0..items_total).filter(|n| shard.takes(*n)).count() as u64;
    let db = db_of(ctx, args.db.as_ref(), shard, &experiment.name);
    if args.dry_run {
        let per_variant: Vec<(String, u64)> = variants
            .iter()
            .map(|v| (v.name.clone(), calls_per_execution(&v.config)))
            .collect();
        let per_item_variant = experiment.tasks.len() as u64 * u64::from(experiment.repeats);
        let calls: u64 = per_variant.iter().map(|(_, c)| c * per_item_variant).sum();
        let shard_calls = (calls * mine).checked_div(items_total).unwrap_or(0);
        let doc = serde_json::json!({
            "experiment": experiment.name,
            "tasks": experiment.tasks.len(),
            "variants": experiment.variants.iter().map(|v| &v.name).collect::<Vec<_>>(),
            "repeats": experiment.repeats,
            "items": items_total,
            "shard": shard.to_string(),
            "shard_items": mine,
            "database": db.display().to_string(),
            "attachments": {"files": files, "bytes": bytes},
            "max_llm_calls": calls,
            "shard_max_llm_calls": shard_calls,
            "max_llm_calls_per_execution": per_variant.iter().map(|(n, c)| serde_json::json!({"variant": n, "calls": c})).collect::<Vec<_>>(),
            "budget": {"max_total_tokens": experiment.max_total_tokens, "max_cost_usd": experiment.max_cost_usd},
        });
        match args.format {
            TextOrJson::Json => println!("{}", to_json_pretty(&doc)),
            TextOrJson::Text => {
                println!("✅ Experiment {} is valid", experiment.name);
                println!(
                    "  {} tasks x {} variants x {} repeats = {} executions (shard {shard}: {mine})",
                    experiment.tasks.len(),
                    experiment.variants.len(),
                    experiment.repeats,
                    items_total
                );
                println!("  attachments: {files} files, {bytes} bytes, all readable");
                for (n, c) in &per_variant {
                    println!("  variant {n}: at most {c} LLM calls per execution");
                }
                println!(
                    "  at most {calls} LLM calls in all ({shard_calls} for this shard); cost: see each model's price in `mixseek config show`"
                );
                if let Some(b) = experiment.max_cost_usd {
                    println!("  budget: stops starting executions at ${b}");
                }
                if let Some(b) = experiment.max_total_tokens {
                    println!("  budget: stops starting executions at {b} tokens");
                }
                println!("  database: {}", db.display());
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    // Keys and (with `[privacy] mask_pii`) personal data are masked in every line printed.
    let mut secrets = Vec::new();
    for v in &variants {
        secrets.extend(mixseek_llm::api_key_values(
            &v.config.file.providers,
            &mixseek_llm::Env::process(),
        ));
    }
    let masker = variants
        .first()
        .map(|v| v.config.file.privacy.masker())
        .transpose()
        .map_err(|e| CliError::from_error(&e, EXIT_BAD_INPUT))?
        .unwrap_or_else(mixseek_core::PiiMasker::disabled);
    crate::redact::install(masker, secrets);
    if let Some(parent) = db.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    crate::commands::db::announce_upgrade(&db);
    let cancel = super::exec::cancel_on_ctrl_c(
        b"\nInterrupted: no new execution starts; running ones stop at their next step. Rerun the same command to go on. Press Ctrl-C again to exit at once.\n",
    );
    let show = !args.no_progress && !ctx.quiet;
    let last_line = Arc::new(Mutex::new((None::<Instant>, false)));
    let progress: Option<mixseek_experiment::ProgressFn> = show.then(|| {
        let last_line = last_line.clone();
        Arc::new(move |p: &Progress| {
            // At most a line a second, and the last one.
            let mut last = last_line.lock().unwrap_or_else(|e| e.into_inner());
            let end = p.running == 0 && p.skipped + p.done + p.not_started >= p.total;
            let (at, ended) = &mut *last;
            if *ended {
                return;
            }
            if end || at.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                *at = Some(Instant::now());
                *ended = end;
                let _ = crate::progress::write_stderr(format!("{}\n", progress_line(p)).as_bytes());
            }
        }) as mixseek_experiment::ProgressFn
    });
    let name = experiment.name.clone();
    let runner = Runner {
        experiment: Arc::new(experiment),
        variants: Arc::new(variants),
        shard,
        db_path: db.clone(),
        force: args.force,
        retry_failed: args.retry_failed,
        cancel,
        progress,
        env: None,
        limits: mixseek_attach::Limits::default(),
    };
    let outcome = runner.run().await.map_err(|e| experiment_error(&e))?;
    let p = &outcome.progress;
    let complete = p.skipped + p.done >= p.total;
    match args.format {
        TextOrJson::Json => {
            let doc = serde_json::json!({
                "experiment": name,
                "shard": shard.to_string(),
                "database": db.display().to_string(),
                "items": p.total,
                "skipped": p.skipped,
                "done": p.done,
                "failed": p.failed,
                "not_started": p.not_started,
                "cost_usd": p.cost_usd,
                "tokens": p.tokens,
                "interrupted": outcome.interrupted,
                "budget_reached": outcome.budget_reached,
                "failures": outcome.failures.iter().map(|(i, m)| serde_json::json!({"item": i, "error": m})).collect::<Vec<_>>(),
            });
            println!("{}", to_json_pretty(&doc));
        }
        TextOrJson::Text => {
            println!(
                "Experiment {name} (shard {shard}): {} of {} executions finished ({} before this run), {} failed; cost ${:.4}, {} tokens",
                p.skipped + p.done,
                p.total,
                p.skipped,
                p.failed,
                p.cost_usd,
                p.tokens
            );
            for (item, message) in &outcome.failures {
                println!("  failed: {item}: {message}");
            }
            if outcome.budget_reached {
                println!(
                    "  the budget was reached: {} executions were not started (raise max_cost_usd / max_total_tokens and rerun)",
                    p.not_started
                );
            }
            if complete && shard.count == 1 {
                let store = mixseek_store::Store::open_read_only(&db)
                    .map_err(|e| CliError::from_store(&e))?;
                let r = mixseek_experiment::report::build(&store, &db, &name)
                    .map_err(|e| experiment_error(&e))?;
                print!("\n{}", mixseek_experiment::report::text(&r));
            } else if complete {
                println!(
                    "  merge the shards with: mixseek experiment merge {}/{name}-*-of-{}.db -o {}",
                    db.parent()
                        .map(|d| d.display().to_string())
                        .unwrap_or_default(),
                    shard.count,
                    ctx.workspace.db_path().display()
                );
            }
        }
    }
    if outcome.interrupted {
        eprintln!(
            "Experiment {name} interrupted. Rerun the same command to go on (finished executions are kept, interrupted ones resumed)."
        );
        return Ok(ExitCode::from(130));
    }
    Ok(if complete && p.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILURE)
    })
}

fn open_db(
    ctx: &Ctx,
    given: Option<&PathBuf>,
) -> Result<(mixseek_store::Store, PathBuf), CliError> {
    let db = given.cloned().unwrap_or_else(|| ctx.workspace.db_path());
    let store = mixseek_store::Store::open_read_only(&db).map_err(|e| CliError::from_store(&e))?;
    Ok((store, db))
}

fn write_out(output: Option<&PathBuf>, text: &str, quiet: bool) -> Result<(), CliError> {
    match output {
        None => {
            print!("{text}");
            Ok(())
        }
        Some(p) => {
            std::fs::write(p, text).map_err(|e| {
                CliError::failure(format!("cannot write {}: {e}", p.display()))
                    .with_hint("check the folder exists and is writable, or choose another with -o")
            })?;
            if !quiet {
                eprintln!("Written to {}", p.display());
            }
            Ok(())
        }
    }
}

async fn report(args: ReportArgs, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let (store, db) = open_db(ctx, args.db.as_ref())?;
    let name = args.name.clone();
    let r =
        tokio::task::spawn_blocking(move || mixseek_experiment::report::build(&store, &db, &name))
            .await
            .map_err(|e| crate::panic_hook::join_error(&e))?
            .map_err(|e| experiment_error(&e))?;
    let text = match args.format {
        ReportFormat::Table => mixseek_experiment::report::text(&r),
        ReportFormat::Json => format!("{}\n", to_json_pretty(&r)),
        ReportFormat::Html => mixseek_experiment::report::html(&r),
    };
    write_out(args.output.as_ref(), &text, ctx.quiet)?;
    Ok(ExitCode::SUCCESS)
}

async fn list(args: ListArgs, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let (store, _) = open_db(ctx, args.db.as_ref())?;
    let rows = tokio::task::spawn_blocking(move || store.experiments())
        .await
        .map_err(|e| crate::panic_hook::join_error(&e))?
        .map_err(|e| CliError::from_store(&e))?;
    match args.format {
        TextOrJson::Json => println!("{}", to_json_pretty(&rows)),
        TextOrJson::Text if rows.is_empty() => println!("No experiments."),
        TextOrJson::Text => {
            for r in rows {
                println!(
                    "{}  {} of {} executions finished  (created {})",
                    r.experiment_id,
                    r.finished,
                    r.items,
                    r.created_at.map(|t| t.to_rfc3339()).unwrap_or_default()
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn merge(args: MergeArgs) -> Result<ExitCode, CliError> {
    let (output, shards) = (args.output.clone(), args.shards.clone());
    let merged = tokio::task::spawn_blocking(move || mixseek_store::merge::merge(&output, &shards))
        .await
        .map_err(|e| crate::panic_hook::join_error(&e))?
        .map_err(|e| CliError::from_store(&e))?;
    match args.format {
        TextOrJson::Json => println!("{}", to_json_pretty(&merged)),
        TextOrJson::Text => {
            for m in &merged {
                println!(
                    "{}: {} executions added, {} replaced by a further copy, {} already there; {} experiment items, {} experiments added",
                    m.path.display(),
                    m.added,
                    m.replaced,
                    m.unchanged,
                    m.items,
                    m.experiments
                );
            }
            println!("Merged into {}", args.output.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn plan(args: PlanArgs, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let experiment = load(ctx, &args.file)?;
    let workspace = args
        .job_workspace
        .clone()
        .unwrap_or_else(|| match args.emit {
            Emit::K8s => "/workspace".to_string(),
            Emit::Slurm => ctx.workspace.root.display().to_string(),
        });
    let input = mixseek_experiment::plan::PlanInput {
        experiment: experiment.name.clone(),
        experiment_file: args.file.display().to_string(),
        workspace,
        shards: args.shards,
        image: args.image.clone(),
        volume_claim: args.volume_claim.clone(),
        env_from_secret: args.secret.clone(),
        per_shard_concurrency: args.per_shard_concurrency,
    };
    let emit = match args.emit {
        Emit::K8s => mixseek_experiment::plan::Emit::K8s,
        Emit::Slurm => mixseek_experiment::plan::Emit::Slurm,
    };
    let text = mixseek_experiment::plan::emit(emit, &input);
    write_out(args.output.as_ref(), &text, ctx.quiet)?;
    Ok(ExitCode::SUCCESS)
}
