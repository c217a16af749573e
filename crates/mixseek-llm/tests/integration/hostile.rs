//! Every hostile answer of the testkit ([`Hostile::ALL`]) on every wire (Chat Completions,
//! Messages, generateContent, Responses), for a plain, a tool-calling and a structured
//! request, through the real providers: no panic, the call ends within its time limit,
//! and the result is a sensible answer or an error that says what was wrong.

use super::*;
use mixseek_llm::{
    ChatModel, ChatRequest, ChatResponse, ErrorKind, FinishReason, LlmError, NativeTool, ToolSpec,
};
use mixseek_testkit::{
    Hostile, INVALID_ARGUMENTS, Reply, UNKNOWN_FINISH_REASON, UNKNOWN_TOOL, Wire,
};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// The call's time limit in every case.
const LIMIT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    OpenAi,
    Anthropic,
    Gemini,
    Responses,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    Tools,
    Structured,
}

fn request(api: Api, kind: Kind) -> ChatRequest {
    let mut r = match kind {
        Kind::Plain => ChatRequest::user("hi"),
        Kind::Tools => ChatRequest::user("delegate").with_tools(vec![ToolSpec {
            name: "delegate_to_a".into(),
            description: "Ask A".into(),
            parameters: json!({"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]}),
        }]),
        Kind::Structured => ChatRequest::user("rate").with_schema(
            "Verdict",
            json!({"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}),
        ),
    };
    if api == Api::Responses {
        // Native tools send the request to the Responses API.
        r = r.with_native_tools(vec![NativeTool::web_search()]);
    }
    r.with_timeout(LIMIT)
}

/// The model of `api` on `fake`, with two attempts per call.
fn model(api: Api, fake: &FakeLlm) -> Arc<dyn ChatModel> {
    let settings = ProviderSettings {
        max_attempts: 2,
        ..fast()
    };
    let url = fake.base_url();
    let (reg, id) = match api {
        Api::OpenAi => (
            registry(
                vec![(
                    "local",
                    ProviderSettings {
                        base_url: Some(url),
                        ..settings
                    },
                )],
                &[],
            ),
            "local:m",
        ),
        Api::Responses => (
            registry(
                vec![("openai", settings)],
                &[
                    ("OPENAI_API_KEY", OPENAI_KEY),
                    ("OPENAI_BASE_URL", url.as_str()),
                ],
            ),
            "openai:gpt-4.1",
        ),
        Api::Anthropic => (
            registry(
                vec![(
                    "anthropic",
                    ProviderSettings {
                        base_url: Some(url),
                        ..settings
                    },
                )],
                &[("ANTHROPIC_API_KEY", ANTHROPIC_KEY)],
            ),
            "anthropic:claude-haiku-4-5",
        ),
        Api::Gemini => (
            registry(
                vec![(
                    "google-gla",
                    ProviderSettings {
                        base_url: Some(url),
                        ..settings
                    },
                )],
                &[("GOOGLE_API_KEY", GOOGLE_KEY)],
            ),
            "google-gla:gemini-2.5-flash",
        ),
    };
    reg.model(id).expect("model")
}

/// An error of `kind` whose message holds every one of `words`.
fn expect_error(case: &str, r: &Result<ChatResponse, LlmError>, kind: ErrorKind, words: &[&str]) {
    match r {
        Ok(resp) => panic!("{case}: expected a {kind} error, got {resp:?}"),
        Err(e) => {
            assert_eq!(e.kind, kind, "{case}: {e}");
            let msg = e.to_string();
            for w in words {
                assert!(msg.contains(w), "{case}: `{w}` missing from: {msg}");
            }
            for secret in [OPENAI_KEY, ANTHROPIC_KEY, GOOGLE_KEY] {
                assert!(!msg.contains(secret), "{case}: key in {msg}");
            }
        }
    }
}

fn expect_ok<'a>(case: &str, r: &'a Result<ChatResponse, LlmError>) -> &'a ChatResponse {
    match r {
        Ok(resp) => resp,
        Err(e) => panic!("{case}: expected an answer, got {e}"),
    }
}

/// The name of the answer's main list on `api`.
fn main_field(api: Api) -> &'static str {
    match api {
        Api::OpenAi => "`choices`",
        Api::Anthropic => "`content`",
        Api::Gemini => "`candidates`",
        Api::Responses => "`output`",
    }
}

fn check(api: Api, kind: Kind, h: Hostile, r: &Result<ChatResponse, LlmError>) {
    let case = format!("{api:?} {kind:?} {h:?}");
    let case = case.as_str();
    match h {
        Hostile::MissingField
        | Hostile::NullField
        | Hostile::StringForList
        | Hostile::ObjectForList => expect_error(case, r, ErrorKind::Parse, &[main_field(api)]),
        Hostile::NullItem => {
            let item = match api {
                Api::OpenAi => "`message`",
                Api::Anthropic => "content block",
                Api::Gemini => "first candidate",
                Api::Responses => "output item",
            };
            expect_error(case, r, ErrorKind::Parse, &[item, "null"]);
        }
        Hostile::EmptyList => match api {
            Api::OpenAi | Api::Gemini => {
                expect_error(case, r, ErrorKind::Parse, &[main_field(api), "empty"]);
            }
            // An empty content list is a valid (empty) answer on these wires.
            Api::Anthropic | Api::Responses => {
                let resp = expect_ok(case, r);
                assert_eq!(resp.text, None, "{case}");
                assert!(resp.tool_calls.is_empty(), "{case}");
            }
        },
        Hostile::NumberForText => expect_error(case, r, ErrorKind::Parse, &["a number, not text"]),
        Hostile::UnknownFinishReason => {
            let resp = expect_ok(case, r);
            let unknown = matches!(&resp.finish_reason, FinishReason::Other(o) if o.eq_ignore_ascii_case(UNKNOWN_FINISH_REASON));
            // Gemini reports tool calls as such whatever its finish reason.
            let gemini_calls = api == Api::Gemini
                && !resp.tool_calls.is_empty()
                && resp.finish_reason == FinishReason::ToolCalls;
            assert!(unknown || gemini_calls, "{case}: {:?}", resp.finish_reason);
        }
        Hostile::UnknownTool => {
            let resp = expect_ok(case, r);
            assert_eq!(
                resp.tool_calls.first().map(|c| c.name.as_str()),
                Some(UNKNOWN_TOOL),
                "{case}"
            );
            assert_eq!(resp.tool_calls[0].arguments, json!({"task": "anything"}));
        }
        Hostile::InvalidArguments | Hostile::NonObjectArguments => {
            let resp = expect_ok(case, r);
            if api == Api::Anthropic && kind == Kind::Structured {
                // The call is of the forced schema tool: its input is the answer (which the
                // schema check of structured output then refuses).
                assert!(resp.text.is_some(), "{case}");
            } else {
                let call = resp.tool_calls.first().unwrap_or_else(|| panic!("{case}"));
                assert!(!call.arguments.is_object(), "{case}: {:?}", call.arguments);
                if h == Hostile::InvalidArguments {
                    assert_eq!(call.arguments, json!(INVALID_ARGUMENTS), "{case}");
                }
            }
        }
        Hostile::UsageWrongTypes
        | Hostile::UsageNegative
        | Hostile::UsageHuge
        | Hostile::UsageMissing => {
            let resp = expect_ok(case, r);
            // Unknown, never 0 silently: the call counts as one without usage.
            assert_eq!(
                (
                    resp.usage.requests,
                    resp.usage.requests_without_usage,
                    resp.usage.input_tokens,
                    resp.usage.output_tokens
                ),
                (1, 1, 0, 0),
                "{case}"
            );
        }
        Hostile::HugeBody => expect_error(
            case,
            r,
            ErrorKind::Parse,
            &["larger than mixseek's limit of 32 MiB", "Content-Length"],
        ),
        Hostile::HugeChunkedBody => expect_error(
            case,
            r,
            ErrorKind::Parse,
            &["larger than mixseek's limit of 32 MiB", "received"],
        ),
        Hostile::InvalidUtf8 => expect_error(case, r, ErrorKind::Parse, &["not valid UTF-8"]),
        Hostile::CutOff => expect_error(case, r, ErrorKind::Parse, &["not JSON", "EOF"]),
        Hostile::ShortBody => expect_error(case, r, ErrorKind::Transport, &["broke off"]),
        Hostile::Reset => {
            expect_error(case, r, ErrorKind::Transport, &[]);
            let msg = r
                .as_ref()
                .err()
                .map(|e| e.message.clone())
                .unwrap_or_default();
            assert!(
                msg.contains("broke off") || msg.contains("reset") || msg.contains("connection"),
                "{case}: {msg}"
            );
        }
        Hostile::Trickle => {
            expect_error(case, r, ErrorKind::Timeout, &["time limit of 2.0 s"]);
        }
        Hostile::EmptyBody => expect_error(case, r, ErrorKind::Parse, &["empty"]),
        Hostile::Html => expect_error(case, r, ErrorKind::Parse, &["HTML", "base_url"]),
        Hostile::Status299 => {
            let resp = expect_ok(case, r);
            assert!(
                resp.text.is_some() || !resp.tool_calls.is_empty(),
                "{case}: {resp:?}"
            );
        }
        Hostile::Status600 => {
            expect_error(
                case,
                r,
                ErrorKind::Permanent,
                &["(HTTP 600)", "no HTTP standard"],
            );
        }
        Hostile::Informational => {
            expect_error(case, r, ErrorKind::Transport, &[]);
        }
    }
}

async fn run_case(api: Api, kind: Kind, h: Hostile) {
    let wire = match api {
        Api::OpenAi | Api::Responses => Wire::OpenAi,
        Api::Anthropic => Wire::Anthropic,
        Api::Gemini => Wire::Gemini,
    };
    let fake = FakeLlm::start(wire).await;
    // Every attempt meets the hostile answer.
    fake.set_default(Reply::Hostile(h));
    let model = model(api, &fake);
    let req = request(api, kind);
    // The guard is generous: a call that respects its limit ends well within it.
    let r = tokio::time::timeout(LIMIT + Duration::from_secs(10), model.chat(&req))
        .await
        .unwrap_or_else(|_| panic!("{api:?} {kind:?} {h:?}: the call outlived its time limit"));
    check(api, kind, h, &r);
    let expected_path = if api == Api::Responses {
        "/v1/responses"
    } else {
        ""
    };
    assert!(
        fake.requests()
            .first()
            .is_some_and(|q| q.path.ends_with(expected_path)),
        "{api:?} {kind:?} {h:?}: the request went elsewhere"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hostile_answer_on_every_wire_ends_in_an_answer_or_a_clear_error() {
    let limit = Arc::new(tokio::sync::Semaphore::new(8));
    let mut set = tokio::task::JoinSet::new();
    let mut cases = 0;
    for api in [Api::OpenAi, Api::Anthropic, Api::Gemini, Api::Responses] {
        for kind in [Kind::Plain, Kind::Tools, Kind::Structured] {
            for h in Hostile::ALL {
                let (h, limit) = (*h, limit.clone());
                cases += 1;
                set.spawn(async move {
                    let _permit = limit.acquire_owned().await;
                    run_case(api, kind, h).await;
                });
            }
        }
    }
    let mut failures = Vec::new();
    while let Some(done) = set.join_next().await {
        if let Err(e) = done {
            failures.push(match e.try_into_panic() {
                Ok(p) => p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default(),
                Err(e) => e.to_string(),
            });
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(cases, 4 * 3 * Hostile::ALL.len());
}
