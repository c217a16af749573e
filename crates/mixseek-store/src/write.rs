//! The write statements. Each function runs inside a transaction the caller opened (the writer
//! thread commits a whole batch at once) and is idempotent: rounds are upserted on
//! (execution_id, team_id, round_number) (see [`crate::rounds`]), the execution row on
//! execution_id.
//!
//! LLM calls are appended straight into `llm_calls` with DuckDB's Appender (its `id` from the
//! column default): the same code path for one call and for thousands, with no statement.

use crate::error::{Result, StoreError};
use crate::model::RoundUsage;
use crate::rounds::{KeyedTable, RoundKeys};
use crate::values::{TS, execute_once, json_text, masked_json, micros, u64_i64};
use chrono::{DateTime, Utc};
use duckdb::types::Value;
use duckdb::{Connection, params};
use mixseek_core::{Decision, ExecutionSummary, LeaderboardEntry, LlmCallRecord, TeamRef};
use mixseek_core::{PiiMasker, sha256_hex};
use std::collections::HashMap;

/// A `Judged` event to store, with the masker of the handle that sent it.
pub(crate) struct DecisionJob<'a> {
    pub execution_id: &'a str,
    pub team_id: &'a str,
    pub round_number: u32,
    pub decision: &'a Decision,
    pub masker: &'a PiiMasker,
}

/// At most this many team ids in one `IN (…)` list.
const MAX_LISTED_TEAMS: usize = 256;

/// The staging table of a batch's decisions: the columns [`decision_row`] gives, in its order.
/// A fresh table each batch, as for rounds (`rounds.rs`). An `UPDATE … FROM (VALUES …)` with
/// a parameter per value cost 3 ms of CPU for 5 decisions and 13 ms for 50, against 2.6 and
/// 3.6 ms for this table, its appender and the update (DuckDB binds every parameter).
const STAGE_DECISIONS: &str = "CREATE OR REPLACE TEMP TABLE stage_decisions (
    execution_id VARCHAR, team_id VARCHAR, round_number INTEGER, should_continue BOOLEAN,
    reasoning VARCHAR, confidence_score DOUBLE, judgment VARCHAR, exit_reason VARCHAR,
    input_tokens BIGINT, output_tokens BIGINT, cached_tokens BIGINT, requests BIGINT,
    cost_usd DOUBLE, stage_usage VARCHAR)";

