//! Evaluation results in the original's `score_details` shape.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Rounds to 2 decimals exactly as Python's `round(x, 2)` does (correctly rounded,
/// half-to-even on the exact binary value): `2.675 → 2.67`, `0.025 → 0.03`.
pub fn round2(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{x:.2}").parse::<f64>().unwrap_or(x)
}

/// One metric's score. `metric_name`, `score` and `evaluator_comment` are the original's fields;
/// anything we add (samples, judges, usage, error) goes into `extra` and is serialized after them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricScore {
    /// The metric's name as reported (`ClarityCoherence`, a custom name, …).
    pub metric_name: String,
    /// The metric's score (0..=100 for LLM judges; a command metric's own range).
    pub score: f64,
    /// Why the metric gave this score.
    pub evaluator_comment: String,
    /// Our additions (samples, judges, usage, error), serialized after the original's fields.
    #[serde(flatten, default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

impl MetricScore {
    /// A score with no additions.
    pub fn new(metric_name: impl Into<String>, score: f64, comment: impl Into<String>) -> Self {
        Self {
            metric_name: metric_name.into(),
            score,
            evaluator_comment: comment.into(),
            extra: Map::new(),
        }
    }
}

/// `{"overall_score": 83.5, "metrics": [...]}` — used in the database, prompts and JSON output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreDetails {
    /// `round2(Σ weight × round2(score))` over the metrics.
    pub overall_score: f64,
    /// The metrics, in configuration order.
    pub metrics: Vec<MetricScore>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round2_matches_python_round() {
        let cases = [
            (0.125, 0.12),
            (0.375, 0.38),
            (2.675, 2.67),
            (33.335, 33.34),
            (0.015, 0.01),
            (0.025, 0.03),
            (1.005, 1.0),
            (85.12345, 85.12),
            (-1.23456, -1.23),
        ];
        for (input, expected) in cases {
            assert_eq!(round2(input), expected, "round2({input})");
        }
    }

    #[test]
    fn score_details_keep_the_original_key_order() {
        let mut m = MetricScore::new("Coverage", 80.0, "ok");
        m.extra.insert("samples".into(), serde_json::json!([80.0]));
        let d = ScoreDetails {
            overall_score: 80.0,
            metrics: vec![m],
        };
        let s = serde_json::to_string(&d).unwrap_or_default();
        assert_eq!(
            s,
            r#"{"overall_score":80.0,"metrics":[{"metric_name":"Coverage","score":80.0,"evaluator_comment":"ok","samples":[80.0]}]}"#
        );
    }
}
