//! `mixseek ui` end to end over HTTP (no browser), against the real binary: the request guard
//! (Host, Origin, access token, configuration paths, the Content-Security-Policy, no secret
//! in any answer), the UI never keeping a CLI run from the database and following one live,
//! `mixseek leaderboard` while a UI run writes, cancelling and resuming over HTTP, the
//! downloads, the `MIXSEEK_UI__*` variables, and the Experiments pages (the CLI's report number
//! for number, hostile names, no or an older database, 1,000 items).

use reqwest::Method;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use workspace_tests::ui::{UiServer, wait_until};
use workspace_tests::{Sandbox, describe, json_stdout, repo_root};

/// How long a run, or the UI reacting to one, may take (the machine is slow and shared).
const WAIT: Duration = Duration::from_secs(60);
/// The offline quick-start configuration `mixseek init` writes (3 teams, < 1 s a run).
const QUICKSTART: &str = "configs/quickstart/orchestrator.toml";
/// [`write_slow_config`]'s: 3 teams x 5 rounds of 400 ms calls (about 7 s a run).
const SLOW: &str = "configs/slow/orchestrator.toml";
/// The provider key of the secrets test.
const SECRET: &str = "SECRET123";

// ---- HTTP ------------------------------------------------------------------------------

/// An answer, read whole.
struct Resp {
    status: u16,
    headers: reqwest::header::HeaderMap,
    bytes: Vec<u8>,
}

impl Resp {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.text()))
    }
    fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    }
    /// `status: body`, for assertion messages.
    fn describe(&self) -> String {
        format!("{} {}", self.status, self.text())
    }
}

/// A blocking client of one server: its own small runtime, redirects not followed (the tests
/// look at them).
struct Http {
    rt: tokio::runtime::Runtime,
    client: reqwest::Client,
    base: String,
}

impl Http {
    fn new(base: &str) -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(WAIT)
            .build()
            .expect("an HTTP client");
        Http {
            rt,
            client,
            base: base.to_string(),
        }
    }
    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.client.request(method, format!("{}{path}", self.base))
    }
    fn send(&self, req: reqwest::RequestBuilder) -> Resp {
        self.rt.block_on(async {
            let r = req.send().await.expect("the UI answers");
            let status = r.status().as_u16();
            let headers = r.headers().clone();
            let bytes = r.bytes().await.expect("the body").to_vec();
            Resp {
                status,
                headers,
                bytes,
            }
        })
    }
    fn get(&self, path: &str) -> Resp {
        self.send(self.request(Method::GET, path))
    }
    /// A form POST from the UI's own origin, as its pages send it.
    fn post(&self, path: &str, form: &[(&str, &str)]) -> Resp {
        self.send(
            self.request(Method::POST, path)
                .header("Origin", &self.base)
                .form(form),
        )
    }
    /// GET `path` until it answers other than 503 (a run still holding the database).
    fn get_ready(&self, path: &str) -> Resp {
        let mut last = None;
        let found = wait_until(WAIT, || {
            let r = self.get(path);
            if r.status == 503 {
                last = Some(r.describe());
                return None;
            }
            Some(r)
        });
        found.unwrap_or_else(|| panic!("{path} still busy after {WAIT:?}: {last:?}"))
    }
    /// `POST /api/runs`; returns the execution id.
    fn start_run(&self, config: &str, prompt: &str) -> String {
        let r = self.post("/api/runs", &[("config", config), ("prompt", prompt)]);
        assert_eq!(r.status, 200, "{}", r.describe());
        let v = r.json();
        let id = v["execution_id"]
            .as_str()
            .expect("execution_id")
            .to_string();
        assert_eq!(v["live_url"], format!("/live/{id}"), "{v}");
        id
    }
    /// `GET /api/live/{id}` until `ok` holds; panics with the last state otherwise.
    fn wait_live(&self, id: &str, what: &str, mut ok: impl FnMut(&Value) -> bool) -> Value {
        let mut last = Value::Null;
        let found = wait_until(WAIT, || {
            let r = self.get(&format!("/api/live/{id}"));
            if r.status != 200 {
                last = json!({ "http": r.status, "body": r.text() });
                return None;
            }
            let v = r.json();
            let done = ok(&v);
            last = v;
            done.then(|| last.clone())
        });
        found.unwrap_or_else(|| panic!("{what} within {WAIT:?}; last /api/live/{id}: {last:#}"))
    }
    fn wait_status(&self, id: &str, status: &str) -> Value {
        self.wait_live(id, &format!("status {status}"), |v| v["status"] == status)
    }
}

fn teams(state: &Value) -> &[Value] {
    state["teams"].as_array().map_or(&[], Vec::as_slice)
}

/// The highest `current_round` of a live state's teams.
fn max_round(state: &Value) -> u64 {
    teams(state)
        .iter()
        .filter_map(|t| t["current_round"].as_u64())
        .max()
        .unwrap_or(0)
}

fn has_csp(r: &Resp) -> bool {
    r.header("content-security-policy")
        .is_some_and(|c| c.contains("script-src 'self'") && !c.contains("unsafe-eval"))
}

// ---- Workspace and CLI --------------------------------------------------------------------

/// `mixseek init`: the workspace with `configs/quickstart/`.
fn init(sb: &Sandbox) {
    let out = sb.cmd().arg("init").output().expect("run mixseek init");
    assert!(out.status.success(), "{}", describe(&out));
}

/// `ws/configs/slow/`: the repository's quick-start files with 400 ms mock calls and exactly
/// 5 rounds.
fn write_slow_config(sb: &Sandbox) {
    let from = repo_root().join("configs/quickstart");
    for entry in std::fs::read_dir(&from).expect("configs/quickstart") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).expect("name");
        let mut text = std::fs::read_to_string(&path).expect("read");
        if name == "orchestrator.toml" {
            text = text
                .replace("min_rounds = 2", "min_rounds = 5")
                .replace("max_rounds = 3", "max_rounds = 5");
            assert!(text.contains("min_rounds = 5") && text.contains("max_rounds = 5"));
        } else if name.starts_with("team_") {
            for t in ["alpha", "beta", "gamma"] {
                text = text.replace(
                    &format!("\"mock:leader-{t}\""),
                    &format!("\"mock:leader-{t}-400ms\""),
                );
            }
            assert!(text.contains("-400ms\""), "{name}: {text}");
        } else if name == "evaluator.toml" {
            text = text.replace("\"mock:judge\"", "\"mock:judge-400ms\"");
            assert!(text.contains("mock:judge-400ms"));
        } else if name == "judgment.toml" {
            text = text.replace("\"mock:judge-continue\"", "\"mock:judge-continue-400ms\"");
            assert!(text.contains("mock:judge-continue-400ms"));
        }
        sb.write(&format!("ws/configs/slow/{name}"), &text);
    }
}

/// The `mixseek` binary with a clean environment (as `Sandbox::cmd`), to spawn.
fn cli(sb: &Sandbox) -> Command {
    sb.process()
}

/// `mixseek exec PROMPT` on the slow configuration, started from the command line (its
/// stderr in `stderr_path`), killed if the test ends first.
fn spawn_slow_cli(sb: &Sandbox, prompt: &str, stderr_path: &std::path::Path) -> Running {
    Running(
        cli(sb)
            .arg("-w")
            .arg(sb.workspace())
            .arg("--no-log-file")
            .args(["exec", prompt, "-c"])
            .arg(sb.workspace().join(SLOW))
            .env("MIXSEEK_NO_PROGRESS", "1")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(stderr_path).expect("stderr file"))
            .spawn()
            .expect("spawn mixseek exec"),
    )
}

