//! [`RoundError`]: why a team's round loop stopped with a failure.

use crate::judgment::JudgmentError;
use crate::ports::EvaluateError;
use mixseek_agents::AgentError;

/// Why a team's round loop failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RoundError {
    /// The team prompt could not be rendered.
    #[error("round {round}: {source}")]
    Prompt {
        /// The round.
        round: u32,
        /// The cause.
        #[source]
        source: Box<mixseek_prompt::PromptError>,
    },
    /// The ranking could not be read.
    #[error("Failed to get leader board ranking: {0}")]
    Ranking(String),
    /// The agents could not be built or the leader's run failed.
    #[error("round {round}: {source}")]
    Agents {
        /// The round.
        round: u32,
        /// The cause.
        #[source]
        source: AgentError,
    },
    /// The leader did not submit within `submission_timeout_seconds`.
    #[error(
        "round {round}: the leader did not submit within {seconds} s (submission_timeout_seconds)"
    )]
    SubmissionTimeout {
        /// The round.
        round: u32,
        /// The time limit, in seconds.
        seconds: f64,
    },
    /// The evaluation failed.
    #[error("round {round}: evaluation failed: {source}")]
    Evaluation {
        /// The round.
        round: u32,
        /// The cause.
        #[source]
        source: EvaluateError,
    },
    /// The judgment failed and `on_error = "fail"` (or the judgment prompt is broken).
    #[error("round {round}: {source}")]
    Judgment {
        /// The round.
        round: u32,
        /// The cause.
        #[source]
        source: JudgmentError,
    },
    /// The store (or another critical sink) refused an event.
    #[error("round {round}: cannot record the round: {source}")]
    Sink {
        /// The round.
        round: u32,
        /// The cause.
        #[source]
        source: mixseek_core::SinkError,
    },
}

impl RoundError {
    /// Whether re-running the team (resuming after its last completed round) may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            RoundError::Agents { source, .. } => source.is_transient(),
            RoundError::Evaluation { source, .. } => source.transient,
            RoundError::Judgment { source, .. } => source.is_transient(),
            RoundError::SubmissionTimeout { .. } => false,
            RoundError::Prompt { .. } | RoundError::Ranking(_) | RoundError::Sink { .. } => false,
        }
    }
}
