//! Writing evaluated rounds: their `round_history`, `leader_board` and `round_status` rows,
//! upserted on (execution_id, team_id, round_number) — a key written again updates its rows in
//! place (the last write wins), and of a key staged twice only the last row is kept.
//! A round that is only submitted (`SubmissionReady` with its round: the leader answered, the
//! evaluation may fail) is staged the same way and gets its `round_history` row only
//! (`evaluated` false in the staging table); its evaluation, when it comes, updates that row
//! and adds the other two. An evaluation staged without its transcript
//! ([`StageRound::EvaluatedOnly`]: the writer handle sent the same transcript with the
//! submission) updates the row's other columns only, taking the transcript from a submission
//! staged in the same batch if there is one, and fails with [`StoreError::MissingSubmission`]
//! when the submission is stored nowhere. A submission never replaces an evaluated round
//! (staged together, the evaluation is kept; stored already, the submission is dropped).
//!
//! Two halves:
//! * [`StagedRounds::build`] validates, masks and serializes records straight into Arrow
//!   columns. The writer calls it on the emitter's side, so this CPU work runs in parallel
//!   with the database work of earlier rounds.
//! * [`write_rounds`] (writer thread, inside the batch's transaction) appends the staged
//!   columns, one row per key, into a connection-local staging table (DuckDB's Appender) and
//!   moves them into each table with set-based statements.
//!
//! Since schema version 5 the three tables have their UNIQUE (execution_id, team_id,
//! round_number) key again (versions 3 and 4 had none, and the writer kept the keys unique
//! itself), so the database keeps one row per key whoever writes: a table receives staged rows
//! of stored keys with `INSERT … SELECT … ON CONFLICT (execution_id, team_id, round_number) DO
//! UPDATE`. [`RoundKeys`], the writer thread's record of which keys are stored, picks the
//! cheaper plain insert when no staged key is stored, and decides what the database cannot: a
//! submission never replaces an evaluated round, and an evaluation staged without its
//! transcript needs its submission's row. Per batch:
//! 1. the batch's keys are read from the staged columns, with the rows each key keeps
//!    ([`KeyRows`]: one upsert cannot update a row twice);
//! 2. the stored keys of executions the writer has not seen yet are read from the tables (one
//!    query per table for all of them; after that the writer knows); a submission of an
//!    evaluated round is dropped;
//! 3. the kept rows are staged: the jobs' record batches as they are when each key is staged
//!    once, else one batch merged in memory ([`merge`]: the kept rows, an evaluation's missing
//!    transcript taken from its submission). DuckDB plans every statement anew at each run
//!    (it never reuses a plan for one that reads a temporary table or writes a table with a
//!    `current_timestamp` default), so a merge in SQL cost two statements, ~2 ms a batch;
//! 4. per table one statement for the staged rows it receives: a plain `INSERT … SELECT` when
//!    none of their keys is stored (new rounds, bulk loads: the cheaper statement, and still
//!    checked by the key), else the upsert; the evaluations staged without their transcript
//!    update their submission's `round_history` row with an `UPDATE … FROM`.
//!
//! A failed transaction makes the writer forget what it knew.

use crate::error::{Result, StoreError};
use crate::model::RoundUsage;
use crate::values::{execute_once, json_text, masked_json, micros, sql_literal, u64_i64};
use chrono::{DateTime, Utc};
use duckdb::arrow::array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, LargeStringArray,
    LargeStringBuilder,
};
use duckdb::arrow::compute::interleave;
use duckdb::arrow::record_batch::RecordBatch;
use duckdb::{Connection, params_from_iter};
use mixseek_core::{PiiMasker, sha256_hex};
use mixseek_core::{RoundRecord, SubmittedRound, Usage};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// At most this many distinct executions in a batch are passed as a filter; a batch touching
/// more (only possible with hand-made batches) checks its keys against the whole table.
const MAX_FILTER_EXECUTIONS: usize = 256;

/// A round to stage: evaluated (`Evaluated`: all three tables), or only submitted
/// (`SubmissionReady` with its round: the `round_history` row alone; the round is not
/// completed).
#[derive(Debug, Clone, Copy)]
pub(crate) enum StageRound<'a> {
    Evaluated(&'a RoundRecord),
    /// The evaluation of a round whose submission, with the same transcript, is committed:
    /// its `round_history` row keeps the stored transcript (`message_history`,
    /// `member_submissions_record`, `prompt`), which is neither serialized nor written again.
    EvaluatedOnly(&'a RoundRecord),
    Submitted(&'a SubmittedRound),
}

impl StageRound<'_> {
    /// The checks the database cannot make for us; returns the round number as stored.
    pub(crate) fn validate(&self) -> Result<i32> {
        match self {
            StageRound::Evaluated(r) | StageRound::EvaluatedOnly(r) => validate(r),
            StageRound::Submitted(r) => {
                validate_key(r.execution_id.as_str(), r.team_id.as_str(), r.round_number)
            }
        }
    }
}

/// Rounds ready to be appended: validated, masked and serialized into the columns of
/// `stage_rounds` (all but the one the writer adds: `now_us`).
#[derive(Debug)]
pub(crate) struct StagedRounds {
    batch: RecordBatch,
    /// Some round is only submitted (not evaluated).
    has_submitted: bool,
    /// Some round is staged without its transcript ([`StageRound::EvaluatedOnly`]).
    has_evaluated_only: bool,
}

impl StagedRounds {
    /// Stages the rounds; the first invalid one (round number 0 or beyond DuckDB's INTEGER,
    /// a score that is not finite) fails the whole call.
    pub(crate) fn build(masker: &PiiMasker, rounds: &[StageRound<'_>]) -> Result<StagedRounds> {
        let mut columns = RoundColumns::with_capacity(rounds.len());
        for r in rounds {
            columns.push(masker, *r)?;
        }
        Ok(StagedRounds {
            has_submitted: columns.evaluated.iter().any(|e| !e),
            has_evaluated_only: columns.transcript.iter().any(|t| !t),
            batch: columns.finish()?,
        })
    }

    /// The number of rounds.
    pub(crate) fn len(&self) -> usize {
        self.batch.num_rows()
    }

    /// The rounds' keys: (execution_id, team_id, round_number) per row.
    fn keys(&self) -> Result<impl Iterator<Item = (&str, &str, i32)>> {
        let executions: &LargeStringArray = self.column(0, "execution_id")?;
        let teams: &LargeStringArray = self.column(1, "team_id")?;
        let numbers: &Int32Array = self.column(3, "round_number")?;
        Ok((0..self.len()).map(move |i| (executions.value(i), teams.value(i), numbers.value(i))))
    }

    /// Column `index` of the staged batch, as the array type it was built with.
    fn column<T: 'static>(&self, index: usize, name: &str) -> Result<&T> {
        self.batch
            .column(index)
            .as_any()
            .downcast_ref::<T>()
            .ok_or_else(|| StoreError::Invalid(format!("staged rounds have no {name} column")))
    }

    /// Whether each round is evaluated (`None` when all are).
    fn evaluated(&self) -> Result<Option<&BooleanArray>> {
        if !self.has_submitted {
            return Ok(None);
        }
        self.column(EVALUATED_COLUMN, "evaluated").map(Some)
    }

    /// The staged `stage_usage` column.
    fn stage_usage(&self) -> Result<&LargeStringArray> {
        self.column(STAGE_USAGE_COLUMN, "stage_usage")
    }

    /// Whether each round's transcript is staged (`None` when all are).
    fn transcripts(&self) -> Result<Option<&BooleanArray>> {
        if !self.has_evaluated_only {
            return Ok(None);
        }
        self.column(TRANSCRIPT_COLUMN, "transcript").map(Some)
    }
}

/// Bits of [`RoundKeys`]: which of the three tables hold a key's row.
const IN_ROUND_HISTORY: u8 = 1;
const IN_LEADER_BOARD: u8 = 2;
const IN_ROUND_STATUS: u8 = 4;
const IN_ALL: u8 = IN_ROUND_HISTORY | IN_LEADER_BOARD | IN_ROUND_STATUS;

/// The three round tables, their bit, and the index of their lowest id in [`KnownExecution`].
const KEYED_TABLES: [(&str, u8); 3] = [
    ("round_history", IN_ROUND_HISTORY),
    ("leader_board", IN_LEADER_BOARD),
    ("round_status", IN_ROUND_STATUS),
];

/// An id bound that excludes nothing (the round tables' ids are INTEGERs).
const NO_ID_BOUND: i64 = i32::MIN as i64;

/// A round table, for [`RoundKeys::lowest_id`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum KeyedTable {
    LeaderBoard = 1,
    RoundStatus = 2,
}

