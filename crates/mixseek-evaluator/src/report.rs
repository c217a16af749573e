//! The outputs of `mixseek evaluate`: a text table of metrics (the weight used, score,
//! comment) followed by the overall score, or JSON in the original's shape (`{"metrics":
//! [...], "overall_score"}`) with our additions: per metric the extras of
//! [`EvaluationOutcome::score_details`] (`weight`, `usage`, `duration_ms`, `answers`, …; a
//! skipped metric with `"status": "failed"`), and at the top `usage`, `failures`,
//! `mock_judges`.

use crate::evaluator::EvaluationOutcome;
use comfy_table::{
    CellAlignment, ContentArrangement, ContentLineStyle, LineStyle, Table, TableStyle,
};
use mixseek_prompt::py_float_repr;
use serde_json::{Map, Value, json};

/// Comments longer than this are cut (unless verbose), as the original does.
pub(crate) const COMMENT_LIMIT: usize = 500;
/// Width the table is laid out for (comments wrap inside it).
pub(crate) const TABLE_WIDTH: u16 = 120;

/// The comment as shown: longer than 500 characters ⇒ the first 497 plus `...`.
pub(crate) fn shorten_comment(comment: &str, verbose: bool) -> String {
    if verbose || comment.chars().count() <= COMMENT_LIMIT {
        comment.to_string()
    } else {
        format!(
            "{}...",
            comment.chars().take(COMMENT_LIMIT - 3).collect::<String>()
        )
    }
}

/// A weight with at most 4 decimals (`0.334`, `0.3333`, `1.0`).
pub(crate) fn format_weight(w: f64) -> String {
    let s = format!("{w:.4}");
    let s = s.trim_end_matches('0');
    if s.ends_with('.') {
        format!("{s}0")
    } else {
        s.to_string()
    }
}

pub(crate) const STYLE: TableStyle = TableStyle::new()
    .top_border(LineStyle::new('┏', '━', '┳', '┓'))
    .header_lines(ContentLineStyle::new('┃', '┃', '┃'))
    .header_separator(LineStyle::new('┡', '━', '╇', '┩'))
    .content_lines(ContentLineStyle::new('│', '│', '│'))
    .bottom_border(LineStyle::new('└', '─', '┴', '┘'));

