//! Provider-native tools (web search, code execution) on each wire against its fake server:
//! the exact tool objects and headers sent, the parsing of server-tool answers, and the
//! Gemini thought signature echoed back.

use super::*;
use mixseek_config::ProviderKind;
use mixseek_llm::{
    CODE_EXECUTION_BETA, ChatRequest, ErrorKind, FinishReason, Message, NativeTool, ToolSpec,
    WebSearchOptions,
};
use mixseek_testkit::{RESPONSES_PATH, Reply, USAGE_INPUT, USAGE_OUTPUT, fake_signature};
use serde_json::json;

fn search_options() -> NativeTool {
    NativeTool::WebSearch(WebSearchOptions {
        max_uses: Some(4),
        allowed_domains: vec!["docs.rs".into()],
        blocked_domains: Vec::new(),
    })
}

fn anthropic_registry(fake: &FakeLlm) -> ModelRegistry {
    let url = fake.base_url();
    registry(
        Vec::new(),
        &[
            ("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
            ("ANTHROPIC_BASE_URL", url.as_str()),
        ],
    )
}

fn gemini_registry(fake: &FakeLlm) -> ModelRegistry {
    let url = fake.base_url();
    registry(
        Vec::new(),
        &[
            ("GOOGLE_API_KEY", GOOGLE_KEY),
            ("GOOGLE_GLA_BASE_URL", url.as_str()),
        ],
    )
}

#[tokio::test]
async fn anthropic_sends_server_tools_and_parses_their_blocks() {
    let fake = FakeLlm::anthropic().await;
    fake.push(Reply::web_search(
        "rust 2024 edition",
        &[("https://doc.rust-lang.org/edition-guide/", "Edition Guide")],
        "The 2024 edition shipped with Rust 1.85.",
    ));
    fake.push(Reply::code_execution(
        "python3 -c 'print(sum(range(10)))'",
        "45\n",
        "The sum is 45.",
    ));
    let reg = anthropic_registry(&fake);
    let model = reg.model("anthropic:claude-haiku-4-5").expect("model");

    let search = ChatRequest::user("When did the 2024 edition ship?")
        .with_native_tools(vec![search_options()]);
    let r = model.chat(&search).await.expect("search answer");
    assert_eq!(
        r.text.as_deref(),
        Some(
            "The 2024 edition shipped with Rust 1.85.\n\nSources:\n- Edition Guide — https://doc.rust-lang.org/edition-guide/"
        )
    );
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(
        (r.usage.input_tokens, r.usage.output_tokens, r.attempts),
        (USAGE_INPUT, USAGE_OUTPUT, 1)
    );

    let code = ChatRequest::user("Sum 0..10").with_native_tools(vec![NativeTool::CodeExecution]);
    let r = model.chat(&code).await.expect("code answer");
    assert_eq!(
        r.text.as_deref(),
        Some(
            "```bash\npython3 -c 'print(sum(range(10)))'\n```\n\nOutput:\n```\n45\n```\n\nThe sum is 45."
        )
    );

    let sent = fake.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[0].body["tools"],
        json!([{"type": "web_search_20250305", "name": "web_search", "max_uses": 4, "allowed_domains": ["docs.rs"]}])
    );
    assert!(sent[0].body.get("tool_choice").is_none());
    assert_eq!(sent[0].header("anthropic-beta"), None);
    assert_eq!(
        sent[1].body["tools"],
        json!([{"type": "code_execution_20250825", "name": "code_execution"}])
    );
    assert_eq!(sent[1].header("anthropic-beta"), Some(CODE_EXECUTION_BETA));
    assert_eq!(sent[1].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent[1].header("x-api-key"), Some(ANTHROPIC_KEY));
}

