//! `grok-responses:` (xAI through the OpenAI Responses API) against the fake OpenAI server's
//! `POST /v1/responses`: every call goes there — plain text, structured output, function
//! tools, native web search — with usage, errors, retries and key masking as elsewhere.

use super::*;
use mixseek_llm::{
    ChatRequest, ErrorKind, FinishReason, Message, NativeTool, StructuredOptions, ToolCall,
    ToolSpec, WebSearchOptions, generate_json,
};
use mixseek_testkit::{RESPONSES_PATH, Reply, USAGE_INPUT, USAGE_OUTPUT};
use serde_json::json;
use std::time::{Duration, Instant};

const GROK_KEY: &str = "xai-test-0123456789abcdefghij";

/// A registry whose `grok-responses` provider is the fake server (`[providers.grok-responses]
/// base_url`), with the original's `GROK_API_KEY`.
fn grok_registry(fake: &FakeLlm) -> ModelRegistry {
    let s = ProviderSettings {
        base_url: Some(fake.base_url()),
        ..fast()
    };
    registry(vec![("grok-responses", s)], &[("GROK_API_KEY", GROK_KEY)])
}

#[tokio::test]
async fn plain_text_goes_to_the_responses_api_with_usage_and_cost() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::text("Hello from Grok"));
    let reg = grok_registry(&fake);
    let model = reg.model("grok-responses:grok-4").expect("model");
    let mut req = ChatRequest::user("Say hello").with_system("Be brief");
    req.params.temperature = Some(0.3);
    req.params.top_p = Some(0.9);
    req.params.max_tokens = Some(256);
    // The Responses API has no seed or stop: not sent.
    req.params.seed = Some(7);
    req.params.stop = vec!["END".into()];
    let r = model.chat(&req).await.expect("answer");
    assert_eq!(r.text.as_deref(), Some("Hello from Grok"));
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(
        (
            r.usage.input_tokens,
            r.usage.output_tokens,
            r.usage.requests
        ),
        (USAGE_INPUT, USAGE_OUTPUT, 1)
    );
    // grok-responses: shares grok: prices (grok-4: 3 in, 15 out per million).
    let expected_cost = (USAGE_INPUT as f64 * 3.0 + USAGE_OUTPUT as f64 * 15.0) / 1e6;
    assert!(
        (r.usage.cost_usd - expected_cost).abs() < 1e-12,
        "{}",
        r.usage.cost_usd
    );
    assert_eq!(r.model, "grok-responses:grok-4");

    let sent = fake.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, RESPONSES_PATH);
    assert_eq!(
        sent[0].header("authorization"),
        Some(format!("Bearer {GROK_KEY}").as_str())
    );
    assert_eq!(
        sent[0].body,
        json!({
            "model": "grok-4",
            "input": [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Say hello"}],
            "store": false,
            "temperature": 0.3,
            "top_p": 0.9,
            "max_output_tokens": 256
        })
    );
}

#[tokio::test]
async fn structured_output_asks_text_format_json_schema_and_parses_the_answer() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::json(json!({"score": 83})));
    let reg = grok_registry(&fake);
    let model = reg.model("grok-responses:grok-4-1-fast").expect("model");
    let schema = json!({"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]});
    let out = generate_json(
        model.as_ref(),
        ChatRequest::user("rate it").with_system("judge"),
        "Score",
        schema.clone(),
        StructuredOptions::default(),
    )
    .await
    .expect("structured");
    assert_eq!(out.value, json!({"score": 83}));
    assert_eq!(
        (out.usage.input_tokens, out.usage.output_tokens),
        (USAGE_INPUT, USAGE_OUTPUT)
    );
    let sent = fake.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, RESPONSES_PATH);
    let b = &sent[0].body;
    assert_eq!(b["model"], "grok-4-1-fast");
    assert_eq!(
        b["text"],
        json!({"format": {"type": "json_schema", "name": "Score", "schema": schema, "strict": false}})
    );
    assert_eq!(b["input"][0]["role"], "system");
    assert_eq!(b["input"].as_array().map(Vec::len), Some(2));
    assert!(b.get("response_format").is_none());
}