/// The writer remembers the keys of at most this many rounds; beyond it the executions used
/// least recently are forgotten (and read again from the tables if they come back).
const MAX_KNOWN_KEYS: usize = 1 << 18;

/// The writer thread's record of the stored round keys of the executions it has written or
/// read (see the module docs: the database keeps the keys unique; this tells which tables hold
/// a key's row, and the lowest id of an execution's rows). Only the writer thread has one; it
/// is emptied whenever a transaction fails.
#[derive(Debug, Default)]
pub(crate) struct RoundKeys {
    executions: HashMap<String, KnownExecution>,
    /// Keys held in all executions.
    known: usize,
    /// Bumped at every use (least recently used executions are forgotten first).
    tick: u64,
    /// `round_status.stage_usage` of the evaluated rounds this writer stored and whose
    /// decision has not come yet: a decision adds its judgment usage to it without reading
    /// the row back (a query per batch of decisions).
    stage_usage: HashMap<(String, String, u32), Option<String>>,
}

/// At most this many stored usages are remembered (beyond it they are forgotten, and read
/// back when their decisions come).
const MAX_KNOWN_USAGES: usize = 1 << 16;

#[derive(Debug, Default)]
struct KnownExecution {
    /// team_id → round_number → bits of the tables holding the row.
    teams: HashMap<String, HashMap<i32, u8>>,
    keys: usize,
    used: u64,
    /// Per table (as in [`KEYED_TABLES`]): no row of the execution has a smaller `id`. Ids
    /// come from increasing sequences and rows are appended in that order, so `id >= lowest`
    /// lets DuckDB skip every older row group by its min/max statistics: the writer's
    /// statements on one execution's rows touch the newest row groups only, not the table.
    lowest_id: [i64; 3],
}

impl KnownExecution {
    fn set(&mut self, team: &str, round: i32, bits: u8) {
        if !self.teams.contains_key(team) {
            self.teams.insert(team.to_string(), HashMap::new());
        }
        let Some(rounds) = self.teams.get_mut(team) else {
            return;
        };
        let slot = rounds.entry(round).or_insert(0);
        if *slot == 0 {
            self.keys += 1;
        }
        *slot |= bits;
    }

    fn get(&self, team: &str, round: i32) -> u8 {
        self.teams
            .get(team)
            .and_then(|r| r.get(&round))
            .copied()
            .unwrap_or(0)
    }
}

impl RoundKeys {
    /// Forgets everything (after a failed transaction).
    pub(crate) fn clear(&mut self) {
        self.executions.clear();
        self.known = 0;
        self.stage_usage.clear();
    }

    /// Forgets one execution (it finished, or a row was written outside the round path).
    pub(crate) fn forget(&mut self, execution_id: &str) {
        if let Some(e) = self.executions.remove(execution_id) {
            self.known -= e.keys;
        }
        self.stage_usage.retain(|k, _| k.0 != execution_id);
    }

    /// The stored `stage_usage` of a round written by this writer (taken: a round is decided
    /// once); `None` when not known (read it from the table).
    pub(crate) fn take_stage_usage(
        &mut self,
        execution_id: &str,
        team_id: &str,
        round_number: u32,
    ) -> Option<Option<String>> {
        self.stage_usage
            .remove(&(execution_id.to_string(), team_id.to_string(), round_number))
    }

    /// Records a new execution: its `ExecutionStarted` created its `execution_summary` row, so
    /// it has no round rows yet (mixseek commits that row before any round, and only an
    /// execution with that row can be resumed). Its rounds are then written without reading
    /// the tables first.
    pub(crate) fn mark_new(&mut self, conn: &Connection, execution_id: &str) -> Result<()> {
        self.tick += 1;
        if self.executions.contains_key(execution_id) {
            return Ok(());
        }
        let lowest_id = next_ids(conn)?;
        self.executions.insert(
            execution_id.to_string(),
            KnownExecution {
                used: self.tick,
                lowest_id,
                ..KnownExecution::default()
            },
        );
        Ok(())
    }

    /// Reads the stored keys of the executions not known yet.
    fn load(&mut self, conn: &Connection, executions: &[&str]) -> Result<()> {
        self.tick += 1;
        let mut unknown = Vec::new();
        for e in executions {
            match self.executions.get_mut(*e) {
                Some(known) => known.used = self.tick,
                None => unknown.push(*e),
            }
        }
        if unknown.is_empty() {
            return Ok(());
        }
        let next_ids = next_ids(conn)?;
        for chunk in unknown.chunks(MAX_FILTER_EXECUTIONS) {
            let mut found: HashMap<&str, KnownExecution> = chunk
                .iter()
                .map(|e| {
                    (
                        *e,
                        KnownExecution {
                            used: self.tick,
                            lowest_id: next_ids,
                            ..KnownExecution::default()
                        },
                    )
                })
                .collect();
            for (index, (table, bit)) in KEYED_TABLES.into_iter().enumerate() {
                let sql = format!(
                    "SELECT execution_id, team_id, round_number, id FROM {table}
                     WHERE execution_id IN ({})",
                    placeholders(chunk.len())
                );
                let mut stmt = conn
                    .prepare(&sql)
                    .map_err(StoreError::db(format!("reading {table}")))?;
                let rows = stmt
                    .query_map(params_from_iter(chunk.iter()), |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, i32>(2)?,
                            r.get::<_, Option<i64>>(3)?,
                        ))
                    })
                    .map_err(StoreError::db(format!("reading {table}")))?;
                for row in rows {
                    let (execution, team, round, id) =
                        row.map_err(StoreError::db(format!("reading {table}")))?;
                    if let Some(known) = found.get_mut(execution.as_str()) {
                        known.set(&team, round, bit);
                        // a row without an id (written by hand) could be anywhere
                        let id = id.unwrap_or(NO_ID_BOUND);
                        known.lowest_id[index] = known.lowest_id[index].min(id);
                    }
                }
            }
            for (execution, known) in found {
                self.known += known.keys;
                self.executions.insert(execution.to_string(), known);
            }
        }
        Ok(())
    }

    /// No row of the execution in `table` has a smaller id (see [`KnownExecution`]): a
    /// filter `id >= lowest` for statements on the execution's rows. Reads the execution's
    /// keys first if they are not known.
    pub(crate) fn lowest_id(
        &mut self,
        conn: &Connection,
        execution: &str,
        table: KeyedTable,
    ) -> Result<i64> {
        self.load(conn, &[execution])?;
        Ok(self
            .executions
            .get(execution)
            .map_or(NO_ID_BOUND, |e| e.lowest_id[table as usize]))
    }

    /// The tables holding the key (0 when none; the execution must have been loaded).
    fn get(&self, execution: &str, team: &str, round: i32) -> u8 {
        self.executions
            .get(execution)
            .map_or(0, |e| e.get(team, round))
    }

    /// Records rows written for the key (its execution must have been loaded).
    fn set(&mut self, execution: &str, team: &str, round: i32, bits: u8) {
        if let Some(e) = self.executions.get_mut(execution) {
            let before = e.keys;
            e.set(team, round, bits);
            self.known += e.keys - before;
        }
    }

    /// Forgets the least recently used executions while more than [`MAX_KNOWN_KEYS`] keys are
    /// held (down to half of it). Executions without keys (new, nothing written yet) cost
    /// nothing and are kept.
    fn trim(&mut self) {
        if self.known <= MAX_KNOWN_KEYS {
            return;
        }
        let mut by_use: Vec<(u64, String)> = self
            .executions
            .iter()
            .filter(|(_, e)| e.keys > 0)
            .map(|(id, e)| (e.used, id.clone()))
            .collect();
        by_use.sort_unstable();
        for (_, id) in by_use {
            if self.known <= MAX_KNOWN_KEYS / 2 {
                break;
            }
            self.forget(&id);
        }
    }
}

