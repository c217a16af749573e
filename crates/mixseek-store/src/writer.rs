//! The store writer: one thread per process owning a cloned connection, fed through a channel.
//! It implements [`EventSink`]: `emit` returns once the event's rows are committed (LLM calls
//! and submissions are queued and committed with the next batch; [`StoreWriter::write`] waits
//! for submissions too). Evaluated rounds are validated, masked and serialized on the emitter's
//! side ([`StagedRounds`]), so the thread only does database work.
//! A `SubmissionReady` event carrying its unevaluated round is staged like a round and writes
//! that round's `round_history` row only (in order with the other events: its `Evaluated`
//! updates it, without rewriting the transcript when it is the submitted one); consecutive
//! rounds of both kinds share one bulk upsert.
//! Whatever is queued when the thread wakes up, and whatever keeps coming right after it (up
//! to 0.3 ms apart and 5 ms in all, or 3 ms and 30 ms once the writer is busy: `Gathering`), is
//! written in one transaction: between two other events (an execution's start or end) its
//! rounds with one bulk upsert, then its LLM calls, then its decisions with one set-based
//! update, then its team ends (see [`apply`]);
//! if that batch fails, each job is retried alone, in order, so an error reaches only the
//! emitter it belongs to.
//!
//! Transactions hold up to [`MAX_TX_ROUNDS`] rounds (two DuckDB row groups): a bulk load
//! ([`StoreWriter::write_all`]) fills them, because a transaction that appends whole row groups
//! has DuckDB write them compressed straight into the database file instead of logging every
//! row in the write-ahead log and copying it again at the next checkpoint.
//!
//! One writer thread at a time: a new writer waits for the previous thread (still committing
//! what its last handle queued) to finish, so round keys are only ever checked and written by
//! one thread (see `rounds.rs`). Each handle masks with the masker it was created with.
//!
//! An arena ([`StoreWriter::write_arena`]) is one job: its rows are inserted in the batch's
//! transaction, in order with the other events.
//!
//! Retries: a transient failure (I/O, transaction conflict) is attempted 3 times in all,
//! sleeping 1 s and then 2 s between attempts; validation and constraint errors fail at once.

use crate::arena::ArenaDetail;
use crate::db::{Shared, Store};
use crate::error::{Result, StoreError};
use crate::fault::Fault;
use crate::rounds::{RoundKeys, StageRound, StagedRounds};
use crate::themes::ThemeAnalysis;
use crate::write;
use chrono::{DateTime, Utc};
use duckdb::Connection;
use mixseek_core::PiiMasker;
use mixseek_core::{Event, EventSink, LlmCallRecord, RoundRecord, SinkError, SubmittedRound};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// `write_all` stages its rounds in chunks of this size (the emitter stages the next chunk
/// while the writer thread writes the previous ones).
const STAGE_CHUNK: usize = 16_384;
/// DuckDB's row group size: a transaction appending this many rows to a table writes them
/// straight to the database file ("optimistic writes").
const ROW_GROUP: usize = 122_880;
/// Most rounds (or other events) written in one transaction: two row groups.
pub const MAX_TX_ROUNDS: usize = 2 * ROW_GROUP;
/// How long a transaction waits for more jobs after those queued when it starts: up to `gap`
/// for each next one, `max` in all. Teams that play in step send their events in waves, and a
/// wave written in one transaction pays DuckDB's cost per transaction (planning each statement,
/// the keys' index buffers, the commit) once instead of two or three times. The price is
/// latency: a lone event is committed `gap` later, and any event at most `max` later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Gathering {
    gap: Duration,
    max: Duration,
}

/// The window of a lightly fed writer: a lone event waits 0.3 ms.
const QUIET: Gathering = Gathering {
    gap: Duration::from_micros(300),
    max: Duration::from_millis(5),
};
/// The window after a transaction of [`BUSY_JOBS`] jobs or more: many teams are playing at once,
/// so waiting costs each of them little while every transaction saved is CPU saved (the teams'
/// steps are a few hundred microseconds to milliseconds apart; docs/benchmarks.md).
const BUSY: Gathering = Gathering {
    gap: Duration::from_millis(3),
    max: Duration::from_millis(30),
};
/// A transaction of this many jobs or more makes the next one gather with [`BUSY`].
const BUSY_JOBS: usize = 64;
/// How often a transaction being gathered looks for the next job (see [`gathered`]).
const POLL: Duration = Duration::from_micros(500);
// a busy window is longer, and polled several times per gap
const _: () = assert!(BUSY.gap.as_nanos() > QUIET.gap.as_nanos());
const _: () = assert!(BUSY.max.as_nanos() > QUIET.max.as_nanos());
const _: () = assert!(POLL.as_nanos() < BUSY.gap.as_nanos());

/// The window of the next transaction, after one of `jobs` jobs.
fn window_after(jobs: usize) -> Gathering {
    if jobs >= BUSY_JOBS { BUSY } else { QUIET }
}

/// Sleeps between the attempts of a transient failure (3 attempts in all).
const RETRY_SLEEPS: [Duration; 2] = [Duration::from_secs(1), Duration::from_secs(2)];

/// Where the writer gets "now" (the `created_at` / `updated_at` / `completed_at` it stores).
pub type Clock = fn() -> DateTime<Utc>;

