//! What `mixseek team` prints: a team run as text (each round's score, members and
//! decision, then the final submission) or as JSON.

use crate::controller::{CompletedRound, TeamFailure, TeamResult};
use mixseek_core::{
    Decision, ExecutionId, ExitReason, LeaderboardEntry, MemberStatus, RoundRecord, ScoreDetails,
    TeamId, TeamStatusKind, Usage, UsageByRole,
};
use serde::Serialize;

/// One team run, for output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TeamReport {
    /// The execution.
    pub execution_id: ExecutionId,
    /// The team.
    pub team_id: TeamId,
    /// The team's display name.
    pub team_name: String,
    /// How the team ended.
    pub status: TeamStatusKind,
    /// Why the team stopped, when it completed.
    pub exit_reason: Option<ExitReason>,
    /// The error, when the team failed.
    pub error_message: Option<String>,
    /// The completed rounds, in order.
    pub rounds: Vec<RoundReport>,
    /// The final submission (the best round).
    pub best: Option<LeaderboardEntry>,
    /// Usage of the run.
    pub usage: Usage,
    /// The same usage, split by role.
    pub usage_by_role: UsageByRole,
    /// The round whose leader answered but whose evaluation failed (a failed run only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unevaluated: Option<UnevaluatedRound>,
}

/// A round that was played but not evaluated, for output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnevaluatedRound {
    /// The round number, from 1.
    pub round_number: u32,
    /// The leader's submission.
    pub submission_content: String,
    /// The round's `MemberSubmissionsRecord` JSON (with counts).
    pub member_submissions: serde_json::Value,
    /// Usage of the round's agent calls (leader + members).
    pub agent_usage: Usage,
}

/// One round, for output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundReport {
    /// The round number, from 1.
    pub round_number: u32,
    /// The round's overall score.
    pub score: f64,
    /// Overall score and per-metric scores.
    pub score_details: ScoreDetails,
    /// The leader's submission.
    pub submission_content: String,
    /// The continuation decision, when one was made.
    pub decision: Option<Decision>,
    /// The round's `MemberSubmissionsRecord` JSON (with counts), when played by this run.
    pub member_submissions: Option<serde_json::Value>,
    /// Usage of the round's agent calls (leader + members).
    pub agent_usage: Option<Usage>,
    /// Usage of the round's evaluation, when played by this run.
    pub evaluation_usage: Option<Usage>,
}

fn rounds(rounds: &[CompletedRound], records: &[RoundRecord]) -> Vec<RoundReport> {
    rounds
        .iter()
        .map(|r| {
            let record = records
                .iter()
                .find(|x| x.round_number == r.state.round_number);
            RoundReport {
                round_number: r.state.round_number,
                score: r.state.evaluation_score,
                score_details: r.state.score_details.clone(),
                submission_content: r.state.submission_content.clone(),
                decision: r.decision.clone(),
                member_submissions: record.map(|x| x.member_submissions.to_json()),
                agent_usage: record.map(|x| x.agent_usage),
                evaluation_usage: record.map(|x| x.evaluation_usage),
            }
        })
        .collect()
}

/// The member lines of a round: `Member Agents: ok/total succeeded`, then one line each.
fn push_members(s: &mut String, record: &serde_json::Value) {
    let Some(subs) = record["submissions"].as_array() else {
        return;
    };
    let ok = subs.iter().filter(|x| x["status"] == "SUCCESS").count();
    s.push_str(&format!("  Member Agents: {ok}/{} succeeded\n", subs.len()));
    for x in subs {
        let name = x["agent_name"].as_str().unwrap_or("");
        let status = x["status"].as_str().unwrap_or("");
        let (i, o) = (
            x["usage"]["input_tokens"].as_u64().unwrap_or(0),
            x["usage"]["output_tokens"].as_u64().unwrap_or(0),
        );
        if status == "ERROR" {
            s.push_str(&format!(
                "    ✗ {name} ({status}): {}\n",
                x["error_message"].as_str().unwrap_or("")
            ));
        } else {
            s.push_str(&format!(
                "    ✓ {name} ({status}) - {i} input, {o} output tokens\n"
            ));
        }
    }
}

impl TeamReport {
    /// A completed run.
    pub fn from_result(r: &TeamResult) -> Self {
        Self {
            execution_id: r.execution_id.clone(),
            team_id: r.team_id.clone(),
            team_name: r.team_name.clone(),
            status: TeamStatusKind::Completed,
            exit_reason: Some(r.exit_reason),
            error_message: None,
            rounds: rounds(&r.rounds, &r.records),
            best: r.best.clone(),
            usage: r.usage.total(),
            usage_by_role: r.usage.clone(),
            unevaluated: None,
        }
    }

