//! `mixseek llm` through the real binary against fake LLM servers on 127.0.0.1.

use mixseek_testkit::{FakeLlm, Reply};
use serde_json::json;
use workspace_tests::Sandbox;

const KEY: &str = "sk-test-e2e-0123456789abcdef";

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs the command off the async runtime (the fake server lives on it).
async fn run(mut cmd: assert_cmd::Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run"))
        .await
        .expect("join")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_call_survives_429_then_invalid_json_and_prints_the_object_and_3_attempts() {
    let fake = FakeLlm::openai().await;
    fake.script([
        Reply::rate_limited("1"),
        Reply::text("{\"score\": 90, \"comment\": "),
        Reply::json(json!({"score": 90, "comment": "clear and correct"})),
    ]);
    let sb = Sandbox::new();
    let schema = sb.write(
        "s.json",
        r#"{"type": "object", "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 100}, "comment": {"type": "string"}}, "required": ["score", "comment"]}"#,
    );
    let mut cmd = sb.cmd();
    cmd.env("OPENAI_API_KEY", KEY)
        .env("OPENAI_BASE_URL", fake.base_url());
    cmd.args(["llm", "openai:any", "--schema"])
        .arg(&schema)
        .arg("Rate this answer");
    let out = run(cmd).await;
    let text = stdout(&out);
    assert!(
        out.status.success(),
        "stdout:\n{text}\nstderr:\n{}",
        stderr(&out)
    );
    assert!(
        text.starts_with("{\n  \"score\": 90,\n  \"comment\": \"clear and correct\"\n}"),
        "{text}"
    );
    assert!(text.contains("attempts: 3, repairs: 1"), "{text}");
    assert!(text.contains("model: openai:any"), "{text}");
    assert!(
        text.contains("usage: 24 input + 10 output tokens"),
        "{text}"
    );
    assert_eq!(fake.request_count(), 3);
    // The repair request carried the invalid raw output back to the model.
    assert_eq!(
        fake.requests()[2].body["messages"][1]["content"],
        "{\"score\": 90, \"comment\": "
    );
    assert!(!text.contains(KEY) && !stderr(&out).contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_output_has_the_answer_usage_and_attempts() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::text("pong"));
    let sb = Sandbox::new();
    let mut cmd = sb.cmd();
    cmd.env("OPENAI_API_KEY", KEY)
        .env("OPENAI_BASE_URL", fake.base_url());
    cmd.args([
        "llm",
        "openai:gpt-4o",
        "ping",
        "--system",
        "answer pong",
        "-f",
        "json",
    ]);
    let out = run(cmd).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(v["text"], "pong");
    assert_eq!(v["attempts"], 1);
    assert_eq!(v["usage"]["input_tokens"], 12);
    assert_eq!(v["mock"], false);
    assert_eq!(
        fake.requests()[0].body["messages"][0],
        json!({"role": "system", "content": "answer pong"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_local_server_is_used_by_name() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::text("local hello"));
    let sb = Sandbox::new();
    let cfg = sb.write(
        "orch.toml",
        &format!("[orchestrator]\n\n[providers.ollama]\nkind = \"openai-compatible\"\nbase_url = \"{}\"\n", fake.base_url()),
    );
    let mut cmd = sb.cmd();
    cmd.args(["llm", "ollama:llama3.2", "hi", "-c"]).arg(&cfg);
    let out = run(cmd).await;
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(text.starts_with("local hello"), "{text}");
    assert!(text.contains("cost: unknown"), "{text}");
    assert_eq!(fake.requests()[0].body["model"], "llama3.2");
}

#[test]
fn the_mock_provider_answers_offline_and_says_so() {
    let sb = Sandbox::new();
    let out = sb
        .cmd()
        .args(["llm", "mock:default", "Say hello"])
        .output()
        .expect("run");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(text.contains("[mock answer from mock:default]"), "{text}");
    assert!(text.contains("offline mock provider"), "{text}");
}

#[test]
fn unknown_providers_and_missing_keys_are_usage_errors() {
    let sb = Sandbox::new();
    let out = sb
        .cmd()
        .args(["llm", "opneai:gpt-4o", "x"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("unknown provider `opneai`") && err.contains("did you mean `openai`"),
        "{err}"
    );
    let out = sb
        .cmd()
        .args(["llm", "openai:gpt-4o", "x"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("OPENAI_API_KEY environment variable not found"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_final_structured_failure_shows_the_raw_output_and_kind() {
    let fake = FakeLlm::openai().await;
    fake.set_default(Reply::text("I refuse to answer in JSON"));
    let sb = Sandbox::new();
    let schema = sb.write("s.json", r#"{"type": "object"}"#);
    let mut cmd = sb.cmd();
    cmd.env("OPENAI_API_KEY", KEY)
        .env("OPENAI_BASE_URL", fake.base_url());
    cmd.args(["llm", "openai:any", "x", "--max-repairs", "1", "--schema"])
        .arg(&schema);
    let out = run(cmd).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("parse error") && err.contains("raw output:\nI refuse to answer in JSON"),
        "{err}"
    );
    assert_eq!(fake.request_count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fallback_models_answer_when_the_model_fails() {
    let primary = FakeLlm::openai().await;
    primary.set_default(Reply::status(404, "The model `gpt-gone` does not exist"));
    let backup = FakeLlm::openai().await;
    backup.push(Reply::text("from the backup"));
    let sb = Sandbox::new();
    let cfg = sb.write(
        "orch.toml",
        &format!(
            "[orchestrator]\n\n[providers.backup]\nbase_url = \"{}\"\n",
            backup.base_url()
        ),
    );
    let mut cmd = sb.cmd();
    cmd.env("OPENAI_API_KEY", KEY)
        .env("OPENAI_BASE_URL", primary.base_url());
    cmd.args([
        "llm",
        "openai:gpt-gone",
        "hi",
        "--fallback",
        "backup:small",
        "-c",
    ])
    .arg(&cfg);
    let out = run(cmd).await;
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(text.starts_with("from the backup"), "{text}");
    assert!(
        text.contains("model: backup:small (fallback for openai:gpt-gone)"),
        "{text}"
    );
    assert!(text.contains("attempts: 2,"), "{text}");
    assert_eq!((primary.request_count(), backup.request_count()), (1, 1));
    assert!(
        stderr(&out).contains("trying the next fallback model"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pricing_from_the_config_sets_the_printed_cost() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::text("priced"));
    let sb = Sandbox::new();
    // The fake reports 12 input and 5 output tokens: 12 × 1000 / 1e6 + 5 × 2000 / 1e6.
    let cfg = sb.write(
        "orch.toml",
        &format!(
            "[orchestrator]\n\n[providers.local]\nbase_url = \"{}\"\n\n[pricing.\"local:m\"]\ninput_per_million = 1000.0\noutput_per_million = 2000.0\n",
            fake.base_url()
        ),
    );
    let mut cmd = sb.cmd();
    cmd.args(["llm", "local:m", "hi", "-c"]).arg(&cfg);
    let out = run(cmd).await;
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(
        text.contains("usage: 12 input + 5 output tokens, cost: $0.022000"),
        "{text}"
    );
    // Without the [pricing] entry the same model has no price.
    let fake2 = FakeLlm::openai().await;
    fake2.push(Reply::text("unpriced"));
    let cfg2 = sb.write(
        "orch2.toml",
        &format!(
            "[orchestrator]\n\n[providers.local]\nbase_url = \"{}\"\n",
            fake2.base_url()
        ),
    );
    let mut cmd = sb.cmd();
    cmd.args(["llm", "local:m", "hi", "-c"]).arg(&cfg2);
    let out = run(cmd).await;
    assert!(
        stdout(&out).contains("cost: unknown (no price for this model)"),
        "{}",
        stdout(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_absurd_retry_hint_is_a_clear_error_not_a_panic() {
    // `retry-after-ms: 1e30` once overflowed a Duration and panicked the process.
    let fake = FakeLlm::openai().await;
    fake.set_default(Reply::Error {
        status: 429,
        message: "Rate limit reached, slow down".into(),
        headers: vec![("retry-after-ms".into(), "1e30".into())],
    });
    let sb = Sandbox::new();
    let mut cmd = sb.cmd();
    cmd.env("OPENAI_API_KEY", KEY)
        .env("OPENAI_BASE_URL", fake.base_url());
    cmd.args(["llm", "openai:gpt-4o", "hi"]);
    let out = run(cmd).await;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("rate_limited error (HTTP 429): Rate limit reached, slow down")
            && err.contains("the server asked to wait 3600 s or more")
            && err.contains("no time left to retry"),
        "{err}"
    );
    assert_eq!(fake.request_count(), 1, "failed at once, without waiting");
}
