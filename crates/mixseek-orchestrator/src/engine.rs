//! One execution, start to finish.

use crate::budget::Budget;
use crate::bus::EventBus;
use crate::error::OrchestratorError;
use crate::halt::Halt;
use crate::hooks::HookRunner;
use crate::panics;
use crate::progress_files::ProgressFiles;
use crate::ranking::LiveRanking;
use crate::resume::{self, PriorTeam};
use mixseek_agents::{AgentDeps, UnitAgents};
use mixseek_config::{LoadedConfig, LoadedUnit};
use mixseek_core::PiiMasker;
use mixseek_core::{
    Event, EventSink, ExecutionId, ExecutionStatus, ExecutionSummary, ExitReason, FailedTeamInfo,
    LeaderboardEntry, LlmCallRecord, TeamId, TeamRef,
};
use mixseek_llm::{CallObserver, Env, ModelRegistry, RegistryConfig};
use mixseek_prompt::PromptBuilder;
use mixseek_round::{
    CompletedRound, JudgmentClient, RoundController, RoundSettings, StopCheck, SubmissionEvaluator,
};
use mixseek_store::{Store, StoreError};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// How to run.
#[derive(Clone)]
pub struct RunOptions {
    /// The task every team works on.
    pub user_prompt: String,
    /// Continue this execution instead of starting a new one.
    pub resume: Option<String>,
    /// The id of the new execution (default: a new UUID). The web UI names the executions it
    /// starts, to follow them; an id already stored is refused.
    pub execution_id: Option<ExecutionId>,
    /// The effective settings (secrets masked) to record in the execution's progress file
    /// (`logs/{execution_id}.execution.json`), where the web UI compares configurations.
    pub settings: Option<serde_json::Value>,
    /// Resume even when the configuration changed.
    pub force: bool,
    /// Turn the response cache on (`--cache`).
    pub cache: bool,
    /// Stop starting rounds once the execution cost this much (US dollars).
    pub max_cost_usd: Option<f64>,
    /// Stop starting rounds once the execution used this many tokens.
    pub max_tokens: Option<u64>,
    /// Cancelled on Ctrl-C: no new work starts; the execution is marked interrupted.
    pub cancel: CancellationToken,
    /// The caller's progress display.
    pub display: Option<Arc<dyn EventSink>>,
    /// Provider credentials and endpoints (default: the process environment).
    pub env: Option<Env>,
    /// The database file (default: the workspace's `mixseek.db`; an experiment shard writes
    /// its own).
    pub db_path: Option<std::path::PathBuf>,
    /// Provider runtimes shared with other executions of this process (an experiment's: one
    /// set of rate limits for all of them).
    pub shared_runtimes: Option<mixseek_llm::SharedRuntimes>,
    /// Documents attached to the task (extracted text), offered to every prompt and stored
    /// with the execution. A resumed execution uses the ones it stored.
    pub attachments: Vec<mixseek_core::Attachment>,
    /// Remove the execution's progress files (`logs/{execution_id}.*.progress.json` and
    /// `logs/{execution_id}.execution.json`) once it ended and its summary is stored, instead of
    /// leaving them with their final state. An experiment sets it: the live view only needs the
    /// running executions' files, and 10,000 executions would leave 40,000 files. `exec` keeps
    /// them, as the original does.
    pub remove_progress_files_at_end: bool,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("user_prompt", &self.user_prompt)
            .field("resume", &self.resume)
            .finish_non_exhaustive()
    }
}

impl RunOptions {
    /// A new execution of `user_prompt`, with no budget, cache or display.
    pub fn new(user_prompt: impl Into<String>) -> Self {
        Self {
            user_prompt: user_prompt.into(),
            resume: None,
            execution_id: None,
            settings: None,
            force: false,
            cache: false,
            max_cost_usd: None,
            max_tokens: None,
            cancel: CancellationToken::new(),
            display: None,
            env: None,
            db_path: None,
            shared_runtimes: None,
            attachments: Vec::new(),
            remove_progress_files_at_end: false,
        }
    }
}

