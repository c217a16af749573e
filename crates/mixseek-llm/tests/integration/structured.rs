//! Structured output: parse → validate → check → repair, and the capability fallback.

use super::*;
use mixseek_llm::{ChatRequest, ErrorKind, StructuredOptions, generate_json, generate_structured};
use mixseek_testkit::Reply;
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize, schemars::JsonSchema, PartialEq)]
struct Verdict {
    score: f64,
    comment: String,
}

fn score_check() -> StructuredOptions<Verdict> {
    StructuredOptions::default().with_check(|v: &Verdict| {
        if (0.0..=100.0).contains(&v.score) {
            Ok(())
        } else {
            Err(format!("score {} is outside 0..=100", v.score))
        }
    })
}

#[tokio::test]
async fn a_valid_first_answer_needs_no_repair_and_uses_json_schema() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::json(json!({"score": 80.5, "comment": "good"})));
    let reg = openai_registry(&fake, fast());
    let model = reg.model("openai:gpt-4o").expect("model");
    let out =
        generate_structured::<Verdict>(model.as_ref(), ChatRequest::user("rate"), score_check())
            .await
            .expect("ok");
    assert_eq!(
        out.value,
        Verdict {
            score: 80.5,
            comment: "good".into()
        }
    );
    assert_eq!((out.repairs, out.attempts), (0, 1));
    let rf = &fake.requests()[0].body["response_format"];
    assert_eq!(rf["type"], "json_schema");
    assert_eq!(rf["json_schema"]["name"], "Verdict");
    assert_eq!(
        rf["json_schema"]["schema"]["required"],
        json!(["score", "comment"])
    );
}

#[tokio::test]
async fn invalid_json_is_repaired_by_showing_the_raw_output_and_error() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::text("{\"score\": 80, oops"));
    fake.push(Reply::json(json!({"score": 80, "comment": "fixed"})));
    let reg = openai_registry(&fake, fast());
    let model = reg.model("openai:gpt-4o").expect("model");
    let out = generate_structured::<Verdict>(
        model.as_ref(),
        ChatRequest::user("rate").with_system("judge"),
        score_check(),
    )
    .await
    .expect("repaired");
    assert_eq!(out.value.comment, "fixed");
    assert_eq!((out.repairs, out.attempts, out.usage.requests), (1, 2, 2));
    let repair = &fake.requests()[1].body["messages"];
    let msgs = repair.as_array().expect("messages");
    assert_eq!(
        msgs.len(),
        4,
        "system, user, assistant raw output, user repair: {repair}"
    );
    assert_eq!(
        msgs[2],
        json!({"role": "assistant", "content": "{\"score\": 80, oops"})
    );
    let instruction = msgs[3]["content"].as_str().expect("text");
    assert!(instruction.contains("not valid JSON"), "{instruction}");
}

#[tokio::test]
async fn schema_violations_are_repaired_with_the_failing_path() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::json(json!({"score": "high", "comment": "x"})));
    fake.push(Reply::json(json!({"score": 12, "comment": "x"})));
    let reg = openai_registry(&fake, fast());
    let model = reg.model("openai:gpt-4o").expect("model");
    let out =
        generate_structured::<Verdict>(model.as_ref(), ChatRequest::user("rate"), score_check())
            .await
            .expect("repaired");
    assert_eq!((out.value.score, out.repairs), (12.0, 1));
    let instruction = fake.requests()[1].body["messages"][2]["content"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        instruction.contains("/score") && instruction.contains("schema"),
        "{instruction}"
    );
}

