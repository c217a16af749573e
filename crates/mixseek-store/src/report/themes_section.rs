//! A theme analysis of judge comments as text (`mixseek analyze`, table and Markdown) and as
//! the "Themes of judge comments" section of the HTML report: per team and metric, the themes
//! with their confidence, the rounds they were seen in and a quote; the HTML report lists
//! every quote.

use super::Format;
use super::html::escape;
use super::text::{self, Align, Grid};
use crate::themes::{ThemeAnalysis, ThemeRow};
use serde::Serialize;
use std::fmt::Write as _;

/// `1, 2, 4`.
fn rounds(t: &ThemeRow) -> String {
    t.rounds
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `criticism (high)`, `praise (low)`, `keyword`.
fn kind(t: &ThemeRow) -> String {
    match &t.severity {
        Some(s) => format!("{} ({s})", t.kind),
        None => t.kind.clone(),
    }
}

/// `High 0.82`.
fn confidence(t: &ThemeRow) -> String {
    format!("{} {:.2}", t.confidence_label, t.confidence)
}

/// `Team name (team_id)`.
fn team(t: &ThemeRow) -> String {
    format!("{} ({})", t.team_name, t.team_id)
}

/// How the analysis was made: `N comments on R rounds of T teams; themes named by MODEL (C
/// calls, F failed, Q quotes not found in the comments and dropped)` or `…; keywords only`.
pub(super) fn summary_line(a: &ThemeAnalysis) -> String {
    let s = &a.summary;
    let mut line = format!(
        "{} comments on {} rounds of {} team{}; ",
        s.comments,
        s.rounds_analysed,
        s.teams,
        if s.teams == 1 { "" } else { "s" }
    );
    match &s.model {
        Some(m) => {
            let _ = write!(
                line,
                "themes named by {m} ({} calls, {} failed, {} quotes not found in the comments \
                 and dropped) and keywords (RAKE)",
                s.llm_calls, s.failed_calls, s.rejected_quotes
            );
        }
        None => line.push_str("keywords (RAKE) only: pass --model to have an LLM name themes"),
    }
    line.push_str(
        "; confidence = 0.7 × share of rounds + 0.3 × quotes/3 (High ≥ 0.7, Medium ≥ 0.4)",
    );
    line
}

fn title(a: &ThemeAnalysis) -> String {
    format!(
        "Themes of judge comments {} — execution {} — {}",
        a.summary.analysis_id,
        text::short_id(&a.summary.execution_id),
        text::time(&a.summary.created_at)
    )
}

/// The first quote of a theme, clipped, in quotes; `—` when it has none.
fn first_quote(t: &ThemeRow, max: usize) -> String {
    t.evidence.first().map_or_else(
        || "—".into(),
        |e| format!("r{}: “{}”", e.round_number, text::clip(&e.quote, max)),
    )
}

/// The analysis in a table or Markdown: one grid of every theme (team, metric, theme, kind,
/// rounds, confidence, a quote), then how it was made.
pub(super) fn text_section(a: &ThemeAnalysis, fmt: Format) -> String {
    let mut g = Grid::new(&[
        ("Team", Align::Left),
        ("Metric", Align::Left),
        ("Theme", Align::Left),
        ("Kind", Align::Left),
        ("Rounds", Align::Left),
        ("Confidence", Align::Right),
        ("Evidence", Align::Left),
    ]);
    for t in &a.themes {
        g.push(vec![
            team(t),
            t.metric_name.clone(),
            text::clip(&t.theme, 40),
            kind(t),
            rounds(t),
            confidence(t),
            first_quote(t, 60),
        ]);
    }
    let md = fmt == Format::Markdown;
    let table = match (a.themes.is_empty(), md) {
        (true, _) => "No themes: the judges left no comments to analyse.\n".to_string(),
        (false, true) => g.to_markdown(),
        (false, false) => format!("{}\n", g.to_table()),
    };
    match fmt {
        Format::Markdown => format!(
            "## Themes of judge comments\n\n{}\n\n{table}\n{}\n",
            text::md_inline(&title(a)),
            text::md_inline(&summary_line(a))
        ),
        Format::Table => format!("{}\n{table}{}\n", title(a), summary_line(a)),
        Format::Json | Format::Csv => String::new(),
    }
}

/// One theme as a CSV row of `mixseek analyze -f csv`.
#[derive(Serialize)]
pub(super) struct CsvRow<'a> {
    team_id: &'a str,
    team_name: &'a str,
    metric_name: &'a str,
    source: &'a str,
    theme: &'a str,
    kind: &'a str,
    severity: Option<&'a str>,
    summary: Option<&'a str>,
    rounds: String,
    frequency: f64,
    quotes: usize,
    confidence: f64,
    confidence_label: &'a str,
    keyword_score: Option<f64>,
}

