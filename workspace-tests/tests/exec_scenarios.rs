//! `mixseek exec` end to end in the situations a real competition meets: the real binary, a
//! real DuckDB file, leaders talking HTTP to fake OpenAI-compatible servers on 127.0.0.1
//! (scripted per scenario), evaluators and judgment on the offline `mock:` provider.
//!
//! Scenarios: 2 teams × 3 rounds over HTTP; a team failing at round 2 (partial, exit 1); every
//! team failing (exit 2); a team timeout; 20 % of calls failing transiently (every round still
//! scored); the concurrency limit as seen by the server; a budget stop; a process killed
//! mid-run, then `--resume` (no completed round redone, the final result complete).

use mixseek_testkit::fake::{Reply, Wire, respond};
use mixseek_testkit::server::{HttpResponse, HttpServer};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use workspace_tests::Sandbox;

/// What the fake leader server answers to its `n`-th request (0-based).
type Policy = Arc<dyn Fn(usize) -> Reply + Send + Sync>;

/// A fake OpenAI-compatible server that counts requests, failures and calls in flight.
struct Fake {
    server: HttpServer,
    requests: Arc<AtomicUsize>,
    failures: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
}

impl Fake {
    async fn start(policy: Policy) -> Self {
        let requests = Arc::new(AtomicUsize::new(0));
        let failures = Arc::new(AtomicUsize::new(0));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let max_in_flight = Arc::new(AtomicUsize::new(0));
        let (r, f, inf, max) = (
            requests.clone(),
            failures.clone(),
            in_flight.clone(),
            max_in_flight.clone(),
        );
        let server = HttpServer::start(0, move |req| {
            let (r, f, inf, max, policy) = (
                r.clone(),
                f.clone(),
                inf.clone(),
                max.clone(),
                policy.clone(),
            );
            async move {
                let now = inf.fetch_add(1, Ordering::SeqCst) + 1;
                max.fetch_max(now, Ordering::SeqCst);
                let n = r.fetch_add(1, Ordering::SeqCst);
                let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
                let reply = policy(n);
                if matches!(reply, Reply::Error { .. }) {
                    f.fetch_add(1, Ordering::SeqCst);
                }
                let resp: HttpResponse = respond(Wire::OpenAi, reply, &body, n, true).await;
                inf.fetch_sub(1, Ordering::SeqCst);
                resp
            }
        })
        .await
        .expect("fake server");
        Self {
            server,
            requests,
            failures,
            max_in_flight,
        }
    }

    fn url(&self) -> String {
        format!("{}/v1", self.server.uri())
    }
    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

fn always(reply: fn() -> Reply) -> Policy {
    Arc::new(move |_| reply())
}

/// A team: its id and its leader's model (`fake:…` for the HTTP server, `mock:…` offline).
struct Team<'a>(&'a str, &'a str);

/// Writes orchestrator + teams + evaluator + judgment; `fake_url` backs the `fake` provider.
fn competition(
    sb: &Sandbox,
    teams: &[Team],
    orchestrator: &str,
    fake_url: Option<&str>,
) -> PathBuf {
    let mut orch = format!(
        "[orchestrator]\nevaluator_config = \"evaluator.toml\"\njudgment_config = \"judgment.toml\"\n{orchestrator}\n"
    );
    for Team(id, model) in teams {
        orch.push_str(&format!(
            "\n[[orchestrator.teams]]\nconfig = \"team_{id}.toml\"\n"
        ));
        sb.write(
            &format!("cfg/team_{id}.toml"),
            &format!(
                "[team]\nteam_id = \"{id}\"\nteam_name = \"Team {id}\"\n[team.leader]\nmodel = \"{model}\"\n"
            ),
        );
    }
    if let Some(url) = fake_url {
        orch.push_str(&format!(
            "\n[providers.fake]\nkind = \"openai-compatible\"\nbase_url = \"{url}\"\nmax_attempts = 6\nbackoff_initial_seconds = 0.01\nbackoff_max_seconds = 0.05\n"
        ));
    }
    orch.push_str(
        "\n[providers.mock]\nmax_attempts = 8\nbackoff_initial_seconds = 0.01\nbackoff_max_seconds = 0.05\n",
    );
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\n[[metrics]]\nname = \"Relevance\"\n",
    );
    sb.write("cfg/judgment.toml", "model = \"mock:judge-continue\"\n");
    sb.write("cfg/orchestrator.toml", &orch)
}