enum Op {
    /// `Evaluated` events and the rounds of `SubmissionReady` events, staged. `more`: the same
    /// `write_all` call queues more rounds right after these (the thread waits for them to
    /// fill its transaction).
    Rounds {
        staged: Box<StagedRounds>,
        more: bool,
    },
    /// Any other event the store records, with the masker of the handle that sent it.
    Event {
        event: Box<Event>,
        masker: Arc<PiiMasker>,
    },
    /// An LLM call, its error text already masked.
    LlmCall(Box<LlmCallRecord>),
    /// A whole arena, validated and masked (see `arena.rs`).
    Arena(Box<ArenaDetail>),
    /// A whole theme analysis, validated and masked (see `themes.rs`).
    Themes(Box<ThemeAnalysis>),
    /// An experiment, an experiment item or an execution's attachments (see `experiment.rs`).
    Experiment(Box<crate::experiment::Write>),
    Flush,
}

/// Where a job's result arrives.
type Reply = oneshot::Receiver<Result<()>>;

struct Job {
    op: Op,
    reply: Option<oneshot::Sender<Result<()>>>,
}

impl Job {
    /// How much of a batch this job takes: its rounds, or 1.
    fn size(&self) -> usize {
        match &self.op {
            Op::Rounds { staged, .. } => staged.len(),
            _ => 1,
        }
    }

    /// More rounds of the same bulk write follow right away.
    fn more(&self) -> bool {
        matches!(self.op, Op::Rounds { more: true, .. })
    }
}

impl Store {
    /// A handle on the process's writer for this database (its thread is started on first
    /// use). Every handle masks what it writes with its own `masker`, so a run with masking on
    /// stores masked text even while another run's handle writes without. When the previous
    /// writer's last handle was just dropped, this waits until that thread has committed what
    /// it was given: only one thread ever writes the round tables (blocking; at most one
    /// batch's commit).
    pub fn writer(&self, masker: PiiMasker) -> Result<StoreWriter> {
        self.writer_with_clock(masker, mixseek_core::time::now_utc)
    }

    /// [`Store::writer`] with the clock that stamps `created_at` / `updated_at` /
    /// `completed_at` (tests use a fixed one).
    pub fn writer_with_clock(&self, masker: PiiMasker, clock: Clock) -> Result<StoreWriter> {
        if self.shared.read_only {
            return Err(StoreError::ReadOnly {
                path: self.shared.path.clone(),
            });
        }
        let (writer, gate) = slot_of(self);
        let mut slot = writer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(inner) = slot.upgrade() {
            return Ok(StoreWriter::from_inner(inner, masker));
        }
        // The previous thread may still be committing what its last handle queued.
        gate.enter();
        let w = StoreWriter::start(self, masker, clock, gate)?;
        *slot = w.downgrade();
        Ok(w)
    }
}

/// The writer of one open database: a handle on its thread, if one runs, and its gate.
struct WriterSlot {
    /// The database (weak: its identity only).
    store: Weak<Shared>,
    /// Held while a writer is looked up or started, so a database gets one thread.
    writer: Arc<Mutex<Weak<WriterInner>>>,
    /// Whether its writer thread runs (it may outlive its last handle while it commits).
    gate: Arc<WriterGate>,
}

/// The writer slot of `store`'s database (created on first use). Slots of closed databases are
/// dropped: a writer keeps its database open, and its thread has ended once it is gone.
fn slot_of(store: &Store) -> (Arc<Mutex<Weak<WriterInner>>>, Arc<WriterGate>) {
    static SLOTS: Mutex<Vec<WriterSlot>> = Mutex::new(Vec::new());
    let mut slots = SLOTS.lock().unwrap_or_else(|e| e.into_inner());
    slots.retain(|s| s.store.strong_count() > 0);
    let me = Arc::downgrade(&store.shared);
    if let Some(s) = slots.iter().find(|s| s.store.ptr_eq(&me)) {
        return (s.writer.clone(), s.gate.clone());
    }
    let slot = WriterSlot {
        store: me,
        writer: Arc::default(),
        gate: Arc::default(),
    };
    let found = (slot.writer.clone(), slot.gate.clone());
    slots.push(slot);
    found
}

/// Whether a writer thread of a database is running: a new writer waits until the previous
/// thread has committed what it was given and stopped.
#[derive(Debug, Default)]
struct WriterGate {
    running: Mutex<bool>,
    stopped: Condvar,
}

impl WriterGate {
    /// Waits until no writer thread runs, then marks one as running.
    fn enter(&self) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        while *running {
            running = self
                .stopped
                .wait(running)
                .unwrap_or_else(|e| e.into_inner());
        }
        *running = true;
    }

    fn leave(&self) {
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) = false;
        self.stopped.notify_all();
    }
}

/// Held by the writer thread: marks the gate free when the thread ends (or panics).
struct GatePass(Arc<WriterGate>);

impl Drop for GatePass {
    fn drop(&mut self) {
        self.0.leave();
    }
}

struct WriterInner {
    sender: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    path: PathBuf,
    /// Keeps the database instance registered while the writer lives.
    _store: Arc<Shared>,
}

impl Drop for WriterInner {
    fn drop(&mut self) {
        // Closing the channel lets the thread drain what is queued and stop.
        drop(self.sender.lock().unwrap_or_else(|e| e.into_inner()).take());
        if let Some(handle) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take()
            && handle.join().is_err()
        {
            tracing::error!(path = %self.path.display(), "the database writer thread panicked");
        }
    }
}

/// The process's database writer (see the module docs). Cheap to clone; the thread stops
/// (after committing what is queued) when the last clone is dropped.
#[derive(Clone)]
pub struct StoreWriter {
    inner: Arc<WriterInner>,
    /// This handle's masker: rounds are masked by their emitters, other events by the thread
    /// with the masker sent along.
    masker: Arc<PiiMasker>,
    /// The last submission this handle (and its clones) sent per team whose evaluation has not
    /// come yet: an evaluation with the same transcript is written without it.
    submitted: Arc<Mutex<HashMap<TeamKey, Box<SubmittedRound>>>>,
}

