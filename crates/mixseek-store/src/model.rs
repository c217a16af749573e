//! What the reads return. Everything serializes to JSON (the `-f json` output of the report
//! commands) with UTC timestamps in the core crate's format.

use chrono::{DateTime, Utc};
use mixseek_core::{AppliedInjection, ExecutionId, Judgment, RoundState, TeamId, TeamRef, Usage};
use serde::Serialize;
use serde_json::Value;

/// One line of the ranking shown in team prompts: a team's best score in one execution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankingEntry {
    /// The team.
    pub team_id: TeamId,
    /// The name of the team's latest round (a rename does not split the team).
    pub team_name: String,
    /// The team's best `leader_board.score` in the execution.
    pub max_score: f64,
    /// The team's evaluated rounds in the execution.
    pub total_rounds: u32,
}

/// What `mixseek exec --resume` needs to know about a stored execution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutionState {
    /// The execution.
    pub execution_id: ExecutionId,
    /// `running` (started, not finished — or interrupted without a summary), `completed`,
    /// `partial_failure`, `failed`, `interrupted`.
    pub status: String,
    /// The task (`execution_summary.user_prompt`; PII-masked when masking was on).
    pub user_prompt: String,
    /// Hash of the effective configuration the run started with (`--resume` refuses a changed
    /// one); `None` for an execution recorded by the original Python MixSeek.
    pub config_hash: Option<String>,
    /// The configured maximum number of rounds per team; `None` for an execution recorded by the
    /// original Python MixSeek.
    pub max_rounds: Option<u32>,
    /// The configured teams, in configuration order (`execution_summary.teams`).
    pub teams: Vec<TeamRef>,
    /// When the run started (a resumed run keeps the first start).
    #[serde(with = "mixseek_core::time::utc")]
    pub created_at: DateTime<Utc>,
    /// When the run ended; `None` while it runs, or when its process was killed.
    #[serde(with = "mixseek_core::time::utc_opt")]
    pub completed_at: Option<DateTime<Utc>>,
}

/// The continuation decision stored with a round (`round_status`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StoredDecision {
    /// `None` while the round is not judged yet.
    pub should_continue: Option<bool>,
    /// The judgment's reasoning, or a fixed text such as `Below minimum rounds (1 < 2)`; `None`
    /// while the round is not judged.
    pub reasoning: Option<String>,
    /// The judgment LLM's confidence, 0.0–1.0; `None` when no judgment LLM was asked.
    pub confidence_score: Option<f64>,
    /// The judgment LLM's own answer, when it was asked.
    pub judgment: Option<Judgment>,
    /// Set when the team stopped after this round.
    pub exit_reason: Option<String>,
}

/// Usage of one round by stage, and the total.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct RoundUsage {
    /// The leader's and members' LLM calls.
    pub agent: Usage,
    /// The evaluator's LLM calls.
    pub evaluation: Usage,
    /// The continuation judgment's LLM calls (zero when none was made or it is not stored yet).
    #[serde(default)]
    pub judgment: Usage,
}

impl RoundUsage {
    /// The usage of the three stages together.
    pub fn total(&self) -> Usage {
        [self.agent, self.evaluation, self.judgment]
            .into_iter()
            .sum()
    }
}

/// A committed round of one team, as prompts and `--resume` need it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompletedRound {
    /// The team.
    pub team_id: TeamId,
    /// The team's name stored with the round (`leader_board.team_name`).
    pub team_name: String,
    /// The round as the orchestrator keeps it: number, submission, score and `score_details`,
    /// start and end times, and `improvement_judgment` (the judgment LLM's answer overridden by
    /// the stored decision; `None` when no judgment LLM answered). `message_history` is left
    /// empty: the transcript is not read.
    pub state: RoundState,
    /// The round's stored continuation decision (`round_status`).
    pub decision: StoredDecision,
    /// The round's usage by stage (`round_status.stage_usage`; zero when not stored).
    pub usage: RoundUsage,
    /// Whether this is the round the team chose as its result (`leader_board.final_submission`).
    pub final_submission: bool,
}

/// One evaluated round's score ([`Store::round_scores`](crate::Store::round_scores)).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundScore {
    /// The team.
    pub team_id: TeamId,
    /// The team's display name in that round.
    pub team_name: String,
    /// The round, from 1.
    pub round_number: u32,
    /// The round's score (0–100).
    pub score: f64,
}

