//! Hostile answers: what a broken or malicious server may send, for every wire the fake
//! servers speak (OpenAI Chat Completions, Anthropic Messages, Gemini generateContent and
//! the OpenAI Responses API). Script one with [`Reply::Hostile`](crate::Reply::Hostile)
//! (or make it the default reply, so that retries meet it too); [`Hostile::ALL`] lists
//! every case.
//!
//! Each JSON case starts from the answer [`Reply::Auto`](crate::Reply::Auto) would give
//! (text, tool calls or a schema sample, with usage) and breaks one thing in it; the wire
//! cases break the HTTP exchange itself (see [`Delivery`]).

use crate::server::{Answer, Delivery, HttpResponse};
use crate::wire::{USAGE_INPUT, USAGE_OUTPUT, Wire, error_response};
use bytes::Bytes;
use serde_json::{Value, json};
use std::sync::OnceLock;
use std::time::Duration;

/// The tool name of [`Hostile::UnknownTool`]'s call (never offered).
pub const UNKNOWN_TOOL: &str = "no_such_tool";
/// The finish reason of [`Hostile::UnknownFinishReason`] (Gemini: upper-case).
pub const UNKNOWN_FINISH_REASON: &str = "cosmic_ray";
/// The arguments of [`Hostile::InvalidArguments`]: JSON cut short.
pub const INVALID_ARGUMENTS: &str = "{\"task\": ";
/// The size of [`Hostile::HugeBody`]'s body: 50 MB.
pub(crate) const HUGE_BODY_BYTES: usize = 50 * 1000 * 1000;
/// How long [`Hostile::Trickle`] waits between two bytes.
pub(crate) const TRICKLE_INTERVAL: Duration = Duration::from_millis(200);

/// One way a server can misbehave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hostile {
    /// The answer's main field is missing (`choices`, `content`, `candidates`, `output`).
    MissingField,
    /// The main field is `null`.
    NullField,
    /// The main field's first item is `null` (OpenAI: `choices[0].message`).
    NullItem,
    /// The main field is a string instead of a list.
    StringForList,
    /// The main field is an object instead of a list.
    ObjectForList,
    /// The main field is an empty list.
    EmptyList,
    /// The answer's text is a number.
    NumberForText,
    /// A finish reason no API defines ([`UNKNOWN_FINISH_REASON`]).
    UnknownFinishReason,
    /// A call of a tool that was not offered ([`UNKNOWN_TOOL`]).
    UnknownTool,
    /// A tool call whose arguments are invalid JSON ([`INVALID_ARGUMENTS`]; where the wire
    /// sends arguments as an object, a string holding that text).
    InvalidArguments,
    /// A tool call whose arguments are JSON but not an object (a JSON string holding a
    /// string; where the wire sends an object, a list).
    NonObjectArguments,
    /// Usage counts of the wrong type (a string, a list).
    UsageWrongTypes,
    /// Negative usage counts.
    UsageNegative,
    /// Huge usage counts (`u64::MAX`, `1e300`).
    UsageHuge,
    /// No usage at all.
    UsageMissing,
    /// A 50 MB answer (`HUGE_BODY_BYTES`) with Content-Length.
    HugeBody,
    /// A 50 MB answer in chunks, without Content-Length.
    HugeChunkedBody,
    /// Bytes that are not UTF-8 inside the answer's JSON.
    InvalidUtf8,
    /// The JSON cut off half-way (Content-Length matches what is sent).
    CutOff,
    /// Content-Length of the whole answer, half of it sent, then the connection closes.
    ShortBody,
    /// Half of the answer, then a connection reset.
    Reset,
    /// The answer one byte every `TRICKLE_INTERVAL`.
    Trickle,
    /// HTTP 200 with an empty body.
    EmptyBody,
    /// HTTP 200 with an HTML page.
    Html,
    /// The normal answer with status 299 (a success code no one uses).
    Status299,
    /// The wire's error body with status 600.
    Status600,
    /// `HTTP/1.1 102 Processing` and nothing after it: the connection closes.
    Informational,
}

