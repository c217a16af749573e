//! Command metrics: small scripts written by the tests, run with JSON on stdin.

mod common;

use common::*;
use mixseek_config::MetricSettings;
use mixseek_evaluator::{EvaluationRequest, Evaluator, EvaluatorError};
use std::path::Path;

fn command_metric(name: &str, argv: &[&str], weight: Option<f64>) -> MetricSettings {
    MetricSettings {
        name: name.into(),
        weight,
        kind: Some("command".into()),
        command: Some(argv.iter().map(|s| s.to_string()).collect()),
        ..Default::default()
    }
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write script");
}

const ECHO_PY: &str = r#"import json, sys
data = json.load(sys.stdin)
print("working...")
print(json.dumps({
    "score": len(data["submission"]) * 10 - 0.004,
    "evaluator_comment": "  seen: " + "|".join(str(data.get(k)) for k in ["user_prompt", "execution_id", "team_id", "round_number", "metric"]) + "  ",
}))
"#;

fn request() -> EvaluationRequest {
    EvaluationRequest {
        execution_id: Some("exec-9".into()),
        team_id: Some("t9".into()),
        round_number: Some(3),
        ..EvaluationRequest::new("the task", " 12345678901234567890 ")
    }
}

async fn run(
    dir: &Path,
    metrics: Vec<MetricSettings>,
) -> Result<mixseek_evaluator::EvaluationOutcome, EvaluatorError> {
    // No LLM metric is configured, so the registry is never called.
    let reg = registry("http://127.0.0.1:9/v1", None);
    let ev = Evaluator::new(settings(metrics), reg, prompts())
        .expect("evaluator")
        .with_working_dir(dir);
    within(ev.evaluate(&request())).await
}

#[tokio::test]
async fn a_python_script_scores_with_an_unbounded_score() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "score.py", ECHO_PY);
    let out = run(
        dir.path(),
        vec![command_metric("backtest", &["python3", "score.py"], None)],
    )
    .await
    .expect("evaluate");
    let m = &out.score_details.metrics[0];
    assert_eq!(m.metric_name, "backtest");
    // 20 characters (trimmed) × 10 − 0.004 = 199.996 → 200.0: above 100 is fine.
    assert_eq!(m.score, 200.0);
    assert_eq!(m.evaluator_comment, "seen: the task|exec-9|t9|3|backtest");
    assert_eq!(out.score_details.overall_score, 200.0);
}

#[tokio::test]
async fn command_and_llm_metrics_mix_with_weights() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "neg.sh",
        "#!/bin/sh\ncat > /dev/null\necho '{\"score\": -40, \"evaluator_comment\": \"loss\"}'\n",
    );
    let server = Routed::start().await;
    server.always("metric:llm", score(90.0));
    let metrics = vec![
        command_metric("pnl", &["sh", "./neg.sh"], Some(0.25)),
        custom("llm", Some(0.75)),
    ];
    let ev = Evaluator::new(
        settings(metrics),
        registry(&server.base_url(), None),
        prompts(),
    )
    .expect("evaluator")
    .with_working_dir(dir.path());
    let out = within(ev.evaluate(&request())).await.expect("evaluate");
    // 0.25 × −40 + 0.75 × 90
    assert_eq!(out.score_details.overall_score, 57.5);
    assert_eq!(out.score_details.metrics[0].score, -40.0);
}

