//! The write statements. Each function runs inside a transaction the caller opened (the writer
//! thread commits a whole batch at once) and is idempotent: rounds are upserted on
//! (execution_id, team_id, round_number), the execution row on execution_id.
//!
//! Rounds and LLM calls go through an Appender into connection-local staging tables and from
//! there into the real tables with one `INSERT … SELECT … ON CONFLICT DO UPDATE` per table:
//! the same code path for one round and for a batch of thousands.

use crate::error::{Result, StoreError};
use crate::model::RoundUsage;
use crate::pii::{PiiMasker, sha256_hex};
use chrono::{DateTime, Utc};
use duckdb::{Connection, params};
use mixseek_core::{
    Decision, ExecutionSummary, LeaderboardEntry, LlmCallRecord, RoundRecord, TeamRef, Usage,
};
use std::collections::HashMap;

/// SQL for a bound timestamp parameter: epoch microseconds (UTC) → `TIMESTAMPTZ`.
pub(crate) const TS: &str = "make_timestamp(CAST(? AS BIGINT))::TIMESTAMPTZ";

pub(crate) fn micros(t: &DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

fn u64_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn json_text<T: serde::Serialize>(v: &T, what: &str) -> Result<String> {
    serde_json::to_string(v)
        .map_err(|e| StoreError::Invalid(format!("cannot serialize {what}: {e}")))
}

/// Masks a JSON document's strings and serializes it.
fn masked_json(masker: &PiiMasker, mut v: serde_json::Value, what: &str) -> Result<(String, bool)> {
    let changed = masker.mask_json(&mut v);
    Ok((json_text(&v, what)?, changed))
}

const STAGE_ROUNDS: &str = "
CREATE TEMP TABLE IF NOT EXISTS stage_rounds (
    execution_id VARCHAR, team_id VARCHAR, team_name VARCHAR, round_number INTEGER,
    message_history VARCHAR, member_submissions_record VARCHAR, prompt VARCHAR, prompt_sha256 VARCHAR,
    submission_content VARCHAR, submission_sha256 VARCHAR, pii_masked BOOLEAN,
    score DOUBLE, score_details VARCHAR, started_us BIGINT, ended_us BIGINT, now_us BIGINT,
    input_tokens BIGINT, output_tokens BIGINT, cached_tokens BIGINT, requests BIGINT, cost_usd DOUBLE,
    stage_usage VARCHAR
)";

const STAGE_CALLS: &str = "
CREATE TEMP TABLE IF NOT EXISTS stage_llm_calls (
    execution_id VARCHAR, team_id VARCHAR, round_number INTEGER, role VARCHAR, model VARCHAR,
    input_tokens BIGINT, output_tokens BIGINT, cached_tokens BIGINT, requests BIGINT, cost_usd DOUBLE,
    priced BOOLEAN, latency_ms BIGINT, attempts INTEGER, cache_hit BOOLEAN, error VARCHAR, called_us BIGINT
)";

/// Writes the `round_history`, `leader_board` and `round_status` rows of each record (upserts;
/// the last record wins when a batch holds the same key twice).
pub(crate) fn write_rounds(
    conn: &Connection,
    masker: &PiiMasker,
    records: &[&RoundRecord],
    now: DateTime<Utc>,
) -> Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    let mut last: HashMap<(&str, &str, u32), usize> = HashMap::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        if r.round_number == 0 {
            return Err(StoreError::Invalid(format!(
                "round_number must be >= 1 (team {}, execution {})",
                r.team_id, r.execution_id
            )));
        }
        if !r.score_details.overall_score.is_finite() {
            return Err(StoreError::Invalid(format!(
                "score must be a finite number, got {} (team {}, round {})",
                r.score_details.overall_score, r.team_id, r.round_number
            )));
        }
        last.insert(
            (r.execution_id.as_str(), r.team_id.as_str(), r.round_number),
            i,
        );
    }
    conn.execute_batch(STAGE_ROUNDS)
        .map_err(StoreError::db("creating the staging table"))?;
    conn.execute_batch("DELETE FROM stage_rounds")
        .map_err(StoreError::db("clearing the staging table"))?;
    let now_us = micros(&now);
    {
        let mut app = conn
            .appender_to_catalog_and_db("stage_rounds", "temp", "main")
            .map_err(StoreError::db("opening the round appender"))?;
        for (i, r) in records.iter().enumerate() {
            if last.get(&(r.execution_id.as_str(), r.team_id.as_str(), r.round_number)) != Some(&i)
            {
                continue;
            }
            let submission = masker.mask(&r.submission_content);
            let prompt = masker.mask(&r.prompt);
            let (messages, m1) = if masker.is_enabled() {
                masked_json(
                    masker,
                    serde_json::Value::Array(r.leader_messages.clone()),
                    "leader messages",
                )?
            } else {
                (json_text(&r.leader_messages, "leader messages")?, false)
            };
            let (members, m2) =
                masked_json(masker, r.member_submissions.to_json(), "member submissions")?;
            let (details, m3) = if masker.is_enabled() {
                let v = serde_json::to_value(&r.score_details).map_err(|e| {
                    StoreError::Invalid(format!("cannot serialize score_details: {e}"))
                })?;
                masked_json(masker, v, "score_details")?
            } else {
                (json_text(&r.score_details, "score_details")?, false)
            };
            // What masking keeps instead of the original text: its SHA-256.
            let (prompt_sha, submission_sha) = if masker.is_enabled() {
                (
                    Some(sha256_hex(&r.prompt)),
                    Some(sha256_hex(&r.submission_content)),
                )
            } else {
                (None, None)
            };
            let pii_masked = m1
                || m2
                || m3
                || matches!(submission, std::borrow::Cow::Owned(_))
                || matches!(prompt, std::borrow::Cow::Owned(_));
            let usage = RoundUsage {
                agent: r.agent_usage,
                evaluation: r.evaluation_usage,
                judgment: Usage::default(),
            };
            let total = usage.total();
            let stage_usage = json_text(&usage, "usage")?;
            app.append_row(params![
                r.execution_id,
                r.team_id,
                r.team_name,
                r.round_number,
                messages,
                members,
                prompt.as_ref(),
                prompt_sha,
                submission.as_ref(),
                submission_sha,
                pii_masked,
                r.score_details.overall_score,
                details,
                micros(&r.round_started_at),
                micros(&r.round_ended_at),
                now_us,
                u64_i64(total.input_tokens),
                u64_i64(total.output_tokens),
                u64_i64(total.cached_tokens),
                u64_i64(total.requests),
                total.cost_usd,
                stage_usage,
            ])
            .map_err(StoreError::db("staging a round"))?;
        }
        app.flush()
            .map_err(StoreError::db("flushing the round appender"))?;
    }
    let statements = [
        (
            "writing round_history",
            "INSERT INTO round_history (execution_id, team_id, team_name, round_number, message_history,
                 member_submissions_record, prompt, prompt_sha256, pii_masked, created_at, updated_at)
             SELECT execution_id, team_id, team_name, round_number, message_history, member_submissions_record,
                 prompt, prompt_sha256, pii_masked, make_timestamp(now_us)::TIMESTAMPTZ, make_timestamp(now_us)::TIMESTAMPTZ
             FROM stage_rounds
             ON CONFLICT (execution_id, team_id, round_number) DO UPDATE SET
                 message_history = excluded.message_history,
                 member_submissions_record = excluded.member_submissions_record,
                 prompt = excluded.prompt, prompt_sha256 = excluded.prompt_sha256,
                 pii_masked = excluded.pii_masked, updated_at = excluded.updated_at",
        ),
        (
            "writing leader_board",
            "INSERT INTO leader_board (execution_id, team_id, team_name, round_number, submission_content,
                 submission_format, score, score_details, final_submission, exit_reason, created_at, updated_at,
                 submission_sha256, pii_masked)
             SELECT execution_id, team_id, team_name, round_number, submission_content, 'md', score, score_details,
                 FALSE, NULL, make_timestamp(now_us)::TIMESTAMPTZ, make_timestamp(now_us)::TIMESTAMPTZ,
                 submission_sha256, pii_masked
             FROM stage_rounds
             ON CONFLICT (execution_id, team_id, round_number) DO UPDATE SET
                 submission_content = excluded.submission_content, score = excluded.score,
                 score_details = excluded.score_details, submission_sha256 = excluded.submission_sha256,
                 pii_masked = excluded.pii_masked, updated_at = excluded.updated_at",
        ),
        (
            "writing round_status",
            "INSERT INTO round_status (execution_id, team_id, team_name, round_number, round_started_at,
                 round_ended_at, created_at, updated_at, input_tokens, output_tokens, cached_tokens, requests,
                 cost_usd, stage_usage)
             SELECT execution_id, team_id, team_name, round_number, make_timestamp(started_us)::TIMESTAMPTZ,
                 make_timestamp(ended_us)::TIMESTAMPTZ, make_timestamp(now_us)::TIMESTAMPTZ,
                 make_timestamp(now_us)::TIMESTAMPTZ, input_tokens, output_tokens, cached_tokens, requests,
                 cost_usd, stage_usage
             FROM stage_rounds
             ON CONFLICT (execution_id, team_id, round_number) DO UPDATE SET
                 round_ended_at = excluded.round_ended_at, updated_at = excluded.updated_at,
                 input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,
                 cached_tokens = excluded.cached_tokens, requests = excluded.requests,
                 cost_usd = excluded.cost_usd, stage_usage = excluded.stage_usage",
        ),
    ];
    for (what, sql) in statements {
        conn.execute(sql, []).map_err(StoreError::db(what))?;
    }
    Ok(())
}