    /// A failed run; `best` is what [`crate::RoundController::finish_failed`] returned.
    pub fn from_failure(
        execution_id: &ExecutionId,
        team_id: &TeamId,
        team_name: &str,
        f: &TeamFailure,
        best: Option<LeaderboardEntry>,
    ) -> Self {
        Self {
            execution_id: execution_id.into(),
            team_id: team_id.into(),
            team_name: team_name.into(),
            status: TeamStatusKind::Failed,
            exit_reason: best.as_ref().map(|_| ExitReason::PartialFailure),
            error_message: Some(f.error.to_string()),
            rounds: rounds(&f.rounds, &f.records),
            best,
            usage: f.usage.total(),
            usage_by_role: f.usage.clone(),
            unevaluated: f.unevaluated.as_ref().map(|u| UnevaluatedRound {
                round_number: u.round_number,
                submission_content: u.submission_content.clone(),
                member_submissions: u.member_submissions.to_json(),
                agent_usage: u.agent_usage,
            }),
        }
    }

    /// The member-submission records of every round played (the unevaluated one included).
    fn member_records(&self) -> impl Iterator<Item = &serde_json::Value> {
        self.rounds
            .iter()
            .filter_map(|r| r.member_submissions.as_ref())
            .chain(self.unevaluated.iter().map(|u| &u.member_submissions))
    }

