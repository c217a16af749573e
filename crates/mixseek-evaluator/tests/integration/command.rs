//! Command metrics: small scripts written by the tests, run with JSON on stdin.

use crate::common;

use common::*;
use mixseek_config::MetricSettings;
use mixseek_evaluator::{EvaluationRequest, Evaluator, EvaluatorError};
use std::path::Path;

fn command_metric(name: &str, argv: &[&str], weight: Option<f64>) -> MetricSettings {
    MetricSettings {
        name: name.into(),
        weight,
        kind: Some(mixseek_config::MetricType::Command),
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
    run_with(dir, settings(metrics), &request()).await
}

async fn run_with(
    dir: &Path,
    s: mixseek_config::EvaluatorSettings,
    req: &EvaluationRequest,
) -> Result<mixseek_evaluator::EvaluationOutcome, EvaluatorError> {
    // No LLM metric is configured, so the registry is never called.
    let reg = registry("http://127.0.0.1:9/v1", None);
    let ev = Evaluator::new(s, reg, prompts())
        .expect("evaluator")
        .with_working_dir(dir);
    within(ev.evaluate(req)).await
}

/// The metric failure of an evaluation that must fail (`on_metric_error = "fail"`).
async fn failure(dir: &Path, metric: MetricSettings) -> mixseek_evaluator::MetricFailure {
    let err = run(dir, vec![metric])
        .await
        .expect_err("the metric should fail");
    match err {
        EvaluatorError::Metric(f) => *f,
        other => panic!("not a metric failure: {other}"),
    }
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
    assert_eq!(f.kind.as_str(), "timeout");
    assert_eq!(
        err.to_string(),
        "command metric 'slow': `sh slow.sh` timed out after 1s (timeout_seconds) and was killed with every process it started | Metric: slow"
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
    assert_eq!(f.kind.as_str(), "exit");
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
    assert_eq!(f.kind.as_str(), "bad_output");
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
    assert_eq!(f.kind.as_str(), "spawn");
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
    s.on_metric_error = mixseek_config::OnMetricError::Skip;
    let reg = registry("http://127.0.0.1:9/v1", None);
    let ev = Evaluator::new(s, reg, prompts())
        .expect("evaluator")
        .with_working_dir(dir.path());
    let out = within(ev.evaluate(&request())).await.expect("evaluate");
    assert_eq!(out.score_details.overall_score, 70.0);
    assert_eq!(out.failures[0].kind.as_str(), "exit");
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
    assert_eq!(f.kind.as_str(), "timeout");
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

#[tokio::test]
async fn stdout_that_is_not_utf8_is_an_error_naming_the_metric() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Latin-1 "é" (0xE9) inside the comment.
    write(
        dir.path(),
        "latin1.sh",
        "cat > /dev/null\nprintf '{\"score\": 5, \"evaluator_comment\": \"caf\\351\"}\\n'\n",
    );
    let f = failure(
        dir.path(),
        command_metric("latin1", &["sh", "latin1.sh"], None),
    )
    .await;
    assert_eq!(f.kind.as_str(), "bad_output");
    assert_eq!(
        f.message,
        "command metric 'latin1': `sh latin1.sh` printed bytes that are not UTF-8 on stdout (the first at byte 38); a command metric prints one UTF-8 JSON object {\"score\": <number>, \"evaluator_comment\": <string>}"
    );
    // The output is kept, the bad byte replaced.
    assert_eq!(
        f.raw_output.as_deref(),
        Some("{\"score\": 5, \"evaluator_comment\": \"caf\u{FFFD}\"}\n")
    );
}

/// The peak resident memory of this test process (Linux), in bytes.
#[cfg(target_os = "linux")]
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .expect("VmHWM")
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn huge_output_is_capped_not_buffered() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 200 MB on stdout; the same on stderr before a valid answer.
    write(
        dir.path(),
        "flood.sh",
        "cat > /dev/null\nyes 0123456789 | head -c 200000000\n",
    );
    write(
        dir.path(),
        "noisy.sh",
        "cat > /dev/null\nyes 'a log line' | head -c 200000000 >&2\necho 'the last words' >&2\necho '{\"score\": 64, \"evaluator_comment\": \"fine\"}'\n",
    );
    let before = peak_rss();
    let f = failure(
        dir.path(),
        command_metric("flood", &["sh", "flood.sh"], None),
    )
    .await;
    assert_eq!(f.kind.as_str(), "bad_output");
    assert!(
        f.message.starts_with(&format!(
            "command metric 'flood': `sh flood.sh` printed more than {} MiB on stdout and was stopped",
            mixseek_evaluator::MAX_STDOUT / (1024 * 1024)
        )),
        "{}",
        f.message
    );
    let out = run(
        dir.path(),
        vec![command_metric("noisy", &["sh", "noisy.sh"], None)],
    )
    .await
    .expect("a noisy stderr is fine");
    assert_eq!(out.score_details.metrics[0].score, 64.0);
    let grown = peak_rss().saturating_sub(before);
    assert!(
        grown < 100 * 1024 * 1024,
        "400 MB of output grew the peak memory by {grown} bytes"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_program_killed_by_a_signal_names_the_signal() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "killed.sh",
        "echo 'about to die' >&2\nkill -KILL $$\n",
    );
    let f = failure(
        dir.path(),
        command_metric("killed", &["sh", "killed.sh"], None),
    )
    .await;
    assert_eq!(f.kind.as_str(), "exit");
    assert_eq!(
        f.message,
        "command metric 'killed': `sh killed.sh` was killed by signal 9 (SIGKILL): about to die"
    );
}

#[tokio::test]
async fn a_program_that_closes_stdin_unread_still_scores() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Closes stdin at once; our write of a 4 MB submission hits a closed pipe.
    write(
        dir.path(),
        "deaf.sh",
        "exec 0<&-\necho '{\"score\": 42, \"evaluator_comment\": \"did not listen\"}'\n",
    );
    let big = EvaluationRequest {
        execution_id: Some("exec-9".into()),
        ..EvaluationRequest::new("the task", "x".repeat(4 * 1024 * 1024))
    };
    let out = run_with(
        dir.path(),
        settings(vec![command_metric("deaf", &["sh", "deaf.sh"], None)]),
        &big,
    )
    .await
    .expect("EPIPE on our write is not an error");
    assert_eq!(
        (
            out.score_details.metrics[0].score,
            out.score_details.metrics[0].evaluator_comment.as_str()
        ),
        (42.0, "did not listen")
    );
}