#[tokio::test]
async fn timeouts_exits_and_bad_output_are_clear_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "slow.sh", "sleep 30\n");
    write(
        dir.path(),
        "fail.sh",
        "echo 'cannot open data.csv' >&2\nexit 3\n",
    );
    write(
        dir.path(),
        "chatty.sh",
        "cat > /dev/null\necho 'the score is 5'\n",
    );
    write(
        dir.path(),
        "text_score.sh",
        "echo '{\"score\": \"high\"}'\n",
    );

    let mut slow = command_metric("slow", &["sh", "slow.sh"], None);
    slow.timeout_seconds = Some(1);
    let err = run(dir.path(), vec![slow]).await.unwrap_err();
    let EvaluatorError::Metric(f) = &err else {
        panic!("{err}")
    };
    assert_eq!(f.kind, "timeout");
    assert_eq!(
        err.to_string(),
        "command metric 'slow': `sh slow.sh` timed out after 1s (timeout_seconds) | Metric: slow"
    );

    let err = run(
        dir.path(),
        vec![command_metric("fail", &["sh", "fail.sh"], None)],
    )
    .await
    .unwrap_err();
    let EvaluatorError::Metric(f) = &err else {
        panic!("{err}")
    };
    assert_eq!(f.kind, "exit");
    assert_eq!(
        f.message,
        "command metric 'fail': `sh fail.sh` exited with status 3: cannot open data.csv"
    );

    let err = run(
        dir.path(),
        vec![command_metric("chatty", &["sh", "chatty.sh"], None)],
    )
    .await
    .unwrap_err();
    let EvaluatorError::Metric(f) = &err else {
        panic!("{err}")
    };
    assert_eq!(f.kind, "bad_output");
    assert!(
        f.message
            .starts_with("command metric 'chatty': `sh chatty.sh` printed invalid JSON"),
        "{}",
        f.message
    );
    assert!(f.message.ends_with("got: the score is 5"), "{}", f.message);

    let err = run(
        dir.path(),
        vec![command_metric("text", &["sh", "text_score.sh"], None)],
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("printed invalid JSON"), "{err}");

    let err = run(
        dir.path(),
        vec![command_metric("missing", &["./no-such-program"], None)],
    )
    .await
    .unwrap_err();
    let EvaluatorError::Metric(f) = &err else {
        panic!("{err}")
    };
    assert_eq!(f.kind, "spawn");
    assert!(
        f.message
            .starts_with("command metric 'missing': cannot start `./no-such-program`"),
        "{}",
        f.message
    );
}

#[tokio::test]
async fn a_failing_command_is_skipped_under_the_skip_policy() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "ok.sh",
        "cat > /dev/null\necho '{\"score\": 70, \"evaluator_comment\": \"ok\"}'\n",
    );
    write(dir.path(), "bad.sh", "exit 1\n");
    let mut s = settings(vec![
        command_metric("ok", &["sh", "ok.sh"], Some(0.4)),
        command_metric("bad", &["sh", "bad.sh"], Some(0.6)),
    ]);
    s.on_metric_error = "skip".into();
    let reg = registry("http://127.0.0.1:9/v1", None);
    let ev = Evaluator::new(s, reg, prompts())
        .expect("evaluator")
        .with_working_dir(dir.path());
    let out = within(ev.evaluate(&request())).await.expect("evaluate");
    assert_eq!(out.score_details.overall_score, 70.0);
    assert_eq!(out.failures[0].kind, "exit");
}

/// True while process `pid` exists and is not a zombie (a killed orphan may wait to be
/// reaped by an init that never does).
#[cfg(target_os = "linux")]
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X'),
        Err(_) => false,
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_timeout_kills_every_process_the_command_started() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The script starts a grandchild `sleep`, records its pid, and waits for it.
    write(
        dir.path(),
        "spawner.sh",
        "sleep 300 &\necho $! > sleep.pid\nwait\n",
    );
    let mut m = command_metric("spawner", &["sh", "spawner.sh"], None);
    m.timeout_seconds = Some(1);
    let err = run(dir.path(), vec![m]).await.unwrap_err();
    let EvaluatorError::Metric(f) = &err else {
        panic!("{err}")
    };
    assert_eq!(f.kind, "timeout");
    let pid: u32 = std::fs::read_to_string(dir.path().join("sleep.pid"))
        .expect("the script recorded its child")
        .trim()
        .parse()
        .expect("a pid");
    // SIGKILL is immediate; the loop only waits for the kernel to finish the exit (and
    // guards against a hang), it measures nothing.
    for _ in 0..200 {
        if !running(pid) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        !running(pid),
        "the grandchild sleep {pid} outlived the timeout"
    );
}