impl Hostile {
    /// Every case.
    pub const ALL: &'static [Hostile] = &[
        Hostile::MissingField,
        Hostile::NullField,
        Hostile::NullItem,
        Hostile::StringForList,
        Hostile::ObjectForList,
        Hostile::EmptyList,
        Hostile::NumberForText,
        Hostile::UnknownFinishReason,
        Hostile::UnknownTool,
        Hostile::InvalidArguments,
        Hostile::NonObjectArguments,
        Hostile::UsageWrongTypes,
        Hostile::UsageNegative,
        Hostile::UsageHuge,
        Hostile::UsageMissing,
        Hostile::HugeBody,
        Hostile::HugeChunkedBody,
        Hostile::InvalidUtf8,
        Hostile::CutOff,
        Hostile::ShortBody,
        Hostile::Reset,
        Hostile::Trickle,
        Hostile::EmptyBody,
        Hostile::Html,
        Hostile::Status299,
        Hostile::Status600,
        Hostile::Informational,
    ];
}

/// The API an answer is shaped for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    /// One of the chat wires.
    Chat(Wire),
    /// The OpenAI Responses API.
    Responses,
}

impl Api {
    /// The answer's main list.
    fn main_field(self) -> &'static str {
        match self {
            Api::Chat(Wire::OpenAi) => "choices",
            Api::Chat(Wire::Anthropic) => "content",
            Api::Chat(Wire::Gemini) => "candidates",
            Api::Responses => "output",
        }
    }
    fn usage_field(self) -> &'static str {
        match self {
            Api::Chat(Wire::Gemini) => "usageMetadata",
            _ => "usage",
        }
    }
    /// The usage object with `input` and `output` as its two main counts.
    fn usage(self, input: Value, output: Value) -> Value {
        match self {
            Api::Chat(Wire::OpenAi) => json!({"prompt_tokens": input, "completion_tokens": output}),
            Api::Chat(Wire::Gemini) => {
                json!({"promptTokenCount": input, "candidatesTokenCount": output})
            }
            _ => json!({"input_tokens": input, "output_tokens": output}),
        }
    }
}

/// The name of the first tool `req` offers, else [`UNKNOWN_TOOL`].
fn offered_tool(api: Api, req: &Value) -> String {
    let name = match api {
        Api::Chat(Wire::OpenAi) => req.pointer("/tools/0/function/name"),
        Api::Chat(Wire::Anthropic) | Api::Responses => req.pointer("/tools/0/name"),
        Api::Chat(Wire::Gemini) => req.pointer("/tools/0/functionDeclarations/0/name"),
    };
    name.and_then(|n| n.as_str())
        .unwrap_or(UNKNOWN_TOOL)
        .to_string()
}

/// An answer holding one tool call of `name` with `arguments` (as the wire carries them:
/// a JSON text for OpenAI and Responses, a value for Anthropic and Gemini).
fn tool_call(api: Api, name: &str, arguments: Value, n: usize) -> Value {
    match api {
        Api::Chat(Wire::OpenAi) => {
            json!({"id": format!("chatcmpl-hostile-{n}"), "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": format!("call_{n}"), "type": "function", "function": {"name": name, "arguments": arguments}}]},
                "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": USAGE_INPUT, "completion_tokens": USAGE_OUTPUT}})
        }
        Api::Chat(Wire::Anthropic) => {
            json!({"id": format!("msg_hostile_{n}"), "type": "message", "role": "assistant",
            "content": [{"type": "tool_use", "id": format!("toolu_{n}"), "name": name, "input": arguments}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": USAGE_INPUT, "output_tokens": USAGE_OUTPUT}})
        }
        Api::Chat(Wire::Gemini) => json!({"candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"name": name, "args": arguments}}]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": USAGE_INPUT, "candidatesTokenCount": USAGE_OUTPUT}}),
        Api::Responses => {
            json!({"id": format!("resp_hostile_{n}"), "object": "response", "status": "completed",
            "output": [{"type": "function_call", "id": format!("fc_{n}"), "call_id": format!("call_{n}"),
                "name": name, "arguments": arguments, "status": "completed"}],
            "usage": {"input_tokens": USAGE_INPUT, "output_tokens": USAGE_OUTPUT}})
        }
    }
}