#[cfg(unix)]
#[tokio::test]
async fn programs_that_cannot_run_say_why() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "plain.sh", "echo '{\"score\": 1}'\n");
    write(
        dir.path(),
        "shebang.sh",
        "#!/no/such/interpreter\necho '{\"score\": 1}'\n",
    );
    std::fs::set_permissions(
        dir.path().join("shebang.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");

    let f = failure(dir.path(), command_metric("plain", &["./plain.sh"], None)).await;
    assert_eq!(f.kind.as_str(), "spawn");
    assert!(
        f.message
            .starts_with("command metric 'plain': cannot start `./plain.sh`: ")
            && f.message.contains(
                "plain.sh is not executable: `chmod +x` it or run it through its interpreter"
            ),
        "{}",
        f.message
    );
    let f = failure(
        dir.path(),
        command_metric("interp", &["./shebang.sh"], None),
    )
    .await;
    assert!(
        f.message
            .contains("shebang.sh exists, so the interpreter on its `#!` line was not found"),
        "{}",
        f.message
    );
    let f = failure(
        dir.path(),
        command_metric("nowhere", &["no-such-scorer-on-path"], None),
    )
    .await;
    assert!(
        f.message
            .contains("`no-such-scorer-on-path` is not on PATH"),
        "{}",
        f.message
    );
}

