//! `model_settings` / `google_model_settings` (the original's pass-through, 0.1.0a16+), end to
//! end: written in the leader, a member, `[llm_default]` and the judgment, they reach the
//! fake providers' requests in each wire format, merged in the original's order; a Google
//! table on another model is ignored with the original's warning.

use mixseek_testkit::{FakeLlm, Reply};
use serde_json::{Value, json};
use workspace_tests::Sandbox;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pass_through_settings_reach_every_providers_request() {
    let openai = FakeLlm::openai().await;
    let gemini = FakeLlm::gemini().await;
    let anthropic = FakeLlm::anthropic().await;
    for f in [&openai, &gemini, &anthropic] {
        f.set_default(Reply::Auto);
    }
    let sb = Sandbox::new();
    sb.write(
        "cfg/orchestrator.toml",
        "[orchestrator]\nmin_rounds = 1\nmax_rounds = 1\ntimeout_per_team_seconds = 60\nevaluator_config = \"evaluator.toml\"\njudgment_config = \"judgment.toml\"\n[[orchestrator.teams]]\nconfig = \"team.toml\"\n",
    );
    sb.write(
        "cfg/team.toml",
        r#"[team]
team_id = "t"
team_name = "Team t"

[team.leader]
model = "openai:gpt-leader"
[team.leader.model_settings]
presence_penalty = 0.4
openai_reasoning_effort = "low"
timeout = 5
extra_headers = { X-Trace = "abc" }
[team.leader.google_model_settings]
google_thinking_config = { thinking_budget = 0 }

[[team.members]]
name = "helper"
type = "plain"
model = "google-gla:gemini-member"
model_settings = { temperature = 0.3, top_p = 0.8 }
google_model_settings = { temperature = 0.5, google_thinking_config = { thinking_budget = 0, include_thoughts = false } }
"#,
    );
    sb.write(
        "cfg/evaluator.toml",
        "[llm_default]\nmodel = \"anthropic:claude-judge\"\n[llm_default.model_settings]\ntemperature = 0.9\nanthropic_metadata = { user_id = \"u1\" }\n[[metrics]]\nname = \"Coverage\"\n",
    );
    sb.write(
        "cfg/judgment.toml",
        "model = \"google-gla:gemini-judgment\"\n[google_model_settings]\ngoogle_labels = { team = \"a\" }\n",
    );
    let mut cmd = sb.cmd();
    cmd.env("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")
        .env("OPENAI_BASE_URL", openai.base_url())
        .env("GOOGLE_API_KEY", "test-google-key-0123456789abcdefghij")
        .env("GOOGLE_GLA_BASE_URL", gemini.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdefghij")
        .env("ANTHROPIC_BASE_URL", anthropic.base_url())
        .args([
            "exec",
            "Summarise the news",
            "-f",
            "json",
            "-c",
            "cfg/orchestrator.toml",
        ]);
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("run"))
        .await
        .expect("join");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("google_model_settings is set but model is not a Google model; ignoring"),
        "{stderr}"
    );

    // The leader (OpenAI Chat Completions): generic and `openai_` keys, the header; its
    // Google table is not sent.
    let leader = openai.requests();
    let first = leader.first().expect("the leader called");
    assert_eq!(first.body["model"], "gpt-leader");
    assert_eq!(first.body["presence_penalty"], 0.4);
    assert_eq!(first.body["reasoning_effort"], "low");
    assert_eq!(first.header("x-trace"), Some("abc"));
    assert!(
        first.body.get("thinkingConfig").is_none() && first.body.get("thinking_config").is_none()
    );

    // The member (Gemini): google_model_settings over model_settings.
    let by_model = |model: &str| -> Vec<Value> {
        gemini
            .requests()
            .into_iter()
            .filter(|r| r.path.contains(model))
            .map(|r| r.body)
            .collect()
    };
    let member = by_model("gemini-member");
    let config = &member.first().expect("the member called")["generationConfig"];
    assert_eq!(config["temperature"], 0.5);
    assert_eq!(config["topP"], 0.8);
    assert_eq!(
        config["thinkingConfig"],
        json!({"thinkingBudget": 0, "includeThoughts": false})
    );

    // The judge (Anthropic): the `anthropic_` key; temperature is always set (0.0).
    let judge = anthropic.requests();
    let judge = &judge.first().expect("the judge called").body;
    assert_eq!(judge["metadata"], json!({"user_id": "u1"}));
    assert_eq!(judge["temperature"], 0.0);

    // The judgment (Gemini): its Google table.
    let judgment = by_model("gemini-judgment");
    assert_eq!(
        judgment.first().expect("the judgment called")["labels"],
        json!({"team": "a"})
    );
}
