//! `mixseek experiment run`: every item (task × variant × repeat) of this shard as an
//! ordinary execution, at most `max_concurrent_executions` at once.
//!
//! * **Tagged.** Before an item's execution starts, `experiment_items` names it (experiment,
//!   task, variant, repeat → execution id), so a crash at any point leaves the item findable.
//! * **Resumable.** A rerun reads the items' states: a finished execution (completed,
//!   partially failed or failed) is skipped, an unfinished one is resumed
//!   (`exec --resume`), one that never recorded its start is started under its id.
//! * **Shared limits.** Every execution of the process uses one set of provider runtimes
//!   ([`SharedRuntimes`]), so the rate limits of `[providers.<name>]` hold for the whole
//!   experiment, not per execution.
//! * **Budget.** The experiment's `max_total_tokens` / `max_cost_usd` count what this
//!   database's executions of the experiment spent (earlier processes included). No item
//!   starts once it is reached, and each execution gets the rest as its own budget, so the
//!   overshoot is bounded by the executions already running.
//! * **Bounded memory.** Items are started in order as permits free up; a finished one leaves
//!   only counters behind (nothing per finished execution is kept).
//! * **Bounded files.** Each execution removes its progress files from `WORKSPACE/logs/` once
//!   it ended and its summary is stored (`RunOptions::remove_progress_files_at_end`), so only
//!   the running executions have files there, the ones the web UI's live view follows.

use crate::error::ExperimentError;
use crate::shard::Shard;
use mixseek_config::{ExperimentFile, LoadedConfig, Task};
use mixseek_core::{ExecutionId, ExecutionStatus, PiiMasker};
use mixseek_llm::SharedRuntimes;
use mixseek_orchestrator::{Orchestrator, RunOptions};
use mixseek_store::{ExperimentItem, ExperimentRecord, Store, StoreError, StoreWriter};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// A variant with its loaded (and checked) configuration.
#[derive(Debug, Clone)]
pub struct LoadedVariant {
    /// The variant's name (after grid expansion).
    pub name: String,
    /// Its configuration, overrides applied.
    pub config: LoadedConfig,
}

/// Where the experiment stands, for a progress display.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    /// This shard's items.
    pub total: u64,
    /// Items an earlier process finished (skipped).
    pub skipped: u64,
    /// Items finished by this process.
    pub done: u64,
    /// Items running now.
    pub running: u64,
    /// Items whose execution failed (no team has a result, or it could not run), those an
    /// earlier process ran included.
    pub failed: u64,
    /// Items not started because the budget was reached.
    pub not_started: u64,
    /// Cost so far (earlier processes included), in US dollars.
    pub cost_usd: f64,
    /// Tokens so far (earlier processes included).
    pub tokens: u64,
    /// Time since this process started.
    pub elapsed: Duration,
    /// Estimated time to the end, from this process's pace.
    pub eta: Option<Duration>,
    /// The item that just finished: (task, variant, repeat, status).
    pub last: Option<(String, String, u32, String)>,
}

/// Called after every change of [`Progress`].
pub type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// How the run ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// The final counters.
    pub progress: Progress,
    /// Ctrl-C stopped it (rerun the same command to go on).
    pub interrupted: bool,
    /// The budget stopped it.
    pub budget_reached: bool,
    /// The first failures (at most [`MAX_REPORTED_FAILURES`]): item and message.
    pub failures: Vec<(String, String)>,
}

/// How many failures an [`Outcome`] lists.
pub const MAX_REPORTED_FAILURES: usize = 20;

/// One experiment run (of one shard).
pub struct Runner {
    /// The experiment file, loaded.
    pub experiment: Arc<ExperimentFile>,
    /// Its variants with their configurations, in the file's order.
    pub variants: Arc<Vec<LoadedVariant>>,
    /// This process's share of the items.
    pub shard: Shard,
    /// The database the executions go to.
    pub db_path: PathBuf,
    /// Rerun with another definition (hash) than the stored one, and resume executions whose
    /// configuration changed.
    pub force: bool,
    /// Play items whose execution failed again, as new executions.
    pub retry_failed: bool,
    /// Ctrl-C: no item starts; running executions stop at their next step (resumable).
    pub cancel: CancellationToken,
    /// The progress display.
    pub progress: Option<ProgressFn>,
    /// Provider credentials and endpoints (default: the process environment).
    pub env: Option<mixseek_llm::Env>,
    /// Caps of attachment extraction.
    pub limits: mixseek_attach::Limits,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("experiment", &self.experiment.name)
            .field("shard", &self.shard)
            .field("db_path", &self.db_path)
            .finish_non_exhaustive()
    }
}