/// Stores continuation decisions (`round_status`), adding each judgment's usage to its round's
/// totals: the stored usage of the rounds this writer did not store itself is read with one
/// query per execution, then the decisions are staged ([`STAGE_DECISIONS`]) and written with
/// one `UPDATE … FROM` (one decision or a thousand: the same statements). Of a round decided
/// twice the last decision is kept. Any invalid decision or missing round fails the whole
/// call (the writer then writes the jobs one by one, so the error reaches its own emitter).
pub(crate) fn write_decisions(
    conn: &Connection,
    keys: &mut RoundKeys,
    jobs: &[DecisionJob<'_>],
    now: DateTime<Utc>,
) -> Result<()> {
    // the last decision of each round, and the executions decided
    let mut last: HashMap<(&str, &str, u32), usize> = HashMap::with_capacity(jobs.len());
    let mut executions: Vec<&str> = Vec::new();
    for (i, j) in jobs.iter().enumerate() {
        if let Some(c) = j.decision.confidence_score
            && !(0.0..=1.0).contains(&c)
        {
            return Err(StoreError::Invalid(format!(
                "confidence_score must be between 0.0 and 1.0, got {c}"
            )));
        }
        last.insert((j.execution_id, j.team_id, j.round_number), i);
        if !executions.contains(&j.execution_id) {
            executions.push(j.execution_id);
        }
    }
    let stored = stored_usage(conn, keys, &executions, last.keys().copied())?;
    let mut order: Vec<usize> = last.into_values().collect();
    order.sort_unstable();
    let mut rows = Vec::with_capacity(order.len());
    for i in order {
        let j = &jobs[i];
        let key = (
            j.execution_id.to_string(),
            j.team_id.to_string(),
            j.round_number,
        );
        let Some(stage_usage) = stored.get(&key) else {
            return Err(StoreError::Invalid(format!(
                "cannot store the decision of round {} of team {} (execution {}): \
                 the round itself is not stored",
                j.round_number, j.team_id, j.execution_id
            )));
        };
        rows.push(decision_row(j, stage_usage.as_deref())?);
    }
    let lowest = executions
        .iter()
        .map(|e| keys.lowest_id(conn, e, KeyedTable::RoundStatus))
        .collect::<Result<Vec<i64>>>()?
        .into_iter()
        .min()
        .unwrap_or(i64::from(i32::MIN));
    conn.execute_batch(STAGE_DECISIONS)
        .map_err(StoreError::db("creating the decision staging table"))?;
    let mut app = conn
        .appender_to_catalog_and_db("stage_decisions", "temp", "main")
        .map_err(StoreError::db("opening the decision appender"))?;
    for row in &rows {
        app.append_row(duckdb::appender_params_from_iter(row))
            .map_err(StoreError::db("staging decisions"))?;
    }
    app.flush()
        .map_err(StoreError::db("flushing the decision appender"))?;
    drop(app);
    let now_us = micros(&now);
    execute_once(
        conn,
        &format!(
            "UPDATE round_status AS t SET should_continue = s.should_continue,
                 reasoning = s.reasoning, confidence_score = s.confidence_score,
                 judgment = s.judgment, exit_reason = s.exit_reason,
                 input_tokens = s.input_tokens, output_tokens = s.output_tokens,
                 cached_tokens = s.cached_tokens, requests = s.requests, cost_usd = s.cost_usd,
                 stage_usage = s.stage_usage,
                 updated_at = make_timestamp({now_us}::BIGINT)::TIMESTAMPTZ
             FROM stage_decisions AS s
             WHERE t.id >= {lowest} AND t.execution_id = s.execution_id
                 AND t.team_id = s.team_id AND t.round_number = s.round_number"
        ),
    )
    .map_err(StoreError::db("writing round_status"))
}

/// The stored `stage_usage` of each decided round (`None` inside: stored without one): what
/// this writer stored itself is known; the rest is read with one query per execution and
/// chunk of [`MAX_LISTED_TEAMS`] teams, of the decided teams only (`id >= lowest`: the
/// execution's row groups only; reading every round of the execution made each batch of a
/// long run slower than the last). A round missing from the map is not stored.
fn stored_usage<'a>(
    conn: &Connection,
    keys: &mut RoundKeys,
    executions: &[&'a str],
    decided: impl Iterator<Item = (&'a str, &'a str, u32)>,
) -> Result<HashMap<(String, String, u32), Option<String>>> {
    let mut stored: HashMap<(String, String, u32), Option<String>> = HashMap::new();
    let mut unknown: HashMap<&str, Vec<&str>> = HashMap::new();
    for (execution, team, round) in decided {
        match keys.take_stage_usage(execution, team, round) {
            Some(usage) => {
                stored.insert((execution.to_string(), team.to_string(), round), usage);
            }
            None => {
                let teams = unknown.entry(execution).or_default();
                if !teams.contains(&team) {
                    teams.push(team);
                }
            }
        }
    }
    for execution in executions {
        let Some(decided) = unknown.get(execution) else {
            continue;
        };
        let lowest = keys.lowest_id(conn, execution, KeyedTable::RoundStatus)?;
        for chunk in decided.chunks(MAX_LISTED_TEAMS) {
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT team_id, round_number, stage_usage FROM round_status
                     WHERE id >= {lowest} AND execution_id = ? AND team_id IN ({})",
                    vec!["?"; chunk.len()].join(", ")
                ))
                .map_err(StoreError::db("reading round_status"))?;
            let params = std::iter::once(*execution).chain(chunk.iter().copied());
            let rows = stmt
                .query_map(duckdb::params_from_iter(params), |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, u32>(1)?,
                        r.get::<_, Option<String>>(2)?,
                    ))
                })
                .map_err(StoreError::db("reading round_status"))?;
            for row in rows {
                let (team, round, usage) = row.map_err(StoreError::db("reading round_status"))?;
                stored.insert((execution.to_string(), team, round), usage);
            }
        }
    }
    Ok(stored)
}