#[tokio::test]
async fn function_tools_round_trip_as_function_call_items() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::tool_call("research", json!({"task": "rust"})));
    fake.push(Reply::text("done"));
    let reg = grok_registry(&fake);
    let model = reg.model("grok-responses:grok-4").expect("model");
    let research = ToolSpec {
        name: "research".into(),
        description: "Research a topic".into(),
        parameters: json!({"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]}),
    };
    let mut req = ChatRequest::user("go").with_tools(vec![research]);
    let first = model.chat(&req).await.expect("tool call");
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    let call: &ToolCall = first.tool_calls.first().expect("a call");
    assert_eq!(
        (call.name.as_str(), &call.arguments),
        ("research", &json!({"task": "rust"}))
    );
    req.messages.push(Message::assistant_tool_calls(
        None,
        first.tool_calls.clone(),
    ));
    req.messages.push(Message::tool_result(
        call.id.clone(),
        "research",
        "found it",
    ));
    let second = model.chat(&req).await.expect("answer");
    assert_eq!(second.text.as_deref(), Some("done"));

    let sent = fake.requests();
    assert!(sent.iter().all(|s| s.path == RESPONSES_PATH));
    assert_eq!(
        sent[0].body["tools"],
        json!([{"type": "function", "name": "research", "description": "Research a topic",
            "parameters": {"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]}}])
    );
    assert_eq!(
        sent[1].body["input"][1],
        json!({"type": "function_call", "call_id": call.id, "name": "research", "arguments": "{\"task\":\"rust\"}"})
    );
    assert_eq!(
        sent[1].body["input"][2],
        json!({"type": "function_call_output", "call_id": call.id, "output": "found it"})
    );
}

#[tokio::test]
async fn native_web_search_sends_the_built_in_tool_and_refuses_domain_filters() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::web_search(
        "rust 2024 edition",
        &[("https://x.com/rustlang/status/1", "Rust on X")],
        "It shipped with Rust 1.85.",
    ));
    let reg = grok_registry(&fake);
    let model = reg.model("grok-responses:grok-4-1-fast").expect("model");
    let mut req = ChatRequest::user("When did the 2024 edition ship?")
        .with_native_tools(vec![NativeTool::web_search()]);
    req.params.temperature = Some(0.5);
    req.params.max_tokens = Some(6144);
    let r = model.chat(&req).await.expect("answer");
    assert_eq!(
        r.text.as_deref(),
        Some(
            "It shipped with Rust 1.85.\n\nSources:\n- Rust on X — https://x.com/rustlang/status/1"
        )
    );
    let sent = fake.requests();
    assert_eq!(sent[0].path, RESPONSES_PATH);
    assert_eq!(
        sent[0].body,
        json!({
            "model": "grok-4-1-fast",
            "input": [{"role": "user", "content": "When did the 2024 edition ship?"}],
            "store": false,
            "tools": [{"type": "web_search"}],
            "temperature": 0.5,
            "max_output_tokens": 6144
        })
    );

    let filtered =
        ChatRequest::user("x").with_native_tools(vec![NativeTool::WebSearch(WebSearchOptions {
            allowed_domains: vec!["x.com".into()],
            ..WebSearchOptions::default()
        })]);
    let err = model.chat(&filtered).await.expect_err("no domain filters");
    assert_eq!(err.kind, ErrorKind::Config);
    assert!(
        err.to_string().contains("provider `grok-responses` (xAI)"),
        "{err}"
    );
    assert_eq!(fake.request_count(), 1, "nothing sent for the refused call");
}

#[tokio::test]
async fn a_429_with_retry_after_is_waited_for_and_retried() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::rate_limited("1"));
    fake.push(Reply::text("ok"));
    let reg = grok_registry(&fake);
    let started = Instant::now();
    let r = reg
        .model("grok-responses:grok-4")
        .expect("model")
        .chat(&ChatRequest::user("x"))
        .await
        .expect("answer");
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "waited only {:?}",
        started.elapsed()
    );
    assert_eq!((r.attempts, r.text.as_deref()), (2, Some("ok")));
    let sent = fake.requests();
    assert_eq!(sent.len(), 2);
    assert!(sent.iter().all(|s| s.path == RESPONSES_PATH));
}

#[tokio::test]
async fn errors_name_the_provider_and_mask_the_key() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::status(
        401,
        format!("Incorrect API key provided: {GROK_KEY}"),
    ));
    let reg = grok_registry(&fake);
    let err = reg
        .model("grok-responses:grok-4")
        .expect("model")
        .chat(&ChatRequest::user("x"))
        .await
        .expect_err("401");
    assert_eq!(
        (err.kind, err.status, err.attempts),
        (ErrorKind::Permanent, Some(401), 1)
    );
    let msg = err.to_string();
    assert!(
        msg.contains("[grok-responses] grok-4")
            && msg.contains("HTTP 401")
            && msg.contains("Incorrect API key provided"),
        "{msg}"
    );
    assert!(!msg.contains(GROK_KEY), "key leaked: {msg}");
    assert_eq!(fake.request_count(), 1);
}

#[tokio::test]
async fn the_key_is_grok_api_key_then_xai_api_key() {
    let reg = registry(vec![], &[("XAI_API_KEY", GROK_KEY)]);
    assert!(reg.check_model("grok-responses:grok-4").is_ok());
    let err = registry(vec![], &[])
        .check_model("grok-responses:grok-4")
        .expect_err("no key");
    assert_eq!(err.kind, ErrorKind::Config);
    assert_eq!(
        err.to_string(),
        "[grok-responses] config error: GROK_API_KEY or XAI_API_KEY environment variable not found"
    );
}
