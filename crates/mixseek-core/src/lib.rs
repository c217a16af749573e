//! Domain types shared by every mixseek crate: identifiers, rounds, scores, judgments,
//! leaderboard entries, attachments, the execution summary, member submissions, usage accounting, the
//! events a run emits, and the PII masker every crate applies to text it writes out. JSON field
//! names and key order match the original Python MixSeek, so its users' scripts keep reading
//! our output.

#![warn(missing_docs, unreachable_pub)]

mod attachment;
mod event;
mod hook_event;
mod ids;
mod member;
mod pii;
mod ranking;
mod round;
mod score;
mod summary;
mod transcript;
mod usage;

// Two namespaces stay public: `model_id` holds the table of providers known by name and its
// look-ups (`model_id::provider_of`, `model_id::BUILTIN_PROVIDERS`, …); `time` holds the
// timestamp formatting and the serde adapters used as `#[serde(with = "…::time::utc")]`.
pub mod model_id;
pub mod time;

pub use attachment::Attachment;
pub use event::{
    AppliedInjection, Decision, Event, EventSink, LlmCallRecord, NullSink, RoundRecord, SinkError,
    SubmittedRound, TeamRef,
};
pub use hook_event::HookEvent;
pub use ids::{ExecutionId, TeamId};
pub use member::{MemberRecordDocument, MemberStatus, MemberSubmission, MemberSubmissionsRecord};
pub use model_id::{ModelId, ModelIdFormatError};
pub use pii::{ExtraPattern, MaskingSpec, PiiError, PiiMasker, sha256_hex};
pub use ranking::team_order;
pub use round::{ExitReason, Judgment, RoundState, TeamStatusKind, best_round};
pub use score::{MetricScore, ScoreDetails, round2};
pub use summary::{ExecutionStatus, ExecutionSummary, FailedTeamInfo, LeaderboardEntry};
pub use transcript::{CallPart, TranscriptBuilder, first_user_prompt};
pub use usage::{Role, Usage, UsageByRole};
