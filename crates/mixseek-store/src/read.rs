//! The reads: the ranking fed into prompts, a team's rounds (prompts and `--resume`), round
//! detail, execution list and state, leaderboards and history. Every read uses its own cloned
//! connection, so reads run in parallel with each other and with the writer (MVCC: a read sees
//! what was committed when it started).

use crate::db::Store;
use crate::error::{Result, StoreError};
use crate::model::*;
use crate::values::{u32_of, u64_of};
use chrono::{DateTime, Utc};
use duckdb::types::ValueRef;
use duckdb::{Row, params};
use mixseek_core::{
    ExecutionStatus, ExecutionSummary, FailedTeamInfo, Judgment, LeaderboardEntry, RoundState,
    ScoreDetails, TeamId, TeamRef, Usage, UsageByRole,
};
use serde_json::Value;

/// A timestamp column (`TIMESTAMPTZ` or `TIMESTAMP`) as UTC.
pub(crate) fn ts(row: &Row<'_>, idx: usize) -> duckdb::Result<Option<DateTime<Utc>>> {
    match row.get_ref(idx)? {
        ValueRef::Null => Ok(None),
        ValueRef::Timestamp(unit, v) => Ok(DateTime::from_timestamp_micros(unit.to_micros(v))),
        other => Err(duckdb::Error::FromSqlConversionFailure(
            idx,
            other.data_type(),
            format!("expected a timestamp, got {:?}", other.data_type()).into(),
        )),
    }
}

fn epoch() -> DateTime<Utc> {
    DateTime::from_timestamp_micros(0).unwrap_or_default()
}

fn parse_json(text: Option<String>, what: &str) -> Result<Option<Value>> {
    text.filter(|t| !t.trim().is_empty())
        .map(|t| serde_json::from_str::<Value>(&t).map_err(|e| StoreError::decode(what, e)))
        .transpose()
}

/// `score_details` as our type; rows imported from the original may hold any object.
fn score_details_of(v: &Value, score: f64) -> ScoreDetails {
    serde_json::from_value(v.clone()).unwrap_or(ScoreDetails {
        overall_score: score,
        metrics: Vec::new(),
    })
}

fn usage_of(text: Option<String>) -> RoundUsage {
    text.and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn judgment_of(text: Option<String>) -> Option<Judgment> {
    text.and_then(|t| serde_json::from_str(&t).ok())
}

/// A `round_history h` row whose round has no `leader_board` row: not evaluated.
const NOT_EVALUATED: &str = "NOT EXISTS (SELECT 1 FROM leader_board l
    WHERE l.execution_id = h.execution_id AND l.team_id = h.team_id AND l.round_number = h.round_number)";

