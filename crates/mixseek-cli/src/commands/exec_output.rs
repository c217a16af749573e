//! The text output of `mixseek exec`, as the original prints it (header, per-team results,
//! failed teams, best result, leaderboard table, summary), plus usage and cost.

use crate::textwidth::{pad_left, pad_right, width, wrap};
use mixseek_core::{Event, EventSink, ExecutionId, ExecutionSummary, SinkError};
use std::io::Write;

/// The horizontal rule between the sections of the output.
pub(crate) const RULE: &str = "━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━";

/// Printed before the run starts.
pub(crate) fn header(user_prompt: &str, team_count: usize) -> String {
    format!(
        "🚀 MixSeek Orchestrator\n{RULE}\n\n📝 Task: {user_prompt}\n\n🔄 Running {team_count} teams in parallel...\n\n"
    )
}

/// The header of a resumed execution: its stored task, then which execution continues.
pub(crate) fn resume_header(
    user_prompt: &str,
    team_count: usize,
    execution_id: &ExecutionId,
) -> String {
    format!(
        "{}🔁 Resuming execution {execution_id} (completed rounds are kept)\n\n",
        header(user_prompt.trim(), team_count)
    )
}

/// Prints [`resume_header`] on stdout when the resumed execution starts (its task comes from
/// the database).
#[derive(Debug)]
pub(crate) struct ResumeHeader {
    team_count: usize,
}

impl ResumeHeader {
    pub(crate) fn new(team_count: usize) -> Self {
        Self { team_count }
    }
}

#[async_trait::async_trait]
impl EventSink for ResumeHeader {
    async fn emit(&self, event: &Event) -> Result<(), SinkError> {
        if let Event::ExecutionStarted {
            execution_id,
            user_prompt,
            ..
        } = event
        {
            let mut out = std::io::stdout().lock();
            let _ =
                out.write_all(resume_header(user_prompt, self.team_count, execution_id).as_bytes());
            let _ = out.flush();
        }
        Ok(())
    }
}

/// The leaderboard table: rows ranked by `mixseek_core::team_order` (score, then `team_id`),
/// partial teams marked, fully failed teams last.
pub(crate) fn leaderboard_table(summary: &ExecutionSummary) -> String {
    const W: [usize; 4] = [6, 20, 8, 12];
    let mut rows: Vec<[String; 4]> = Vec::new();
    let mut results: Vec<&mixseek_core::LeaderboardEntry> = summary.team_results.iter().collect();
    results.sort_by(|a, b| {
        mixseek_core::team_order((a.score, a.team_id.as_str()), (b.score, b.team_id.as_str()))
    });
    for (i, e) in results.iter().enumerate() {
        let status = if summary.is_partial(e.team_id.as_str()) {
            "⚠️ Partial"
        } else {
            "✅ Completed"
        };
        rows.push([
            (i + 1).to_string(),
            e.team_name.clone(),
            format!("{:.2}", e.score),
            status.to_string(),
        ]);
    }
    for f in &summary.failed_teams_info {
        if !summary.team_results.iter().any(|e| e.team_id == f.team_id) {
            rows.push([
                "—".into(),
                f.team_name.clone(),
                "—".into(),
                "❌ Failed".into(),
            ]);
        }
    }
    let total: usize = W.iter().map(|w| w + 3).sum::<usize>() + 1;
    let title = "🏆 Leaderboard";
    let left = (total - width(title)) / 2;
    let right = total - width(title) - left;
    let line = |l: &str, m: &str, r: &str, fill: &str| -> String {
        let parts: Vec<String> = W.iter().map(|w| fill.repeat(w + 2)).collect();
        format!("{l}{}{r}\n", parts.join(m))
    };
    let row = |cells: [String; 4], sep: &str| -> String {
        let wrapped: Vec<Vec<String>> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| wrap(c, W[i]))
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        let mut out = String::new();
        for h in 0..height {
            out.push_str(sep);
            for (i, col) in wrapped.iter().enumerate() {
                let text = col.get(h).cloned().unwrap_or_default();
                let cell = if i == 0 || i == 2 {
                    pad_left(&text, W[i])
                } else {
                    pad_right(&text, W[i])
                };
                out.push_str(&format!(" {cell} {sep}"));
            }
            out.push('\n');
        }
        out
    };
    let mut s = String::new();
    s.push_str(&format!(
        "{}{title}{}\n",
        " ".repeat(left),
        " ".repeat(right)
    ));
    s.push_str(&line("┏", "┳", "┓", "━"));
    s.push_str(&row(
        [
            "Rank".into(),
            "Team".into(),
            "Score".into(),
            "Status".into(),
        ],
        "┃",
    ));
    s.push_str(&line("┡", "╇", "┩", "━"));
    for r in rows {
        s.push_str(&row(r, "│"));
    }
    s.push_str(&line("└", "┴", "┘", "─"));
    s
}