    /// Pretty JSON (2-space indent, non-ASCII kept).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"error\": \"cannot serialize the report: {e}\"}}"))
    }

    /// The text report.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        s.push_str("\n=== Team Run ===\n");
        s.push_str(&format!("Team: {} ({})\n", self.team_name, self.team_id));
        s.push_str(&format!("Execution: {}\n", self.execution_id));
        for r in &self.rounds {
            s.push_str(&format!(
                "\nRound {}: score {:.2}\n",
                r.round_number, r.score
            ));
            for m in &r.score_details.metrics {
                s.push_str(&format!("  {}: {:.2}\n", m.metric_name, m.score));
            }
            if let Some(m) = &r.member_submissions {
                push_members(&mut s, m);
            }
            if let Some(d) = &r.decision {
                let verdict = if d.should_continue {
                    "continue"
                } else {
                    "stop"
                };
                s.push_str(&format!("  Decision: {verdict} — {}\n", d.reasoning));
            }
        }
        if let Some(u) = &self.unevaluated {
            s.push_str(&format!(
                "\nRound {}: not evaluated (the evaluation failed)\n",
                u.round_number
            ));
            push_members(&mut s, &u.member_submissions);
            s.push_str("  Submission:\n");
            for line in u.submission_content.lines() {
                s.push_str(&format!("    {line}\n"));
            }
        }
        s.push('\n');
        s.push_str(&format!("Status: {}\n", self.status.as_str()));
        if let Some(e) = &self.error_message {
            s.push_str(&format!("Error: {e}\n"));
        }
        if let Some(r) = self.exit_reason {
            s.push_str(&format!("Exit reason: {r}\n"));
        }
        let u = &self.usage;
        s.push_str(&format!(
            "Total Usage: {} input, {} output tokens, {} requests\n",
            u.input_tokens, u.output_tokens, u.requests
        ));
        match &self.best {
            Some(b) => {
                s.push_str(&format!(
                    "\n=== Final Submission (round {}, score {:.2}) ===\n",
                    b.round_number, b.score
                ));
                s.push_str(&b.submission_content);
                s.push('\n');
            }
            None => s.push_str("\nNo round completed.\n"),
        }
        s
    }

    /// Member calls made, over all rounds played.
    pub fn member_calls(&self) -> usize {
        self.member_records()
            .filter_map(|m| m["submissions"].as_array())
            .map(Vec::len)
            .sum()
    }

    /// At least one member call was made and every one failed (`mixseek team` then exits 2,
    /// as the original: `All member agents failed. No successful submissions.`).
    pub fn all_member_calls_failed(&self) -> bool {
        let calls = self.member_calls();
        calls > 0 && self.failed_member_calls() == calls
    }

    /// Member calls that failed, over all rounds played.
    pub(crate) fn failed_member_calls(&self) -> usize {
        self.member_records()
            .filter_map(|m| m["submissions"].as_array())
            .flatten()
            .filter(|x| x["status"] == serde_json::json!(MemberStatus::Error))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use mixseek_core::{
        Judgment, MemberSubmission, MemberSubmissionsRecord, MetricScore, Role, RoundState,
    };

    fn at(sec: u32) -> chrono::DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 11, 25, 5, 30, sec)
            .single()
            .unwrap_or_default()
    }

    fn usage(i: u64, o: u64) -> Usage {
        Usage {
            input_tokens: i,
            output_tokens: o,
            requests: 1,
            ..Usage::default()
        }
    }

    fn sample() -> TeamResult {
        let details = |s: f64| ScoreDetails {
            overall_score: s,
            metrics: vec![MetricScore::new("Coverage", s, "ok")],
        };
        let state = |n: u32, s: f64, text: &str| RoundState {
            round_number: n,
            submission_content: text.into(),
            evaluation_score: s,
            score_details: details(s),
            improvement_judgment: None,
            round_started_at: at(n),
            round_ended_at: at(n + 10),
            message_history: vec![],
        };
        let member = |name: &str, status: MemberStatus| MemberSubmission {
            agent_name: name.into(),
            agent_type: "plain".into(),
            content: if status == MemberStatus::Success {
                "found it".into()
            } else {
                String::new()
            },
            status,
            error_message: (status == MemberStatus::Error).then(|| "HTTP 500".to_string()),
            usage: usage(12, 5),
            timestamp: at(1),
            execution_time_ms: Some(40),
            all_messages: None,
        };
        let record = |n: u32, s: f64| RoundRecord {
            execution_id: "exec-1".into(),
            team_id: "alpha".into(),
            team_name: "Alpha".into(),
            round_number: n,
            prompt: "p".into(),
            submission_content: format!("answer {n}"),
            score_details: details(s),
            round_started_at: at(n),
            round_ended_at: at(n + 10),
            leader_messages: vec![],
            member_submissions: MemberSubmissionsRecord {
                execution_id: "exec-1".into(),
                team_id: "alpha".into(),
                team_name: "Alpha".into(),
                round_number: n,
                submissions: vec![
                    member("searcher", MemberStatus::Success),
                    member("analyst", MemberStatus::Error),
                ],
            },
            agent_usage: usage(30, 10),
            evaluation_usage: usage(20, 4),
            applied_injections: Vec::new(),
        };
        let mut by_role = UsageByRole::default();
        by_role.add(Role::Leader, usage(60, 20));
        by_role.add(Role::Judgment, usage(8, 3));
        TeamResult {
            execution_id: "exec-1".into(),
            team_id: "alpha".into(),
            team_name: "Alpha".into(),
            rounds: vec![
                CompletedRound {
                    state: state(1, 72.5, "answer 1"),
                    decision: Some(Decision {
                        should_continue: true,
                        reasoning: "Below minimum rounds (1 < 2)".into(),
                        confidence_score: Some(1.0),
                        judgment: None,
                        exit_reason: None,
                        usage: Usage::default(),
                    }),
                },
                CompletedRound {
                    state: state(2, 80.0, "answer 2\nwith a second line"),
                    decision: Some(Decision {
                        should_continue: false,
                        reasoning: "収穫逓減".into(),
                        confidence_score: Some(0.9),
                        judgment: Some(Judgment {
                            should_continue: false,
                            reasoning: "収穫逓減".into(),
                            confidence_score: 0.9,
                        }),
                        exit_reason: Some(ExitReason::NoImprovementExpected),
                        usage: usage(8, 3),
                    }),
                },
            ],
            records: vec![record(1, 72.5), record(2, 80.0)],
            best: Some(LeaderboardEntry {
                id: None,
                execution_id: "exec-1".into(),
                team_id: "alpha".into(),
                team_name: "Alpha".into(),
                round_number: 2,
                submission_content: "answer 2\nwith a second line".into(),
                submission_format: "md".into(),
                score: 80.0,
                score_details: details(80.0),
                final_submission: true,
                exit_reason: Some("no_improvement_expected".into()),
                created_at: at(12),
                updated_at: at(30),
            }),
            exit_reason: ExitReason::NoImprovementExpected,
            usage: by_role,
        }
    }

    #[test]
    fn text_report() {
        let report = TeamReport::from_result(&sample());
        assert_eq!(report.failed_member_calls(), 2);
        insta::assert_snapshot!(report.to_text());
    }

    #[test]
    fn json_report() {
        insta::assert_snapshot!(TeamReport::from_result(&sample()).to_json());
    }
}
