//! Domain types shared by every mixseek crate: identifiers, rounds, scores, judgments,
//! leaderboard entries, the execution summary, member submissions, usage accounting, the
//! events a run emits, and the PII masker every crate applies to text it writes out. JSON field names and key order match the original Python MixSeek, so
//! its users' scripts keep reading our output.

pub mod event;
pub mod hook_event;
pub mod ids;
pub mod member;
pub mod model_id;
pub mod pii;
pub mod ranking;
pub mod round;
pub mod score;
pub mod summary;
pub mod time;
pub mod usage;

pub use event::{
    AppliedInjection, Decision, Event, EventSink, LlmCallRecord, NullSink, RoundRecord, SinkError,
    SubmittedRound, TeamRef,
};
pub use hook_event::HookEvent;
pub use ids::{ExecutionId, TeamId};
pub use member::{MemberRecordDocument, MemberStatus, MemberSubmission, MemberSubmissionsRecord};
pub use model_id::{ModelId, ModelIdFormatError};
pub use pii::{ExtraPattern, MaskingSpec, PiiError, PiiMasker};
pub use ranking::team_order;
pub use round::{ExitReason, Judgment, RoundState, TeamStatus, TeamStatusKind, best_round};
pub use score::{MetricScore, ScoreDetails, round2};
pub use summary::{ExecutionStatus, ExecutionSummary, FailedTeamInfo, LeaderboardEntry};
pub use usage::{Role, Usage, UsageByRole};