/// Stores the continuation decision of a round (`round_status`), adding the judgment's usage
/// to the round's totals. A round that is not stored is an error.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_decision(
    conn: &Connection,
    masker: &PiiMasker,
    execution_id: &str,
    team_id: &str,
    round_number: u32,
    decision: &Decision,
    now: DateTime<Utc>,
) -> Result<()> {
    if let Some(c) = decision.confidence_score
        && !(0.0..=1.0).contains(&c)
    {
        return Err(StoreError::Invalid(format!(
            "confidence_score must be between 0.0 and 1.0, got {c}"
        )));
    }
    let stored: Option<Option<String>> = conn
        .query_row(
            "SELECT stage_usage FROM round_status WHERE execution_id = ? AND team_id = ? AND round_number = ?",
            params![execution_id, team_id, round_number],
            |r| r.get::<_, Option<String>>(0),
        )
        .map(Some)
        .or_else(|e| if matches!(e, duckdb::Error::QueryReturnedNoRows) { Ok(None) } else { Err(e) })
        .map_err(StoreError::db("reading round_status"))?;
    let Some(stage_usage) = stored else {
        return Err(StoreError::Invalid(format!(
            "cannot store the decision of round {round_number} of team {team_id} (execution {execution_id}): \
             the round itself is not stored"
        )));
    };
    let mut usage: RoundUsage = stage_usage
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| StoreError::decode("round_status.stage_usage", e))?
        .unwrap_or_default();
    usage.judgment = decision.usage;
    let total = usage.total();
    let reasoning = masker.mask(&decision.reasoning);
    let judgment = match &decision.judgment {
        Some(j) => {
            let (text, _) = masked_json(
                masker,
                serde_json::to_value(j).unwrap_or_default(),
                "judgment",
            )?;
            Some(text)
        }
        None => None,
    };
    conn.execute(
        &format!(
            "UPDATE round_status SET should_continue = ?, reasoning = ?, confidence_score = ?, judgment = ?,
                 exit_reason = ?, input_tokens = ?, output_tokens = ?, cached_tokens = ?, requests = ?,
                 cost_usd = ?, stage_usage = ?, updated_at = {TS}
             WHERE execution_id = ? AND team_id = ? AND round_number = ?"
        ),
        params![
            decision.should_continue,
            reasoning.as_ref(),
            decision.confidence_score,
            judgment,
            decision.exit_reason.map(|r| r.as_str()),
            u64_i64(total.input_tokens),
            u64_i64(total.output_tokens),
            u64_i64(total.cached_tokens),
            u64_i64(total.requests),
            total.cost_usd,
            json_text(&usage, "usage")?,
            micros(&now),
            execution_id,
            team_id,
            round_number,
        ],
    )
    .map_err(StoreError::db("writing round_status"))?;
    Ok(())
}