/// Everything printed after the run.
pub(crate) fn results(summary: &ExecutionSummary) -> String {
    let mut s = String::new();
    for e in &summary.team_results {
        let partial = summary.is_partial(e.team_id.as_str());
        if partial {
            s.push_str(&format!(
                "⚠️  Team {}: {} (Round {}) [Partial]\n",
                e.team_id, e.team_name, e.round_number
            ));
        } else {
            s.push_str(&format!(
                "✅ Team {}: {} (Round {})\n",
                e.team_id, e.team_name, e.round_number
            ));
        }
        s.push_str(&format!("   Score: {:.2}\n", e.score));
        s.push_str(&format!(
            "   Exit Reason: {}\n\n",
            e.exit_reason.as_deref().unwrap_or("N/A")
        ));
    }
    if !summary.failed_teams_info.is_empty() {
        s.push_str("❌ Failed Teams:\n");
        for f in &summary.failed_teams_info {
            if summary.is_partial(f.team_id.as_str()) {
                s.push_str(&format!(
                    "   • {}: {} [Partial - see leaderboard]\n",
                    f.team_id, f.team_name
                ));
            } else {
                s.push_str(&format!("   • {}: {}\n", f.team_id, f.team_name));
            }
            s.push_str(&format!("     Error: {}\n\n", f.error_message));
        }
    }
    if let (Some(best_id), Some(best_score)) = (&summary.best_team_id, summary.best_score) {
        s.push_str(&format!(
            "{RULE}\n🏆 Best Result (Team {best_id}, Score: {best_score:.2})\n{RULE}\n\n"
        ));
        if let Some(e) = summary.team_results.iter().find(|e| &e.team_id == best_id) {
            s.push_str(&e.submission_content);
            s.push_str("\n\n");
        }
    }
    s.push('\n');
    s.push_str(&leaderboard_table(summary));
    s.push('\n');
    s.push_str(&format!("{RULE}\n📊 Summary\n{RULE}\n\n"));
    s.push_str(&format!("Total Teams:      {}\n", summary.total_teams()));
    s.push_str(&format!(
        "Completed Teams:  {}\n",
        summary.completed_teams()
    ));
    s.push_str(&format!("Failed Teams:     {}\n", summary.failed_teams()));
    if summary.partial_teams() > 0 {
        s.push_str(&format!("Partial Teams:    {}\n", summary.partial_teams()));
    }
    s.push_str(&format!(
        "Execution Time:   {:.1}s\n",
        summary.total_execution_time_seconds
    ));
    let u = &summary.usage;
    let cost = if u.unpriced_requests > 0 {
        format!(
            "${:.4} (+{} call(s) without a price)",
            u.cost_usd, u.unpriced_requests
        )
    } else {
        format!("${:.4}", u.cost_usd)
    };
    s.push_str(&format!(
        "LLM Usage:        {} requests, {} input + {} output tokens, cost {cost}\n",
        u.requests, u.input_tokens, u.output_tokens
    ));
    if let Some(reason) = &summary.stop_reason {
        s.push_str(&format!("Stopped Early:    {reason}\n"));
    }
    if !summary.stopped_team_ids.is_empty() {
        s.push_str(&format!(
            "Not Finished:     {}\n",
            summary.stopped_team_ids.join(", ")
        ));
    }
    s.push_str("\n💾 Results saved to DuckDB\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use mixseek_core::{
        ExecutionStatus, FailedTeamInfo, LeaderboardEntry, ScoreDetails, Usage, UsageByRole,
    };

    fn entry(id: &str, name: &str, score: f64) -> LeaderboardEntry {
        LeaderboardEntry {
            id: None,
            execution_id: "e".into(),
            team_id: id.into(),
            team_name: name.into(),
            round_number: 2,
            submission_content: "best".into(),
            submission_format: "md".into(),
            score,
            score_details: ScoreDetails {
                overall_score: score,
                metrics: vec![],
            },
            final_submission: true,
            exit_reason: Some("max_rounds_reached".into()),
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn a_tie_is_ranked_by_team_id_as_the_summary_and_the_store_do() {
        let results = vec![entry("b", "Team B", 80.0), entry("a", "Team A", 80.0)];
        let summary = ExecutionSummary {
            execution_id: "e".into(),
            user_prompt: "p".into(),
            best_team_id: ExecutionSummary::pick_best(&results).map(|b| b.team_id.clone()),
            best_score: Some(80.0),
            team_results: results,
            total_execution_time_seconds: 1.0,
            failed_teams_info: vec![],
            created_at: chrono::Utc::now(),
            status: ExecutionStatus::Completed,
            usage: Usage::default(),
            usage_by_role: UsageByRole::default(),
            stop_reason: None,
            stopped_team_ids: Vec::new(),
        };
        assert_eq!(
            summary
                .best_team_id
                .as_ref()
                .map(mixseek_core::TeamId::as_str),
            Some("a")
        );
        let table = leaderboard_table(&summary);
        let (a, b) = (table.find("Team A"), table.find("Team B"));
        assert!(a.is_some() && a < b, "{table}");
        assert!(table.contains("│      1 │ Team A "), "{table}");
    }

    #[test]
    fn leaderboard_table_matches_the_original_byte_for_byte() {
        let summary = ExecutionSummary {
            execution_id: "e".into(),
            user_prompt: "p".into(),
            team_results: vec![
                entry("a", "Alpha Team", 87.5),
                entry("b", "Beta Team With A Long Name", 80.0),
            ],
            best_team_id: Some("a".into()),
            best_score: Some(87.5),
            total_execution_time_seconds: 1.0,
            failed_teams_info: vec![
                FailedTeamInfo {
                    team_id: "b".into(),
                    team_name: "Beta Team With A Long Name".into(),
                    error_message: "x".into(),
                },
                FailedTeamInfo {
                    team_id: "g".into(),
                    team_name: "Gamma Team".into(),
                    error_message: "y".into(),
                },
            ],
            created_at: chrono::Utc::now(),
            status: ExecutionStatus::PartialFailure,
            usage: Usage::default(),
            usage_by_role: UsageByRole::default(),
            stop_reason: None,
            stopped_team_ids: Vec::new(),
        };
        let expected = concat!(
            "                      🏆 Leaderboard                       \n",
            "┏━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━━━━━┓\n",
            "┃   Rank ┃ Team                 ┃    Score ┃ Status       ┃\n",
            "┡━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━━━━━┩\n",
            "│      1 │ Alpha Team           │    87.50 │ ✅ Completed │\n",
            "│      2 │ Beta Team With A     │    80.00 │ ⚠️ Partial   │\n",
            "│        │ Long Name            │          │              │\n",
            "│      — │ Gamma Team           │        — │ ❌ Failed    │\n",
            "└────────┴──────────────────────┴──────────┴──────────────┘\n",
        );
        assert_eq!(leaderboard_table(&summary), expected);
        let text = results(&summary);
        assert!(text.contains("⚠️  Team b: Beta Team With A Long Name (Round 2) [Partial]\n   Score: 80.00\n   Exit Reason: max_rounds_reached\n\n"));
        assert!(text.contains(
            "   • b: Beta Team With A Long Name [Partial - see leaderboard]\n     Error: x\n\n"
        ));
        assert!(text.contains("   • g: Gamma Team\n     Error: y\n\n"));
        assert!(text.contains("Partial Teams:    1\n"));
    }
}