/// Per round table: every row written from now on gets an id at least this (ids come from
/// increasing sequences).
fn next_ids(conn: &Connection) -> Result<[i64; 3]> {
    let mut next = [0i64; 3];
    for (i, (table, _)) in KEYED_TABLES.iter().enumerate() {
        next[i] = conn
            .query_row(
                &format!("SELECT coalesce(max(id), 0) + 1 FROM {table}"),
                [],
                |r| r.get(0),
            )
            .map_err(StoreError::db(format!("reading {table}")))?;
    }
    Ok(next)
}

/// The round number as stored (an INTEGER from 1).
fn validate_key(execution_id: &str, team_id: &str, round_number: u32) -> Result<i32> {
    match i32::try_from(round_number) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(StoreError::Invalid(format!(
            "round_number must be between 1 and {} (team {team_id}, execution {execution_id})",
            i32::MAX
        ))),
    }
}

/// The checks the database cannot make for us; returns the round number as stored.
pub(crate) fn validate(r: &RoundRecord) -> Result<i32> {
    let round_number = validate_key(r.execution_id.as_str(), r.team_id.as_str(), r.round_number)?;
    if !r.score_details.overall_score.is_finite() {
        return Err(StoreError::Invalid(format!(
            "score must be a finite number, got {} (team {}, round {})",
            r.score_details.overall_score, r.team_id, r.round_number
        )));
    }
    Ok(round_number)
}

/// A VARCHAR column being filled (Arrow's builder, with large offsets: a batch may hold more
/// than 2 GiB of text). Built from `&str`s, its text is not checked again (building the array
/// from one `String` and its offsets re-validated every byte as UTF-8).
struct TextColumn(LargeStringBuilder);

impl TextColumn {
    fn with_capacity(rows: usize, bytes_per_row: usize) -> TextColumn {
        TextColumn(LargeStringBuilder::with_capacity(
            rows,
            rows * bytes_per_row,
        ))
    }

    fn push(&mut self, text: &str) {
        self.0.append_value(text);
    }

    fn push_opt(&mut self, text: Option<&str>) {
        self.0.append_option(text);
    }

    /// The Arrow array.
    fn finish(mut self) -> ArrayRef {
        Arc::new(self.0.finish())
    }
}

/// The JSON columns of a round when masking is on (masked as `serde_json::Value`s), and
/// whether masking changed any of them.
struct MaskedJson {
    /// `None` when the transcript is not staged.
    messages: Option<String>,
    members: Option<String>,
    details: Option<String>,
    changed: bool,
}

impl MaskedJson {
    fn new(masker: &PiiMasker, r: &RoundView<'_>) -> Result<MaskedJson> {
        let (messages, m1) = if r.transcript {
            let value = serde_json::Value::Array(r.leader_messages.to_vec());
            let (text, changed) = masked_json(masker, value);
            (Some(text), changed)
        } else {
            (None, false)
        };
        let (members, m2) = if r.transcript {
            let (text, changed) = masked_json(masker, r.member_submissions.to_json());
            (Some(text), changed)
        } else {
            (None, false)
        };
        let (details, m3) = match r.score_details {
            Some(d) => {
                let details = serde_json::to_value(d).map_err(|e| {
                    StoreError::Invalid(format!("cannot serialize score_details: {e}"))
                })?;
                let (text, changed) = masked_json(masker, details);
                (Some(text), changed)
            }
            None => (None, false),
        };
        Ok(MaskedJson {
            messages,
            members,
            details,
            changed: m1 || m2 || m3,
        })
    }
}

/// What [`RoundColumns::push`] reads of a round, evaluated or only submitted.
struct RoundView<'a> {
    execution_id: &'a str,
    team_id: &'a str,
    team_name: &'a str,
    prompt: &'a str,
    submission_content: &'a str,
    leader_messages: &'a [serde_json::Value],
    member_submissions: &'a mixseek_core::MemberSubmissionsRecord,
    /// `None` when not evaluated.
    score_details: Option<&'a mixseek_core::ScoreDetails>,
    started: DateTime<Utc>,
    /// The end of the round, or when the leader answered (not evaluated).
    ended: DateTime<Utc>,
    usage: RoundUsage,
    /// `None` (stored NULL) when not evaluated: the evaluator's rules are not known yet.
    applied_injections: Option<&'a [mixseek_core::AppliedInjection]>,
    /// The transcript (`message_history`, `member_submissions_record`, `prompt`) is staged;
    /// `false` for [`StageRound::EvaluatedOnly`] (its stored row keeps the one it has).
    transcript: bool,
}

