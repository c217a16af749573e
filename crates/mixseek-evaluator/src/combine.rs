//! Turning the judge answers of one LLM metric into its [`MetricScore`]: a single answer as
//! is; several samples and/or a jury aggregated (median or mean), with the spread and the
//! agreement; every raw answer (and any rejected before it) kept in `extra.answers` (the
//! original's three fields untouched).

use crate::aggregate::{Aggregate, Spread, apply};
use crate::judge::{JudgeAnswer, check_score, excerpt};
use mixseek_core::{MetricScore, round2};
use mixseek_prompt::py_trim;
use serde_json::{Map, Value, json};

fn spread_json(scores: &[f64]) -> Value {
    match Spread::of(scores) {
        Some(s) => {
            json!({"n": scores.len(), "scores": scores, "min": round2(s.min), "max": round2(s.max), "stdev": round2(s.stdev)})
        }
        None => Value::Null,
    }
}

/// The comment of the answer closest to `score` (the first one on ties).
fn representative<'a>(answers: &[&'a JudgeAnswer], score: f64) -> &'a str {
    answers
        .iter()
        .min_by(|a, b| (a.score - score).abs().total_cmp(&(b.score - score).abs()))
        .map_or("", |a| a.evaluator_comment.as_str())
}

/// A score as stored: [`round2`], and `-0.0` (a judge's `-0`, a command's `-0.001`) written
/// as `0.0`.
pub(crate) fn score2(x: f64) -> f64 {
    round2(x) + 0.0
}

