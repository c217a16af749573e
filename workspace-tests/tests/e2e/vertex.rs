//! `mixseek exec` with a `google-vertex:` leader against the fake OAuth token endpoint and the
//! fake Gemini server answering Vertex AI's path: the dry run checks the credentials file,
//! the run authenticates once for all its calls, and the private key appears nowhere the run
//! writes.

use mixseek_testkit::{FakeLlm, FakeTokenServer, TEST_SERVICE_ACCOUNT_KEY, service_account_json};
use workspace_tests::Sandbox;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_runs_a_vertex_leader_with_a_service_account_key() {
    let fake = FakeLlm::gemini().await;
    let tokens = FakeTokenServer::start().await;
    let sb = Sandbox::new();
    let creds = sb.write(
        "secrets/sa.json",
        &service_account_json("e2e-project", &tokens.token_url()).to_string(),
    );
    let cfg = sb.write(
        "ws/configs/orchestrator.toml",
        &format!(
            r#"[orchestrator]
min_rounds = 1
max_rounds = 1
evaluator_config = "evaluator.toml"
judgment_config = "judgment.toml"

[[orchestrator.teams]]
config = "team.toml"

[providers.google-vertex]
base_url = "{base}"
location = "europe-west4"
max_attempts = 1
"#,
            base = fake.base_url(),
        ),
    );
    sb.write(
        "ws/configs/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\n",
    );
    sb.write("ws/configs/judgment.toml", "model = \"mock:judge\"\n");
    sb.write(
        "ws/configs/team.toml",
        "[team]\nteam_id = \"vertex\"\nteam_name = \"Vertex\"\n[team.leader]\nmodel = \"google-vertex:gemini-2.5-flash\"\n",
    );
    let run = |args: Vec<String>| {
        let mut cmd = sb.bare_cmd();
        cmd.env("GOOGLE_APPLICATION_CREDENTIALS", &creds)
            .env("HOME", sb.path())
            .env_remove("GOOGLE_CLOUD_PROJECT")
            .env_remove("GOOGLE_CLOUD_LOCATION")
            .arg("-w")
            .arg(sb.workspace())
            .args(args)
            .arg("-c")
            .arg(&cfg);
        tokio::task::spawn_blocking(move || cmd.output().expect("run"))
    };
    let prompt = "Summarise the benefits of token caching";

    let out = run(vec!["exec".into(), prompt.into(), "--dry-run".into()])
        .await
        .expect("join");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("✅ All checks passed"), "{stdout}");
    assert!(
        stdout.contains("google-vertex の認証情報を確認しました")
            && stdout.contains("via GOOGLE_APPLICATION_CREDENTIALS")
            && stdout.contains("sa.json"),
        "{stdout}"
    );
    assert_eq!(tokens.request_count(), 0, "a dry run asks for no token");
    // the base URL is local (the fake): the dry run asks it whether it answers, nothing more
    let probes: Vec<String> = fake.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(probes, ["/models"], "the probe only");

    let out = run(vec![
        "exec".into(),
        prompt.into(),
        "--log-level".into(),
        "trace".into(),
    ])
    .await
    .expect("join");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");

    let sent: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.path != "/models")
        .collect();
    assert!(!sent.is_empty(), "the leader called Vertex AI");
    for r in &sent {
        assert_eq!(
            r.path,
            "/v1/projects/e2e-project/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent"
        );
        assert_eq!(
            r.header("authorization"),
            Some("Bearer fake-access-token-1")
        );
    }
    assert_eq!(tokens.request_count(), 1, "one token for the whole run");

    // The key, the signed token request and the access token: nowhere in what the run wrote.
    let jwt = tokens.requests()[0]
        .field("assertion")
        .expect("jwt")
        .to_string();
    let log = std::fs::read_to_string(sb.workspace().join("logs/mixseek.log")).expect("log");
    let db = std::fs::read(sb.workspace().join("mixseek.db")).expect("db");
    let db = String::from_utf8_lossy(&db).into_owned();
    let key_line = TEST_SERVICE_ACCOUNT_KEY.lines().nth(2).expect("key line");
    for (name, text) in [
        ("stdout", &stdout),
        ("stderr", &stderr),
        ("log", &log),
        ("database", &db),
    ] {
        assert!(!text.contains(key_line), "private key in {name}");
        assert!(!text.contains(&jwt), "signed JWT in {name}");
        assert!(
            !text.contains("fake-access-token"),
            "access token in {name}"
        );
    }
}