/// (execution_id, team_id).
type TeamKey = (String, String);

impl std::fmt::Debug for StoreWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreWriter")
            .field("path", &self.inner.path)
            .finish()
    }
}

impl StoreWriter {
    /// Starts the thread. The caller has entered `gate` (no other writer thread runs); the
    /// thread leaves it when it ends.
    fn start(
        store: &Store,
        masker: PiiMasker,
        clock: Clock,
        gate: Arc<WriterGate>,
    ) -> Result<StoreWriter> {
        let conn = match store.connection() {
            Ok(c) => c,
            Err(e) => {
                gate.leave();
                return Err(e);
            }
        };
        let (tx, rx) = mpsc::channel::<Job>();
        let path = store.path().to_path_buf();
        let fault = Fault::from_env(&path);
        let pass = GatePass(gate);
        let shared = store.shared.clone();
        let thread = std::thread::Builder::new()
            .name("mixseek-store-writer".into())
            .spawn(move || {
                let _pass = pass;
                run(conn, clock, rx, fault, &shared);
            })
            .map_err(|source| StoreError::Io {
                path: path.clone(),
                source,
            })?;
        Ok(StoreWriter {
            inner: Arc::new(WriterInner {
                sender: Mutex::new(Some(tx)),
                thread: Mutex::new(Some(thread)),
                path,
                _store: store.shared.clone(),
            }),
            masker: Arc::new(masker),
            submitted: Arc::default(),
        })
    }

    /// Another handle on a running writer, masking with `masker`.
    fn from_inner(inner: Arc<WriterInner>, masker: PiiMasker) -> StoreWriter {
        StoreWriter {
            inner,
            masker: Arc::new(masker),
            submitted: Arc::default(),
        }
    }

    fn downgrade(&self) -> Weak<WriterInner> {
        Arc::downgrade(&self.inner)
    }

    fn send(&self, op: Op, reply: Option<oneshot::Sender<Result<()>>>) -> Result<()> {
        let guard = self.inner.sender.lock().unwrap_or_else(|e| e.into_inner());
        let sender = guard.as_ref().ok_or(StoreError::WriterStopped)?;
        sender
            .send(Job { op, reply })
            .map_err(|_| StoreError::WriterStopped)
    }

