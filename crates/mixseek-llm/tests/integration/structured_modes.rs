//! The structured-output degrade chain of OpenAI-compatible servers (json_schema →
//! json_object with the schema → json_object → instruction), each step taken when the
//! server rejects the previous mode by its message: llama-cpp-python's HTTP 500 and
//! OpenAI-style 400s.

use super::*;
use mixseek_llm::{ChatModel, ChatRequest, ErrorKind};
use mixseek_testkit::{FormatRejection, Reply};
use serde_json::{Value, json};
use std::sync::Arc;

fn schema() -> Value {
    json!({"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]})
}

/// A model of a configured OpenAI-compatible provider `name` on `fake`.
fn local(name: &str, fake: &FakeLlm) -> Arc<dyn ChatModel> {
    registry(
        vec![(
            name,
            ProviderSettings {
                base_url: Some(fake.base_url()),
                ..fast()
            },
        )],
        &[],
    )
    .model(&format!("{name}:m"))
    .expect("model")
}

fn structured() -> ChatRequest {
    ChatRequest::user("rate")
        .with_system("judge")
        .with_schema("Verdict", schema())
}

/// The `response_format` of each request the fake received (`Null` when absent).
fn formats(fake: &FakeLlm) -> Vec<Value> {
    fake.requests()
        .iter()
        .map(|r| {
            r.body
                .get("response_format")
                .cloned()
                .unwrap_or(Value::Null)
        })
        .collect()
}

fn schema_in_system_prompt(fake: &FakeLlm, i: usize) -> bool {
    let req = &fake.requests()[i].body;
    req["messages"][0]["content"].as_str().is_some_and(|s| {
        s.starts_with("judge") && s.contains("JSON schema") && s.contains("\"score\"")
    })
}

#[tokio::test]
async fn llama_cpp_python_500_on_json_schema_degrades_at_once_to_json_object_with_the_schema() {
    let fake = FakeLlm::openai().await;
    fake.reject_response_formats_with(&["json_schema"], FormatRejection::LlamaCppPython500);
    let model = local("llamacpp-py", &fake);
    let r = model.chat(&structured()).await.expect("answer");
    // Two requests, not six retries of a "server error": the 500's message names the mode.
    assert_eq!((r.attempts, fake.request_count()), (2, 2));
    assert_eq!(
        formats(&fake)[1],
        json!({"type": "json_object", "schema": schema()})
    );
    assert!(schema_in_system_prompt(&fake, 1));
    // The fake enforces the schema as llama.cpp's grammar does: the answer follows it.
    let answer: Value = serde_json::from_str(r.text.as_deref().unwrap_or("")).expect("json");
    assert!(answer["score"].is_i64(), "{answer}");
    // Remembered for the provider and base URL.
    let again = model.chat(&structured()).await.expect("answer");
    assert_eq!(again.attempts, 1);
    assert_eq!(formats(&fake)[2]["type"], "json_object");
}

#[tokio::test]
async fn each_step_of_the_chain_is_taken_only_when_the_previous_mode_is_rejected() {
    type Case = (&'static [&'static str], FormatRejection, usize);
    // (modes the server rejects, how, requests until one is accepted)
    let cases: &[Case] = &[
        (&[], FormatRejection::OpenAi400, 1),
        (&["json_schema"], FormatRejection::OpenAi400, 2),
        (&["json_schema"], FormatRejection::LlamaCppPython500, 2),
        (
            &["json_schema", "json_object+schema"],
            FormatRejection::OpenAi400,
            3,
        ),
        (
            &["json_schema", "json_object+schema"],
            FormatRejection::LlamaCppPython500,
            3,
        ),
        (
            &["json_schema", "json_object"],
            FormatRejection::OpenAi400,
            4,
        ),
        (
            &["json_schema", "json_object"],
            FormatRejection::LlamaCppPython500,
            4,
        ),
    ];
    let chain = [
        json!({"type": "json_schema", "json_schema": {"name": "Verdict", "schema": schema(), "strict": false}}),
        json!({"type": "json_object", "schema": schema()}),
        json!({"type": "json_object"}),
        Value::Null,
    ];
    for (i, (rejected, how, requests)) in cases.iter().enumerate() {
        let fake = FakeLlm::openai().await;
        fake.reject_response_formats_with(rejected, *how);
        fake.set_default(Reply::json(json!({"score": 7})));
        let model = local(&format!("chain-{i}"), &fake);
        let r = model
            .chat(&structured())
            .await
            .unwrap_or_else(|e| panic!("{rejected:?} {how:?}: {e}"));
        assert_eq!(r.text.as_deref(), Some("{\"score\":7}"));
        assert_eq!(
            (r.attempts as usize, fake.request_count()),
            (*requests, *requests),
            "{rejected:?} {how:?}"
        );
        assert_eq!(formats(&fake), chain[..*requests], "{rejected:?} {how:?}");
        for step in 1..*requests {
            assert!(
                schema_in_system_prompt(&fake, step),
                "{rejected:?} step {step}"
            );
        }
        // The mode that worked is where the next call starts.
        model.chat(&structured()).await.expect("answer");
        assert_eq!(formats(&fake)[*requests], chain[*requests - 1]);
    }
}

#[tokio::test]
async fn server_errors_that_do_not_name_the_mode_are_retried_not_degraded() {
    let fake = FakeLlm::openai().await;
    fake.script([
        Reply::status(500, "CUDA out of memory"),
        Reply::status(400, "the prompt is too long"),
    ]);
    let model = local("plain-errors", &fake);
    let err = model.chat(&structured()).await.expect_err("400");
    // The 500 was retried with the same mode; the 400 is permanent.
    assert_eq!((err.kind, err.status), (ErrorKind::Permanent, Some(400)));
    assert_eq!(formats(&fake)[0]["type"], "json_schema");
    assert_eq!(formats(&fake)[1]["type"], "json_schema");
    // And nothing was remembered.
    fake.push(Reply::json(json!({"score": 1})));
    model.chat(&structured()).await.expect("answer");
    assert_eq!(formats(&fake)[2]["type"], "json_schema");
}

#[tokio::test]
async fn a_server_rejecting_every_mode_but_instruction_by_500_still_answers() {
    // A 500 naming response_format on every mode: the chain ends with the instruction
    // alone, which has no response_format to reject.
    let fake = FakeLlm::openai().await;
    fake.reject_response_formats_with(
        &["json_schema", "json_object", "text"],
        FormatRejection::LlamaCppPython500,
    );
    fake.set_default(Reply::text("{\"score\": 3}"));
    let model = local("all-500", &fake);
    let r = model.chat(&structured()).await.expect("answer");
    assert_eq!((r.attempts, r.text.as_deref()), (4, Some("{\"score\": 3}")));
    assert_eq!(formats(&fake)[3], Value::Null);
}