#[tokio::test]
async fn non_finite_scores_are_bad_output_with_the_output_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Python's json.dumps writes NaN for float("nan").
    write(
        dir.path(),
        "nan.py",
        "import json, sys\nsys.stdin.read()\nprint(json.dumps({\"score\": float(\"nan\"), \"evaluator_comment\": \"0/0\"}))\n",
    );
    write(
        dir.path(),
        "huge.sh",
        "cat > /dev/null\necho 'computing'\necho '{\"score\": 1e999}'\n",
    );
    let f = failure(
        dir.path(),
        command_metric("nan", &["python3", "nan.py"], None),
    )
    .await;
    assert_eq!(f.kind.as_str(), "bad_output");
    assert!(
        f.message.starts_with(
            "command metric 'nan': `python3 nan.py` printed a score that is not a finite number (`NaN`; NaN and infinities are not JSON numbers)"
        ) && f.message.ends_with("got: {\"score\": NaN, \"evaluator_comment\": \"0/0\"}"),
        "{}",
        f.message
    );
    assert_eq!(
        f.raw_output.as_deref(),
        Some("{\"score\": NaN, \"evaluator_comment\": \"0/0\"}\n")
    );
    let f = failure(dir.path(), command_metric("huge", &["sh", "huge.sh"], None)).await;
    assert!(
        f.message
            .contains("a score that is not a finite number (`1e999`"),
        "{}",
        f.message
    );
}

#[tokio::test]
async fn declared_ranges_are_enforced_never_clamped_and_the_failure_is_stored() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "over.sh",
        "cat > /dev/null\necho '{\"score\": 100.5, \"evaluator_comment\": \"too good\"}'\n",
    );
    write(
        dir.path(),
        "edge.sh",
        "cat > /dev/null\necho '{\"score\": -20, \"evaluator_comment\": \"edge\"}'\n",
    );
    let mut over = command_metric("over", &["sh", "over.sh"], Some(0.5));
    over.min_score = Some(0.0);
    over.max_score = Some(100.0);
    let mut edge = command_metric("edge", &["sh", "edge.sh"], Some(0.5));
    edge.min_score = Some(-20.0);

    let f = failure(dir.path(), {
        let mut m = over.clone();
        m.weight = None;
        m
    })
    .await;
    assert_eq!(f.kind.as_str(), "out_of_range");
    assert_eq!(
        f.message,
        "command metric 'over': `sh over.sh` printed score 100.5, outside its range 0..=100 (min_score / max_score); nothing is clamped, got: {\"score\": 100.5, \"evaluator_comment\": \"too good\"}"
    );
    assert!(f.raw_output.as_deref().is_some_and(|r| r.contains("100.5")));

    // Under "skip" the failure is stored in score_details with the output; the bound is
    // inclusive, so -20 with min_score = -20 scores.
    let mut s = settings(vec![over, edge]);
    s.on_metric_error = mixseek_config::OnMetricError::Skip;
    let out = run_with(dir.path(), s, &request()).await.expect("evaluate");
    let details = &out.score_details;
    assert_eq!(details.overall_score, -20.0);
    let stored = &details.metrics[0];
    assert_eq!(stored.extra["status"], "failed");
    assert_eq!(stored.extra["error"]["kind"], "out_of_range");
    assert!(
        stored.extra["error"]["raw_output"]
            .as_str()
            .is_some_and(|r| r.contains("too good")),
        "{:?}",
        stored.extra
    );
    assert!(
        stored.evaluator_comment.contains("got: {\"score\": 100.5"),
        "{}",
        stored.evaluator_comment
    );
    assert_eq!(details.metrics[1].score, -20.0);
}

