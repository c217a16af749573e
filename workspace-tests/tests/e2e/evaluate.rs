//! `mixseek evaluate` end to end: the real binary against a fake OpenAI server on 127.0.0.1
//! that answers each metric by its instruction, so the weighted score is exact; and the
//! evaluator inside `mixseek exec` (the fallback log line, skipped metrics in the store).

use mixseek_testkit::{HttpResponse, HttpServer, Reply, Wire, respond};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use workspace_tests::Sandbox;

/// Which score each metric's judge gives: the first key found in the system prompt wins.
const ROUTES: &[(&str, f64)] = &[
    ("明瞭性/一貫性", 85.5), // ClarityCoherence
    ("包括性", 72.25),       // Coverage
    ("関連性を評価", 90.0),  // Relevance
    ("novelty", 64.0),       // the custom metric
];

const EVALUATOR_TOML: &str = r#"default_model = "openai:gpt-4o-mini"

[[metrics]]
name = "ClarityCoherence"
weight = 0.3

[[metrics]]
name = "coverage"
weight = 0.25

[[metrics]]
name = "Relevance"
weight = 0.25

[[metrics]]
name = "Novelty"
weight = 0.2
system_instruction = "Rate the novelty of the submission (0-100)."
"#;

/// 0.3 × 85.5 + 0.25 × 72.25 + 0.25 × 90 + 0.2 × 64 = 79.0125 → 79.01.
const EXPECTED: f64 = 79.01;

struct Judge {
    server: HttpServer,
    requests: Arc<Mutex<Vec<Value>>>,
    max_in_flight: Arc<AtomicUsize>,
}

impl Judge {
    /// `fail`: every request gets HTTP 400.
    async fn start(fail: bool) -> Self {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let max_in_flight = Arc::new(AtomicUsize::new(0));
        let (r, inf, max) = (requests.clone(), in_flight.clone(), max_in_flight.clone());
        let server = HttpServer::start(0, move |req| {
            let (r, inf, max) = (r.clone(), inf.clone(), max.clone());
            async move {
                let now = inf.fetch_add(1, Ordering::SeqCst) + 1;
                max.fetch_max(now, Ordering::SeqCst);
                let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
                r.lock().expect("lock").push(body.clone());
                let system = body["messages"][0]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let reply = if fail {
                    Reply::status(400, "the judge refuses")
                } else {
                    match ROUTES.iter().find(|(k, _)| system.contains(k)) {
                        Some((k, s)) => Reply::delayed(
                            Duration::from_millis(200),
                            Reply::json(
                                json!({"score": s, "evaluator_comment": format!("judged by {k}")}),
                            ),
                        ),
                        None => Reply::status(404, "unknown metric"),
                    }
                };
                let resp: HttpResponse = respond(Wire::OpenAi, reply, &body, 0, true).await;
                inf.fetch_sub(1, Ordering::SeqCst);
                resp
            }
        })
        .await
        .expect("fake server");
        Self {
            server,
            requests,
            max_in_flight,
        }
    }

    fn url(&self) -> String {
        format!("{}/v1", self.server.uri())
    }
}

fn cmd(sb: &Sandbox, judge: &Judge, args: &[&str]) -> assert_cmd::Command {
    let mut c = sb.cmd();
    c.env("OPENAI_API_KEY", "sk-test-0123456789abcdefghijkl")
        .env("OPENAI_BASE_URL", judge.url());
    c.arg("evaluate").args(args);
    c
}

async fn run(c: assert_cmd::Command) -> std::process::Output {
    let mut c = c;
    tokio::task::spawn_blocking(move || c.output().expect("run mixseek"))
        .await
        .expect("join")
}