/// A child process killed if the test ends before it does.
struct Running(Child);

impl Running {
    /// Waits at most [`WAIT`] for its exit code.
    fn wait(&mut self) -> Option<i32> {
        let until = Instant::now() + WAIT;
        loop {
            if let Some(s) = self.0.try_wait().expect("try_wait") {
                return s.code();
            }
            assert!(
                Instant::now() < until,
                "the process did not end within {WAIT:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Runs `mixseek -w WS --no-log-file ARGS…` until it succeeds (a run that reported its end may
/// still be closing the database for a moment); its stdout.
fn cli_ok(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let mut last = None;
    let found = wait_until(WAIT, || {
        let out = sb.cmd().args(args).output().expect("run mixseek");
        if out.status.success() {
            return Some(out);
        }
        last = Some(describe(&out));
        None
    });
    found.unwrap_or_else(|| panic!("mixseek {args:?} kept failing: {last:?}"))
}

/// A finished quick-start run from the CLI; its execution id.
fn cli_run(sb: &Sandbox, prompt: &str) -> String {
    let cfg = sb.workspace().join(QUICKSTART);
    let out = sb
        .cmd()
        .args(["exec", prompt, "-f", "json", "-c"])
        .arg(&cfg)
        .output()
        .expect("run mixseek exec");
    json_stdout(&out)["execution_id"]
        .as_str()
        .expect("execution_id")
        .to_string()
}

// ---- 1. Security --------------------------------------------------------------------------

#[test]
fn security_a_loopback_ui_checks_host_origin_and_config_paths_and_sends_a_csp() {
    let sb = Sandbox::new();
    init(&sb);
    let outside = sb.write(
        "outside.toml",
        "[orchestrator]\nmin_rounds = 1\nmax_rounds = 1\n",
    );
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, sb.workspace().join("configs/link.toml"))
        .expect("symlink");
    let ui = UiServer::start(&sb, &[]);
    assert!(
        !ui.url.contains("token="),
        "no token on loopback: {}",
        ui.url
    );
    let http = Http::new(&ui.base);
    let port = ui.base.rsplit(':').next().expect("port").to_string();

    // DNS rebinding: a request addressed to another name is refused; the loopback names pass.
    let r = http.send(
        http.request(Method::GET, "/run")
            .header("Host", "evil.example"),
    );
    assert_eq!(r.status, 421, "{}", r.describe());
    let r = http.send(
        http.request(Method::GET, "/api/active")
            .header("Host", format!("evil.example:{port}")),
    );
    assert_eq!(r.status, 421, "{}", r.describe());
    let r = http.send(
        http.request(Method::GET, "/run")
            .header("Host", format!("localhost:{port}")),
    );
    assert_eq!(r.status, 200, "{}", r.describe());

    // No database yet: the pages say so, and reading creates none.
    let r = http.get("/history");
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(r.text().contains("No executions yet"), "{}", r.text());
    assert!(!sb.workspace().join("mixseek.db").exists());

    let run = http.get("/run");
    assert_eq!(run.status, 200, "{}", run.describe());
    assert!(has_csp(&run), "{:?}", run.headers);
    assert_eq!(
        run.header("x-content-type-options").as_deref(),
        Some("nosniff")
    );
    let page = run.text();
    assert!(page.contains(QUICKSTART), "{page}");
    assert!(
        !page.contains("outside.toml") && !page.contains("link.toml"),
        "nothing outside the workspace is offered: {page}"
    );
    assert!(
        !page.contains("team_alpha.toml"),
        "only orchestrator files: {page}"
    );

    // Cross-site requests: no Origin, another Origin.
    let form = [("config", QUICKSTART), ("prompt", "Write a haiku")];
    let r = http.send(http.request(Method::POST, "/api/runs").form(&form));
    assert_eq!(r.status, 403, "no Origin: {}", r.describe());
    let r = http.send(
        http.request(Method::POST, "/api/runs")
            .header("Origin", "http://evil.example")
            .form(&form),
    );
    assert_eq!(r.status, 403, "another Origin: {}", r.describe());
    let r = http.send(
        http.request(Method::POST, "/api/runs/some-id/cancel")
            .header("Origin", "http://evil.example"),
    );
    assert_eq!(r.status, 403, "{}", r.describe());
    assert!(
        !sb.workspace().join("logs/ui-runs").exists(),
        "a refused request started nothing"
    );

    // Configuration paths: only the workspace's orchestrator files.
    let outside_abs = outside.display().to_string();
    let inside_abs = sb.workspace().join(QUICKSTART).display().to_string();
    let mut bad = vec![
        "../outside.toml",
        outside_abs.as_str(),
        inside_abs.as_str(),
        "configs/quickstart/team_alpha.toml",
        "configs/quickstart/missing.toml",
        "",
    ];
    if cfg!(unix) {
        bad.push("configs/link.toml");
    }
    for config in bad {
        for path in ["/api/runs", "/api/preflight"] {
            let r = http.post(path, &[("config", config), ("prompt", "Write a haiku")]);
            assert_eq!(r.status, 400, "{path} config={config}: {}", r.describe());
            assert!(
                r.header("content-type")
                    .is_some_and(|c| c.starts_with("application/json")),
                "{:?}",
                r.headers
            );
            let err = r.json();
            assert!(
                err["error"].as_str().is_some_and(|e| !e.is_empty()),
                "{err}"
            );
            assert!(has_csp(&r), "{:?}", r.headers);
        }
    }
    let r = http.post(
        "/api/executions/some-id/resume",
        &[("config", "../outside.toml")],
    );
    assert_eq!(r.status, 400, "{}", r.describe());
    assert!(r.json()["error"].is_string());
    for prompt in ["", "  \n "] {
        let r = http.post("/api/runs", &[("config", QUICKSTART), ("prompt", prompt)]);
        assert_eq!(r.status, 400, "prompt {prompt:?}: {}", r.describe());
        assert!(
            r.json()["error"]
                .as_str()
                .is_some_and(|e| e.contains("empty")),
            "{}",
            r.describe()
        );
    }
    let r = http.get("/api/live/not..an-id");
    assert_eq!(r.status, 400, "{}", r.describe());
    assert!(r.json()["error"].is_string());
    let r = http.get("/api/live/0b6f3c2e-0000-4000-8000-000000000000");
    assert_eq!(r.status, 404, "{}", r.describe());
    let r = http.get("/no/such/page");
    assert_eq!(r.status, 404, "{}", r.describe());
    assert!(has_csp(&r));

    // The preflight and a run from the right origin.
    let r = http.post(
        "/api/preflight",
        &[("config", QUICKSTART), ("prompt", "Write a haiku")],
    );
    assert_eq!(r.status, 200, "{}", r.describe());
    let pf = r.json();
    assert_eq!(pf["ok"], true, "{pf:#}");
    assert!(pf["output"].as_str().is_some_and(|o| !o.is_empty()), "{pf}");
    let id = http.start_run(QUICKSTART, "Write a haiku");
    let state = http.wait_status(&id, "completed");
    assert_eq!(teams(&state).len(), 3, "{state:#}");
    for path in [
        format!("/api/live/{id}"),
        format!("/live/{id}"),
        "/api/active".to_string(),
        "/assets/ui.js".to_string(),
    ] {
        let r = http.get(&path);
        assert_eq!(r.status, 200, "{path}: {}", r.describe());
        assert!(has_csp(&r), "{path}: {:?}", r.headers);
    }
    let r = http.get_ready(&format!("/executions/{id}"));
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(has_csp(&r), "{:?}", r.headers);
    let r = http.get_ready("/history");
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(has_csp(&r), "{:?}", r.headers);
    assert!(r.text().contains(&id[..8]), "{}", r.text());
}

#[test]
fn security_beyond_loopback_every_request_needs_the_token() {
    let sb = Sandbox::new();
    init(&sb);
    let ui = UiServer::start(&sb, &["--host", "0.0.0.0"]);
    let token = ui
        .token()
        .unwrap_or_else(|| panic!("a token in the printed address: {}", ui.url));
    assert!(token.len() >= 32, "a long random token: {token}");
    let http = Http::new(&ui.base);

    for path in [
        "/run",
        "/api/live/x",
        "/api/active",
        "/history",
        "/assets/ui.js",
    ] {
        let r = http.get(path);
        assert_eq!(r.status, 401, "{path} without the token: {}", r.describe());
        assert!(
            !r.text().contains(&token),
            "the refusal does not tell the token"
        );
    }
    let r = http.post("/api/runs", &[("config", QUICKSTART), ("prompt", "x")]);
    assert_eq!(r.status, 401, "{}", r.describe());

    // Authorization: Bearer
    let bearer = |path: &str, t: &str| {
        http.send(
            http.request(Method::GET, path)
                .header("Authorization", format!("Bearer {t}")),
        )
    };
    let r = bearer("/run", &token);
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(r.text().contains(QUICKSTART));
    assert_eq!(bearer("/api/active", &token).status, 200);
    assert_eq!(bearer("/api/live/x", &token).status, 404);
    assert_eq!(
        bearer("/run", "0123456789abcdef0123456789abcdef").status,
        401
    );
    assert_eq!(bearer("/run", &token[..token.len() - 1]).status, 401);

    // ?token= once: a redirect that keeps it in a cookie and drops it from the address.
    let r = http.get(&format!("/run?token={token}"));
    assert_eq!(r.status, 303, "{}", r.describe());
    assert_eq!(r.header("location").as_deref(), Some("/run"));
    let cookie = r.header("set-cookie").expect("Set-Cookie");
    assert!(
        cookie.starts_with(&format!("mixseek_token={token}")),
        "{cookie}"
    );
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    let r = http.get(&format!("/history?q=haiku&token={token}&page=2"));
    assert_eq!(r.status, 303, "{}", r.describe());
    assert_eq!(
        r.header("location").as_deref(),
        Some("/history?q=haiku&page=2")
    );
    let pair = cookie.split(';').next().expect("name=value").to_string();
    let with_cookie = |c: &str| http.send(http.request(Method::GET, "/run").header("Cookie", c));
    let r = with_cookie(&pair);
    assert_eq!(r.status, 200, "the cookie works: {}", r.describe());
    assert_eq!(with_cookie(&format!("other=1; {pair}")).status, 200);
    assert_eq!(with_cookie("mixseek_token=wrong-token-value").status, 401);

    // A wrong token in the address.
    let r = http.get("/run?token=wrong-token-value");
    assert_eq!(r.status, 401, "{}", r.describe());
    assert!(r.header("set-cookie").is_none());

    // With the token, a state-changing request still needs the UI's origin.
    let r = http.send(
        http.request(Method::POST, "/api/runs")
            .header("Authorization", format!("Bearer {token}"))
            .form(&[("config", QUICKSTART), ("prompt", "x")]),
    );
    assert_eq!(r.status, 403, "{}", r.describe());
    drop(ui);

    // A token of one's own is used as given; a short one is a usage error.
    let ui = UiServer::start(&sb, &["--host", "0.0.0.0", "--token", "my-own-long-token"]);
    assert!(ui.url.ends_with("?token=my-own-long-token"), "{}", ui.url);
    let http = Http::new(&ui.base);
    assert_eq!(http.get("/run").status, 401);
    let r = http.send(
        http.request(Method::GET, "/run")
            .header("Authorization", "Bearer my-own-long-token"),
    );
    assert_eq!(r.status, 200, "{}", r.describe());
    drop(ui);
    let out = sb
        .cmd()
        .args(["ui", "--port", "0", "--token", "short"])
        .timeout(Duration::from_secs(30))
        .output()
        .expect("run mixseek ui");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--token"),
        "{}",
        describe(&out)
    );
}

#[test]
fn security_a_provider_key_never_reaches_the_browser() {
    let sb = Sandbox::new();
    init(&sb);
    let key = format!("sk-test-{SECRET}");
    let ui = UiServer::start_with_env(&sb, &[], &[("OPENAI_API_KEY", key.as_str())]);
    let http = Http::new(&ui.base);
    let mut seen: Vec<(String, Resp)> = Vec::new();

    // The preflights (the OpenAI example checks the key is there).
    for config in [QUICKSTART, "configs/examples/openai/orchestrator.toml"] {
        let r = http.post(
            "/api/preflight",
            &[("config", config), ("prompt", "Write a haiku")],
        );
        assert_eq!(r.status, 200, "{config}: {}", r.describe());
        seen.push((format!("preflight {config}"), r));
    }
    let a = http.start_run(QUICKSTART, "Write a haiku");
    seen.push((
        format!("/api/live/{a}"),
        http.get(&format!("/api/live/{a}")),
    ));
    seen.push(("/api/active".into(), http.get("/api/active")));
    http.wait_status(&a, "completed");
    let b = http.start_run(QUICKSTART, "Write a limerick");
    http.wait_status(&b, "completed");
    for path in [
        "/run".to_string(),
        format!("/live/{a}"),
        format!("/api/live/{a}"),
        format!("/api/live/{b}"),
        "/api/active".into(),
        "/results".into(),
        format!("/executions/{a}"),
        format!("/executions/{a}/teams/alpha"),
        "/history".into(),
        format!("/compare?ids={a},{b}"),
        "/compare".into(),
        format!("/executions/{a}/download/report.html"),
        format!("/executions/{a}/download/export.json"),
        format!("/executions/{a}/download/execution_summary.csv"),
        format!("/executions/{a}/download/llm_calls.csv"),
        "/assets/ui.js".into(),
    ] {
        let r = http.get_ready(&path);
        assert!(
            r.status == 200 || r.status == 303,
            "{path}: {}",
            r.describe()
        );
        seen.push((path, r));
    }
    for (what, r) in &seen {
        let text = r.text();
        assert!(!text.contains(SECRET), "{what} shows the key:\n{text}");
        for (name, value) in &r.headers {
            assert!(
                !value.to_str().unwrap_or("").contains(SECRET),
                "{what}: header {name}"
            );
        }
    }
    // the compare page has the recorded settings (with the key masked if at all)
    let compare = &seen
        .iter()
        .find(|(p, _)| p.starts_with("/compare?"))
        .expect("compare")
        .1;
    assert!(compare.text().contains(&a[..8]), "{}", compare.text());
}

// ---- 2. The UI never blocks a CLI run ------------------------------------------------------

#[test]
fn blocking_a_cli_exec_succeeds_while_the_ui_reads_the_database() {
    let sb = Sandbox::new();
    init(&sb);
    let first = cli_run(&sb, "A first run");
    let ui = UiServer::start(&sb, &[]);
    let http = Http::new(&ui.base);
    for _ in 0..3 {
        let r = http.get("/history");
        assert_eq!(r.status, 200, "{}", r.describe());
        assert!(r.text().contains(&first[..8]), "{}", r.text());
        let r = http.get(&format!("/executions/{first}"));
        assert_eq!(r.status, 200, "{}", r.describe());
        let r = http.get(&format!("/executions/{first}/teams/alpha"));
        assert_eq!(r.status, 200, "{}", r.describe());
    }

    // Hammer History (and a results page) for as long as the CLI runs last.
    let stop = Arc::new(AtomicBool::new(false));
    let hammer = {
        let stop = stop.clone();
        let base = ui.base.clone();
        let first = first.clone();
        std::thread::spawn(move || {
            let http = Http::new(&base);
            let mut answers = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                answers.push(http.get("/history").status);
                let r = http.get(&format!("/executions/{first}"));
                assert!(
                    r.status == 200 || r.status == 503,
                    "/executions while a run writes: {}",
                    r.describe()
                );
            }
            answers
        })
    };
    let mut ids = Vec::new();
    for n in 0..3 {
        let started = Instant::now();
        ids.push(cli_run(&sb, &format!("Run {n} while the UI reads")));
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "exec took {:?}",
            started.elapsed()
        );
    }
    stop.store(true, Ordering::Relaxed);
    let answers = hammer.join().expect("the hammering thread");
    assert!(!answers.is_empty());
    assert!(
        answers.iter().all(|s| *s == 200),
        "History always answers (busy or not): {answers:?}"
    );
    let history = http.get_ready("/history").text();
    for id in ids.iter().chain([&first]) {
        assert!(history.contains(&id[..8]), "{id} in History: {history}");
    }
}