impl<'a> RoundView<'a> {
    fn of(round: StageRound<'a>) -> RoundView<'a> {
        match round {
            StageRound::Evaluated(r) => RoundView::evaluated(r, true),
            StageRound::EvaluatedOnly(r) => RoundView::evaluated(r, false),
            StageRound::Submitted(r) => RoundView {
                execution_id: r.execution_id.as_str(),
                team_id: r.team_id.as_str(),
                team_name: &r.team_name,
                prompt: &r.prompt,
                submission_content: &r.submission_content,
                leader_messages: &r.leader_messages,
                member_submissions: &r.member_submissions,
                score_details: None,
                started: r.round_started_at,
                ended: r.submitted_at,
                usage: RoundUsage {
                    agent: r.agent_usage,
                    ..RoundUsage::default()
                },
                applied_injections: None,
                transcript: true,
            },
        }
    }

    fn evaluated(r: &'a RoundRecord, transcript: bool) -> RoundView<'a> {
        RoundView {
            execution_id: r.execution_id.as_str(),
            team_id: r.team_id.as_str(),
            team_name: &r.team_name,
            prompt: &r.prompt,
            submission_content: &r.submission_content,
            leader_messages: &r.leader_messages,
            member_submissions: &r.member_submissions,
            score_details: Some(&r.score_details),
            started: r.round_started_at,
            ended: r.round_ended_at,
            usage: RoundUsage {
                agent: r.agent_usage,
                evaluation: r.evaluation_usage,
                judgment: Usage::default(),
            },
            applied_injections: Some(&r.applied_injections),
            transcript,
        }
    }
}

/// The leader's prompt in its transcript: the content of its first user message. A round's
/// `round_history.prompt` is NULL when it is this text (the prompt, which carries the whole
/// ranking, is not stored twice); readers take it from `message_history` then.
pub(crate) fn leader_prompt(messages: &[serde_json::Value]) -> Option<&str> {
    mixseek_core::first_user_prompt(messages)
}

/// The columns of `stage_rounds` (but `now_us`), filled one round at a time with
/// plain vectors: Arrow's generic builders cost several times more in the unoptimised dev
/// profile.
struct RoundColumns {
    execution_id: TextColumn,
    team_id: TextColumn,
    team_name: TextColumn,
    round_number: Vec<i32>,
    message_history: TextColumn,
    member_submissions_record: TextColumn,
    prompt: TextColumn,
    prompt_sha256: TextColumn,
    submission_content: TextColumn,
    submission_sha256: TextColumn,
    pii_masked: Vec<bool>,
    score: Vec<f64>,
    score_details: TextColumn,
    started_us: Vec<i64>,
    ended_us: Vec<i64>,
    input_tokens: Vec<i64>,
    output_tokens: Vec<i64>,
    cached_tokens: Vec<i64>,
    requests: Vec<i64>,
    cost_usd: Vec<f64>,
    stage_usage: TextColumn,
    applied_injections: TextColumn,
    evaluated: Vec<bool>,
    /// The transcript is staged (see [`RoundView::transcript`]).
    transcript: Vec<bool>,
}

impl RoundColumns {
    fn with_capacity(n: usize) -> RoundColumns {
        let text = |bytes| TextColumn::with_capacity(n, bytes);
        RoundColumns {
            execution_id: text(36),
            team_id: text(16),
            team_name: text(16),
            round_number: Vec::with_capacity(n),
            message_history: text(64),
            member_submissions_record: text(256),
            prompt: text(256),
            prompt_sha256: text(0),
            submission_content: text(256),
            submission_sha256: text(0),
            pii_masked: Vec::with_capacity(n),
            score: Vec::with_capacity(n),
            score_details: text(192),
            started_us: Vec::with_capacity(n),
            ended_us: Vec::with_capacity(n),
            input_tokens: Vec::with_capacity(n),
            output_tokens: Vec::with_capacity(n),
            cached_tokens: Vec::with_capacity(n),
            requests: Vec::with_capacity(n),
            cost_usd: Vec::with_capacity(n),
            stage_usage: text(480),
            applied_injections: text(64),
            evaluated: Vec::with_capacity(n),
            transcript: Vec::with_capacity(n),
        }
    }

    /// Appends one round; on error nothing was appended.
    fn push(&mut self, masker: &PiiMasker, round: StageRound<'_>) -> Result<()> {
        let round_number = round.validate()?;
        let r = RoundView::of(round);
        let masked = if masker.is_enabled() {
            Some(MaskedJson::new(masker, &r)?)
        } else {
            None
        };
        let submission = masker.mask(r.submission_content);
        // the prompt is stored once: NULL when it is the transcript's user message (readers
        // take it from there, see `leader_prompt`)
        let in_transcript = leader_prompt(r.leader_messages) == Some(r.prompt);
        let prompt = (r.transcript && !in_transcript).then(|| masker.mask(r.prompt));
        // What masking keeps instead of the original text: its SHA-256.
        let digest = |text: &str| masker.is_enabled().then(|| sha256_hex(text));
        let total = r.usage.total();
        let injections = r
            .applied_injections
            .map(|a| {
                serde_json::to_string(a).map_err(|e| {
                    StoreError::Invalid(format!("cannot serialize applied_injections: {e}"))
                })
            })
            .transpose()?;
        // every document is serialized before the first column grows
        let masked_changed = masked.as_ref().is_some_and(|m| m.changed);
        let (messages, members, details) = match masked {
            Some(m) => (m.messages, m.members, m.details),
            None => {
                let (messages, members) = if r.transcript {
                    let members = r.member_submissions.document();
                    (
                        Some(json_text(r.leader_messages, "message_history")?),
                        Some(json_text(&members, "member_submissions_record")?),
                    )
                } else {
                    (None, None)
                };
                let details = r
                    .score_details
                    .map(|d| json_text(d, "score_details"))
                    .transpose()?;
                (messages, members, details)
            }
        };
        let stage_usage = json_text(&r.usage, "stage_usage")?;
        self.execution_id.push(r.execution_id);
        self.team_id.push(r.team_id);
        self.team_name.push(r.team_name);
        self.round_number.push(round_number);
        self.message_history.push_opt(messages.as_deref());
        self.member_submissions_record.push_opt(members.as_deref());
        self.score_details.push_opt(details.as_deref());
        self.prompt.push_opt(prompt.as_deref());
        self.prompt_sha256
            .push_opt(r.transcript.then(|| digest(r.prompt)).flatten().as_deref());
        self.submission_content.push(&submission);
        self.submission_sha256
            .push_opt(digest(r.submission_content).as_deref());
        self.pii_masked.push(
            masked_changed
                || matches!(submission, Cow::Owned(_))
                || matches!(prompt, Some(Cow::Owned(_))),
        );
        self.score
            .push(r.score_details.map_or(0.0, |d| d.overall_score));
        self.started_us.push(micros(&r.started));
        self.ended_us.push(micros(&r.ended));
        self.input_tokens.push(u64_i64(total.input_tokens));
        self.output_tokens.push(u64_i64(total.output_tokens));
        self.cached_tokens.push(u64_i64(total.cached_tokens));
        self.requests.push(u64_i64(total.requests));
        self.cost_usd.push(total.cost_usd);
        self.stage_usage.push(&stage_usage);
        self.applied_injections.push_opt(injections.as_deref());
        self.evaluated.push(r.score_details.is_some());
        self.transcript.push(r.transcript);
        Ok(())
    }

    /// The record batch, columns named and ordered as in `stage_rounds` (after `now_us`).
    fn finish(self) -> Result<RecordBatch> {
        let bigint = |v: Vec<i64>| Arc::new(Int64Array::from(v)) as ArrayRef;
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("execution_id", self.execution_id.finish()),
            ("team_id", self.team_id.finish()),
            ("team_name", self.team_name.finish()),
            (
                "round_number",
                Arc::new(Int32Array::from(self.round_number)),
            ),
            ("message_history", self.message_history.finish()),
            (
                "member_submissions_record",
                self.member_submissions_record.finish(),
            ),
            ("prompt", self.prompt.finish()),
            ("prompt_sha256", self.prompt_sha256.finish()),
            ("submission_content", self.submission_content.finish()),
            ("submission_sha256", self.submission_sha256.finish()),
            ("pii_masked", Arc::new(BooleanArray::from(self.pii_masked))),
            ("score", Arc::new(Float64Array::from(self.score))),
            ("score_details", self.score_details.finish()),
            ("started_us", bigint(self.started_us)),
            ("ended_us", bigint(self.ended_us)),
            ("input_tokens", bigint(self.input_tokens)),
            ("output_tokens", bigint(self.output_tokens)),
            ("cached_tokens", bigint(self.cached_tokens)),
            ("requests", bigint(self.requests)),
            ("cost_usd", Arc::new(Float64Array::from(self.cost_usd))),
            ("stage_usage", self.stage_usage.finish()),
            ("applied_injections", self.applied_injections.finish()),
            ("evaluated", Arc::new(BooleanArray::from(self.evaluated))),
            ("transcript", Arc::new(BooleanArray::from(self.transcript))),
        ];
        RecordBatch::try_from_iter(columns)
            .map_err(|e| StoreError::Invalid(format!("cannot stage the rounds: {e}")))
    }
}

/// The staging table: `now_us` (the batch's clock), then the columns of [`RoundColumns`].
const STAGE_ROUNDS: &str = "
CREATE OR REPLACE TEMP TABLE stage_rounds (
    now_us BIGINT, execution_id VARCHAR, team_id VARCHAR, team_name VARCHAR,
    round_number INTEGER, message_history VARCHAR, member_submissions_record VARCHAR,
    prompt VARCHAR, prompt_sha256 VARCHAR, submission_content VARCHAR, submission_sha256 VARCHAR,
    pii_masked BOOLEAN, score DOUBLE, score_details VARCHAR, started_us BIGINT, ended_us BIGINT,
    input_tokens BIGINT, output_tokens BIGINT, cached_tokens BIGINT, requests BIGINT,
    cost_usd DOUBLE, stage_usage VARCHAR, applied_injections VARCHAR, evaluated BOOLEAN,
    transcript BOOLEAN
)";

/// The index of `message_history` (the first of the transcript's four columns) in a
/// [`StagedRounds`] batch, of `pii_masked`, …
const MESSAGE_HISTORY_COLUMN: usize = 4;
const PII_MASKED_COLUMN: usize = 10;
/// … of `stage_usage`, …
const STAGE_USAGE_COLUMN: usize = 20;
/// … of `evaluated` …
const EVALUATED_COLUMN: usize = 22;
/// … and of `transcript` (the last column).
const TRANSCRIPT_COLUMN: usize = 23;

/// How one table receives the staged rows.
struct RoundTable {
    name: &'static str,
    /// Its bit in [`RoundKeys`].
    bit: u8,
    /// The columns an insert fills …
    columns: &'static str,
    /// … and their values over the staging table `s`.
    values: &'static str,
    /// `SET` list of the upsert's `ON CONFLICT … DO UPDATE` (`excluded` is the staged row; `id`,
    /// `team_name`, `created_at` and the columns other events write are kept).
    conflict: &'static str,
    /// The staged rows it receives: `leader_board` and `round_status` only evaluated rounds.
    only: &'static str,
}

const ROUND_TABLES: [RoundTable; 3] = [
    RoundTable {
        name: "round_history",
        bit: IN_ROUND_HISTORY,
        columns: "execution_id, team_id, team_name, round_number, message_history,
            member_submissions_record, prompt, prompt_sha256, pii_masked, created_at, updated_at,
            applied_injections, submission_content, submission_sha256",
        values: "s.execution_id, s.team_id, s.team_name, s.round_number, s.message_history,
            s.member_submissions_record, s.prompt, s.prompt_sha256, s.pii_masked,
            make_timestamp(s.now_us)::TIMESTAMPTZ, make_timestamp(s.now_us)::TIMESTAMPTZ,
            s.applied_injections, s.submission_content, s.submission_sha256",
        conflict: "message_history = excluded.message_history,
            member_submissions_record = excluded.member_submissions_record,
            prompt = excluded.prompt, prompt_sha256 = excluded.prompt_sha256,
            pii_masked = excluded.pii_masked, updated_at = excluded.updated_at,
            applied_injections = excluded.applied_injections,
            submission_content = excluded.submission_content,
            submission_sha256 = excluded.submission_sha256",
        only: "TRUE",
    },
    RoundTable {
        name: "leader_board",
        bit: IN_LEADER_BOARD,
        columns: "execution_id, team_id, team_name, round_number, submission_content,
            submission_format, score, score_details, final_submission, exit_reason, created_at,
            updated_at, submission_sha256, pii_masked",
        values:
            "s.execution_id, s.team_id, s.team_name, s.round_number, s.submission_content, 'md',
            s.score, s.score_details, FALSE, NULL, make_timestamp(s.now_us)::TIMESTAMPTZ,
            make_timestamp(s.now_us)::TIMESTAMPTZ, s.submission_sha256, s.pii_masked",
        conflict: "submission_content = excluded.submission_content, score = excluded.score,
            score_details = excluded.score_details,
            submission_sha256 = excluded.submission_sha256, pii_masked = excluded.pii_masked,
            updated_at = excluded.updated_at",
        only: "s.evaluated",
    },
    RoundTable {
        name: "round_status",
        bit: IN_ROUND_STATUS,
        columns: "execution_id, team_id, team_name, round_number, round_started_at,
            round_ended_at, created_at, updated_at, input_tokens, output_tokens, cached_tokens,
            requests, cost_usd, stage_usage",
        values:
            "s.execution_id, s.team_id, s.team_name, s.round_number,
            make_timestamp(s.started_us)::TIMESTAMPTZ, make_timestamp(s.ended_us)::TIMESTAMPTZ,
            make_timestamp(s.now_us)::TIMESTAMPTZ, make_timestamp(s.now_us)::TIMESTAMPTZ,
            s.input_tokens, s.output_tokens, s.cached_tokens, s.requests, s.cost_usd, s.stage_usage",
        conflict: "round_ended_at = excluded.round_ended_at, updated_at = excluded.updated_at,
            input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,
            cached_tokens = excluded.cached_tokens, requests = excluded.requests,
            cost_usd = excluded.cost_usd, stage_usage = excluded.stage_usage",
        only: "s.evaluated",
    },
];

/// `round_history` in a batch where some evaluations lack their transcript: the others (a plain
/// `TRUE` otherwise keeps the bulk insert unfiltered).
const HISTORY_WITH_TRANSCRIPT: RoundTable = RoundTable {
    only: "s.transcript",
    ..ROUND_TABLES[0]
};

/// How an evaluation staged without its transcript ([`StageRound::EvaluatedOnly`]) updates
/// the `round_history` row of its submission (an `UPDATE … FROM` the staged rows: the row
/// exists): the transcript, the member submissions and the submission stay as stored (they
/// are the same), the rest is the evaluation's.
const EVALUATED_HISTORY: &str = "pii_masked = t.pii_masked OR s.pii_masked,
    updated_at = make_timestamp(s.now_us)::TIMESTAMPTZ,
    applied_injections = s.applied_injections";

/// Writes the staged rounds (see the module docs). Runs inside the caller's transaction.
pub(crate) fn write_rounds(
    conn: &Connection,
    keys: &mut RoundKeys,
    staged: &[&StagedRounds],
    now: DateTime<Utc>,
) -> Result<()> {
    let rows: usize = staged.iter().map(|s| s.len()).sum();
    if rows == 0 {
        return Ok(());
    }
    // 1. what the batch holds of each key, and its executions
    let mut batch_keys: HashMap<Key<'_>, KeyRows> = HashMap::with_capacity(rows);
    let mut executions: Vec<&str> = Vec::new();
    let mut last_execution = "";
    for (job, s) in staged.iter().enumerate() {
        // `None`: every round of this job is evaluated / has its transcript
        let evaluated = s.evaluated()?;
        let transcripts = s.transcripts()?;
        for (i, key) in s.keys()?.enumerate() {
            if key.0 != last_execution {
                last_execution = key.0;
                if !executions.contains(&key.0) {
                    executions.push(key.0);
                }
            }
            let at = (job, i);
            let held = batch_keys.entry(key).or_default();
            if evaluated.is_none_or(|e| e.value(i)) {
                held.last_evaluated = Some(at);
                held.evaluated_lacks_transcript = transcripts.is_some_and(|t| !t.value(i));
            } else {
                held.last_submitted = Some(at);
            }
        }
    }
    // 2. what is stored already; a key only submitted here whose round is evaluated in the
    // store keeps its evaluation (the submission is dropped)
    keys.load(conn, &executions)?;
    let evaluated_already: Vec<Key<'_>> = batch_keys
        .iter()
        .filter(|(k, h)| !h.evaluated() && keys.get(k.0, k.1, k.2) & IN_LEADER_BOARD != 0)
        .map(|(k, _)| *k)
        .collect();
    for key in &evaluated_already {
        batch_keys.remove(key);
        tracing::debug!(
            execution_id = key.0,
            team_id = key.1,
            round = key.2,
            "the round is evaluated already; its unevaluated submission is not stored"
        );
    }
    // an evaluation staged without its transcript updates the stored submission's row
    if let Some(key) = batch_keys
        .iter()
        .find(|(k, h)| h.lacks_transcript() && keys.get(k.0, k.1, k.2) & IN_ROUND_HISTORY == 0)
        .map(|(k, _)| k)
    {
        return Err(StoreError::MissingSubmission {
            execution_id: key.0.to_string(),
            team_id: key.1.to_string(),
            round_number: key.2,
        });
    }
    // 3. stage one row per key (the jobs as they are when that is what they hold) and move
    let fills = batch_keys.values().any(KeyRows::fills);
    // some evaluation updates its stored submission's row instead of being inserted
    let updates_history = batch_keys.values().any(KeyRows::lacks_transcript);
    let now_us = micros(&now);
    if batch_keys.len() == rows && !fills {
        let batches: Vec<&RecordBatch> = staged.iter().map(|s| &s.batch).collect();
        stage(conn, &batches, now_us)?;
    } else {
        let mut kept: Vec<&KeyRows> = batch_keys.values().collect();
        kept.sort_unstable_by_key(|h| h.kept());
        let merged = merge(staged, &kept)?;
        stage(conn, &[&merged], now_us)?;
    }
    for table in &ROUND_TABLES {
        let history = table.bit == IN_ROUND_HISTORY;
        // how many keys this table receives and how many of them it holds already (the
        // evaluations without their transcript go to `round_history` separately, as updates of
        // their submission's row)
        let (receiving, stored, updated_only) = batch_keys
            .iter()
            .filter(|(_, h)| history || h.evaluated())
            .fold((0, 0, 0), |(n, stored, updated_only), (k, h)| {
                if history && h.lacks_transcript() {
                    return (n, stored, updated_only + 1);
                }
                let has = keys.get(k.0, k.1, k.2) & table.bit != 0;
                (n + 1, stored + usize::from(has), updated_only)
            });
        if updated_only > 0 {
            let lowest = executions
                .iter()
                .filter_map(|e| keys.executions.get(*e))
                .map(|e| e.lowest_id[0])
                .min()
                .unwrap_or(NO_ID_BOUND);
            let filter: Vec<String> = executions.iter().map(|e| e.to_string()).collect();
            update_evaluated_history(conn, &filter, lowest)?;
        }
        if receiving > 0 {
            let table = if history && updates_history {
                &HISTORY_WITH_TRANSCRIPT
            } else {
                table
            };
            upsert(conn, table, stored > 0)?;
        }
    }
    for (key, h) in batch_keys {
        let bits = if h.evaluated() {
            IN_ALL
        } else {
            IN_ROUND_HISTORY
        };
        keys.set(key.0, key.1, key.2, bits);
    }
    keys.trim();
    // the usage each evaluated round now has in round_status (the last evaluated row of a key)
    if keys.stage_usage.len() > MAX_KNOWN_USAGES {
        keys.stage_usage.clear();
    }
    for s in staged {
        let (evaluated, usage) = (s.evaluated()?, s.stage_usage()?);
        for (i, key) in s.keys()?.enumerate() {
            if evaluated.is_none_or(|e| e.value(i))
                && let Ok(round) = u32::try_from(key.2)
            {
                let value = usage.is_valid(i).then(|| usage.value(i).to_string());
                keys.stage_usage
                    .insert((key.0.to_string(), key.1.to_string(), round), value);
            }
        }
    }
    Ok(())
}

/// Replaces the staging table's content with `batches` (DuckDB's row-wise Appender costs
/// several times more per value than a record batch).
fn stage(conn: &Connection, batches: &[&RecordBatch], now_us: i64) -> Result<()> {
    // A fresh table each batch: deleted rows would stay in it and slow every later scan.
    conn.execute_batch(STAGE_ROUNDS)
        .map_err(StoreError::db("creating the staging table"))?;
    let mut app = conn
        .appender_to_catalog_and_db("stage_rounds", "temp", "main")
        .map_err(StoreError::db("opening the round appender"))?;
    for batch in batches {
        app.append_record_batch(with_now(batch, now_us)?)
            .map_err(StoreError::db("staging the rounds"))?;
    }
    app.flush()
        .map_err(StoreError::db("flushing the round appender"))
}

/// `batch` preceded by the `now_us` column.
fn with_now(batch: &RecordBatch, now_us: i64) -> Result<RecordBatch> {
    let now: ArrayRef = Arc::new(Int64Array::from(vec![now_us; batch.num_rows()]));
    let schema = batch.schema();
    let columns = std::iter::once(("now_us".to_string(), now)).chain(
        schema
            .fields()
            .iter()
            .zip(batch.columns())
            .map(|(field, column)| (field.name().clone(), column.clone())),
    );
    RecordBatch::try_from_iter(columns)
        .map_err(|e| StoreError::Invalid(format!("cannot stage the rounds: {e}")))
}

/// A row of a batch's jobs: (job, row within the job's [`StagedRounds`]).
type RowAt = (usize, usize);

/// A round key: (execution_id, team_id, round_number).
type Key<'a> = (&'a str, &'a str, i32);

/// What a batch holds of one key. The last write wins, but a submission never replaces an
/// evaluation: the key keeps its last evaluated row, else its last submission; an
/// evaluation staged without its transcript takes the transcript of the last submission
/// staged with it (the one it was compared with: the emitter sends a submission before its
/// evaluation).
#[derive(Debug, Default, Clone, Copy)]
struct KeyRows {
    last_evaluated: Option<RowAt>,
    /// The last evaluated row is staged without its transcript.
    evaluated_lacks_transcript: bool,
    last_submitted: Option<RowAt>,
}

impl KeyRows {
    fn evaluated(&self) -> bool {
        self.last_evaluated.is_some()
    }

