//! The outputs of the report commands as `String`s, in four formats: `table` (box-drawn,
//! for people), `json` (pretty, full ids and precision), `csv` (RFC 4180, one row per line
//! item) and `markdown`. Plus the self-contained HTML report ([`html::render`]).

mod agreement_section;
mod arena_section;
pub mod html;
pub mod text;
mod themes_section;

use crate::arena::ArenaDetail;
use crate::error::{Result, StoreError};
use crate::model::*;
use crate::themes::ThemeAnalysis;
use serde::Serialize;
use text::{Align, Grid};

/// An output format of the report commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A box-drawn table, for people (`table`, also `text`).
    Table,
    /// Pretty JSON with full ids and precision (`json`).
    Json,
    /// RFC 4180 CSV, one row per line item (`csv`).
    Csv,
    /// Markdown: headings and GitHub-flavoured tables (`markdown`, also `md`).
    Markdown,
}

impl Format {
    /// The names accepted by `-f/--format`.
    pub const NAMES: [&'static str; 4] = ["table", "json", "csv", "markdown"];

    /// The format of a name in [`Format::NAMES`], or of its alias `text` / `md` (any case);
    /// another name is [`StoreError::Invalid`].
    pub fn parse(s: &str) -> Result<Format> {
        match s.to_ascii_lowercase().as_str() {
            "table" | "text" => Ok(Format::Table),
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            "markdown" | "md" => Ok(Format::Markdown),
            other => Err(StoreError::Invalid(format!(
                "unknown format `{other}` (expected one of: {})",
                Format::NAMES.join(", ")
            ))),
        }
    }
}

fn with_title(title: &str, body: &str, fmt: Format) -> String {
    match fmt {
        Format::Markdown => format!("## {}\n\n{body}", text::md_inline(title)),
        _ => format!("{title}\n{body}\n"),
    }
}

/// `mixseek leaderboard`. `execution_id` is the execution shown (`None` = across executions).
pub fn leaderboard(
    rows: &[LeaderboardRow],
    execution_id: Option<&str>,
    fmt: Format,
) -> Result<String> {
    match fmt {
        Format::Json => return text::json_of(rows),
        Format::Csv => {
            return text::csv_of(
                rows,
                &[
                    "rank",
                    "team_id",
                    "team_name",
                    "score",
                    "round_number",
                    "total_rounds",
                    "execution_id",
                    "final_submission",
                    "exit_reason",
                    "round_ended_at",
                ],
            );
        }
        Format::Table | Format::Markdown => {}
    }
    let title = match execution_id {
        Some(id) => format!("🏆 Leaderboard — execution {id}"),
        None => "🏆 Leaderboard — best round of each team across all executions".to_string(),
    };
    if rows.is_empty() {
        return Ok(with_title(&title, "No evaluated rounds yet.", fmt));
    }
    let mut cols = vec![
        ("Rank", Align::Right),
        ("Team", Align::Left),
        ("Team ID", Align::Left),
        ("Score", Align::Right),
        ("Round", Align::Right),
        ("Rounds", Align::Right),
        ("Exit reason", Align::Left),
    ];
    if execution_id.is_none() {
        cols.push(("Execution", Align::Left));
    }
    let mut g = Grid::new(&cols);
    for r in rows {
        let mut row = vec![
            r.rank.to_string(),
            r.team_name.clone(),
            r.team_id.to_string(),
            text::score(r.score),
            r.round_number.to_string(),
            r.total_rounds.to_string(),
            if r.final_submission {
                text::or_dash(r.exit_reason.as_deref())
            } else {
                "(running)".into()
            },
        ];
        if execution_id.is_none() {
            row.push(text::short_id(r.execution_id.as_str()));
        }
        g.push(row);
    }
    let body = if fmt == Format::Markdown {
        g.to_markdown()
    } else {
        g.to_table()
    };
    Ok(with_title(&title, &body, fmt))
}

/// `mixseek executions`.
pub fn executions(rows: &[ExecutionRow], fmt: Format) -> Result<String> {
    match fmt {
        Format::Json => return text::json_of(rows),
        Format::Csv => {
            return text::csv_of(
                rows,
                &[
                    "execution_id",
                    "user_prompt",
                    "status",
                    "total_teams",
                    "best_team_id",
                    "best_score",
                    "total_execution_time_seconds",
                    "rounds",
                    "input_tokens",
                    "output_tokens",
                    "cost_usd",
                    "created_at",
                    "completed_at",
                ],
            );
        }
        Format::Table | Format::Markdown => {}
    }
    if rows.is_empty() {
        return Ok(with_title("Executions", "No executions recorded yet.", fmt));
    }
    let mut g = Grid::new(&[
        ("Execution", Align::Left),
        ("Started", Align::Left),
        ("Status", Align::Left),
        ("Teams", Align::Right),
        ("Rounds", Align::Right),
        ("Best team", Align::Left),
        ("Best", Align::Right),
        ("Time", Align::Right),
        ("Cost", Align::Right),
        ("Prompt", Align::Left),
    ]);
    for e in rows {
        g.push(vec![
            text::short_id(e.execution_id.as_str()),
            text::time(&e.created_at),
            e.status.clone(),
            e.total_teams.to_string(),
            e.rounds.to_string(),
            text::or_dash(e.best_team_id.as_ref().map(|id| id.as_str())),
            text::opt_score(e.best_score),
            e.total_execution_time_seconds
                .map(|t| format!("{t:.1}s"))
                .unwrap_or_else(|| "—".into()),
            text::cost(e.cost_usd),
            text::clip(&e.user_prompt, 40),
        ]);
    }
    let body = if fmt == Format::Markdown {
        g.to_markdown()
    } else {
        g.to_table()
    };
    Ok(with_title("Executions (newest first)", &body, fmt))
}

fn history_grid(rows: &[HistoryRow], with_team: bool) -> Grid {
    let mut cols = Vec::new();
    if with_team {
        cols.push(("Team", Align::Left));
    }
    cols.extend([
        ("Round", Align::Right),
        ("Score", Align::Right),
        ("Decision", Align::Left),
        ("Conf.", Align::Right),
        ("Final", Align::Left),
        ("Tokens", Align::Right),
        ("Cost", Align::Right),
        ("Ended", Align::Left),
        ("Reasoning", Align::Left),
    ]);
    let mut g = Grid::new(&cols);
    for r in rows {
        let mut row = Vec::new();
        if with_team {
            row.push(format!("{} ({})", r.team_name, r.team_id));
        }
        row.extend([
            r.round_number.to_string(),
            r.score
                .map_or_else(|| NOT_EVALUATED.to_string(), text::score),
            text::decision(r.should_continue),
            r.confidence_score
                .map(|c| format!("{c:.2}"))
                .unwrap_or_else(|| "—".into()),
            if r.final_submission {
                format!("★ {}", text::or_dash(r.exit_reason.as_deref()))
            } else {
                String::new()
            },
            (r.input_tokens + r.output_tokens).to_string(),
            text::cost(r.cost_usd),
            text::opt_time(r.round_ended_at.as_ref()),
            text::clip(r.reasoning.as_deref().unwrap_or(""), 60),
        ]);
        g.push(row);
    }
    g
}

/// How a round without an evaluation shows in place of its score.
const NOT_EVALUATED: &str = "not evaluated";

/// What `show --team T --round N` says of a round without an evaluation.
const NOT_EVALUATED_NOTE: &str = "not evaluated (the evaluation failed or did not finish): no score, not ranked, not a completed round";

const HISTORY_CSV_HEADER: [&str; 16] = [
    "execution_id",
    "team_id",
    "team_name",
    "round_number",
    "score",
    "evaluated",
    "should_continue",
    "reasoning",
    "confidence_score",
    "final_submission",
    "exit_reason",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "round_started_at",
    "round_ended_at",
];

/// `mixseek history`.
pub fn history(
    rows: &[HistoryRow],
    execution_id: &str,
    team_id: Option<&str>,
    fmt: Format,
) -> Result<String> {
    match fmt {
        Format::Json => return text::json_of(rows),
        Format::Csv => return text::csv_of(rows, &HISTORY_CSV_HEADER),
        Format::Table | Format::Markdown => {}
    }
    let title = match team_id {
        Some(t) => format!("History of team {t} — execution {execution_id}"),
        None => format!("History — execution {execution_id}"),
    };
    if rows.is_empty() {
        return Ok(with_title(&title, "No rounds recorded.", fmt));
    }
    let g = history_grid(rows, team_id.is_none());
    let body = if fmt == Format::Markdown {
        g.to_markdown()
    } else {
        g.to_table()
    };
    Ok(with_title(&title, &body, fmt))
}

#[derive(Serialize)]
struct TeamCsv<'a> {
    team_id: &'a str,
    team_name: &'a str,
    rounds: u32,
    unevaluated_rounds: u32,
    best_score: Option<f64>,
    best_round: Option<u32>,
    final_submission: bool,
    exit_reason: Option<&'a str>,
    error_message: Option<&'a str>,
    input_tokens: u64,
    output_tokens: u64,
    cost_usd: f64,
}

