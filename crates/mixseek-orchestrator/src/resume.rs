//! Turning stored rounds back into the round controller's input, for `--resume` and for
//! retries after a team timed out.

use mixseek_core::{Decision, ExitReason, Usage};
use mixseek_round::CompletedRound;

/// A stored round as the round controller's `CompletedRound` (its decision when judged).
pub fn to_completed(r: &mixseek_store::CompletedRound) -> CompletedRound {
    let d = &r.decision;
    let decision = d.should_continue.map(|should_continue| Decision {
        should_continue,
        reasoning: d.reasoning.clone().unwrap_or_default(),
        confidence_score: d.confidence_score,
        judgment: d.judgment.clone(),
        exit_reason: d.exit_reason.as_deref().and_then(ExitReason::parse),
        usage: Usage::default(),
    });
    CompletedRound {
        state: r.state.clone(),
        decision,
    }
}

/// Stored rounds of one team, in round order.
pub fn team_rounds(all: &[mixseek_store::CompletedRound], team_id: &str) -> Vec<CompletedRound> {
    let mut v: Vec<&mixseek_store::CompletedRound> =
        all.iter().filter(|r| r.team_id == team_id).collect();
    v.sort_by_key(|r| r.state.round_number);
    v.into_iter().map(to_completed).collect()
}

/// Whether a team finished in an earlier run (its best round is marked final).
pub fn team_finished(all: &[mixseek_store::CompletedRound], team_id: &str) -> bool {
    all.iter()
        .any(|r| r.team_id == team_id && r.final_submission)
}