    async fn submit(&self, op: Op) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        self.send(op, Some(tx))?;
        rx.await.map_err(|_| StoreError::WriterStopped)?
    }

    /// The call with its error text masked (provider errors can echo the prompt).
    fn masked_call(&self, mut call: Box<LlmCallRecord>) -> Box<LlmCallRecord> {
        if let Some(error) = &call.error
            && let std::borrow::Cow::Owned(masked) = self.masker.mask(error)
        {
            call.error = Some(masked);
        }
        call
    }

    fn event_op(&self, event: Event) -> Op {
        Op::Event {
            event: Box::new(event),
            masker: self.masker.clone(),
        }
    }

    /// Writes one event and waits for its commit. `LlmCall` events are only queued; events
    /// the store does not record (`RoundStarted`, a `SubmissionReady` without its round) are
    /// ignored. A `SubmissionReady` with its round writes the round's `round_history` row
    /// only (the round is kept, not completed; see `rounds.rs`).
    pub async fn write(&self, event: &Event) -> Result<()> {
        match self.queue(event, true)? {
            Some(reply) => self.finish(event, reply).await,
            None => Ok(()),
        }
    }

    /// Queues one event's write (as [`StoreWriter::write`]); the reply to wait for, if any
    /// (none for what is only queued or ignored). `reply` false: a round is queued without one
    /// (its failure is logged by the writer thread).
    fn queue(&self, event: &Event, reply: bool) -> Result<Option<Reply>> {
        let round = match event {
            Event::RoundStarted { .. } | Event::SubmissionReady { round: None, .. } => {
                return Ok(None);
            }
            Event::LlmCall(call) => {
                self.send(Op::LlmCall(self.masked_call(call.clone())), None)?;
                return Ok(None);
            }
            Event::Evaluated(r) => match self.take_submitted(r) {
                true => StageRound::EvaluatedOnly(r),
                false => StageRound::Evaluated(r),
            },
            Event::SubmissionReady { round: Some(r), .. } => {
                // remembered before its commit: an evaluation sent after it is written after it
                // (or with it), and one that finds it missing is written again whole
                self.submitted_lock().insert(
                    (r.execution_id.to_string(), r.team_id.to_string()),
                    Box::new((**r).clone()),
                );
                StageRound::Submitted(r)
            }
            other => {
                let (tx, rx) = oneshot::channel();
                self.send(self.event_op(other.clone()), Some(tx))?;
                return Ok(Some(rx));
            }
        };
        let staged = Op::Rounds {
            staged: Box::new(StagedRounds::build(&self.masker, &[round])?),
            more: false,
        };
        if !reply {
            self.send(staged, None)?;
            return Ok(None);
        }
        let (tx, rx) = oneshot::channel();
        self.send(staged, Some(tx))?;
        Ok(Some(rx))
    }

    /// Waits for the commit of `event`, queued by [`StoreWriter::queue`]. An evaluation written
    /// without its transcript whose submission turned out not to be stored (its write failed)
    /// is written again with it.
    async fn finish(&self, event: &Event, reply: Reply) -> Result<()> {
        let result = reply.await.map_err(|_| StoreError::WriterStopped)?;
        match (result, event) {
            (Err(StoreError::MissingSubmission { .. }), Event::Evaluated(r)) => {
                tracing::debug!(
                    team_id = r.team_id.as_str(),
                    round = r.round_number,
                    "the round's submission is not stored; writing its evaluation whole"
                );
                let staged = StagedRounds::build(&self.masker, &[StageRound::Evaluated(r)])?;
                self.submit(Op::Rounds {
                    staged: Box::new(staged),
                    more: false,
                })
                .await
            }
            (result, _) => result,
        }
    }

    fn submitted_lock(&self) -> std::sync::MutexGuard<'_, HashMap<TeamKey, Box<SubmittedRound>>> {
        self.submitted.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `r` is the evaluation of the last submission this handle sent for its team, with
    /// the same transcript (then its stored row keeps that transcript). Forgets the submission
    /// either way.
    fn take_submitted(&self, r: &RoundRecord) -> bool {
        let key = (r.execution_id.to_string(), r.team_id.to_string());
        let Some(s) = self.submitted_lock().remove(&key) else {
            return false;
        };
        s.round_number == r.round_number
            && s.prompt == r.prompt
            && s.submission_content == r.submission_content
            && s.leader_messages == r.leader_messages
            && s.member_submissions == r.member_submissions
    }

    /// Queues many events at once and waits until all are committed (they share transactions
    /// of up to [`MAX_TX_ROUNDS`] rounds). Consecutive rounds are staged in chunks; an invalid
    /// round fails alone. Returns the first error; events other than those that failed are
    /// written. Rounds and other events keep their order; LLM calls are queued at once (ahead
    /// of rounds still being staged: `llm_calls` refers to no other row).
    ///
    /// Trade-off: the tables' UNIQUE round key (the database enforces its keys) roughly halves
    /// the bulk rate (an index insert per row; sorting the rows first does not help).
    pub async fn write_all(&self, events: Vec<Event>) -> Result<()> {
        let mut outcomes = Vec::new();
        // `Evaluated` and `SubmissionReady` (with its round) events, validated, to stage
        let mut rounds: Vec<Event> = Vec::new();
        // A chunk went out saying more follows: the group must be closed before waiting.
        let mut open_group = false;
        for event in events {
            let op = match event {
                Event::RoundStarted { .. } | Event::SubmissionReady { round: None, .. } => {
                    continue;
                }
                Event::LlmCall(call) => {
                    self.send(Op::LlmCall(self.masked_call(call)), None)?;
                    continue;
                }
                round @ (Event::Evaluated(_) | Event::SubmissionReady { round: Some(_), .. }) => {
                    match stage_round(&round).map(|r| r.validate()) {
                        Some(Ok(_)) => rounds.push(round),
                        Some(Err(e)) => outcomes.push(Err(e)),
                        None => {}
                    }
                    if rounds.len() == STAGE_CHUNK {
                        let sent = self.send_rounds(std::mem::take(&mut rounds), true);
                        open_group |= sent.is_ok();
                        outcomes.push(sent);
                    }
                    continue;
                }
                other => self.event_op(other),
            };
            // Keep the order: the rounds before this event go first.
            if !rounds.is_empty() {
                outcomes.push(self.send_rounds(std::mem::take(&mut rounds), false));
            }
            let (tx, rx) = oneshot::channel();
            self.send(op, Some(tx))?;
            open_group = false;
            outcomes.push(Ok(rx));
        }
        if !rounds.is_empty() {
            let sent = self.send_rounds(rounds, false);
            open_group &= sent.is_err();
            outcomes.push(sent);
        }
        if open_group {
            // the last chunk sent said more would follow: close the group, or the thread
            // would wait for it
            self.send(Op::Flush, None)?;
        }
        let mut first_err = None;
        for outcome in outcomes {
            let r = match outcome {
                Ok(rx) => rx
                    .await
                    .map_err(|_| StoreError::WriterStopped)
                    .and_then(|r| r),
                Err(e) => Err(e),
            };
            if let Err(e) = r
                && first_err.is_none()
            {
                first_err = Some(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Stages validated rounds (`Evaluated` and `SubmissionReady` events) and queues them as
    /// one job.
    fn send_rounds(&self, events: Vec<Event>, more: bool) -> Result<Reply> {
        let rounds: Vec<StageRound<'_>> = events.iter().filter_map(stage_round).collect();
        let staged = StagedRounds::build(&self.masker, &rounds)?;
        let (tx, rx) = oneshot::channel();
        self.send(
            Op::Rounds {
                staged: Box::new(staged),
                more,
            },
            Some(tx),
        )?;
        Ok(rx)
    }

    /// Waits until everything queued so far (LLM calls included) is committed.
    pub async fn flush(&self) -> Result<()> {
        self.submit(Op::Flush).await
    }

    /// Writes a whole arena (its `arena_runs`, `arena_games` and `arena_ratings` rows, in one
    /// transaction) and waits for the commit. The record is validated first (an invalid one is
    /// [`StoreError::Invalid`] naming the field) and its user prompt, judge answers and errors
    /// are masked with this handle's masker. An arena id already stored is refused by the
    /// database (a duplicate-key error): an arena is never replaced.
    pub async fn write_arena(&self, record: &ArenaDetail) -> Result<()> {
        let prepared = crate::arena::prepare(record, &self.masker)?;
        self.submit(Op::Arena(Box::new(prepared))).await
    }

    /// Writes a whole arena of an experiment's variants (its `arena_runs` and `arena_games`
    /// rows, its `experiment_arenas` row and the variants' `experiment_arena_ratings`, in one
    /// transaction) and waits for the commit. Validated and masked as [`Self::write_arena`];
    /// an arena id already stored is refused by the database.
    pub async fn write_experiment_arena(&self, record: &crate::ExperimentArena) -> Result<()> {
        let prepared = crate::experiment_arena::prepare(record, &self.masker)?;
        let write = crate::experiment::Write::Arena(Box::new(prepared));
        self.submit(Op::Experiment(Box::new(write))).await
    }

    /// Writes a whole theme analysis (its `theme_analyses` row and its `comment_themes` rows,
    /// in one transaction) and waits for the commit. The record is validated first (an
    /// invalid one is [`StoreError::Invalid`] naming the field, and nothing is written); the
    /// LLM's names, summaries and the quotes are masked with this handle's masker. An id
    /// already stored is refused by the database (a duplicate-key error).
    pub async fn write_themes(&self, record: &ThemeAnalysis) -> Result<()> {
        let prepared = crate::themes::prepare(record, &self.masker)?;
        self.submit(Op::Themes(Box::new(prepared))).await
    }

    /// Records an experiment (or, for a name already stored, replaces its hash and
    /// definition) and waits for the commit.
    pub async fn write_experiment(&self, record: &crate::ExperimentRecord) -> Result<()> {
        if record.experiment_id.trim().is_empty() {
            return Err(StoreError::Invalid("experiment: its name is empty".into()));
        }
        let write = crate::experiment::Write::Define(record.clone());
        self.submit(Op::Experiment(Box::new(write))).await
    }

    /// Records which execution plays an experiment's (task, variant, repeat) and waits for the
    /// commit. An item already pointing at another execution is pointed at this one (the
    /// other execution stays stored, outside the experiment). The task's metadata is stored
    /// masked with this handle's masker (every string in it, like the round documents).
    pub async fn write_experiment_item(&self, item: &crate::ExperimentItem) -> Result<()> {
        crate::experiment::validate_item(item)?;
        let mut item = item.clone();
        self.masker.mask_json(&mut item.task_metadata);
        let write = crate::experiment::Write::Item(item);
        self.submit(Op::Experiment(Box::new(write))).await
    }

    /// Stores the attachments of an execution (their text masked with this handle's masker)
    /// and waits for the commit. An execution's attachments are written once: a second write
    /// is a duplicate-key error.
    pub async fn write_attachments(
        &self,
        execution_id: &str,
        attachments: &[mixseek_core::Attachment],
    ) -> Result<()> {
        if attachments.is_empty() {
            return Ok(());
        }
        let write = crate::experiment::Write::Attachments {
            execution_id: execution_id.to_string(),
            attachments: crate::experiment::mask_attachments(attachments, &self.masker),
        };
        self.submit(Op::Experiment(Box::new(write))).await
    }
}

/// The round an event stages, if any: an evaluated round, or the unevaluated round a
/// `SubmissionReady` carries.
fn stage_round(event: &Event) -> Option<StageRound<'_>> {
    match event {
        Event::Evaluated(r) => Some(StageRound::Evaluated(r)),
        Event::SubmissionReady { round: Some(r), .. } => Some(StageRound::Submitted(r)),
        _ => None,
    }
}

#[async_trait::async_trait]
impl EventSink for StoreWriter {
    /// As [`StoreWriter::write`], except that a `SubmissionReady` is only queued (committed
    /// with the next batch, like an LLM call): a run does not wait for it, since its round is
    /// stored whole by its evaluation anyway, and a failed write of it is logged, not fatal.
    async fn emit(&self, event: &Event) -> Result<(), SinkError> {
        let result = match event {
            Event::SubmissionReady { .. } => self.queue(event, false).map(drop),
            _ => self.write(event).await,
        };
        // The StoreError stays the source: callers read its class and hint from it.
        result.map_err(|e| SinkError::new(format!("store ({})", self.inner.path.display()), e))
    }
}

fn run(conn: Connection, clock: Clock, rx: mpsc::Receiver<Job>, fault: Fault, shared: &Shared) {
    let mut keys = RoundKeys::default();
    let mut window = QUIET;
    while let Ok(first) = rx.recv() {
        let now = clock();
        let mut batch = Vec::new();
        let feed = Feed { rx: &rx, window };
        let result = stream_transaction(&conn, &mut keys, now, feed, first, &mut batch, &fault);
        window = window_after(batch.len());
        let finished = process(&conn, &mut keys, now, batch, result, &fault);
        if finished && shared.checkpoint_each_execution.load(Ordering::Relaxed) {
            checkpoint(&conn);
        }
    }
    tracing::debug!("database writer stopped");
}

/// Where a transaction's jobs come from, and how long it waits for them.
struct Feed<'a> {
    rx: &'a mpsc::Receiver<Job>,
    window: Gathering,
}

/// One transaction: `first` and whatever is queued with it or keeps coming right after it
/// (within the feed's window), written as they come. While the last job received says its
/// bulk write has more rounds coming (and the transaction holds fewer than [`MAX_TX_ROUNDS`]),
/// the thread waits for them inside the transaction, so it writes one chunk while the emitter
/// stages the next. Every job received is pushed to `batch`; after an error the rest of the
/// group is only received (and retried by [`process`]).
fn stream_transaction(
    conn: &Connection,
    keys: &mut RoundKeys,
    now: DateTime<Utc>,
    feed: Feed<'_>,
    first: Job,
    batch: &mut Vec<Job>,
    fault: &Fault,
) -> Result<()> {
    let Feed { rx, window } = feed;
    let mut result = conn
        .execute_batch("BEGIN TRANSACTION")
        .map_err(StoreError::db("beginning a transaction"));
    let mut next = Some(first);
    let mut size = 0;
    let gather_until = Instant::now() + window.max;
    while let Some(job) = next.take() {
        let start = batch.len();
        size += job.size();
        batch.push(job);
        // what is queued joins this slice (consecutive rounds: one bulk upsert), and what
        // keeps coming right after it (see `Gathering`)
        while size < MAX_TX_ROUNDS {
            let Some(job) = gathered(rx, gather_until, window.gap) else {
                break;
            };
            size += job.size();
            batch.push(job);
        }
        if result.is_ok() {
            let slice: Vec<&Job> = batch[start..].iter().collect();
            result = apply(conn, keys, &slice, now);
        }
        if size < MAX_TX_ROUNDS && batch.last().is_some_and(Job::more) {
            next = rx.recv().ok();
        }
    }
    tracing::trace!(
        jobs = batch.len(),
        rounds = size,
        "committing a transaction"
    );
    if result.is_ok() {
        result = fault.check().and_then(|()| {
            conn.execute_batch("COMMIT")
                .map_err(StoreError::db("committing"))
        });
    }
    if result.is_err() {
        if let Err(rb) = conn.execute_batch("ROLLBACK") {
            tracing::debug!(error = %rb, "rollback after a failed write");
        }
        keys.clear();
    }
    result
}

/// The next job of a transaction being gathered: one already queued, else one that comes
/// within `gap` (and before `until`). `None` ends the gathering.
///
/// The thread looks at the queue every [`POLL`] instead of waiting on it: a thread waiting on
/// the channel is woken by every send (a system call for the sender and a context switch for
/// both), and while teams play at once jobs come tens of times per millisecond.
fn gathered<T>(rx: &mpsc::Receiver<T>, until: Instant, gap: Duration) -> Option<T> {
    let silent_until = until.min(Instant::now() + gap);
    loop {
        match rx.try_recv() {
            Ok(job) => return Some(job),
            Err(mpsc::TryRecvError::Disconnected) => return None,
            Err(mpsc::TryRecvError::Empty) => {
                let left = silent_until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return None;
                }
                std::thread::sleep(left.min(POLL));
            }
        }
    }
}