/// The columns of `mixseek analyze -f csv`.
pub(super) const CSV_HEADER: [&str; 14] = [
    "team_id",
    "team_name",
    "metric_name",
    "source",
    "theme",
    "kind",
    "severity",
    "summary",
    "rounds",
    "frequency",
    "quotes",
    "confidence",
    "confidence_label",
    "keyword_score",
];

/// The rows of `mixseek analyze -f csv` (rounds space-separated; quotes counted).
pub(super) fn csv_rows(a: &ThemeAnalysis) -> Vec<CsvRow<'_>> {
    a.themes
        .iter()
        .map(|t| CsvRow {
            team_id: &t.team_id,
            team_name: &t.team_name,
            metric_name: &t.metric_name,
            source: &t.source,
            theme: &t.theme,
            kind: &t.kind,
            severity: t.severity.as_deref(),
            summary: t.summary.as_deref(),
            rounds: t
                .rounds
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" "),
            frequency: t.frequency,
            quotes: t.evidence.len(),
            confidence: t.confidence,
            confidence_label: &t.confidence_label,
            keyword_score: t.keyword_score,
        })
        .collect()
}

/// The section of the HTML report: per team, a table of its themes (metric, theme, kind,
/// rounds, confidence) with the summary and every quote, every text escaped.
pub(super) fn html_section(a: &ThemeAnalysis) -> String {
    let mut h = String::new();
    let s = &a.summary;
    let _ = writeln!(
        h,
        "<h2>Themes of judge comments</h2>\n<p class=\"muted\">Analysis <code>{}</code> — {}</p>\n<p>{}</p>",
        escape(&s.analysis_id),
        escape(&text::time(&s.created_at)),
        escape(&summary_line(a))
    );
    if a.themes.is_empty() {
        h.push_str("<p>No themes: the judges left no comments to analyse.</p>\n");
        return h;
    }
    let mut teams: Vec<(&str, String)> = Vec::new();
    for t in &a.themes {
        if !teams.iter().any(|(id, _)| *id == t.team_id) {
            teams.push((&t.team_id, team(t)));
        }
    }
    for (team_id, name) in teams {
        let _ = writeln!(
            h,
            "<h3>{}</h3>\n<table class=\"themes\">\n<thead><tr><th>Metric</th><th>Theme</th><th>Kind</th>\
             <th>Rounds</th><th>Confidence</th><th>Evidence</th></tr></thead>\n<tbody>",
            escape(&name)
        );
        for t in a.themes.iter().filter(|t| t.team_id == team_id) {
            let mut evidence = String::new();
            if let Some(summary) = &t.summary {
                let _ = write!(evidence, "<p>{}</p>", escape(summary));
            }
            for e in &t.evidence {
                let _ = write!(
                    evidence,
                    "<blockquote>r{}: {}</blockquote>",
                    e.round_number,
                    escape(&e.quote)
                );
            }
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                escape(&t.metric_name),
                escape(&t.theme),
                escape(&kind(t)),
                escape(&rounds(t)),
                escape(&confidence(t)),
                evidence
            );
        }
        h.push_str("</tbody>\n</table>\n");
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_text_of_the_html_section_is_escaped() {
        let mut a = crate::themes::tests::record();
        a.themes[0].theme = "<script>alert(1)</script>".into();
        a.themes[0].evidence[0].quote = "<img src=x onerror=alert(1)>".into();
        a.themes[0].summary = Some("</td></table>".into());
        a.themes[0].team_name = "<b>t</b>".into();
        let h = html_section(&a);
        for raw in ["<script>", "<img", "</td></table>", "<b>t</b>"] {
            assert!(!h.contains(raw), "{raw} must be escaped:\n{h}");
        }
        assert!(h.contains("&lt;script&gt;"));
    }

    #[test]
    fn text_names_how_it_was_made() {
        let mut a = crate::themes::tests::record();
        let t = text_section(&a, Format::Table);
        assert!(t.contains("themes named by mock:themes"), "{t}");
        assert!(t.contains("criticism (high)"), "{t}");
        assert!(t.contains("High 0.80"), "{t}");
        a.summary.model = None;
        a.themes.clear();
        let t = text_section(&a, Format::Markdown);
        assert!(t.starts_with("## Themes of judge comments"), "{t}");
        assert!(t.contains("keywords (RAKE) only"), "{t}");
        assert!(t.contains("No themes"), "{t}");
    }
}
