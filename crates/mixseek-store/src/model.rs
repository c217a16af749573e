//! What the reads return. Everything serializes to JSON (the `-f json` output of the report
//! commands) with UTC timestamps in the core crate's format.

use chrono::{DateTime, Utc};
use mixseek_core::{AppliedInjection, ExecutionId, Judgment, RoundState, TeamId, TeamRef, Usage};
use serde::Serialize;
use serde_json::Value;

/// One line of the ranking shown in team prompts: a team's best score in one execution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankingEntry {
    pub team_id: TeamId,
    /// The name of the team's latest round (a rename does not split the team).
    pub team_name: String,
    pub max_score: f64,
    pub total_rounds: u32,
}

/// What `mixseek exec --resume` needs to know about a stored execution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutionState {
    pub execution_id: ExecutionId,
    /// `running` (started, not finished — or interrupted without a summary), `completed`,
    /// `partial_failure`, `failed`, `interrupted`.
    pub status: String,
    pub user_prompt: String,
    pub config_hash: Option<String>,
    pub max_rounds: Option<u32>,
    pub teams: Vec<TeamRef>,
    #[serde(with = "mixseek_core::time::utc")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "mixseek_core::time::utc_opt")]
    pub completed_at: Option<DateTime<Utc>>,
}

/// The continuation decision stored with a round (`round_status`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StoredDecision {
    /// `None` while the round is not judged yet.
    pub should_continue: Option<bool>,
    pub reasoning: Option<String>,
    pub confidence_score: Option<f64>,
    /// The judgment LLM's own answer, when it was asked.
    pub judgment: Option<Judgment>,
    /// Set when the team stopped after this round.
    pub exit_reason: Option<String>,
}

/// Usage of one round by stage, and the total.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct RoundUsage {
    pub agent: Usage,
    pub evaluation: Usage,
    #[serde(default)]
    pub judgment: Usage,
}

impl RoundUsage {
    pub fn total(&self) -> Usage {
        [self.agent, self.evaluation, self.judgment]
            .into_iter()
            .sum()
    }
}

/// A committed round of one team, as prompts and `--resume` need it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompletedRound {
    pub team_id: TeamId,
    pub team_name: String,
    pub state: RoundState,
    pub decision: StoredDecision,
    pub usage: RoundUsage,
    pub final_submission: bool,
}

/// Everything stored about one round (`mixseek show ID --team T --round N`).
///
/// A round that is not evaluated (its leader answered, its evaluation failed or never
/// finished: a `round_history` row without `leader_board` / `round_status` rows) has
/// `evaluated: false`, no score, `score_details` null, no decision and no start/end time; its
/// usage is that of its recorded LLM calls (`llm_calls`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundDetail {
    pub execution_id: ExecutionId,
    pub team_id: TeamId,
    pub team_name: String,
    pub round_number: u32,
    /// False for a round whose leader answered but that has no evaluation.
    pub evaluated: bool,
    /// `None` when not evaluated.
    pub score: Option<f64>,
    /// `{"overall_score", "metrics": [{"metric_name", "score", "evaluator_comment", ...}]}`
    /// (any JSON object for rows imported from the original; null when not evaluated).
    pub score_details: Value,
    pub submission_content: String,
    pub submission_sha256: Option<String>,
    /// The rendered team prompt the leader received (ours; absent for imported rows).
    pub prompt: Option<String>,
    pub prompt_sha256: Option<String>,
    pub pii_masked: bool,
    pub decision: StoredDecision,
    pub final_submission: bool,
    pub exit_reason: Option<String>,
    /// The stored `member_submissions_record` JSON.
    pub member_submissions: Option<Value>,
    /// The leader's message history.
    pub leader_messages: Vec<Value>,
    pub usage: RoundUsage,
    #[serde(with = "mixseek_core::time::utc_opt")]
    pub round_started_at: Option<DateTime<Utc>>,
    #[serde(with = "mixseek_core::time::utc_opt")]
    pub round_ended_at: Option<DateTime<Utc>>,
    /// The prompt-injection rules applied in the round, per phase and side (empty when none
    /// were, or for rounds stored before schema version 3).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub applied_injections: Vec<AppliedInjection>,
}

impl RoundDetail {
    /// Each metric in `score_details`, in stored order.
    pub fn metrics(&self) -> Vec<MetricLine> {
        metrics_of(&self.score_details)
    }
}

/// One metric of a round's `score_details`, as the reports show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricLine {
    pub metric_name: String,
    /// `None` for a metric that failed (and was skipped: `on_metric_error = "skip"`; it is
    /// stored with `score` 0.0, which is no score) or has no number.
    pub score: Option<f64>,
    pub evaluator_comment: String,
    /// Why the metric failed (`"status": "failed"`): the stored error's `message`, else its
    /// comment. `None` for a scored metric.
    pub error: Option<String>,
}

