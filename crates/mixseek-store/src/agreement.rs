//! Jury agreement over an execution: for every metric scored by several judges (`judges`) or
//! several samples of one judge (`samples`), Krippendorff's alpha (interval data) over the
//! execution's evaluated rounds and the spread of each round's ratings. Derived on read from
//! the per-judge and per-sample scores each round stores in its `score_details`
//! (`extra.judges[].score`, `extra.samples.scores`), so it always matches the stored rounds.

use crate::model::CompletedRound;
use mixseek_judging::agreement::{JuryAgreement, jury_agreement};
use serde::Serialize;
use serde_json::Value;

/// One metric's agreement over an execution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricAgreement {
    /// The metric.
    pub metric_name: String,
    /// `judges` (a jury: each round's units are the judges' scores) or `samples` (one judge
    /// asked several times).
    pub raters: &'static str,
    /// Alpha, its level (`reliable` ≥ 0.8, `tentative` ≥ 0.667, `low`, `unknown`), the rounds
    /// and ratings counted, the mean per-round standard deviation and the largest range.
    #[serde(flatten)]
    pub agreement: JuryAgreement,
}

/// The agreement of every metric of `rounds` that has several ratings per round, in the order
/// the metrics first appear. Metrics with one rating per round are left out.
pub(crate) fn metric_agreements(rounds: &[CompletedRound]) -> Vec<MetricAgreement> {
    let mut by_metric: Vec<(String, &'static str, Vec<Vec<f64>>)> = Vec::new();
    for r in rounds {
        for m in &r.state.score_details.metrics {
            let Some((raters, values)) = ratings_of(&m.extra) else {
                continue;
            };
            match by_metric
                .iter_mut()
                .find(|(name, _, _)| *name == m.metric_name)
            {
                Some((_, _, units)) => units.push(values),
                None => by_metric.push((m.metric_name.clone(), raters, vec![values])),
            }
        }
    }
    by_metric
        .into_iter()
        .filter_map(|(metric_name, raters, units)| {
            jury_agreement(&units).map(|agreement| MetricAgreement {
                metric_name,
                raters,
                agreement,
            })
        })
        .collect()
}

/// A round's ratings of one metric: its jury's scores, else its samples' scores.
fn ratings_of(extra: &serde_json::Map<String, Value>) -> Option<(&'static str, Vec<f64>)> {
    let scores = |v: &Value| -> Vec<f64> {
        v.as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default()
    };
    if let Some(judges) = extra.get("judges").and_then(Value::as_array) {
        let values: Vec<f64> = judges
            .iter()
            .filter_map(|j| j.get("score").and_then(Value::as_f64))
            .collect();
        return (values.len() >= 2).then_some(("judges", values));
    }
    let values = scores(extra.get("samples")?.get("scores")?);
    (values.len() >= 2).then_some(("samples", values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mixseek_core::{MetricScore, RoundState, ScoreDetails, TeamId};
    use serde_json::json;

    fn round(metrics: Vec<MetricScore>) -> CompletedRound {
        CompletedRound {
            team_id: TeamId::from("t"),
            team_name: "T".into(),
            state: RoundState {
                round_number: 1,
                submission_content: String::new(),
                evaluation_score: 0.0,
                score_details: ScoreDetails {
                    overall_score: 0.0,
                    metrics,
                },
                improvement_judgment: None,
                round_started_at: chrono::Utc::now(),
                round_ended_at: chrono::Utc::now(),
                message_history: vec![],
            },
            decision: Default::default(),
            usage: Default::default(),
            final_submission: false,
        }
    }

    fn metric(name: &str, extra: Value) -> MetricScore {
        let mut m = MetricScore::new(name, 0.0, "");
        if let Value::Object(map) = extra {
            m.extra = map;
        }
        m
    }

    #[test]
    fn juries_and_samples_are_rated_and_single_judges_left_out() {
        let jury = |a: f64, b: f64| {
            metric(
                "Coverage",
                json!({"judges": [{"model": "x", "score": a}, {"model": "y", "score": b}]}),
            )
        };
        let sampled = |s: [f64; 3]| metric("Relevance", json!({"samples": {"n": 3, "scores": s}}));
        let rounds = vec![
            round(vec![
                jury(80.0, 80.0),
                sampled([50.0, 90.0, 10.0]),
                metric("Solo", json!({})),
            ]),
            round(vec![jury(40.0, 40.0), sampled([70.0, 20.0, 60.0])]),
            round(vec![jury(60.0, 60.0), sampled([30.0, 80.0, 40.0])]),
        ];
        let found = metric_agreements(&rounds);
        assert_eq!(found.len(), 2);
        let (coverage, relevance) = (&found[0], &found[1]);
        assert_eq!(
            (coverage.metric_name.as_str(), coverage.raters),
            ("Coverage", "judges")
        );
        // the two judges always agree: alpha 1, no spread
        assert_eq!(coverage.agreement.alpha, Some(1.0));
        assert_eq!(coverage.agreement.units, 3);
        assert_eq!(coverage.agreement.max_range, 0.0);
        // the samples scatter more within rounds than between them: low agreement, flagged
        assert_eq!(relevance.raters, "samples");
        assert!(relevance.agreement.alpha.is_some_and(|a| a < 0.0));
        assert!(relevance.agreement.level.is_low());
        assert_eq!(relevance.agreement.max_range, 80.0);
    }
}