impl Store {
    fn query_rows<T>(
        &self,
        what: &str,
        sql: &str,
        params: impl duckdb::Params,
        f: impl FnMut(&Row<'_>) -> duckdb::Result<T>,
    ) -> Result<Vec<T>> {
        crate::values::query(&self.connection()?, what, sql, params, f)
    }

    /// The ranking shown in team prompts: each team's best score in the execution and its
    /// number of evaluated rounds, best first, ties by team id (ascending).
    pub fn ranking(&self, execution_id: &str) -> Result<Vec<RankingEntry>> {
        self.query_rows(
            "the ranking",
            "SELECT team_id, arg_max(team_name, round_number), max(score), count(*)
             FROM leader_board WHERE execution_id = ?
             GROUP BY team_id ORDER BY max(score) DESC, team_id ASC",
            [execution_id],
            |r| {
                Ok(RankingEntry {
                    team_id: r.get::<_, String>(0)?.into(),
                    team_name: r.get(1)?,
                    max_score: r.get(2)?,
                    total_rounds: u32_of(r.get(3)?),
                })
            },
        )
    }

    /// [`Store::ranking`] on tokio's blocking pool.
    pub async fn ranking_async(&self, execution_id: &str) -> Result<Vec<RankingEntry>> {
        let id = execution_id.to_string();
        self.read_async(move |s| s.ranking(&id)).await
    }

    fn rounds_where(
        &self,
        filter: &str,
        params: impl duckdb::Params,
    ) -> Result<Vec<CompletedRound>> {
        let sql = format!(
            "SELECT l.team_id, l.team_name, l.round_number, l.submission_content, l.score, l.score_details,
                 s.should_continue, s.reasoning, s.confidence_score, s.judgment, s.exit_reason,
                 s.round_started_at, s.round_ended_at, s.stage_usage, l.final_submission, l.exit_reason
             FROM leader_board l
             LEFT JOIN round_status s
               ON s.execution_id = l.execution_id AND s.team_id = l.team_id AND s.round_number = l.round_number
             WHERE {filter}
             ORDER BY l.team_id, l.round_number"
        );
        type Raw = (
            String,
            String,
            i64,
            String,
            f64,
            Option<String>,
            StoredDecision,
            Option<String>,
            Option<DateTime<Utc>>,
            Option<DateTime<Utc>>,
            Option<String>,
            bool,
        );
        let raw: Vec<Raw> = self.query_rows("rounds", &sql, params, |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                StoredDecision {
                    should_continue: r.get(6)?,
                    reasoning: r.get(7)?,
                    confidence_score: r.get(8)?,
                    judgment: None,
                    exit_reason: r.get::<_, Option<String>>(10)?.or(r.get(15)?),
                },
                r.get(9)?,
                ts(r, 11)?,
                ts(r, 12)?,
                r.get(13)?,
                r.get(14)?,
            ))
        })?;
        raw.into_iter()
            .map(
                |(
                    team_id,
                    team_name,
                    round,
                    submission,
                    score,
                    details,
                    mut decision,
                    judgment,
                    started,
                    ended,
                    usage,
                    final_submission,
                )| {
                    let details =
                        parse_json(details, "leader_board.score_details")?.unwrap_or(Value::Null);
                    decision.judgment = judgment_of(judgment);
                    let improvement_judgment = decision.judgment.as_ref().map(|j| Judgment {
                        should_continue: decision.should_continue.unwrap_or(j.should_continue),
                        reasoning: decision
                            .reasoning
                            .clone()
                            .unwrap_or_else(|| j.reasoning.clone()),
                        confidence_score: decision.confidence_score.unwrap_or(j.confidence_score),
                    });
                    Ok(CompletedRound {
                        team_id: team_id.into(),
                        team_name,
                        state: RoundState {
                            round_number: u32_of(round),
                            submission_content: submission,
                            evaluation_score: score,
                            score_details: score_details_of(&details, score),
                            improvement_judgment,
                            round_started_at: started.unwrap_or_else(epoch),
                            round_ended_at: ended.or(started).unwrap_or_else(epoch),
                            message_history: Vec::new(),
                        },
                        decision,
                        usage: usage_of(usage),
                        final_submission,
                    })
                },
            )
            .collect()
    }

    /// A team's committed rounds in one execution, in round order (for the submission history
    /// in prompts and for `--resume`).
    pub fn team_rounds(&self, execution_id: &str, team_id: &str) -> Result<Vec<CompletedRound>> {
        self.rounds_where(
            "l.execution_id = ? AND l.team_id = ?",
            [execution_id, team_id],
        )
    }

    /// [`Store::team_rounds`] on tokio's blocking pool.
    pub async fn team_rounds_async(
        &self,
        execution_id: &str,
        team_id: &str,
    ) -> Result<Vec<CompletedRound>> {
        let (e, t) = (execution_id.to_string(), team_id.to_string());
        self.read_async(move |s| s.team_rounds(&e, &t)).await
    }

    /// Every committed round of an execution, by team id then round (for `--resume`).
    pub fn completed_rounds(&self, execution_id: &str) -> Result<Vec<CompletedRound>> {
        self.rounds_where("l.execution_id = ?", [execution_id])
    }

    /// Everything stored about one round.
    pub fn round_detail(
        &self,
        execution_id: &str,
        team_id: &str,
        round_number: u32,
    ) -> Result<Option<RoundDetail>> {
        let mut v = self.details_where(
            "l.execution_id = ? AND l.team_id = ? AND l.round_number = ?",
            params![execution_id, team_id, round_number],
        )?;
        if v.is_empty() {
            v = self.unevaluated_details(
                execution_id,
                "h.execution_id = ? AND h.team_id = ? AND h.round_number = ?",
                params![execution_id, team_id, round_number],
            )?;
        }
        Ok(if v.is_empty() {
            None
        } else {
            Some(v.remove(0))
        })
    }

    /// One team's rounds in detail, in round order, the unevaluated ones included (the web
    /// UI's team page: one team's transcripts, not the whole execution's).
    pub fn team_round_details(
        &self,
        execution_id: &str,
        team_id: &str,
    ) -> Result<Vec<RoundDetail>> {
        let mut v = self.details_where(
            "l.execution_id = ? AND l.team_id = ?",
            [execution_id, team_id],
        )?;
        let unevaluated = self.unevaluated_details(
            execution_id,
            "h.execution_id = ? AND h.team_id = ?",
            [execution_id, team_id],
        )?;
        if !unevaluated.is_empty() {
            v.extend(unevaluated);
            v.sort_by_key(|r| r.round_number);
        }
        Ok(v)
    }

    /// The score of every evaluated round of an execution, by team id then round: what a
    /// chart needs, without the rounds' texts.
    pub fn round_scores(&self, execution_id: &str) -> Result<Vec<RoundScore>> {
        self.query_rows(
            "round scores",
            "SELECT team_id, team_name, round_number, score FROM leader_board
             WHERE execution_id = ? ORDER BY team_id, round_number",
            [execution_id],
            |r| {
                Ok(RoundScore {
                    team_id: r.get::<_, String>(0)?.into(),
                    team_name: r.get(1)?,
                    round_number: u32_of(r.get(2)?),
                    score: r.get(3)?,
                })
            },
        )
    }

    /// Every round of an execution in detail, by team id then round (the HTML report); the
    /// unevaluated ones included (`evaluated: false`).
    pub fn round_details(&self, execution_id: &str) -> Result<Vec<RoundDetail>> {
        let mut v = self.details_where("l.execution_id = ?", [execution_id])?;
        let unevaluated =
            self.unevaluated_details(execution_id, "h.execution_id = ?", [execution_id])?;
        if !unevaluated.is_empty() {
            v.extend(unevaluated);
            v.sort_by(|a, b| {
                (a.team_id.as_str(), a.round_number).cmp(&(b.team_id.as_str(), b.round_number))
            });
        }
        Ok(v)
    }

    /// Rounds of `execution_id` (`filter` over `round_history h`) that have a `round_history`
    /// row but no `leader_board` row: their leader answered, their evaluation failed or never
    /// finished. Their usage is that of their recorded LLM calls.
    fn unevaluated_details(
        &self,
        execution_id: &str,
        filter: &str,
        params: impl duckdb::Params,
    ) -> Result<Vec<RoundDetail>> {
        type Raw = (RoundDetail, Option<String>, Option<String>, Option<String>);
        let sql = format!(
            "SELECT h.execution_id, h.team_id, h.team_name, h.round_number,
                 coalesce(h.submission_content, ''), h.submission_sha256, h.prompt, h.prompt_sha256,
                 h.pii_masked, h.member_submissions_record, h.message_history, h.applied_injections
             FROM round_history h
             WHERE {filter} AND {NOT_EVALUATED}
             ORDER BY h.team_id, h.round_number"
        );
        let rows: Vec<Raw> = self.query_rows("unevaluated rounds", &sql, params, |r| {
            Ok((
                RoundDetail {
                    execution_id: r.get::<_, String>(0)?.into(),
                    team_id: r.get::<_, String>(1)?.into(),
                    team_name: r.get(2)?,
                    round_number: u32_of(r.get(3)?),
                    evaluated: false,
                    score: None,
                    score_details: Value::Null,
                    submission_content: r.get(4)?,
                    submission_sha256: r.get(5)?,
                    prompt: r.get(6)?,
                    prompt_sha256: r.get(7)?,
                    pii_masked: r.get(8)?,
                    decision: StoredDecision::default(),
                    final_submission: false,
                    exit_reason: None,
                    member_submissions: None,
                    leader_messages: Vec::new(),
                    usage: RoundUsage::default(),
                    round_started_at: None,
                    round_ended_at: None,
                    applied_injections: Vec::new(),
                },
                r.get(9)?,
                r.get(10)?,
                r.get(11)?,
            ))
        })?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let usage = self.call_usage_by_round(execution_id)?;
        rows.into_iter()
            .map(|(mut d, members, messages, injections)| {
                if let Some(text) = injections {
                    d.applied_injections = serde_json::from_str(&text)
                        .map_err(|e| StoreError::decode("round_history.applied_injections", e))?;
                }
                d.member_submissions =
                    parse_json(members, "round_history.member_submissions_record")?;
                d.leader_messages = match parse_json(messages, "round_history.message_history")? {
                    Some(Value::Array(items)) => items,
                    Some(other) => vec![other],
                    None => Vec::new(),
                };
                if d.prompt.is_none() {
                    d.prompt = crate::rounds::leader_prompt(&d.leader_messages).map(str::to_string);
                }
                if let Some(u) = usage.get(&(d.team_id.to_string(), d.round_number)) {
                    d.usage = u.clone();
                }
                Ok(d)
            })
            .collect()
    }

    /// Usage of an execution's recorded LLM calls per (team, round), by stage: leader and
    /// member calls are `agent`, evaluator calls `evaluation`, judgment calls `judgment`.
    fn call_usage_by_round(
        &self,
        execution_id: &str,
    ) -> Result<std::collections::HashMap<(String, u32), RoundUsage>> {
        type Raw = (String, i64, String, i64, i64, i64, i64, f64, i64);
        let rows: Vec<Raw> = self.query_rows(
            "the rounds' LLM calls",
            "SELECT team_id, round_number, role, sum(input_tokens)::BIGINT, sum(output_tokens)::BIGINT,
                 sum(cached_tokens)::BIGINT, sum(requests)::BIGINT, sum(cost_usd),
                 count(*) FILTER (WHERE NOT priced)
             FROM llm_calls
             WHERE execution_id = ? AND team_id IS NOT NULL AND round_number IS NOT NULL
             GROUP BY team_id, round_number, role",
            [execution_id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get::<_, Option<i64>>(3)?.unwrap_or(0),
                    r.get::<_, Option<i64>>(4)?.unwrap_or(0),
                    r.get::<_, Option<i64>>(5)?.unwrap_or(0),
                    r.get::<_, Option<i64>>(6)?.unwrap_or(0),
                    r.get::<_, Option<f64>>(7)?.unwrap_or(0.0),
                    r.get(8)?,
                ))
            },
        )?;
        let mut by_round: std::collections::HashMap<(String, u32), RoundUsage> =
            std::collections::HashMap::new();
        for (team, round, role, input, output, cached, requests, cost, unpriced) in rows {
            let usage = Usage {
                input_tokens: u64_of(input),
                output_tokens: u64_of(output),
                cached_tokens: u64_of(cached),
                requests: u64_of(requests),
                cost_usd: cost,
                unpriced_requests: u64_of(unpriced),
                requests_without_usage: 0,
            };
            let entry = by_round.entry((team, u32_of(round))).or_default();
            match role.as_str() {
                "evaluator" => entry.evaluation += usage,
                "judgment" => entry.judgment += usage,
                _ => entry.agent += usage,
            }
        }
        Ok(by_round)
    }

    fn details_where(&self, filter: &str, params: impl duckdb::Params) -> Result<Vec<RoundDetail>> {
        type Raw = (
            RoundDetail,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let sql = format!(
            "SELECT l.team_name, l.score, l.score_details, l.submission_content, l.submission_sha256,
                 h.prompt, h.prompt_sha256, (l.pii_masked OR coalesce(h.pii_masked, FALSE)),
                 s.should_continue, s.reasoning, s.confidence_score, s.judgment, coalesce(s.exit_reason, l.exit_reason),
                 l.final_submission, l.exit_reason, h.member_submissions_record, h.message_history, s.stage_usage,
                 s.round_started_at, s.round_ended_at, l.execution_id, l.team_id, l.round_number,
                 h.applied_injections
             FROM leader_board l
             LEFT JOIN round_status s
               ON s.execution_id = l.execution_id AND s.team_id = l.team_id AND s.round_number = l.round_number
             LEFT JOIN round_history h
               ON h.execution_id = l.execution_id AND h.team_id = l.team_id AND h.round_number = l.round_number
             WHERE {filter}
             ORDER BY l.team_id, l.round_number"
        );
        let rows: Vec<Raw> = self.query_rows("rounds", &sql, params, |r| {
            Ok((
                RoundDetail {
                    execution_id: r.get::<_, String>(20)?.into(),
                    team_id: r.get::<_, String>(21)?.into(),
                    team_name: r.get(0)?,
                    round_number: u32_of(r.get(22)?),
                    evaluated: true,
                    score: Some(r.get(1)?),
                    score_details: Value::Null,
                    submission_content: r.get(3)?,
                    submission_sha256: r.get(4)?,
                    prompt: r.get(5)?,
                    prompt_sha256: r.get(6)?,
                    pii_masked: r.get(7)?,
                    decision: StoredDecision {
                        should_continue: r.get(8)?,
                        reasoning: r.get(9)?,
                        confidence_score: r.get(10)?,
                        judgment: None,
                        exit_reason: r.get(12)?,
                    },
                    final_submission: r.get(13)?,
                    exit_reason: r.get(14)?,
                    member_submissions: None,
                    leader_messages: Vec::new(),
                    usage: RoundUsage::default(),
                    round_started_at: ts(r, 18)?,
                    round_ended_at: ts(r, 19)?,
                    applied_injections: Vec::new(),
                },
                r.get(2)?,
                r.get(11)?,
                r.get(15)?,
                r.get(16)?,
                r.get(17)?,
                r.get(23)?,
            ))
        })?;
        rows.into_iter()
            .map(
                |(mut d, details, judgment, members, messages, usage, injections)| {
                    if let Some(text) = injections {
                        d.applied_injections = serde_json::from_str(&text).map_err(|e| {
                            StoreError::decode("round_history.applied_injections", e)
                        })?;
                    }
                    d.score_details =
                        parse_json(details, "leader_board.score_details")?.unwrap_or(Value::Null);
                    d.decision.judgment = judgment_of(judgment);
                    d.member_submissions =
                        parse_json(members, "round_history.member_submissions_record")?;
                    d.leader_messages = match parse_json(messages, "round_history.message_history")?
                    {
                        Some(Value::Array(items)) => items,
                        Some(other) => vec![other],
                        None => Vec::new(),
                    };
                    if d.prompt.is_none() {
                        d.prompt =
                            crate::rounds::leader_prompt(&d.leader_messages).map(str::to_string);
                    }
                    d.usage = usage_of(usage);
                    Ok(d)
                },
            )
            .collect()
    }

    /// Stored executions, most recently started first (`limit` = None: all). Executions that
    /// only have rounds (imported from the original, which wrote its summary at the very end)
    /// are listed with status `incomplete`.
    pub fn executions(&self, limit: Option<usize>) -> Result<Vec<ExecutionRow>> {
        self.executions_where(None, limit)
    }

    fn executions_where(
        &self,
        id: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<ExecutionRow>> {
        let limit = limit.map(|n| format!("LIMIT {n}")).unwrap_or_default();
        let (lb_where, ids_where) = match id {
            Some(_) => ("WHERE execution_id = $1", "WHERE execution_id = $1"),
            None => ("", ""),
        };
        let sql = format!(
            "WITH lb AS (
                 SELECT execution_id, count(*) AS rounds, min(created_at) AS first_at FROM leader_board {lb_where}
                 GROUP BY execution_id),
             rs AS (
                 SELECT execution_id, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
                        sum(cost_usd) AS cost_usd
                 FROM round_status {lb_where} GROUP BY execution_id),
             ids AS (SELECT execution_id FROM execution_summary {ids_where} UNION SELECT execution_id FROM lb)
             SELECT ids.execution_id, coalesce(e.user_prompt, ''), coalesce(e.status, 'incomplete'),
                 coalesce(e.total_teams, 0), e.best_team_id, e.best_score, e.total_execution_time_seconds,
                 coalesce(e.created_at, lb.first_at), e.completed_at, coalesce(lb.rounds, 0),
                 CASE WHEN e.status IS NULL OR e.status = 'running' THEN coalesce(rs.input_tokens, 0) ELSE e.input_tokens END,
                 CASE WHEN e.status IS NULL OR e.status = 'running' THEN coalesce(rs.output_tokens, 0) ELSE e.output_tokens END,
                 CASE WHEN e.status IS NULL OR e.status = 'running' THEN coalesce(rs.cost_usd, 0) ELSE e.cost_usd END
             FROM ids
             LEFT JOIN execution_summary e ON e.execution_id = ids.execution_id
             LEFT JOIN lb ON lb.execution_id = ids.execution_id
             LEFT JOIN rs ON rs.execution_id = ids.execution_id
             ORDER BY coalesce(e.created_at, lb.first_at) DESC, ids.execution_id
             {limit}"
        );
        let map = |r: &Row<'_>| {
            Ok(ExecutionRow {
                execution_id: r.get::<_, String>(0)?.into(),
                user_prompt: r.get(1)?,
                status: r.get(2)?,
                total_teams: u32_of(r.get(3)?),
                best_team_id: r.get::<_, Option<String>>(4)?.map(TeamId::from),
                best_score: r.get(5)?,
                total_execution_time_seconds: r.get(6)?,
                created_at: ts(r, 7)?.unwrap_or_else(epoch),
                completed_at: ts(r, 8)?,
                rounds: u64_of(r.get(9)?),
                input_tokens: u64_of(r.get::<_, Option<i64>>(10)?.unwrap_or(0)),
                output_tokens: u64_of(r.get::<_, Option<i64>>(11)?.unwrap_or(0)),
                cost_usd: r.get::<_, Option<f64>>(12)?.unwrap_or(0.0),
            })
        };
        match id {
            Some(id) => self.query_rows("executions", &sql, [id], map),
            None => self.query_rows("executions", &sql, [], map),
        }
    }

    /// One execution's row (see [`Store::executions`]).
    pub fn execution(&self, execution_id: &str) -> Result<Option<ExecutionRow>> {
        // The list query is cheap enough; filter after resolving.
        Ok(self
            .executions(None)?
            .into_iter()
            .find(|e| e.execution_id == execution_id))
    }

    /// The most recently started execution, if any.
    pub fn latest_execution(&self) -> Result<Option<String>> {
        let rows = self.query_rows(
            "the latest execution",
            "SELECT execution_id FROM (
                 SELECT execution_id, created_at FROM execution_summary
                 UNION ALL
                 SELECT execution_id, min(created_at) FROM leader_board
                 WHERE execution_id NOT IN (SELECT execution_id FROM execution_summary)
                 GROUP BY execution_id)
             ORDER BY created_at DESC, execution_id LIMIT 1",
            [],
            |r| r.get::<_, String>(0),
        )?;
        Ok(rows.into_iter().next())
    }

    /// The full execution id for an id or a unique prefix of one.
    pub fn resolve_execution(&self, id_or_prefix: &str) -> Result<String> {
        let id = id_or_prefix.trim();
        if id.is_empty() {
            return Err(StoreError::ExecutionNotFound(id_or_prefix.to_string()));
        }
        let pattern = format!(
            "{}%",
            id.replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        let mut ids = self.query_rows(
            "execution ids",
            "SELECT DISTINCT execution_id FROM (
                 SELECT execution_id FROM execution_summary WHERE execution_id LIKE $1 ESCAPE '\\'
                 UNION SELECT execution_id FROM leader_board WHERE execution_id LIKE $1 ESCAPE '\\')
             ORDER BY execution_id LIMIT 11",
            [&pattern],
            |r| r.get::<_, String>(0),
        )?;
        if ids.iter().any(|x| x == id) {
            return Ok(id.to_string());
        }
        match ids.len() {
            0 => Err(StoreError::ExecutionNotFound(id.to_string())),
            1 => Ok(ids.remove(0)),
            _ => Err(StoreError::AmbiguousExecution {
                prefix: id.to_string(),
                candidates: ids,
            }),
        }
    }

    /// What `mixseek exec --resume` needs: status, config hash, teams, prompt.
    pub fn execution_state(&self, execution_id: &str) -> Result<Option<ExecutionState>> {
        type Raw = (ExecutionState, String);
        let rows: Vec<Raw> = self.query_rows(
            "the execution state",
            "SELECT execution_id, status, user_prompt, config_hash, max_rounds, teams, created_at, completed_at
             FROM execution_summary WHERE execution_id = ?",
            [execution_id],
            |r| {
                Ok((
                    ExecutionState {
                        execution_id: r.get::<_, String>(0)?.into(),
                        status: r.get(1)?,
                        user_prompt: r.get(2)?,
                        config_hash: r.get(3)?,
                        max_rounds: r.get::<_, Option<i64>>(4)?.map(u32_of),
                        teams: Vec::new(),
                        created_at: ts(r, 6)?.unwrap_or_else(epoch),
                        completed_at: ts(r, 7)?,
                    },
                    r.get(5)?,
                ))
            },
        )?;
        let Some((mut state, teams)) = rows.into_iter().next() else {
            return Ok(None);
        };
        state.teams = serde_json::from_str::<Vec<TeamRef>>(&teams)
            .map_err(|e| StoreError::decode("execution_summary.teams", e))?;
        Ok(Some(state))
    }

    /// What the earlier processes of an execution spent, for `mixseek exec --resume`: the
    /// usage of its recorded LLM calls by role, and its run time in seconds so far. The run
    /// time is the stored time of the last process that ended (interrupted); when the last
    /// process was killed (status still `running`), the span from that process's start to its
    /// last recorded LLM call or round end is added.
    pub fn prior_run(&self, execution_id: &str) -> Result<(UsageByRole, f64)> {
        type Calls = (String, i64, i64, i64, i64, f64, i64);
        let calls: Vec<Calls> = self.query_rows(
            "the execution's LLM usage",
            "SELECT role, sum(input_tokens)::BIGINT, sum(output_tokens)::BIGINT, sum(cached_tokens)::BIGINT,
                 sum(requests)::BIGINT, sum(cost_usd), count(*) FILTER (WHERE NOT priced)
             FROM llm_calls WHERE execution_id = ? GROUP BY role ORDER BY role",
            [execution_id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get::<_, Option<i64>>(1)?.unwrap_or(0),
                    r.get::<_, Option<i64>>(2)?.unwrap_or(0),
                    r.get::<_, Option<i64>>(3)?.unwrap_or(0),
                    r.get::<_, Option<i64>>(4)?.unwrap_or(0),
                    r.get::<_, Option<f64>>(5)?.unwrap_or(0.0),
                    r.get(6)?,
                ))
            },
        )?;
        let mut usage = UsageByRole::default();
        for (role, input, output, cached, requests, cost, unpriced) in calls {
            let Ok(role) = serde_json::from_value::<mixseek_core::Role>(Value::String(role)) else {
                continue;
            };
            usage.add(
                role,
                Usage {
                    input_tokens: u64_of(input),
                    output_tokens: u64_of(output),
                    cached_tokens: u64_of(cached),
                    requests: u64_of(requests),
                    cost_usd: cost,
                    unpriced_requests: u64_of(unpriced),
                    requests_without_usage: 0,
                },
            );
        }
        type Times = (
            String,
            Option<f64>,
            Option<DateTime<Utc>>,
            Option<DateTime<Utc>>,
        );
        let times: Vec<Times> = self.query_rows(
            "the execution's run time",
            "SELECT e.status, e.total_execution_time_seconds, e.updated_at,
                 greatest(
                     (SELECT max(called_at) FROM llm_calls WHERE execution_id = e.execution_id),
                     (SELECT max(round_ended_at) FROM round_status WHERE execution_id = e.execution_id))
             FROM execution_summary e WHERE e.execution_id = ?",
            [execution_id],
            |r| Ok((r.get(0)?, r.get(1)?, ts(r, 2)?, ts(r, 3)?)),
        )?;
        let elapsed = times
            .into_iter()
            .next()
            .map_or(0.0, |(status, stored, started, last)| {
                let mut t = stored.unwrap_or(0.0).max(0.0);
                if status == "running" {
                    if let (Some(started), Some(last)) = (started, last) {
                        t += ((last - started).num_milliseconds().max(0) as f64) / 1000.0;
                    }
                }
                t
            });
        Ok((usage, elapsed))
    }

    /// The stored `ExecutionSummary` of a finished execution (`None` while it runs or when
    /// unknown).
    pub fn execution_summary(&self, execution_id: &str) -> Result<Option<ExecutionSummary>> {
        type Raw = (
            String,
            String,
            String,
            Option<String>,
            Option<f64>,
            Option<f64>,
            String,
            Option<DateTime<Utc>>,
            Option<String>,
            Option<String>,
            Option<String>,
            String,
        );
        let rows: Vec<Raw> = self.query_rows(
            "the execution summary",
            "SELECT user_prompt, status, team_results, best_team_id, best_score, total_execution_time_seconds,
                 failed_teams_info, created_at, usage, usage_by_role, stop_reason, teams
             FROM execution_summary WHERE execution_id = ? AND status <> 'running'",
            [execution_id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    ts(r, 7)?,
                    r.get(8)?,
                    r.get(9)?,
                    r.get(10)?,
                    r.get(11)?,
                ))
            },
        )?;
        let Some((
            user_prompt,
            status,
            results,
            best_team_id,
            best_score,
            time,
            failed,
            created_at,
            usage,
            by_role,
            stop_reason,
            teams,
        )) = rows.into_iter().next()
        else {
            return Ok(None);
        };
        let team_results: Vec<LeaderboardEntry> = serde_json::from_str(&results)
            .map_err(|e| StoreError::decode("execution_summary.team_results", e))?;
        let failed_teams_info: Vec<FailedTeamInfo> = serde_json::from_str(&failed)
            .map_err(|e| StoreError::decode("execution_summary.failed_teams_info", e))?;
        // Teams that neither finished nor failed: the run stopped before they did.
        let stopped_team_ids: Vec<TeamId> = serde_json::from_str::<Vec<TeamRef>>(&teams)
            .unwrap_or_default()
            .into_iter()
            .map(|t| t.team_id)
            .filter(|id| {
                !team_results.iter().any(|e| &e.team_id == id)
                    && !failed_teams_info.iter().any(|f| &f.team_id == id)
            })
            .collect();
        Ok(Some(ExecutionSummary {
            execution_id: execution_id.into(),
            user_prompt,
            team_results,
            best_team_id: best_team_id.map(TeamId::from),
            best_score,
            total_execution_time_seconds: time.unwrap_or(0.0),
            failed_teams_info,
            created_at: created_at.unwrap_or_else(epoch),
            status: ExecutionStatus::parse(&status).ok_or_else(|| {
                StoreError::decode(
                    "execution_summary.status",
                    format!("unknown status `{status}`"),
                )
            })?,
            usage: usage
                .and_then(|u| serde_json::from_str::<Usage>(&u).ok())
                .unwrap_or_default(),
            usage_by_role: by_role
                .and_then(|u| serde_json::from_str::<UsageByRole>(&u).ok())
                .unwrap_or_default(),
            stop_reason,
            stopped_team_ids,
        }))
    }

    /// An execution with one line per team (configured teams first, in configuration order,
    /// then any other team that has rounds), and its latest arena, if any.
    pub fn execution_overview(&self, execution_id: &str) -> Result<ExecutionOverview> {
        let execution = self
            .execution(execution_id)?
            .ok_or_else(|| StoreError::ExecutionNotFound(execution_id.to_string()))?;
        type Extra = (Option<i64>, Option<String>, String, Option<String>);
        let extra: Vec<Extra> = self.query_rows(
            "the execution",
            "SELECT max_rounds, stop_reason, failed_teams_info, teams FROM execution_summary WHERE execution_id = ?",
            [execution_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?;
        let (max_rounds, stop_reason, failed, configured) =
            extra
                .into_iter()
                .next()
                .unwrap_or((None, None, "[]".into(), None));
        let failed: Vec<FailedTeamInfo> = serde_json::from_str(&failed).unwrap_or_default();
        let configured: Vec<TeamRef> = configured
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        let rounds = self.completed_rounds(execution_id)?;
        let mut teams: Vec<TeamOverview> = configured
            .iter()
            .map(|t| TeamOverview {
                team_id: t.team_id.clone(),
                team_name: t.team_name.clone(),
                rounds: 0,
                unevaluated_rounds: 0,
                best_score: None,
                best_round: None,
                final_submission: false,
                exit_reason: None,
                error_message: None,
                usage: Usage::default(),
            })
            .collect();
        for r in &rounds {
            let idx = match teams.iter().position(|t| t.team_id == r.team_id) {
                Some(i) => i,
                None => {
                    teams.push(TeamOverview {
                        team_id: r.team_id.clone(),
                        team_name: r.team_name.clone(),
                        rounds: 0,
                        unevaluated_rounds: 0,
                        best_score: None,
                        best_round: None,
                        final_submission: false,
                        exit_reason: None,
                        error_message: None,
                        usage: Usage::default(),
                    });
                    teams.len() - 1
                }
            };
            let t = &mut teams[idx];
            t.team_name = r.team_name.clone();
            t.rounds += 1;
            t.usage += r.usage.total();
            let better = match (t.final_submission, r.final_submission) {
                (false, true) => true,
                (true, false) => false,
                _ => t.best_score.is_none_or(|b| r.state.evaluation_score >= b),
            };
            if better {
                t.best_score = Some(r.state.evaluation_score);
                t.best_round = Some(r.state.round_number);
                t.final_submission = r.final_submission;
            }
            if r.final_submission {
                t.exit_reason = r.decision.exit_reason.clone();
            }
        }
        let unevaluated: Vec<(String, String, i64)> = self.query_rows(
            "unevaluated rounds",
            &format!(
                "SELECT h.team_id, arg_max(h.team_name, h.round_number), count(*) FROM round_history h
                 WHERE h.execution_id = ? AND {NOT_EVALUATED}
                 GROUP BY h.team_id ORDER BY h.team_id"
            ),
            [execution_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        for (team_id, team_name, n) in unevaluated {
            let idx = match teams.iter().position(|t| t.team_id == team_id) {
                Some(i) => i,
                None => {
                    teams.push(TeamOverview {
                        team_id: team_id.into(),
                        team_name,
                        rounds: 0,
                        unevaluated_rounds: 0,
                        best_score: None,
                        best_round: None,
                        final_submission: false,
                        exit_reason: None,
                        error_message: None,
                        usage: Usage::default(),
                    });
                    teams.len() - 1
                }
            };
            teams[idx].unevaluated_rounds = u32_of(n);
        }
        for f in failed {
            if let Some(t) = teams.iter_mut().find(|t| t.team_id == f.team_id) {
                t.error_message = Some(f.error_message);
            }
        }
        let usage = if execution.status == "running" || execution.status == "incomplete" {
            teams.iter().map(|t| t.usage).sum()
        } else {
            Usage {
                input_tokens: execution.input_tokens,
                output_tokens: execution.output_tokens,
                cost_usd: execution.cost_usd,
                ..self
                    .execution_summary(execution_id)?
                    .map(|s| s.usage)
                    .unwrap_or_default()
            }
        };
        Ok(ExecutionOverview {
            execution,
            max_rounds: max_rounds.map(u32_of),
            stop_reason,
            teams,
            usage,
            agreement: crate::agreement::metric_agreements(&rounds),
            arena: self.latest_arena(execution_id)?,
            themes: self.latest_theme_analysis(execution_id)?,
        })
    }

    /// A leaderboard: per execution, each team's chosen round (its final submission, else its
    /// best score, ties → the later round); across executions (`All`), each team id's best
    /// round, ties → the earlier round. Rows are ranked by score, ties by team id. Returns the
    /// execution id shown (`None` for `All`, or when there is no execution at all).
    pub fn leaderboard(
        &self,
        scope: &LeaderboardScope,
    ) -> Result<(Option<String>, Vec<LeaderboardRow>)> {
        // Per execution: a window over the execution's few rows. Across executions: aggregate
        // first (one hash aggregation over the table), then pick among the few rows that reach
        // each team's best score — no sort of the whole table.
        let (exec, sql) = match scope {
            LeaderboardScope::All => (
                None,
                "WITH agg AS (
                     SELECT team_id, max(score) AS best, count(*) AS total_rounds,
                         arg_max(team_name, created_at) AS latest_name
                     FROM leader_board GROUP BY team_id),
                 cand AS (
                     SELECT l.team_id, l.score, l.round_number, l.execution_id, l.final_submission, l.exit_reason,
                         row_number() OVER (PARTITION BY l.team_id
                             ORDER BY l.created_at, l.execution_id, l.round_number) AS rn
                     FROM leader_board l JOIN agg a ON a.team_id = l.team_id AND l.score = a.best)
                 SELECT c.team_id, a.latest_name, c.score, c.round_number, a.total_rounds, c.execution_id,
                     c.final_submission, c.exit_reason, s.round_ended_at
                 FROM cand c
                 JOIN agg a ON a.team_id = c.team_id
                 LEFT JOIN round_status s
                   ON s.execution_id = c.execution_id AND s.team_id = c.team_id AND s.round_number = c.round_number
                 WHERE c.rn = 1
                 ORDER BY c.score DESC, c.team_id ASC"
                    .to_string(),
            ),
            LeaderboardScope::Latest | LeaderboardScope::Execution(_) => {
                let id = match scope {
                    LeaderboardScope::Execution(id) => self.resolve_execution(id)?,
                    _ => match self.latest_execution()? {
                        Some(id) => id,
                        None => return Ok((None, Vec::new())),
                    },
                };
                (
                    Some(id),
                    "WITH best AS (
                         SELECT l.team_id, l.score, l.round_number, l.execution_id, l.final_submission, l.exit_reason,
                             row_number() OVER (PARTITION BY l.team_id
                                 ORDER BY l.final_submission DESC, l.score DESC, l.round_number DESC) AS rn,
                             count(*) OVER (PARTITION BY l.team_id) AS total_rounds,
                             arg_max(l.team_name, l.round_number) OVER (PARTITION BY l.team_id) AS latest_name
                         FROM leader_board l WHERE l.execution_id = $1)
                     SELECT b.team_id, b.latest_name, b.score, b.round_number, b.total_rounds, b.execution_id,
                         b.final_submission, b.exit_reason, s.round_ended_at
                     FROM best b
                     LEFT JOIN round_status s
                       ON s.execution_id = b.execution_id AND s.team_id = b.team_id AND s.round_number = b.round_number
                     WHERE b.rn = 1
                     ORDER BY b.score DESC, b.team_id ASC"
                        .to_string(),
                )
            }
        };
        let mapper = |r: &Row<'_>| {
            Ok(LeaderboardRow {
                rank: 0,
                team_id: r.get::<_, String>(0)?.into(),
                team_name: r.get(1)?,
                score: r.get(2)?,
                round_number: u32_of(r.get(3)?),
                total_rounds: u32_of(r.get(4)?),
                execution_id: r.get::<_, String>(5)?.into(),
                final_submission: r.get(6)?,
                exit_reason: r.get(7)?,
                round_ended_at: ts(r, 8)?,
            })
        };
        let mut rows = match &exec {
            Some(id) => self.query_rows("the leaderboard", &sql, [id], mapper)?,
            None => self.query_rows("the leaderboard", &sql, [], mapper)?,
        };
        for (i, row) in rows.iter_mut().enumerate() {
            row.rank = u32::try_from(i + 1).unwrap_or(u32::MAX);
        }
        Ok((exec, rows))
    }

    /// The rounds of an execution (optionally one team), by team id then round: the evaluated
    /// ones, and those whose leader answered but that have no evaluation (`evaluated: false`,
    /// no score or decision; tokens and cost from their recorded LLM calls).
    pub fn history(&self, execution_id: &str, team_id: Option<&str>) -> Result<Vec<HistoryRow>> {
        let sql = format!(
            "SELECT * FROM (
                 SELECT l.execution_id, l.team_id, l.team_name, l.round_number, l.score, TRUE AS evaluated,
                     s.should_continue, s.reasoning, s.confidence_score, l.final_submission,
                     coalesce(s.exit_reason, l.exit_reason) AS exit_reason,
                     coalesce(s.input_tokens, 0)::BIGINT AS input_tokens,
                     coalesce(s.output_tokens, 0)::BIGINT AS output_tokens,
                     coalesce(s.cost_usd, 0)::DOUBLE AS cost_usd, s.round_started_at, s.round_ended_at
                 FROM leader_board l
                 LEFT JOIN round_status s
                   ON s.execution_id = l.execution_id AND s.team_id = l.team_id AND s.round_number = l.round_number
                 WHERE l.execution_id = $1 AND ($2 IS NULL OR l.team_id = $2)
                 UNION ALL
                 SELECT h.execution_id, h.team_id, h.team_name, h.round_number, NULL, FALSE,
                     NULL, NULL, NULL, FALSE, NULL,
                     coalesce(c.input_tokens, 0)::BIGINT, coalesce(c.output_tokens, 0)::BIGINT,
                     coalesce(c.cost_usd, 0)::DOUBLE, NULL, NULL
                 FROM round_history h
                 LEFT JOIN (
                     SELECT team_id, round_number, sum(input_tokens) AS input_tokens,
                         sum(output_tokens) AS output_tokens, sum(cost_usd) AS cost_usd
                     FROM llm_calls WHERE execution_id = $1 GROUP BY team_id, round_number) c
                   ON c.team_id = h.team_id AND c.round_number = h.round_number
                 WHERE h.execution_id = $1 AND ($2 IS NULL OR h.team_id = $2) AND {NOT_EVALUATED})
             ORDER BY team_id, round_number"
        );
        self.query_rows("the history", &sql, params![execution_id, team_id], |r| {
            Ok(HistoryRow {
                execution_id: r.get::<_, String>(0)?.into(),
                team_id: r.get::<_, String>(1)?.into(),
                team_name: r.get(2)?,
                round_number: u32_of(r.get(3)?),
                score: r.get(4)?,
                evaluated: r.get(5)?,
                should_continue: r.get(6)?,
                reasoning: r.get(7)?,
                confidence_score: r.get(8)?,
                final_submission: r.get(9)?,
                exit_reason: r.get(10)?,
                input_tokens: u64_of(r.get(11)?),
                output_tokens: u64_of(r.get(12)?),
                cost_usd: r.get(13)?,
                round_started_at: ts(r, 14)?,
                round_ended_at: ts(r, 15)?,
            })
        })
    }

    /// Number of rows of a table (diagnostics and tests). Only our table names are accepted.
    pub fn count_rows(&self, table: &str) -> Result<u64> {
        if !crate::schema::TABLES.contains(&table) {
            return Err(StoreError::Invalid(format!("unknown table `{table}`")));
        }
        let conn = self.connection()?;
        conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| {
            r.get::<_, i64>(0)
        })
        .map(u64_of)
        .map_err(StoreError::db(format!("counting {table}")))
    }
}
