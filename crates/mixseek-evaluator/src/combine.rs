//! Turning the judge answers of one LLM metric into its [`MetricScore`]: a single answer as
//! is; several samples and/or a jury aggregated (median or mean), with the spread and the
//! agreement; every raw answer (and any rejected before it) kept in `extra.answers` (the
//! original's three fields untouched).

use crate::aggregate::{Aggregate, Spread};
use crate::judge::JudgeAnswer;
use mixseek_core::{MetricScore, round2};
use mixseek_prompt::context::py_trim;
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

/// Combines `answers` (any order) of the judges `judges` (configured order) into the metric's
/// score. `samples` is the number of answers asked from each judge.
pub fn combine(
    name: &str,
    judges: &[String],
    samples: u32,
    aggregate: Aggregate,
    answers: &[JudgeAnswer],
) -> MetricScore {
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
    if sorted.len() == 1 {
        let a = sorted[0];
        let mut m = MetricScore::new(name, round2(a.score), py_trim(&a.evaluator_comment));
        m.extra.insert(
            "answers".into(),
            serde_json::to_value(&sorted).unwrap_or(Value::Null),
        );
        return m;
    }
    // Per judge: its samples aggregated.
    let mut per_judge: Vec<(&str, f64, Vec<&JudgeAnswer>)> = Vec::new();
    for j in judges {
        let mine: Vec<&JudgeAnswer> = sorted.iter().copied().filter(|a| a.judge == *j).collect();
        let scores: Vec<f64> = mine.iter().map(|a| a.score).collect();
        if let Some(s) = aggregate.apply(&scores) {
            per_judge.push((j.as_str(), s, mine));
        }
    }
    let judge_scores: Vec<f64> = per_judge.iter().map(|(_, s, _)| *s).collect();
    let score = aggregate.apply(&judge_scores).unwrap_or(f64::NAN);
    let mut extra = Map::new();
    extra.insert("aggregate".into(), json!(aggregate.as_str()));
    let comment = if per_judge.len() == 1 {
        let (_, s, mine) = &per_judge[0];
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
    let mut m = MetricScore::new(name, round2(score), comment);
    m.extra = extra;
    m
}

#[cfg(test)]
mod tests {
    use super::*;

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
        );
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
        );
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
        );
        assert_eq!(m.score, 80.0);
    }

    #[test]
    fn a_jury_aggregates_judges_and_reports_agreement() {
        let judges = vec!["openai:a".to_string(), "anthropic:b".to_string()];
        let answers = [
            a("anthropic:b", 0, 60.0, "meh"),
            a("openai:a", 0, 80.0, "good"),
        ];
        let m = combine("Relevance", &judges, 1, Aggregate::Median, &answers);
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
        let m = combine("Coverage", &judges, 2, Aggregate::Median, &answers);
        // Judges: 15, 60, 95 → median 60.
        assert_eq!(m.score, 60.0);
        assert_eq!(
            m.extra["judges"][2]["samples"]["scores"],
            json!([90.0, 100.0])
        );
        let m = combine("Coverage", &judges, 2, Aggregate::Mean, &answers);
        assert_eq!(m.score, round2((15.0 + 60.0 + 95.0) / 3.0));
    }
}
