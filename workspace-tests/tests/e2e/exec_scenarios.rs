//! `mixseek exec` end to end in the situations a real competition meets: the real binary, a
//! real DuckDB file, leaders talking HTTP to fake OpenAI-compatible servers on 127.0.0.1
//! (scripted per scenario), evaluators and judgment on the offline `mock:` provider.
//!
//! Scenarios: 2 teams × 3 rounds over HTTP; a team failing at round 2 (partial, exit 1); every
//! team failing (exit 2); a team timeout; 20 % of calls failing transiently (every round still
//! scored); the concurrency limit as seen by the server; a budget stop; a process killed
//! mid-run, then `--resume` (no completed round redone, the final result complete).

use mixseek_testkit::{HttpResponse, HttpServer, Reply, Wire, respond};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use workspace_tests::{Sandbox, describe};

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

/// Writes orchestrator + teams + evaluator + judgment; `fake_url` backs the `fake` provider
/// (6 attempts per call).
fn competition(
    sb: &Sandbox,
    teams: &[Team],
    orchestrator: &str,
    fake_url: Option<&str>,
) -> PathBuf {
    competition_with(sb, teams, orchestrator, fake_url, 6)
}

/// [`competition`] with the `fake` provider's `max_attempts`.
fn competition_with(
    sb: &Sandbox,
    teams: &[Team],
    orchestrator: &str,
    fake_url: Option<&str>,
    fake_max_attempts: u32,
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
            "\n[providers.fake]\nkind = \"openai-compatible\"\nbase_url = \"{url}\"\nmax_attempts = {fake_max_attempts}\nbackoff_initial_seconds = 0.01\nbackoff_max_seconds = 0.05\n"
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

/// The rounds stored for each team of an execution: team id → sorted round numbers.
fn stored_rounds(sb: &Sandbox, execution_id: &str) -> Vec<(String, Vec<u32>)> {
    let store = mixseek_store::Store::open_read_only(sb.workspace().join("mixseek.db"))
        .expect("open the database");
    let mut by_team: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
    for row in store.history(execution_id, None).expect("history") {
        by_team
            .entry(row.team_id.into_string())
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

/// A team's progress file, `WORKSPACE/logs/{execution_id}.{team_id}.progress.json`.
fn progress_file(sb: &Sandbox, execution_id: &str, team: &str) -> Value {
    let path = sb
        .workspace()
        .join("logs")
        .join(format!("{execution_id}.{team}.progress.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("a progress file is JSON")
}

/// Sends SIGINT (Ctrl-C) to a process.
fn interrupt(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("send SIGINT");
    assert!(status.success());
}

/// Waits until `ready()` holds (bounded, so a broken run fails instead of hanging).
async fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !ready() {
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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

    // The progress files: the original's keys, plus the best round, the best score and the
    // usage (what the web UI's live view shows); the failed team's error.
    let steady = progress_file(&sb, id, "steady");
    let mut keys: Vec<&str> = steady
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "best_round",
            "best_score",
            "current_agent",
            "current_round",
            "execution_id",
            "status",
            "team_id",
            "team_name",
            "total_rounds",
            "updated_at",
            "usage"
        ],
        "{steady}"
    );
    assert_eq!(steady["status"], "completed", "{steady}");
    assert_eq!(steady["current_round"], 3);
    assert_eq!(steady["total_rounds"], 3);
    assert_eq!(steady["execution_id"], id);
    assert_eq!(steady["current_agent"], Value::Null);
    assert!(
        steady["best_round"]
            .as_u64()
            .is_some_and(|b| (1..=3).contains(&b))
    );
    let fragile = progress_file(&sb, id, "fragile");
    assert_eq!(fragile["status"], "failed", "{fragile}");
    assert_eq!(fragile["best_round"], 1, "the partial result's round");
    assert!(
        fragile["error_message"]
            .as_str()
            .is_some_and(|m| m.contains("400") || m.contains("refused")),
        "{fragile}"
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
        "min_rounds = 2\nmax_rounds = 2\ntimeout_per_team_seconds = 600",
        Some(&fake.url()),
    );
    // `--timeout` overrides the configured 600 s (10 s is the shortest allowed).
    let (out, summary) = exec(&sb, &cfg, &["--timeout", "10"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(team_result(&summary, "quick").is_some(), "{summary}");
    let failure = &summary["failed_teams_info"][0];
    assert_eq!(failure["team_id"], "stuck", "{summary}");
    assert_eq!(failure["error_message"], "Timeout after 10s", "{failure}");
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

/// Asserts a budget stop after team `a`'s first round: `b` never started, which is neither a
/// success nor a failure; the run is `completed` with the stop reason, exit 0.
fn assert_budget_stop(sb: &Sandbox, out: &Output, summary: &Value, reason: &str) {
    assert_eq!(out.status.code(), Some(0), "{}", describe(out));
    assert_eq!(summary["status"], "completed", "{summary}");
    assert!(
        summary["stop_reason"]
            .as_str()
            .is_some_and(|r| r.contains(reason)),
        "{summary}"
    );
    assert_eq!(
        summary["stopped_team_ids"],
        serde_json::json!(["b"]),
        "{summary}"
    );
    assert_eq!(
        (
            &summary["total_teams"],
            &summary["completed_teams"],
            &summary["failed_teams"]
        ),
        (&Value::from(2), &Value::from(1), &Value::from(0)),
        "{summary}"
    );
    assert_eq!(summary["failed_teams_info"], serde_json::json!([]));
    let a = team_result(summary, "a").expect("team a's round is kept");
    assert_eq!(a["exit_reason"], "budget_exceeded", "{a}");
    let id = summary["execution_id"].as_str().expect("id");
    // Team a ran its first round (the budget was not reached before it); nothing after.
    assert_eq!(
        stored_rounds(sb, id),
        vec![("a".to_string(), vec![1])],
        "{summary}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_budget_stops_new_teams_and_rounds_and_says_why() {
    let sb = Sandbox::new();
    let cfg = competition(
        &sb,
        &[Team("a", "mock:leader-a"), Team("b", "mock:leader-b")],
        "min_rounds = 3\nmax_rounds = 3\ntimeout_per_team_seconds = 60\nmax_concurrent_teams = 1",
        None,
    );
    let (out, summary) = exec(&sb, &cfg, &["--max-tokens", "500"]).await;
    assert_budget_stop(&sb, &out, &summary, "token budget");
    // The text output says why, and which team did not run.
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
    assert_eq!(text.status.code(), Some(0), "{}", describe(&text));
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains("Stopped Early:    token budget reached")
            && stdout.contains("\nNot Finished:     b\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("❌ Failed Teams:"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cost_budget_stops_the_run_like_a_token_budget() {
    let sb = Sandbox::new();
    // The leaders' calls are priced (the mock judges are not): about $1 per 1,000 tokens.
    let cfg = competition(
        &sb,
        &[Team("a", "mock:leader-a"), Team("b", "mock:leader-b")],
        "min_rounds = 3\nmax_rounds = 3\ntimeout_per_team_seconds = 60\nmax_concurrent_teams = 1\n\n\
         [pricing.\"mock:leader-a\"]\ninput_per_million = 1000000.0\noutput_per_million = 1000000.0\n\n\
         [pricing.\"mock:leader-b\"]\ninput_per_million = 1000000.0\noutput_per_million = 1000000.0",
        None,
    );
    let (out, summary) = exec(&sb, &cfg, &["--max-cost-usd", "0.05"]).await;
    assert_budget_stop(&sb, &out, &summary, "cost budget");
    assert!(
        summary["usage"]["cost_usd"].as_f64() >= Some(0.05),
        "{summary}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budgets_from_the_configuration_apply_and_the_flags_override_them() {
    let sb = Sandbox::new();
    let cfg = competition(
        &sb,
        &[Team("a", "mock:leader-a"), Team("b", "mock:leader-b")],
        "min_rounds = 3\nmax_rounds = 3\ntimeout_per_team_seconds = 60\nmax_concurrent_teams = 1\n\
         max_total_tokens = 500\nmax_cost_usd = 0.05\n\n\
         [pricing.\"mock:leader-a\"]\ninput_per_million = 1.0\noutput_per_million = 1.0",
        None,
    );
    let (out, summary) = exec(&sb, &cfg, &[]).await;
    assert_budget_stop(&sb, &out, &summary, "token budget");
    assert!(
        summary["stop_reason"]
            .as_str()
            .is_some_and(|r| r.contains("max_total_tokens")),
        "{summary}"
    );

    // The pricing makes the cost key the one that stops the run once tokens are unlimited.
    sb.write(
        "cfg/orchestrator.toml",
        &std::fs::read_to_string(&cfg)
            .expect("read")
            .replace("max_total_tokens = 500", "max_total_tokens = 100000000")
            .replace("input_per_million = 1.0", "input_per_million = 1000000.0"),
    );
    let (out, summary) = exec(&sb, &cfg, &[]).await;
    assert_budget_stop(&sb, &out, &summary, "cost budget");

    // Generous flags override both keys: every round of every team runs.
    let (out, summary) = exec(
        &sb,
        &cfg,
        &["--max-tokens", "100000000", "--max-cost-usd", "1000000"],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(summary["stop_reason"], Value::Null, "{summary}");
    assert_eq!(summary["stopped_team_ids"], serde_json::json!([]));
    let id = summary["execution_id"].as_str().expect("id");
    assert_eq!(
        stored_rounds(&sb, id),
        vec![
            ("a".to_string(), vec![1, 2, 3]),
            ("b".to_string(), vec![1, 2, 3])
        ]
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
    // The printed command names the workspace and the configuration.
    let command = err
        .lines()
        .skip_while(|l| !l.contains("Resume it with:"))
        .nth(1)
        .map(str::trim)
        .unwrap_or_else(|| panic!("no resume command in:\n{err}"))
        .to_string();
    assert!(
        command.starts_with(&format!(
            "mixseek -w {} exec --resume ",
            sb.workspace().display()
        )) && command.ends_with(&format!(" -c {}", cfg.display())),
        "{command}"
    );

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

    // The printed command, run by a shell from another directory, finishes the run: rounds
    // 2 and 3 only.
    let before = fake.requests();
    let bin_dir = workspace_tests::mixseek_bin()
        .parent()
        .expect("the binary's folder")
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut resume = std::process::Command::new("sh");
    resume
        .arg("-c")
        .arg(format!("{command} -q -f json --no-log-file"))
        .env("PATH", path)
        .env_remove("MIXSEEK_WORKSPACE")
        .current_dir(std::env::temp_dir());
    let out = tokio::task::spawn_blocking(move || resume.output().expect("resume"))
        .await
        .expect("join");
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(fake.requests() - before, 2);
    assert_eq!(
        stored_rounds(&sb, &id),
        vec![("solo".to_string(), vec![1, 2, 3])]
    );
    // The summary covers the earlier process too: three leader calls in all.
    let summary: Value = serde_json::from_slice(&out.stdout).expect("json summary");
    assert_eq!(
        summary["usage_by_role"]["leader"]["requests"], 3,
        "{summary}"
    );
    assert_eq!(summary["execution_id"], id.as_str());
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
    // One append per event (the hooks of two teams' rounds can run at the same time: a `cat`
    // then an `echo` of each would interleave).
    let cfg = competition(
        &sb,
        &[Team("a", "mock:leader-a"), Team("b", "mock:leader-b")],
        &format!(
            "min_rounds = 2\nmax_rounds = 2\ntimeout_per_team_seconds = 60\n\n\
             [[hooks]]\non = \"round_complete\"\ncommand = [\"sh\", \"-c\", \"printf '%s\\\\n' \\\"$(cat)\\\" >> '{}'\"]\n\n\
             [[hooks]]\non = \"execution_complete\"\nurl = \"{}/hook\"\n\n\
             [[hooks]]\non = \"team_complete\"\ncommand = [\"sh\", \"-c\", \"exit 3\"]",
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_5xx_streak_is_retried_from_the_last_completed_round() {
    // The provider layer does not retry (max_attempts = 1), so the team itself is re-run:
    // round 2's leader call fails twice with 503, then the run goes on from round 2.
    let fake = Fake::start(Arc::new(|n| {
        if n == 1 || n == 2 {
            Reply::status(503, "overloaded")
        } else {
            Reply::Auto
        }
    }))
    .await;
    let sb = Sandbox::new();
    let cfg = competition_with(
        &sb,
        &[Team("solo", "fake:gpt")],
        "min_rounds = 3\nmax_rounds = 3\ntimeout_per_team_seconds = 120\nmax_retries_per_team = 2",
        Some(&fake.url()),
        1,
    );
    let (out, summary) = exec(&sb, &cfg, &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(summary["status"], "completed", "{summary}");
    assert_eq!(fake.failures.load(Ordering::SeqCst), 2);
    assert_eq!(
        fake.requests(),
        3 + 2,
        "one leader request per round plus the two failures: round 1 is not requested again"
    );
    let id = summary["execution_id"].as_str().expect("id");
    assert_eq!(
        stored_rounds(&sb, id),
        vec![("solo".to_string(), vec![1, 2, 3])]
    );
    let solo = team_result(&summary, "solo").expect("result");
    assert_eq!(solo["exit_reason"], "max_rounds_reached", "{solo}");

    // With no retry left the same streak fails the team, keeping round 1.
    let fake = Fake::start(Arc::new(|n| {
        if n >= 1 {
            Reply::status(503, "overloaded")
        } else {
            Reply::Auto
        }
    }))
    .await;
    let sb = Sandbox::new();
    let cfg = competition_with(
        &sb,
        &[Team("solo", "fake:gpt")],
        "min_rounds = 3\nmax_rounds = 3\ntimeout_per_team_seconds = 120\nmax_retries_per_team = 1",
        Some(&fake.url()),
        1,
    );
    let (out, summary) = exec(&sb, &cfg, &[]).await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert_eq!(summary["status"], "partial_failure", "{summary}");
    assert_eq!(summary["partial_team_ids"], serde_json::json!(["solo"]));
    assert_eq!(fake.requests(), 1 + 2, "round 1, then round 2 twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_team_timeout_covers_the_whole_run_and_keeps_the_best_round() {
    // Each round takes about 2 s (a slow leader), far below the 10 s limit (the shortest
    // allowed); ten rounds do not fit in it. The team ends `partial_failure_timeout` with its
    // best round, and its usage is reported (team_complete hook).
    let sb = Sandbox::new();
    let log = sb.path().join("teams.jsonl");
    let cfg = competition(
        &sb,
        &[
            Team("quick", "mock:leader-quick"),
            Team("slow", "mock:leader-slow-2000ms"),
        ],
        &format!(
            "min_rounds = 10\nmax_rounds = 10\ntimeout_per_team_seconds = 10\n\n\
             [[hooks]]\non = \"team_complete\"\ncommand = [\"sh\", \"-c\", \"cat >> '{0}'; echo >> '{0}'\"]",
            log.display()
        ),
        None,
    );
    let mut cmd = sb.cmd();
    cmd.args(["exec", "Write a short poem about rivers", "-q", "-c"])
        .arg(&cfg);
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("run"))
        .await
        .expect("join");
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    // The text output marks the team partial.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("⚠️  Team slow: Team slow (Round "),
        "{stdout}"
    );
    assert!(stdout.contains("[Partial]\n   Score: "), "{stdout}");
    assert!(
        stdout.contains("   Exit Reason: partial_failure_timeout\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "   • slow: Team slow [Partial - see leaderboard]\n     Error: Timeout after 10s\n"
        ),
        "{stdout}"
    );

    // The stored summary agrees.
    let store = mixseek_store::Store::open_read_only(sb.workspace().join("mixseek.db"))
        .expect("open the database");
    let id = store.latest_execution().expect("query").expect("stored");
    let summary = serde_json::to_value(
        store
            .execution_summary(&id)
            .expect("query")
            .expect("finished"),
    )
    .expect("json");
    drop(store);
    assert_eq!(summary["status"], "partial_failure", "{summary}");
    assert_eq!(summary["partial_team_ids"], serde_json::json!(["slow"]));
    let slow = team_result(&summary, "slow").expect("the best round is kept");
    assert_eq!(slow["exit_reason"], "partial_failure_timeout", "{slow}");
    let rounds = stored_rounds(&sb, &id);
    let slow_rounds = &rounds.iter().find(|(t, _)| t == "slow").expect("slow").1;
    assert!(
        !slow_rounds.is_empty() && slow_rounds.len() < 10,
        "some rounds completed, not all: {slow_rounds:?}"
    );
    assert!(
        slow_rounds.contains(&slow["round_number"].as_u64().map_or(0, |n| n as u32)),
        "the kept round is a stored one"
    );

    let finished: Vec<Value> = std::fs::read_to_string(&log)
        .expect("the hook ran")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let slow_event = finished
        .iter()
        .find(|e| e["team_id"] == "slow")
        .expect("team_complete for the slow team");
    assert_eq!(slow_event["status"], "timeout", "{slow_event}");
    assert!(
        slow_event["usage"]["requests"].as_u64() > Some(0),
        "the timed-out team's usage is kept: {slow_event}"
    );
}

/// Starts `mixseek -w WS --no-log-file -q exec PROMPT -c CFG -f json` with piped output.
fn spawn_exec(sb: &Sandbox, cfg: &Path, extra: &[&str]) -> std::process::Child {
    let mut cmd = std::process::Command::new(workspace_tests::mixseek_bin());
    cmd.env_remove("MIXSEEK_WORKSPACE")
        .current_dir(sb.path())
        .arg("-w")
        .arg(sb.workspace())
        .args([
            "--no-log-file",
            "-q",
            "exec",
            "Write a short poem about rivers",
            "-f",
            "json",
            "-c",
        ])
        .arg(cfg)
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd.spawn().expect("spawn mixseek")
}

async fn wait_output(child: std::process::Child) -> Output {
    tokio::task::spawn_blocking(move || child.wait_with_output().expect("wait"))
        .await
        .expect("join")
}

async fn resume(sb: &Sandbox, id: &str, cfg: &Path, extra: &[&str]) -> Output {
    let mut cmd = sb.cmd();
    cmd.args(["exec", "--resume", id, "-q", "-c"])
        .arg(cfg)
        .args(extra);
    tokio::task::spawn_blocking(move || cmd.output().expect("resume"))
        .await
        .expect("join")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_refuses_a_changed_configuration_unless_forced_and_a_finished_execution() {
    // Round 2's leader call never answers; Ctrl-C interrupts the run there.
    let fake = Fake::start(Arc::new(
        |n| if n == 1 { Reply::hang() } else { Reply::Auto },
    ))
    .await;
    let sb = Sandbox::new();
    let cfg = competition(
        &sb,
        &[Team("solo", "fake:gpt")],
        "min_rounds = 2\nmax_rounds = 2\ntimeout_per_team_seconds = 120",
        Some(&fake.url()),
    );
    let child = spawn_exec(&sb, &cfg, &[]);
    wait_for("round 2's request", || fake.requests() >= 2).await;
    interrupt(child.id());
    let out = wait_output(child).await;
    assert_eq!(out.status.code(), Some(130), "{}", describe(&out));
    let interrupted: Value = serde_json::from_slice(&out.stdout).expect("json summary");
    let id = interrupted["execution_id"]
        .as_str()
        .expect("id")
        .to_string();

    // A PROMPT cannot be given with --resume (the stored task is used).
    let mut cmd = sb.cmd();
    cmd.args(["exec", "Another task", "--resume", &id, "-c"])
        .arg(&cfg);
    let out = cmd.output().expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot be used with"),
        "{}",
        describe(&out)
    );

    // The configuration changes (a second team): refused without --force.
    sb.write(
        "cfg/orchestrator.toml",
        &std::fs::read_to_string(&cfg)
            .expect("read")
            .replace("max_rounds = 2", "max_rounds = 3"),
    );
    let out = resume(&sb, &id, &cfg, &[]).await;
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the configuration changed since execution") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(fake.requests(), 2, "nothing ran");

    // With --force it goes on with the new configuration; the text output has the header.
    let out = resume(&sb, &id, &cfg, &["--force"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(
            "🚀 MixSeek Orchestrator\n━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━\n\n📝 Task: Write a short poem about rivers\n\n🔄 Running 1 teams in parallel...\n\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "🔁 Resuming execution {id} (completed rounds are kept)"
        )),
        "{text}"
    );
    assert!(text.contains("✅ Team solo: Team solo (Round "), "{text}");
    assert_eq!(
        stored_rounds(&sb, &id),
        vec![("solo".to_string(), vec![1, 2, 3])]
    );

    // A finished execution cannot be resumed.
    let out = resume(&sb, &id, &cfg, &[]).await;
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already finished (status completed)"),
        "{}",
        describe(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_team_stays_partial_after_ctrl_c_and_resume() {
    // `fragile` (HTTP) completes round 1, then its server refuses: it fails with a partial
    // result. `patient` (a 3 s mock leader) is still running when Ctrl-C arrives.
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
            Team("fragile", "fake:gpt"),
            Team("patient", "mock:leader-3s"),
        ],
        "min_rounds = 2\nmax_rounds = 2\ntimeout_per_team_seconds = 120",
        Some(&fake.url()),
    );
    let child = spawn_exec(&sb, &cfg, &[]);
    let logs = sb.workspace().join("logs");
    wait_for("the fragile team's failure", || {
        std::fs::read_dir(&logs)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .ends_with(".fragile.progress.json")
            })
            .any(|e| {
                std::fs::read_to_string(e.path())
                    .ok()
                    .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                    .is_some_and(|v| v["status"] == "failed")
            })
    })
    .await;
    interrupt(child.id());
    let out = wait_output(child).await;
    assert_eq!(out.status.code(), Some(130), "{}", describe(&out));
    let first: Value = serde_json::from_slice(&out.stdout).expect("json summary");
    assert_eq!(first["status"], "interrupted", "{first}");
    // The interrupted team is neither completed nor failed, but counted.
    assert_eq!(
        first["stopped_team_ids"],
        serde_json::json!(["patient"]),
        "{first}"
    );
    assert_eq!(first["total_teams"], 2, "{first}");
    assert_eq!(first["failed_teams"], 1, "{first}");
    assert_eq!(first["partial_team_ids"], serde_json::json!(["fragile"]));
    let id = first["execution_id"].as_str().expect("id").to_string();
    let requests = fake.requests();

    let out = resume(&sb, &id, &cfg, &["-f", "json"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let summary: Value = serde_json::from_slice(&out.stdout).expect("json summary");
    assert_eq!(summary["status"], "partial_failure", "{summary}");
    assert_eq!(summary["partial_team_ids"], serde_json::json!(["fragile"]));
    assert_eq!(summary["stopped_team_ids"], serde_json::json!([]));
    let fragile = team_result(&summary, "fragile").expect("its best round is kept");
    assert_eq!(fragile["round_number"], 1);
    assert_eq!(fragile["exit_reason"], "partial_failure");
    assert_eq!(
        summary["failed_teams_info"][0]["error_message"],
        first["failed_teams_info"][0]["error_message"],
        "the earlier error is kept"
    );
    assert_eq!(
        fake.requests(),
        requests,
        "the failed team is not run again"
    );
    assert!(team_result(&summary, "patient").is_some(), "{summary}");
    assert_eq!(
        stored_rounds(&sb, &id),
        vec![
            ("fragile".to_string(), vec![1]),
            ("patient".to_string(), vec![1, 2])
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_ctrl_c_exits_at_once_keeping_committed_rounds() {
    // After the first Ctrl-C the run ends, then waits for its execution_complete hook (which
    // sleeps); the second Ctrl-C exits without waiting for it.
    let fake = Fake::start(Arc::new(
        |n| if n == 1 { Reply::hang() } else { Reply::Auto },
    ))
    .await;
    let sb = Sandbox::new();
    let started = sb.path().join("hook-started");
    let done = sb.path().join("hook-done");
    let cfg = competition(
        &sb,
        &[Team("solo", "fake:gpt")],
        &format!(
            "min_rounds = 3\nmax_rounds = 3\ntimeout_per_team_seconds = 120\n\n\
             [[hooks]]\non = \"execution_complete\"\ntimeout_seconds = 60\n\
             command = [\"sh\", \"-c\", \"touch '{}'; sleep 20; touch '{}'\"]",
            started.display(),
            done.display()
        ),
        Some(&fake.url()),
    );
    let child = spawn_exec(&sb, &cfg, &[]);
    wait_for("round 2's request", || fake.requests() >= 2).await;
    interrupt(child.id());
    wait_for("the execution_complete hook", || started.exists()).await;
    interrupt(child.id());
    let out = wait_output(child).await;
    assert_eq!(out.status.code(), Some(130), "{}", describe(&out));
    assert!(
        !done.exists(),
        "the process did not wait for the hook: {}",
        describe(&out)
    );
    let store = mixseek_store::Store::open_read_only(sb.workspace().join("mixseek.db"))
        .expect("open the database");
    let id = store.latest_execution().expect("query").expect("stored");
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
    assert_eq!(
        store.execution(&id).expect("query").expect("row").status,
        "interrupted"
    );
}