#[test]
fn blocking_the_ui_follows_a_slow_cli_run_live() {
    let sb = Sandbox::new();
    init(&sb);
    write_slow_config(&sb);
    let ui = UiServer::start(&sb, &[]);
    let http = Http::new(&ui.base);
    let stderr_path = sb.path().join("exec.stderr");
    let prompt = "Followed from the UI";
    let mut child = spawn_slow_cli(&sb, prompt, &stderr_path);

    // /api/active lists it within a few seconds.
    let mut last = String::new();
    let entry = wait_until(Duration::from_secs(20), || {
        let r = http.get("/api/active");
        assert_eq!(r.status, 200, "{}", r.describe());
        last = r.text();
        r.json()
            .as_array()?
            .iter()
            .find(|e| e["user_prompt"] == prompt)
            .cloned()
    })
    .unwrap_or_else(|| panic!("the CLI run in /api/active: {last}"));
    let id = entry["execution_id"].as_str().expect("id").to_string();
    assert_eq!(entry["status"], "running", "{entry}");
    assert_eq!(entry["total_teams"], 3, "{entry}");
    assert_eq!(entry["pid"], child.0.id(), "{entry}");

    // Its teams, rounds progressing.
    let first = http.wait_live(&id, "three teams in a round", |v| {
        teams(v).len() == 3 && max_round(v) >= 1
    });
    assert_eq!(first["status"], "running", "{first:#}");
    assert_eq!(first["cancellable"], true, "{first:#}");
    let r0 = max_round(&first);
    let later = http.wait_live(&id, "a later round", |v| max_round(v) > r0);
    assert!(
        teams(&later)
            .iter()
            .any(|t| t["best_score"].is_number() && t["usage"]["requests"].as_u64() > Some(0)),
        "{later:#}"
    );
    let live_page = http.get(&format!("/live/{id}"));
    assert_eq!(live_page.status, 200, "{}", live_page.describe());
    assert!(live_page.text().contains(prompt));

    // The database is the run's: History answers from the progress files.
    let history = http.get("/history");
    assert_eq!(history.status, 200, "{}", history.describe());
    let text = history.text();
    assert!(text.contains("id=\"busy\""), "{text}");
    assert!(text.contains(&format!("/live/{id}")), "{text}");
    let results = http.get(&format!("/executions/{id}"));
    assert_eq!(results.status, 503, "{}", results.describe());
    assert!(results.text().contains(&format!("/live/{id}")));

    let code = child.wait();
    assert_eq!(
        code,
        Some(0),
        "the CLI run: {}",
        std::fs::read_to_string(&stderr_path).unwrap_or_default()
    );
    let done = http.wait_status(&id, "completed");
    assert_eq!(done["cancellable"], false, "{done:#}");
    assert!(
        teams(&done)
            .iter()
            .all(|t| t["status"] == "completed" && t["current_round"] == 5),
        "{done:#}"
    );
    let active = http.get("/api/active").json();
    assert!(
        active
            .as_array()
            .is_some_and(|a| a.iter().all(|e| e["execution_id"] != id.as_str())),
        "{active}"
    );
    let r = http.get_ready(&format!("/executions/{id}"));
    assert_eq!(r.status, 200, "{}", r.describe());
}