/// One decision's values (the columns of [`STAGE_DECISIONS`]): its reasoning and judgment
/// masked, the judgment's usage added to the round's stored `stage_usage`.
fn decision_row(j: &DecisionJob<'_>, stage_usage: Option<&str>) -> Result<[Value; 14]> {
    let mut usage: RoundUsage = stage_usage
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| StoreError::decode("round_status.stage_usage", e))?
        .unwrap_or_default();
    usage.judgment = j.decision.usage;
    let total = usage.total();
    let text = |t: Option<String>| t.map_or(Value::Null, Value::Text);
    let judgment = j
        .decision
        .judgment
        .as_ref()
        .map(|jm| masked_json(j.masker, serde_json::to_value(jm).unwrap_or_default()).0);
    Ok([
        Value::Text(j.execution_id.to_string()),
        Value::Text(j.team_id.to_string()),
        Value::Int(i32::try_from(j.round_number).map_err(|_| {
            StoreError::Invalid(format!("round_number {} is out of range", j.round_number))
        })?),
        Value::Boolean(j.decision.should_continue),
        Value::Text(j.masker.mask(&j.decision.reasoning).into_owned()),
        j.decision
            .confidence_score
            .map_or(Value::Null, Value::Double),
        text(judgment),
        text(j.decision.exit_reason.map(|r| r.as_str().to_string())),
        Value::BigInt(u64_i64(total.input_tokens)),
        Value::BigInt(u64_i64(total.output_tokens)),
        Value::BigInt(u64_i64(total.cached_tokens)),
        Value::BigInt(u64_i64(total.requests)),
        Value::Double(total.cost_usd),
        Value::Text(json_text(&usage, "stage_usage")?),
    ])
}

/// An `ExecutionStarted` event to store (see [`start_execution`]).
pub(crate) struct StartJob<'a> {
    pub execution_id: &'a str,
    pub user_prompt: &'a str,
    pub teams: &'a [TeamRef],
    pub config_hash: &'a str,
    pub max_rounds: u32,
    pub at: DateTime<Utc>,
    pub masker: &'a PiiMasker,
}

/// The execution row at the start of a run (status `running`). A resumed run keeps the
/// original prompt and start time.
pub(crate) fn start_execution(
    conn: &Connection,
    keys: &mut RoundKeys,
    job: &StartJob<'_>,
) -> Result<()> {
    let &StartJob {
        execution_id,
        user_prompt,
        teams,
        config_hash,
        max_rounds,
        at,
        masker,
    } = job;
    let prompt = masker.mask(user_prompt);
    let masked = matches!(prompt, std::borrow::Cow::Owned(_));
    let (teams_json, teams_masked) =
        masked_json(masker, serde_json::to_value(teams).unwrap_or_default());
    let existed: i64 = conn
        .query_row(
            "SELECT count(*) FROM execution_summary WHERE execution_id = ?",
            [execution_id],
            |r| r.get(0),
        )
        .map_err(StoreError::db("reading execution_summary"))?;
    conn.execute(
        &format!(
            "INSERT INTO execution_summary (execution_id, user_prompt, status, total_teams, teams, config_hash,
                 max_rounds, created_at, updated_at, prompt_sha256, pii_masked)
             VALUES (?, ?, 'running', ?, ?, ?, ?, {TS}, {TS}, ?, ?)
             ON CONFLICT (execution_id) DO UPDATE SET status = 'running', total_teams = excluded.total_teams,
                 teams = excluded.teams, config_hash = excluded.config_hash, max_rounds = excluded.max_rounds,
                 completed_at = NULL, updated_at = excluded.updated_at"
        ),
        params![
            execution_id,
            prompt.as_ref(),
            u64_i64(teams.len() as u64),
            teams_json,
            config_hash,
            max_rounds,
            micros(&at),
            micros(&at),
            masker.is_enabled().then(|| sha256_hex(user_prompt)),
            masked || teams_masked,
        ],
    )
    .map_err(StoreError::db("writing execution_summary"))?;
    if existed == 0 {
        keys.mark_new(conn, execution_id)?;
    }
    Ok(())
}