impl MetricLine {
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }
}

pub(crate) fn metrics_of(details: &Value) -> Vec<MetricLine> {
    details
        .get("metrics")
        .and_then(Value::as_array)
        .map(|ms| ms.iter().map(metric_line).collect())
        .unwrap_or_default()
}

fn metric_line(m: &Value) -> MetricLine {
    let text = |key: &str| m.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let comment = text("evaluator_comment");
    let failed = m.get("status").and_then(Value::as_str) == Some("failed");
    let error = failed.then(|| {
        let stored = match m.get("error") {
            Some(Value::String(e)) => e.clone(),
            Some(Value::Object(e)) => e
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            _ => String::new(),
        };
        match (stored.trim().is_empty(), comment.trim().is_empty()) {
            (false, _) => stored,
            (true, false) => comment.clone(),
            (true, true) => "no error recorded".to_string(),
        }
    });
    MetricLine {
        metric_name: m
            .get("metric_name")
            .and_then(Value::as_str)
            .unwrap_or("Unknown")
            .to_string(),
        score: if failed {
            None
        } else {
            m.get("score").and_then(Value::as_f64)
        },
        evaluator_comment: comment,
        error,
    }
}

/// One stored execution (`mixseek executions`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutionRow {
    pub execution_id: ExecutionId,
    pub user_prompt: String,
    pub status: String,
    pub total_teams: u32,
    pub best_team_id: Option<TeamId>,
    pub best_score: Option<f64>,
    pub total_execution_time_seconds: Option<f64>,
    /// Evaluated rounds stored for the execution.
    pub rounds: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    #[serde(with = "mixseek_core::time::utc")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "mixseek_core::time::utc_opt")]
    pub completed_at: Option<DateTime<Utc>>,
}

/// Which leaderboard to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaderboardScope {
    /// One execution (an id or a unique prefix).
    Execution(String),
    /// The most recently started execution.
    Latest,
    /// Every execution: each team id's best round across executions.
    All,
}

/// One line of a leaderboard: a team's best round (per execution, or across executions).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeaderboardRow {
    pub rank: u32,
    pub team_id: TeamId,
    pub team_name: String,
    pub score: f64,
    /// The round that scored it (ties: the later round within an execution; the earlier
    /// execution across executions).
    pub round_number: u32,
    /// Rounds the team played (in the execution, or in all executions).
    pub total_rounds: u32,
    /// The execution the best round came from.
    pub execution_id: ExecutionId,
    pub final_submission: bool,
    pub exit_reason: Option<String>,
    #[serde(with = "mixseek_core::time::utc_opt")]
    pub round_ended_at: Option<DateTime<Utc>>,
}

/// One round in a history listing: an evaluated round, or (`evaluated: false`, no score, no
/// decision) a round whose leader answered but whose evaluation failed or never finished. The
/// tokens and cost of such a round are those of its recorded LLM calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryRow {
    pub execution_id: ExecutionId,
    pub team_id: TeamId,
    pub team_name: String,
    pub round_number: u32,
    /// `None` when not evaluated.
    pub score: Option<f64>,
    pub evaluated: bool,
    pub should_continue: Option<bool>,
    pub reasoning: Option<String>,
    pub confidence_score: Option<f64>,
    pub final_submission: bool,
    pub exit_reason: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    #[serde(with = "mixseek_core::time::utc_opt")]
    pub round_started_at: Option<DateTime<Utc>>,
    #[serde(with = "mixseek_core::time::utc_opt")]
    pub round_ended_at: Option<DateTime<Utc>>,
}

/// One team's line in an execution overview.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TeamOverview {
    pub team_id: TeamId,
    pub team_name: String,
    /// Evaluated rounds.
    pub rounds: u32,
    /// Rounds whose leader answered but that have no evaluation (not counted in `rounds`).
    pub unevaluated_rounds: u32,
    pub best_score: Option<f64>,
    pub best_round: Option<u32>,
    pub final_submission: bool,
    pub exit_reason: Option<String>,
    pub error_message: Option<String>,
    pub usage: Usage,
}

/// An execution with its teams (`mixseek show ID`, the HTML report header).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutionOverview {
    #[serde(flatten)]
    pub execution: ExecutionRow,
    pub max_rounds: Option<u32>,
    pub stop_reason: Option<String>,
    pub teams: Vec<TeamOverview>,
    /// Usage of every LLM call of the execution (from the summary, else summed over rounds).
    pub usage: Usage,
}