/// One transaction over `jobs`; on failure what the writer knew of the stored keys is
/// forgotten (the rolled-back rows are not there).
fn commit_jobs(
    conn: &Connection,
    keys: &mut RoundKeys,
    jobs: &[&Job],
    now: DateTime<Utc>,
    fault: &Fault,
) -> Result<()> {
    let result = in_transaction(conn, |c| {
        apply(c, keys, jobs, now).and_then(|()| fault.check())
    });
    if result.is_err() {
        keys.clear();
    }
    result
}

/// Answers the jobs of a transaction: after a transient failure the whole batch is retried
/// (3 attempts in all); after another failure each job is written alone, so an error reaches
/// only its own emitter. Returns whether an execution's end was written.
fn process(
    conn: &Connection,
    keys: &mut RoundKeys,
    now: DateTime<Utc>,
    batch: Vec<Job>,
    result: Result<()>,
    fault: &Fault,
) -> bool {
    let refs: Vec<&Job> = batch.iter().collect();
    let result = match result {
        Err(e) if e.is_out_of_memory() => {
            lift_memory_cap(conn, &e);
            with_retries(|| commit_jobs(conn, keys, &refs, now, fault), e)
        }
        Err(e) if e.is_transient() => {
            with_retries(|| commit_jobs(conn, keys, &refs, now, fault), e)
        }
        other => other,
    };
    let outcome: Vec<Result<()>> = match result {
        Ok(()) => batch.iter().map(|_| Ok(())).collect(),
        // (a duplicate key means the writer's record of the stored keys was wrong: it was
        // forgotten with the failed transaction, and the job is written again after reading
        // the keys; see `rounds.rs`)
        Err(e) if batch.len() == 1 && !e.is_duplicate_key() => vec![Err(e)],
        Err(e) => {
            // Find the culprit(s): each event alone, once (transient errors were retried above).
            tracing::debug!(error = %e, jobs = batch.len(), "batch write failed; writing the events one by one");
            batch
                .iter()
                .map(|job| commit_jobs(conn, keys, &[job], now, fault))
                .collect()
        }
    };
    let finished = batch.iter().zip(&outcome).any(|(job, r)| {
        r.is_ok()
            && matches!(&job.op, Op::Event { event, .. } if matches!(**event, Event::ExecutionFinished(_)))
    });
    for (job, result) in batch.into_iter().zip(outcome) {
        match job.reply {
            Some(reply) => {
                if let Err(Err(e)) = reply.send(result) {
                    tracing::warn!(error = %e, "database write failed after its emitter went away");
                }
            }
            None => {
                if let Err(e) = result {
                    // only LLM calls, a run's submitted rounds (and the flush closing a bulk
                    // write) go without a reply
                    let what = match &job.op {
                        Op::Rounds { .. } => "a submitted round",
                        _ => "an LLM call",
                    };
                    tracing::warn!(error = %e, "failed to record {what}");
                }
            }
        }
    }
    finished
}