/// The answer whose text is the number 42.
fn number_text(api: Api, v: &mut Value) {
    match api {
        Api::Chat(Wire::OpenAi) => {
            v["choices"] = json!([{"index": 0, "message": {"role": "assistant", "content": 42}, "finish_reason": "stop"}]);
        }
        Api::Chat(Wire::Anthropic) => {
            v["content"] = json!([{"type": "text", "text": 42}]);
            v["stop_reason"] = json!("end_turn");
        }
        Api::Chat(Wire::Gemini) => {
            v["candidates"] = json!([{"content": {"role": "model", "parts": [{"text": 42}]}, "finishReason": "STOP", "index": 0}]);
        }
        Api::Responses => {
            v["output"] = json!([{"type": "message", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": 42, "annotations": []}]}]);
        }
    }
}

fn unknown_finish_reason(api: Api, v: &mut Value) {
    match api {
        Api::Chat(Wire::OpenAi) => v["choices"][0]["finish_reason"] = json!(UNKNOWN_FINISH_REASON),
        Api::Chat(Wire::Anthropic) => v["stop_reason"] = json!(UNKNOWN_FINISH_REASON),
        Api::Chat(Wire::Gemini) => {
            v["candidates"][0]["finishReason"] = json!(UNKNOWN_FINISH_REASON.to_ascii_uppercase());
        }
        Api::Responses => {
            v["status"] = json!("incomplete");
            v["incomplete_details"] = json!({"reason": UNKNOWN_FINISH_REASON});
        }
    }
}

/// The 50 MB body of [`Hostile::HugeBody`] (built once: every case shares it).
fn huge_body() -> Bytes {
    static BODY: OnceLock<Bytes> = OnceLock::new();
    BODY.get_or_init(|| {
        let mut b = Vec::with_capacity(HUGE_BODY_BYTES);
        b.extend_from_slice(b"{\"padding\": \"");
        b.resize(HUGE_BODY_BYTES - 2, b'a');
        b.extend_from_slice(b"\"}");
        Bytes::from(b)
    })
    .clone()
}

fn json_response(status: u16, v: &Value) -> HttpResponse {
    HttpResponse::json(status, v)
}

/// The answer of `api` to `req` (the `n`-th request) broken as `h` says, starting from
/// `normal`, the answer it would otherwise give (with usage).
pub(crate) fn hostile_answer(api: Api, h: Hostile, req: &Value, n: usize, normal: Value) -> Answer {
    let main = api.main_field();
    let mut v = normal;
    let json_answer = |v: &Value| Answer::from(json_response(200, v));
    let raw = |status: u16, body: Bytes, delivery: Delivery| Answer {
        response: HttpResponse {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body,
        },
        delivery,
    };
    match h {
        Hostile::MissingField => {
            if let Some(o) = v.as_object_mut() {
                o.remove(main);
            }
            json_answer(&v)
        }
        Hostile::NullField => {
            v[main] = Value::Null;
            json_answer(&v)
        }
        Hostile::NullItem => {
            match api {
                Api::Chat(Wire::OpenAi) => v["choices"][0]["message"] = Value::Null,
                _ => v[main] = json!([null]),
            }
            json_answer(&v)
        }
        Hostile::StringForList => {
            v[main] = json!("not a list");
            json_answer(&v)
        }
        Hostile::ObjectForList => {
            let first = v[main].get(0).cloned().unwrap_or(json!({}));
            v[main] = json!({ "0": first });
            json_answer(&v)
        }
        Hostile::EmptyList => {
            v[main] = json!([]);
            json_answer(&v)
        }
        Hostile::NumberForText => {
            number_text(api, &mut v);
            json_answer(&v)
        }
        Hostile::UnknownFinishReason => {
            unknown_finish_reason(api, &mut v);
            json_answer(&v)
        }
        Hostile::UnknownTool => {
            let args = match api {
                Api::Chat(Wire::OpenAi) | Api::Responses => json!("{\"task\": \"anything\"}"),
                _ => json!({"task": "anything"}),
            };
            json_answer(&tool_call(api, UNKNOWN_TOOL, args, n))
        }
        Hostile::InvalidArguments => json_answer(&tool_call(
            api,
            &offered_tool(api, req),
            json!(INVALID_ARGUMENTS),
            n,
        )),
        Hostile::NonObjectArguments => {
            let args = match api {
                Api::Chat(Wire::OpenAi) | Api::Responses => json!("\"just a string\""),
                _ => json!(["just", "a", "list"]),
            };
            json_answer(&tool_call(api, &offered_tool(api, req), args, n))
        }
        Hostile::UsageWrongTypes => {
            v[api.usage_field()] = api.usage(json!("12"), json!([5]));
            json_answer(&v)
        }
        Hostile::UsageNegative => {
            v[api.usage_field()] = api.usage(json!(-12), json!(-5));
            json_answer(&v)
        }
        Hostile::UsageHuge => {
            v[api.usage_field()] = api.usage(json!(u64::MAX), json!(1e300));
            json_answer(&v)
        }
        Hostile::UsageMissing => {
            if let Some(o) = v.as_object_mut() {
                o.remove(api.usage_field());
            }
            json_answer(&v)
        }
        Hostile::HugeBody => raw(200, huge_body(), Delivery::Normal),
        Hostile::HugeChunkedBody => raw(200, huge_body(), Delivery::Chunked),
        Hostile::InvalidUtf8 => {
            let text = serde_json::to_string(&v).unwrap_or_default();
            // The first string value gets two bytes that are not UTF-8.
            let mut bytes = text.into_bytes();
            let at = bytes
                .windows(3)
                .position(|w| w == b"\":\"")
                .map_or(bytes.len() / 2, |p| p + 3);
            bytes.insert(at, 0xfe);
            bytes.insert(at, 0xff);
            raw(200, Bytes::from(bytes), Delivery::Normal)
        }
        Hostile::CutOff => {
            let text = serde_json::to_vec(&v).unwrap_or_default();
            let half = text.len() / 2;
            raw(
                200,
                Bytes::from(text).slice(..half.max(1)),
                Delivery::Normal,
            )
        }
        Hostile::ShortBody => {
            let text = Bytes::from(serde_json::to_vec(&v).unwrap_or_default());
            let half = text.len() / 2;
            raw(200, text, Delivery::CloseAfter(half.max(1)))
        }
        Hostile::Reset => {
            let text = Bytes::from(serde_json::to_vec(&v).unwrap_or_default());
            let half = text.len() / 2;
            raw(200, text, Delivery::ResetAfter(half.max(1)))
        }
        Hostile::Trickle => {
            let text = Bytes::from(serde_json::to_vec(&v).unwrap_or_default());
            raw(200, text, Delivery::Trickle(TRICKLE_INTERVAL))
        }
        Hostile::EmptyBody => raw(200, Bytes::new(), Delivery::Normal),
        Hostile::Html => Answer::from(HttpResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/html".into())],
            body: Bytes::from_static(
                b"<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head><body><h1>Welcome to nginx!</h1></body></html>\n",
            ),
        }),
        Hostile::Status299 => Answer::from(json_response(299, &v)),
        Hostile::Status600 => {
            let wire = match api {
                Api::Chat(w) => w,
                Api::Responses => Wire::OpenAi,
            };
            Answer::from(error_response(
                wire,
                600,
                "a status code no HTTP standard defines",
                &[],
            ))
        }
        Hostile::Informational => raw(
            102,
            Bytes::from_static(b"HTTP/1.1 102 Processing\r\n\r\n"),
            Delivery::Raw,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::normal_body;

    #[test]
    fn every_case_answers_on_every_api() {
        let req = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        for api in [
            Api::Chat(Wire::OpenAi),
            Api::Chat(Wire::Anthropic),
            Api::Chat(Wire::Gemini),
            Api::Responses,
        ] {
            for h in Hostile::ALL {
                let a = hostile_answer(api, *h, &req, 0, normal_body(api, &req, 0));
                assert!(
                    !a.response.body.is_empty() || *h == Hostile::EmptyBody,
                    "{api:?} {h:?}"
                );
            }
        }
        let huge = hostile_answer(
            Api::Responses,
            Hostile::HugeBody,
            &req,
            0,
            normal_body(Api::Responses, &req, 0),
        );
        assert_eq!(huge.response.body.len(), HUGE_BODY_BYTES);
        let api = Api::Chat(Wire::OpenAi);
        let bad = hostile_answer(
            api,
            Hostile::InvalidUtf8,
            &req,
            0,
            normal_body(api, &req, 0),
        );
        assert!(std::str::from_utf8(&bad.response.body).is_err());
    }
}
