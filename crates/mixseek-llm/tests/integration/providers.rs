//! Each provider's request body and response parsing against its fake server.

use super::*;
use mixseek_config::ProviderKind;
use mixseek_core::Role;
use mixseek_llm::{
    CallerTag, ChatRequest, ErrorKind, FinishReason, Message, StructuredOptions, ToolSpec,
    generate_json,
};
use mixseek_testkit::{Reply, USAGE_INPUT, USAGE_OUTPUT};
use serde_json::json;

fn tool() -> ToolSpec {
    ToolSpec {
        name: "research".into(),
        description: "Research a topic".into(),
        parameters: json!({"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]}),
    }
}

#[tokio::test]
async fn openai_sends_chat_completions_and_parses_text_usage_and_cost() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::text("Hello there"));
    let reg = openai_registry(&fake, fast());
    let model = reg.model("openai:gpt-4o").expect("model");
    let mut req = ChatRequest::user("Say hello").with_system("Be brief");
    req.params.temperature = Some(0.3);
    req.params.seed = Some(42);
    let r = model.chat(&req).await.expect("answer");
    assert_eq!(r.text.as_deref(), Some("Hello there"));
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(
        (
            r.usage.input_tokens,
            r.usage.output_tokens,
            r.usage.requests
        ),
        (USAGE_INPUT, USAGE_OUTPUT, 1)
    );
    let expected_cost = (USAGE_INPUT as f64 * 2.5 + USAGE_OUTPUT as f64 * 10.0) / 1e6;
    assert!(
        (r.usage.cost_usd - expected_cost).abs() < 1e-12,
        "{}",
        r.usage.cost_usd
    );
    assert_eq!(
        (r.attempts, r.model.as_str(), r.cache_hit),
        (1, "openai:gpt-4o", false)
    );

    let sent = fake.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, "/v1/chat/completions");
    assert_eq!(
        sent[0].header("authorization"),
        Some(format!("Bearer {OPENAI_KEY}").as_str())
    );
    assert_eq!(
        sent[0].body,
        json!({
            "model": "gpt-4o",
            "messages": [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Say hello"}],
            "temperature": 0.3,
            "seed": 42
        })
    );
}

