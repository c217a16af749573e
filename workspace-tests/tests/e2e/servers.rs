//! A local server that is down: `--dry-run` asks every local server the run would call
//! whether it answers, and a run whose provider refuses connections from the start reports it
//! within seconds (instead of minutes of retries), naming the base URL and what to do.

use mixseek_testkit::FakeLlm;
use workspace_tests::{Sandbox, describe, write_mock_competition};

/// A port nobody listens on.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// The mock competition with team `a`'s leader on provider `local` at `base_url`.
fn competition_with_local_leader(sb: &Sandbox, base_url: &str) -> std::path::PathBuf {
    let cfg = write_mock_competition(sb, &["a", "b"]);
    let team = sb.path().join("cfg/team_a.toml");
    let text = std::fs::read_to_string(&team).expect("read team");
    std::fs::write(&team, text.replace("mock:leader-a", "local:tiny")).expect("write team");
    let orch = std::fs::read_to_string(&cfg).expect("read orchestrator");
    let orch = orch.replace("max_rounds = 2", "max_rounds = 2\nmax_retries_per_team = 0");
    std::fs::write(
        &cfg,
        format!("{orch}\n[providers.local]\nbase_url = \"{base_url}\"\n"),
    )
    .expect("write orchestrator");
    cfg
}

async fn output(mut cmd: assert_cmd::Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run mixseek"))
        .await
        .expect("join")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_asks_each_local_server_whether_it_answers() {
    let sb = Sandbox::new();
    // down: exit 2, the server named with what to do
    let url = format!("http://127.0.0.1:{}/v1", closed_port());
    let cfg = competition_with_local_leader(&sb, &url);
    let mut cmd = sb.cmd();
    cmd.args(["exec", "x", "--dry-run", "-c"]).arg(&cfg);
    let out = output(cmd).await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(text.contains("📋 サーバー"), "{text}");
    assert!(
        text.contains(&format!(
            "nothing is listening at {url} (connection refused)"
        )) && text.contains("[providers.local] base_url")
            && text.contains("needed by: local:tiny"),
        "{text}"
    );
    // up (any HTTP answer): the check passes, and the dry run sends no chat request
    let fake = FakeLlm::openai().await;
    let cfg = competition_with_local_leader(&sb, &fake.base_url());
    let mut cmd = sb.cmd();
    cmd.args(["exec", "x", "--dry-run", "-c"]).arg(&cfg);
    let out = output(cmd).await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(text.contains("local のサーバーが応答しました"), "{text}");
    let paths: Vec<String> = fake.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/v1/models"], "the probe, and no LLM call");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_has_no_server_category_without_local_servers() {
    let sb = Sandbox::new();
    let cfg = write_mock_competition(&sb, &["a"]);
    let mut cmd = sb.cmd();
    cmd.args(["exec", "x", "--dry-run", "-c"]).arg(&cfg);
    let out = output(cmd).await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(!text.contains("サーバー"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_server_is_down_reports_it_within_seconds() {
    let sb = Sandbox::new();
    let url = format!("http://127.0.0.1:{}/v1", closed_port());
    let cfg = competition_with_local_leader(&sb, &url);
    let mut cmd = sb.cmd();
    cmd.args(["exec", "Write a haiku", "-f", "json", "-c"])
        .arg(&cfg);
    let out = output(cmd).await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    // team b (mock) completes; team a fails (a partial failure: exit 1) with the reason and
    // what to do (the message only the fast path writes: the plain retries would end with
    // "error sending request")
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let summary: serde_json::Value = serde_json::from_str(&text).expect("json summary");
    let all = format!("{summary}\n{err}");
    assert!(
        all.contains(&format!(
            "nothing is listening at {url} (connection refused)"
        )) && all.contains("[providers.local] base_url"),
        "{all}"
    );
}
