//! The events a run emits. One stream feeds the store writer, the progress display, progress
//! files and hooks; the store writer acknowledges a round only after committing it, so nothing
//! downstream ever claims more than the database holds.

use crate::ids::{ExecutionId, TeamId};
use crate::member::MemberSubmissionsRecord;
use crate::round::{ExitReason, Judgment, TeamStatusKind};
use crate::score::ScoreDetails;
use crate::summary::{ExecutionSummary, LeaderboardEntry};
use crate::usage::{Role, Usage};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A team as announced at the start of an execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeamRef {
    /// The team's id.
    pub team_id: TeamId,
    /// The team's display name.
    pub team_name: String,
}

/// A round whose leader has answered, before its evaluation: what its `round_history` row
/// holds (the prompt, the leader's transcript, the member submissions with their usage).
/// Carried by [`Event::SubmissionReady`] so a store can keep it even when the evaluation
/// then fails. Such a round is not completed — no score, no `leader_board` row, never the
/// best round, played again on resume — until [`Event::Evaluated`] commits it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubmittedRound {
    /// The execution the round belongs to.
    pub execution_id: ExecutionId,
    /// The team that played the round.
    pub team_id: TeamId,
    /// The team's display name.
    pub team_name: String,
    /// The round number, from 1.
    pub round_number: u32,
    /// The rendered team prompt the leader received.
    pub prompt: String,
    /// The leader's answer.
    pub submission_content: String,
    /// When the round started.
    #[serde(with = "crate::time::utc")]
    pub round_started_at: DateTime<Utc>,
    /// When the leader's answer came.
    #[serde(with = "crate::time::utc")]
    pub submitted_at: DateTime<Utc>,
    /// The leader's message history (JSON messages).
    pub leader_messages: Vec<serde_json::Value>,
    /// What each member returned during the round.
    pub member_submissions: MemberSubmissionsRecord,
    /// Usage of the round's agent calls (leader + members).
    pub agent_usage: Usage,
}

/// Everything stored for one evaluated round (the `round_history`, `leader_board` and
/// `round_status` rows), committed in one transaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    /// The execution the round belongs to.
    pub execution_id: ExecutionId,
    /// The team that played the round.
    pub team_id: TeamId,
    /// The team's display name.
    pub team_name: String,
    /// The round number, from 1.
    pub round_number: u32,
    /// The rendered team prompt the leader received.
    pub prompt: String,
    /// The leader's answer.
    pub submission_content: String,
    /// The evaluation: overall score and per-metric scores.
    pub score_details: ScoreDetails,
    /// When the round started.
    #[serde(with = "crate::time::utc")]
    pub round_started_at: DateTime<Utc>,
    /// When its evaluation ended.
    #[serde(with = "crate::time::utc")]
    pub round_ended_at: DateTime<Utc>,
    /// The leader's message history (JSON messages).
    pub leader_messages: Vec<serde_json::Value>,
    /// What each member returned during the round.
    pub member_submissions: MemberSubmissionsRecord,
    /// Usage of the round's agent calls (leader + members) and its evaluation.
    pub agent_usage: Usage,
    /// Usage of the round's evaluation (metric judges).
    pub evaluation_usage: Usage,
    /// The prompt-injection rules applied during the round (team, member and evaluator
    /// phases; the judgment comes after this record and is only logged), one entry per
    /// phase and side that had any. Empty for rounds stored before this field existed.
    #[serde(default)]
    pub applied_injections: Vec<AppliedInjection>,
}

/// The injection rules (`[[prompt_builder.injections]]` and the built-ins) applied to the
/// prompts of one phase and side in one round, e.g.
/// `{"phase": "team", "side": "system", "rules": ["language_preference", "domain_context"]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedInjection {
    /// `team`, `member`, `evaluator` or `judgment`.
    pub phase: String,
    /// `system` or `user`.
    pub side: String,
    /// Rule names in the order their blocks appear; for a phase with several prompts
    /// (members, metrics) every rule applied to any of them, in first-seen order.
    pub rules: Vec<String>,
}

impl RoundRecord {
    /// The round's overall score.
    pub fn evaluation_score(&self) -> f64 {
        self.score_details.overall_score
    }
}

