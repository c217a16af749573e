//! `mixseek ui` driven end to end in a real headless Chromium (`workspace_tests::browser`):
//! start a run from the Run page and follow it to its results, team rounds, History and
//! Compare; cancel a slow run and resume it; stored text that looks like markup stays text on
//! every page; the access token of a UI bound beyond loopback; the Experiments pages, with
//! no console error; and a live view whose run's progress files go away. Each test saves screenshots
//! of the pages it visits in `screenshot_dir()`; with `MIXSEEK_UPDATE_SCREENSHOTS=1` they are
//! copied to `docs/images/ui-*.png` too. Skipped (loudly) when Chromium or chromedriver is
//! missing, unless `MIXSEEK_REQUIRE_BROWSER=1`.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use workspace_tests::Sandbox;
use workspace_tests::browser::{Browser, browser_available, screenshot_dir};
use workspace_tests::ui::UiServer;

/// How long a run (or a page reacting to one) may take: the machine is slow.
const RUN: Duration = Duration::from_secs(30);
/// How long a page element may take to show.
const STEP: Duration = Duration::from_secs(10);
/// How often the waits below look again.
const POLL: Duration = Duration::from_millis(100);

/// The prompt of the escaping test: markup that would run if a page inserted it as HTML.
const EVIL_PROMPT: &str =
    r#"<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">"#;
/// The team name of the escaping test.
const EVIL_TEAM: &str = "<img src=x onerror=alert(1)>Evil</b>";

/// The Run page's preflight verdict (`"true"`/`"false"`) once its answer is in (`null` while
/// it checks: the output then says `Checking…`, and `data-ok` is still the previous verdict).
const PREFLIGHT_VERDICT: &str = "const o = document.getElementById('preflight-output'); \
     return o.textContent !== 'Checking…' && o.dataset.ok ? o.dataset.ok : null";

/// Saves a screenshot as `name` in `screenshot_dir()`; with `MIXSEEK_UPDATE_SCREENSHOTS=1`
/// copies it to `docs/images/ui-NAME` for the documentation.
async fn shot(b: &Browser, name: &str) {
    let path = screenshot_dir().join(name);
    b.screenshot(&path)
        .await
        .unwrap_or_else(|e| panic!("screenshot {name}: {e}"));
    if std::env::var("MIXSEEK_UPDATE_SCREENSHOTS").is_ok_and(|v| v == "1") {
        let docs = workspace_tests::repo_root().join("docs/images");
        std::fs::create_dir_all(&docs).expect("mkdir docs/images");
        std::fs::copy(&path, docs.join(format!("ui-{name}"))).expect("copy the screenshot");
    }
}

/// `mixseek init`: the workspace with `configs/quickstart/` (3 offline teams).
fn init(sb: &Sandbox) {
    let out = sb.cmd().arg("init").output().expect("run mixseek init");
    assert!(out.status.success(), "{}", workspace_tests::describe(&out));
}

/// Copies `ws/configs/quickstart` to `ws/configs/NAME`, passing every file's text through
/// `edit(file_name, text)`; returns the orchestrator file's workspace-relative path.
fn derive_config(sb: &Sandbox, name: &str, edit: impl Fn(&str, &str) -> String) -> String {
    let from = sb.workspace().join("configs/quickstart");
    let to = sb.workspace().join("configs").join(name);
    std::fs::create_dir_all(&to).expect("mkdir");
    for entry in std::fs::read_dir(&from).expect("read the quickstart configs") {
        let path = entry.expect("entry").path();
        let file = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a file name")
            .to_string();
        let text = std::fs::read_to_string(&path).expect("read");
        std::fs::write(to.join(&file), edit(&file, &text)).expect("write");
    }
    format!("configs/{name}/orchestrator.toml")
}

