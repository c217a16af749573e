//! The continuation rule after round `r`, checked in this order (the original's three
//! stages, with its `round_status` texts verbatim):
//!
//! 1. `r < min_rounds` ⇒ continue, no LLM call: `Below minimum rounds ({r} < {min})`, 1.0;
//! 2. `r >= max_rounds` and `judge_on_final_round = false` ⇒ stop, no LLM call,
//!    `max_rounds_reached`: `Final round reached (judgment skipped by
//!    judge_on_final_round=False)`, 1.0;
//! 3. otherwise the judgment LLM decides; at `r >= max_rounds` its answer is overridden to
//!    stop (reasoning and confidence kept); exit reason `max_rounds_reached` at the maximum,
//!    else `no_improvement_expected`.
//!
//! Ours: when the judgment call fails, `on_error` decides — `stop` (exit `judgment_failed`,
//! or `max_rounds_reached` at the maximum), `continue`, or `fail` (the team fails).

use crate::judgment::JudgmentError;
use mixseek_config::OnJudgmentError;
use mixseek_core::{Decision, ExitReason, Judgment, Usage};

/// Stages 1 and 2: the decision when no LLM call is needed.
pub(crate) fn without_judgment(
    r: u32,
    min_rounds: u32,
    max_rounds: u32,
    judge_on_final_round: bool,
) -> Option<Decision> {
    if r < min_rounds {
        return Some(Decision {
            should_continue: true,
            reasoning: format!("Below minimum rounds ({r} < {min_rounds})"),
            confidence_score: Some(1.0),
            judgment: None,
            exit_reason: None,
            usage: Usage::default(),
        });
    }
    if r >= max_rounds && !judge_on_final_round {
        return Some(Decision {
            should_continue: false,
            reasoning: "Final round reached (judgment skipped by judge_on_final_round=False)"
                .into(),
            confidence_score: Some(1.0),
            judgment: None,
            exit_reason: Some(ExitReason::MaxRoundsReached),
            usage: Usage::default(),
        });
    }
    None
}

/// Stage 3: the judgment LLM's answer, overridden to stop at the maximum.
pub(crate) fn from_judgment(r: u32, max_rounds: u32, judgment: Judgment, usage: Usage) -> Decision {
    let at_max = r >= max_rounds;
    let should_continue = judgment.should_continue && !at_max;
    let exit_reason = match (should_continue, at_max) {
        (true, _) => None,
        (false, true) => Some(ExitReason::MaxRoundsReached),
        (false, false) => Some(ExitReason::NoImprovementExpected),
    };
    Decision {
        should_continue,
        reasoning: judgment.reasoning.clone(),
        confidence_score: Some(judgment.confidence_score),
        judgment: Some(judgment),
        exit_reason,
        usage,
    }
}

/// The judgment that is stored on the round's state: the LLM's answer after the override.
pub(crate) fn stored_judgment(decision: &Decision) -> Option<Judgment> {
    decision.judgment.as_ref().map(|j| Judgment {
        should_continue: decision.should_continue,
        ..j.clone()
    })
}