/// The continuation decision after a round (the `round_status` update).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Whether the team plays another round.
    pub should_continue: bool,
    /// Why (the judgment's reasoning, or the rule that decided).
    pub reasoning: String,
    /// The judgment's confidence (0..=1), when a judgment was asked.
    pub confidence_score: Option<f64>,
    /// The judgment LLM's own answer when it was asked (before the max-rounds override).
    pub judgment: Option<Judgment>,
    /// Set when the team stops after this round.
    pub exit_reason: Option<ExitReason>,
    /// Usage of the judgment call (empty when none was made).
    pub usage: Usage,
}

/// One LLM call, for the `llm_calls` table and cost accounting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmCallRecord {
    /// The execution of the call, as a plain string: the record is built by mixseek-llm from
    /// its caller tag, which carries ids as strings.
    pub execution_id: Option<String>,
    /// The team of the call (a plain string, as `execution_id`).
    pub team_id: Option<String>,
    /// The round of the call, when it belongs to one.
    pub round_number: Option<u32>,
    /// Who made the call.
    pub role: Role,
    /// `provider:model` as configured.
    pub model: String,
    /// Tokens, requests and cost of the call.
    pub usage: Usage,
    /// Wall time of the call, retries included.
    pub latency_ms: u64,
    /// Attempts made (1 when the first succeeded).
    pub attempts: u32,
    /// Whether the answer came from the response cache.
    pub cache_hit: bool,
    /// The error, when the call failed.
    pub error: Option<String>,
    /// When the call ended.
    #[serde(with = "crate::time::utc")]
    pub at: DateTime<Utc>,
}

/// What happened during a run, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// An execution started with these teams.
    ExecutionStarted {
        /// The execution.
        execution_id: ExecutionId,
        /// The task every team works on.
        user_prompt: String,
        /// The teams taking part.
        teams: Vec<TeamRef>,
        /// Hash of the effective configuration (resume refuses a changed config).
        config_hash: String,
        /// The most rounds a team plays.
        max_rounds: u32,
        /// When it happened.
        #[serde(with = "crate::time::utc")]
        at: DateTime<Utc>,
    },
    /// A team started a round.
    RoundStarted {
        /// The execution.
        execution_id: ExecutionId,
        /// The team.
        team_id: TeamId,
        /// The team's display name.
        team_name: String,
        /// The round number, from 1.
        round_number: u32,
        /// When it happened.
        #[serde(with = "crate::time::utc")]
        at: DateTime<Utc>,
    },
    /// The leader produced its submission; evaluation starts.
    SubmissionReady {
        /// The execution.
        execution_id: ExecutionId,
        /// The team.
        team_id: TeamId,
        /// The team's display name.
        team_name: String,
        /// The round number, from 1.
        round_number: u32,
        /// Length of the submission, in characters.
        submission_chars: usize,
        /// Usage of the round's agent calls (leader + members).
        usage: Usage,
        /// When it happened.
        #[serde(with = "crate::time::utc")]
        at: DateTime<Utc>,
        /// The unevaluated round, for sinks of this process (a store keeps its
        /// `round_history` row); not serialized.
        #[serde(skip)]
        round: Option<Box<SubmittedRound>>,
    },
    /// The round was evaluated; the store commits it before the controller goes on.
    Evaluated(Box<RoundRecord>),
    /// The continuation decision for a round.
    Judged {
        /// The execution.
        execution_id: ExecutionId,
        /// The team.
        team_id: TeamId,
        /// The team's display name.
        team_name: String,
        /// The round number, from 1.
        round_number: u32,
        /// The decision and its usage.
        decision: Decision,
        /// When it happened.
        #[serde(with = "crate::time::utc")]
        at: DateTime<Utc>,
    },
    /// One LLM call ended.
    LlmCall(Box<LlmCallRecord>),
    /// A team stopped playing (completed, failed or timed out).
    TeamFinished {
        /// The execution.
        execution_id: ExecutionId,
        /// The team.
        team_id: TeamId,
        /// The team's display name.
        team_name: String,
        /// How the team ended.
        status: TeamStatusKind,
        /// The best round, marked final (`None` when no round completed).
        best: Option<Box<LeaderboardEntry>>,
        /// Why the team stopped, when it completed.
        exit_reason: Option<ExitReason>,
        /// Rounds completed (evaluated).
        rounds_completed: u32,
        /// The error, when the team failed.
        error_message: Option<String>,
        /// Usage of the team's whole run.
        usage: Usage,
        /// When it happened.
        #[serde(with = "crate::time::utc")]
        at: DateTime<Utc>,
    },
    /// The execution ended, with its summary.
    ExecutionFinished(Box<ExecutionSummary>),
}