fn kv_lines(pairs: &[(&str, String)], fmt: Format) -> String {
    let width = pairs
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    pairs
        .iter()
        .map(|(k, v)| match fmt {
            Format::Markdown => format!("- **{k}**: {}\n", text::md_inline(&v.replace('\n', " "))),
            _ => format!("{k:<width$}  {v}\n"),
        })
        .collect()
}

/// `mixseek show EXECUTION_ID`. When a submission of the execution competed in an arena, the
/// table and Markdown end with an "Arena" section (the latest arena's ratings), and the JSON
/// has an `arena` key (its summary and ratings).
pub fn show_execution(o: &ExecutionOverview, fmt: Format) -> Result<String> {
    match fmt {
        Format::Json => return text::json_of(o),
        Format::Csv => {
            let rows: Vec<TeamCsv<'_>> = o
                .teams
                .iter()
                .map(|t| TeamCsv {
                    team_id: t.team_id.as_str(),
                    team_name: &t.team_name,
                    rounds: t.rounds,
                    unevaluated_rounds: t.unevaluated_rounds,
                    best_score: t.best_score,
                    best_round: t.best_round,
                    final_submission: t.final_submission,
                    exit_reason: t.exit_reason.as_deref(),
                    error_message: t.error_message.as_deref(),
                    input_tokens: t.usage.input_tokens,
                    output_tokens: t.usage.output_tokens,
                    cost_usd: t.usage.cost_usd,
                })
                .collect();
            return text::csv_of(
                &rows,
                &[
                    "team_id",
                    "team_name",
                    "rounds",
                    "unevaluated_rounds",
                    "best_score",
                    "best_round",
                    "final_submission",
                    "exit_reason",
                    "error_message",
                    "input_tokens",
                    "output_tokens",
                    "cost_usd",
                ],
            );
        }
        Format::Table | Format::Markdown => {}
    }
    let e = &o.execution;
    let mut pairs = vec![
        ("Execution", e.execution_id.to_string()),
        ("Status", e.status.clone()),
        ("Prompt", e.user_prompt.clone()),
        ("Started", text::time(&e.created_at)),
        ("Completed", text::opt_time(e.completed_at.as_ref())),
        (
            "Duration",
            e.total_execution_time_seconds
                .map(|t| format!("{t:.1}s"))
                .unwrap_or_else(|| "—".into()),
        ),
        (
            "Max rounds",
            o.max_rounds
                .map(|m| m.to_string())
                .unwrap_or_else(|| "—".into()),
        ),
        (
            "Best",
            match (&e.best_team_id, e.best_score) {
                (Some(t), Some(s)) => format!("{t} ({})", text::score(s)),
                _ => "—".into(),
            },
        ),
        (
            "Usage",
            format!(
                "{} input / {} output tokens, {} requests, cost {}",
                o.usage.input_tokens,
                o.usage.output_tokens,
                o.usage.requests,
                text::cost(o.usage.cost_usd)
            ),
        ),
    ];
    if let Some(r) = &o.stop_reason {
        pairs.push(("Stopped", r.clone()));
    }
    let mut g = Grid::new(&[
        ("Team", Align::Left),
        ("Team ID", Align::Left),
        ("Rounds", Align::Right),
        ("Best", Align::Right),
        ("Best round", Align::Right),
        ("Exit reason", Align::Left),
        ("Cost", Align::Right),
        ("Error", Align::Left),
    ]);
    for t in &o.teams {
        g.push(vec![
            t.team_name.clone(),
            t.team_id.to_string(),
            if t.unevaluated_rounds > 0 {
                format!("{} (+{} {NOT_EVALUATED})", t.rounds, t.unevaluated_rounds)
            } else {
                t.rounds.to_string()
            },
            text::opt_score(t.best_score),
            t.best_round
                .map(|r| r.to_string())
                .unwrap_or_else(|| "—".into()),
            text::or_dash(t.exit_reason.as_deref()),
            text::cost(t.usage.cost_usd),
            text::clip(t.error_message.as_deref().unwrap_or(""), 50),
        ]);
    }
    let mut out = match fmt {
        Format::Markdown => {
            format!(
                "# Execution {}\n\n{}\n## Teams\n\n{}",
                text::md_inline(e.execution_id.as_str()),
                kv_lines(&pairs, fmt),
                g.to_markdown()
            )
        }
        _ => format!("{}\n{}\n", kv_lines(&pairs, fmt), g.to_table()),
    };
    let agreement = agreement_section::text_section(&o.agreement, fmt);
    if !agreement.is_empty() {
        out.push('\n');
        out.push_str(&agreement);
    }
    if let Some(a) = &o.arena {
        out.push('\n');
        out.push_str(&arena_section::text_section(a, fmt));
    }
    Ok(out)
}