/// The final round of a team whose `leader_board` row the round path did not write: stored
/// from its leaderboard entry (flagged, should the row exist after all).
fn store_final_round(
    conn: &Connection,
    keys: &mut RoundKeys,
    job: &FinishJob<'_>,
    best: &LeaderboardEntry,
    reason: Option<&str>,
    now: DateTime<Utc>,
) -> Result<()> {
    let &FinishJob {
        execution_id,
        team_id,
        masker,
        ..
    } = job;
    tracing::warn!(
        execution_id,
        team_id,
        round = best.round_number,
        "final round was not stored; storing it now"
    );
    // a leader_board row the round path did not write: read the keys again next time
    keys.forget(execution_id);
    let submission = masker.mask(&best.submission_content);
    let (details, _) = masked_json(
        masker,
        serde_json::to_value(&best.score_details).unwrap_or_default(),
    );
    conn.execute(
        &format!(
            "INSERT INTO leader_board (execution_id, team_id, team_name, round_number, submission_content,
                 submission_format, score, score_details, final_submission, exit_reason, created_at,
                 updated_at, submission_sha256, pii_masked)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, TRUE, ?, {TS}, {TS}, ?, ?)
             ON CONFLICT (execution_id, team_id, round_number) DO UPDATE SET final_submission = TRUE,
                 exit_reason = excluded.exit_reason, updated_at = excluded.updated_at"
        ),
        params![
            execution_id,
            team_id,
            best.team_name,
            best.round_number,
            submission.as_ref(),
            best.submission_format,
            best.score,
            details,
            reason,
            micros(&best.created_at),
            micros(&now),
            masker.is_enabled().then(|| sha256_hex(&best.submission_content)),
            matches!(submission, std::borrow::Cow::Owned(_)),
        ],
    )
    .map_err(StoreError::db("writing the final submission"))?;
    Ok(())
}

/// A `TeamFinished` event to store (see [`finish_teams`]).
pub(crate) struct FinishJob<'a> {
    pub execution_id: &'a str,
    pub team_id: &'a str,
    pub best: Option<&'a LeaderboardEntry>,
    pub exit_reason: Option<&'a str>,
    pub masker: &'a PiiMasker,
}

/// The staging table of a batch's team ends: each team, with its best round and that round's
/// exit reason (NULL when the team has no best round). A fresh table each batch, as for
/// decisions: an `UPDATE … FROM (VALUES …)` with three parameters per team (DuckDB binds each
/// one, and plans the statement twice) took 19 ms of CPU for the 50 teams of the exec bench's
/// original shape, this table and its statements 14 ms (perf samples).
const STAGE_FINISHED: &str = "CREATE OR REPLACE TEMP TABLE stage_finished (
    execution_id VARCHAR, team_id VARCHAR, round_number INTEGER, exit_reason VARCHAR)";

/// A finished team's best round and the exit reason it is marked with.
type BestRound<'a> = (&'a LeaderboardEntry, Option<&'a str>);