/// Every `mock:` model of `text` gets `-SUFFIX` (e.g. `400ms` of latency).
fn slow_models(text: &str, suffix: &str) -> String {
    text.lines()
        .map(|line| {
            let t = line.trim_start();
            if (t.starts_with("model =") || t.starts_with("default_model ="))
                && t.contains("\"mock:")
            {
                match line.rfind('"') {
                    Some(end) => format!("{}-{suffix}{}", &line[..end], &line[end..]),
                    None => line.to_string(),
                }
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// Runs `script` until it returns something other than `null`/`false`/`""`, and returns it;
/// panics after `timeout` with `what` and the last value seen.
async fn wait_js(b: &Browser, script: &str, timeout: Duration, what: &str) -> Value {
    let deadline = Instant::now() + timeout;
    let mut last: Value;
    loop {
        match b.execute(script, vec![]).await {
            Ok(v) if !matches!(&v, Value::Null | Value::Bool(false)) && v != json!("") => {
                return v;
            }
            Ok(v) => last = v,
            // a page between two loads
            Err(e) if Instant::now() < deadline => last = json!(e.to_string()),
            Err(e) => panic!("{what}: {e}"),
        }
        if Instant::now() >= deadline {
            let url = b.current_url().await.unwrap_or_default();
            panic!("timed out after {timeout:?} waiting for {what} on {url}; last: {last}");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Waits until the page's path and query start with `prefix` (after a click that navigates),
/// and returns them.
async fn wait_path(b: &Browser, prefix: &str) -> String {
    let script = format!(
        "const here = location.pathname + location.search; \
         return here.startsWith({}) && document.readyState === 'complete' ? here : null",
        json!(prefix)
    );
    wait_js(b, &script, STEP, &format!("the page {prefix}…"))
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A script that says whether the element `#id` is rendered: not hidden, whether by its
/// `hidden` attribute or a style (the check a user's eyes make, which the attribute alone
/// does not when a style sets `display`).
fn shown(id: &str) -> String {
    format!(
        "return document.getElementById({}).getClientRects().length > 0",
        json!(id)
    )
}

/// The opposite of [`shown`].
fn not_shown(id: &str) -> String {
    format!(
        "return document.getElementById({}).getClientRects().length === 0",
        json!(id)
    )
}

/// A JS expression's value (panics on a WebDriver error).
async fn js(b: &Browser, script: &str) -> Value {
    b.execute(script, vec![])
        .await
        .unwrap_or_else(|e| panic!("{script}: {e}"))
}

/// How many elements match `css`.
async fn count(b: &Browser, css: &str) -> usize {
    b.find_all(css)
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .len()
}

/// The live view's status once the run is over (not `starting`/`running`), within `timeout`.
async fn final_status(b: &Browser, timeout: Duration) -> String {
    let status = wait_js(
        b,
        "const s = document.getElementById('exec-status').textContent; \
         return ['…', '', 'starting', 'running'].includes(s) ? null : s;",
        timeout,
        "the run to end in the live view",
    )
    .await;
    status.as_str().unwrap_or_default().to_string()
}

/// The live view's log, for assertion messages.
async fn live_log(b: &Browser) -> String {
    b.text("#live-log").await.unwrap_or_default()
}

/// Opens the results page (`/executions/ID`) by clicking the live view's results link. The
/// run's process can still hold the database for a moment after its status says it is over:
/// the page then says so (`#busy`) and is reloaded until the results show.
async fn open_results(b: &Browser, ui: &UiServer, id: &str) {
    wait_js(b, &shown("results-link"), STEP, "the results link").await;
    b.click("#results-link")
        .await
        .expect("click the results link");
    wait_path(b, &format!("/executions/{id}")).await;
    let deadline = Instant::now() + RUN;
    while count(b, "#busy").await > 0 {
        eprintln!("ui_browser: the results page of {id} said the database is busy; reloading");
        assert!(
            Instant::now() < deadline,
            "the results page of {id} still says the database is busy"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        b.goto(&ui.at(&format!("/executions/{id}")))
            .await
            .expect("reload");
    }
}

/// On the Run page: picks `config`, types `prompt`, clicks Start; returns the execution id
/// once the live view is shown.
async fn start_run(b: &Browser, ui: &UiServer, config: &str, prompt: &str) -> String {
    b.goto(&ui.at("/run")).await.expect("open /run");
    b.wait_for("#run-form", STEP).await.expect("the run form");
    b.click(&format!("#config option[value={}]", json!(config)))
        .await
        .expect("pick the configuration");
    assert_eq!(
        b.find("#config")
            .await
            .expect("#config")
            .property("value")
            .await
            .expect("value"),
        json!(config)
    );
    b.type_into("#prompt", prompt).await.expect("type the task");
    b.click("#start").await.expect("click Start");
    let path = wait_path(b, "/live/").await;
    path.trim_start_matches("/live/").to_string()
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(RUN)
        .build()
        .expect("an HTTP client")
}

fn quickstart(ws: &Path) -> PathBuf {
    ws.join("configs/quickstart/orchestrator.toml")
}

/// Run → live view → results → team rounds → download → History (search) → a second
/// execution from the CLI → Compare from History.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_runs_a_competition_and_shows_results_history_and_compare() {
    if !browser_available("ui_runs_a_competition_and_shows_results_history_and_compare") {
        return;
    }
    let sb = Sandbox::new();
    init(&sb);
    let ui = UiServer::start(&sb, &[]);
    assert!(
        !ui.url.contains("token="),
        "loopback needs no token: {}",
        ui.url
    );
    let b = Browser::start().await.expect("start the browser");

    // Run page: the quickstart is preselected; the preflight passes.
    b.goto(&ui.url).await.expect("open the UI");
    assert_eq!(wait_path(&b, "/run").await, "/run");
    assert_eq!(
        b.find("#config")
            .await
            .expect("#config")
            .property("value")
            .await
            .expect("value"),
        json!("configs/quickstart/orchestrator.toml")
    );
    assert_eq!(
        js(&b, &shown("run-error")).await,
        json!(false),
        "no error notice before an error"
    );
    assert_eq!(
        js(&b, &shown("preflight-output")).await,
        json!(false),
        "no preflight output before a check"
    );
    // An empty task: the preflight says so.
    b.click("#preflight").await.expect("click Check");
    let verdict = wait_js(&b, PREFLIGHT_VERDICT, RUN, "the preflight's refusal").await;
    assert_eq!(verdict, json!("false"));
    b.wait_for_text("#preflight-output", "the task is empty", STEP)
        .await
        .expect("the preflight names the problem");
    b.type_into("#prompt", "Write a haiku about autumn")
        .await
        .expect("type the task");
    b.click("#preflight").await.expect("click Check");
    let ok = wait_js(&b, PREFLIGHT_VERDICT, RUN, "the preflight's answer").await;
    let preflight = b.text("#preflight-output").await.expect("preflight output");
    assert_eq!(ok, json!("true"), "{preflight}");
    assert!(preflight.contains("All checks passed"), "{preflight}");
    shot(&b, "run.png").await;

    // Start: the live view follows the run to its end.
    b.click("#start").await.expect("click Start");
    let path = wait_path(&b, "/live/").await;
    let id1 = path.trim_start_matches("/live/").to_string();
    assert_eq!(id1.len(), 36, "an execution id (a UUID): {path}");
    let status = final_status(&b, RUN).await;
    assert_eq!(status, "completed", "log:\n{}", live_log(&b).await);
    wait_js(
        &b,
        "return document.querySelectorAll('#live-teams tbody tr[data-team]').length === 3",
        STEP,
        "3 team rows in the live view",
    )
    .await;
    let teams = js(
        &b,
        "return [...document.querySelectorAll('#live-teams tbody tr[data-team]')].map(r => r.dataset.team)",
    )
    .await;
    assert_eq!(teams, json!(["alpha", "beta", "gamma"]));
    assert!(
        b.text("#live-prompt")
            .await
            .expect("prompt")
            .contains("Write a haiku about autumn")
    );
    assert_eq!(
        js(&b, &shown("cancel")).await,
        json!(false),
        "no Cancel button once the run is over"
    );
    shot(&b, "live.png").await;

    // Results.
    open_results(&b, &ui, &id1).await;
    assert!(b.text("h1").await.expect("h1").contains(&id1));
    assert!(b.find("dl.meta").await.is_ok(), "the execution's facts");
    assert!(
        b.text("pre.prompt")
            .await
            .expect("task")
            .contains("Write a haiku about autumn")
    );
    assert_eq!(count(&b, "table.leaderboard tbody tr").await, 3);
    assert_eq!(count(&b, "svg.chart").await, 1, "the score chart");
    assert_eq!(
        count(&b, "#resume-form").await,
        0,
        "no resume for a completed run"
    );
    let downloads = js(
        &b,
        "return [...document.querySelectorAll('#downloads a')].map(a => a.getAttribute('href'))",
    )
    .await;
    let report = format!("/executions/{id1}/download/report.html");
    let export = format!("/executions/{id1}/download/export.json");
    assert_eq!(downloads, json!([report, export]));
    shot(&b, "results.png").await;

    // Downloads answer with the files.
    let client = http();
    let resp = client.get(ui.at(&export)).send().await.expect("GET export");
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()
            .get("content-disposition")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("attachment")),
        "{:?}",
        resp.headers()
    );
    let body: Value = resp.json().await.expect("the export is JSON");
    assert!(
        body.to_string().contains(&id1),
        "the export names the execution"
    );
    let resp = client.get(ui.at(&report)).send().await.expect("GET report");
    assert_eq!(resp.status(), 200);
    assert!(
        count(&b, "a[href$='.csv']").await > 0,
        "CSV downloads are offered"
    );

    // A team's rounds.
    b.click("table.leaderboard a[href*='/teams/']")
        .await
        .expect("click a team");
    let team_path = wait_path(&b, &format!("/executions/{id1}/teams/")).await;
    let opens = js(
        &b,
        "return [...document.querySelectorAll('details.round')].map(d => d.open)",
    )
    .await;
    let opens = opens.as_array().expect("a list").clone();
    assert!(
        (2..=3).contains(&opens.len()),
        "2 or 3 rounds on {team_path}: {opens:?}"
    );
    // The round of the final submission (the team's best, not always its last) is open.
    assert_eq!(
        opens.iter().filter(|o| **o == json!(true)).count(),
        1,
        "one round is open: {opens:?}"
    );
    assert_eq!(
        count(&b, "details.round[open] > summary .badge.final").await,
        1,
        "the open round is the final submission"
    );
    assert!(count(&b, "details.round table.metrics").await >= 1);
    assert_eq!(count(&b, "pre.submission").await, opens.len());
    assert!(
        b.text("details.round[open] pre.submission")
            .await
            .expect("the final submission")
            .contains("mock answer"),
        "the submission shows"
    );
    shot(&b, "team.png").await;

    // History lists it.
    b.goto(&ui.at("/history")).await.expect("open /history");
    assert_eq!(count(&b, "table.executions tbody tr").await, 1);
    assert_eq!(
        js(&b, "return document.querySelector('input.pick').value").await,
        json!(id1)
    );

    // A second execution from the CLI.
    let ws = sb.workspace();
    let out = sb
        .cmd()
        .args(["exec", "Write a haiku", "-c"])
        .arg(quickstart(&ws))
        .output()
        .expect("run mixseek exec");
    assert!(out.status.success(), "{}", workspace_tests::describe(&out));
    b.goto(&ui.at("/history")).await.expect("reload /history");
    let ids = js(
        &b,
        "return [...document.querySelectorAll('input.pick')].map(c => c.value)",
    )
    .await;
    let ids: Vec<String> = ids
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&id1), "{ids:?}");
    let id2 = ids
        .iter()
        .find(|i| **i != id1)
        .expect("the second execution")
        .clone();

    // Search: by task, by id prefix, then nothing.
    b.type_into("#q", "autumn").await.expect("type the search");
    b.click("form.filters button[type=submit]")
        .await
        .expect("Filter");
    wait_path(&b, "/history?q=autumn").await;
    assert_eq!(
        js(
            &b,
            "return [...document.querySelectorAll('input.pick')].map(c => c.value)"
        )
        .await,
        json!([id1])
    );
    b.type_into("#q", &id2[..8]).await.expect("type the id");
    b.click("form.filters button[type=submit]")
        .await
        .expect("Filter");
    wait_path(&b, &format!("/history?q={}", &id2[..8])).await;
    assert_eq!(
        js(
            &b,
            "return [...document.querySelectorAll('input.pick')].map(c => c.value)"
        )
        .await,
        json!([id2])
    );
    b.type_into("#q", "no such task anywhere")
        .await
        .expect("type the search");
    b.click("form.filters button[type=submit]")
        .await
        .expect("Filter");
    wait_path(&b, "/history?q=no").await;
    b.wait_for("#no-executions", STEP)
        .await
        .expect("nothing matches");
    // The status filter.
    b.goto(&ui.at("/history?status=interrupted"))
        .await
        .expect("filter by status");
    b.wait_for("#no-executions", STEP)
        .await
        .expect("no interrupted execution");
    b.goto(&ui.at("/history?status=completed"))
        .await
        .expect("filter by status");
    assert_eq!(count(&b, "table.executions tbody tr").await, 2);
    assert_eq!(
        js(&b, "return document.getElementById('status').value").await,
        json!("completed")
    );

    // Compare the two from History.
    b.goto(&ui.at("/history")).await.expect("open /history");
    // One picked is not enough.
    b.click(&format!("input.pick[value='{id1}']"))
        .await
        .expect("tick");
    b.click("#compare-selected").await.expect("Compare");
    b.wait_for_text("#compare-note", "two", STEP)
        .await
        .expect("asks for two");
    b.click(&format!("input.pick[value='{id2}']"))
        .await
        .expect("tick");
    shot(&b, "history.png").await;
    b.click("#compare-selected").await.expect("Compare");
    let path = wait_path(&b, "/compare").await;
    assert!(
        path.contains(&id1) && path.contains(&id2),
        "the compared ids: {path}"
    );
    // Each table has a column per execution.
    for table in ["#compare-summary", "#compare-teams", "#compare-rounds"] {
        assert_eq!(
            count(&b, &format!("{table} thead th")).await,
            3,
            "{table}: a label column and one per execution"
        );
    }
    let summary = b.text("#compare-summary").await.expect("summary");
    assert!(
        summary.contains("Write a haiku about autumn") && summary.contains("completed"),
        "{summary}"
    );
    assert_eq!(
        js(
            &b,
            "return [...document.querySelectorAll('#compare-teams tbody tr th')].map(t => t.textContent)"
        )
        .await,
        json!(["alpha", "beta", "gamma"])
    );
    let rounds = count(&b, "#compare-rounds tbody tr").await;
    assert!((6..=9).contains(&rounds), "3 teams × 2–3 rounds: {rounds}");
    assert_eq!(
        count(&b, "#same-config").await + count(&b, "#compare-config").await,
        1,
        "the configuration section"
    );
    if count(&b, "#compare-config").await > 0 {
        panic!(
            "the same configuration shows differences:\n{}",
            b.text("#compare-config").await.unwrap_or_default()
        );
    }
    shot(&b, "compare.png").await;

    b.quit().await.expect("quit");
}

/// A slow run started from the Run page is cancelled from its live view; its results page
/// offers to resume it, and the resumed run completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_cancels_a_run_and_resumes_it() {
    if !browser_available("ui_cancels_a_run_and_resumes_it") {
        return;
    }
    let sb = Sandbox::new();
    init(&sb);
    let slow = derive_config(&sb, "slow", |file, text| {
        let text = slow_models(text, "400ms");
        if file == "orchestrator.toml" {
            text.replace("min_rounds = 2", "min_rounds = 5")
                .replace("max_rounds = 3", "max_rounds = 5")
        } else {
            text
        }
    });
    let ui = UiServer::start(&sb, &[]);
    let b = Browser::start().await.expect("start the browser");

    let id = start_run(&b, &ui, &slow, "Write a long poem about rain").await;
    b.wait_for_text("#exec-status", "running", RUN)
        .await
        .expect("the run is running");
    wait_js(
        &b,
        "return document.querySelectorAll('#live-teams tbody tr[data-team]').length >= 1",
        RUN,
        "a team row in the live view",
    )
    .await;
    // Cancel once a round is committed (a team has a score), so resuming has one to keep.
    wait_js(
        &b,
        "return [...document.querySelectorAll('#live-teams tbody tr[data-team]')]\
           .some(r => r.children[3].textContent !== '—')",
        RUN,
        "a scored round in the live view",
    )
    .await;
    wait_js(&b, &shown("cancel"), STEP, "the Cancel button").await;
    assert_eq!(
        js(&b, &shown("results-link")).await,
        json!(false),
        "no results link while running"
    );
    // The Run page lists it among the runs in progress.
    {
        let client = http();
        let active: Value = client
            .get(ui.at("/api/active"))
            .send()
            .await
            .expect("GET /api/active")
            .json()
            .await
            .expect("JSON");
        assert!(
            active.to_string().contains(&id),
            "{id} is among the active runs: {active}"
        );
    }
    b.click("#cancel").await.expect("click Cancel");
    b.wait_for_text("#live-note", "Interrupt sent", STEP)
        .await
        .expect("the interrupt is acknowledged");
    let status = final_status(&b, RUN).await;
    assert!(
        status == "interrupted" || status == "stopped",
        "status {status}; log:\n{}",
        live_log(&b).await
    );
    wait_js(&b, &not_shown("cancel"), STEP, "the Cancel button to go").await;
    shot(&b, "cancelled.png").await;

    // The results offer to resume it, with the configuration it started with.
    open_results(&b, &ui, &id).await;
    b.wait_for("form#resume-form", STEP)
        .await
        .expect("the resume form");
    assert_eq!(
        b.find("#resume-config")
            .await
            .expect("#resume-config")
            .property("value")
            .await
            .expect("value"),
        json!(slow)
    );
    assert!(
        b.text("h1").await.expect("h1").contains("interrupted"),
        "the heading says interrupted"
    );
    shot(&b, "resume.png").await;

    b.click("#resume").await.expect("click Resume");
    wait_path(&b, &format!("/live/{id}")).await;
    // The execution file says `interrupted` until the resumed process rewrites it: wait for
    // the end, not for the first status that is not running.
    if let Err(e) = b
        .wait_for_text("#exec-status", "completed", Duration::from_secs(60))
        .await
    {
        b.goto(&ui.at(&format!("/live/{id}")))
            .await
            .expect("reload");
        let again = final_status(&b, Duration::from_secs(60)).await;
        panic!(
            "after Resume the live view did not reach `completed` ({e}); after a reload it says {again:?}; log:\n{}",
            live_log(&b).await
        );
    }
    open_results(&b, &ui, &id).await;
    assert!(b.text("h1").await.expect("h1").contains("completed"));
    assert_eq!(count(&b, "#resume-form").await, 0);
    assert_eq!(count(&b, "table.leaderboard tbody tr").await, 3);
    // Every team played its 5 rounds, the ones before the interrupt kept.
    b.goto(&ui.at(&format!("/executions/{id}/teams/alpha")))
        .await
        .expect("open a team");
    assert_eq!(count(&b, "details.round").await, 5);

    b.quit().await.expect("quit");
}

/// Checks that no markup of the run ran or was inserted on the page shown, and that
/// each of `texts` shows literally.
async fn assert_escaped(b: &Browser, page: &str, texts: &[&str]) {
    assert_eq!(
        js(b, "return window.__pwned === undefined").await,
        json!(true),
        "{page}: the prompt's script ran"
    );
    assert_eq!(
        js(b, "return document.querySelectorAll('img').length").await,
        json!(0),
        "{page}: an <img> was inserted"
    );
    assert_eq!(
        js(
            b,
            "return [...document.scripts].map(s => s.getAttribute('src'))"
        )
        .await,
        json!(["/assets/ui.js"]),
        "{page}: a <script> was inserted"
    );
    for t in texts {
        let shown = js(
            b,
            &format!("return document.body.innerText.includes({})", json!(t)),
        )
        .await;
        assert_eq!(shown, json!(true), "{page}: {t:?} is not shown as text");
    }
}

/// A prompt and a team name made of markup stay text on the live view, results, team page,
/// History and Compare.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_shows_markup_in_stored_text_as_text() {
    if !browser_available("ui_shows_markup_in_stored_text_as_text") {
        return;
    }
    let sb = Sandbox::new();
    init(&sb);
    let evil = derive_config(&sb, "evil", |file, text| {
        if file == "team_alpha.toml" {
            text.replace(
                "team_name = \"Alpha Team\"",
                &format!("team_name = {}", json!(EVIL_TEAM)),
            )
        } else {
            text.to_string()
        }
    });
    let ui = UiServer::start(&sb, &[]);
    let b = Browser::start().await.expect("start the browser");

    let id = start_run(&b, &ui, &evil, EVIL_PROMPT).await;
    let status = final_status(&b, RUN).await;
    assert_eq!(status, "completed", "log:\n{}", live_log(&b).await);
    wait_js(
        &b,
        "return document.querySelectorAll('#live-teams tbody tr[data-team]').length === 3",
        STEP,
        "3 team rows",
    )
    .await;
    assert_escaped(&b, "live view", &["<script>", EVIL_PROMPT, EVIL_TEAM]).await;

    open_results(&b, &ui, &id).await;
    assert_escaped(&b, "results", &["<script>", EVIL_PROMPT, EVIL_TEAM]).await;
    shot(&b, "escaping.png").await;

    b.goto(&ui.at(&format!("/executions/{id}/teams/alpha")))
        .await
        .expect("open the team");
    b.wait_for("details.round", STEP).await.expect("its rounds");
    assert_escaped(&b, "team page", &[EVIL_TEAM]).await;
    assert_eq!(
        b.title().await.expect("title"),
        format!("Team {EVIL_TEAM} — MixSeek"),
        "the title is text too"
    );

    b.goto(&ui.at("/history")).await.expect("open /history");
    assert_escaped(&b, "history", &["<script>"]).await;

    // A second execution of the same, for Compare.
    let out = sb
        .cmd()
        .args(["exec", EVIL_PROMPT, "-c"])
        .arg(sb.workspace().join(&evil))
        .output()
        .expect("run mixseek exec");
    assert!(out.status.success(), "{}", workspace_tests::describe(&out));
    b.goto(&ui.at("/history")).await.expect("reload /history");
    let ids = js(
        &b,
        "return [...document.querySelectorAll('input.pick')].map(c => c.value).join(',')",
    )
    .await;
    b.goto(&ui.at(&format!("/compare?ids={}", ids.as_str().expect("ids"))))
        .await
        .expect("open /compare");
    b.wait_for("#compare-summary", STEP)
        .await
        .expect("the comparison");
    assert_escaped(&b, "compare", &["<script>"]).await;

    // The downloaded report escapes too.
    let report = http()
        .get(ui.at(&format!("/executions/{id}/download/report.html")))
        .send()
        .await
        .expect("GET report")
        .text()
        .await
        .expect("the report");
    assert!(
        !report.contains("<script>window"),
        "the report has the script"
    );
    assert!(!report.contains("<img src=x"), "the report has the image");
    assert!(
        report.contains("&lt;script&gt;"),
        "the report shows the prompt"
    );

    b.quit().await.expect("quit");
}

/// Bound to 0.0.0.0, every request needs the token (query, cookie or bearer); a request of
/// another origin cannot start a run; the printed address logs the browser in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_beyond_loopback_requires_the_token() {
    if !browser_available("ui_beyond_loopback_requires_the_token") {
        return;
    }
    let sb = Sandbox::new();
    init(&sb);
    let ui = UiServer::start(&sb, &["--host", "0.0.0.0"]);
    let token = ui
        .token()
        .unwrap_or_else(|| panic!("the address has a token: {}", ui.url));
    assert!(token.len() >= 16, "a long token: {token}");
    let client = http();

    // Without the token, or with a wrong one: 401.
    for path in ["/", "/run", "/history", "/api/active", "/assets/ui.js"] {
        let resp = client.get(ui.at(path)).send().await.expect("GET");
        assert_eq!(resp.status(), 401, "{path} without the token");
    }
    let resp = client
        .get(ui.at("/run"))
        .bearer_auth("wrong-token-0123456789")
        .send()
        .await
        .expect("GET");
    assert_eq!(resp.status(), 401, "a wrong token");
    let body = resp.text().await.expect("body");
    assert!(body.contains("access token is required"), "{body}");
    assert!(
        !body.contains(&token),
        "the refusal does not give the token away"
    );

    // With it: 200.
    let resp = client
        .get(ui.at("/run"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("GET");
    assert_eq!(resp.status(), 200);
    assert!(resp.text().await.expect("body").contains("id=\"run-form\""));
    // In the address: a redirect that keeps it in a cookie and drops it from the address.
    let resp = client
        .get(ui.at(&format!("/history?token={token}&q=x")))
        .send()
        .await
        .expect("GET");
    assert_eq!(resp.status(), 303);
    assert_eq!(
        resp.headers().get("location").and_then(|v| v.to_str().ok()),
        Some("/history?q=x")
    );
    let cookie = resp
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(
        cookie.starts_with(&format!("mixseek_token={token};")) && cookie.contains("HttpOnly"),
        "{cookie}"
    );
    let resp = client
        .get(ui.at("/history"))
        .header("cookie", format!("mixseek_token={token}"))
        .send()
        .await
        .expect("GET");
    assert_eq!(resp.status(), 200, "the cookie is enough");

    // A state-changing request of another origin is refused, token or not.
    let form = "config=configs%2Fquickstart%2Forchestrator.toml&prompt=hello";
    let resp = client
        .post(ui.at("/api/runs"))
        .bearer_auth(&token)
        .header("origin", "http://evil.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .expect("POST");
    assert_eq!(resp.status(), 403, "a foreign origin");
    let resp = client
        .post(ui.at("/api/runs"))
        .bearer_auth(&token)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .expect("POST");
    assert_eq!(resp.status(), 403, "no origin at all");
    // The UI's own origin passes the guard (and an empty form is refused by the page).
    let resp = client
        .post(ui.at("/api/runs"))
        .bearer_auth(&token)
        .header("origin", ui.base.clone())
        .header("content-type", "application/x-www-form-urlencoded")
        .body("config=&prompt=")
        .send()
        .await
        .expect("POST");
    assert_eq!(resp.status(), 400, "its own origin, an empty form");
    assert!(
        !sb.workspace().join("logs/ui-runs").exists(),
        "no run was started"
    );

    // The browser: refused without the token, logged in by the printed address.
    let b = Browser::start().await.expect("start the browser");
    b.goto(&ui.at("/run")).await.expect("open /run");
    b.wait_for_text("body", "token is required", STEP)
        .await
        .expect("the refusal");
    assert_eq!(count(&b, "#run-form").await, 0);
    shot(&b, "token-refused.png").await;

    b.goto(&ui.url).await.expect("open the printed address");
    assert_eq!(wait_path(&b, "/run").await, "/run");
    b.wait_for("#run-form", STEP).await.expect("the Run page");
    let here = b.current_url().await.expect("url");
    assert!(
        !here.contains("token"),
        "the token left the address: {here}"
    );
    let cookies = b.get_cookies().await.expect("cookies");
    assert!(
        cookies.contains(&("mixseek_token".to_string(), token.clone())),
        "{cookies:?}"
    );
    // The pages' own requests carry the cookie: the preflight works.
    b.type_into("#prompt", "Write a haiku").await.expect("type");
    b.click("#preflight").await.expect("click Check");
    let ok = wait_js(&b, PREFLIGHT_VERDICT, RUN, "the preflight's answer").await;
    assert_eq!(
        ok,
        json!("true"),
        "{}",
        b.text("#preflight-output").await.unwrap_or_default()
    );
    b.click("nav.top a[href='/history']")
        .await
        .expect("open History");
    wait_path(&b, "/history").await;
    assert_eq!(
        b.title().await.expect("title"),
        "No executions yet — MixSeek"
    );

    b.quit().await.expect("quit");
}

/// The console's errors since the last look, but the favicon Chromium asks for (the UI has
/// none: a 404 it logs).
async fn console_errors(b: &Browser) -> Vec<String> {
    b.console_log()
        .await
        .expect("the console log")
        .into_iter()
        .filter(|(level, text)| level == "SEVERE" && !text.contains("favicon.ico"))
        .map(|(_, text)| text)
        .collect()
}

/// The Experiments page, reached from the navigation, and an experiment's report, reached
/// from its line, load and render in Chromium without a console error (no refused script or
/// style, no failed resource); a task id made of markup stays text; an item opens its
/// execution's results.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_shows_experiments_and_a_report_without_console_errors() {
    if !browser_available("ui_shows_experiments_and_a_report_without_console_errors") {
        return;
    }
    let sb = Sandbox::new();
    // copper for the screenshots; markup, whose task id is markup, for the escaping
    for (name, tasks) in [
        ("markup", &["t1", EVIL_PROMPT][..]),
        ("copper", &["alloys", "mining", "wiring"][..]),
    ] {
        let file = workspace_tests::ui::write_experiment(&sb, name, &["base", "hot"], tasks, 1);
        let out = sb
            .cmd()
            .args(["experiment", "run", "--no-progress"])
            .arg(&file)
            .output()
            .expect("run mixseek experiment run");
        assert!(out.status.success(), "{}", workspace_tests::describe(&out));
    }
    let ui = UiServer::start(&sb, &[]);
    let b = Browser::start().await.expect("start the browser");

    b.goto(&ui.at("/history")).await.expect("open /history");
    b.click("nav.top a[href='/experiments']")
        .await
        .expect("open Experiments");
    wait_path(&b, "/experiments").await;
    assert_eq!(b.title().await.expect("title"), "Experiments — MixSeek");
    assert_eq!(count(&b, "#experiments tbody tr").await, 2);
    let line = b
        .text("#experiments tbody tr[data-experiment='copper']")
        .await
        .expect("the line");
    assert!(
        line.contains("copper") && line.contains("base, hot") && line.contains("6 / 6"),
        "{line}"
    );
    assert_eq!(
        console_errors(&b).await,
        Vec::<String>::new(),
        "/experiments"
    );
    shot(&b, "experiments.png").await;

    b.click("#experiments tbody tr[data-experiment='copper'] a")
        .await
        .expect("open copper");
    wait_path(&b, "/experiments?name=copper").await;
    assert_eq!(
        b.title().await.expect("title"),
        "Experiment copper — MixSeek"
    );
    let report = b.text("#experiment-report").await.expect("the report");
    for part in ["Variants", "Paired against base", "Per task", "hot"] {
        assert!(report.contains(part), "{part} in {report}");
    }
    assert_eq!(count(&b, "#experiment-items tbody tr").await, 6);
    // The report's tables are styled by the page's style sheet (the report's own rules).
    assert_eq!(
        js(
            &b,
            "return getComputedStyle(document.querySelector('#experiment-report th')).backgroundColor"
        )
        .await,
        json!("rgb(246, 246, 246)")
    );
    assert_eq!(
        console_errors(&b).await,
        Vec::<String>::new(),
        "the report page"
    );
    shot(&b, "experiment-report.png").await;

    b.goto(&ui.at("/experiments?name=markup"))
        .await
        .expect("open markup");
    b.wait_for("#experiment-items", STEP)
        .await
        .expect("its items");
    assert_escaped(&b, "experiment report", &[EVIL_PROMPT]).await;
    assert_eq!(
        console_errors(&b).await,
        Vec::<String>::new(),
        "a report with markup"
    );

    b.click("#experiment-items tbody a")
        .await
        .expect("open an item");
    wait_path(&b, "/executions/").await;
    b.wait_for("table", STEP).await.expect("its results");
    assert_eq!(
        console_errors(&b).await,
        Vec::<String>::new(),
        "the item's results"
    );
    b.quit().await.expect("quit");
}

/// The live view of an execution whose progress files are removed while it is watched (an
/// experiment removes each execution's files when it ends) says the run ended, offers its
/// results and stops polling, instead of staying at `running`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_live_view_says_a_run_ended_when_its_progress_files_go() {
    if !browser_available("ui_live_view_says_a_run_ended_when_its_progress_files_go") {
        return;
    }
    let sb = Sandbox::new();
    init(&sb);
    let id = "0c1d2e3f-0000-4000-8000-000000000001";
    let logs = sb.workspace().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir logs");
    let file = logs.join(format!("{id}.execution.json"));
    // a running execution of this (live) process
    let state = json!({
        "execution_id": id,
        "pid": std::process::id(),
        "status": "running",
        "user_prompt": "a task of an experiment",
        "total_teams": 1,
        "max_rounds": 2,
    });
    std::fs::write(&file, state.to_string()).expect("write the execution file");
    let ui = UiServer::start(&sb, &[]);
    let b = Browser::start().await.expect("start the browser");
    b.goto(&ui.at(&format!("/live/{id}")))
        .await
        .expect("open the live view");
    b.wait_for_text("#exec-status", "running", STEP)
        .await
        .expect("the live view shows the run as running");
    wait_js(
        &b,
        &not_shown("results-link"),
        STEP,
        "no results link while it runs",
    )
    .await;

    std::fs::remove_file(&file).expect("remove the execution file");
    b.wait_for_text("#exec-status", "ended", STEP)
        .await
        .expect("the live view says the run ended");
    let note = b.text("#live-note").await.expect("the note");
    assert!(note.contains("progress files are gone"), "{note}");
    wait_js(&b, &shown("results-link"), STEP, "the results link").await;
    wait_js(&b, &not_shown("cancel"), STEP, "no cancel button").await;
    b.quit().await.expect("quit");
}