/// Runs `mixseek exec PROMPT -c CFG -f json ARGS…` on a blocking thread.
async fn exec(sb: &Sandbox, cfg: &Path, args: &[&str]) -> (Output, Value) {
    let mut cmd = sb.cmd();
    cmd.args(["exec", "Write a short poem about rivers", "-c"])
        .arg(cfg)
        .args(["-f", "json", "-q"])
        .args(args);
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("run mixseek"))
        .await
        .expect("join");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, json)
}

fn describe(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The rounds stored for each team of an execution: team id → sorted round numbers.
fn stored_rounds(sb: &Sandbox, execution_id: &str) -> Vec<(String, Vec<u32>)> {
    let store = mixseek_store::Store::open_read_only(sb.workspace().join("mixseek.db"))
        .expect("open the database");
    let mut by_team: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
    for row in store.history(execution_id, None).expect("history") {
        by_team
            .entry(row.team_id)
            .or_default()
            .push(row.round_number);
    }
    by_team
        .into_iter()
        .map(|(t, mut r)| {
            r.sort_unstable();
            (t, r)
        })
        .collect()
}

fn team_result<'a>(summary: &'a Value, team: &str) -> Option<&'a Value> {
    summary["team_results"]
        .as_array()?
        .iter()
        .find(|t| t["team_id"] == team)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_teams_three_rounds_over_http() {
    let fake = Fake::start(always(|| Reply::Auto)).await;
    let sb = Sandbox::new();
    let cfg = competition(
        &sb,
        &[
            Team("north", "fake:gpt-north"),
            Team("south", "fake:gpt-south"),
        ],
        "min_rounds = 3\nmax_rounds = 3\ntimeout_per_team_seconds = 60",
        Some(&fake.url()),
    );
    let (out, summary) = exec(&sb, &cfg, &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(summary["status"], "completed", "{summary}");
    assert_eq!(summary["total_teams"], 2);
    assert_eq!(summary["completed_teams"], 2);
    assert_eq!(fake.requests(), 6, "one leader call per team and round");
    let id = summary["execution_id"].as_str().expect("execution id");
    assert_eq!(
        stored_rounds(&sb, id),
        vec![
            ("north".to_string(), vec![1, 2, 3]),
            ("south".to_string(), vec![1, 2, 3])
        ]
    );
    // Usage from the server's `usage` blocks is counted, not recorded as 0.
    assert!(
        summary["usage_by_role"]["leader"]["input_tokens"].as_u64() > Some(0),
        "{summary}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_failing_at_round_2_keeps_round_1_and_exits_1() {
    // Request 0 (the failing team's round 1) succeeds; every later request is refused.
    let fake = Fake::start(Arc::new(|n| {
        if n == 0 {
            Reply::text("A river runs; round one's answer.")
        } else {
            Reply::status(400, "model refused the request")
        }
    }))
    .await;
    let sb = Sandbox::new();
    let cfg = competition(
        &sb,
        &[
            Team("steady", "mock:leader-steady"),
            Team("fragile", "fake:gpt"),
        ],
        "min_rounds = 3\nmax_rounds = 3\ntimeout_per_team_seconds = 60",
        Some(&fake.url()),
    );
    let (out, summary) = exec(&sb, &cfg, &[]).await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert_eq!(summary["status"], "partial_failure", "{summary}");
    assert_eq!(summary["partial_team_ids"], serde_json::json!(["fragile"]));
    let fragile = team_result(&summary, "fragile").expect("the partial result is kept");
    assert_eq!(fragile["round_number"], 1, "{fragile}");
    let failure = &summary["failed_teams_info"][0];
    assert_eq!(failure["team_id"], "fragile");
    assert!(
        failure["error_message"]
            .as_str()
            .is_some_and(|m| m.contains("400") || m.contains("refused")),
        "{failure}"
    );
    let id = summary["execution_id"].as_str().expect("id");
    assert_eq!(
        stored_rounds(&sb, id),
        vec![
            ("fragile".to_string(), vec![1]),
            ("steady".to_string(), vec![1, 2, 3])
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_team_failing_exits_2() {
    let fake = Fake::start(always(|| Reply::status(401, "invalid api key"))).await;
    let sb = Sandbox::new();
    let cfg = competition(
        &sb,
        &[Team("a", "fake:gpt-a"), Team("b", "fake:gpt-b")],
        "min_rounds = 1\nmax_rounds = 2\ntimeout_per_team_seconds = 60",
        Some(&fake.url()),
    );
    let (out, summary) = exec(&sb, &cfg, &[]).await;
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert_eq!(summary["status"], "failed", "{summary}");
    assert_eq!(summary["failed_teams"], 2);
    assert_eq!(summary["team_results"], serde_json::json!([]));
    // A permanent error is not retried: one request per team.
    assert_eq!(fake.requests(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_over_its_time_limit_is_stopped_and_the_others_finish() {
    let fake = Fake::start(always(Reply::hang)).await;
    let sb = Sandbox::new();
    let cfg = competition(
        &sb,
        &[
            Team("quick", "mock:leader-quick"),
            Team("stuck", "fake:gpt"),
        ],
        "min_rounds = 2\nmax_rounds = 2\ntimeout_per_team_seconds = 10",
        Some(&fake.url()),
    );
    let started = Instant::now();
    let (out, summary) = exec(&sb, &cfg, &[]).await;
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        took < Duration::from_secs(40),
        "the time limit is enforced: {took:?}"
    );
    assert!(team_result(&summary, "quick").is_some(), "{summary}");
    let failure = &summary["failed_teams_info"][0];
    assert_eq!(failure["team_id"], "stuck", "{summary}");
    assert!(
        failure["error_message"]
            .as_str()
            .is_some_and(|m| m.to_lowercase().contains("timeout") || m.contains("time limit")),
        "{failure}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_percent_transient_failures_still_score_every_round() {
    // Every fifth leader request fails with 503; the mock judges fail 20 % of attempts too.
    let fake = Fake::start(Arc::new(|n| {
        if n % 5 == 4 {
            Reply::status(503, "overloaded")
        } else {
            Reply::Auto
        }
    }))
    .await;
    let sb = Sandbox::new();
    let cfg = competition(
        &sb,
        &[
            Team("a", "fake:gpt-a"),
            Team("b", "fake:gpt-b"),
            Team("c", "fake:gpt-c"),
        ],
        "min_rounds = 3\nmax_rounds = 3\ntimeout_per_team_seconds = 60",
        Some(&fake.url()),
    );
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge-20pct\"\n[[metrics]]\nname = \"Coverage\"\n[[metrics]]\nname = \"Relevance\"\n",
    );
    let (out, summary) = exec(&sb, &cfg, &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        fake.failures.load(Ordering::SeqCst) >= 2,
        "faults were injected"
    );
    let id = summary["execution_id"].as_str().expect("id");
    for (team, rounds) in stored_rounds(&sb, id) {
        assert_eq!(rounds, vec![1, 2, 3], "team {team}");
    }
    assert_eq!(summary["completed_teams"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_more_teams_run_at_once_than_max_concurrent_teams() {
    let fake = Fake::start(always(|| {
        Reply::delayed(Duration::from_millis(300), Reply::Auto)
    }))
    .await;
    let sb = Sandbox::new();
    let teams: Vec<String> = (1..=5).map(|i| format!("t{i}")).collect();
    let team_refs: Vec<Team> = teams.iter().map(|t| Team(t, "fake:gpt")).collect();
    let cfg = competition(
        &sb,
        &team_refs,
        "min_rounds = 1\nmax_rounds = 1\nmax_concurrent_teams = 2\ntimeout_per_team_seconds = 60",
        Some(&fake.url()),
    );
    let (out, summary) = exec(&sb, &cfg, &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(summary["completed_teams"], 5);
    assert_eq!(fake.requests(), 5);
    assert_eq!(
        fake.max_in_flight.load(Ordering::SeqCst),
        2,
        "two teams at a time, never more (and not one by one)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_budget_stops_new_rounds_and_says_why() {
    let sb = Sandbox::new();
    let cfg = competition(
        &sb,
        &[Team("a", "mock:leader-a"), Team("b", "mock:leader-b")],
        "min_rounds = 3\nmax_rounds = 3\ntimeout_per_team_seconds = 60\nmax_concurrent_teams = 1",
        None,
    );
    let (out, summary) = exec(&sb, &cfg, &["--max-tokens", "500"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let reason = summary["stop_reason"].as_str().unwrap_or_default();
    assert!(reason.contains("token budget"), "{summary}");
    let id = summary["execution_id"].as_str().expect("id");
    let rounds = stored_rounds(&sb, id);
    // Team a ran its first round (the budget was not reached before it); nothing after.
    assert_eq!(rounds, vec![("a".to_string(), vec![1])], "{summary}");
    // The text output says why too.
    let text = sb
        .cmd()
        .args([
            "exec",
            "Write a short poem about rivers",
            "-q",
            "--max-tokens",
            "500",
            "-c",
        ])
        .arg(&cfg)
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains("Stopped Early:    token budget reached"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_run_resumes_without_redoing_completed_rounds() {
    // The leader's third request (round 3) never answers: the test kills the process then.
    let fake = Fake::start(Arc::new(
        |n| {
            if n == 2 { Reply::hang() } else { Reply::Auto }
        },
    ))
    .await;
    let sb = Sandbox::new();
    let cfg = competition(
        &sb,
        &[Team("solo", "fake:gpt")],
        "min_rounds = 4\nmax_rounds = 4\ntimeout_per_team_seconds = 120",
        Some(&fake.url()),
    );
    let mut cmd = std::process::Command::new(workspace_tests::mixseek_bin());
    cmd.env_remove("MIXSEEK_WORKSPACE")
        .arg("-w")
        .arg(sb.workspace())
        .args([
            "--no-log-file",
            "-q",
            "exec",
            "Write a short poem about rivers",
            "-c",
        ])
        .arg(&cfg)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().expect("spawn mixseek");
    let deadline = Instant::now() + Duration::from_secs(60);
    while fake.requests() < 3 {
        assert!(Instant::now() < deadline, "round 3 never started");
        assert!(
            child.try_wait().expect("wait").is_none(),
            "mixseek exited early"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().expect("kill");
    let _ = child.wait();

    // Rounds 1 and 2 were committed before round 3 started; they survive the kill.
    let store = mixseek_store::Store::open_read_only(sb.workspace().join("mixseek.db"))
        .expect("open the database");
    let id = store
        .latest_execution()
        .expect("query")
        .expect("the execution is stored");
    let before = store.history(&id, Some("solo")).expect("history");
    drop(store);
    assert_eq!(
        before.iter().map(|r| r.round_number).collect::<Vec<_>>(),
        vec![1, 2]
    );

    let requests_before = fake.requests();
    let mut resume = sb.cmd();
    resume
        .args(["exec", "--resume", &id, "-f", "json", "-q", "-c"])
        .arg(&cfg);
    let out = tokio::task::spawn_blocking(move || resume.output().expect("resume"))
        .await
        .expect("join");
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let summary: Value = serde_json::from_slice(&out.stdout).expect("json summary");
    assert_eq!(summary["execution_id"], id.as_str());
    assert_eq!(summary["status"], "completed", "{summary}");
    assert_eq!(
        fake.requests() - requests_before,
        2,
        "only rounds 3 and 4 call the leader again"
    );
    let store = mixseek_store::Store::open_read_only(sb.workspace().join("mixseek.db"))
        .expect("open the database");
    let after = store.history(&id, Some("solo")).expect("history");
    assert_eq!(
        after.iter().map(|r| r.round_number).collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(
            b.round_started_at, a.round_started_at,
            "round {} kept",
            b.round_number
        );
        assert_eq!(b.score, a.score);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_marks_the_execution_interrupted_and_prints_the_resume_command() {
    // Round 2's leader call never answers; Ctrl-C arrives while it is in flight.
    let fake = Fake::start(Arc::new(
        |n| if n == 1 { Reply::hang() } else { Reply::Auto },
    ))
    .await;
    let sb = Sandbox::new();
    let cfg = competition(
        &sb,
        &[Team("solo", "fake:gpt")],
        "min_rounds = 3\nmax_rounds = 3\ntimeout_per_team_seconds = 120",
        Some(&fake.url()),
    );
    let mut cmd = std::process::Command::new(workspace_tests::mixseek_bin());
    cmd.env_remove("MIXSEEK_WORKSPACE")
        .arg("-w")
        .arg(sb.workspace())
        .args([
            "--no-log-file",
            "-q",
            "exec",
            "Write a short poem about rivers",
            "-c",
        ])
        .arg(&cfg)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("spawn mixseek");
    let deadline = Instant::now() + Duration::from_secs(60);
    while fake.requests() < 2 {
        assert!(Instant::now() < deadline, "round 2 never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("send SIGINT");
    assert!(status.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().expect("wait"))
        .await
        .expect("join");
    assert_eq!(out.status.code(), Some(130), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mixseek exec --resume "), "{err}");

    let store = mixseek_store::Store::open_read_only(sb.workspace().join("mixseek.db"))
        .expect("open the database");
    let id = store.latest_execution().expect("query").expect("stored");
    let row = store
        .execution(&id)
        .expect("query")
        .expect("the execution row");
    assert_eq!(row.status, "interrupted", "{row:?}");
    assert_eq!(
        store
            .history(&id, None)
            .expect("history")
            .iter()
            .map(|r| r.round_number)
            .collect::<Vec<_>>(),
        vec![1],
        "the committed round is kept"
    );
    drop(store);

    // The printed command finishes the run: rounds 2 and 3 only.
    let before = fake.requests();
    let mut resume = sb.cmd();
    resume
        .args(["exec", "--resume", &id, "-q", "-f", "json", "-c"])
        .arg(&cfg);
    let out = tokio::task::spawn_blocking(move || resume.output().expect("resume"))
        .await
        .expect("join");
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(fake.requests() - before, 2);
    assert_eq!(
        stored_rounds(&sb, &id),
        vec![("solo".to_string(), vec![1, 2, 3])]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_get_the_events_and_the_prompt_may_come_from_stdin_or_a_file() {
    // The URL hook's receiver.
    let posted = Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let p = posted.clone();
    let receiver = HttpServer::start(0, move |req| {
        let p = p.clone();
        async move {
            if let Ok(v) = serde_json::from_slice::<Value>(&req.body) {
                p.lock().expect("lock").push(v);
            }
            HttpResponse::text(204, "")
        }
    })
    .await
    .expect("hook receiver");
    let sb = Sandbox::new();
    let log = sb.path().join("rounds.jsonl");
    let cfg = competition(
        &sb,
        &[Team("a", "mock:leader-a"), Team("b", "mock:leader-b")],
        &format!(
            "min_rounds = 2\nmax_rounds = 2\ntimeout_per_team_seconds = 60\n\n\
             [[hooks]]\non = \"round_complete\"\ncommand = [\"sh\", \"-c\", \"cat >> '{}'; echo >> '{}'\"]\n\n\
             [[hooks]]\non = \"execution_complete\"\nurl = \"{}/hook\"\n\n\
             [[hooks]]\non = \"team_complete\"\ncommand = [\"sh\", \"-c\", \"exit 3\"]",
            log.display(),
            log.display(),
            receiver.uri()
        ),
        None,
    );
    // The prompt from stdin (`-`).
    let mut cmd = sb.cmd();
    cmd.args(["exec", "-", "-q", "-f", "json", "-c"])
        .arg(&cfg)
        .write_stdin("A prompt read from stdin\n");
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("run"))
        .await
        .expect("join");
    assert_eq!(
        out.status.code(),
        Some(0),
        "a failing hook is not fatal: {}",
        describe(&out)
    );
    let summary: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(summary["user_prompt"], "A prompt read from stdin");

    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .expect("the command hook ran")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("one JSON event per line"))
        .collect();
    assert_eq!(
        lines.len(),
        4,
        "one round_complete per team and round: {lines:?}"
    );
    assert!(
        lines
            .iter()
            .all(|e| e["execution_id"] == summary["execution_id"])
    );
    let posted = posted.lock().expect("lock").clone();
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert_eq!(posted[0]["event"], "execution_finished");
    assert_eq!(posted[0]["execution_id"], summary["execution_id"]);

    // The prompt from a file.
    let file = sb.write("task.md", "A prompt read from a file");
    let mut cmd = sb.cmd();
    cmd.args(["exec", "-q", "-f", "json", "--prompt-file"])
        .arg(&file)
        .arg("-c")
        .arg(&cfg);
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("run"))
        .await
        .expect("join");
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let summary: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(summary["user_prompt"], "A prompt read from a file");
}