#[tokio::test]
async fn openai_tool_calls_round_trip() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::tool_call("research", json!({"task": "rust"})));
    fake.push(Reply::text("done"));
    let reg = openai_registry(&fake, fast());
    let model = reg.model("openai:gpt-4o-mini").expect("model");
    let mut req = ChatRequest::user("go").with_tools(vec![tool()]);
    let first = model.chat(&req).await.expect("tool call");
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    assert_eq!(first.tool_calls.len(), 1);
    assert_eq!(first.tool_calls[0].name, "research");
    assert_eq!(first.tool_calls[0].arguments, json!({"task": "rust"}));
    req.messages.push(Message::assistant_tool_calls(
        None,
        first.tool_calls.clone(),
    ));
    req.messages.push(Message::tool_result(
        &first.tool_calls[0].id,
        "research",
        "facts",
    ));
    let second = model.chat(&req).await.expect("text");
    assert_eq!(second.text.as_deref(), Some("done"));
    let sent = fake.requests();
    assert_eq!(
        sent[0].body["tools"][0],
        json!({"type": "function", "function": {"name": "research", "description": "Research a topic", "parameters": tool().parameters}})
    );
    let msgs = sent[1].body["messages"]
        .as_array()
        .expect("messages")
        .clone();
    assert_eq!(
        msgs[1]["tool_calls"][0]["function"]["arguments"],
        "{\"task\":\"rust\"}"
    );
    assert_eq!(
        msgs[2],
        json!({"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "facts"})
    );
}

#[tokio::test]
async fn anthropic_sends_messages_with_headers_and_forced_schema_tool() {
    let fake = FakeLlm::anthropic().await;
    fake.push(Reply::json(json!({"score": 71})));
    let url = fake.base_url();
    let reg = registry(
        vec![("anthropic", fast())],
        &[
            ("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
            ("ANTHROPIC_BASE_URL", url.as_str()),
        ],
    );
    let model = reg.model("anthropic:claude-sonnet-4-5").expect("model");
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
    assert_eq!(out.value, json!({"score": 71}));
    assert_eq!(out.usage.input_tokens, USAGE_INPUT);
    let sent = fake.requests();
    assert_eq!(sent[0].path, "/v1/messages");
    assert_eq!(sent[0].header("x-api-key"), Some(ANTHROPIC_KEY));
    assert_eq!(sent[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent[0].header("authorization"), None);
    let b = &sent[0].body;
    assert_eq!(b["model"], "claude-sonnet-4-5");
    assert_eq!(b["system"], "judge");
    assert_eq!(b["max_tokens"], 4096);
    assert_eq!(
        b["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "rate it"}]}])
    );
    assert_eq!(b["tool_choice"], json!({"type": "tool", "name": "Score"}));
    assert_eq!(b["tools"][0]["input_schema"], schema);
}

#[tokio::test]
async fn anthropic_tool_calls_and_text() {
    let fake = FakeLlm::anthropic().await;
    fake.push(Reply::ToolCalls(vec![
        ("research".into(), json!({"task": "a"})),
        ("research".into(), json!({"task": "b"})),
    ]));
    fake.push(Reply::text("final"));
    let url = fake.base_url();
    let reg = registry(
        vec![(
            "anthropic",
            ProviderSettings {
                base_url: Some(url),
                ..fast()
            },
        )],
        &[("ANTHROPIC_API_KEY", ANTHROPIC_KEY)],
    );
    let model = reg.model("anthropic:claude-haiku-4-5").expect("model");
    let mut req = ChatRequest::user("go").with_tools(vec![tool()]);
    let first = model.chat(&req).await.expect("calls");
    assert_eq!(first.tool_calls.len(), 2);
    req.messages.push(Message::assistant_tool_calls(
        None,
        first.tool_calls.clone(),
    ));
    for c in &first.tool_calls {
        req.messages.push(Message::tool_result(&c.id, &c.name, "r"));
    }
    let second = model.chat(&req).await.expect("text");
    assert_eq!(second.text.as_deref(), Some("final"));
    let body = &fake.requests()[1].body;
    // Both tool results go back in one user message.
    assert_eq!(body["messages"][2]["role"], "user");
    assert_eq!(
        body["messages"][2]["content"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(
        body["messages"][2]["content"][0]["tool_use_id"],
        first.tool_calls[0].id.as_str()
    );
}

#[tokio::test]
async fn gemini_sends_generate_content_with_key_header_and_response_schema() {
    let fake = FakeLlm::gemini().await;
    fake.push(Reply::json(json!({"ok": true})));
    fake.push(Reply::tool_call("research", json!({"task": "x"})));
    let url = fake.base_url();
    let reg = registry(
        vec![(
            "google-gla",
            ProviderSettings {
                base_url: Some(url),
                ..fast()
            },
        )],
        &[("GOOGLE_API_KEY", GOOGLE_KEY)],
    );
    let model = reg.model("google-gla:gemini-2.5-flash").expect("model");
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false});
    let out = generate_json(
        model.as_ref(),
        ChatRequest::user("check").with_system("sys"),
        "Ok",
        schema,
        StructuredOptions::default(),
    )
    .await
    .expect("structured");
    assert_eq!(out.value, json!({"ok": true}));
    let calls = model
        .chat(&ChatRequest::user("go").with_tools(vec![tool()]))
        .await
        .expect("calls");
    assert_eq!(calls.tool_calls[0].name, "research");
    assert_eq!(calls.tool_calls[0].arguments, json!({"task": "x"}));

    let sent = fake.requests();
    assert_eq!(
        sent[0].path,
        "/v1beta/models/gemini-2.5-flash:generateContent"
    );
    assert_eq!(sent[0].query, None, "the key must not be in the URL");
    assert_eq!(sent[0].header("x-goog-api-key"), Some(GOOGLE_KEY));
    let b = &sent[0].body;
    assert_eq!(b["systemInstruction"], json!({"parts": [{"text": "sys"}]}));
    assert_eq!(
        b["contents"],
        json!([{"role": "user", "parts": [{"text": "check"}]}])
    );
    assert_eq!(
        b["generationConfig"]["responseMimeType"],
        "application/json"
    );
    assert_eq!(
        b["generationConfig"]["responseSchema"],
        json!({"type": "OBJECT", "properties": {"ok": {"type": "BOOLEAN"}}, "propertyOrdering": ["ok"], "required": ["ok"]})
    );
    assert_eq!(
        sent[1].body["tools"][0]["functionDeclarations"][0]["name"],
        "research"
    );
}

#[tokio::test]
async fn grok_and_xai_speak_openai_format_with_either_key() {
    let fake = FakeLlm::openai().await;
    let url = fake.base_url();
    let s = ProviderSettings {
        base_url: Some(url),
        ..fast()
    };
    let reg = registry(
        vec![("grok", s.clone()), ("xai", s)],
        &[("XAI_API_KEY", "xai-test-0123456789abcdef")],
    );
    let r = reg
        .model("grok:grok-3")
        .expect("grok")
        .chat(&ChatRequest::user("hi"))
        .await
        .expect("answer");
    assert_eq!(r.text.as_deref(), Some("fake answer 0"));
    reg.model("xai:grok-3-mini")
        .expect("xai")
        .chat(&ChatRequest::user("hi"))
        .await
        .expect("answer");
    let sent = fake.requests();
    assert_eq!(
        sent[0].header("authorization"),
        Some("Bearer xai-test-0123456789abcdef")
    );
    assert_eq!(sent[1].body["model"], "grok-3-mini");
    // GROK_API_KEY is the original's variable and works too; without either the error names both.
    let reg2 = registry(vec![], &[("GROK_API_KEY", "xai-other-0123456789abcdef")]);
    assert!(reg2.check_model("grok:grok-3").is_ok());
    let err = registry(vec![], &[])
        .check_model("grok:grok-3")
        .expect_err("no key");
    assert_eq!(err.kind, ErrorKind::Config);
    assert!(
        err.to_string().contains("GROK_API_KEY or XAI_API_KEY"),
        "{err}"
    );
}

#[tokio::test]
async fn configured_openai_compatible_provider_without_key_sends_no_auth() {
    let fake = FakeLlm::openai().await;
    let s = ProviderSettings {
        kind: Some(ProviderKind::OpenaiCompatible),
        base_url: Some(fake.base_url()),
        headers: [("X-Title".to_string(), "mixseek".to_string())]
            .into_iter()
            .collect(),
        ..fast()
    };
    let reg = registry(vec![("ollama", s)], &[]);
    let r = reg
        .model("ollama:llama3.2")
        .expect("model")
        .chat(&ChatRequest::user("hi"))
        .await
        .expect("answer");
    assert!(r.text.is_some());
    // Unpriced model: tokens counted, cost unknown.
    assert_eq!((r.usage.unpriced_requests, r.usage.cost_usd), (1, 0.0));
    let sent = fake.requests();
    assert_eq!(sent[0].header("authorization"), None);
    assert_eq!(sent[0].header("x-title"), Some("mixseek"));
    assert_eq!(sent[0].body["model"], "llama3.2");
}

#[tokio::test]
async fn configured_anthropic_and_gemini_kinds_use_their_wire_format() {
    let a = FakeLlm::anthropic().await;
    let g = FakeLlm::gemini().await;
    let reg = registry(
        vec![
            (
                "proxy-claude",
                ProviderSettings {
                    kind: Some(ProviderKind::Anthropic),
                    base_url: Some(a.base_url()),
                    api_key_env: Some("PROXY_KEY".into()),
                    ..fast()
                },
            ),
            (
                "proxy-gemini",
                ProviderSettings {
                    kind: Some(ProviderKind::Gemini),
                    base_url: Some(g.base_url()),
                    ..fast()
                },
            ),
        ],
        &[("PROXY_KEY", "proxy-secret-value")],
    );
    reg.model("proxy-claude:c")
        .expect("model")
        .chat(&ChatRequest::user("x"))
        .await
        .expect("anthropic");
    reg.model("proxy-gemini:g")
        .expect("model")
        .chat(&ChatRequest::user("x"))
        .await
        .expect("gemini");
    assert_eq!(
        a.requests()[0].header("x-api-key"),
        Some("proxy-secret-value")
    );
    assert_eq!(g.requests()[0].path, "/v1beta/models/g:generateContent");
    // A configured api_key_env that is unset is an error naming the variable.
    let err = registry(
        vec![(
            "p",
            ProviderSettings {
                base_url: Some(a.base_url()),
                api_key_env: Some("NOPE_KEY".into()),
                ..fast()
            },
        )],
        &[],
    )
    .model("p:m")
    .err()
    .expect("missing key");
    assert!(
        err.to_string()
            .contains("NOPE_KEY environment variable not found"),
        "{err}"
    );
}

#[tokio::test]
async fn unknown_and_unsupported_prefixes_are_explicit_errors() {
    let reg = registry(
        vec![(
            "vllm",
            ProviderSettings {
                base_url: Some("http://127.0.0.1:9/v1".into()),
                ..fast()
            },
        )],
        &[],
    );
    let err = reg.model("foo:bar").err().expect("unknown");
    assert_eq!(err.kind, ErrorKind::Config);
    let msg = err.to_string();
    assert!(msg.starts_with("[foo]"), "{msg}");
    for known in [
        "anthropic",
        "google-gla",
        "google-vertex",
        "grok",
        "grok-responses",
        "mock",
        "openai",
        "vllm",
        "xai",
    ] {
        assert!(msg.contains(known), "{known} missing from: {msg}");
    }
    assert!(
        reg.model("gpt-4o")
            .err()
            .expect("no prefix")
            .to_string()
            .contains("provider:model")
    );
    let missing = reg.model("openai:gpt-4o").err().expect("missing key");
    assert_eq!(
        missing.to_string(),
        "[openai] config error: OPENAI_API_KEY environment variable not found"
    );
}

#[tokio::test]
async fn permanent_errors_name_provider_model_status_and_message_with_keys_masked() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::status(
        401,
        format!("Incorrect API key provided: {OPENAI_KEY}"),
    ));
    let reg = openai_registry(&fake, fast());
    let err = reg
        .model("openai:gpt-4o")
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
        msg.contains("[openai] gpt-4o")
            && msg.contains("HTTP 401")
            && msg.contains("Incorrect API key provided"),
        "{msg}"
    );
    assert!(!msg.contains(OPENAI_KEY), "key leaked: {msg}");
    assert_eq!(fake.request_count(), 1);
}

#[tokio::test]
async fn missing_usage_is_counted_not_mistaken_for_free() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::without_usage(Reply::text("hi")));
    let reg = openai_registry(&fake, fast());
    let r = reg
        .model("openai:gpt-4o")
        .expect("model")
        .chat(&ChatRequest::user("x").with_caller(CallerTag::role(Role::Member)))
        .await
        .expect("ok");
    assert_eq!(
        (
            r.usage.requests,
            r.usage.requests_without_usage,
            r.usage.input_tokens
        ),
        (1, 1, 0)
    );
}

