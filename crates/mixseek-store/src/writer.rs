//! The store writer: one thread per process owning a cloned connection, fed through a channel.
//! It implements [`EventSink`]: `emit` returns once the event's rows are committed (LLM calls
//! are queued and committed with the next batch). Evaluated rounds are validated, masked and
//! serialized on the emitter's side ([`StagedRounds`]), so the thread only does database work.
//! Whatever is queued when the thread wakes up (up to 16,384 rounds) is written in one
//! transaction, consecutive rounds with one bulk upsert; if that batch fails, each job is
//! retried alone, so an error reaches only the emitter it belongs to.
//!
//! Retries: a transient failure (I/O, transaction conflict) is attempted 3 times in all,
//! sleeping 1 s and then 2 s between attempts; validation and constraint errors fail at once.

use crate::db::{Shared, Store};
use crate::error::{Result, StoreError};
use crate::pii::PiiMasker;
use crate::rounds::{self, StagedRounds};
use crate::write;
use chrono::{DateTime, Utc};
use duckdb::Connection;
use mixseek_core::{Event, EventSink, LlmCallRecord, RoundRecord, SinkError};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::oneshot;

/// Most rounds (or other events) written in one transaction: bigger batches amortise the
/// per-statement cost; `write_all` stages its rounds in chunks of this size.
const MAX_BATCH: usize = 16_384;
/// Sleeps between the attempts of a transient failure (3 attempts in all).
const RETRY_SLEEPS: [Duration; 2] = [Duration::from_secs(1), Duration::from_secs(2)];

/// Where the writer gets "now" (the `created_at` / `updated_at` / `completed_at` it stores).
pub type Clock = fn() -> DateTime<Utc>;

enum Op {
    /// `Evaluated` events, staged.
    Rounds(Box<StagedRounds>),
    /// Any other event the store records.
    Event(Box<Event>),
    LlmCall(Box<LlmCallRecord>),
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
            Op::Rounds(r) => r.len(),
            _ => 1,
        }
    }
}

pub(crate) struct WriterInner {
    sender: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    path: PathBuf,
    /// Shared with the thread: rounds are masked by their emitters, other events by the thread.
    masker: Arc<PiiMasker>,
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
}

impl std::fmt::Debug for StoreWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreWriter")
            .field("path", &self.inner.path)
            .finish()
    }
}

impl StoreWriter {
    pub(crate) fn start(store: &Store, masker: PiiMasker, clock: Clock) -> Result<StoreWriter> {
        let conn = store.connection()?;
        let (tx, rx) = mpsc::channel::<Job>();
        let path = store.path().to_path_buf();
        let masker = Arc::new(masker);
        let thread_masker = masker.clone();
        let thread = std::thread::Builder::new()
            .name("mixseek-store-writer".into())
            .spawn(move || run(conn, &thread_masker, clock, rx))
            .map_err(|source| StoreError::Io {
                path: path.clone(),
                source,
            })?;
        Ok(StoreWriter {
            inner: Arc::new(WriterInner {
                sender: Mutex::new(Some(tx)),
                thread: Mutex::new(Some(thread)),
                path,
                masker,
                _store: store.shared.clone(),
            }),
        })
    }

    pub(crate) fn from_inner(inner: Arc<WriterInner>) -> StoreWriter {
        StoreWriter { inner }
    }

    pub(crate) fn downgrade(&self) -> Weak<WriterInner> {
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

    /// Writes one event and waits for its commit. `LlmCall` events are only queued; events
    /// the store does not record (`RoundStarted`, `SubmissionReady`) are ignored.
    pub async fn write(&self, event: &Event) -> Result<()> {
        match event {
            Event::RoundStarted { .. } | Event::SubmissionReady { .. } => Ok(()),
            Event::LlmCall(call) => self.send(Op::LlmCall(call.clone()), None),
            Event::Evaluated(r) => {
                let staged = StagedRounds::build(&self.inner.masker, &[r])?;
                self.submit(Op::Rounds(Box::new(staged))).await
            }
            other => self.submit(Op::Event(Box::new(other.clone()))).await,
        }
    }

    /// Queues many events at once and waits until all are committed (they share transactions
    /// of up to 16,384 rounds). Consecutive rounds are staged in chunks; an invalid round fails
    /// alone. Returns the first error; events other than those that failed are written.
    pub async fn write_all(&self, events: Vec<Event>) -> Result<()> {
        let mut outcomes = Vec::new();
        let mut rounds: Vec<RoundRecord> = Vec::new();
        for event in events {
            let op = match event {
                Event::RoundStarted { .. } | Event::SubmissionReady { .. } => continue,
                Event::LlmCall(call) => {
                    self.send(Op::LlmCall(call), None)?;
                    continue;
                }
                Event::Evaluated(r) => {
                    match rounds::validate(&r) {
                        Ok(_) => rounds.push(*r),
                        Err(e) => outcomes.push(Err(e)),
                    }
                    if rounds.len() == MAX_BATCH {
                        outcomes.push(self.send_rounds(std::mem::take(&mut rounds)));
                    }
                    continue;
                }
                other => Op::Event(Box::new(other)),
            };
            // Keep the order: the rounds before this event go first.
            if !rounds.is_empty() {
                outcomes.push(self.send_rounds(std::mem::take(&mut rounds)));
            }
            let (tx, rx) = oneshot::channel();
            self.send(op, Some(tx))?;
            outcomes.push(Ok(rx));
        }
        if !rounds.is_empty() {
            outcomes.push(self.send_rounds(rounds));
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

    /// Stages validated rounds and queues them as one job.
    fn send_rounds(&self, records: Vec<RoundRecord>) -> Result<Reply> {
        let refs: Vec<&RoundRecord> = records.iter().collect();
        let staged = StagedRounds::build(&self.inner.masker, &refs)?;
        let (tx, rx) = oneshot::channel();
        self.send(Op::Rounds(Box::new(staged)), Some(tx))?;
        Ok(rx)
    }

    /// Waits until everything queued so far (LLM calls included) is committed.
    pub async fn flush(&self) -> Result<()> {
        self.submit(Op::Flush).await
    }
}

#[async_trait::async_trait]
impl EventSink for StoreWriter {
    async fn emit(&self, event: &Event) -> Result<(), SinkError> {
        self.write(event).await.map_err(|e| SinkError {
            sink: format!("store ({})", self.inner.path.display()),
            message: match e.hint() {
                Some(h) => format!("{e} ({h})"),
                None => e.to_string(),
            },
        })
    }
}

fn run(conn: Connection, masker: &PiiMasker, clock: Clock, rx: mpsc::Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut size = first.size();
        let mut batch = vec![first];
        while size < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => {
                    size += job.size();
                    batch.push(job);
                }
                Err(_) => break,
            }
        }
        process(&conn, masker, clock(), batch);
    }
    tracing::debug!("database writer stopped");
}

