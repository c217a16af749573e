//! What the round controller needs from outside, as small traits: the evaluator
//! ([`SubmissionEvaluator`]) and the cross-team ranking ([`RankingSource`]). The orchestrator
//! implements them with the evaluator crate and the DuckDB store; `mixseek team` runs with
//! [`NoRanking`].

use mixseek_core::{Attachment, ExecutionId, ScoreDetails, TeamId, Usage};
use mixseek_prompt::Ranking;
use std::sync::Arc;

/// What is evaluated: the **original** user prompt (not the rendered team prompt) with the
/// documents attached to it and the leader's submission, with the ids custom metrics receive.
#[derive(Debug, Clone, PartialEq)]
pub struct EvaluationRequest {
    /// The original user prompt.
    pub user_query: String,
    /// The leader's submission.
    pub submission: String,
    /// The execution.
    pub execution_id: ExecutionId,
    /// The team.
    pub team_id: TeamId,
    /// The team's display name.
    pub team_name: String,
    /// The round number, from 1.
    pub round_number: u32,
    /// The domain context in effect (the team's, else the orchestrator's).
    pub domain_context: Option<String>,
    /// The answer language in effect.
    pub language: Option<String>,
    /// The documents attached to the task (shown to the judges with the user prompt).
    pub attachments: Arc<[Attachment]>,
}

/// The evaluation of one submission.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// Overall score and per-metric scores.
    pub score_details: ScoreDetails,
    /// Usage of the evaluation's LLM calls.
    pub usage: Usage,
}

/// An evaluation that failed (the team's round fails).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct EvaluateError {
    /// What went wrong.
    pub message: String,
    /// Whether evaluating again may succeed (a transient LLM failure).
    pub transient: bool,
}

impl EvaluateError {
    /// A failure that evaluating again would not fix.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            transient: false,
        }
    }
    /// A failure that evaluating again may fix.
    pub fn transient(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            transient: true,
        }
    }
}

/// Scores submissions.
#[async_trait::async_trait]
pub trait SubmissionEvaluator: Send + Sync {
    /// Scores one submission.
    async fn evaluate(&self, request: &EvaluationRequest) -> Result<Evaluation, EvaluateError>;
}

/// Reading the ranking failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct RankingError(pub String);

/// The execution's cross-team ranking (best score descending, then `team_id` ascending).
#[async_trait::async_trait]
pub trait RankingSource: Send + Sync {
    /// `None` when there is no store (the prompts then show no ranking).
    async fn ranking(&self, execution_id: &ExecutionId) -> Result<Option<Ranking>, RankingError>;
}

/// No store: no ranking.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct NoRanking;

#[async_trait::async_trait]
impl RankingSource for NoRanking {
    async fn ranking(&self, _execution_id: &ExecutionId) -> Result<Option<Ranking>, RankingError> {
        Ok(None)
    }
}