#[test]
fn blocking_a_cli_run_cancelled_from_the_ui_stops_resumably() {
    let sb = Sandbox::new();
    init(&sb);
    write_slow_config(&sb);
    let ui = UiServer::start(&sb, &[]);
    let http = Http::new(&ui.base);
    let prompt = "Cancelled from the UI";
    let stderr_path = sb.path().join("exec.stderr");
    let mut child = spawn_slow_cli(&sb, prompt, &stderr_path);
    let id = wait_until(Duration::from_secs(20), || {
        http.get("/api/active")
            .json()
            .as_array()?
            .iter()
            .find(|e| e["user_prompt"] == prompt)
            .and_then(|e| e["execution_id"].as_str())
            .map(str::to_string)
    })
    .expect("the CLI run in /api/active");
    http.wait_live(&id, "a first round evaluated", |v| {
        teams(v).iter().any(|t| t["best_score"].is_number())
    });
    let r = http.post(&format!("/api/runs/{id}/cancel"), &[]);
    assert_eq!(r.status, 200, "{}", r.describe());
    let code = child.wait();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    assert_eq!(code, Some(130), "interrupted like Ctrl-C: {stderr}");
    assert!(stderr.contains("--resume"), "{stderr}");
    http.wait_status(&id, "interrupted");
    let page = http.get_ready(&format!("/executions/{id}"));
    assert!(
        page.text().contains("id=\"resume-form\""),
        "{}",
        page.text()
    );
}

// ---- 3. A UI run and `mixseek leaderboard` -------------------------------------------------