fn process(conn: &Connection, masker: &PiiMasker, now: DateTime<Utc>, batch: Vec<Job>) {
    let refs: Vec<&Job> = batch.iter().collect();
    let all = || in_transaction(conn, |c| apply(c, masker, &refs, now));
    let result = match all() {
        Err(e) if e.is_transient() => with_retries(all, e),
        other => other,
    };
    let outcome: Vec<Result<()>> = match result {
        Ok(()) => batch.iter().map(|_| Ok(())).collect(),
        Err(e) if batch.len() == 1 => vec![Err(e)],
        Err(e) => {
            // Find the culprit(s): each event alone, once (transient errors were retried above).
            tracing::debug!(error = %e, jobs = batch.len(), "batch write failed; writing the events one by one");
            batch
                .iter()
                .map(|job| {
                    let one = [job];
                    in_transaction(conn, |c| apply(c, masker, &one, now))
                })
                .collect()
        }
    };
    for (job, result) in batch.into_iter().zip(outcome) {
        match job.reply {
            Some(reply) => {
                if let Err(Err(e)) = reply.send(result) {
                    tracing::warn!(error = %e, "database write failed after its emitter went away");
                }
            }
            None => {
                if let Err(e) = result {
                    tracing::warn!(error = %e, "failed to record an LLM call");
                }
            }
        }
    }
}

/// The remaining attempts after a first transient failure.
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

fn apply(conn: &Connection, masker: &PiiMasker, jobs: &[&Job], now: DateTime<Utc>) -> Result<()> {
    let mut i = 0;
    while i < jobs.len() {
        match &jobs[i].op {
            Op::Rounds(_) => {
                let mut staged = Vec::new();
                while let Some(Op::Rounds(r)) = jobs.get(i).map(|j| &j.op) {
                    staged.push(&**r);
                    i += 1;
                }
                rounds::write_rounds(conn, &staged, now)?;
            }
            Op::LlmCall(_) => {
                let mut calls = Vec::new();
                while let Some(Op::LlmCall(c)) = jobs.get(i).map(|j| &j.op) {
                    calls.push(&**c);
                    i += 1;
                }
                write::write_llm_calls(conn, &calls)?;
            }
            Op::Event(e) => {
                apply_event(conn, masker, e, now)?;
                i += 1;
            }
            Op::Flush => i += 1,
        }
    }
    Ok(())
}

fn apply_event(
    conn: &Connection,
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
            masker,
            execution_id,
            user_prompt,
            teams,
            config_hash,
            *max_rounds,
            *at,
        ),
        Event::Evaluated(r) => {
            let staged = StagedRounds::build(masker, &[&**r])?;
            rounds::write_rounds(conn, &[&staged], now)
        }
        Event::Judged {
            execution_id,
            team_id,
            round_number,
            decision,
            ..
        } => write::write_decision(
            conn,
            masker,
            execution_id,
            team_id,
            *round_number,
            decision,
            now,
        ),
        Event::LlmCall(c) => write::write_llm_calls(conn, &[&**c]),
        Event::TeamFinished {
            execution_id,
            team_id,
            best,
            exit_reason,
            ..
        } => write::finish_team(
            conn,
            masker,
            execution_id,
            team_id,
            best.as_deref(),
            exit_reason.map(|r| r.as_str()),
            now,
        ),
        Event::ExecutionFinished(summary) => write::finish_execution(conn, masker, summary, now),
        Event::RoundStarted { .. } | Event::SubmissionReady { .. } => Ok(()),
    }
}