/// A failed judgment call under `policy`: a decision, or the error when the team must fail.
pub(crate) fn from_judgment_error(
    r: u32,
    max_rounds: u32,
    error: JudgmentError,
    policy: OnJudgmentError,
) -> Result<Decision, JudgmentError> {
    let at_max = r >= max_rounds;
    let (should_continue, exit_reason, reasoning) = match policy {
        OnJudgmentError::Fail => return Err(error),
        OnJudgmentError::Stop => (
            false,
            if at_max {
                ExitReason::MaxRoundsReached
            } else {
                ExitReason::JudgmentFailed
            },
            format!(
                "Judgment failed: {error}. Stopping with the best round so far (on_error = \"{policy}\")."
            ),
        ),
        OnJudgmentError::Continue if at_max => (
            false,
            ExitReason::MaxRoundsReached,
            format!("Judgment failed: {error}. Final round reached (on_error = \"{policy}\")."),
        ),
        OnJudgmentError::Continue => {
            return Ok(Decision {
                should_continue: true,
                reasoning: format!(
                    "Judgment failed: {error}. Continuing to the next round (on_error = \"{policy}\")."
                ),
                confidence_score: None,
                judgment: None,
                exit_reason: None,
                usage: Usage::default(),
            });
        }
    };
    Ok(Decision {
        should_continue,
        reasoning,
        confidence_score: None,
        judgment: None,
        exit_reason: Some(exit_reason),
        usage: Usage::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(should_continue: bool) -> Judgment {
        Judgment {
            should_continue,
            reasoning: "because".into(),
            confidence_score: 0.8,
        }
    }

    fn failure() -> JudgmentError {
        JudgmentError::Timeout {
            provider: "mock".into(),
            seconds: 1.0,
        }
    }

    #[test]
    fn stage_one_below_minimum_rounds() {
        let d = without_judgment(1, 2, 5, true).expect("no call");
        assert!(d.should_continue);
        assert_eq!(d.reasoning, "Below minimum rounds (1 < 2)");
        assert_eq!((d.confidence_score, d.exit_reason), (Some(1.0), None));
        // Below the minimum wins even on the last round allowed.
        assert!(without_judgment(1, 2, 1, false).is_some_and(|d| d.should_continue));
    }

    #[test]
    fn stage_two_final_round_skip() {
        let d = without_judgment(2, 1, 2, false).expect("no call");
        assert!(!d.should_continue);
        assert_eq!(
            d.reasoning,
            "Final round reached (judgment skipped by judge_on_final_round=False)"
        );
        assert_eq!(
            (d.confidence_score, d.exit_reason),
            (Some(1.0), Some(ExitReason::MaxRoundsReached))
        );
        assert!(without_judgment(2, 1, 2, true).is_none());
        assert!(without_judgment(1, 1, 2, false).is_none());
    }

    #[test]
    fn stage_three_judgment_with_max_rounds_override() {
        let d = from_judgment(2, 5, j(true), Usage::default());
        assert!(d.should_continue);
        assert_eq!(
            (d.exit_reason, d.reasoning.as_str(), d.confidence_score),
            (None, "because", Some(0.8))
        );
        let d = from_judgment(2, 5, j(false), Usage::default());
        assert_eq!(
            (d.should_continue, d.exit_reason),
            (false, Some(ExitReason::NoImprovementExpected))
        );
        let d = from_judgment(5, 5, j(true), Usage::default());
        assert_eq!(
            (d.should_continue, d.exit_reason),
            (false, Some(ExitReason::MaxRoundsReached))
        );
        assert_eq!(
            d.judgment.as_ref().map(|j| j.should_continue),
            Some(true),
            "the LLM's own answer is kept"
        );
        assert_eq!(
            stored_judgment(&d).map(|j| j.should_continue),
            Some(false),
            "the state gets the override"
        );
        let d = from_judgment(5, 5, j(false), Usage::default());
        assert_eq!(d.exit_reason, Some(ExitReason::MaxRoundsReached));
    }

    #[test]
    fn judgment_error_policies() {
        let d = from_judgment_error(2, 5, failure(), OnJudgmentError::Stop).expect("stop");
        assert_eq!(
            (d.should_continue, d.exit_reason),
            (false, Some(ExitReason::JudgmentFailed))
        );
        assert!(
            d.reasoning
                .starts_with("Judgment failed: Failed to judge improvement prospects"),
            "{}",
            d.reasoning
        );
        let d = from_judgment_error(5, 5, failure(), OnJudgmentError::Stop).expect("stop");
        assert_eq!(d.exit_reason, Some(ExitReason::MaxRoundsReached));
        let d = from_judgment_error(2, 5, failure(), OnJudgmentError::Continue).expect("continue");
        assert_eq!(
            (d.should_continue, d.exit_reason, d.confidence_score),
            (true, None, None)
        );
        let d =
            from_judgment_error(5, 5, failure(), OnJudgmentError::Continue).expect("stop at max");
        assert_eq!(
            (d.should_continue, d.exit_reason),
            (false, Some(ExitReason::MaxRoundsReached))
        );
        assert!(from_judgment_error(2, 5, failure(), OnJudgmentError::Fail).is_err());
    }
}