#[tokio::test]
async fn anthropic_pause_turn_is_continued_within_the_call() {
    let fake = FakeLlm::anthropic().await;
    fake.push(Reply::PauseTurn {
        query: "first".into(),
    });
    fake.push(Reply::web_search(
        "second",
        &[("https://a.example/", "A")],
        "Done.",
    ));
    let reg = anthropic_registry(&fake);
    let model = reg.model("anthropic:claude-sonnet-4-5").expect("model");
    let req = ChatRequest::user("research").with_native_tools(vec![NativeTool::web_search()]);
    let r = model.chat(&req).await.expect("answer");
    assert_eq!(
        r.text.as_deref(),
        Some("Done.\n\nSources:\n- A — https://a.example/")
    );
    assert_eq!(r.attempts, 2);
    // Both parts' usage.
    assert_eq!(
        (r.usage.input_tokens, r.usage.output_tokens),
        (2 * USAGE_INPUT, 2 * USAGE_OUTPUT)
    );
    let sent = fake.requests();
    assert_eq!(sent.len(), 2);
    // The paused turn goes back as the assistant's message.
    let msgs = sent[1].body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["content"][0]["type"], "server_tool_use");
    assert_eq!(msgs[1]["content"][0]["input"], json!({"query": "first"}));
}

#[tokio::test]
async fn gemini_sends_google_search_and_code_execution_and_parses_parts() {
    let fake = FakeLlm::gemini().await;
    fake.push(Reply::web_search(
        "tokio latest",
        &[("https://tokio.rs/blog", "tokio.rs")],
        "Tokio 1.48 is out.",
    ));
    fake.push(Reply::code_execution(
        "print(2**16)",
        "65536\n",
        "2^16 = 65536.",
    ));
    let reg = gemini_registry(&fake);
    let model = reg.model("google-gla:gemini-2.5-flash").expect("model");

    let r = model
        .chat(&ChatRequest::user("tokio?").with_native_tools(vec![NativeTool::web_search()]))
        .await
        .expect("search");
    assert_eq!(
        r.text.as_deref(),
        Some("Tokio 1.48 is out.\n\nSources:\n- tokio.rs — https://tokio.rs/blog")
    );
    let r = model
        .chat(&ChatRequest::user("2^16?").with_native_tools(vec![NativeTool::CodeExecution]))
        .await
        .expect("code");
    assert_eq!(
        r.text.as_deref(),
        Some("```python\nprint(2**16)\n```\n\nOutput:\n```\n65536\n```\n\n2^16 = 65536.")
    );
    assert_eq!(r.usage.input_tokens, USAGE_INPUT);

    let sent = fake.requests();
    assert_eq!(sent[0].body["tools"], json!([{"google_search": {}}]));
    assert_eq!(sent[1].body["tools"], json!([{"code_execution": {}}]));
    assert_eq!(sent[1].header("x-goog-api-key"), Some(GOOGLE_KEY));

    // google_search has no options: refused before sending.
    let e = model
        .chat(&ChatRequest::user("x").with_native_tools(vec![search_options()]))
        .await
        .expect_err("options refused");
    assert_eq!(e.kind, ErrorKind::Config);
    assert!(e.message.contains("provider `google-gla`"), "{e}");
    assert_eq!(fake.request_count(), 2);
}

#[tokio::test]
async fn gemini_thought_signatures_go_back_with_their_calls() {
    let fake = FakeLlm::gemini().await;
    fake.push(Reply::SignedToolCalls(vec![
        ("research".into(), json!({"task": "a"})),
        ("research".into(), json!({"task": "b"})),
    ]));
    fake.push(Reply::text("done"));
    let reg = gemini_registry(&fake);
    let model = reg.model("google-gla:gemini-3-pro-preview").expect("model");
    let tool = ToolSpec {
        name: "research".into(),
        description: "Research".into(),
        parameters: json!({"type": "object", "properties": {"task": {"type": "string"}}}),
    };
    let mut req = ChatRequest::user("go").with_tools(vec![tool]);
    let first = model.chat(&req).await.expect("calls");
    assert_eq!(first.tool_calls.len(), 2);
    assert_eq!(
        first.tool_calls[0].provider_data,
        Some(json!({"thoughtSignature": fake_signature(0)}))
    );
    req.messages.push(Message::assistant_tool_calls(
        None,
        first.tool_calls.clone(),
    ));
    for c in &first.tool_calls {
        req.messages
            .push(Message::tool_result(&c.id, &c.name, "result"));
    }
    model.chat(&req).await.expect("final");
    let sent = fake.requests();
    assert_eq!(
        sent[1].body["contents"][1]["parts"],
        json!([
            {"functionCall": {"name": "research", "args": {"task": "a"}}, "thoughtSignature": fake_signature(0)},
            {"functionCall": {"name": "research", "args": {"task": "b"}}}
        ])
    );
}