/// The columns of `mixseek arena -f csv` (one row per rating).
const ARENA_CSV_HEADER: [&str; 12] = [
    "execution_id",
    "team_id",
    "team_name",
    "round_number",
    "rating",
    "lower",
    "upper",
    "rank",
    "wins",
    "losses",
    "ties",
    "games",
];

/// An arena (`mixseek arena`, and after `mixseek exec` when it runs one): table and Markdown
/// show the ratings (rank, team, rating, interval, W-L-T, games) and how they were obtained;
/// JSON is the whole [`ArenaDetail`] (the summary's fields, `ratings` and `game_rows`); CSV one
/// row per rating.
pub fn arena(a: &ArenaDetail, fmt: Format) -> Result<String> {
    match fmt {
        Format::Json => text::json_of(a),
        Format::Csv => text::csv_of(&a.ratings, &ARENA_CSV_HEADER),
        Format::Table | Format::Markdown => Ok(arena_section::text_section(a, fmt)),
    }
}

/// A theme analysis of judge comments (`mixseek analyze`): table and Markdown show every
/// theme (team, metric, theme, kind and severity, rounds, confidence, a quote) and how the
/// analysis was made; JSON is the whole [`ThemeAnalysis`] (the summary's fields and `themes`
/// with every quote); CSV one row per theme.
pub fn themes(a: &ThemeAnalysis, fmt: Format) -> Result<String> {
    match fmt {
        Format::Json => text::json_of(a),
        Format::Csv => text::csv_of(&themes_section::csv_rows(a), &themes_section::CSV_HEADER),
        Format::Table | Format::Markdown => Ok(themes_section::text_section(a, fmt)),
    }
}