#[tokio::test]
async fn the_callers_check_triggers_repairs_and_the_final_error_carries_raw_output_and_kind() {
    let fake = FakeLlm::openai().await;
    fake.set_default(Reply::json(json!({"score": 250, "comment": "too high"})));
    let reg = openai_registry(&fake, fast());
    let model = reg.model("openai:gpt-4o").expect("model");
    let err =
        generate_structured::<Verdict>(model.as_ref(), ChatRequest::user("rate"), score_check())
            .await
            .expect_err("check fails");
    assert_eq!(err.kind, ErrorKind::Check);
    assert_eq!(
        err.raw_output(),
        Some("{\"score\":250,\"comment\":\"too high\"}")
    );
    assert_eq!(err.attempts, 3, "first answer + 2 repairs");
    assert_eq!(fake.request_count(), 3);
    assert!(
        err.message.contains("outside 0..=100") && err.message.contains("2 repair"),
        "{err}"
    );
    let last = fake.requests()[2].body["messages"].as_array().map(Vec::len);
    assert_eq!(
        last,
        Some(3),
        "each repair starts from the original messages"
    );
}

#[tokio::test]
async fn max_repairs_zero_fails_on_the_first_invalid_answer() {
    let fake = FakeLlm::openai().await;
    fake.set_default(Reply::text("not json at all"));
    let reg = openai_registry(&fake, fast());
    let model = reg.model("openai:gpt-4o").expect("model");
    let err = generate_json(
        model.as_ref(),
        ChatRequest::user("x"),
        "S",
        json!({"type": "object"}),
        StructuredOptions::default().with_max_repairs(0),
    )
    .await
    .expect_err("parse");
    assert_eq!(
        (err.kind, err.raw_output()),
        (ErrorKind::Parse, Some("not json at all"))
    );
    assert_eq!(fake.request_count(), 1);
}

/// What llama-cpp-python's schema grammar lets a small model answer: raw line breaks inside a
/// string (read as escaped), and an answer cut off at `max_tokens` (repaired, with the model
/// told why; the final error says so too).
#[tokio::test]
async fn raw_line_breaks_are_accepted_and_cut_off_answers_are_repaired_as_such() {
    let chat = |content: &str, finish: &str| Reply::Body {
        status: 200,
        body: json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": content},
            "finish_reason": finish}]})
        .to_string(),
    };
    let fake = FakeLlm::openai().await;
    fake.push(chat(
        "{\"score\": 12, \"comment\": \"first line\nsecond line",
        "length",
    ));
    fake.push(chat(
        "{\"score\": 12, \"comment\": \"first line\nsecond line\"}",
        "stop",
    ));
    let reg = openai_registry(&fake, fast());
    let model = reg.model("openai:gpt-4o").expect("model");
    let out =
        generate_structured::<Verdict>(model.as_ref(), ChatRequest::user("rate"), score_check())
            .await
            .expect("the raw line break is read as escaped");
    assert_eq!(out.value.comment, "first line\nsecond line");
    assert_eq!(out.repairs, 1);
    let repair = fake.requests()[1].body["messages"][2]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(repair.contains("EOF while parsing a string"), "{repair}");
    assert!(
        repair.contains("cut off at the output token limit"),
        "{repair}"
    );

    // Cut off inside the last string after every repair: kept, the string closed with `…`.
    fake.set_default(chat(
        "{\"score\": 12, \"comment\": \"again and again",
        "length",
    ));
    let out =
        generate_structured::<Verdict>(model.as_ref(), ChatRequest::user("rate"), score_check())
            .await
            .expect("a cut-off comment is closed once the repairs are used up");
    assert_eq!(
        (out.value.score, out.value.comment.as_str()),
        (12.0, "again and again…")
    );
    assert_eq!(out.repairs, 2);
    assert_eq!(out.raw, "{\"score\": 12, \"comment\": \"again and again");

    // Cut off where closing would invent a value (a number, a missing field): still an error.
    for cut in [
        "{\"comment\": \"fine\", \"score\": 1",
        "{\"score\": 12, \"comm",
    ] {
        fake.set_default(chat(cut, "length"));
        let err = generate_structured::<Verdict>(
            model.as_ref(),
            ChatRequest::user("rate"),
            score_check(),
        )
        .await
        .expect_err("nothing to salvage");
        assert_eq!(err.kind, ErrorKind::Parse, "{cut}: {err}");
    }
    fake.set_default(chat("{\"score\": 12, \"comm", "length"));
    let err =
        generate_structured::<Verdict>(model.as_ref(), ChatRequest::user("rate"), score_check())
            .await
            .expect_err("always cut off");
    assert_eq!(err.kind, ErrorKind::Parse);
    assert!(
        err.message
            .contains("cut off at the output token limit (max_tokens)"),
        "{err}"
    );
}

