//! The offline `mock:` provider through the registry: text, tools, structured output,
//! failure injection with retries, usage.

use super::*;
use mixseek_core::Role;
use mixseek_llm::{
    CallerTag, ChatRequest, Message, StructuredOptions, ToolSpec, generate_structured,
};
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Judgment {
    should_continue: bool,
    reasoning: String,
    confidence_score: f64,
}

#[tokio::test]
async fn mock_models_need_no_key_and_label_their_answers() {
    let reg = registry(vec![], &[]);
    let model = reg.model("mock:default").expect("model");
    assert!(model.is_mock());
    let r = model
        .chat(&ChatRequest::user("Explain tides"))
        .await
        .expect("ok");
    assert!(r.text_or_empty().contains("mock"), "{}", r.text_or_empty());
    assert!(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
    assert_eq!(
        (r.usage.cost_usd, r.usage.unpriced_requests, r.attempts),
        (0.0, 0, 1)
    );
}

#[tokio::test]
async fn mock_judgment_follows_the_policy_in_the_model_name() {
    let reg = registry(vec![], &[]);
    for (id, expected) in [
        ("mock:judge-stop", false),
        ("mock:judge-continue", true),
        ("mock:judge", true),
    ] {
        let model = reg.model(id).expect("model");
        let req = ChatRequest::user("should we go on?").with_caller(CallerTag::run(
            "e",
            "t",
            1,
            Role::Judgment,
        ));
        let out =
            generate_structured::<Judgment>(model.as_ref(), req, StructuredOptions::default())
                .await
                .expect("valid");
        assert_eq!(out.value.should_continue, expected, "{id}");
        assert!((0.0..=1.0).contains(&out.value.confidence_score));
        assert!(!out.value.reasoning.is_empty());
        assert_eq!(out.repairs, 0);
    }
}

#[tokio::test]
async fn mock_calls_each_tool_once_then_answers() {
    let reg = registry(vec![], &[]);
    let model = reg.model("mock:leader").expect("model");
    let tools = vec![ToolSpec {
        name: "delegate_to_analyst".into(),
        description: "d".into(),
        parameters: json!({"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]}),
    }];
    let mut req = ChatRequest::user("Analyse the market").with_tools(tools);
    let first = model.chat(&req).await.expect("ok");
    assert_eq!(first.tool_calls.len(), 1);
    assert_eq!(first.tool_calls[0].arguments["task"], "Analyse the market");
    req.messages.push(Message::assistant_tool_calls(
        None,
        first.tool_calls.clone(),
    ));
    req.messages.push(Message::tool_result(
        &first.tool_calls[0].id,
        "delegate_to_analyst",
        "the analysis",
    ));
    let second = model.chat(&req).await.expect("ok");
    assert!(second.tool_calls.is_empty());
    assert!(second.text_or_empty().contains("the analysis"));
}

#[tokio::test]
async fn mock_failure_injection_is_retried_and_counted() {
    let reg = registry(vec![("mock", fast())], &[]);
    let model = reg.model("mock:flaky-50pct").expect("model");
    let mut total_attempts = 0;
    let mut ok = 0;
    for i in 0..40 {
        match model.chat(&ChatRequest::user(format!("q{i}"))).await {
            Ok(r) => {
                ok += 1;
                total_attempts += r.attempts;
            }
            Err(e) => total_attempts += e.attempts,
        }
    }
    assert!(
        ok >= 38,
        "6 attempts at 50% should nearly always succeed: {ok}/40"
    );
    assert!(
        total_attempts > 50,
        "failures must have been retried: {total_attempts} attempts"
    );
}

#[tokio::test]
async fn mock_latency_is_applied() {
    let reg = registry(vec![], &[]);
    let r = reg
        .model("mock:slow-120ms")
        .expect("model")
        .chat(&ChatRequest::user("x"))
        .await
        .expect("ok");
    assert!(
        r.latency >= std::time::Duration::from_millis(110),
        "{:?}",
        r.latency
    );
}