    /// The row written for the key.
    fn kept(&self) -> RowAt {
        self.last_evaluated
            .or(self.last_submitted)
            .unwrap_or_default()
    }

    /// The kept evaluation takes its transcript from the last submission staged with it.
    fn fills(&self) -> bool {
        self.evaluated_lacks_transcript && self.last_submitted.is_some()
    }

    /// The kept evaluation has no transcript in this batch: it updates its stored submission.
    fn lacks_transcript(&self) -> bool {
        self.evaluated() && self.evaluated_lacks_transcript && self.last_submitted.is_none()
    }

    /// The row the kept row's transcript columns come from.
    fn transcript_from(&self) -> RowAt {
        match self.last_submitted {
            Some(submitted) if self.fills() => submitted,
            _ => self.kept(),
        }
    }
}

/// The staged columns that make a round's transcript.
const TRANSCRIPT_COLUMNS: [usize; 4] = [
    MESSAGE_HISTORY_COLUMN,
    MESSAGE_HISTORY_COLUMN + 1,
    MESSAGE_HISTORY_COLUMN + 2,
    MESSAGE_HISTORY_COLUMN + 3,
];

/// One staged row per key, in the order the kept rows were staged (see [`KeyRows`]).
fn merge(staged: &[&StagedRounds], kept: &[&KeyRows]) -> Result<RecordBatch> {
    let rows: Vec<RowAt> = kept.iter().map(|h| h.kept()).collect();
    let transcript_rows: Vec<RowAt> = kept.iter().map(|h| h.transcript_from()).collect();
    // each job's `pii_masked` and `transcript` flags
    let flags = |column: usize, name: &str| -> Result<Vec<&BooleanArray>> {
        staged.iter().map(|s| s.column(column, name)).collect()
    };
    let (pii, has_transcript) = (
        flags(PII_MASKED_COLUMN, "pii_masked")?,
        flags(TRANSCRIPT_COLUMN, "transcript")?,
    );
    let flag = |arrays: &[&BooleanArray], (job, row): RowAt| arrays[job].value(row);
    let mut pii_masked = Vec::with_capacity(kept.len());
    let mut transcript = Vec::with_capacity(kept.len());
    for h in kept {
        let filled = h.fills();
        let from_submission = filled && flag(&pii, h.transcript_from());
        pii_masked.push(flag(&pii, h.kept()) || from_submission);
        transcript.push(filled || flag(&has_transcript, h.kept()));
    }
    let Some(first) = staged.first() else {
        return Err(StoreError::Invalid("no rounds to merge".into()));
    };
    let schema = first.batch.schema();
    let mut columns: Vec<(String, ArrayRef)> = Vec::with_capacity(schema.fields().len());
    for (c, field) in schema.fields().iter().enumerate() {
        let column: ArrayRef = match c {
            PII_MASKED_COLUMN => Arc::new(BooleanArray::from(std::mem::take(&mut pii_masked))),
            TRANSCRIPT_COLUMN => Arc::new(BooleanArray::from(std::mem::take(&mut transcript))),
            _ => {
                let arrays: Vec<&dyn Array> =
                    staged.iter().map(|s| s.batch.column(c).as_ref()).collect();
                let picks = if TRANSCRIPT_COLUMNS.contains(&c) {
                    &transcript_rows
                } else {
                    &rows
                };
                interleave(&arrays, picks)
                    .map_err(|e| StoreError::Invalid(format!("cannot merge the rounds: {e}")))?
            }
        };
        columns.push((field.name().clone(), column));
    }
    RecordBatch::try_from_iter(columns)
        .map_err(|e| StoreError::Invalid(format!("cannot merge the rounds: {e}")))
}

/// `?, ?, …` for `n` parameters.
fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

/// The SQL restricting `t.execution_id` to the batch's executions, as literals (the statement
/// is sent as text: see [`execute_once`]). `TRUE` when there are too many to list, or when an
/// id holds a NUL character, which SQL text cannot carry: the filter only lets DuckDB skip
/// other executions' rows in the table scan, the key join selects the rows either way.
fn execution_filter(executions: &[String]) -> String {
    if executions.len() > MAX_FILTER_EXECUTIONS {
        return "TRUE".to_string();
    }
    let literals: Option<Vec<String>> = executions.iter().map(|e| sql_literal(e)).collect();
    match literals {
        Some(list) => format!("t.execution_id IN ({})", list.join(", ")),
        None => "TRUE".to_string(),
    }
}

/// Joins `t` (the table) with `s` (the staged rows) on the key.
const KEYS: &str = "t.execution_id = s.execution_id AND t.team_id = s.team_id
    AND t.round_number = s.round_number";

/// Moves the staged rows into one table (step 3 of the module docs): an upsert on the round
/// key when the table holds some of the staged keys (`some_stored`), else a plain insert.
/// The plain insert is the usual case (new rounds, a bulk load) and the cheaper statement:
/// `ON CONFLICT` cost +50 % per round write and +40 % on bulk loads (docs/benchmarks.md). It is
/// still checked by the key: if the writer's record were wrong, the insert is refused (no
/// second row), the writer forgets its record and writes each job again after reading the keys.
fn upsert(conn: &Connection, table: &RoundTable, some_stored: bool) -> Result<()> {
    let mut sql = format!(
        "INSERT INTO {name} ({columns}) SELECT {values} FROM stage_rounds AS s WHERE {only}",
        name = table.name,
        columns = table.columns,
        values = table.values,
        only = table.only,
    );
    if some_stored {
        sql.push_str(&format!(
            " ON CONFLICT (execution_id, team_id, round_number) DO UPDATE SET {}",
            table.conflict
        ));
    }
    execute_once(conn, &sql).map_err(StoreError::db(format!("writing {}", table.name)))
}

/// Updates the `round_history` rows of the evaluations staged without their transcript
/// ([`EVALUATED_HISTORY`]). `executions` are the batch's and `lowest` the smallest id their
/// rows can have (filters DuckDB pushes into the table scan, so the key join sees only their
/// rows).
fn update_evaluated_history(conn: &Connection, executions: &[String], lowest: i64) -> Result<()> {
    let filter = format!("t.id >= {lowest} AND {}", execution_filter(executions));
    let sql = format!(
        "UPDATE round_history AS t SET {EVALUATED_HISTORY} FROM stage_rounds AS s
         WHERE NOT s.transcript AND {filter} AND {KEYS}"
    );
    execute_once(conn, &sql).map_err(StoreError::db("updating round_history"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn placeholders_and_filters() {
        assert_eq!(placeholders(3), "?, ?, ?");
        let two = ["a".to_string(), "b'c".to_string()];
        assert_eq!(execution_filter(&two), "t.execution_id IN ('a', 'b''c')");
        let many: Vec<String> = (0..=MAX_FILTER_EXECUTIONS).map(|i| i.to_string()).collect();
        assert_eq!(execution_filter(&many), "TRUE");
        assert_eq!(execution_filter(&["a\0b".to_string()]), "TRUE");
    }

    /// A round of team `team` in execution `e`, evaluated with `score`.
    pub(crate) fn record(team: &str, n: u32, score: f64) -> RoundRecord {
        let at = DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default();
        RoundRecord {
            execution_id: "e".into(),
            team_id: team.into(),
            team_name: team.into(),
            round_number: n,
            prompt: "p".into(),
            submission_content: format!("{team} {n}"),
            score_details: mixseek_core::ScoreDetails {
                overall_score: score,
                metrics: Vec::new(),
            },
            round_started_at: at,
            round_ended_at: at,
            leader_messages: Vec::new(),
            member_submissions: mixseek_core::MemberSubmissionsRecord {
                execution_id: "e".into(),
                team_id: team.into(),
                team_name: team.into(),
                round_number: n,
                submissions: Vec::new(),
            },
            agent_usage: Usage::default(),
            evaluation_usage: Usage::default(),
            applied_injections: Vec::new(),
        }
    }

    pub(crate) fn submission(r: &RoundRecord) -> SubmittedRound {
        SubmittedRound {
            execution_id: r.execution_id.clone(),
            team_id: r.team_id.clone(),
            team_name: r.team_name.clone(),
            round_number: r.round_number,
            prompt: r.prompt.clone(),
            submission_content: r.submission_content.clone(),
            round_started_at: r.round_started_at,
            submitted_at: r.round_ended_at,
            leader_messages: r.leader_messages.clone(),
            member_submissions: r.member_submissions.clone(),
            agent_usage: r.agent_usage,
        }
    }

    fn rows(conn: &Connection, table: &str) -> Vec<(String, i32)> {
        let mut stmt = conn
            .prepare(&format!(
                "SELECT team_id, round_number FROM {table} ORDER BY team_id, round_number"
            ))
            .expect("prepare");
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("query")
            .collect::<duckdb::Result<Vec<_>>>()
            .expect("rows")
    }

    /// The update of an evaluation without its transcript names the batch's executions in its
    /// SQL text: an id with a quote is quoted, one with a NUL (which SQL text cannot carry) is
    /// matched by the key join alone.
    #[test]
    fn evaluations_of_executions_with_odd_ids_update_their_submissions() {
        let conn = Connection::open_in_memory().expect("db");
        crate::schema::migrate(&conn, std::path::Path::new(":memory:")).expect("schema");
        let mut keys = RoundKeys::default();
        let now = DateTime::from_timestamp(1_700_000_100, 0).unwrap_or_default();
        let masker = PiiMasker::disabled();
        for execution in ["it's", "nul\0id"] {
            let mut r = record("a", 1, 10.0);
            r.execution_id = execution.into();
            r.applied_injections = vec![mixseek_core::AppliedInjection {
                phase: "team".into(),
                side: "user".into(),
                rules: vec![format!("rule of {}", execution.len())],
            }];
            let stored = StagedRounds::build(&masker, &[StageRound::Submitted(&submission(&r))])
                .expect("submission");
            write_rounds(&conn, &mut keys, &[&stored], now).expect("submission");
            let evaluated =
                StagedRounds::build(&masker, &[StageRound::EvaluatedOnly(&r)]).expect("evaluation");
            write_rounds(&conn, &mut keys, &[&evaluated], now).expect("evaluation");
            let injections: Option<String> = conn
                .query_row(
                    "SELECT applied_injections FROM round_history WHERE execution_id = ?",
                    [execution],
                    |row| row.get(0),
                )
                .expect("one row");
            let rule = format!("rule of {}", execution.len());
            assert!(
                injections.is_some_and(|i| i.contains(&rule)),
                "{execution:?}"
            );
        }
    }

    #[test]
    fn an_evaluation_without_its_transcript_keeps_the_stored_one_and_needs_its_submission() {
        let conn = Connection::open_in_memory().expect("db");
        crate::schema::migrate(&conn, std::path::Path::new(":memory:")).expect("schema");
        let mut keys = RoundKeys::default();
        let now = DateTime::from_timestamp(1_700_000_100, 0).unwrap_or_default();
        let masker = PiiMasker::disabled();
        let mut a1 = record("a", 1, 10.0);
        a1.prompt = "the ranking prompt".into();
        a1.leader_messages =
            vec![serde_json::json!({"role": "user", "content": "the ranking prompt"})];
        a1.applied_injections = vec![mixseek_core::AppliedInjection {
            phase: "evaluator".into(),
            side: "system".into(),
            rules: vec!["language_preference".into()],
        }];
        let stored = StagedRounds::build(&masker, &[StageRound::Submitted(&submission(&a1))])
            .expect("submission");
        write_rounds(&conn, &mut keys, &[&stored], now).expect("submission");
        // the evaluation (and, in the same transaction, another team's full evaluation)
        let b1 = record("b", 1, 20.0);
        let light = StagedRounds::build(
            &masker,
            &[StageRound::EvaluatedOnly(&a1), StageRound::Evaluated(&b1)],
        )
        .expect("evaluations");
        assert!(light.has_evaluated_only && !light.has_submitted);
        write_rounds(&conn, &mut keys, &[&light], now).expect("evaluations");
        let history = |team: &str| -> (
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        ) {
            conn.query_row(
                "SELECT prompt, message_history, member_submissions_record, applied_injections
                 FROM round_history WHERE team_id = ?",
                [team],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .expect("one row")
        };
        let (prompt, messages, members, injections) = history("a");
        // the prompt is the transcript's user message: stored there only
        assert_eq!(prompt, None);
        let messages: Vec<serde_json::Value> =
            serde_json::from_str(&messages.unwrap_or_default()).expect("messages");
        assert_eq!(leader_prompt(&messages), Some("the ranking prompt"));
        assert!(members.is_some_and(|m| m.contains("\"team_id\":\"a\"")));
        assert!(injections.is_some_and(|i| i.contains("language_preference")));
        assert_eq!(history("b").0.as_deref(), Some("p"));
        let completed = vec![("a".to_string(), 1), ("b".to_string(), 1)];
        assert_eq!(rows(&conn, "leader_board"), completed);
        assert_eq!(rows(&conn, "round_status"), completed);
        assert_eq!(rows(&conn, "round_history"), completed);

        // without a stored submission the evaluation cannot be written without its transcript
        let c1 = record("c", 1, 30.0);
        let orphan = StagedRounds::build(&masker, &[StageRound::EvaluatedOnly(&c1)]).expect("c");
        let err = write_rounds(&conn, &mut keys, &[&orphan], now).expect_err("no submission");
        assert!(
            err.to_string().contains("round 1 of team c") && err.to_string().contains("not stored"),
            "{err}"
        );
    }

    #[test]
    fn jobs_of_one_transaction_mixing_evaluations_and_submissions_are_each_written_right() {
        // What concurrent teams queue into one transaction: a job of evaluated rounds only
        // and a job with a submission (the writer stages each emit as its own job).
        let conn = Connection::open_in_memory().expect("db");
        crate::schema::migrate(&conn, std::path::Path::new(":memory:")).expect("schema");
        let mut keys = RoundKeys::default();
        let now = DateTime::from_timestamp(1_700_000_100, 0).unwrap_or_default();
        let masker = PiiMasker::disabled();
        let (a1, b1, c1) = (
            record("a", 1, 10.0),
            record("b", 1, 20.0),
            record("c", 1, 30.0),
        );
        let (b1s, c1s) = (submission(&b1), submission(&c1));
        // c's submission is stored first (its evaluation comes in the mixed transaction)
        let first = StagedRounds::build(&masker, &[StageRound::Submitted(&c1s)]).expect("c");
        write_rounds(&conn, &mut keys, &[&first], now).expect("first");
        let evaluated = StagedRounds::build(&masker, &[StageRound::Evaluated(&a1)]).expect("a");
        let mixed = StagedRounds::build(
            &masker,
            &[StageRound::Submitted(&b1s), StageRound::Evaluated(&c1)],
        )
        .expect("b, c");
        assert!(!evaluated.has_submitted && mixed.has_submitted);
        write_rounds(&conn, &mut keys, &[&evaluated, &mixed], now).expect("mixed");
        let all = |t: &str| vec![(t.to_string(), 1)];
        let mut expected = all("a");
        expected.extend(all("b"));
        expected.extend(all("c"));
        assert_eq!(rows(&conn, "round_history"), expected);
        let mut completed = all("a");
        completed.extend(all("c"));
        assert_eq!(
            rows(&conn, "leader_board"),
            completed,
            "b is only submitted"
        );
        assert_eq!(rows(&conn, "round_status"), completed);
        assert_eq!(keys.get("e", "a", 1), IN_ALL);
        assert_eq!(keys.get("e", "b", 1), IN_ROUND_HISTORY);
        assert_eq!(keys.get("e", "c", 1), IN_ALL);
        // a later submission of an evaluated round, alone or with others, changes nothing
        let late = submission(&record("a", 1, 0.0));
        let again = StagedRounds::build(
            &masker,
            &[StageRound::Submitted(&late), StageRound::Evaluated(&b1)],
        )
        .expect("late");
        write_rounds(&conn, &mut keys, &[&again], now).expect("late");
        let mut completed = all("a");
        completed.extend(all("b"));
        completed.extend(all("c"));
        assert_eq!(rows(&conn, "leader_board"), completed);
        assert_eq!(rows(&conn, "round_history").len(), 3);
    }

    #[test]
    fn one_batch_keeps_one_row_per_key_and_completes_evaluations_from_their_submission() {
        // What a fast run queues into one transaction: a round's submission and its
        // evaluation staged without the transcript, a round evaluated twice, and a late
        // submission of an evaluated round.
        let conn = Connection::open_in_memory().expect("db");
        crate::schema::migrate(&conn, std::path::Path::new(":memory:")).expect("schema");
        let mut keys = RoundKeys::default();
        let now = DateTime::from_timestamp(1_700_000_100, 0).unwrap_or_default();
        let masker = PiiMasker::disabled();
        let mut a1 = record("a", 1, 10.0);
        a1.leader_messages = vec![serde_json::json!({"role": "user", "content": "a's prompt"})];
        a1.prompt = "a's prompt".into();
        let (b1_first, b1_last) = (record("b", 1, 20.0), record("b", 1, 25.0));
        let c1 = record("c", 1, 30.0);
        let jobs = [
            StagedRounds::build(&masker, &[StageRound::Submitted(&submission(&a1))]).expect("a"),
            StagedRounds::build(&masker, &[StageRound::Evaluated(&b1_first)]).expect("b"),
            StagedRounds::build(&masker, &[StageRound::Evaluated(&c1)]).expect("c"),
            StagedRounds::build(
                &masker,
                &[
                    StageRound::EvaluatedOnly(&a1),
                    StageRound::Evaluated(&b1_last),
                    StageRound::Submitted(&submission(&record("c", 1, 0.0))),
                ],
            )
            .expect("later"),
        ];
        let refs: Vec<&StagedRounds> = jobs.iter().collect();
        write_rounds(&conn, &mut keys, &refs, now).expect("batch");
        let completed: Vec<(String, i32)> =
            ["a", "b", "c"].iter().map(|t| (t.to_string(), 1)).collect();
        for table in ["round_history", "leader_board", "round_status"] {
            assert_eq!(rows(&conn, table), completed, "{table}");
        }
        let score = |team: &str| -> f64 {
            conn.query_row(
                "SELECT score FROM leader_board WHERE team_id = ?",
                [team],
                |r| r.get(0),
            )
            .expect("score")
        };
        assert_eq!((score("a"), score("b"), score("c")), (10.0, 25.0, 30.0));
        // a's evaluation took the transcript of its submission; c kept its evaluation's
        let history = |team: &str| -> (Option<String>, Option<String>, String) {
            conn.query_row(
                "SELECT message_history, applied_injections, submission_content
                 FROM round_history WHERE team_id = ?",
                [team],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .expect("history")
        };
        let (messages, injections, _) = history("a");
        assert!(messages.is_some_and(|m| m.contains("a's prompt")));
        assert_eq!(
            injections.as_deref(),
            Some("[]"),
            "the evaluation's columns"
        );
        assert_eq!(history("c").2, "c 1");
        assert_eq!(keys.get("e", "a", 1), IN_ALL);
    }

    #[test]
    fn text_columns_keep_nulls_and_offsets() {
        let mut c = TextColumn::with_capacity(3, 4);
        c.push("ab");
        c.push_opt(None);
        c.push("日本");
        let array = c.finish();
        let strings = array
            .as_any()
            .downcast_ref::<LargeStringArray>()
            .expect("large strings");
        let got: Vec<Option<&str>> = strings.iter().collect();
        assert_eq!(got, vec![Some("ab"), None, Some("日本")]);
    }
}