/// Ends teams: clears the flags of their rounds, then marks each one's best round
/// `final_submission = TRUE` with the exit reason: the teams are staged
/// ([`STAGE_FINISHED`]) and both are one `UPDATE … FROM` whatever the number of teams
/// (a best round the marking found no row for is then stored from its leaderboard entry).
/// Of a team finished twice the last event counts.
pub(crate) fn finish_teams(
    conn: &Connection,
    keys: &mut RoundKeys,
    jobs: &[FinishJob<'_>],
    now: DateTime<Utc>,
) -> Result<()> {
    // the last event of each team (first-seen order)
    let mut last: HashMap<(&str, &str), usize> = HashMap::with_capacity(jobs.len());
    for (i, j) in jobs.iter().enumerate() {
        last.insert((j.execution_id, j.team_id), i);
    }
    let mut order: Vec<usize> = last.into_values().collect();
    order.sort_unstable();
    let finished: Vec<(&FinishJob<'_>, Option<BestRound<'_>>)> = order
        .into_iter()
        .map(|i| {
            let j = &jobs[i];
            let best = j
                .best
                .map(|b| (b, b.exit_reason.as_deref().or(j.exit_reason)));
            (j, best)
        })
        .collect();
    // `id >= lowest`: the rows of the batch's executions only
    let mut lowest = i64::MAX;
    for (j, _) in &finished {
        lowest = lowest.min(keys.lowest_id(conn, j.execution_id, KeyedTable::LeaderBoard)?);
    }
    conn.execute_batch(STAGE_FINISHED)
        .map_err(StoreError::db("creating the team staging table"))?;
    let mut app = conn
        .appender_to_catalog_and_db("stage_finished", "temp", "main")
        .map_err(StoreError::db("opening the team appender"))?;
    for (j, best) in &finished {
        let round = best
            .map(|(b, _)| {
                i32::try_from(b.round_number).map_err(|_| {
                    StoreError::Invalid(format!("round_number {} is out of range", b.round_number))
                })
            })
            .transpose()?;
        app.append_row(params![
            j.execution_id,
            j.team_id,
            round,
            best.and_then(|(_, reason)| reason),
        ])
        .map_err(StoreError::db("staging the finished teams"))?;
    }
    app.flush()
        .map_err(StoreError::db("flushing the team appender"))?;
    drop(app);
    execute_once(
        conn,
        &format!(
            "UPDATE leader_board AS t SET final_submission = FALSE, exit_reason = NULL
             FROM stage_finished AS s
             WHERE t.id >= {lowest} AND t.execution_id = s.execution_id AND t.team_id = s.team_id
                 AND (t.final_submission OR t.exit_reason IS NOT NULL)"
        ),
    )
    .map_err(StoreError::db("clearing final_submission"))?;
    if finished.iter().all(|(_, best)| best.is_none()) {
        return Ok(());
    }
    let now_us = micros(&now);
    // No `RETURNING` here: with it DuckDB reads every column of the rows, key columns
    // included, and so turns the update into a delete and an insert, index upkeep and all.
    execute_once(
        conn,
        &format!(
            "UPDATE leader_board AS t
             SET final_submission = TRUE, exit_reason = s.exit_reason,
                 updated_at = make_timestamp({now_us}::BIGINT)::TIMESTAMPTZ
             FROM stage_finished AS s
             WHERE t.id >= {lowest} AND t.execution_id = s.execution_id AND t.team_id = s.team_id
                 AND t.round_number = s.round_number"
        ),
    )
    .map_err(StoreError::db("marking the final submissions"))?;
    let mut stmt = conn
        .prepare(&format!(
            "SELECT s.execution_id, s.team_id FROM stage_finished AS s
             WHERE s.round_number IS NOT NULL AND NOT EXISTS (
                 SELECT 1 FROM leader_board AS t
                 WHERE t.id >= {lowest} AND t.execution_id = s.execution_id
                     AND t.team_id = s.team_id AND t.round_number = s.round_number)"
        ))
        .map_err(StoreError::db("finding the unmarked final submissions"))?;
    let unmarked: std::collections::HashSet<(String, String)> = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .map_err(StoreError::db("finding the unmarked final submissions"))?
        .collect::<duckdb::Result<_>>()
        .map_err(StoreError::db("finding the unmarked final submissions"))?;
    for (j, best) in finished {
        if let Some((b, reason)) = best
            && unmarked.contains(&(j.execution_id.to_string(), j.team_id.to_string()))
        {
            store_final_round(conn, keys, j, b, reason, now)?;
        }
    }
    Ok(())
}

/// The execution row at the end of a run (upsert: a run without a start row still gets one).
pub(crate) fn finish_execution(
    conn: &Connection,
    masker: &PiiMasker,
    s: &ExecutionSummary,
    now: DateTime<Utc>,
) -> Result<()> {
    let prompt = masker.mask(&s.user_prompt);
    let mut masked = matches!(prompt, std::borrow::Cow::Owned(_));
    let (results, m1) = masked_json(
        masker,
        serde_json::to_value(&s.team_results).unwrap_or_default(),
    );
    let (failed, m2) = masked_json(
        masker,
        serde_json::to_value(&s.failed_teams_info).unwrap_or_default(),
    );
    masked |= m1 || m2;
    conn.execute(
        &format!(
            "INSERT INTO execution_summary (execution_id, user_prompt, status, team_results, total_teams,
                 best_team_id, best_score, total_execution_time_seconds, completed_at, created_at, updated_at,
                 failed_teams_info, input_tokens, output_tokens, cost_usd, usage, usage_by_role, stop_reason,
                 prompt_sha256, pii_masked)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, {TS}, {TS}, {TS}, ?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (execution_id) DO UPDATE SET status = excluded.status, team_results = excluded.team_results,
                 best_team_id = excluded.best_team_id, best_score = excluded.best_score,
                 total_execution_time_seconds = excluded.total_execution_time_seconds,
                 completed_at = excluded.completed_at, updated_at = excluded.updated_at,
                 failed_teams_info = excluded.failed_teams_info, input_tokens = excluded.input_tokens,
                 output_tokens = excluded.output_tokens, cost_usd = excluded.cost_usd, usage = excluded.usage,
                 usage_by_role = excluded.usage_by_role, stop_reason = excluded.stop_reason,
                 pii_masked = execution_summary.pii_masked OR excluded.pii_masked"
        ),
        params![
            s.execution_id.as_str(),
            prompt.as_ref(),
            s.status.as_str(),
            results,
            u64_i64(s.total_teams() as u64),
            s.best_team_id.as_ref().map(|id| id.as_str()),
            s.best_score,
            s.total_execution_time_seconds,
            micros(&now),
            micros(&s.created_at),
            micros(&now),
            failed,
            u64_i64(s.usage.input_tokens),
            u64_i64(s.usage.output_tokens),
            s.usage.cost_usd,
            json_text(&s.usage, "usage")?,
            json_text(&s.usage_by_role, "usage_by_role")?,
            s.stop_reason,
            masker.is_enabled().then(|| sha256_hex(&s.user_prompt)),
            masked,
        ],
    )
    .map_err(StoreError::db("writing execution_summary"))?;
    Ok(())
}