/// After a run: fold the write-ahead log into the file, so report commands (which open the
/// file read-only and would replay the log in memory at every open) and a crash start from a
/// short log. Best effort: DuckDB refuses while another connection writes.
fn checkpoint(conn: &Connection) {
    if let Err(e) = conn.execute_batch("CHECKPOINT") {
        tracing::debug!(error = %e, "checkpoint after a finished execution skipped");
    }
}

/// The remaining attempts after a first transient failure.
/// A write needed more memory than DuckDB's cap (a live run's [`crate::RUN_MEMORY_LIMIT`]):
/// the cap goes back to DuckDB's default (80 % of RAM) for the rest of the process, so the
/// write is retried instead of failing the round. Losing a round costs more than the memory.
/// (`RESET` alone updates the setting but, in DuckDB 1.5, not the buffer manager's limit:
/// the default it restores is then set explicitly.)
fn lift_memory_cap(conn: &Connection, error: &StoreError) {
    let lifted = conn
        .execute_batch("RESET GLOBAL memory_limit")
        .and_then(|()| {
            conn.query_row("SELECT current_setting('memory_limit')", [], |r| {
                r.get::<_, String>(0)
            })
        })
        .and_then(|default| {
            // DuckDB prints sizes as `18.8 GiB`; its parser takes them back as written
            conn.execute_batch(&format!(
                "SET memory_limit = '{}'",
                default.replace('\'', "")
            ))
            .map(|()| default)
        });
    match lifted {
        Ok(limit) => tracing::warn!(
            error = %error,
            limit,
            "a database write needed more memory than DuckDB's cap; the cap is lifted"
        ),
        Err(e) => tracing::warn!(error = %e, "cannot lift DuckDB's memory cap"),
    }
}