#[test]
fn leaderboard_fails_fast_while_a_ui_run_writes_and_the_run_completes() {
    let sb = Sandbox::new();
    init(&sb);
    write_slow_config(&sb);
    let ui = UiServer::start(&sb, &[]);
    let http = Http::new(&ui.base);
    let id = http.start_run(SLOW, "Hold the database");
    // A round evaluated: the run has the database open.
    http.wait_live(&id, "a first round evaluated", |v| {
        v["status"] == "running" && teams(v).iter().any(|t| t["best_score"].is_number())
    });

    let started = Instant::now();
    let out = sb
        .cmd()
        .arg("leaderboard")
        .timeout(Duration::from_secs(30))
        .output()
        .expect("run mixseek leaderboard");
    let took = started.elapsed();
    assert!(!out.status.success(), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(
        stderr.contains("lock") || stderr.contains("another process"),
        "{}",
        describe(&out)
    );
    assert!(took < Duration::from_secs(10), "fails fast, not {took:?}");
    let still = http.get(&format!("/api/live/{id}")).json();
    assert_eq!(still["status"], "running", "{still:#}");

    let done = http.wait_status(&id, "completed");
    assert!(
        teams(&done).iter().all(|t| t["status"] == "completed"),
        "{done:#}"
    );
    let board = json_stdout(&cli_ok(&sb, &["leaderboard", "-e", &id, "-f", "json"]));
    let rows = board.as_array().expect("rows");
    assert_eq!(rows.len(), 3, "{board:#}");
    assert!(
        rows.iter().all(|r| r["execution_id"] == id.as_str()),
        "{board:#}"
    );
    let latest = cli_ok(&sb, &["leaderboard"]);
    assert!(
        String::from_utf8_lossy(&latest.stdout).contains(&id),
        "{}",
        describe(&latest)
    );
}

// ---- 4. Cancel and resume ------------------------------------------------------------------

/// Each stored round of `team` with a score: (round, score, submission).
fn scored_rounds(sb: &Sandbox, id: &str, team: &str) -> Vec<(u64, f64, String)> {
    let v = json_stdout(&cli_ok(sb, &["show", id, "-t", team, "-f", "json"]));
    v.as_array()
        .expect("rounds")
        .iter()
        .filter_map(|r| {
            let s = &r["state"];
            Some((
                s["round_number"].as_u64()?,
                s["evaluation_score"].as_f64()?,
                s["submission_content"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// Waits until the process named in execution `id`'s progress file has ended (Linux: its
/// `/proc` entry is gone; elsewhere a pause).
fn wait_exited(sb: &Sandbox, id: &str) {
    let file = sb.workspace().join(format!("logs/{id}.execution.json"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).expect("execution file"))
        .expect("execution JSON");
    let pid = v["pid"].as_u64().expect("pid");
    if cfg!(target_os = "linux") {
        wait_until(WAIT, || {
            (!std::path::Path::new(&format!("/proc/{pid}")).exists()).then_some(())
        })
        .unwrap_or_else(|| panic!("process {pid} of {id} still there after {WAIT:?}"));
    } else {
        std::thread::sleep(Duration::from_secs(3));
    }
}

#[test]
fn cancel_and_resume_over_http_keep_the_rounds_before_the_cancel() {
    let sb = Sandbox::new();
    init(&sb);
    write_slow_config(&sb);
    let ui = UiServer::start(&sb, &[]);
    let http = Http::new(&ui.base);
    let id = http.start_run(SLOW, "Stop me halfway");
    let before = http.wait_live(&id, "a round completed", |v| {
        v["status"] == "running"
            && teams(v)
                .iter()
                .any(|t| t["best_score"].is_number() || t["current_round"].as_u64() >= Some(2))
    });
    assert_eq!(before["cancellable"], true, "{before:#}");

    let r = http.post(&format!("/api/runs/{id}/cancel"), &[]);
    assert_eq!(r.status, 200, "{}", r.describe());
    assert_eq!(r.json()["cancelled"], true);
    // A second cancel right away is refused: another SIGINT would make `exec` exit at once,
    // before it records the interrupt.
    let r = http.post(&format!("/api/runs/{id}/cancel"), &[]);
    assert_eq!(r.status, 409, "a second cancel: {}", r.describe());
    let stopped = http.wait_live(&id, "interrupted, no team running", |v| {
        v["status"] == "interrupted" && teams(v).iter().all(|t| t["status"] != "running")
    });
    assert_eq!(stopped["cancellable"], false, "{stopped:#}");
    // Once its process is gone there is nothing left to cancel. (Not before: the run reports
    // `interrupted` while it still closes the database, and a second SIGINT then makes it exit
    // at once.)
    wait_exited(&sb, &id);
    let r = http.post(&format!("/api/runs/{id}/cancel"), &[]);
    assert_eq!(r.status, 409, "nothing left to cancel: {}", r.describe());

    // The results page offers to resume it with the configuration it started with.
    let page = http.get_ready(&format!("/executions/{id}"));
    assert_eq!(page.status, 200, "{}", page.describe());
    let html = page.text();
    assert!(html.contains("id=\"resume-form\""), "{html}");
    assert!(
        html.contains(&format!("action=\"/api/executions/{id}/resume\"")),
        "{html}"
    );
    assert!(
        html.contains(&format!("<option value=\"{SLOW}\" selected>")),
        "{html}"
    );

    // What the database keeps from before the cancel.
    let mut kept = Vec::new();
    for team in ["alpha", "beta", "gamma"] {
        kept.push((team, scored_rounds(&sb, &id, team)));
    }
    assert!(kept.iter().any(|(_, r)| !r.is_empty()), "{kept:?}");
    let show = json_stdout(&cli_ok(&sb, &["show", &id, "-f", "json"]));
    assert_eq!(show["status"], "interrupted", "{show:#}");

    // Resume: a wrong request, then the right one.
    let r = http.send(
        http.request(Method::POST, &format!("/api/executions/{id}/resume"))
            .form(&[("config", SLOW)]),
    );
    assert_eq!(r.status, 403, "{}", r.describe());
    let r = http.post(&format!("/api/executions/{id}/resume"), &[("config", SLOW)]);
    assert_eq!(r.status, 200, "{}", r.describe());
    let v = r.json();
    // A second resume while the first runs: one process per execution.
    let again = http.post(&format!("/api/executions/{id}/resume"), &[("config", SLOW)]);
    assert_eq!(again.status, 409, "a second resume: {}", again.describe());
    assert_eq!(v["execution_id"], id.as_str(), "{v}");
    assert_eq!(v["live_url"], format!("/live/{id}"), "{v}");
    let done = http.wait_status(&id, "completed");
    assert_eq!(teams(&done).len(), 3, "{done:#}");
    assert!(
        teams(&done)
            .iter()
            .all(|t| t["status"] == "completed" && t["current_round"] == 5),
        "{done:#}"
    );

    let show = json_stdout(&cli_ok(&sb, &["show", &id, "-f", "json"]));
    assert_eq!(show["status"], "completed", "{show:#}");
    let stored = show["teams"].as_array().expect("teams");
    assert_eq!(stored.len(), 3, "{show:#}");
    assert!(stored.iter().all(|t| t["rounds"] == 5), "{show:#}");
    for (team, rounds) in kept {
        let after = scored_rounds(&sb, &id, team);
        assert_eq!(after.len(), 5, "{team}: {after:?}");
        for r in rounds {
            assert!(after.contains(&r), "{team} round {} kept: {after:?}", r.0);
        }
    }
    let page = http.get_ready(&format!("/executions/{id}"));
    assert_eq!(page.status, 200);
    assert!(
        !page.text().contains("id=\"resume-form\""),
        "{}",
        page.text()
    );
}

// ---- 5. Downloads --------------------------------------------------------------------------

#[test]
fn downloads_give_the_report_and_the_exports_of_an_execution() {
    let sb = Sandbox::new();
    init(&sb);
    let id = cli_run(&sb, "Write a haiku about downloads");
    let other = cli_run(&sb, "Another execution");
    let ui = UiServer::start(&sb, &[]);
    let http = Http::new(&ui.base);
    let at = |what: &str| http.get(&format!("/executions/{id}/download/{what}"));

    let page = http.get(&format!("/executions/{id}"));
    assert_eq!(page.status, 200, "{}", page.describe());
    assert!(
        page.text()
            .contains(&format!("/executions/{id}/download/leader_board.parquet")),
        "{}",
        page.text()
    );

    let r = at("report.html");
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(
        r.header("content-type")
            .is_some_and(|c| c.starts_with("text/html")),
        "{:?}",
        r.headers
    );
    assert!(
        r.header("content-disposition")
            .is_some_and(|c| c.starts_with("attachment") && c.contains(&id[..8])),
        "{:?}",
        r.headers
    );
    assert!(r.text().contains(&id), "the report names its execution");
    assert!(!r.text().contains(&other), "only this execution");

    let r = at("export.json");
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(
        r.header("content-type")
            .is_some_and(|c| c.starts_with("application/json")),
        "{:?}",
        r.headers
    );
    let export = r.json();
    let text = export.to_string();
    assert!(text.contains(&id) && !text.contains(&other), "{text:.2000}");

    let r = at("leader_board.csv");
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(
        r.header("content-type")
            .is_some_and(|c| c.starts_with("text/csv")),
        "{:?}",
        r.headers
    );
    let csv = r.text();
    let header = csv.lines().next().expect("a header line");
    assert!(
        header.contains("team_id") && header.contains(','),
        "{header}"
    );
    // a row per team and round (3 teams, up to 3 rounds), of this execution only
    let rows = csv.matches(id.as_str()).count();
    assert!((3..=9).contains(&rows), "{rows} rows: {csv:.3000}");
    assert!(!csv.contains(&other), "only this execution");

    let r = at("leader_board.parquet");
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(
        r.bytes.starts_with(b"PAR1"),
        "{:?}",
        &r.bytes[..r.bytes.len().min(8)]
    );
    assert!(r.bytes.ends_with(b"PAR1"));

    for what in [
        "nope.csv",
        "leader_board.xlsx",
        "report.pdf",
        "..%2Fmixseek.db",
    ] {
        let r = at(what);
        assert_eq!(r.status, 404, "{what}: {}", r.describe());
    }
    let r = http.get("/executions/0b6f3c2e-0000-4000-8000-000000000000/download/report.html");
    assert_eq!(r.status, 404, "{}", r.describe());
}

// ---- 6. MIXSEEK_UI__PORT / MIXSEEK_UI__WORKSPACE ---------------------------------------------

#[test]
fn env_mixseek_ui_port_and_workspace_choose_where_the_ui_serves() {
    let sb = Sandbox::new();
    init(&sb);
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let ws: PathBuf = sb.workspace();
    let mut child = Running(
        cli(&sb)
            .arg("--no-log-file")
            .arg("ui")
            .env("MIXSEEK_UI__PORT", port.to_string())
            .env("MIXSEEK_UI__WORKSPACE", &ws)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mixseek ui"),
    );
    let stdout = child.0.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let url = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|e| panic!("mixseek ui printed its address ({e}): {lines:?}"));
        if let Some(url) = line.strip_prefix("mixseek UI on ") {
            break url.trim().to_string();
        }
        lines.push(line);
    };
    assert_eq!(url, format!("http://127.0.0.1:{port}/"));
    let workspace_line = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("a second line");
    let canonical = ws.canonicalize().expect("canonical workspace");
    assert!(
        workspace_line.contains(&ws.display().to_string())
            || workspace_line.contains(&canonical.display().to_string()),
        "{workspace_line}"
    );

    let http = Http::new(url.trim_end_matches('/'));
    let r = http.get("/run");
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(r.text().contains(QUICKSTART), "{}", r.text());
    assert!(
        !sb.path().join("mixseek-workspace").exists(),
        "no default workspace was made"
    );
    drop(child);
}

/// The results page shows what the judging analyses stored, from the HTML report's own
/// sections: the jury agreement (a low one flagged), the latest arena with its ratings and the
/// latest theme analysis with its quotes.
#[test]
fn results_show_the_jury_agreement_the_arena_and_the_themes() {
    let sb = Sandbox::new();
    let cfg = workspace_tests::write_mock_competition(&sb, &["a", "b", "c"]);
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\njudges = [\"mock:judge-one\", \"mock:judge-two\"]\n[[metrics]]\nname = \"Relevance\"\nsamples = 3\n",
    );
    sb.write(
        "cfg/arena.toml",
        "[arena]\njudge_model = \"mock:arena-judge\"\nbootstrap_rounds = 50\nseed = 7\n",
    );
    let out = sb
        .cmd()
        .args(["exec", "Write a haiku", "-f", "json", "-c"])
        .arg(&cfg)
        .output()
        .expect("run");
    let id = json_stdout(&out)["execution_id"]
        .as_str()
        .expect("id")
        .to_string();
    let arena = sb
        .cmd()
        .args(["arena", &id, "-c", "cfg/arena.toml"])
        .output()
        .expect("arena");
    assert!(arena.status.success(), "{}", describe(&arena));
    let themes = sb
        .cmd()
        .args(["analyze", &id, "--model", "mock:themes"])
        .output()
        .expect("analyze");
    assert!(themes.status.success(), "{}", describe(&themes));

    let ui = UiServer::start(&sb, &[]);
    let http = Http::new(&ui.base);
    let page = http.get_ready(&format!("/executions/{id}"));
    assert_eq!(page.status, 200, "{}", page.describe());
    let html = page.text();
    for section in [
        "<h2>Jury agreement</h2>",
        "<h2>Arena</h2>",
        "<h2>Themes of judge comments</h2>",
    ] {
        assert!(html.contains(section), "{section} in {html}");
    }
    assert!(html.contains("Krippendorff"), "{html}");
    // the same sections as the HTML report, from the same code
    let report = http.get(&format!("/executions/{id}/download/report.html"));
    let report = report.text();
    for section in [
        "<table class=\"agreement\">",
        "<h2>Arena</h2>",
        "<h2>Themes of judge comments</h2>",
    ] {
        assert!(
            report.contains(section) && html.contains(section),
            "{section}"
        );
    }
}

/// `mixseek ui` that cannot start says why and what to do: an address that is not an IP, a
/// port already in use, a workspace that is a file.
#[test]
fn errors_a_ui_that_cannot_start_names_the_cause_and_the_fix() {
    let sb = Sandbox::new();
    init(&sb);
    let out = sb
        .cmd()
        .args(["ui", "--port", "0", "--host", "not-an-ip"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not-an-ip") && err.contains("--host 127.0.0.1"),
        "{err}"
    );

    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port().to_string();
    let out = sb
        .cmd()
        .args(["ui", "--port", &port])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&port) && err.contains("--port"), "{err}");

    let file = sb.write("not-a-dir", "x");
    let out = sb
        .process()
        .arg("-w")
        .arg(&file)
        .args(["ui", "--port", "0"])
        .output()
        .expect("run");
    assert_ne!(out.status.code(), Some(0), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not-a-dir") && err.contains("-w DIR"), "{err}");
}

// ---- 7. Experiments -------------------------------------------------------------------------

/// `mixseek experiment run FILE` to its end.
fn run_experiment(sb: &Sandbox, file: &std::path::Path) {
    let out = sb
        .cmd()
        .args(["experiment", "run", "--no-progress", "-f", "json"])
        .arg(file)
        .output()
        .expect("run mixseek experiment run");
    assert!(out.status.success(), "{}", describe(&out));
}

/// `mixseek experiment report NAME -f FORMAT`'s standard output.
fn cli_report(sb: &Sandbox, name: &str, format: &str) -> String {
    let out = cli_ok(sb, &["experiment", "report", name, "-f", format]);
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// What a page shows (inside `<main>`, without the shell's own script tag).
fn main_of(page: &str) -> &str {
    page.split_once("<main>")
        .and_then(|(_, m)| m.rsplit_once("</main>"))
        .map_or(page, |(m, _)| m)
}

/// The body of a whole HTML page.
fn body_of(page: &str) -> &str {
    page.split_once("<body>")
        .and_then(|(_, b)| b.rsplit_once("</body>"))
        .map_or(page, |(b, _)| b)
        .trim()
}

/// The workspace's database opened read-only (while no run holds the file).
fn read_only_db(sb: &Sandbox) -> duckdb::Connection {
    duckdb::Connection::open_with_flags(
        sb.workspace().join("mixseek.db"),
        duckdb::Config::default()
            .access_mode(duckdb::AccessMode::ReadOnly)
            .expect("config"),
    )
    .expect("open the database")
}

/// The execution ids of an experiment's items (read with DuckDB while no run holds the file).
fn item_executions(sb: &Sandbox, name: &str) -> Vec<String> {
    let conn = read_only_db(sb);
    let mut stmt = conn
        .prepare("SELECT execution_id FROM experiment_items WHERE experiment_id = ? ORDER BY ALL")
        .expect("prepare");
    stmt.query_map([name], |r| r.get::<_, String>(0))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect()
}

/// An experiment's items: (execution id, task, variant, repeat), by execution id.
fn item_rows(sb: &Sandbox, name: &str) -> Vec<(String, String, String, i64)> {
    let conn = read_only_db(sb);
    let mut stmt = conn
        .prepare(
            "SELECT execution_id, task_id, variant, repeat_index FROM experiment_items
             WHERE experiment_id = ? ORDER BY ALL",
        )
        .expect("prepare");
    stmt.query_map([name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect()
}

/// HTML text as the pages escape it (written out here so the test does not trust the
/// server's own function).
fn html_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// What an item's results page says under its heading: the way back to its experiment.
fn item_line(href: &str, name: &str, task: &str, variant: &str, repeat: i64) -> String {
    format!(
        "<p id=\"experiment-item\">Experiment <a href=\"{href}\">{}</a> · task {} · variant {} · repeat {repeat}</p>",
        html_text(name),
        html_text(task),
        html_text(variant)
    )
}

/// The Experiments page lists what `mixseek experiment list` does; an experiment's page shows
/// the report of `mixseek experiment report` from the same code, number for number (the JSON
/// download is the CLI's `-f json`, the page embeds the body of its `-f html`), and links every
/// item to its execution's results page; an unknown name is a 404 naming the nearest.
#[test]
fn experiments_pages_show_the_cli_report_and_link_every_item() {
    let sb = Sandbox::new();
    let file = workspace_tests::ui::write_experiment(
        &sb,
        "copper",
        &["base", "other-leader"],
        &["t1", "t2", "t3"],
        2,
    );
    run_experiment(&sb, &file);
    let ui = UiServer::start(&sb, &[]);
    let http = Http::new(&ui.base);

    let list = http.get_ready("/experiments");
    assert_eq!(list.status, 200, "{}", list.describe());
    let html = list.text();
    assert!(
        html.contains(
            "<a href=\"/experiments\" class=\"current\" aria-current=\"page\">Experiments</a>"
        ),
        "the navigation: {html}"
    );
    let row = html
        .lines()
        .find(|l| l.contains("data-experiment=\"copper\""))
        .unwrap_or_else(|| panic!("a line for copper: {html}"));
    for cell in [
        "href=\"/experiments?name=copper\"",
        "<td>2 <span class=\"muted\">base, other-leader</span></td>",
        "<td class=\"num\">3</td>",
        "<td class=\"num\">12 / 12</td>",
        "<td class=\"num\">0</td>",
    ] {
        assert!(row.contains(cell), "{cell} in {row}");
    }
    assert!(has_csp(&list), "{:?}", list.headers);

    // The report: the CLI's, number for number.
    let page = http.get("/experiments?name=copper");
    assert_eq!(page.status, 200, "{}", page.describe());
    let html = page.text();
    let cli_html = cli_report(&sb, "copper", "html");
    assert!(
        html.contains(body_of(&cli_html)),
        "the page embeds the body of `experiment report -f html`:\n{}\n---\n{html}",
        body_of(&cli_html)
    );
    let cli_json: Value = serde_json::from_str(&cli_report(&sb, "copper", "json")).expect("JSON");
    let json = http.get("/experiments?name=copper&format=json");
    assert_eq!(json.status, 200, "{}", json.describe());
    assert_eq!(
        json.header("content-type").as_deref(),
        Some("application/json")
    );
    assert_eq!(json.json(), cli_json, "the JSON download is `-f json`");
    let download = http.get("/experiments?name=copper&format=html");
    assert_eq!(download.text(), cli_html, "the HTML download is `-f html`");
    // The numbers the page shows are the JSON's.
    let variants = cli_json["variants"].as_array().expect("variants");
    assert_eq!(variants.len(), 2);
    for v in variants {
        let s = &v["score"];
        let cell = format!(
            "<td>{:.2}</td><td>[{:.2}, {:.2}]</td>",
            s["estimate"].as_f64().expect("estimate"),
            s["low"].as_f64().expect("low"),
            s["high"].as_f64().expect("high")
        );
        assert!(html.contains(&cell), "{cell} in {html}");
    }
    let c = &cli_json["comparisons"][0];
    let wtl = format!(
        "<td>{}</td><td>{}</td><td>{}</td>",
        c["wins"], c["ties"], c["losses"]
    );
    assert!(html.contains(&wtl), "{wtl} in {html}");
    assert!(html.contains("<h2>Paired against base</h2>") && html.contains("<h2>Per task</h2>"));
    // Typed by hand: /experiments/NAME is the same page.
    let by_path = http.get("/experiments/copper");
    assert_eq!(by_path.status, 200, "{}", by_path.describe());
    assert!(by_path.text().contains(body_of(&cli_html)));

    // Every item links to its execution, whose results page opens.
    let ids = item_executions(&sb, "copper");
    assert_eq!(ids.len(), 12);
    for id in &ids {
        assert!(
            html.contains(&format!("<a href=\"/executions/{id}\">")),
            "{id} linked: {html}"
        );
    }
    let results = http.get(&format!("/executions/{}", ids[0]));
    assert_eq!(results.status, 200, "{}", results.describe());
    // ... and names its item, linking back to the experiment.
    let (id, task, variant, repeat) = &item_rows(&sb, "copper")[0];
    assert_eq!(id, &ids[0]);
    let line = item_line("/experiments?name=copper", "copper", task, variant, *repeat);
    assert!(
        results.text().contains(&line),
        "{line} in {}",
        results.text()
    );

    // An unknown name: a 404 naming the nearest, and a clear one for a bad format.
    let r = http.get("/experiments?name=coper");
    assert_eq!(r.status, 404, "{}", r.describe());
    assert!(
        r.text().contains(
            "Did you mean <a id=\"nearest\" href=\"/experiments?name=copper\">copper</a>?"
        ),
        "{}",
        r.text()
    );
    let r = http.get("/experiments/zzzz");
    assert_eq!(r.status, 404, "{}", r.describe());
    assert!(
        r.text().contains("See every experiment (1)"),
        "{}",
        r.text()
    );
    let r = http.get("/experiments?name=copper&format=xml");
    assert_eq!(r.status, 404, "{}", r.describe());
    assert!(r.text().contains("format=json"), "{}", r.text());
}

/// Task ids with markup, quotes, slashes and non-ASCII, an experiment named `..` and variants
/// named `...` and `v.1` (all accepted by `experiment run`): every page shows them as text, the
/// links keep them whole, and the numbers are still the CLI's. Names the database does not
/// have, whatever they hold, are 404 pages.
#[test]
fn experiments_pages_keep_hostile_names_as_text() {
    let sb = Sandbox::new();
    let tasks = [
        "<script>alert(1)</script>",
        "a/../b \"quoted\" 'single' & <b>more</b>",
        "チーム é/..",
    ];
    let file = workspace_tests::ui::write_experiment(&sb, "..", &["...", "v.1"], &tasks, 1);
    run_experiment(&sb, &file);
    let ui = UiServer::start(&sb, &[]);
    let http = Http::new(&ui.base);

    let list = http.get_ready("/experiments");
    assert_eq!(list.status, 200, "{}", list.describe());
    let html = list.text();
    assert!(
        html.contains("<a href=\"/experiments?name=..\">..</a>"),
        "`..` travels in the query: {html}"
    );

    let page = http.get("/experiments?name=..");
    assert_eq!(page.status, 200, "{}", page.describe());
    let html = page.text();
    let main = main_of(&html);
    assert!(
        !main.contains("<script") && !main.contains("<b>more"),
        "markup stays text: {main}"
    );
    for shown in [
        "&lt;script&gt;alert(1)&lt;/script&gt;",
        "a/../b &quot;quoted&quot; &#39;single&#39; &amp; &lt;b&gt;more&lt;/b&gt;",
        "チーム é/..",
    ] {
        assert!(main.contains(shown), "{shown} in {main}");
    }
    let cli_json: Value = serde_json::from_str(&cli_report(&sb, "..", "json")).expect("JSON");
    assert_eq!(
        http.get("/experiments?name=..&format=json").json(),
        cli_json
    );
    assert!(main.contains(body_of(&cli_report(&sb, "..", "html"))));
    let items = item_rows(&sb, "..");
    assert_eq!(items.len(), 6);
    for (id, task, variant, repeat) in &items {
        let r = http.get(&format!("/executions/{id}"));
        assert_eq!(r.status, 200, "{id}: {}", r.describe());
        // the item's line keeps every name as text, and `..` in the link's query
        let text = r.text();
        let main = main_of(&text);
        let line = item_line("/experiments?name=..", "..", task, variant, *repeat);
        assert!(main.contains(&line), "{line} in {main}");
        assert!(
            !main.contains("<script") && !main.contains("<b>more"),
            "{main}"
        );
    }
    // A plain execution's page has no such line.
    let out = sb
        .cmd()
        .args(["exec", "Name one use of copper.", "-f", "json", "-c"])
        .arg(sb.path().join("cfg/orchestrator.toml"))
        .output()
        .expect("run mixseek exec");
    let plain = json_stdout(&out)["execution_id"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| panic!("an execution id: {}", describe(&out)));
    let r = http.get(&format!("/executions/{plain}"));
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(!r.text().contains("id=\"experiment-item\""), "{}", r.text());

    // Names it does not have.
    for (path, shown) in [
        (
            "/experiments?name=%3Cscript%3Ealert(2)%3C%2Fscript%3E",
            "&lt;script&gt;alert(2)&lt;/script&gt;",
        ),
        ("/experiments/a%2Fb", "<code>a/b</code>"),
        (
            "/experiments?name=%22%27%2F..%2F%E2%9C%93",
            "&quot;&#39;/../✓",
        ),
        ("/experiments/%FF%FE", "This address names no experiment"),
    ] {
        let r = http.get(path);
        assert_eq!(r.status, 404, "{path}: {}", r.describe());
        let text = r.text();
        assert!(
            !main_of(&text).contains("<script") && text.contains(shown),
            "{path}: {shown} in {text}"
        );
        assert!(has_csp(&r), "{path}");
    }
}

/// No database, and a database of the original MixSeek (schema version 1, no experiment
/// tables): the list says there is no experiment yet, a name is a 404 saying why, and the
/// file is neither created nor changed.
#[test]
fn experiments_pages_without_a_database_or_with_an_older_one_are_empty() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.workspace()).expect("workspace");
    let ui = UiServer::start(&sb, &[]);
    let http = Http::new(&ui.base);
    let r = http.get("/experiments");
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(
        r.text().contains("id=\"no-experiments\"") && r.text().contains("no database yet"),
        "{}",
        r.text()
    );
    let r = http.get("/experiments?name=copper");
    assert_eq!(r.status, 404, "{}", r.describe());
    assert!(r.text().contains("no database yet"), "{}", r.text());
    assert!(!sb.workspace().join("mixseek.db").exists());
    drop(ui);

    let sb = Sandbox::new();
    let db = crate::db::original_workspace(&sb);
    let before = std::fs::read(&db).expect("the file");
    let ui = UiServer::start(&sb, &[]);
    let http = Http::new(&ui.base);
    let r = http.get("/experiments");
    assert_eq!(r.status, 200, "{}", r.describe());
    assert!(
        r.text()
            .contains("No experiments in this workspace's database yet."),
        "{}",
        r.text()
    );
    let r = http.get("/experiments?name=copper");
    assert_eq!(r.status, 404, "{}", r.describe());
    assert!(
        r.text().contains("It has no experiment at all."),
        "{}",
        r.text()
    );
    // the rest of the UI still reads it
    assert_eq!(http.get("/history").status, 200);
    drop(ui);
    assert!(std::fs::read(&db).expect("the file") == before, "unchanged");
}

/// An experiment of 1,000 items (2 played, 998 copies made with SQL): the list counts them,
/// the report page pages its items and still matches the CLI's report. (Its time is measured
/// by the ui bench, `workspace-tests/benches/ui.rs`.)
#[test]
fn experiments_a_report_of_a_thousand_items_pages_its_items() {
    let sb = Sandbox::new();
    let file = workspace_tests::ui::write_experiment(&sb, "big", &["base", "other"], &["t1"], 1);
    run_experiment(&sb, &file);
    let conn = duckdb::Connection::open(sb.workspace().join("mixseek.db")).expect("open");
    conn.execute_batch(&workspace_tests::ui::grow_experiment_sql(
        "big",
        &["base", "other"],
        998,
    ))
    .expect("grow the experiment");
    drop(conn);
    let ui = UiServer::start(&sb, &[]);
    let http = Http::new(&ui.base);
    let list = http.get_ready("/experiments");
    assert!(
        list.text().contains(
            "<td class=\"num\">1000 / 1000 <span class=\"muted\">(2 planned)</span></td>"
        ),
        "{}",
        list.text()
    );
    let started = Instant::now();
    let page = http.get("/experiments?name=big");
    let took = started.elapsed();
    assert_eq!(page.status, 200, "{}", page.describe());
    eprintln!(
        "the report page of 1,000 items: {:.0} ms, {} kB",
        took.as_secs_f64() * 1000.0,
        page.bytes.len() / 1024
    );
    let html = page.text();
    assert!(html.contains("page 1 of 10 (1000)"), "{html}");
    assert_eq!(html.matches("<a href=\"/executions/").count(), 100);
    let cli_json: Value = serde_json::from_str(&cli_report(&sb, "big", "json")).expect("JSON");
    assert_eq!(cli_json["items"], 1000);
    assert_eq!(
        http.get("/experiments?name=big&format=json").json(),
        cli_json
    );
    let last = http.get("/experiments?name=big&page=10");
    assert!(last.text().contains("page 10 of 10 (1000)"));
    assert!(last.text().contains("synthetic-000997"), "the last item");
}