#[tokio::test]
async fn openai_native_tools_use_the_responses_api() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::web_search(
        "duckdb release",
        &[("https://duckdb.org/news", "DuckDB News")],
        "DuckDB 1.4 is the latest.",
    ));
    fake.push(Reply::code_execution("print(7*6)", "42\n", "It is 42."));
    fake.push(Reply::text("plain"));
    let reg = openai_registry(&fake, fast());
    let model = reg.model("openai:gpt-4.1").expect("model");

    let mut req = ChatRequest::user("latest duckdb?")
        .with_system("Cite sources")
        .with_native_tools(vec![search_options()]);
    req.params.max_tokens = Some(300);
    req.params.temperature = Some(0.2);
    req.params.seed = Some(9);
    let r = model.chat(&req).await.expect("search");
    assert_eq!(
        r.text.as_deref(),
        Some("DuckDB 1.4 is the latest.\n\nSources:\n- DuckDB News — https://duckdb.org/news")
    );
    assert_eq!(
        (
            r.usage.input_tokens,
            r.usage.output_tokens,
            r.usage.requests
        ),
        (USAGE_INPUT, USAGE_OUTPUT, 1)
    );
    let r = model
        .chat(&ChatRequest::user("7*6?").with_native_tools(vec![NativeTool::CodeExecution]))
        .await
        .expect("code");
    assert_eq!(
        r.text.as_deref(),
        Some("```python\nprint(7*6)\n```\n\nOutput:\n```\n42\n```\n\nIt is 42.")
    );
    // Without native tools: Chat Completions as before.
    let r = model.chat(&ChatRequest::user("hi")).await.expect("plain");
    assert_eq!(r.text.as_deref(), Some("plain"));

    let sent = fake.requests();
    assert_eq!(sent[0].path, RESPONSES_PATH);
    assert_eq!(
        sent[0].header("authorization"),
        Some(format!("Bearer {OPENAI_KEY}").as_str())
    );
    assert_eq!(
        sent[0].body,
        json!({
            "model": "gpt-4.1",
            "input": [{"role": "system", "content": "Cite sources"}, {"role": "user", "content": "latest duckdb?"}],
            "store": false,
            "tools": [{"type": "web_search", "filters": {"allowed_domains": ["docs.rs"]}}],
            "max_tool_calls": 4,
            "temperature": 0.2,
            "max_output_tokens": 300
        })
    );
    assert_eq!(sent[1].path, RESPONSES_PATH);
    assert_eq!(
        sent[1].body["tools"],
        json!([{"type": "code_interpreter", "container": {"type": "auto"}}])
    );
    assert_eq!(
        sent[1].body["include"],
        json!(["code_interpreter_call.outputs"])
    );
    assert_eq!(sent[2].path, "/v1/chat/completions");
}

#[tokio::test]
async fn openai_compatible_servers_refuse_native_tools_without_sending() {
    let fake = FakeLlm::openai().await;
    let reg = registry(
        vec![(
            "local",
            ProviderSettings {
                kind: Some(ProviderKind::OpenaiCompatible),
                base_url: Some(fake.base_url()),
                ..fast()
            },
        )],
        &[],
    );
    let model = reg.model("local:llama3").expect("model");
    let e = model
        .chat(&ChatRequest::user("x").with_native_tools(vec![NativeTool::web_search()]))
        .await
        .expect_err("refused");
    assert_eq!(e.kind, ErrorKind::Config);
    assert_eq!(e.attempts, 1);
    assert!(
        e.message
            .contains("provider `local` speaks the OpenAI-compatible Chat Completions API"),
        "{e}"
    );
    assert_eq!(fake.request_count(), 0);
    assert!(
        reg.native_tool_support("local:llama3", &NativeTool::CodeExecution)
            .is_err()
    );
    assert_eq!(
        reg.native_tool_support("openai:gpt-4.1", &NativeTool::CodeExecution),
        Ok(())
    );
}

#[tokio::test]
async fn native_tools_are_part_of_the_cache_key() {
    let a = ChatRequest::user("same");
    let b = ChatRequest::user("same").with_native_tools(vec![NativeTool::web_search()]);
    assert_ne!(
        mixseek_llm::ResponseCache::key("openai", "http://x", "m", &a),
        mixseek_llm::ResponseCache::key("openai", "http://x", "m", &b)
    );
}
