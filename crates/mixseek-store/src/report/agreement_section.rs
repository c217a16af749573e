//! The "Jury agreement" section of `mixseek show EXECUTION_ID` (table and Markdown) and of
//! the HTML report: per metric with several judges or samples, Krippendorff's alpha over the
//! rounds, its level (low agreement flagged), and the spread within rounds.

use super::Format;
use super::html::escape;
use super::text::{self, Align, Grid};
use crate::agreement::MetricAgreement;
use std::fmt::Write as _;

/// The cells of one metric's row.
fn cells(m: &MetricAgreement) -> Vec<String> {
    let a = &m.agreement;
    vec![
        m.metric_name.clone(),
        m.raters.to_string(),
        a.units.to_string(),
        a.alpha.map_or_else(|| "—".into(), |x| format!("{x:.3}")),
        if a.level.is_low() {
            "LOW".to_string()
        } else {
            a.level.label().to_string()
        },
        format!("{:.2}", a.mean_stdev),
        format!("{:.2}", a.max_range),
    ]
}

const HEADERS: [&str; 7] = [
    "Metric",
    "Raters",
    "Rounds",
    "Alpha",
    "Agreement",
    "Mean stdev",
    "Max range",
];

/// What a low alpha means, said once under the table.
const NOTE: &str = "Krippendorff's alpha (interval) over the rounds: ≥ 0.8 reliable, ≥ 0.667 tentative, \
below: low — score differences smaller than the spread are noise.";

/// The section for table and Markdown output ("" when no metric has several ratings).
pub(super) fn text_section(metrics: &[MetricAgreement], fmt: Format) -> String {
    if metrics.is_empty() {
        return String::new();
    }
    let mut g = Grid::new(&[
        (HEADERS[0], Align::Left),
        (HEADERS[1], Align::Left),
        (HEADERS[2], Align::Right),
        (HEADERS[3], Align::Right),
        (HEADERS[4], Align::Left),
        (HEADERS[5], Align::Right),
        (HEADERS[6], Align::Right),
    ]);
    for m in metrics {
        g.push(cells(m));
    }
    match fmt {
        Format::Markdown => format!(
            "## Jury agreement\n\n{}\n{}\n",
            g.to_markdown(),
            text::md_inline(NOTE)
        ),
        _ => format!("Jury agreement\n{}\n{NOTE}\n", g.to_table()),
    }
}

/// The section of the HTML report ("" when no metric has several ratings); a low agreement's
/// row is marked.
pub(super) fn html_section(metrics: &[MetricAgreement]) -> String {
    if metrics.is_empty() {
        return String::new();
    }
    let mut h = String::from("<h2>Jury agreement</h2>\n<table class=\"agreement\">\n<thead><tr>");
    for title in HEADERS {
        let _ = write!(h, "<th>{}</th>", escape(title));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for m in metrics {
        let row = cells(m);
        let _ = write!(
            h,
            "<tr{}>",
            if m.agreement.level.is_low() {
                " class=\"failed\""
            } else {
                ""
            }
        );
        for (i, c) in row.iter().enumerate() {
            let class = if i >= 2 && i != 4 {
                " class=\"num\""
            } else {
                ""
            };
            let _ = write!(h, "<td{class}>{}</td>", escape(c));
        }
        h.push_str("</tr>\n");
    }
    let _ = writeln!(
        h,
        "</tbody>\n</table>\n<p class=\"muted\">{}</p>",
        escape(NOTE)
    );
    h
}