/// A stable hash of everything that shapes a run (resume refuses a changed configuration).
pub(crate) fn config_hash(config: &LoadedConfig) -> String {
    let mut teams = Vec::new();
    for t in &config.teams {
        teams.push(t.settings_json());
    }
    let mut file = config.file.clone();
    // The team timeout may be changed on the command line when resuming.
    file.orchestrator.timeout_per_team_seconds = 0;
    let v = serde_json::json!({
        "orchestrator": file,
        "teams": teams,
        "evaluator": config.evaluator,
        "judgment": config.judgment,
        "prompt_builder": config.prompt_builder,
    });
    let digest = Sha256::digest(v.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Forwards every LLM call to the event stream (and the budget, at once).
struct CallForwarder {
    tx: mpsc::UnboundedSender<LlmCallRecord>,
    budget: Arc<Budget>,
}

impl CallObserver for CallForwarder {
    fn on_call(&self, record: &LlmCallRecord) {
        self.budget.add(record.usage);
        let _ = self.tx.send(record.clone());
    }
}

/// How one team's task ended.
enum TeamOutcome {
    /// The round loop ended normally (`None`: no round completed, the run stopped first).
    Done(Option<LeaderboardEntry>, ExitReason),
    Failed {
        best: Option<LeaderboardEntry>,
        message: String,
    },
    /// Never started: the budget was reached before the team's turn.
    Skipped,
    /// Cancelled (Ctrl-C) before it finished.
    Interrupted,
}

struct Shared {
    execution_id: ExecutionId,
    user_prompt: String,
    config: LoadedConfig,
    registry: Arc<ModelRegistry>,
    prompts: PromptBuilder,
    evaluator: Arc<dyn SubmissionEvaluator>,
    store: Store,
    writer: mixseek_store::StoreWriter,
    /// The execution's ranking for the prompts, following what the store commits.
    ranking: Arc<LiveRanking>,
    bus: Arc<EventBus>,
    stop: StopCheck,
    /// Stops every team: on Ctrl-C, and when the store cannot record (see halt.rs).
    halt: Arc<Halt>,
    deadline_per_team: Duration,
    /// The task's attachments, for every prompt.
    attachments: Arc<[mixseek_core::Attachment]>,
}

/// What the earlier processes of a resumed execution left (empty for a new one).
#[derive(Debug, Default)]
struct Earlier {
    /// The summary the last process stored when it ended (`None` when it was killed).
    summary: Option<ExecutionSummary>,
    /// Usage of every LLM call they recorded.
    usage: mixseek_core::UsageByRole,
    /// Their run time, in seconds.
    seconds: f64,
}

/// Runs executions of one configuration.
#[derive(Debug)]
pub struct Orchestrator {
    config: LoadedConfig,
}

impl Orchestrator {
    /// An orchestrator for `config`.
    pub fn new(config: LoadedConfig) -> Self {
        Self { config }
    }

    /// Runs one execution (a new one, or `opts.resume`) to its end. The phases, in order:
    /// open the store; start or resume the execution; wire the event bus; build the LLM
    /// pipeline; record the start; play the teams; tally their outcomes; record the summary.
    pub async fn run(&self, opts: RunOptions) -> Result<ExecutionSummary, OrchestratorError> {
        let cfg = &self.config;
        let o = cfg.orchestrator();
        let db_path = opts
            .db_path
            .clone()
            .unwrap_or_else(|| cfg.workspace.db_path());
        let store = open_store(cfg, &db_path)?;
        let masker = Arc::new(cfg.file.privacy.masker().map_err(StoreError::from)?);
        let writer = store.writer(PiiMasker::clone(&masker))?;
        let hash = config_hash(cfg);
        let Begin {
            execution_id,
            user_prompt,
            prior,
            earlier,
        } = begin(&store, &db_path, &opts, &hash)?;

        let budget = Arc::new(Budget::new(
            opts.max_cost_usd.or(o.max_cost_usd),
            opts.max_tokens.or(o.max_total_tokens),
        ));
        // A resumed execution's budget counts what its earlier processes spent.
        budget.add(earlier.usage.total());
        let hooks = HookRunner::new(cfg.file.hooks.clone());
        // The prompts' ranking, in memory: seeded with the stored rounds, then following
        // every round the store commits (it comes right after the store on the bus).
        let ranking = Arc::new(LiveRanking::new(
            &execution_id,
            prior.iter().map(|r| {
                (
                    r.team_id.as_str(),
                    r.team_name.as_str(),
                    r.state.round_number,
                    r.state.evaluation_score,
                )
            }),
        ));
        let bus = event_bus(cfg, &opts, &writer, &ranking, &hooks, &masker);

        // LLM calls → events.
        let (tx, mut rx) = mpsc::unbounded_channel::<LlmCallRecord>();
        let forward_bus = bus.clone();
        let forwarder = tokio::spawn(async move {
            while let Some(r) = rx.recv().await {
                let _ = forward_bus.emit(&Event::LlmCall(Box::new(r))).await;
            }
        });
        let observer = Arc::new(CallForwarder {
            tx,
            budget: budget.clone(),
        });
        let (registry, prompts, evaluator) = pipeline(cfg, &opts, &masker, observer)?;

        record_start(cfg, &bus, &execution_id, &user_prompt, hash).await?;
        // A new execution's attachments are stored with it; a resumed one reads them back.
        let attachments = if opts.resume.is_none() {
            writer
                .write_attachments(execution_id.as_str(), &opts.attachments)
                .await
                .map_err(|e| OrchestratorError::Record {
                    what: "the attachments",
                    source: mixseek_core::SinkError::new("store", e),
                })?;
            opts.attachments.clone()
        } else {
            store.attachments(execution_id.as_str())?
        };

        let halt = Arc::new(Halt::new(&opts.cancel));
        let shared = Arc::new(Shared {
            execution_id: execution_id.clone(),
            user_prompt: user_prompt.clone(),
            config: cfg.clone(),
            registry: registry.clone(),
            prompts,
            evaluator: Arc::new(evaluator),
            store: store.clone(),
            writer: writer.clone(),
            ranking,
            bus: bus.clone(),
            stop: stop_check(&halt, &budget),
            halt: halt.clone(),
            deadline_per_team: Duration::from_secs(o.timeout_per_team_seconds),
            attachments: attachments.into(),
        });
        let started = Instant::now();
        let span = tracing::info_span!(
            "execution",
            execution_id = shared.execution_id.as_str(),
            teams = cfg.teams.len()
        );
        let outcomes = play_teams(&shared, &prior, earlier.summary.as_ref())
            .instrument(span)
            .await;
        let elapsed = earlier.seconds + started.elapsed().as_secs_f64().max(1e-6);
        let tally = Tally::of(cfg, outcomes);

        // Let queued LLM-call records reach the store before the summary.
        drop(shared);
        // This process's calls, plus those of earlier processes of a resumed execution.
        let mut usage_by_role = earlier.usage.clone();
        usage_by_role.merge(&registry.ledger().usage_by_role(
            Some(execution_id.as_str()),
            None,
            None,
        ));
        drop(registry);
        let _ = tokio::time::timeout(Duration::from_secs(5), forwarder).await;
        // The store could not record: nothing more is written (the execution stays
        // resumable with the rounds committed before).
        if let Some((what, source)) = halt.take() {
            if let Err(e) = writer.flush().await {
                tracing::debug!(error = %e, "the store writer could not flush either");
            }
            hooks.finish().await;
            return Err(OrchestratorError::Stopped {
                execution_id,
                what,
                source,
            });
        }
        let interrupted = tally.interrupted || opts.cancel.is_cancelled();
        let summary = tally.summary(
            execution_id,
            user_prompt,
            elapsed,
            usage_by_role,
            budget.exceeded(),
            interrupted,
        );
        bus.emit(&Event::ExecutionFinished(Box::new(summary.clone())))
            .await
            .map_err(|source| OrchestratorError::Stopped {
                execution_id: summary.execution_id.clone(),
                what: "the execution summary".to_string(),
                source,
            })?;
        let _ = writer.flush().await;
        hooks.finish().await;
        tracing::info!(
            execution_id = summary.execution_id.as_str(),
            completed = summary.completed_teams(),
            failed = summary.failed_teams(),
            "Orchestration completed"
        );
        // What the caller prints is masked as the store's copy is.
        if masker.is_enabled() {
            return masker
                .masked(&summary)
                .map_err(|source| OrchestratorError::Mask { source });
        }
        Ok(summary)
    }
}

/// Phase 1: the workspace folder and its database, with a run's DuckDB settings.
fn open_store(cfg: &LoadedConfig, db_path: &Path) -> Result<Store, OrchestratorError> {
    std::fs::create_dir_all(&cfg.workspace.root).map_err(|source| {
        OrchestratorError::Workspace {
            path: cfg.workspace.root.clone(),
            source,
        }
    })?;
    let store = Store::open(db_path)?;
    // a run reads back only its own recent rows: DuckDB need not cache more
    if let Err(e) = store.limit_memory(mixseek_store::RUN_MEMORY_LIMIT) {
        tracing::warn!(error = %e, "cannot limit the database's memory");
    }
    if let Err(e) = store.defer_vacuum() {
        tracing::warn!(error = %e, "cannot defer the database's vacuum");
    }
    // small statements from one writer thread: no DuckDB worker threads spinning beside it
    if let Err(e) = store.limit_threads(1) {
        tracing::warn!(error = %e, "cannot limit the database's threads");
    }
    Ok(store)
}

/// The execution a run plays: a new one, or the one being resumed.
struct Begin {
    execution_id: ExecutionId,
    user_prompt: String,
    /// The rounds earlier processes committed (resume only).
    prior: Vec<mixseek_store::CompletedRound>,
    earlier: Earlier,
}

/// Phase 2: a new execution id, or the resumed execution with what its earlier processes
/// left — refused when it already finished, or (without `--force`) when the configuration
/// changed since it started.
fn begin(
    store: &Store,
    db_path: &Path,
    opts: &RunOptions,
    hash: &str,
) -> Result<Begin, OrchestratorError> {
    let Some(id) = &opts.resume else {
        let p = opts.user_prompt.trim();
        if p.is_empty() {
            return Err(OrchestratorError::EmptyPrompt);
        }
        let execution_id = match &opts.execution_id {
            Some(id) => {
                if store.execution_state(id.as_str())?.is_some() {
                    return Err(OrchestratorError::ExecutionExists { id: id.to_string() });
                }
                id.clone()
            }
            None => ExecutionId::new_v4(),
        };
        return Ok(Begin {
            execution_id,
            user_prompt: p.to_string(),
            prior: Vec::new(),
            earlier: Earlier::default(),
        });
    };
    let id = store.resolve_execution(id)?;
    let state =
        store
            .execution_state(&id)?
            .ok_or_else(|| OrchestratorError::ExecutionNotFound {
                id: id.clone(),
                db: db_path.to_path_buf(),
            })?;
    if ["completed", "partial_failure", "failed"].contains(&state.status.as_str()) {
        return Err(OrchestratorError::AlreadyFinished {
            id,
            status: state.status,
        });
    }
    if state.config_hash.as_deref().is_some_and(|h| h != hash) && !opts.force {
        return Err(OrchestratorError::ConfigChanged { id });
    }
    let prior = store.completed_rounds(&id)?;
    let (usage, seconds) = store.prior_run(&id)?;
    let earlier = Earlier {
        summary: store.execution_summary(&id)?,
        usage,
        seconds,
    };
    Ok(Begin {
        execution_id: id.into(),
        user_prompt: state.user_prompt,
        prior,
        earlier,
    })
}

/// Phase 3: the event bus. Primary sinks in order (their failure goes back to the emitter):
/// the store writer, then the in-memory ranking. Secondary sinks get a masked copy: progress
/// files, hooks and the caller's display.
fn event_bus(
    cfg: &LoadedConfig,
    opts: &RunOptions,
    writer: &mixseek_store::StoreWriter,
    ranking: &Arc<LiveRanking>,
    hooks: &Arc<HookRunner>,
    masker: &Arc<PiiMasker>,
) -> Arc<EventBus> {
    let workflows = cfg
        .teams
        .iter()
        .filter(|u| matches!(u, LoadedUnit::Workflow(_)))
        .map(|u| u.id().clone())
        .collect();
    let progress = Arc::new(
        ProgressFiles::new(cfg.workspace.logs_dir(), cfg.orchestrator().max_rounds)
            .with_workflows(workflows)
            .with_config(cfg.orchestrator_file.clone(), opts.settings.clone())
            .removed_at_end(opts.remove_progress_files_at_end),
    );
    let mut bus = EventBus::new()
        .with_primary(Arc::new(writer.clone()))
        .with_primary(ranking.clone())
        .with_secondary(progress)
        .with_secondary(hooks.clone())
        .with_masker(masker.clone());
    if let Some(d) = &opts.display {
        bus = bus.with_secondary(d.clone());
    }
    Arc::new(bus)
}

/// Phase 4: the LLM providers (every call reported to `observer`), the prompt builder and
/// the evaluator.
fn pipeline(
    cfg: &LoadedConfig,
    opts: &RunOptions,
    masker: &Arc<PiiMasker>,
    observer: Arc<CallForwarder>,
) -> Result<
    (
        Arc<ModelRegistry>,
        PromptBuilder,
        mixseek_evaluator::Evaluator,
    ),
    OrchestratorError,
> {
    let mut cache = cfg.file.cache.clone();
    cache.enabled |= opts.cache;
    let mut registry_config = RegistryConfig::new()
        .with_providers(cfg.file.providers.clone())
        .with_pricing(cfg.file.pricing.clone())
        .with_cache(cache, Some(cfg.workspace.root.clone()))
        .with_masker(masker.clone())
        .with_env(opts.env.clone().unwrap_or_else(Env::process))
        .with_observer(observer);
    if let Some(shared) = &opts.shared_runtimes {
        registry_config = registry_config.with_shared_runtimes(shared.clone());
    }
    let registry =
        Arc::new(
            ModelRegistry::new(registry_config).map_err(|e| OrchestratorError::Setup {
                what: "the LLM providers",
                source: Box::new(e),
            })?,
        );
    let prompts =
        PromptBuilder::new(&cfg.prompt_builder).map_err(|e| OrchestratorError::Setup {
            what: "the prompt builder",
            source: Box::new(e),
        })?;
    let evaluator_dir = cfg
        .evaluator_origin
        .file()
        .and_then(Path::parent)
        .map_or_else(|| cfg.workspace.root.clone(), Path::to_path_buf);
    if matches!(cfg.evaluator_origin, mixseek_config::Origin::BuiltIn) {
        // The original's line when there is no evaluator file (as `mixseek evaluate`).
        tracing::warn!(
            "Configuration file not found: {}. Using default configuration.",
            cfg.workspace.configs_dir().join("evaluator.toml").display()
        );
    }
    let evaluator = mixseek_evaluator::Evaluator::new(
        cfg.evaluator.clone(),
        registry.clone(),
        Arc::new(prompts.clone()),
    )
    .map_err(|e| OrchestratorError::Setup {
        what: "the evaluator",
        source: Box::new(e),
    })?
    .with_working_dir(evaluator_dir);
    Ok((registry, prompts, evaluator))
}

/// Phase 5: the execution's row (`ExecutionStarted`); nothing is recorded when it fails.
async fn record_start(
    cfg: &LoadedConfig,
    bus: &EventBus,
    execution_id: &ExecutionId,
    user_prompt: &str,
    config_hash: String,
) -> Result<(), OrchestratorError> {
    let o = cfg.orchestrator();
    let teams: Vec<TeamRef> = cfg
        .teams
        .iter()
        .map(|t| TeamRef {
            team_id: t.id().clone(),
            team_name: t.name().to_string(),
        })
        .collect();
    bus.emit(&Event::ExecutionStarted {
        execution_id: execution_id.clone(),
        user_prompt: user_prompt.to_string(),
        teams,
        config_hash,
        max_rounds: o.max_rounds,
        at: mixseek_core::time::now_utc(),
    })
    .await
    .map_err(|source| OrchestratorError::Record {
        what: "the execution",
        source,
    })?;
    tracing::info!(
        execution_id = execution_id.as_str(),
        teams = cfg.teams.len(),
        timeout_s = o.timeout_per_team_seconds,
        "Starting orchestration"
    );
    Ok(())
}

/// What stops a team at its next round boundary: Ctrl-C or a store failure (the halt), then
/// the budget.
fn stop_check(halt: &Arc<Halt>, budget: &Arc<Budget>) -> StopCheck {
    let (halt, budget) = (halt.clone(), budget.clone());
    Arc::new(move || {
        if halt.token().is_cancelled() {
            Some(ExitReason::Interrupted)
        } else if budget.exceeded().is_some() {
            Some(ExitReason::BudgetExceeded)
        } else {
            None
        }
    })
}

/// Phase 6: every team's task, at most `max_concurrent_teams` at once, started in
/// configuration order; a team a resumed execution already finished is not played again.
/// Returns each team's outcome in configuration order.
async fn play_teams(
    shared: &Arc<Shared>,
    prior: &[mixseek_store::CompletedRound],
    earlier_summary: Option<&ExecutionSummary>,
) -> Vec<Option<TeamOutcome>> {
    let cfg = &shared.config;
    let semaphore = Arc::new(Semaphore::new(
        cfg.orchestrator().max_concurrent_teams.max(1) as usize,
    ));
    let mut handles = Vec::new();
    let mut outcomes: Vec<Option<TeamOutcome>> = Vec::new();
    let mut previous_turn: Option<tokio::sync::oneshot::Receiver<()>> = None;
    for team in &cfg.teams {
        let (id, name) = (team.id(), team.name());
        let rounds = resume::team_rounds(prior, id);
        match resume::prior_team(prior, earlier_summary, &shared.execution_id, id, name) {
            PriorTeam::Finished { best, exit_reason } => {
                outcomes.push(Some(TeamOutcome::Done(best, exit_reason)));
                handles.push(None);
                continue;
            }
            PriorTeam::Failed { best, message } => {
                outcomes.push(Some(TeamOutcome::Failed { best, message }));
                handles.push(None);
                continue;
            }
            PriorTeam::Unfinished => {}
        }
        // Teams get their turn in configuration order: each waits until the team before
        // it has its permit (or gave up) before asking for one.
        let (my_turn_taken, next_turn) = tokio::sync::oneshot::channel::<()>();
        let my_turn = previous_turn.replace(next_turn);
        outcomes.push(None);
        handles.push(Some(tokio::spawn(
            team_task(
                shared.clone(),
                team.clone(),
                rounds,
                semaphore.clone(),
                my_turn,
                my_turn_taken,
            )
            .in_current_span(),
        )));
    }
    for (i, h) in handles.into_iter().enumerate() {
        if let Some(h) = h {
            // Panics are caught inside the task; a join error is a cancelled task.
            outcomes[i] = Some(h.await.unwrap_or_else(|e| TeamOutcome::Failed {
                best: None,
                message: format!("internal error (a bug in mixseek, please report it): the team's task ended abnormally: {e}"),
            }));
        }
    }
    outcomes
}

/// One team's task: wait for its turn and a permit, then play its rounds (`rounds`: those
/// committed before, on resume) under `catch_unwind`.
async fn team_task(
    shared: Arc<Shared>,
    team: LoadedUnit,
    rounds: Vec<CompletedRound>,
    semaphore: Arc<Semaphore>,
    my_turn: Option<tokio::sync::oneshot::Receiver<()>>,
    my_turn_taken: tokio::sync::oneshot::Sender<()>,
) -> TeamOutcome {
    let turn = async {
        if let Some(t) = my_turn {
            let _ = t.await;
        }
        semaphore.acquire_owned().await
    };
    let _permit = tokio::select! {
        biased;
        _ = shared.halt.token().cancelled() => return TeamOutcome::Interrupted,
        p = turn => match p {
            Ok(p) => p,
            Err(_) => return TeamOutcome::Interrupted,
        },
    };
    let _ = my_turn_taken.send(());
    // The budget is checked before a team starts, as before each round.
    match (shared.stop)() {
        Some(ExitReason::Interrupted) => return TeamOutcome::Interrupted,
        Some(reason) if rounds.is_empty() => {
            tracing::info!(team_id = team.id().as_str(), %reason, "team not started");
            return TeamOutcome::Skipped;
        }
        _ => {}
    }
    // Biased: once Ctrl-C is seen the team counts as interrupted, whatever the round loop
    // was about to return.
    let known = rounds.clone();
    tokio::select! {
        biased;
        _ = shared.halt.token().cancelled() => TeamOutcome::Interrupted,
        out = panics::catch(run_team(&shared, &team, rounds)) => match out {
            Ok(out) => out,
            // A panic outside the round loop (setting the team up or ending it).
            Err(panic) => {
                let team_id = team.id();
                let message = internal_error_message(team_id.as_str(), &panic);
                tracing::error!(team_id = team_id.as_str(), error = %message, "team task panicked");
                TeamOutcome::Failed {
                    best: mixseek_round::best_entry(
                        &shared.execution_id,
                        team_id,
                        team.name(),
                        &known,
                        ExitReason::PartialFailure,
                    ),
                    message,
                }
            }
        },
    }
}

/// Phase 7: the teams' outcomes sorted into the summary's lists.
#[derive(Default)]
struct Tally {
    team_results: Vec<LeaderboardEntry>,
    failed: Vec<FailedTeamInfo>,
    /// Teams that did not finish and are continued on resume (interrupted, or stopped by the
    /// budget before their first round).
    stopped: Vec<TeamId>,
    /// Whether Ctrl-C ended some team.
    interrupted: bool,
}

impl Tally {
    fn of(cfg: &LoadedConfig, outcomes: Vec<Option<TeamOutcome>>) -> Self {
        let mut t = Tally::default();
        for (team, outcome) in cfg.teams.iter().zip(outcomes) {
            let (team_id, team_name) = (team.id(), team.name());
            match outcome {
                // Ended by Ctrl-C at a round boundary: continued on resume.
                Some(TeamOutcome::Done(_, ExitReason::Interrupted)) => {
                    t.interrupted = true;
                    t.stopped.push(team_id.clone());
                }
                Some(TeamOutcome::Done(Some(best), _)) => t.team_results.push(best),
                // The budget was reached before its first round.
                Some(TeamOutcome::Done(None, ExitReason::BudgetExceeded))
                | Some(TeamOutcome::Skipped) => t.stopped.push(team_id.clone()),
                Some(TeamOutcome::Done(None, reason)) => t.failed.push(FailedTeamInfo {
                    team_id: team_id.clone(),
                    team_name: team_name.to_string(),
                    error_message: format!("no round completed ({reason})"),
                }),
                Some(TeamOutcome::Failed { best, message }) => {
                    if let Some(b) = best {
                        t.team_results.push(b);
                    }
                    t.failed.push(FailedTeamInfo {
                        team_id: team_id.clone(),
                        team_name: team_name.to_string(),
                        error_message: message,
                    });
                }
                Some(TeamOutcome::Interrupted) | None => {
                    t.interrupted = true;
                    t.stopped.push(team_id.clone());
                }
            }
        }
        t
    }

    /// The execution's summary: the best team by the ranking rule, the status (interrupted
    /// wins over what the teams' results say), the budget's stop reason.
    fn summary(
        self,
        execution_id: ExecutionId,
        user_prompt: String,
        elapsed_seconds: f64,
        usage_by_role: mixseek_core::UsageByRole,
        budget_stop: Option<String>,
        interrupted: bool,
    ) -> ExecutionSummary {
        let best =
            ExecutionSummary::pick_best(&self.team_results).map(|b| (b.team_id.clone(), b.score));
        let mut status = ExecutionSummary::derive_status(&self.team_results, &self.failed);
        let mut stop_reason = budget_stop;
        if interrupted {
            status = ExecutionStatus::Interrupted;
            stop_reason = Some(format!(
                "interrupted; resume with `mixseek exec --resume {execution_id}`"
            ));
        }
        ExecutionSummary {
            execution_id,
            user_prompt,
            best_team_id: best.as_ref().map(|b| b.0.clone()),
            best_score: best.map(|b| b.1),
            team_results: self.team_results,
            total_execution_time_seconds: elapsed_seconds,
            failed_teams_info: self.failed,
            created_at: mixseek_core::time::now_utc(),
            status,
            usage: usage_by_role.total(),
            usage_by_role,
            stop_reason,
            stopped_team_ids: self.stopped,
        }
    }
}

fn team_usage(shared: &Shared, team_id: &str) -> mixseek_core::Usage {
    shared
        .registry
        .ledger()
        .usage_by_role(Some(shared.execution_id.as_str()), Some(team_id), None)
        .total()
}

fn team_setup_failure(team: &LoadedUnit, message: String) -> TeamOutcome {
    tracing::error!(team_id = team.id().as_str(), error = %message, "team could not start");
    TeamOutcome::Failed {
        best: None,
        message,
    }
}

async fn run_team(shared: &Shared, team: &LoadedUnit, prior: Vec<CompletedRound>) -> TeamOutcome {
    let o = shared.config.orchestrator();
    let agents = UnitAgents::from_loaded(
        team,
        AgentDeps::new(shared.registry.clone(), shared.prompts.clone()),
    );
    let judgment = match JudgmentClient::new(
        &shared.config.judgment,
        &shared.registry,
        shared.prompts.clone(),
    ) {
        Ok(j) => j,
        Err(e) => return team_setup_failure(team, e.to_string()),
    };
    let controller = RoundController::new(
        agents,
        shared.prompts.clone(),
        shared.evaluator.clone(),
        judgment,
        RoundSettings::new(o),
    )
    .with_ranking(shared.ranking.clone())
    .with_sink(shared.bus.clone())
    .with_context(o.domain_context.clone(), o.language.clone())
    .with_stop_check(shared.stop.clone())
    .with_attachments(shared.attachments.clone())
    .without_records();
    let tid = team.id();
    let team_id = tid.as_str();
    let deadline = tokio::time::Instant::now() + shared.deadline_per_team;
    let mut completed = prior;
    let mut attempt: u32 = 0;
    loop {
        let run = controller.run(&shared.execution_id, &shared.user_prompt, completed.clone());
        match tokio::time::timeout_at(deadline, panics::catch(run)).await {
            Ok(Ok(Ok(result))) => {
                tracing::info!(team_id, best = ?result.best.as_ref().map(|b| b.score), "Team completed successfully");
                return TeamOutcome::Done(result.best, result.exit_reason);
            }
            Ok(Ok(Err(failure))) => {
                if failure.is_transient() && attempt < o.max_retries_per_team {
                    let wait = Duration::from_secs(1u64 << attempt.min(6));
                    attempt += 1;
                    tracing::warn!(
                        team_id, error = %failure.error, rounds_kept = failure.rounds.len(),
                        "transient failure; retrying from the last completed round (attempt {}/{})", attempt, o.max_retries_per_team
                    );
                    completed = failure.rounds;
                    // The wait counts against the team's time too.
                    tokio::time::sleep_until(deadline.min(tokio::time::Instant::now() + wait))
                        .await;
                    continue;
                }
                // The store cannot record: the whole execution stops (halt.rs), this team
                // is not recorded as failed, so `--resume` continues it.
                if let mixseek_round::RoundError::Sink { round, source } = &failure.error
                    && Halt::stops_the_run(source)
                {
                    shared
                        .halt
                        .stop(format!("round {round} of team `{team_id}`"), source.clone());
                    return TeamOutcome::Interrupted;
                }
                let message = failure.error.to_string();
                tracing::error!(team_id, error = %message, "team failed");
                let best = controller
                    .finish_failed(
                        &shared.execution_id,
                        &failure.rounds,
                        &message,
                        false,
                        team_usage(shared, team_id),
                    )
                    .await;
                let best = best.unwrap_or_else(|e| {
                    tracing::warn!(team_id, error = %e, "Failed to recover partial results");
                    None
                });
                return TeamOutcome::Failed { best, message };
            }
            Ok(Err(panic)) => {
                // A bug: the team fails with what it committed; the other teams go on.
                let message = internal_error_message(team_id, &panic);
                tracing::error!(team_id, error = %message, "team task panicked");
                return fail_with_stored_rounds(
                    shared,
                    &controller,
                    tid,
                    &completed,
                    message,
                    false,
                )
                .await;
            }
            Err(_) => {
                let message = format!("Timeout after {}s", shared.deadline_per_team.as_secs());
                tracing::error!(team_id, "team timed out");
                return fail_with_stored_rounds(
                    shared,
                    &controller,
                    tid,
                    &completed,
                    message,
                    true,
                )
                .await;
            }
        }
    }
}

/// The message of a team failed by a panic: an internal error, where it happened, and that
/// the team's committed rounds are kept.
fn internal_error_message(team_id: &str, panic: &panics::Panic) -> String {
    format!(
        "internal error (a bug in mixseek, please report it): team `{team_id}`'s task {panic}; \
         its completed rounds are kept"
    )
}

/// Fails a team whose round loop was cut off (timeout or panic) with the rounds the store
/// committed for it: what it queued before is flushed first, then read back, so a commit that
/// landed after the cut counts.
async fn fail_with_stored_rounds(
    shared: &Shared,
    controller: &RoundController,
    team: &TeamId,
    known: &[CompletedRound],
    message: String,
    timed_out: bool,
) -> TeamOutcome {
    let team_id = team.as_str();
    if let Err(e) = shared.writer.flush().await {
        tracing::warn!(team_id, error = %e, "cannot flush the store writer after the team was cut off");
    }
    let rounds = match shared
        .store
        .team_rounds_async(shared.execution_id.as_str(), team_id)
        .await
    {
        Ok(r) => {
            // a commit that landed after the run was cut off is on the board now
            shared.ranking.set_team(
                team_id,
                r.iter().map(|r| {
                    (
                        r.team_id.as_str(),
                        r.team_name.as_str(),
                        r.state.round_number,
                        r.state.evaluation_score,
                    )
                }),
            );
            r.iter().map(resume::to_completed).collect()
        }
        Err(e) => {
            tracing::warn!(team_id, error = %e, "cannot read the team's rounds after it was cut off");
            known.to_vec()
        }
    };
    let best = controller
        .finish_failed(
            &shared.execution_id,
            &rounds,
            &message,
            timed_out,
            team_usage(shared, team_id),
        )
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(team_id, error = %e, "cannot record the team's end");
            let reason = if timed_out {
                ExitReason::PartialFailureTimeout
            } else {
                ExitReason::PartialFailure
            };
            mixseek_round::best_entry(
                &shared.execution_id,
                team,
                controller.team_name(),
                &rounds,
                reason,
            )
        });
    TeamOutcome::Failed { best, message }
}