/// The text output: the metric table, any skipped metrics, the overall score.
pub fn render_text(outcome: &EvaluationOutcome, mock_judges: bool, verbose: bool) -> String {
    let mut table = Table::new();
    table
        .load_style(STYLE)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(TABLE_WIDTH)
        .set_header(vec!["Metric", "Weight", "Score", "Comment"]);
    // Both lists hold every configured metric in configuration order.
    for (m, report) in outcome.score_details.metrics.iter().zip(&outcome.metrics) {
        match report.score {
            // The weight the overall score used (renormalised after a skip).
            Some(_) => table.add_row(vec![
                m.metric_name.clone(),
                format_weight(report.effective_weight),
                match is_minimized(m) {
                    true => format!("{} ↓", py_float_repr(m.score)),
                    false => py_float_repr(m.score),
                },
                shorten_comment(&m.evaluator_comment, verbose),
            ]),
            None => table.add_row(vec![
                report.metric_name.clone(),
                format_weight(report.effective_weight),
                "failed".to_string(),
                shorten_comment(&m.evaluator_comment, verbose),
            ]),
        };
    }
    for i in [1, 2] {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = table.to_string();
    out.push('\n');
    if !outcome.failures.is_empty() {
        out.push_str(&format!(
            "\n{} metric(s) failed and were skipped (on_metric_error = \"skip\"); the other weights were renormalised.\n",
            outcome.failures.len()
        ));
    }
    if outcome.score_details.metrics.iter().any(is_minimized) {
        out.push_str(
            "\n↓ lower is better (direction = \"minimize\"): the overall score counts it the other way round.\n",
        );
    }
    if mock_judges {
        out.push_str("\nNote: scored by the offline mock: provider; these scores are made up.\n");
    }
    out.push_str(&format!(
        "\nOverall Score: {}\n",
        py_float_repr(outcome.score_details.overall_score)
    ));
    out
}

/// Whether a scored metric declared `direction = "minimize"` (its details say so).
fn is_minimized(m: &mixseek_core::MetricScore) -> bool {
    m.extra.get("direction").and_then(|d| d.as_str()) == Some("minimize")
}

/// The JSON output: `{"metrics": [...], "overall_score": …, "usage": {...}}` plus
/// `"failures"` when metrics were skipped and `"mock_judges": true` for made-up scores. The
/// metrics are the stored `score_details.metrics`, extras included.
pub fn render_json(outcome: &EvaluationOutcome, mock_judges: bool) -> Value {
    let mut map = Map::new();
    map.insert(
        "metrics".into(),
        serde_json::to_value(&outcome.score_details.metrics).unwrap_or(Value::Null),
    );
    map.insert(
        "overall_score".into(),
        json!(outcome.score_details.overall_score),
    );
    map.insert(
        "usage".into(),
        serde_json::to_value(outcome.usage).unwrap_or(Value::Null),
    );
    if !outcome.failures.is_empty() {
        map.insert(
            "failures".into(),
            serde_json::to_value(&outcome.failures).unwrap_or(Value::Null),
        );
    }
    if mock_judges {
        map.insert("mock_judges".into(), Value::Bool(true));
    }
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::MetricFailure;
    use crate::evaluator::MetricReport;
    use mixseek_core::{MetricScore, ScoreDetails, Usage};

    fn report(name: &str, weight: f64, score: Option<f64>) -> MetricReport {
        MetricReport {
            metric_name: name.into(),
            kind: mixseek_config::MetricType::Llm,
            weight,
            effective_weight: weight,
            score,
            usage: Usage::default(),
            duration_ms: 0,
        }
    }

    fn outcome() -> EvaluationOutcome {
        EvaluationOutcome {
            score_details: ScoreDetails {
                overall_score: 87.75,
                metrics: vec![
                    MetricScore::new("ClarityCoherence", 85.5, "Clear and well structured."),
                    MetricScore::new("Coverage", 90.0, "Covers every part of the question."),
                ],
            },
            usage: Usage {
                input_tokens: 24,
                output_tokens: 10,
                requests: 2,
                ..Usage::default()
            },
            failures: vec![],
            metrics: vec![
                report("ClarityCoherence", 0.5, Some(85.5)),
                report("Coverage", 0.5, Some(90.0)),
            ],
        }
    }

    #[test]
    fn text_output() {
        insta::assert_snapshot!(render_text(&outcome(), false, false));
    }

    #[test]
    fn text_output_with_a_skipped_metric_and_mock_judges() {
        let mut o = outcome();
        let failure = MetricFailure {
            metric_name: "Coverage".into(),
            kind: crate::MetricFailureKind::Llm(mixseek_llm::ErrorKind::Timeout),
            message: "Failed to evaluate after retries: [openai] gpt-4o: timeout error: no answer"
                .into(),
            provider: Some("openai".into()),
            retries: Some(3),
            raw_output: None,
            rejected: Vec::new(),
        };
        let mut failed = MetricScore::new("Coverage", 0.0, failure.to_string());
        failed.extra.insert("status".into(), json!("failed"));
        o.score_details.metrics[1] = failed;
        o.score_details.overall_score = 85.5;
        o.metrics[0].effective_weight = 1.0;
        o.metrics[1].score = None;
        o.metrics[1].effective_weight = 0.0;
        o.failures.push(failure);
        let text = render_text(&o, true, false);
        // The weight column shows the weights used: renormalised, and 0 for the failure.
        assert!(text.contains("│ ClarityCoherence │    1.0 │"), "{text}");
        insta::assert_snapshot!(text);
    }

    #[test]
    fn json_output_keeps_the_original_keys_first() {
        let v = render_json(&outcome(), false);
        let keys: Vec<&String> = v
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        assert_eq!(keys, ["metrics", "overall_score", "usage"]);
        assert_eq!(
            v["metrics"][0],
            json!({"metric_name": "ClarityCoherence", "score": 85.5, "evaluator_comment": "Clear and well structured."})
        );
        assert_eq!(v["overall_score"], 87.75);
        assert_eq!(render_json(&outcome(), true)["mock_judges"], true);
    }

    #[test]
    fn long_comments_are_cut_unless_verbose() {
        let long = "あ".repeat(501);
        let short = shorten_comment(&long, false);
        assert_eq!(short.chars().count(), 500);
        assert!(short.ends_with("..."));
        assert_eq!(shorten_comment(&long, true), long);
        assert_eq!(shorten_comment(&"x".repeat(500), false).len(), 500);
    }

    #[test]
    fn weights_are_short() {
        assert_eq!(format_weight(0.334), "0.334");
        assert_eq!(format_weight(1.0 / 3.0), "0.3333");
        assert_eq!(format_weight(1.0), "1.0");
        assert_eq!(format_weight(0.25), "0.25");
    }
}