#[tokio::test]
async fn an_overall_score_that_overflows_is_an_error_not_infinity() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "max.sh",
        "cat > /dev/null\necho '{\"score\": 1.7976931348623157e308}'\n",
    );
    // The weights sum to 1.0005 (within the tolerance): 1.0005 × f64::MAX overflows.
    let err = run(
        dir.path(),
        vec![
            command_metric("a", &["sh", "max.sh"], Some(0.5005)),
            command_metric("b", &["sh", "max.sh"], Some(0.5)),
        ],
    )
    .await
    .unwrap_err();
    assert!(matches!(err, EvaluatorError::NonFiniteOverall(_)), "{err}");
    assert!(
        err.to_string().starts_with("the overall score is not a finite number: the weighted sum a=1.7976931348623157e308×0.5005 + b=1.7976931348623157e308×0.5 overflows"),
        "{err}"
    );
    // One such metric alone is a finite (unbounded) score.
    let out = run(
        dir.path(),
        vec![command_metric("a", &["sh", "max.sh"], None)],
    )
    .await
    .expect("f64::MAX is finite");
    assert_eq!(out.score_details.overall_score, f64::MAX);
}

#[tokio::test]
async fn minimized_metrics_count_the_other_way_round_in_the_overall_score() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "errors.sh",
        "cat > /dev/null\necho '{\"score\": 12.5, \"evaluator_comment\": \"3 of 24 failed\"}'\n",
    );
    write(
        dir.path(),
        "loss.sh",
        "cat > /dev/null\necho '{\"score\": 0.4, \"evaluator_comment\": \"loss\"}'\n",
    );
    let server = Routed::start().await;
    server.always("metric:llm", score(30.0));
    // an error rate in 0..=100, lower is better: reflected in its range (100 − 12.5)
    let mut errors = command_metric("errors", &["sh", "errors.sh"], Some(0.5));
    errors.min_score = Some(0.0);
    errors.max_score = Some(100.0);
    errors.direction = Some(mixseek_config::Direction::Minimize);
    // an unbounded loss: counted as −0.4
    let mut loss = command_metric("loss", &["sh", "loss.sh"], Some(0.25));
    loss.direction = Some(mixseek_config::Direction::Minimize);
    // an LLM judge asked for a flaw score (0..=100, lower is better): 100 − 30
    let mut flaws = custom("llm", Some(0.25));
    flaws.direction = Some(mixseek_config::Direction::Minimize);
    let ev = Evaluator::new(
        settings(vec![errors, loss, flaws]),
        registry(&server.base_url(), None),
        prompts(),
    )
    .expect("evaluator")
    .with_working_dir(dir.path());
    let out = within(ev.evaluate(&request())).await.expect("evaluate");
    let m = &out.score_details.metrics;
    // raw scores are stored as given; what each adds is beside it
    assert_eq!((m[0].score, m[1].score, m[2].score), (12.5, 0.4, 30.0));
    assert_eq!(m[0].extra["direction"], "minimize");
    assert_eq!(m[0].extra["oriented_score"], 87.5);
    assert_eq!(m[1].extra["oriented_score"], -0.4);
    assert_eq!(m[2].extra["oriented_score"], 70.0);
    // 0.5 × 87.5 + 0.25 × −0.4 + 0.25 × 70 = 43.75 − 0.1 + 17.5
    assert_eq!(out.score_details.overall_score, 61.15);
    let text = mixseek_evaluator::render_text(&out, false, false);
    assert!(text.contains("12.5 ↓"), "{text}");
    assert!(text.contains("lower is better"), "{text}");

    // maximize (the default) keeps the details exactly as before: no direction keys
    let out = run(
        dir.path(),
        vec![command_metric("errors", &["sh", "errors.sh"], None)],
    )
    .await
    .expect("evaluate");
    let m = &out.score_details.metrics[0];
    assert!(!m.extra.contains_key("direction") && !m.extra.contains_key("oriented_score"));
    assert_eq!(out.score_details.overall_score, 12.5);
}