/// The `llm_calls` columns an LLM call fills (`id` takes its default, the sequence).
const LLM_CALL_COLUMNS: [&str; 16] = [
    "execution_id",
    "team_id",
    "round_number",
    "role",
    "model",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "requests",
    "cost_usd",
    "priced",
    "latency_ms",
    "attempts",
    "cache_hit",
    "error",
    "called_at",
];

/// Appends LLM calls (`llm_calls`) straight into the table with DuckDB's Appender (the other
/// columns take their defaults): no statement to plan, whatever the number of calls.
pub(crate) fn write_llm_calls(conn: &Connection, calls: &[&LlmCallRecord]) -> Result<()> {
    if calls.is_empty() {
        return Ok(());
    }
    let mut app = conn
        .appender_with_columns("llm_calls", &LLM_CALL_COLUMNS)
        .map_err(StoreError::db("opening the llm_calls appender"))?;
    for c in calls {
        let priced = c.usage.unpriced_requests == 0;
        app.append_row(params![
            c.execution_id,
            c.team_id,
            c.round_number,
            c.role.as_str(),
            c.model,
            u64_i64(c.usage.input_tokens),
            u64_i64(c.usage.output_tokens),
            u64_i64(c.usage.cached_tokens),
            u64_i64(c.usage.requests),
            c.usage.cost_usd,
            priced,
            u64_i64(c.latency_ms),
            c.attempts,
            c.cache_hit,
            c.error,
            duckdb::types::Value::Timestamp(duckdb::types::TimeUnit::Microsecond, micros(&c.at)),
        ])
        .map_err(StoreError::db("writing an LLM call"))?;
    }
    app.flush()
        .map_err(StoreError::db("flushing the llm_calls appender"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rounds::tests::record;
    use crate::rounds::{StageRound, StagedRounds, write_rounds};

    fn entry(r: &mixseek_core::RoundRecord, reason: Option<&str>) -> LeaderboardEntry {
        LeaderboardEntry {
            id: None,
            execution_id: r.execution_id.clone(),
            team_id: r.team_id.clone(),
            team_name: r.team_name.clone(),
            round_number: r.round_number,
            submission_content: r.submission_content.clone(),
            submission_format: "md".into(),
            score: r.score_details.overall_score,
            score_details: r.score_details.clone(),
            final_submission: true,
            exit_reason: reason.map(str::to_string),
            created_at: r.round_ended_at,
            updated_at: r.round_ended_at,
        }
    }

    #[test]
    fn llm_calls_are_appended_with_their_ids_and_exact_times() {
        let conn = Connection::open_in_memory().expect("db");
        crate::schema::migrate(&conn, std::path::Path::new(":memory:")).expect("schema");
        let at = DateTime::parse_from_rfc3339("2026-11-24T01:02:03.456789Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default();
        let call = |n: u32, error: Option<&str>| LlmCallRecord {
            execution_id: Some("e".into()),
            team_id: (n == 1).then(|| "t".to_string()),
            round_number: Some(n),
            role: mixseek_core::Role::Leader,
            model: "fake:leader".into(),
            usage: mixseek_core::Usage {
                input_tokens: 10 * u64::from(n),
                ..mixseek_core::Usage::default()
            },
            latency_ms: 5,
            attempts: 1,
            cache_hit: false,
            error: error.map(str::to_string),
            at: at + chrono::Duration::microseconds(i64::from(n)),
        };
        let (a, b) = (call(1, None), call(2, Some("HTTP 503")));
        write_llm_calls(&conn, &[&a, &b]).expect("calls");
        write_llm_calls(&conn, &[&a]).expect("again");
        let mut stmt = conn
            .prepare(
                "SELECT id, team_id, round_number, input_tokens, error, epoch_us(called_at)
                 FROM llm_calls ORDER BY id",
            )
            .expect("prepare");
        type Row = (i64, Option<String>, i32, i64, Option<String>, i64);
        let rows: Vec<Row> = stmt
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .expect("query")
            .collect::<duckdb::Result<_>>()
            .expect("rows");
        let us = micros(&at);
        assert_eq!(
            rows,
            vec![
                (1, Some("t".into()), 1, 10, None, us + 1),
                (2, None, 2, 20, Some("HTTP 503".into()), us + 2),
                (3, Some("t".into()), 1, 10, None, us + 1),
            ]
        );
    }

    #[test]
    fn many_teams_finish_in_one_transaction() {
        let conn = Connection::open_in_memory().expect("db");
        crate::schema::migrate(&conn, std::path::Path::new(":memory:")).expect("schema");
        let mut keys = RoundKeys::default();
        let now = DateTime::from_timestamp(1_700_000_100, 0).unwrap_or_default();
        let masker = PiiMasker::disabled();
        let rounds = [
            record("a", 1, 10.0),
            record("a", 2, 20.0),
            record("b", 1, 30.0),
            record("c", 1, 40.0),
        ];
        let staged: Vec<StageRound<'_>> = rounds.iter().map(StageRound::Evaluated).collect();
        let staged = StagedRounds::build(&masker, &staged).expect("stage");
        write_rounds(&conn, &mut keys, &[&staged], now).expect("rounds");
        // a finishes twice (the last event counts), c without a best round (its round stays
        // unflagged), d with a best round that was never stored (it is stored now)
        let d1 = record("d", 1, 50.0);
        let (a1, a2, b1) = (
            entry(&rounds[0], None),
            entry(&rounds[1], None),
            entry(&rounds[2], None),
        );
        let d = entry(&d1, Some("judgment_stop"));
        let job = |team, best, reason| FinishJob {
            execution_id: "e",
            team_id: team,
            best,
            exit_reason: reason,
            masker: &masker,
        };
        let jobs = [
            job("a", Some(&a1), Some("max_rounds_reached")),
            job("b", Some(&b1), Some("judgment_stop")),
            job("c", None, Some("error")),
            job("d", Some(&d), None),
            job("a", Some(&a2), Some("max_rounds_reached")),
        ];
        finish_teams(&conn, &mut keys, &jobs, now).expect("finish");
        let mut stmt = conn
            .prepare(
                "SELECT team_id, round_number, final_submission, exit_reason FROM leader_board
                 ORDER BY team_id, round_number",
            )
            .expect("prepare");
        let rows: Vec<(String, i32, bool, Option<String>)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .expect("query")
            .collect::<duckdb::Result<_>>()
            .expect("rows");
        let row = |t: &str, n: i32, f: bool, e: Option<&str>| {
            (t.to_string(), n, f, e.map(str::to_string))
        };
        assert_eq!(
            rows,
            vec![
                row("a", 1, false, None),
                row("a", 2, true, Some("max_rounds_reached")),
                row("b", 1, true, Some("judgment_stop")),
                row("c", 1, false, None),
                row("d", 1, true, Some("judgment_stop")),
            ]
        );
    }
}
