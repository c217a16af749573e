//! Rounds, judgments, exit reasons and team status.

use crate::ids::TeamId;
use crate::score::ScoreDetails;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The judgment LLM's structured answer (`ImprovementJudgment` in the original).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgment {
    pub should_continue: bool,
    pub reasoning: String,
    /// 0.0..=1.0
    pub confidence_score: f64,
}

/// Why a team stopped. The first four are the original's values (stored in `exit_reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitReason {
    MaxRoundsReached,
    NoImprovementExpected,
    PartialFailure,
    PartialFailureTimeout,
    /// Ours: the judgment call failed and `on_error = "stop"` ended the team with its best round.
    JudgmentFailed,
    /// Ours: a cost or token budget was reached; no new round was started.
    BudgetExceeded,
    /// Ours: the run was interrupted (Ctrl-C).
    Interrupted,
}

impl ExitReason {
    pub fn as_str(&self) -> &'static str {
        match self {
            ExitReason::MaxRoundsReached => "max_rounds_reached",
            ExitReason::NoImprovementExpected => "no_improvement_expected",
            ExitReason::PartialFailure => "partial_failure",
            ExitReason::PartialFailureTimeout => "partial_failure_timeout",
            ExitReason::JudgmentFailed => "judgment_failed",
            ExitReason::BudgetExceeded => "budget_exceeded",
            ExitReason::Interrupted => "interrupted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            ExitReason::MaxRoundsReached,
            ExitReason::NoImprovementExpected,
            ExitReason::PartialFailure,
            ExitReason::PartialFailureTimeout,
            ExitReason::JudgmentFailed,
            ExitReason::BudgetExceeded,
            ExitReason::Interrupted,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
    }
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One completed round of one team.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundState {
    pub round_number: u32,
    pub submission_content: String,
    pub evaluation_score: f64,
    pub score_details: ScoreDetails,
    pub improvement_judgment: Option<Judgment>,
    #[serde(with = "crate::time::utc")]
    pub round_started_at: DateTime<Utc>,
    #[serde(with = "crate::time::utc")]
    pub round_ended_at: DateTime<Utc>,
    #[serde(default)]
    pub message_history: Vec<serde_json::Value>,
}

/// Picks the best round: highest score, the later round on ties (the original's rule).
pub fn best_round(rounds: &[RoundState]) -> Option<&RoundState> {
    rounds
        .iter()
        .fold(None, |best: Option<&RoundState>, r| match best {
            Some(b) if b.evaluation_score > r.evaluation_score => Some(b),
            _ => Some(r),
        })
}

/// Lifecycle of a team in an execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TeamStatusKind {
    Pending,
    Running,
    Completed,
    Failed,
    Timeout,
}

impl TeamStatusKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            TeamStatusKind::Pending => "pending",
            TeamStatusKind::Running => "running",
            TeamStatusKind::Completed => "completed",
            TeamStatusKind::Failed => "failed",
            TeamStatusKind::Timeout => "timeout",
        }
    }
}

/// `TeamStatus` of the original.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeamStatus {
    pub team_id: TeamId,
    pub team_name: String,
    pub status: TeamStatusKind,
    pub current_round: u32,
    #[serde(with = "crate::time::utc_opt", default)]
    pub started_at: Option<DateTime<Utc>>,
    #[serde(with = "crate::time::utc_opt", default)]
    pub completed_at: Option<DateTime<Utc>>,
    pub error_message: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(n: u32, score: f64) -> RoundState {
        RoundState {
            round_number: n,
            submission_content: format!("r{n}"),
            evaluation_score: score,
            score_details: ScoreDetails {
                overall_score: score,
                metrics: vec![],
            },
            improvement_judgment: None,
            round_started_at: Utc::now(),
            round_ended_at: Utc::now(),
            message_history: vec![],
        }
    }

    #[test]
    fn best_round_prefers_the_later_round_on_ties() {
        let rounds = [
            round(1, 80.0),
            round(2, 85.0),
            round(3, 85.0),
            round(4, 82.0),
        ];
        assert_eq!(best_round(&rounds).map(|r| r.round_number), Some(3));
        assert!(best_round(&[]).is_none());
    }

    #[test]
    fn exit_reasons_round_trip() {
        for r in [
            "max_rounds_reached",
            "no_improvement_expected",
            "partial_failure",
            "partial_failure_timeout",
        ] {
            assert_eq!(ExitReason::parse(r).map(|x| x.as_str()), Some(r));
        }
        assert_eq!(ExitReason::parse("bogus"), None);
    }
}