/// Combines `answers` (any order) of the judges `judges` (configured order) into the metric's
/// score. `samples` is the number of answers asked from each judge.
///
/// Every answer must hold a finite score in 0..=100 (the judge call's check guarantees it;
/// checked again here so no NaN can ever be combined): otherwise, or with no answer at all,
/// the metric fails with the reason. The combined score is then finite and in 0..=100.
pub(crate) fn combine(
    name: &str,
    judges: &[String],
    samples: u32,
    aggregate: Aggregate,
    answers: &[JudgeAnswer],
) -> Result<MetricScore, String> {
    if let Some(bad) = answers.iter().find(|a| check_score(a.score).is_err()) {
        return Err(format!(
            "judge {} gave {}; the judge answered: {}",
            bad.judge,
            check_score(bad.score).err().unwrap_or_default(),
            excerpt(&bad.raw)
        ));
    }
    let mut sorted: Vec<&JudgeAnswer> = answers.iter().collect();
    sorted.sort_by_key(|a| {
        (
            judges
                .iter()
                .position(|j| *j == a.judge)
                .unwrap_or(usize::MAX),
            a.sample,
        )
    });
    if let [a] = sorted.as_slice() {
        let mut m = MetricScore::new(name, score2(a.score), py_trim(&a.evaluator_comment));
        m.extra.insert(
            "answers".into(),
            serde_json::to_value(&sorted).unwrap_or(Value::Null),
        );
        return Ok(m);
    }
    // Per judge: its samples aggregated.
    let mut per_judge: Vec<(&str, f64, Vec<&JudgeAnswer>)> = Vec::new();
    for j in judges {
        let mine: Vec<&JudgeAnswer> = sorted.iter().copied().filter(|a| a.judge == *j).collect();
        let scores: Vec<f64> = mine.iter().map(|a| a.score).collect();
        if let Some(s) = apply(aggregate, &scores) {
            per_judge.push((j.as_str(), s, mine));
        }
    }
    let judge_scores: Vec<f64> = per_judge.iter().map(|(_, s, _)| *s).collect();
    let Some(score) = apply(aggregate, &judge_scores) else {
        return Err(format!(
            "no answer from any of its judges ({}) to combine",
            judges.join(", ")
        ));
    };
    let mut extra = Map::new();
    extra.insert("aggregate".into(), json!(aggregate.as_str()));
    let comment = if let [(_, s, mine)] = per_judge.as_slice() {
        let scores: Vec<f64> = mine.iter().map(|a| a.score).collect();
        extra.insert("samples".into(), spread_json(&scores));
        py_trim(representative(mine, *s)).to_string()
    } else {
        let mut list = Vec::new();
        let mut comments = Vec::new();
        for (model, s, mine) in &per_judge {
            let c = py_trim(representative(mine, *s)).to_string();
            let mut entry = json!({"model": model, "score": round2(*s), "evaluator_comment": c});
            if samples > 1 {
                let scores: Vec<f64> = mine.iter().map(|a| a.score).collect();
                entry["samples"] = spread_json(&scores);
            }
            comments.push(format!("[{model}] {c}"));
            list.push(entry);
        }
        extra.insert("judges".into(), Value::Array(list));
        if let Some(sp) = Spread::of(&judge_scores) {
            extra.insert(
                "agreement".into(),
                json!({"score": round2(sp.agreement()), "min": round2(sp.min), "max": round2(sp.max), "stdev": round2(sp.stdev)}),
            );
        }
        comments.join("\n\n")
    };
    extra.insert(
        "answers".into(),
        serde_json::to_value(&sorted).unwrap_or(Value::Null),
    );
    let mut m = MetricScore::new(name, score2(score), comment);
    m.extra = extra;
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn a(judge: &str, sample: u32, score: f64, comment: &str) -> JudgeAnswer {
        JudgeAnswer {
            judge: judge.into(),
            sample,
            score,
            evaluator_comment: comment.into(),
            raw: format!("{{\"score\": {score}}}"),
            repairs: 0,
            rejected: vec![],
            answered_by: None,
            usage: Default::default(),
        }
    }

    #[test]
    fn a_single_answer_is_the_original_shape_plus_its_raw_answer() {
        let mut answer = a("mock:j", 0, 85.12345, "  good  ");
        answer.rejected = vec!["{\"score\": 120}".into()];
        answer.repairs = 1;
        let m = combine(
            "Coverage",
            &["mock:j".into()],
            1,
            Aggregate::Median,
            std::slice::from_ref(&answer),
        )
        .expect("combined");
        assert_eq!(
            (
                m.metric_name.as_str(),
                m.score,
                m.evaluator_comment.as_str()
            ),
            ("Coverage", 85.12, "good")
        );
        assert_eq!(
            Value::Object(m.extra),
            json!({"answers": [{
                "judge": "mock:j", "sample": 0, "score": 85.12345,
                "evaluator_comment": "  good  ", "raw": "{\"score\": 85.12345}",
                "repairs": 1, "rejected": ["{\"score\": 120}"]
            }]})
        );
    }

    #[test]
    fn samples_take_the_median_and_report_the_spread() {
        let answers = [
            a("mock:j", 2, 90.0, "high"),
            a("mock:j", 0, 70.0, "low"),
            a("mock:j", 1, 80.0, "mid"),
        ];
        let m = combine(
            "Coverage",
            &["mock:j".into()],
            3,
            Aggregate::Median,
            &answers,
        )
        .expect("combined");
        assert_eq!((m.score, m.evaluator_comment.as_str()), (80.0, "mid"));
        assert_eq!(m.extra["aggregate"], "median");
        assert_eq!(
            m.extra["samples"],
            json!({"n": 3, "scores": [70.0, 80.0, 90.0], "min": 70.0, "max": 90.0, "stdev": 8.16})
        );
        let kept: Vec<f64> = m.extra["answers"]
            .as_array()
            .expect("answers")
            .iter()
            .map(|x| x["score"].as_f64().unwrap_or(-1.0))
            .collect();
        assert_eq!(kept, [70.0, 80.0, 90.0]);
        assert_eq!(m.extra["answers"][0]["raw"], "{\"score\": 70}");
        let m = combine(
            "Coverage",
            &["mock:j".into()],
            3,
            Aggregate::Mean,
            &answers[..2],
        )
        .expect("combined");
        assert_eq!(m.score, 80.0);
    }

    #[test]
    fn a_jury_aggregates_judges_and_reports_agreement() {
        let judges = vec!["openai:a".to_string(), "anthropic:b".to_string()];
        let answers = [
            a("anthropic:b", 0, 60.0, "meh"),
            a("openai:a", 0, 80.0, "good"),
        ];
        let m = combine("Relevance", &judges, 1, Aggregate::Median, &answers).expect("combined");
        assert_eq!(m.score, 70.0);
        assert_eq!(m.evaluator_comment, "[openai:a] good\n\n[anthropic:b] meh");
        assert_eq!(
            m.extra["judges"][0],
            json!({"model": "openai:a", "score": 80.0, "evaluator_comment": "good"})
        );
        assert_eq!(
            m.extra["agreement"],
            json!({"score": 0.8, "min": 60.0, "max": 80.0, "stdev": 10.0})
        );
        assert_eq!(m.extra["answers"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn a_jury_with_samples_aggregates_each_judge_first() {
        let judges = vec!["x:a".to_string(), "x:b".to_string(), "x:c".to_string()];
        let answers = [
            a("x:a", 0, 10.0, ""),
            a("x:a", 1, 20.0, ""),
            a("x:b", 0, 50.0, ""),
            a("x:b", 1, 70.0, ""),
            a("x:c", 0, 90.0, ""),
            a("x:c", 1, 100.0, ""),
        ];
        let m = combine("Coverage", &judges, 2, Aggregate::Median, &answers).expect("combined");
        // Judges: 15, 60, 95 → median 60.
        assert_eq!(m.score, 60.0);
        assert_eq!(
            m.extra["judges"][2]["samples"]["scores"],
            json!([90.0, 100.0])
        );
        let m = combine("Coverage", &judges, 2, Aggregate::Mean, &answers).expect("combined");
        assert_eq!(m.score, round2((15.0 + 60.0 + 95.0) / 3.0));
    }

    #[test]
    fn no_answer_or_a_bad_score_is_an_error_never_a_nan() {
        let judges = vec!["x:a".to_string(), "x:b".to_string()];
        let e = combine("Coverage", &judges, 1, Aggregate::Median, &[]).unwrap_err();
        assert_eq!(e, "no answer from any of its judges (x:a, x:b) to combine");
        // Answers of judges that are not on the jury combine into nothing.
        let stray = [a("x:z", 0, 50.0, ""), a("x:y", 0, 60.0, "")];
        assert!(combine("Coverage", &judges, 1, Aggregate::Mean, &stray).is_err());
        for bad in [f64::NAN, f64::INFINITY, -1.0, 100.01] {
            let answers = [a("x:a", 0, 50.0, ""), a("x:b", 0, bad, "")];
            let e = combine("Coverage", &judges, 1, Aggregate::Mean, &answers).unwrap_err();
            assert!(
                e.starts_with("judge x:b gave score must be between 0 and 100"),
                "{e}"
            );
            assert!(e.contains("the judge answered: {\"score\": "), "{e}");
        }
    }

    #[test]
    fn negative_zero_is_stored_as_zero() {
        let m = combine(
            "C",
            &["x:a".into()],
            1,
            Aggregate::Median,
            &[a("x:a", 0, -0.0, "")],
        )
        .expect("combined");
        assert!(m.score.is_sign_positive());
        assert_eq!(serde_json::to_string(&m.score).ok().as_deref(), Some("0.0"));
        assert!(score2(-0.004).is_sign_positive());
    }

    proptest! {
        #[test]
        fn combined_scores_are_finite_and_within_0_to_100(
            scores in prop::collection::vec(
                prop_oneof![any::<f64>(), 0.0f64..=100.0, Just(100.0), Just(0.0)],
                0..8,
            ),
            mean in any::<bool>(),
        ) {
            let judges = vec!["x:a".to_string(), "x:b".to_string()];
            let answers: Vec<JudgeAnswer> = scores
                .iter()
                .enumerate()
                .map(|(i, s)| a(if i % 2 == 0 { "x:a" } else { "x:b" }, i as u32, *s, ""))
                .collect();
            let aggregate = if mean { Aggregate::Mean } else { Aggregate::Median };
            let all_valid = !scores.is_empty() && scores.iter().all(|s| (0.0..=100.0).contains(s));
            match combine("C", &judges, 4, aggregate, &answers) {
                Ok(m) => {
                    prop_assert!(all_valid);
                    prop_assert!(m.score.is_finite() && (0.0..=100.0).contains(&m.score));
                    if let Some(agreement) = m.extra.get("agreement") {
                        let g = agreement["score"].as_f64().unwrap_or(-1.0);
                        prop_assert!((0.0..=1.0).contains(&g));
                    }
                }
                Err(_) => prop_assert!(!all_valid),
            }
        }
    }
}
