//! Rounds, judgments, exit reasons and team status.

use crate::score::ScoreDetails;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The judgment LLM's structured answer (`ImprovementJudgment` in the original).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgment {
    /// Whether another round is expected to improve the submission.
    pub should_continue: bool,
    /// Why.
    pub reasoning: String,
    /// 0.0..=1.0
    pub confidence_score: f64,
}

/// Why a team stopped. The first four are the original's values (stored in `exit_reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitReason {
    /// The team played `max_rounds` rounds.
    MaxRoundsReached,
    /// The judgment said another round would not improve the submission.
    NoImprovementExpected,
    /// The team failed after completing rounds; its best round stands.
    PartialFailure,
    /// The team timed out after completing rounds; its best round stands.
    PartialFailureTimeout,
    /// Ours: the judgment call failed and `on_error = "stop"` ended the team with its best round.
    JudgmentFailed,
    /// Ours: a cost or token budget was reached; no new round was started.
    BudgetExceeded,
    /// Ours: the run was interrupted (Ctrl-C).
    Interrupted,
}

impl ExitReason {
    /// The stored and printed name (`max_rounds_reached`, …).
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

    /// The reason named `s` (as [`Self::as_str`] prints it).
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
    /// The round number, from 1.
    pub round_number: u32,
    /// The leader's answer.
    pub submission_content: String,
    /// The round's overall score.
    pub evaluation_score: f64,
    /// The evaluation: overall score and per-metric scores.
    pub score_details: ScoreDetails,
    /// The judgment made after the round, when one was asked.
    pub improvement_judgment: Option<Judgment>,
    /// When the round started.
    #[serde(with = "crate::time::utc")]
    pub round_started_at: DateTime<Utc>,
    /// When its evaluation ended.
    #[serde(with = "crate::time::utc")]
    pub round_ended_at: DateTime<Utc>,
    /// The leader's message history (JSON messages).
    #[serde(default)]
    pub message_history: Vec<serde_json::Value>,
}

/// Picks the best round: highest score, the later round on ties (the original's rule).
pub fn best_round<'a>(rounds: impl IntoIterator<Item = &'a RoundState>) -> Option<&'a RoundState> {
    rounds
        .into_iter()
        .fold(None, |best: Option<&RoundState>, r| match best {
            Some(b) if b.evaluation_score > r.evaluation_score => Some(b),
            _ => Some(r),
        })
}

/// How a team ended in an execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TeamStatusKind {
    /// The team played all its rounds or stopped by a decision.
    Completed,
    /// The team failed (an error it could not recover from).
    Failed,
    /// The team ran out of its time limit.
    Timeout,
}

impl TeamStatusKind {
    /// The stored and printed name (`completed`, `failed`, `timeout`).
    pub fn as_str(&self) -> &'static str {
        match self {
            TeamStatusKind::Completed => "completed",
            TeamStatusKind::Failed => "failed",
            TeamStatusKind::Timeout => "timeout",
        }
    }
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
        assert!(best_round(&[] as &[RoundState]).is_none());
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