/// What an item's earlier executions left.
#[derive(Debug, Clone)]
struct Prior {
    execution_id: String,
    status: Option<String>,
}

/// How one item ended, for the counters.
struct ItemEnd {
    label: (String, String, u32),
    status: String,
    cost_usd: f64,
    tokens: u64,
    error: Option<String>,
    /// The store could not record: the whole run stops.
    fatal: Option<ExperimentError>,
}

/// The experiment's definition as stored (what the report needs besides the items).
pub fn definition(e: &ExperimentFile) -> serde_json::Value {
    serde_json::json!({
        "name": e.name,
        "tasks_file": e.tasks_file.display().to_string(),
        "tasks": e.tasks.len(),
        "repeats": e.repeats,
        "baseline": e.baseline,
        "seed": e.seed,
        "confidence": e.confidence,
        "variants": e.variants.iter().map(|v| serde_json::json!({
            "name": v.name,
            "config": v.config.display().to_string(),
            "description": v.description,
            "overrides": v.overrides.iter().map(|(k, val)| serde_json::json!({"key": k, "value": val})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// Items are numbered task by task, variant by variant, repeat by repeat.
pub(crate) fn items(e: &ExperimentFile) -> impl Iterator<Item = (u64, usize, usize, u32)> + '_ {
    let variants = e.variants.len();
    let repeats = e.repeats;
    (0..e.tasks.len())
        .flat_map(move |t| (0..variants).flat_map(move |v| (0..repeats).map(move |r| (t, v, r))))
        .enumerate()
        .map(|(n, (t, v, r))| (n as u64, t, v, r))
}

impl Runner {
    /// Runs this shard's items to their end (or to Ctrl-C, or to the budget).
    pub async fn run(self) -> Result<Outcome, ExperimentError> {
        let e = self.experiment.clone();
        let store = Store::open(&self.db_path)?;
        // Checkpoints come from DuckDB's log threshold and the end of the run, not after each
        // of thousands of executions (see `Store::checkpoint_after_each_execution`).
        store.checkpoint_after_each_execution(false);
        // One writer handle for the whole run: its thread lives from the first execution to
        // the last instead of starting again for each.
        let writer = store.writer(PiiMasker::disabled())?;
        // The items are written through a handle per variant that masks like the variant's
        // executions (`[privacy]`): a task's metadata is what users wrote.
        let item_writers = self
            .variants
            .iter()
            .map(|v| {
                let masker = v.config.file.privacy.masker().map_err(StoreError::from)?;
                Ok(store.writer(masker)?)
            })
            .collect::<Result<Vec<StoreWriter>, ExperimentError>>()?;
        let hash = mixseek_config::experiment_hash(&e);
        if let Some(stored) = store.experiment(&e.name)? {
            if stored.experiment_hash != hash && !self.force {
                return Err(ExperimentError::DefinitionChanged {
                    name: e.name.clone(),
                    db: self.db_path.clone(),
                });
            }
        }
        writer
            .write_experiment(&ExperimentRecord {
                experiment_id: e.name.clone(),
                experiment_hash: hash,
                definition: definition(&e),
                created_at: None,
            })
            .await?;

        let mut progress = Progress::default();
        let mut prior: HashMap<(String, String, u32), Prior> = HashMap::new();
        for s in store.experiment_items(&e.name)? {
            progress.cost_usd += s.cost_usd;
            progress.tokens += s.input_tokens + s.output_tokens;
            prior.insert(
                (s.item.task_id, s.item.variant, s.item.repeat_index),
                Prior {
                    execution_id: s.item.execution_id,
                    status: s.status,
                },
            );
        }
        let runtimes = SharedRuntimes::new();
        let semaphore = Arc::new(Semaphore::new(e.max_concurrent_executions.max(1)));
        let mut running: JoinSet<ItemEnd> = JoinSet::new();
        let mut outcome = Outcome::default();
        let started = Instant::now();
        let mut fatal: Option<ExperimentError> = None;
        progress.total = items(&e).filter(|(n, ..)| self.shard.takes(*n)).count() as u64;

        'items: for (n, t, v, r) in items(&e) {
            if !self.shard.takes(n) {
                continue;
            }
            let task = &e.tasks[t];
            let variant = &self.variants[v];
            let earlier = prior.remove(&(task.id.clone(), variant.name.clone(), r));
            if let Some(p) = &earlier {
                let finished = matches!(
                    p.status.as_deref(),
                    Some("completed" | "partial_failure" | "failed")
                );
                let retry = self.retry_failed && p.status.as_deref() == Some("failed");
                if finished && !retry {
                    progress.skipped += 1;
                    // A failure of an earlier process still counts (the exit code says so).
                    if p.status.as_deref() == Some("failed") {
                        progress.failed += 1;
                    }
                    continue;
                }
            }
            // Wait for a permit, counting the items that end meanwhile.
            let permit = loop {
                if fatal.is_some() || self.cancel.is_cancelled() {
                    break None;
                }
                if self.budget_reached(&progress) {
                    outcome.budget_reached = true;
                    break None;
                }
                tokio::select! {
                    biased;
                    _ = self.cancel.cancelled() => break None,
                    Some(end) = running.join_next(), if !running.is_empty() => {
                        self.account(end, &mut progress, &mut outcome, &mut fatal, started);
                    }
                    p = semaphore.clone().acquire_owned() => break p.ok(),
                }
            };
            let Some(permit) = permit else {
                break 'items;
            };
            // Checked again: an item may have ended (and spent) while the permit freed.
            if self.budget_reached(&progress) {
                outcome.budget_reached = true;
                break 'items;
            }
            progress.running += 1;
            let job = ItemJob {
                experiment: e.clone(),
                variants: self.variants.clone(),
                task: t,
                variant: v,
                repeat: r,
                earlier,
                retry_failed: self.retry_failed,
                db_path: self.db_path.clone(),
                writer: item_writers[v].clone(),
                runtimes: runtimes.clone(),
                cancel: self.cancel.child_token(),
                env: self.env.clone(),
                force: self.force,
                limits: self.limits,
                max_cost_usd: e.max_cost_usd.map(|b| (b - progress.cost_usd).max(0.0)),
                max_tokens: e
                    .max_total_tokens
                    .map(|b| b.saturating_sub(progress.tokens)),
            };
            running.spawn(async move {
                let _permit = permit;
                job.run().await
            });
        }
        while let Some(end) = running.join_next().await {
            self.account(end, &mut progress, &mut outcome, &mut fatal, started);
        }
        // Fold the log into the file once the writes of this run are in (best effort: the
        // next open replays the log otherwise).
        writer.flush().await?;
        if let Err(e) = store.checkpoint() {
            tracing::debug!(error = %e, "checkpoint after the experiment skipped");
        }
        if let Some(f) = fatal {
            return Err(f);
        }
        outcome.interrupted = self.cancel.is_cancelled();
        let ended = progress.skipped + progress.done;
        if outcome.budget_reached {
            progress.not_started = progress.total.saturating_sub(ended);
        }
        self.report(&mut progress, started);
        outcome.progress = progress;
        Ok(outcome)
    }

    fn budget_reached(&self, p: &Progress) -> bool {
        let e = &self.experiment;
        e.max_cost_usd.is_some_and(|b| p.cost_usd >= b)
            || e.max_total_tokens.is_some_and(|b| p.tokens >= b)
    }

    fn account(
        &self,
        end: Result<ItemEnd, tokio::task::JoinError>,
        progress: &mut Progress,
        outcome: &mut Outcome,
        fatal: &mut Option<ExperimentError>,
        started: Instant,
    ) {
        progress.running = progress.running.saturating_sub(1);
        let end = match end {
            Ok(end) => end,
            Err(join) => {
                progress.failed += 1;
                progress.done += 1;
                if outcome.failures.len() < MAX_REPORTED_FAILURES {
                    outcome.failures.push((
                        "?".into(),
                        format!("an item's task ended abnormally: {join}"),
                    ));
                }
                return;
            }
        };
        if let Some(f) = end.fatal {
            // Stop everything: the store cannot record (the items stay resumable).
            self.cancel.cancel();
            fatal.get_or_insert(f);
            return;
        }
        progress.cost_usd += end.cost_usd;
        progress.tokens += end.tokens;
        if end.status == ExecutionStatus::Interrupted.as_str() {
            // Not done: a rerun resumes it.
        } else {
            progress.done += 1;
        }
        if end.status == "failed" {
            progress.failed += 1;
        }
        if let Some(message) = end.error {
            if outcome.failures.len() < MAX_REPORTED_FAILURES {
                let (t, v, r) = &end.label;
                outcome
                    .failures
                    .push((format!("task {t}, variant {v}, repeat {r}"), message));
            }
        }
        let (t, v, r) = end.label;
        progress.last = Some((t, v, r, end.status));
        self.report(progress, started);
    }

    fn report(&self, progress: &mut Progress, started: Instant) {
        progress.elapsed = started.elapsed();
        let left = progress
            .total
            .saturating_sub(progress.skipped + progress.done);
        progress.eta = (progress.done > 0 && left > 0)
            .then(|| progress.elapsed.mul_f64(left as f64 / progress.done as f64));
        if let Some(f) = &self.progress {
            f(progress);
        }
    }
}

/// One item's execution, as a task of its own.
struct ItemJob {
    experiment: Arc<ExperimentFile>,
    variants: Arc<Vec<LoadedVariant>>,
    task: usize,
    variant: usize,
    repeat: u32,
    earlier: Option<Prior>,
    retry_failed: bool,
    db_path: PathBuf,
    /// The writer of the items, masking with the variant's masker.
    writer: StoreWriter,
    runtimes: SharedRuntimes,
    cancel: CancellationToken,
    env: Option<mixseek_llm::Env>,
    force: bool,
    limits: mixseek_attach::Limits,
    max_cost_usd: Option<f64>,
    max_tokens: Option<u64>,
}

impl ItemJob {
    async fn run(self) -> ItemEnd {
        let task: &Task = &self.experiment.tasks[self.task];
        let variant = &self.variants[self.variant];
        let label = (task.id.clone(), variant.name.clone(), self.repeat);
        let failed = |message: String| ItemEnd {
            label: label.clone(),
            status: "failed".into(),
            cost_usd: 0.0,
            tokens: 0,
            error: Some(message),
            fatal: None,
        };
        // Resume what an earlier process started; start under the recorded id what it only
        // named; otherwise (or to retry a failure) a new execution.
        let (resume, execution_id) = match &self.earlier {
            Some(p) if p.status.as_deref() == Some("failed") && self.retry_failed => {
                (None, ExecutionId::new_v4())
            }
            Some(p) if p.status.is_some() => (
                Some(p.execution_id.clone()),
                ExecutionId::from(p.execution_id.clone()),
            ),
            Some(p) => (None, ExecutionId::from(p.execution_id.clone())),
            None => (None, ExecutionId::new_v4()),
        };
        let attachments = if resume.is_some() {
            Vec::new()
        } else {
            let paths = task.attachments.clone();
            let limits = self.limits;
            let extracted = tokio::task::spawn_blocking(move || {
                paths
                    .iter()
                    .map(|p| mixseek_attach::extract(p, &limits))
                    .collect::<Result<Vec<_>, _>>()
            })
            .await;
            match extracted {
                Ok(Ok(a)) => a,
                Ok(Err(e)) => {
                    return failed(format!("attachment: {e}"));
                }
                Err(e) => return failed(format!("attachment extraction stopped: {e}")),
            }
        };
        if resume.is_none() {
            let item = ExperimentItem {
                experiment_id: self.experiment.name.clone(),
                task_id: task.id.clone(),
                variant: variant.name.clone(),
                repeat_index: self.repeat,
                execution_id: execution_id.to_string(),
                task_metadata: serde_json::Value::Object(task.metadata.clone()),
            };
            if let Err(e) = self.writer.write_experiment_item(&item).await {
                let mut end = failed(format!("cannot record the item: {e}"));
                end.fatal = Some(ExperimentError::Store(e));
                return end;
            }
        }
        let mut config = variant.config.clone();
        if let Some(dc) = &task.domain_context {
            config.file.orchestrator.domain_context = Some(dc.clone());
        }
        let mut opts = RunOptions::new(task.prompt.clone());
        opts.resume = resume;
        if opts.resume.is_none() {
            opts.execution_id = Some(execution_id);
        }
        opts.force = self.force;
        opts.db_path = Some(self.db_path.clone());
        opts.shared_runtimes = Some(self.runtimes.clone());
        opts.attachments = attachments;
        opts.cancel = self.cancel.clone();
        opts.env = self.env.clone();
        opts.max_cost_usd = self.max_cost_usd.filter(|b| *b > 0.0);
        opts.max_tokens = self.max_tokens.filter(|b| *b > 0);
        // Only running executions keep progress files (what the live view follows).
        opts.remove_progress_files_at_end = true;
        match Orchestrator::new(config).run(opts).await {
            Ok(summary) => {
                let usage = summary.usage;
                let error = (summary.status == ExecutionStatus::Failed).then(|| {
                    summary
                        .failed_teams_info
                        .first()
                        .map(|f| f.error_message.clone())
                        .unwrap_or_else(|| "no team has a result".into())
                });
                ItemEnd {
                    label,
                    status: summary.status.as_str().to_string(),
                    cost_usd: usage.cost_usd,
                    tokens: usage.total_tokens(),
                    error,
                    fatal: None,
                }
            }
            Err(e) => {
                let message = crate::error::chain(&e);
                let fatal = (e.class() == mixseek_orchestrator::ErrorClass::Runtime).then(|| {
                    ExperimentError::Execution {
                        item: format!("task {}, variant {}, repeat {}", label.0, label.1, label.2),
                        source: Box::new(e),
                    }
                });
                ItemEnd {
                    fatal,
                    ..failed(message)
                }
            }
        }
    }
}