#[tokio::test]
async fn transport_failures_during_structured_calls_keep_their_kind() {
    let fake = FakeLlm::openai().await;
    fake.set_default(Reply::status(403, "forbidden"));
    let reg = openai_registry(&fake, fast());
    let model = reg.model("openai:gpt-4o").expect("model");
    let err = generate_structured::<Verdict>(
        model.as_ref(),
        ChatRequest::user("x"),
        StructuredOptions::default(),
    )
    .await
    .expect_err("403");
    assert_eq!((err.kind, err.status), (ErrorKind::Permanent, Some(403)));
}

#[tokio::test]
async fn servers_rejecting_json_schema_fall_back_to_json_object_with_the_schema_and_remember_it() {
    let fake = FakeLlm::openai().await;
    fake.reject_response_formats(&["json_schema"]);
    fake.set_default(Reply::json(json!({"score": 50, "comment": "ok"})));
    let reg = registry(
        vec![(
            "vllm",
            ProviderSettings {
                base_url: Some(fake.base_url()),
                ..fast()
            },
        )],
        &[],
    );
    let model = reg.model("vllm:qwen").expect("model");
    let out = generate_structured::<Verdict>(
        model.as_ref(),
        ChatRequest::user("rate").with_system("judge"),
        StructuredOptions::default(),
    )
    .await
    .expect("ok");
    assert_eq!(out.value.score, 50.0);
    assert_eq!(out.attempts, 2, "the rejected attempt counts");
    let sent = fake.requests();
    assert_eq!(sent[0].body["response_format"]["type"], "json_schema");
    // llama.cpp's mode: json_object with the schema, which it enforces with a grammar.
    assert_eq!(
        sent[1].body["response_format"],
        json!({"type": "json_object", "schema": sent[0].body["response_format"]["json_schema"]["schema"]})
    );
    let system = sent[1].body["messages"][0]["content"]
        .as_str()
        .unwrap_or("");
    assert!(
        system.starts_with("judge")
            && system.contains("JSON schema")
            && system.contains("\"score\""),
        "{system}"
    );
    // Remembered: the next call (another model of the same provider) starts with
    // json_object and the schema.
    let other = reg.model("vllm:other").expect("model");
    let again = generate_structured::<Verdict>(
        other.as_ref(),
        ChatRequest::user("rate"),
        StructuredOptions::default(),
    )
    .await
    .expect("ok");
    assert_eq!(again.attempts, 1);
    assert_eq!(
        fake.requests()[2].body["response_format"]["type"],
        "json_object"
    );
    assert!(fake.requests()[2].body["response_format"]["schema"].is_object());
    // Remembered for the process: another registry (as the standalone evaluator builds)
    // talking to the same provider and base URL starts there too.
    let reg2 = registry(
        vec![(
            "vllm",
            ProviderSettings {
                base_url: Some(fake.base_url()),
                ..fast()
            },
        )],
        &[],
    );
    let r = reg2
        .model("vllm:qwen")
        .expect("model")
        .chat(&ChatRequest::user("rate").with_schema("S", json!({"type": "object"})))
        .await
        .expect("ok");
    assert_eq!(r.attempts, 1);
    assert_eq!(
        fake.requests()[3].body["response_format"]["type"],
        "json_object"
    );
}