impl Event {
    /// The hook event of this event (`[[hooks]] on = ...`), when hooks may subscribe to it.
    pub fn hook_event(&self) -> Option<crate::HookEvent> {
        match self {
            Event::Judged { .. } => Some(crate::HookEvent::RoundComplete),
            Event::TeamFinished { .. } => Some(crate::HookEvent::TeamComplete),
            Event::ExecutionFinished(_) => Some(crate::HookEvent::ExecutionComplete),
            _ => None,
        }
    }
    /// The id of the execution the event belongs to (`None` only for an LLM call made
    /// outside one).
    pub fn execution_id(&self) -> Option<&str> {
        match self {
            Event::ExecutionStarted { execution_id, .. }
            | Event::RoundStarted { execution_id, .. }
            | Event::SubmissionReady { execution_id, .. }
            | Event::Judged { execution_id, .. }
            | Event::TeamFinished { execution_id, .. } => Some(execution_id.as_str()),
            Event::Evaluated(r) => Some(r.execution_id.as_str()),
            Event::LlmCall(c) => c.execution_id.as_deref(),
            Event::ExecutionFinished(s) => Some(s.execution_id.as_str()),
        }
    }
}

/// Why a sink refused an event, with the sink's own error as its `source()` (the store's
/// `StoreError`, whose class tells a full disk from a bug). A store sink failing on
/// `Evaluated` fails the team's round.
#[derive(Debug, Clone)]
pub struct SinkError {
    /// Which sink refused, e.g. `store (/ws/mixseek.db)`.
    pub sink: String,
    source: std::sync::Arc<dyn std::error::Error + Send + Sync>,
}

impl SinkError {
    /// `sink` refused the event because of `source`.
    pub fn new(
        sink: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            sink: sink.into(),
            source: std::sync::Arc::new(source),
        }
    }

    /// A refusal that has only a message (no error value behind it).
    pub fn message(sink: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(sink, Message(message.into()))
    }

    /// The first error of type `E` in the cause chain (e.g. the store's error).
    pub fn find<E: std::error::Error + 'static>(&self) -> Option<&E> {
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(&*self.source);
        while let Some(e) = next {
            if let Some(found) = e.downcast_ref::<E>() {
                return Some(found);
            }
            next = e.source();
        }
        None
    }
}

impl std::fmt::Display for SinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.sink, self.source)
    }
}

impl std::error::Error for SinkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

/// The cause of a [`SinkError::message`].
#[derive(Debug)]
struct Message(String);

impl std::fmt::Display for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Message {}

/// A consumer of run events. `emit` returns once the event is handled (for the store: committed).
#[async_trait::async_trait]
pub trait EventSink: Send + Sync {
    /// Handles one event; returns once it is handled.
    async fn emit(&self, event: &Event) -> Result<(), SinkError>;
}

/// A sink that drops everything (for commands that run without a store).
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

#[async_trait::async_trait]
impl EventSink for NullSink {
    async fn emit(&self, _event: &Event) -> Result<(), SinkError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sink_error_keeps_its_cause() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer")]
        struct Outer(#[source] std::io::Error);
        let e = SinkError::new("store", Outer(std::io::Error::other("disk full")));
        assert_eq!(e.to_string(), "store: outer");
        assert!(
            e.find::<std::io::Error>()
                .is_some_and(|io| io.to_string() == "disk full")
        );
        assert!(e.find::<Outer>().is_some());
        let source = std::error::Error::source(&e).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("outer"));
        assert_eq!(
            SinkError::message("hooks", "refused").to_string(),
            "hooks: refused"
        );
    }

    #[test]
    fn events_are_tagged_json() {
        let e = Event::RoundStarted {
            execution_id: "e".into(),
            team_id: "t".into(),
            team_name: "T".into(),
            round_number: 2,
            at: crate::time::now_utc(),
        };
        let v = serde_json::to_value(&e).unwrap_or_default();
        assert_eq!(v["event"], "round_started");
        assert_eq!(v["round_number"], 2);
        assert_eq!(e.hook_event(), None);
        assert_eq!(e.execution_id(), Some("e"));
    }
}
