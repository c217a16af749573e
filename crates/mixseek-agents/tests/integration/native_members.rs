//! `web_search` and `code_execution` members: the provider-native tool in the member's
//! request on each wire (fake servers), the parsed answer as the member's submission, and
//! the offline `mock:` provider.

use crate::common;

use common::{agents, ctx, deps, mock_registry, registry};
use mixseek_agents::build_member;
use mixseek_config::MemberSettings;
use mixseek_core::MemberStatus;
use mixseek_llm::{Env, ModelRegistry, RegistryConfig};
use mixseek_testkit::{FakeLlm, RESPONSES_PATH, Reply, USAGE_INPUT, USAGE_OUTPUT, Wire};
use serde_json::json;
use std::sync::Arc;

fn member(toml_src: &str) -> MemberSettings {
    toml::from_str(toml_src).expect("member toml")
}

#[tokio::test]
async fn web_search_member_sends_anthropic_server_tool_and_returns_cited_text() {
    let fake = FakeLlm::anthropic().await;
    fake.push(Reply::web_search(
        "semiconductor news",
        &[("https://news.example/chips", "Chips today")],
        "Fabs are expanding.",
    ));
    let m = member(
        "name = \"searcher\"\ntype = \"web_search\"\nmodel = \"claude:claude-haiku-4-5\"\nmax_tokens = 900\n[tool_settings.web_search]\nmax_uses = 2\nblocked_domains = [\"spam.example\"]\nmax_results = 15\n",
    );
    let member = build_member(
        &m,
        &deps(registry(&[("claude", &fake, Wire::Anthropic)])),
        None,
    )
    .expect("built");
    assert_eq!(member.agent_type(), "web_search");
    let out = member.execute("Find chip news", &ctx()).await;
    assert_eq!(out.status, MemberStatus::Success, "{:?}", out.error_message);
    assert_eq!(
        out.content,
        "Fabs are expanding.\n\nSources:\n- Chips today — https://news.example/chips"
    );
    assert_eq!(
        (
            out.usage.input_tokens,
            out.usage.output_tokens,
            out.usage.requests
        ),
        (USAGE_INPUT, USAGE_OUTPUT, 1)
    );
    let sent = fake.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].body["tools"],
        json!([{"type": "web_search_20250305", "name": "web_search", "max_uses": 2, "blocked_domains": ["spam.example"]}])
    );
    assert_eq!(sent[0].body["max_tokens"], 900);
    assert!(
        sent[0].body["messages"][0]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Find chip news"))
    );
}

#[tokio::test]
async fn code_execution_member_sends_gemini_code_execution() {
    let fake = FakeLlm::gemini().await;
    fake.push(Reply::code_execution(
        "print(sum([3, 4]))",
        "7\n",
        "The total is 7.",
    ));
    let m =
        member("name = \"coder\"\ntype = \"code_execution\"\nmodel = \"gem:gemini-2.5-flash\"\n");
    let member =
        build_member(&m, &deps(registry(&[("gem", &fake, Wire::Gemini)])), None).expect("built");
    let out = member.execute("Add 3 and 4", &ctx()).await;
    assert_eq!(out.status, MemberStatus::Success, "{:?}", out.error_message);
    assert_eq!(
        out.content,
        "```python\nprint(sum([3, 4]))\n```\n\nOutput:\n```\n7\n```\n\nThe total is 7."
    );
    assert_eq!(
        fake.requests()[0].body["tools"],
        json!([{"code_execution": {}}])
    );
}

#[tokio::test]
async fn openai_native_members_go_to_the_responses_api() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::web_search(
        "q",
        &[("https://a.example/", "A")],
        "Answer A.",
    ));
    let url = fake.base_url();
    let reg = Arc::new(
        ModelRegistry::new(RegistryConfig::new().with_env(Env::from_map([
            ("OPENAI_API_KEY", "sk-test-native-0123456789"),
            ("OPENAI_BASE_URL", url.as_str()),
        ])))
        .expect("registry"),
    );
    let m = member("name = \"s\"\ntype = \"web_search\"\nmodel = \"openai:gpt-4.1\"\n");
    let out = build_member(&m, &deps(reg), None)
        .expect("built")
        .execute("Search A", &ctx())
        .await;
    assert_eq!(
        out.content,
        "Answer A.\n\nSources:\n- A — https://a.example/"
    );
    let sent = fake.requests();
    assert_eq!(sent[0].path, RESPONSES_PATH);
    assert_eq!(sent[0].body["tools"], json!([{"type": "web_search"}]));
    assert_eq!(sent[0].body["input"][0]["role"], "system");
}

#[tokio::test]
async fn mock_native_members_work_offline_and_say_they_are_made_up() {
    let toml_src = r#"
[team]
team_id = "m"
team_name = "Mock Team"
[team.leader]
model = "mock:leader"
[[team.members]]
name = "searcher"
type = "web_search"
model = "mock:searcher"
[[team.members]]
name = "coder"
type = "code_execution"
model = "mock:coder"
"#;
    let out = agents(toml_src, mock_registry())
        .run_round("Compare async runtimes", &ctx())
        .await
        .expect("mock round");
    assert_eq!(out.member_submissions.len(), 2);
    let by_name = |n: &str| {
        out.member_submissions
            .iter()
            .find(|s| s.agent_name == n)
            .expect("submission")
    };
    let s = by_name("searcher");
    assert_eq!(s.status, MemberStatus::Success);
    assert!(
        s.content
            .contains("[mock web_search: offline, nothing was searched; no sources]"),
        "{}",
        s.content
    );
    let c = by_name("coder");
    assert!(
        c.content
            .contains("[mock code_execution: offline, no code was run]"),
        "{}",
        c.content
    );
    assert_eq!(c.agent_type, "code_execution");
}

#[tokio::test]
async fn preflight_with_the_registry_reads_the_provider_kind() {
    let openai_like = FakeLlm::openai().await;
    let claude_like = FakeLlm::anthropic().await;
    let reg = registry(&[
        ("local", &openai_like, Wire::OpenAi),
        ("claude", &claude_like, Wire::Anthropic),
    ]);
    let ok =
        member("name = \"c\"\ntype = \"code_execution\"\nmodel = \"claude:claude-haiku-4-5\"\n");
    assert!(mixseek_agents::check_member_with_registry(&ok, &reg).is_ok());
    // A fallback without the tool is refused too.
    let bad = member(
        "name = \"c\"\ntype = \"code_execution\"\nmodel = \"claude:claude-haiku-4-5\"\nfallback_models = [\"local:llama3\"]\n",
    );
    assert!(mixseek_agents::check_member(&bad).is_ok());
    let e = mixseek_agents::check_member_with_registry(&bad, &reg).expect_err("local");
    assert!(
        e.to_string().starts_with(
            "member `c`: type = \"code_execution\" cannot use model `local:llama3`: provider `local`"
        ),
        "{e}"
    );
    assert!(
        e.hint()
            .is_some_and(|h| h.contains("type = \"command\" member")),
        "{e:?}"
    );
    assert_eq!(openai_like.request_count() + claude_like.request_count(), 0);
}