/// `mixseek show EXECUTION_ID --team TEAM`: the team's rounds. Table, Markdown and CSV list
/// `history` (unevaluated rounds included, marked `not evaluated`); JSON is the evaluated
/// `rounds` in full.
pub fn show_team(
    execution_id: &str,
    team_id: &str,
    rounds: &[CompletedRound],
    history: &[HistoryRow],
    fmt: Format,
) -> Result<String> {
    match fmt {
        Format::Json => text::json_of(rounds),
        Format::Csv => text::csv_of(history, &HISTORY_CSV_HEADER),
        Format::Table | Format::Markdown => {
            let name = rounds
                .last()
                .map(|r| r.team_name.as_str())
                .or_else(|| history.last().map(|r| r.team_name.as_str()))
                .unwrap_or(team_id);
            let title = format!("Team {name} ({team_id}) — execution {execution_id}");
            if history.is_empty() {
                return Ok(with_title(&title, "No rounds recorded.", fmt));
            }
            let g = history_grid(history, false);
            let body = if fmt == Format::Markdown {
                g.to_markdown()
            } else {
                g.to_table()
            };
            Ok(with_title(&title, &body, fmt))
        }
    }
}

#[derive(Serialize)]
struct MetricCsv<'a> {
    execution_id: &'a str,
    team_id: &'a str,
    round_number: u32,
    metric_name: String,
    /// Empty for a failed metric.
    score: Option<f64>,
    /// `scored` or `failed` (skipped with `on_metric_error = "skip"`).
    status: &'static str,
    evaluator_comment: String,
    /// Why the metric failed.
    error: Option<String>,
}