/// Everything stored about one round (`mixseek show ID --team T --round N`).
///
/// A round that is not evaluated (its leader answered, its evaluation failed or never
/// finished: a `round_history` row without `leader_board` / `round_status` rows) has
/// `evaluated: false`, no score, `score_details` null, no decision and no start/end time; its
/// usage is that of its recorded LLM calls (`llm_calls`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundDetail {
    /// The execution.
    pub execution_id: ExecutionId,
    /// The team.
    pub team_id: TeamId,
    /// The team's name stored with the round.
    pub team_name: String,
    /// The round's number (from 1).
    pub round_number: u32,
    /// False for a round whose leader answered but that has no evaluation.
    pub evaluated: bool,
    /// `None` when not evaluated.
    pub score: Option<f64>,
    /// `{"overall_score", "metrics": [{"metric_name", "score", "evaluator_comment", ...}]}`
    /// (any JSON object for rows imported from the original; null when not evaluated).
    pub score_details: Value,
    /// The leader's submission (Markdown; PII-masked when masking was on). Empty for a round the
    /// original Python MixSeek stored without evaluating it.
    pub submission_content: String,
    /// SHA-256 of the unmasked submission; `None` unless masking was on.
    pub submission_sha256: Option<String>,
    /// The rendered team prompt the leader received (ours; absent for imported rows).
    pub prompt: Option<String>,
    /// SHA-256 of the unmasked prompt; `None` unless masking was on.
    pub prompt_sha256: Option<String>,
    /// Whether masking replaced something in the round's stored text.
    pub pii_masked: bool,
    /// The continuation decision (`round_status`); every field `None` when not evaluated.
    pub decision: StoredDecision,
    /// Whether this is the round the team chose as its result; false when not evaluated.
    pub final_submission: bool,
    /// Why the team stopped, on the team's final round only (`leader_board.exit_reason`, e.g.
    /// `max_rounds_reached`); `decision.exit_reason` also has the one stored with the decision.
    pub exit_reason: Option<String>,
    /// The stored `member_submissions_record` JSON.
    pub member_submissions: Option<Value>,
    /// The leader's message history.
    pub leader_messages: Vec<Value>,
    /// Usage by stage (`round_status.stage_usage`); for a round that is not evaluated, the usage
    /// of its recorded LLM calls.
    pub usage: RoundUsage,
    /// When the round started; `None` when not evaluated.
    #[serde(with = "mixseek_core::time::utc_opt")]
    pub round_started_at: Option<DateTime<Utc>>,
    /// When the round ended; `None` when not evaluated.
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
    /// The metric's name (`Unknown` when the stored metric has none).
    pub metric_name: String,
    /// `None` for a metric that failed (and was skipped: `on_metric_error = "skip"`; it is
    /// stored with `score` 0.0, which is no score) or has no number.
    pub score: Option<f64>,
    /// The evaluator's comment (empty when none; for a failed metric, its failure text).
    pub evaluator_comment: String,
    /// Why the metric failed (`"status": "failed"`): the stored error's `message`, else its
    /// comment. `None` for a scored metric.
    pub error: Option<String>,
    /// Whether lower is better (`direction = "minimize"`, recorded in its details).
    pub minimized: bool,
}

impl MetricLine {
    /// Whether the metric failed (it has an `error` and no score).
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
        minimized: m.get("direction").and_then(Value::as_str) == Some("minimize"),
    }
}

/// One stored execution (`mixseek executions`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutionRow {
    /// The execution.
    pub execution_id: ExecutionId,
    /// The task; empty for an execution that has rounds but no summary row.
    pub user_prompt: String,
    /// `execution_summary.status` (`running`, `completed`, `partial_failure`, `failed`,
    /// `interrupted`), or `incomplete` for an execution that has rounds but no summary row (the
    /// original Python MixSeek wrote it only at the end).
    pub status: String,
    /// The number of configured teams (0 without a summary row).
    pub total_teams: u32,
    /// The winning team, as of the execution's last end; `None` before it first ends, or when
    /// every team failed.
    pub best_team_id: Option<TeamId>,
    /// The winning team's score; `None` when `best_team_id` is.
    pub best_score: Option<f64>,
    /// Wall time of the team phase in seconds, as of the execution's last end; `None` before
    /// it first ends.
    pub total_execution_time_seconds: Option<f64>,
    /// Evaluated rounds stored for the execution.
    pub rounds: u64,
    /// Input tokens of every LLM call of the execution (`execution_summary`); while it runs, or
    /// without a summary row, summed over its evaluated rounds (`round_status`).
    pub input_tokens: u64,
    /// Output tokens, counted as `input_tokens` is.
    pub output_tokens: u64,
    /// Cost in US dollars, counted as `input_tokens` is (0 when nothing was priced).
    pub cost_usd: f64,
    /// When the execution started (without a summary row: when its first evaluated round was
    /// stored).
    #[serde(with = "mixseek_core::time::utc")]
    pub created_at: DateTime<Utc>,
    /// When the execution ended; `None` while it runs.
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
    /// Position from 1 (by score, ties by team id).
    pub rank: u32,
    /// The team.
    pub team_id: TeamId,
    /// The team's latest name (of its latest round in the execution; of its most recently
    /// stored round across executions).
    pub team_name: String,
    /// The round's overall score (`leader_board.score`).
    pub score: f64,
    /// The round that scored it (ties: the later round within an execution; the earlier
    /// execution across executions).
    pub round_number: u32,
    /// Rounds the team played (in the execution, or in all executions).
    pub total_rounds: u32,
    /// The execution the best round came from.
    pub execution_id: ExecutionId,
    /// Whether this is the round the team chose as its result (`leader_board.final_submission`).
    pub final_submission: bool,
    /// Why the team stopped (`leader_board.exit_reason`, set on its final round only).
    pub exit_reason: Option<String>,
    /// When the round ended (`round_status.round_ended_at`; `None` without a `round_status` row).
    #[serde(with = "mixseek_core::time::utc_opt")]
    pub round_ended_at: Option<DateTime<Utc>>,
}