std::thread_local! {
    static SINK: std::cell::RefCell<Option<Vec<u8>>> = const { std::cell::RefCell::new(None) };
}

/// Writes what the `tracing` subscriber formats into this thread's capture buffer, if any.
struct ThreadSink;

impl std::io::Write for ThreadSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        SINK.with(|s| {
            if let Some(out) = s.borrow_mut().as_mut() {
                out.extend_from_slice(buf);
            }
        });
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Captures the WARN logs emitted on this thread while `f` runs.
///
/// The subscriber is the process-wide default, installed once, writing to a per-thread buffer.
/// A scoped subscriber (`set_default`) is not reliable in a test binary running tests in
/// parallel: while it is the only dispatcher, `tracing` caches a callsite's interest from the
/// default of whichever thread reaches it first, so another test could leave it disabled.
async fn capture_warnings<F: std::future::Future<Output = ()>>(f: F) -> String {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_writer(|| ThreadSink)
            .with_ansi(false)
            .with_max_level(tracing::Level::WARN)
            .finish();
        // Fails only if another global default exists, which this test binary never sets.
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
    SINK.with(|s| *s.borrow_mut() = Some(Vec::new()));
    f.await;
    let out = SINK.with(|s| s.borrow_mut().take()).unwrap_or_default();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn missing_usage_is_warned_about_once_per_provider_and_model() {
    let fake = FakeLlm::openai().await;
    fake.set_default(Reply::without_usage(Reply::text("hi")));
    let local = FakeLlm::openai().await;
    local.set_default(Reply::without_usage(Reply::text("hi")));
    let reg = registry(
        vec![(
            "local",
            ProviderSettings {
                base_url: Some(local.base_url()),
                ..fast()
            },
        )],
        &[
            ("OPENAI_API_KEY", OPENAI_KEY),
            ("OPENAI_BASE_URL", fake.base_url().as_str()),
        ],
    );
    // `#[tokio::test]` polls everything on this thread, so its events land in its buffer.
    let log = capture_warnings(async {
        for id in [
            "openai:gpt-4o",
            "openai:gpt-4o",
            "openai:gpt-4o-mini",
            "local:gpt-4o",
            "local:gpt-4o",
        ] {
            reg.model(id)
                .expect("model")
                .chat(&ChatRequest::user("x"))
                .await
                .expect("ok");
        }
    })
    .await;
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("reported no token usage"))
        .collect();
    assert_eq!(warnings.len(), 3, "one per provider and model:\n{log}");
    for (provider, model) in [
        ("openai", "gpt-4o"),
        ("openai", "gpt-4o-mini"),
        ("local", "gpt-4o"),
    ] {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(&format!("provider={provider}"))
                    && w.contains(&format!("model=\"{model}\""))),
            "{provider}:{model} in\n{log}"
        );
    }
    assert!(log.contains("WARN"), "{log}");
    assert!(!log.contains(OPENAI_KEY));
}