#[tokio::test]
async fn servers_rejecting_both_formats_get_a_plain_instruction() {
    let fake = FakeLlm::openai().await;
    fake.reject_response_formats(&["json_schema", "json_object"]);
    fake.set_default(Reply::text(
        "```json\n{\"score\": 9, \"comment\": \"fenced\"}\n```",
    ));
    let reg = registry(
        vec![(
            "llamacpp",
            ProviderSettings {
                base_url: Some(fake.base_url()),
                ..fast()
            },
        )],
        &[],
    );
    let model = reg.model("llamacpp:local").expect("model");
    let out = generate_structured::<Verdict>(
        model.as_ref(),
        ChatRequest::user("rate"),
        StructuredOptions::default(),
    )
    .await
    .expect("ok");
    // json_schema, json_object with the schema, json_object, then the instruction alone.
    assert_eq!((out.value.score, out.attempts), (9.0, 4));
    let sent = fake.requests();
    assert!(sent[3].body.get("response_format").is_none());
    assert!(
        sent[3].body["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .contains("JSON schema")
    );
    model
        .chat(&ChatRequest::user("x").with_schema("S", json!({"type": "object"})))
        .await
        .expect("ok");
    assert!(
        fake.requests()[4].body.get("response_format").is_none(),
        "instruction mode is remembered"
    );
    // Plain text calls are unaffected.
    model.chat(&ChatRequest::user("plain")).await.expect("ok");
    assert_eq!(
        fake.requests()[5].body["messages"],
        json!([{"role": "user", "content": "plain"}])
    );
}

#[tokio::test]
async fn other_400s_do_not_trigger_the_capability_fallback() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::status(400, "maximum context length exceeded"));
    let reg = openai_registry(&fake, fast());
    let model = reg.model("openai:gpt-4o").expect("model");
    let err = model
        .chat(&ChatRequest::user("x").with_schema("S", json!({"type": "object"})))
        .await
        .expect_err("400");
    assert_eq!((err.status, err.attempts), (Some(400), 1));
    assert_eq!(fake.request_count(), 1);
}

#[tokio::test]
async fn anthropic_and_gemini_structured_answers_are_repaired_too() {
    let a = FakeLlm::anthropic().await;
    a.push(Reply::json(json!({"score": "x", "comment": "c"})));
    a.push(Reply::json(json!({"score": 1, "comment": "c"})));
    let g = FakeLlm::gemini().await;
    g.push(Reply::text("nope"));
    g.push(Reply::json(json!({"score": 2, "comment": "c"})));
    let reg = registry(
        vec![
            (
                "anthropic",
                ProviderSettings {
                    base_url: Some(a.base_url()),
                    ..fast()
                },
            ),
            (
                "google-gla",
                ProviderSettings {
                    base_url: Some(g.base_url()),
                    ..fast()
                },
            ),
        ],
        &[
            ("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
            ("GOOGLE_API_KEY", GOOGLE_KEY),
        ],
    );
    let ma = reg.model("anthropic:claude-sonnet-4-5").expect("model");
    let oa = generate_structured::<Verdict>(
        ma.as_ref(),
        ChatRequest::user("r"),
        StructuredOptions::default(),
    )
    .await
    .expect("ok");
    assert_eq!((oa.value.score, oa.repairs), (1.0, 1));
    // The repair turn shows the forced tool's input as the assistant's raw output.
    assert_eq!(
        a.requests()[1].body["messages"][1]["content"][0]["text"],
        "{\"score\":\"x\",\"comment\":\"c\"}"
    );
    let mg = reg.model("google-gla:gemini-2.5-flash").expect("model");
    let og = generate_structured::<Verdict>(
        mg.as_ref(),
        ChatRequest::user("r"),
        StructuredOptions::default(),
    )
    .await
    .expect("ok");
    assert_eq!((og.value.score, og.repairs), (2.0, 1));
}
