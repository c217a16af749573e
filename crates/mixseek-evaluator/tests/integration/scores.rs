//! Judge scores are numbers in 0..=100: a `NaN`, an infinity, a number too large for a double
//! or a score outside the range (fake OpenAI judges on 127.0.0.1 answering raw text) is
//! repaired or becomes a metric failure that keeps the judge's raw answer — never a stored
//! NaN, never a clamp — and the overall score stays finite.

use crate::common;

use common::*;
use mixseek_evaluator::{EvaluationRequest, EvaluatorError, MetricFailure};
use mixseek_testkit::Reply;

fn request() -> EvaluationRequest {
    EvaluationRequest {
        execution_id: Some("exec-1".into()),
        team_id: Some("team-1".into()),
        round_number: Some(1),
        ..EvaluationRequest::new("What is Rust?", "A systems programming language.")
    }
}

/// The failure of a single metric `a` whose judge always answers `raw` (no repair).
async fn failure_for(raw: &str) -> MetricFailure {
    let server = Routed::start().await;
    server.always("metric:a", Reply::text(raw));
    let mut m = custom("a", None);
    m.max_retries = Some(0);
    let err = within(evaluator(&server, settings(vec![m])).evaluate(&request()))
        .await
        .expect_err("the metric should fail");
    let text = err.to_string();
    let EvaluatorError::Metric(f) = err else {
        panic!("not a metric failure: {text}")
    };
    // The answer is in the error text as well as in `raw_output`.
    assert!(
        text.contains(&format!(
            "; the judge answered: {raw} | Provider: openai | Metric: a"
        )),
        "{text}"
    );
    *f
}

#[tokio::test]
async fn non_finite_and_out_of_range_scores_fail_with_the_answer_kept() {
    for (raw, kind) in [
        ("{\"score\": NaN, \"evaluator_comment\": \"x\"}", "parse"),
        (
            "{\"score\": Infinity, \"evaluator_comment\": \"x\"}",
            "parse",
        ),
        ("{\"score\": 1e999, \"evaluator_comment\": \"x\"}", "parse"),
        ("{\"score\": -0.5, \"evaluator_comment\": \"x\"}", "schema"),
        (
            "{\"score\": 100.01, \"evaluator_comment\": \"x\"}",
            "schema",
        ),
    ] {
        let f = failure_for(raw).await;
        assert_eq!(f.kind.as_str(), kind, "{raw}");
        assert_eq!(f.raw_output.as_deref(), Some(raw));
        assert_eq!(f.rejected, vec![raw.to_string()]);
    }
}

#[tokio::test]
async fn a_nan_answer_is_repaired_and_kept_as_rejected() {
    let server = Routed::start().await;
    let nan = "{\"score\": NaN, \"evaluator_comment\": \"undefined\"}";
    server.route("metric:a", vec![Reply::text(nan)], score(77.0));
    let out = within(evaluator(&server, settings(vec![custom("a", None)])).evaluate(&request()))
        .await
        .expect("evaluate");
    let m = &out.score_details.metrics[0];
    assert_eq!(m.score, 77.0);
    assert_eq!(m.extra["answers"][0]["rejected"][0], nan);
    let repair = &server.requests()[1]["messages"][3]["content"];
    assert!(
        repair
            .as_str()
            .is_some_and(|t| t.starts_with("Your previous answer was not valid JSON")),
        "{repair}"
    );
}

#[tokio::test]
async fn a_skipped_nan_metric_is_stored_with_its_answer_and_the_overall_stays_finite() {
    let server = Routed::start().await;
    let nan = "{\"score\": NaN, \"evaluator_comment\": \"undefined\"}";
    server.always("metric:bad", Reply::text(nan));
    server.always("metric:good", score(64.0));
    let mut bad = custom("bad", Some(0.5));
    bad.max_retries = Some(1);
    let mut s = settings(vec![bad, custom("good", Some(0.5))]);
    s.on_metric_error = mixseek_config::OnMetricError::Skip;
    let out = within(evaluator(&server, s).evaluate(&request()))
        .await
        .expect("evaluate");
    let details = &out.score_details;
    assert_eq!(details.overall_score, 64.0);
    let stored = &details.metrics[0];
    assert_eq!(
        (stored.extra["status"].as_str(), stored.score),
        (Some("failed"), 0.0)
    );
    assert_eq!(stored.extra["error"]["kind"], "parse");
    assert_eq!(stored.extra["error"]["raw_output"], nan);
    assert_eq!(
        stored.extra["error"]["rejected"],
        serde_json::json!([nan, nan])
    );
    assert!(
        stored
            .evaluator_comment
            .contains(&format!("the judge answered: {nan}")),
        "{}",
        stored.evaluator_comment
    );
    // Every stored number is finite (serde_json would write a NaN as null).
    let json = serde_json::to_value(details).expect("json");
    assert!(json["overall_score"].as_f64().is_some_and(f64::is_finite));
    for m in json["metrics"].as_array().expect("metrics") {
        assert!(m["score"].as_f64().is_some_and(f64::is_finite), "{m}");
    }
}

#[tokio::test]
async fn one_jury_judge_answering_nan_fails_the_metric() {
    let server = Routed::start().await;
    server.always("j1", score(80.0));
    server.always(
        "j2",
        Reply::text("{\"score\": NaN, \"evaluator_comment\": \"?\"}"),
    );
    let mut m = custom("jury", None);
    m.judges = vec!["openai:j1".into(), "openai:j2".into()];
    m.max_retries = Some(0);
    let err = within(evaluator(&server, settings(vec![m])).evaluate(&request()))
        .await
        .unwrap_err();
    let EvaluatorError::Metric(f) = &err else {
        panic!("{err}")
    };
    assert_eq!((f.metric_name.as_str(), f.kind.as_str()), ("jury", "parse"));
    assert!(
        f.raw_output.as_deref().is_some_and(|r| r.contains("NaN")),
        "{f:?}"
    );
}