/// One round in a history listing: an evaluated round, or (`evaluated: false`, no score, no
/// decision) a round whose leader answered but whose evaluation failed or never finished. The
/// tokens and cost of such a round are those of its recorded LLM calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryRow {
    /// The execution.
    pub execution_id: ExecutionId,
    /// The team.
    pub team_id: TeamId,
    /// The team's name stored with the round.
    pub team_name: String,
    /// The round's number (from 1).
    pub round_number: u32,
    /// `None` when not evaluated.
    pub score: Option<f64>,
    /// False for a round whose leader answered but that has no evaluation.
    pub evaluated: bool,
    /// The continuation decision: `Some(true)` continue, `Some(false)` stop, `None` not decided
    /// (or not evaluated).
    pub should_continue: Option<bool>,
    /// The judgment's reasoning, or a fixed text such as `Below minimum rounds (1 < 2)`; `None`
    /// when not decided.
    pub reasoning: Option<String>,
    /// The judgment LLM's confidence, 0.0–1.0; `None` when no judgment LLM was asked.
    pub confidence_score: Option<f64>,
    /// Whether this is the round the team chose as its result (`leader_board.final_submission`).
    pub final_submission: bool,
    /// Why the team stopped after this round (`round_status`, else `leader_board`); `None` on the
    /// other rounds.
    pub exit_reason: Option<String>,
    /// Input tokens of the round, all stages (`round_status`; for a round that is not evaluated,
    /// its recorded LLM calls).
    pub input_tokens: u64,
    /// Output tokens, counted as `input_tokens` is.
    pub output_tokens: u64,
    /// Cost in US dollars, counted as `input_tokens` is (0 when nothing was priced).
    pub cost_usd: f64,
    /// When the round started; `None` when not evaluated.
    #[serde(with = "mixseek_core::time::utc_opt")]
    pub round_started_at: Option<DateTime<Utc>>,
    /// When the round ended; `None` when not evaluated.
    #[serde(with = "mixseek_core::time::utc_opt")]
    pub round_ended_at: Option<DateTime<Utc>>,
}

/// One team's line in an execution overview.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TeamOverview {
    /// The team.
    pub team_id: TeamId,
    /// The team's name in its latest evaluated round, else as configured.
    pub team_name: String,
    /// Evaluated rounds.
    pub rounds: u32,
    /// Rounds whose leader answered but that have no evaluation (not counted in `rounds`).
    pub unevaluated_rounds: u32,
    /// The score of the team's chosen round: its final submission, else its best round (ties:
    /// the later round); `None` without evaluated rounds.
    pub best_score: Option<f64>,
    /// The number of that round; `None` without evaluated rounds.
    pub best_round: Option<u32>,
    /// Whether that round is marked as the team's final submission
    /// (`leader_board.final_submission`).
    pub final_submission: bool,
    /// Why the team stopped (`exit_reason` of its final submission); `None` until it has one.
    pub exit_reason: Option<String>,
    /// The team's error when it failed (`execution_summary.failed_teams_info`).
    pub error_message: Option<String>,
    /// Usage of the team's evaluated rounds, all stages (unevaluated rounds not counted).
    pub usage: Usage,
}

/// An execution with its teams (`mixseek show ID`, the HTML report header).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecutionOverview {
    /// The execution's row (its fields are at the top level of the JSON).
    #[serde(flatten)]
    pub execution: ExecutionRow,
    /// The configured maximum number of rounds per team; `None` without a summary row or for an
    /// execution recorded by the original Python MixSeek.
    pub max_rounds: Option<u32>,
    /// Why the run stopped early (budget, interrupt); `None` when it did not.
    pub stop_reason: Option<String>,
    /// One line per team: the configured teams in configuration order, then any other team that
    /// has rounds.
    pub teams: Vec<TeamOverview>,
    /// Usage of every LLM call of the execution (from the summary, else summed over rounds).
    pub usage: Usage,
    /// Jury agreement per metric judged by several judges or samples (Krippendorff's alpha
    /// over the rounds, the spread within them); left out of JSON when no metric has one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agreement: Vec<crate::agreement::MetricAgreement>,
    /// The newest arena in which a submission of this execution competed
    /// ([`Store::latest_arena`](crate::Store::latest_arena)). In JSON, present only when there
    /// is one: its summary's fields and `ratings` (the games are left out).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::arena::serialize_brief"
    )]
    pub arena: Option<crate::arena::ArenaDetail>,
    /// The newest analysis of the judges' comments on this execution
    /// ([`Store::latest_theme_analysis`](crate::Store::latest_theme_analysis)), which the
    /// HTML report shows. In JSON, present only when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub themes: Option<crate::themes::ThemeAnalysis>,
}
