//! Turning stored rounds back into the round controller's input, for `--resume` and for
//! retries after a team timed out; and deciding, per team, what an earlier process left.

use mixseek_core::{
    Decision, ExecutionId, ExecutionSummary, ExitReason, LeaderboardEntry, TeamId, Usage,
};
use mixseek_round::{CompletedRound, best_entry};

/// A stored round as the round controller's `CompletedRound` (its decision when judged).
pub(crate) fn to_completed(r: &mixseek_store::CompletedRound) -> CompletedRound {
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
pub(crate) fn team_rounds(
    all: &[mixseek_store::CompletedRound],
    team_id: &TeamId,
) -> Vec<CompletedRound> {
    let mut v: Vec<&mixseek_store::CompletedRound> =
        all.iter().filter(|r| r.team_id == *team_id).collect();
    v.sort_by_key(|r| r.state.round_number);
    v.into_iter().map(to_completed).collect()
}

/// What an earlier process of the execution left of one team.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PriorTeam {
    /// Finished normally (its best round is final): kept as it is.
    Finished {
        best: Option<LeaderboardEntry>,
        exit_reason: ExitReason,
    },
    /// Failed (with or without partial results): stays a failure, keeping its best round.
    Failed {
        best: Option<LeaderboardEntry>,
        message: String,
    },
    /// Not finished (never started, killed, or interrupted): runs on from its last
    /// completed round.
    Unfinished,
}

/// Classifies a team from the stored rounds of the execution and the summary the last process
/// stored when it ended (`None` when it was killed).
///
/// * a final round with exit reason `interrupted` → [`PriorTeam::Unfinished`] (continued);
/// * a final round with exit reason `partial_failure` / `partial_failure_timeout`, or a team
///   listed in the stored summary's `failed_teams_info` → [`PriorTeam::Failed`];
/// * any other final round → [`PriorTeam::Finished`];
/// * otherwise [`PriorTeam::Unfinished`].
pub(crate) fn prior_team(
    all: &[mixseek_store::CompletedRound],
    summary: Option<&ExecutionSummary>,
    execution_id: &ExecutionId,
    team_id: &TeamId,
    team_name: &str,
) -> PriorTeam {
    let failure = summary.and_then(|s| s.failed_teams_info.iter().find(|f| f.team_id == *team_id));
    let final_reason = all
        .iter()
        .find(|r| r.team_id == *team_id && r.final_submission)
        .map(|r| {
            r.decision
                .exit_reason
                .as_deref()
                .and_then(ExitReason::parse)
                .unwrap_or(ExitReason::MaxRoundsReached)
        });
    let rounds = team_rounds(all, team_id);
    let partial = matches!(
        final_reason,
        Some(ExitReason::PartialFailure | ExitReason::PartialFailureTimeout)
    );
    if partial || failure.is_some() {
        let reason = match final_reason {
            Some(r @ ExitReason::PartialFailureTimeout) => r,
            _ => ExitReason::PartialFailure,
        };
        let best = final_reason
            .and_then(|_| best_entry(execution_id, team_id, team_name, &rounds, reason));
        let message = failure.map_or_else(
            || format!("failed in an earlier run of this execution ({reason})"),
            |f| f.error_message.clone(),
        );
        return PriorTeam::Failed { best, message };
    }
    match final_reason {
        None | Some(ExitReason::Interrupted) => PriorTeam::Unfinished,
        Some(exit_reason) => PriorTeam::Finished {
            best: best_entry(execution_id, team_id, team_name, &rounds, exit_reason),
            exit_reason,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mixseek_core::{FailedTeamInfo, RoundState, ScoreDetails};
    use mixseek_store::{RoundUsage, StoredDecision};

    fn round(
        team: &str,
        n: u32,
        score: f64,
        final_reason: Option<&str>,
    ) -> mixseek_store::CompletedRound {
        let at = mixseek_core::time::now_utc();
        mixseek_store::CompletedRound {
            team_id: team.into(),
            team_name: format!("Team {team}"),
            state: RoundState {
                round_number: n,
                submission_content: format!("round {n}"),
                evaluation_score: score,
                score_details: ScoreDetails {
                    overall_score: score,
                    metrics: vec![],
                },
                improvement_judgment: None,
                round_started_at: at,
                round_ended_at: at,
                message_history: vec![],
            },
            decision: StoredDecision {
                should_continue: Some(true),
                exit_reason: final_reason.map(str::to_string),
                ..StoredDecision::default()
            },
            usage: RoundUsage::default(),
            final_submission: final_reason.is_some(),
        }
    }

    #[test]
    fn each_kind_of_team_is_classified() {
        let all = vec![
            round("done", 1, 50.0, None),
            round("done", 2, 70.0, Some("max_rounds_reached")),
            round("partial", 1, 40.0, Some("partial_failure")),
            round("slow", 1, 30.0, Some("partial_failure_timeout")),
            round("stopped", 1, 60.0, Some("interrupted")),
            round("killed", 1, 20.0, None),
        ];
        let classify = |t: &str| prior_team(&all, None, &"e".into(), &t.into(), t);
        assert!(matches!(
            classify("done"),
            PriorTeam::Finished { best: Some(b), exit_reason: ExitReason::MaxRoundsReached } if b.round_number == 2
        ));
        match classify("partial") {
            PriorTeam::Failed {
                best: Some(b),
                message,
            } => {
                assert_eq!(b.exit_reason.as_deref(), Some("partial_failure"));
                assert!(message.contains("partial_failure"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            classify("slow"),
            PriorTeam::Failed { best: Some(b), .. } if b.exit_reason.as_deref() == Some("partial_failure_timeout")
        ));
        assert_eq!(classify("stopped"), PriorTeam::Unfinished);
        assert_eq!(classify("killed"), PriorTeam::Unfinished);
        assert_eq!(classify("never"), PriorTeam::Unfinished);
    }

    #[test]
    fn a_failure_in_the_stored_summary_stays_a_failure() {
        let summary = ExecutionSummary {
            execution_id: "e".into(),
            user_prompt: "p".into(),
            team_results: vec![],
            best_team_id: None,
            best_score: None,
            total_execution_time_seconds: 1.0,
            failed_teams_info: vec![FailedTeamInfo {
                team_id: "broken".into(),
                team_name: "Broken".into(),
                error_message: "401 invalid api key".into(),
            }],
            created_at: mixseek_core::time::now_utc(),
            status: mixseek_core::ExecutionStatus::Interrupted,
            usage: Usage::default(),
            usage_by_role: Default::default(),
            stop_reason: None,
            stopped_team_ids: vec![],
        };
        assert_eq!(
            prior_team(&[], Some(&summary), &"e".into(), &"broken".into(), "Broken"),
            PriorTeam::Failed {
                best: None,
                message: "401 invalid api key".into()
            }
        );
        assert_eq!(
            prior_team(&[], Some(&summary), &"e".into(), &"other".into(), "Other"),
            PriorTeam::Unfinished
        );
    }
}