#[tokio::test(flavor = "multi_thread")]
async fn four_metrics_give_the_exact_weighted_score_in_json() {
    let sb = Sandbox::new();
    let judge = Judge::start(false).await;
    sb.write("evaluator.toml", EVALUATOR_TOML);
    let out = run(cmd(
        &sb,
        &judge,
        &[
            "--prompt",
            "What is Rust?",
            "--submission",
            "A language.",
            "-c",
            "evaluator.toml",
            "-f",
            "json",
        ],
    ))
    .await;
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(v["overall_score"], EXPECTED);
    let metrics = v["metrics"].as_array().expect("metrics");
    let got: Vec<(&str, f64)> = metrics
        .iter()
        .map(|m| {
            (
                m["metric_name"].as_str().unwrap_or(""),
                m["score"].as_f64().unwrap_or(-1.0),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("ClarityCoherence", 85.5),
            ("Coverage", 72.25),
            ("Relevance", 90.0),
            ("Novelty", 64.0)
        ]
    );
    assert_eq!(metrics[3]["evaluator_comment"], "judged by novelty");
    // Per metric, after the original's fields: the judge's raw answer, the weight used, its
    // usage and duration.
    for (m, weight) in metrics.iter().zip([0.3, 0.25, 0.25, 0.2]) {
        assert_eq!(m["weight"], weight, "{m}");
        assert_eq!(m["usage"]["requests"], 1, "{m}");
        assert!(m["duration_ms"].is_u64(), "{m}");
        assert_eq!(m["answers"][0]["judge"], "openai:gpt-4o-mini", "{m}");
        let raw: Value = serde_json::from_str(m["answers"][0]["raw"].as_str().unwrap_or_default())
            .expect("the raw answer is the judge's JSON");
        assert_eq!(raw["score"], m["score"], "{m}");
    }
    assert_eq!(v["usage"]["requests"], 4);
    assert_eq!(
        judge.max_in_flight.load(Ordering::SeqCst),
        4,
        "all four metrics in flight at once"
    );
    let requests = judge.requests.lock().expect("lock").clone();
    assert_eq!(requests.len(), 4);
    assert!(requests.iter().all(|b| b["model"] == "gpt-4o-mini"));
    assert!(requests.iter().all(|b| {
        b["messages"][1]["content"]
            .as_str()
            .unwrap_or("")
            .ends_with("<submission>\nA language.\n</submission>")
    }));
}

#[tokio::test(flavor = "multi_thread")]
async fn text_output_is_a_table_then_the_overall_score() {
    let sb = Sandbox::new();
    let judge = Judge::start(false).await;
    sb.write("evaluator.toml", EVALUATOR_TOML);
    sb.write("answer.md", "A language.\n");
    let out = run(cmd(
        &sb,
        &judge,
        &[
            "--prompt",
            "What is Rust?",
            "--submission-file",
            "answer.md",
            "-c",
            "evaluator.toml",
        ],
    ))
    .await;
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(
        text.ends_with(&format!("\nOverall Score: {EXPECTED}\n")),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.contains("ClarityCoherence"))
        .expect("a ClarityCoherence row");
    assert!(
        row.contains("0.3") && row.contains("85.5") && row.contains("judged by 明瞭性/一貫性"),
        "{row}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("Novelty") && l.contains("0.2") && l.contains("64.0")),
        "{text}"
    );
    assert!(
        text.starts_with('┏') && text.contains("Weight") && text.contains("Comment"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_submission_can_come_from_stdin() {
    let sb = Sandbox::new();
    let judge = Judge::start(false).await;
    sb.write("evaluator.toml", EVALUATOR_TOML);
    let mut c = cmd(
        &sb,
        &judge,
        &[
            "--prompt",
            "What is Rust?",
            "--submission-file",
            "-",
            "-c",
            "evaluator.toml",
            "-f",
            "json",
        ],
    );
    c.write_stdin("From stdin.");
    let out = run(c).await;
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = judge.requests.lock().expect("lock").clone();
    assert!(
        requests[0]["messages"][1]["content"]
            .as_str()
            .unwrap_or("")
            .ends_with("<submission>\nFrom stdin.\n</submission>")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_file_the_documented_defaults_are_used_with_a_log_line() {
    let sb = Sandbox::new();
    let judge = Judge::start(false).await;
    let mut c = cmd(
        &sb,
        &judge,
        &[
            "--prompt",
            "What is Rust?",
            "--submission",
            "A language.",
            "-f",
            "json",
        ],
    );
    c.env("MIXSEEK_EVALUATOR__DEFAULT_MODEL", "openai:judge");
    let out = run(c).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    assert!(
        stderr.contains("Configuration file not found:")
            && stderr.contains("Using default configuration."),
        "{stderr}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    // ClarityCoherence 0.334, Coverage 0.333, Relevance 0.333: 28.557 + 24.05925 + 29.97 = 82.58625.
    assert_eq!(v["overall_score"], 82.59);
    assert_eq!(v["metrics"].as_array().map(Vec::len), Some(3));
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_exits_2_and_a_failed_evaluation_exits_1() {
    let sb = Sandbox::new();
    let judge = Judge::start(false).await;
    sb.write("evaluator.toml", EVALUATOR_TOML);

    let out = run(cmd(
        &sb,
        &judge,
        &[
            "--prompt",
            "What is Rust?",
            "--submission",
            "   ",
            "-c",
            "evaluator.toml",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("AI response cannot be empty or whitespace-only.")
    );
    assert!(out.stdout.is_empty());

    sb.write("weights.toml", "default_model = \"openai:j\"\n[[metrics]]\nname = \"Coverage\"\nweight = 0.5\n[[metrics]]\nname = \"Relevance\"\nweight = 0.3\n");
    let out = run(cmd(
        &sb,
        &judge,
        &["--prompt", "q", "--submission", "s", "-c", "weights.toml"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Metric weights must sum to 1.0, got: 0.8000. Current weights: Coverage=0.5, Relevance=0.3."), "{stderr}");

    sb.write(
        "unknown.toml",
        "default_model = \"openai:j\"\n[[metrics]]\nname = \"Relevanse\"\n",
    );
    let out = run(cmd(
        &sb,
        &judge,
        &["--prompt", "q", "--submission", "s", "-c", "unknown.toml"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Metric class not found: 'Relevanse'"));

    let out = run(cmd(
        &sb,
        &judge,
        &["--prompt", "q", "--submission", "s", "-c", "missing.toml"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2));

    let out = run(cmd(&sb, &judge, &["--prompt", "q"])).await;
    assert_eq!(out.status.code(), Some(2), "a submission is required");

    let failing = Judge::start(true).await;
    let out = run(cmd(
        &sb,
        &failing,
        &["--prompt", "q", "--submission", "s", "-c", "evaluator.toml"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Failed to evaluate after retries:")
            && stderr.contains("the judge refuses"),
        "{stderr}"
    );
    // The repairs actually made (none: the call itself failed), not max_retries.
    assert!(stderr.contains(" | Retries: 0"), "{stderr}");
    assert!(out.stdout.is_empty());
}

/// Runs `mixseek exec` offline (mock judges) on a blocking thread.
async fn exec(sb: &Sandbox, cfg: &std::path::Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut c = sb.cmd();
    c.args(["exec", "Plan the week", "-f", "json", "-c"])
        .arg(cfg);
    for (k, v) in env {
        c.env(k, v);
    }
    tokio::task::spawn_blocking(move || c.output().expect("run mixseek"))
        .await
        .expect("join")
}

const ORCHESTRATOR: &str = "[orchestrator]\ntimeout_per_team_seconds = 60\nmin_rounds = 1\nmax_rounds = 1\n\
    judgment_config = \"judgment.toml\"\n{evaluator}\n[[orchestrator.teams]]\nconfig = \"team.toml\"\n";

fn offline_team(sb: &Sandbox, evaluator_line: &str) -> std::path::PathBuf {
    sb.write(
        "cfg/team.toml",
        "[team]\nteam_id = \"solo\"\nteam_name = \"Solo\"\n[team.leader]\nmodel = \"mock:leader\"\n",
    );
    sb.write("cfg/judgment.toml", "model = \"mock:judge-continue\"\n");
    sb.write(
        "cfg/orchestrator.toml",
        &ORCHESTRATOR.replace("{evaluator}", evaluator_line),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_without_an_evaluator_file_logs_the_fallback_line() {
    let sb = Sandbox::new();
    let cfg = offline_team(&sb, "");
    let out = exec(
        &sb,
        &cfg,
        &[("MIXSEEK_EVALUATOR__DEFAULT_MODEL", "mock:judge")],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let expected = format!(
        "Configuration file not found: {}. Using default configuration.",
        sb.workspace()
            .join("configs")
            .join("evaluator.toml")
            .display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_stores_the_failures_of_skipped_metrics() {
    let sb = Sandbox::new();
    let cfg = offline_team(&sb, "evaluator_config = \"evaluator.toml\"\n");
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\non_metric_error = \"skip\"\n\n\
         [[metrics]]\nname = \"Coverage\"\nweight = 0.5\n\n\
         [[metrics]]\nname = \"backtest\"\nweight = 0.5\ntype = \"command\"\ncommand = [\"sh\", \"-c\", \"echo 'no data' >&2; exit 3\"]\n",
    );
    let out = exec(&sb, &cfg, &[]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary: Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    let id = summary["execution_id"].as_str().expect("execution id");

    let store =
        mixseek_store::Store::open_read_only(sb.workspace().join("mixseek.db")).expect("the store");
    let rounds = store.team_rounds(id, "solo").expect("rounds");
    let details = &rounds[0].state.score_details;
    assert_eq!(details.metrics.len(), 2, "{details:?}");
    let (coverage, backtest) = (&details.metrics[0], &details.metrics[1]);
    // The metric that succeeded carries the whole weight; the overall score is its score.
    assert_eq!(coverage.extra["weight"], 1.0);
    assert_eq!(coverage.extra["configured_weight"], 0.5);
    assert_eq!(details.overall_score, coverage.score);
    // The failure is stored, not dropped.
    assert_eq!(backtest.metric_name, "backtest");
    assert_eq!(backtest.extra["status"], "failed");
    assert_eq!(backtest.extra["weight"], 0.0);
    assert_eq!(backtest.extra["error"]["kind"], "exit");
    assert!(
        backtest
            .evaluator_comment
            .contains("exited with status 3: no data"),
        "{}",
        backtest.evaluator_comment
    );
}

/// `mixseek evaluate --labels` offline: the mock judge's scores are a hash, so only the
/// structure and the invariants are checked.
fn calibrate_cmd(sb: &Sandbox, args: &[&str]) -> assert_cmd::Command {
    let mut c = sb.cmd();
    c.arg("evaluate").args(args);
    c
}

const MOCK_EVALUATOR_TOML: &str = "default_model = \"mock:judge\"\n\n\
    [[metrics]]\nname = \"Relevance\"\nweight = 0.5\n\n\
    [[metrics]]\nname = \"Coverage\"\nweight = 0.5\n";

fn check_stats(stats: &Value, n: u64, what: &str) {
    assert_eq!(stats["n"], n, "{what}: {stats}");
    for key in [
        "spearman",
        "kendall_tau_b",
        "pearson",
        "krippendorff_alpha",
        "length_spearman",
    ] {
        let v = &stats[key];
        assert!(v.is_null() || v.is_f64(), "{what}.{key}: {v}");
        if let Some(x) = v.as_f64() {
            // alpha can go below −1 in principle, never above 1.
            assert!(x <= 1.0 + 1e-9, "{what}.{key}: {x}");
            if key != "krippendorff_alpha" {
                assert!(x >= -1.0 - 1e-9, "{what}.{key}: {x}");
            }
        }
    }
    let mae = stats["mean_absolute_error"].as_f64().expect("mae");
    assert!((0.0..=100.0).contains(&mae), "{what}: {mae}");
    let bias = stats["length_bias"].as_bool().expect("length_bias");
    let rho = stats["length_spearman"].as_f64();
    assert_eq!(bias, rho.is_some_and(|r| r.abs() >= 0.5), "{what}: {stats}");
}

#[tokio::test(flavor = "multi_thread")]
async fn calibration_against_the_example_labels_reports_every_statistic() {
    let sb = Sandbox::new();
    let cfg = sb.write("evaluator.toml", MOCK_EVALUATOR_TOML);
    let labels = workspace_tests::repo_root().join("configs/examples/calibration/labels.jsonl");
    let (labels, cfg) = (labels.to_string_lossy(), cfg.to_string_lossy());

    let out = run(calibrate_cmd(
        &sb,
        &["--labels", &labels, "-c", &cfg, "-f", "json"],
    ))
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 12);
    assert_eq!(rows[0]["id"], "rust-good");
    assert_eq!(rows[11]["id"], "ja-keigo", "file order kept");
    for r in rows {
        let judge = r["judge"].as_f64().expect("scored");
        assert!((0.0..=100.0).contains(&judge), "{r}");
        assert!(r["error"].is_null());
    }
    check_stats(&v["overall"], 12, "overall");
    let metrics = v["metrics"].as_array().expect("metrics");
    let names: Vec<&str> = metrics
        .iter()
        .filter_map(|m| m["metric"].as_str())
        .collect();
    assert_eq!(names, ["Relevance", "Coverage"]);
    for m in metrics {
        check_stats(m, 12, m["metric"].as_str().unwrap_or_default());
    }
    // Per-metric human scores: Relevance on 3 rows, Coverage on 3.
    assert_eq!(metrics[0]["metric_labels"], 3);
    assert_eq!(metrics[1]["metric_labels"], 3);
    let dis = v["disagreements"].as_array().expect("disagreements");
    assert_eq!(dis.len(), 5);
    let diffs: Vec<f64> = dis
        .iter()
        .map(|d| d["difference"].as_f64().expect("difference").abs())
        .collect();
    assert!(diffs.windows(2).all(|w| w[0] >= w[1]), "{diffs:?}");
    for d in dis {
        let (h, j) = (
            d["human"].as_f64().expect("h"),
            d["judge"].as_f64().expect("j"),
        );
        assert!((d["difference"].as_f64().expect("d") - (j - h)).abs() < 1e-9);
        assert!(
            !d["submission_start"]
                .as_str()
                .unwrap_or_default()
                .is_empty()
        );
    }
    assert_eq!(v["failures"].as_array().map(Vec::len), Some(0));
    assert_eq!(v["mock_judges"], true);

    let out = run(calibrate_cmd(&sb, &["--labels", &labels, "-c", &cfg])).await;
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for heading in [
        "Calibration against 12 labelled rows",
        "Agreement with human labels",
        "Spearman",
        "Kendall τb",
        "Krippendorff",
        "Length ρ",
        "Overall",
        "Relevance",
        "Most disagreeing rows",
        "mock: provider",
    ] {
        assert!(text.contains(heading), "{heading}\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn calibration_with_a_bad_labels_file_exits_2_naming_the_file_and_line() {
    let sb = Sandbox::new();
    let cfg = sb.write("evaluator.toml", MOCK_EVALUATOR_TOML);
    let bad = sb.write(
        "bad.jsonl",
        "{\"prompt\": \"q\", \"submission\": \"a\", \"score\": 50}\n\n{\"prompt\": \"q\", \"submission\": \"b\", \"score\": 150}\n",
    );
    let (bad, cfg) = (bad.to_string_lossy(), cfg.to_string_lossy());
    let out = run(calibrate_cmd(&sb, &["--labels", &bad, "-c", &cfg])).await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{bad}:3:")), "{stderr}");
    assert!(stderr.contains("0..=100"), "{stderr}");
    assert!(out.stdout.is_empty());

    // --labels conflicts with --submission.
    let out = run(calibrate_cmd(
        &sb,
        &["--labels", &bad, "--submission", "s", "-c", &cfg],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn attachments_reach_every_judge_prompt_and_a_bad_file_is_named() {
    let sb = Sandbox::new();
    let judge = Judge::start(false).await;
    sb.write("evaluator.toml", EVALUATOR_TOML);
    let note = sb.write(
        "note.html",
        "<html><head><title>Hidden</title></head><body><h1>Findings</h1><p>The copper price rose 12% in March.</p></body></html>",
    );
    let note = note.display().to_string();
    let out = run(cmd(
        &sb,
        &judge,
        &[
            "--prompt",
            "Summarise the note",
            "--submission",
            "Copper rose.",
            "-c",
            "evaluator.toml",
            "-f",
            "json",
            "--attach",
            &note,
        ],
    ))
    .await;
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).expect("json")["overall_score"],
        EXPECTED
    );
    let requests = judge.requests.lock().expect("lock").clone();
    assert_eq!(requests.len(), 4);
    for body in &requests {
        let user = body["messages"][1]["content"].as_str().unwrap_or_default();
        assert!(
            user.contains("<attachments>\n<attachment name=\"note.html\" type=\"text/html\">\n# Findings\n\nThe copper price rose 12% in March.\n</attachment>\n</attachments>"),
            "{user}"
        );
        assert!(!user.contains("Hidden"), "{user}");
    }

    // A missing or unsupported file is bad input naming it, before any judge is asked.
    let bin = sb.write("data.bin", "\u{0}\u{1}").display().to_string();
    let missing = sb.path().join("missing.pdf").display().to_string();
    for (file, says) in [
        (bin.as_str(), "data.bin"),
        (missing.as_str(), "missing.pdf"),
    ] {
        let out = run(cmd(
            &sb,
            &judge,
            &[
                "--prompt",
                "q",
                "--submission",
                "s",
                "-c",
                "evaluator.toml",
                "--attach",
                file,
            ],
        ))
        .await;
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}",
            workspace_tests::describe(&out)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("Error: attachment {file}"))
                && stderr.contains(says)
                && stderr.contains("Hint: "),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
    }
    assert_eq!(
        judge.requests.lock().expect("lock").len(),
        4,
        "no judge asked"
    );
    // Calibration takes no attachments.
    let out = run(cmd(
        &sb,
        &judge,
        &["--labels", "labels.jsonl", "--attach", &note],
    ))
    .await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        workspace_tests::describe(&out)
    );
}