/// A metric's score cell: its score (`↓` after it when lower is better), or `failed` (a
/// failed metric's stored 0.0 is no score).
pub(crate) fn metric_score(m: &MetricLine) -> String {
    match (m.failed(), m.minimized) {
        (true, _) => "failed".into(),
        (false, true) => format!("{} ↓", text::opt_score(m.score)),
        (false, false) => text::opt_score(m.score),
    }
}

/// A metric's comment cell: its comment, or for a failed metric why it failed.
pub(crate) fn metric_comment(m: &MetricLine) -> String {
    m.error
        .clone()
        .unwrap_or_else(|| m.evaluator_comment.clone())
}

/// Member submissions of a stored record: (agent, status, tokens, content).
fn members_of(d: &RoundDetail) -> Vec<(String, String, u64, String)> {
    d.member_submissions
        .as_ref()
        .and_then(|m| m.get("submissions"))
        .and_then(|s| s.as_array())
        .map(|subs| {
            subs.iter()
                .map(|s| {
                    let tokens = s
                        .get("usage")
                        .map(|u| {
                            u.get("input_tokens").and_then(|v| v.as_u64()).unwrap_or(0)
                                + u.get("output_tokens").and_then(|v| v.as_u64()).unwrap_or(0)
                        })
                        .unwrap_or(0);
                    (
                        s.get("agent_name")
                            .and_then(|v| v.as_str())
                            .unwrap_or("?")
                            .to_string(),
                        s.get("status")
                            .and_then(|v| v.as_str())
                            .unwrap_or("?")
                            .to_string(),
                        tokens,
                        s.get("content")
                            .and_then(|v| v.as_str())
                            .unwrap_or("")
                            .to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `mixseek show EXECUTION_ID --team TEAM --round N`.
pub fn show_round(d: &RoundDetail, fmt: Format) -> Result<String> {
    match fmt {
        Format::Json => return text::json_of(d),
        Format::Csv => {
            let rows: Vec<MetricCsv<'_>> = d
                .metrics()
                .into_iter()
                .map(|m| MetricCsv {
                    execution_id: d.execution_id.as_str(),
                    team_id: d.team_id.as_str(),
                    round_number: d.round_number,
                    status: if m.failed() { "failed" } else { "scored" },
                    metric_name: m.metric_name,
                    score: m.score,
                    evaluator_comment: m.evaluator_comment,
                    error: m.error,
                })
                .collect();
            return text::csv_of(
                &rows,
                &[
                    "execution_id",
                    "team_id",
                    "round_number",
                    "metric_name",
                    "score",
                    "status",
                    "evaluator_comment",
                    "error",
                ],
            );
        }
        Format::Table | Format::Markdown => {}
    }
    let md = fmt == Format::Markdown;
    let u = d.usage.total();
    let mut pairs = vec![
        ("Execution", d.execution_id.to_string()),
        ("Team", format!("{} ({})", d.team_name, d.team_id)),
        ("Round", d.round_number.to_string()),
    ];
    match d.score.filter(|_| d.evaluated) {
        Some(score) => pairs.extend([
            ("Score", text::score(score)),
            ("Started", text::opt_time(d.round_started_at.as_ref())),
            ("Ended", text::opt_time(d.round_ended_at.as_ref())),
            ("Decision", text::decision(d.decision.should_continue)),
        ]),
        None => pairs.push(("Score", NOT_EVALUATED_NOTE.to_string())),
    }
    if let Some(c) = d.decision.confidence_score {
        pairs.push(("Confidence", format!("{c:.2}")));
    }
    if let Some(r) = d.decision.reasoning.as_deref().filter(|r| !r.is_empty()) {
        pairs.push(("Reasoning", r.to_string()));
    }
    if d.final_submission {
        pairs.push((
            "Final",
            format!("yes ({})", text::or_dash(d.exit_reason.as_deref())),
        ));
    }
    pairs.push((
        "Usage",
        format!(
            "{} input / {} output tokens, {} requests, cost {} (agents {}, evaluation {}, judgment {})",
            u.input_tokens,
            u.output_tokens,
            u.requests,
            text::cost(u.cost_usd),
            d.usage.agent.total_tokens(),
            d.usage.evaluation.total_tokens(),
            d.usage.judgment.total_tokens()
        ),
    ));
    if d.pii_masked {
        pairs.push(("PII", "masked (SHA-256 of the original kept)".into()));
    }
    if !d.applied_injections.is_empty() {
        let applied: Vec<String> = d
            .applied_injections
            .iter()
            .map(|a| format!("{} {}: {}", a.phase, a.side, a.rules.join(", ")))
            .collect();
        pairs.push(("Injections", applied.join("; ")));
    }
    let mut metrics = Grid::new(&[
        ("Metric", Align::Left),
        ("Score", Align::Right),
        ("Comment", Align::Left),
    ]);
    for m in d.metrics() {
        let comment = metric_comment(&m);
        metrics.push(vec![
            m.metric_name.clone(),
            metric_score(&m),
            if md {
                comment
            } else {
                text::clip(&comment, 80)
            },
        ]);
    }
    let mut members = Grid::new(&[
        ("Member", Align::Left),
        ("Status", Align::Left),
        ("Tokens", Align::Right),
        ("Output", Align::Left),
    ]);
    let member_rows = members_of(d);
    for (name, status, tokens, content) in &member_rows {
        members.push(vec![
            name.clone(),
            status.clone(),
            tokens.to_string(),
            text::clip(content, 60),
        ]);
    }
    let mut out = String::new();
    if md {
        out.push_str(&format!(
            "# Round {} of {} ({})\n\n",
            d.round_number,
            text::md_inline(&d.team_name),
            text::md_inline(d.team_id.as_str())
        ));
        out.push_str(&kv_lines(&pairs, fmt));
        if d.evaluated {
            out.push_str("\n## Metrics\n\n");
            out.push_str(&metrics.to_markdown());
        }
        out.push_str("\n## Submission\n\n");
        out.push_str(&text::md_fenced(&d.submission_content));
        if !member_rows.is_empty() {
            out.push_str("\n## Member submissions\n\n");
            out.push_str(&members.to_markdown());
        }
    } else {
        out.push_str(&kv_lines(&pairs, fmt));
        out.push('\n');
        if d.evaluated {
            out.push_str(&metrics.to_table());
            out.push_str("\n\n");
        }
        out.push_str("Submission\n──────────\n");
        out.push_str(&d.submission_content);
        out.push('\n');
        if !member_rows.is_empty() {
            out.push('\n');
            out.push_str(&members.to_table());
            out.push('\n');
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::metrics_of;

    #[test]
    fn a_minimized_metric_shows_its_raw_score_with_an_arrow() {
        let details = serde_json::json!({"overall_score": 87.5, "metrics": [
            {"metric_name": "errors", "score": 12.5, "evaluator_comment": "",
             "direction": "minimize", "oriented_score": 87.5},
            {"metric_name": "Relevance", "score": 80.0, "evaluator_comment": ""},
            {"metric_name": "Coverage", "score": 0.0, "evaluator_comment": "timeout",
             "status": "failed", "direction": "minimize"}
        ]});
        let cells: Vec<String> = metrics_of(&details).iter().map(metric_score).collect();
        assert_eq!(cells, ["12.50 ↓", "80.00", "failed"]);
    }
}