fn with_retries(mut attempt: impl FnMut() -> Result<()>, first: StoreError) -> Result<()> {
    let mut last = first;
    for sleep in RETRY_SLEEPS {
        tracing::warn!(error = %last, retry_in = ?sleep, "database write failed; retrying");
        std::thread::sleep(sleep);
        match attempt() {
            Ok(()) => return Ok(()),
            Err(e) if e.is_transient() => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// begin → f → commit; on error a best-effort rollback whose own error never hides the first.
pub(crate) fn in_transaction(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<()>,
) -> Result<()> {
    conn.execute_batch("BEGIN TRANSACTION")
        .map_err(StoreError::db("beginning a transaction"))?;
    let result = f(conn).and_then(|()| {
        conn.execute_batch("COMMIT")
            .map_err(StoreError::db("committing"))
    });
    if result.is_err()
        && let Err(rb) = conn.execute_batch("ROLLBACK")
    {
        tracing::debug!(error = %rb, "rollback after a failed write");
    }
    result
}

/// Writes the jobs of a transaction. Between two other events (an execution's start or end),
/// rounds, decisions, team ends and LLM calls are written kind by kind — every staged round
/// with one bulk upsert, then the LLM calls, then every decision with one set-based update,
/// then the teams' ends (two statements) — rather than in arrival order: concurrent teams
/// interleave their submissions, evaluations, decisions and ends, and a statement per run of
/// one kind would cost more than the rows. A team's own events keep their order (its rounds
/// go first, its decisions next, its end last: `TeamFinished` is a team's last event); an
/// execution's start and end keep their place, and so does an arena (its three tables' rows).
fn apply(conn: &Connection, keys: &mut RoundKeys, jobs: &[&Job], now: DateTime<Utc>) -> Result<()> {
    let mut i = 0;
    while i < jobs.len() {
        if let Op::Arena(record) = &jobs[i].op {
            crate::arena::insert(conn, record)?;
            i += 1;
            continue;
        }
        if let Op::Themes(record) = &jobs[i].op {
            crate::themes::insert(conn, record)?;
            i += 1;
            continue;
        }
        if let Op::Experiment(write) = &jobs[i].op {
            crate::experiment::insert(conn, write, now)?;
            i += 1;
            continue;
        }
        if let Op::Event { event, masker } = &jobs[i].op
            && !matches!(**event, Event::Judged { .. } | Event::TeamFinished { .. })
        {
            apply_event(conn, keys, masker, event, now)?;
            i += 1;
            continue;
        }
        let (mut staged, mut calls, mut decisions, mut finished) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        while let Some(job) = jobs.get(i) {
            match &job.op {
                Op::Rounds { staged: r, .. } => staged.push(&**r),
                Op::LlmCall(c) => calls.push(&**c),
                Op::Flush => {}
                Op::Arena(_) | Op::Themes(_) | Op::Experiment(_) => break,
                Op::Event { event, masker } => match &**event {
                    Event::Judged {
                        execution_id,
                        team_id,
                        round_number,
                        decision,
                        ..
                    } => decisions.push(write::DecisionJob {
                        execution_id: execution_id.as_str(),
                        team_id: team_id.as_str(),
                        round_number: *round_number,
                        decision,
                        masker,
                    }),
                    Event::TeamFinished {
                        execution_id,
                        team_id,
                        best,
                        exit_reason,
                        ..
                    } => finished.push(write::FinishJob {
                        execution_id: execution_id.as_str(),
                        team_id: team_id.as_str(),
                        best: best.as_deref(),
                        exit_reason: exit_reason.map(|r| r.as_str()),
                        masker,
                    }),
                    _ => break,
                },
            }
            i += 1;
        }
        if !staged.is_empty() {
            crate::rounds::write_rounds(conn, keys, &staged, now)?;
        }
        if !calls.is_empty() {
            write::write_llm_calls(conn, &calls)?;
        }
        if !decisions.is_empty() {
            write::write_decisions(conn, keys, &decisions, now)?;
        }
        if !finished.is_empty() {
            write::finish_teams(conn, keys, &finished, now)?;
        }
    }
    Ok(())
}

/// Writes one event other than `Evaluated` and `SubmissionReady` (staged rounds), `LlmCall`,
/// `Judged` and `TeamFinished` (batched), which never reach here.
fn apply_event(
    conn: &Connection,
    keys: &mut RoundKeys,
    masker: &PiiMasker,
    event: &Event,
    now: DateTime<Utc>,
) -> Result<()> {
    match event {
        Event::ExecutionStarted {
            execution_id,
            user_prompt,
            teams,
            config_hash,
            max_rounds,
            at,
        } => write::start_execution(
            conn,
            keys,
            &write::StartJob {
                execution_id: execution_id.as_str(),
                user_prompt,
                teams,
                config_hash,
                max_rounds: *max_rounds,
                at: *at,
                masker,
            },
        ),
        Event::ExecutionFinished(summary) => {
            write::finish_execution(conn, masker, summary, now)?;
            // the run is over: its keys are not needed any more
            keys.forget(summary.execution_id.as_str());
            Ok(())
        }
        Event::Evaluated(_)
        | Event::LlmCall(_)
        | Event::Judged { .. }
        | Event::TeamFinished { .. }
        | Event::RoundStarted { .. }
        | Event::SubmissionReady { .. } => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rounds::tests::{record, submission};

    /// Jobs sent `every` apart by another thread, `n` of them, then the sender is dropped.
    fn sent(every: Duration, n: u32) -> mpsc::Receiver<u32> {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for i in 0..n {
                std::thread::sleep(every);
                if tx.send(i).is_err() {
                    return;
                }
            }
        });
        rx
    }

    #[test]
    fn a_transaction_gathers_the_jobs_that_keep_coming() {
        // (the durations are far apart, so a busy machine does not change the outcome; the
        // jobs come while the thread sleeps between two looks at its queue)
        let rx = sent(Duration::from_millis(20), 3);
        let until = Instant::now() + Duration::from_secs(30);
        let got: Vec<u32> =
            std::iter::from_fn(|| gathered(&rx, until, Duration::from_secs(5))).collect();
        assert_eq!(
            got,
            vec![0, 1, 2],
            "each came within the gap; the end of the sender ends it"
        );
    }

    #[test]
    fn a_gap_longer_than_the_wait_ends_the_gathering_and_the_job_waits_for_the_next() {
        let rx = sent(Duration::from_millis(500), 1);
        let until = Instant::now() + Duration::from_secs(30);
        assert_eq!(gathered(&rx, until, Duration::from_millis(20)), None);
        assert_eq!(
            rx.recv().ok(),
            Some(0),
            "not lost: the next transaction takes it"
        );
    }

    #[test]
    fn jobs_that_keep_coming_are_gathered_until_the_deadline_only() {
        let rx = sent(Duration::from_millis(20), 1000);
        let started = Instant::now();
        let until = started + Duration::from_millis(200);
        let got = std::iter::from_fn(|| gathered(&rx, until, Duration::from_secs(5))).count();
        assert!(got < 1000, "the deadline ends it: {got} gathered");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "ended at the deadline, not a gap"
        );
    }

    #[test]
    fn a_writer_gathers_longer_after_a_busy_transaction_only() {
        assert_eq!(
            window_after(1),
            QUIET,
            "a lone event waits the short gap only"
        );
        assert_eq!(window_after(BUSY_JOBS - 1), QUIET);
        assert_eq!(window_after(BUSY_JOBS), BUSY);
        assert_eq!(window_after(10 * BUSY_JOBS), BUSY);
    }

    #[tokio::test]
    async fn a_key_written_behind_the_writers_back_is_not_duplicated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().join("mixseek.db")).expect("open");
        let writer = store.writer(PiiMasker::disabled()).expect("writer");
        writer
            .write(&Event::ExecutionStarted {
                execution_id: "e".into(),
                user_prompt: "task".into(),
                teams: Vec::new(),
                config_hash: "h".into(),
                max_rounds: 3,
                at: chrono::Utc::now(),
            })
            .await
            .expect("started");
        // the writer believes execution e has no rounds; another connection writes one
        store
            .connection()
            .expect("conn")
            .execute_batch(
                "INSERT INTO leader_board (execution_id, team_id, team_name, round_number,
                     submission_content, score, score_details)
                 VALUES ('e', 'a', 'a', 1, 'behind its back', 1.0, '{}')",
            )
            .expect("a row the writer does not know");
        // its plain insert is refused by the key; it reads the keys and writes the round again
        writer
            .write(&Event::Evaluated(Box::new(record("a", 1, 42.0))))
            .await
            .expect("written");
        let rows: Vec<(String, f64)> = store
            .select(
                "SELECT submission_content, score FROM leader_board",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("rows");
        assert_eq!(rows, vec![("a 1".to_string(), 42.0)]);
    }

    #[tokio::test]
    async fn an_evaluation_whose_submission_was_lost_is_written_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().join("mixseek.db")).expect("open");
        let writer = store.writer(PiiMasker::disabled()).expect("writer");
        let mut r = record("a", 1, 42.0);
        r.prompt = "the prompt".into();
        r.leader_messages = vec![serde_json::json!({"role": "user", "content": "the prompt"})];
        // the handle sent this submission, but it never reached the database
        writer
            .submitted_lock()
            .insert(("e".into(), "a".into()), Box::new(submission(&r)));
        writer
            .write(&Event::Evaluated(Box::new(r)))
            .await
            .expect("written whole");
        let conn = store.connection().expect("conn");
        let (messages, score): (Option<String>, f64) = conn
            .query_row(
                "SELECT h.message_history, l.score FROM round_history h JOIN leader_board l
                 USING (execution_id, team_id, round_number)",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .expect("one round");
        assert!(messages.is_some_and(|m| m.contains("the prompt")));
        assert_eq!(score, 42.0);
        // the prompt is stored once (in the transcript) and read back from there
        let stored: Option<String> = conn
            .query_row("SELECT prompt FROM round_history", [], |row| row.get(0))
            .expect("prompt column");
        assert_eq!(stored, None);
        let detail = store
            .round_detail("e", "a", 1)
            .expect("detail")
            .expect("exists");
        assert_eq!(detail.prompt.as_deref(), Some("the prompt"));
    }
}