/// The execution row at the start of a run (status `running`). A resumed run keeps the
/// original prompt and start time.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_execution(
    conn: &Connection,
    masker: &PiiMasker,
    execution_id: &str,
    user_prompt: &str,
    teams: &[TeamRef],
    config_hash: &str,
    max_rounds: u32,
    at: DateTime<Utc>,
) -> Result<()> {
    let prompt = masker.mask(user_prompt);
    let masked = matches!(prompt, std::borrow::Cow::Owned(_));
    let (teams_json, teams_masked) = masked_json(
        masker,
        serde_json::to_value(teams).unwrap_or_default(),
        "teams",
    )?;
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
    Ok(())
}

/// Marks the team's best round `final_submission = TRUE` with the exit reason (clearing the
/// flag on its other rounds). The entry is upserted if its round is somehow missing.
pub(crate) fn finish_team(
    conn: &Connection,
    masker: &PiiMasker,
    execution_id: &str,
    team_id: &str,
    best: Option<&LeaderboardEntry>,
    exit_reason: Option<&str>,
    now: DateTime<Utc>,
) -> Result<()> {
    conn.execute(
        "UPDATE leader_board SET final_submission = FALSE, exit_reason = NULL
         WHERE execution_id = ? AND team_id = ? AND (final_submission OR exit_reason IS NOT NULL)",
        params![execution_id, team_id],
    )
    .map_err(StoreError::db("clearing final_submission"))?;
    let Some(best) = best else {
        return Ok(());
    };
    let reason = best.exit_reason.as_deref().or(exit_reason);
    let n = conn
        .execute(
            &format!(
                "UPDATE leader_board SET final_submission = TRUE, exit_reason = ?, updated_at = {TS}
                 WHERE execution_id = ? AND team_id = ? AND round_number = ?"
            ),
            params![
                reason,
                micros(&now),
                execution_id,
                team_id,
                best.round_number
            ],
        )
        .map_err(StoreError::db("marking the final submission"))?;
    if n == 0 {
        tracing::warn!(
            execution_id,
            team_id,
            round = best.round_number,
            "final round was not stored; storing it now"
        );
        let submission = masker.mask(&best.submission_content);
        let (details, _) = masked_json(
            masker,
            serde_json::to_value(&best.score_details).unwrap_or_default(),
            "score_details",
        )?;
        conn.execute(
            &format!(
                "INSERT INTO leader_board (execution_id, team_id, team_name, round_number, submission_content,
                     submission_format, score, score_details, final_submission, exit_reason, created_at,
                     updated_at, submission_sha256, pii_masked)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, TRUE, ?, {TS}, {TS}, ?, ?)"
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
        "team_results",
    )?;
    let (failed, m2) = masked_json(
        masker,
        serde_json::to_value(&s.failed_teams_info).unwrap_or_default(),
        "failed_teams_info",
    )?;
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
            s.execution_id,
            prompt.as_ref(),
            s.status.as_str(),
            results,
            u64_i64(s.total_teams() as u64),
            s.best_team_id,
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

/// Appends LLM calls (`llm_calls`).
pub(crate) fn write_llm_calls(conn: &Connection, calls: &[&LlmCallRecord]) -> Result<()> {
    if calls.is_empty() {
        return Ok(());
    }
    conn.execute_batch(STAGE_CALLS)
        .map_err(StoreError::db("creating the staging table"))?;
    conn.execute_batch("DELETE FROM stage_llm_calls")
        .map_err(StoreError::db("clearing the staging table"))?;
    {
        let mut app = conn
            .appender_to_catalog_and_db("stage_llm_calls", "temp", "main")
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
                micros(&c.at),
            ])
            .map_err(StoreError::db("staging an LLM call"))?;
        }
        app.flush()
            .map_err(StoreError::db("flushing the llm_calls appender"))?;
    }
    conn.execute(
        "INSERT INTO llm_calls (execution_id, team_id, round_number, role, model, input_tokens, output_tokens,
             cached_tokens, requests, cost_usd, priced, latency_ms, attempts, cache_hit, error, called_at)
         SELECT execution_id, team_id, round_number, role, model, input_tokens, output_tokens, cached_tokens,
             requests, cost_usd, priced, latency_ms, attempts, cache_hit, error, make_timestamp(called_us)::TIMESTAMPTZ
         FROM stage_llm_calls",
        [],
    )
    .map_err(StoreError::db("writing llm_calls"))?;
    Ok(())
}
