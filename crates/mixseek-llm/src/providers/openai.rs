//! OpenAI Chat Completions (`POST {base_url}/chat/completions`), spoken by OpenAI and every
//! OpenAI-compatible server (xAI, vLLM, Ollama, llama.cpp, LM Studio, OpenRouter, …).
//!
//! Structured output asks with `response_format: {type: json_schema}`. A server that
//! rejects a mode — any HTTP error (4xx or 5xx) whose message names `response_format`,
//! `json_schema`, `json_object`, structured output or guided decoding; llama-cpp-python
//! answers `json_schema` with a 500 — is asked again at once with the next mode of the
//! chain, each with the schema in the system prompt too:
//!
//! 1. `{"type": "json_schema", "json_schema": {"name", "schema", "strict": false}}`;
//! 2. `{"type": "json_object", "schema": …}`: llama.cpp's server and llama-cpp-python
//!    enforce the schema with a grammar (what makes small local models answer valid
//!    JSON); a server that ignores the extra key gets plain JSON mode;
//! 3. `{"type": "json_object"}`;
//! 4. no `response_format`: the instruction alone.
//!
//! The mode that worked is remembered for this provider and base URL for the rest of the
//! process (`crate::capability`), so later calls start there. Each resend counts as an
//! attempt.
//!
//! A request with provider-native tools goes to the Responses API instead
//! ([`responses`](crate::providers::responses)), for `openai`, `grok` and `xai` only.

use crate::backend::{Backend, RawResponse};
use crate::error::LlmError;
use crate::providers::{HttpCommon, fields};
use crate::types::{ChatRequest, FinishReason, Message, ToolCall};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU32, Ordering};

/// How structured output is requested, from the richest mode to the plainest (see the
/// module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum StructuredMode {
    /// `response_format: {"type": "json_schema", …}`.
    JsonSchema = 0,
    /// `response_format: {"type": "json_object", "schema": …}` (llama.cpp's grammar).
    JsonObjectSchema = 1,
    /// `response_format: {"type": "json_object"}`.
    JsonObject = 2,
    /// No `response_format`: the schema in the system prompt only.
    Instruction = 3,
}

impl StructuredMode {
    fn from_u8(v: u8) -> Self {
        match v {
            0 => StructuredMode::JsonSchema,
            1 => StructuredMode::JsonObjectSchema,
            2 => StructuredMode::JsonObject,
            _ => StructuredMode::Instruction,
        }
    }
    fn next(self) -> Option<Self> {
        match self {
            StructuredMode::JsonSchema => Some(StructuredMode::JsonObjectSchema),
            StructuredMode::JsonObjectSchema => Some(StructuredMode::JsonObject),
            StructuredMode::JsonObject => Some(StructuredMode::Instruction),
            StructuredMode::Instruction => None,
        }
    }
}

pub(crate) struct OpenAiBackend {
    c: HttpCommon,
    /// `{base_url}/chat/completions`, parsed once (not at every request); the text when it
    /// does not parse, so that the request fails with reqwest's error as before.
    chat_url: Result<reqwest::Url, String>,
}

impl OpenAiBackend {
    pub(crate) fn new(c: HttpCommon) -> Self {
        let url = format!("{}/chat/completions", c.base_url);
        let chat_url = reqwest::Url::parse(&url).map_err(|_| url);
        Self { c, chat_url }
    }

    /// The structured-output mode this provider currently starts with.
    pub(crate) fn structured_mode(&self) -> StructuredMode {
        StructuredMode::from_u8(crate::capability::structured_mode(
            &self.c.provider,
            &self.c.base_url,
        ))
    }

    fn uses_max_completion_tokens(&self) -> bool {
        self.c.provider == "openai" && self.c.base_url.contains("api.openai.com")
    }
}

/// The instruction that carries the schema when the server cannot enforce it.
pub(crate) fn schema_instruction(schema: &Value) -> String {
    format!(
        "Respond with only a JSON object (no code fences, no text around it) that follows this JSON schema:\n{}",
        serde_json::to_string(schema).unwrap_or_default()
    )
}

/// The Chat Completions body of `request` for `model`, as a JSON value (with the
/// configuration's pass-through settings).
pub(crate) fn request_body(
    model: &str,
    request: &ChatRequest,
    mode: StructuredMode,
    max_completion_tokens: bool,
) -> Value {
    let body = ChatBody::new(model, request, mode, max_completion_tokens);
    let mut body = serde_json::to_value(&body).unwrap_or_default();
    let p = &request.params;
    crate::passthrough::openai_chat(&mut body, &p.extra, !request.tools.is_empty());
    body
}

/// The Chat Completions body of a request without pass-through settings, serialized straight
/// from the request: building the JSON value first copied every message (the prompts, the
/// largest strings of a run) into it, ≈ 2 % of a run's CPU. Its fields and their order are
/// the ones the original sends (see `the_body_keeps_its_fields_in_order`).
pub(crate) struct ChatBody<'a> {
    model: &'a str,
    request: &'a ChatRequest,
    mode: StructuredMode,
    max_completion_tokens: bool,
    /// The system message: the request's, with the schema instruction when the server does
    /// not enforce the schema.
    system: std::borrow::Cow<'a, str>,
}

impl<'a> ChatBody<'a> {
    pub(crate) fn new(
        model: &'a str,
        request: &'a ChatRequest,
        mode: StructuredMode,
        max_completion_tokens: bool,
    ) -> Self {
        let mut system = std::borrow::Cow::Borrowed(request.system.as_deref().unwrap_or(""));
        if let Some(s) = &request.response_schema
            && mode != StructuredMode::JsonSchema
        {
            let text = system.to_mut();
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&schema_instruction(&s.schema));
        }
        Self {
            model,
            request,
            mode,
            max_completion_tokens,
            system,
        }
    }
}

impl Serialize for ChatBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.request;
        let mut body = serializer.serialize_map(None)?;
        body.serialize_entry("model", self.model)?;
        body.serialize_entry("messages", &WireMessages(self))?;
        if !request.tools.is_empty() {
            body.serialize_entry("tools", &WireTools(&request.tools))?;
        }
        if let Some(s) = &request.response_schema {
            match self.mode {
                StructuredMode::JsonSchema => body.serialize_entry(
                    "response_format",
                    &JsonSchemaFormat {
                        r#type: "json_schema",
                        json_schema: NamedSchema {
                            name: &s.name,
                            schema: &s.schema,
                            strict: false,
                        },
                    },
                )?,
                StructuredMode::JsonObjectSchema => body.serialize_entry(
                    "response_format",
                    &ObjectSchemaFormat {
                        r#type: "json_object",
                        schema: &s.schema,
                    },
                )?,
                StructuredMode::JsonObject => body.serialize_entry(
                    "response_format",
                    &TypeOnly {
                        r#type: "json_object",
                    },
                )?,
                StructuredMode::Instruction => {}
            }
        }
        let p = &request.params;
        if let Some(t) = p.temperature {
            body.serialize_entry("temperature", &t)?;
        }
        if let Some(m) = p.max_tokens {
            let key = if self.max_completion_tokens {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body.serialize_entry(key, &m)?;
        }
        if let Some(t) = p.top_p {
            body.serialize_entry("top_p", &t)?;
        }
        if let Some(s) = p.seed {
            body.serialize_entry("seed", &s)?;
        }
        if !p.stop.is_empty() {
            body.serialize_entry("stop", &p.stop)?;
        }
        body.end()
    }
}

/// `response_format: {"type": "json_schema", "json_schema": {…}}`.
#[derive(serde::Serialize)]
struct JsonSchemaFormat<'a> {
    r#type: &'static str,
    json_schema: NamedSchema<'a>,
}

#[derive(serde::Serialize)]
struct NamedSchema<'a> {
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}

/// `response_format: {"type": "json_object", "schema": …}`.
#[derive(serde::Serialize)]
struct ObjectSchemaFormat<'a> {
    r#type: &'static str,
    schema: &'a Value,
}

/// `response_format: {"type": "json_object"}`.
#[derive(serde::Serialize)]
struct TypeOnly {
    r#type: &'static str,
}

/// The `messages` list: the system message (when there is one), then the conversation.
struct WireMessages<'a>(&'a ChatBody<'a>);

impl Serialize for WireMessages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let body = self.0;
        let mut list = serializer.serialize_seq(None)?;
        if !body.system.is_empty() {
            list.serialize_element(&SystemMessage {
                role: "system",
                content: &body.system,
            })?;
        }
        for m in &body.request.messages {
            list.serialize_element(&WireMessage(m))?;
        }
        list.end()
    }
}

/// `{"role": "system", "content": …}`.
#[derive(serde::Serialize)]
struct SystemMessage<'a> {
    role: &'static str,
    content: &'a str,
}

/// One message of the conversation as Chat Completions takes it.
struct WireMessage<'a>(&'a Message);

impl Serialize for WireMessage<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut m = serializer.serialize_map(None)?;
        match self.0 {
            Message::User { content } => {
                m.serialize_entry("role", "user")?;
                m.serialize_entry("content", content)?;
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                m.serialize_entry("role", "assistant")?;
                m.serialize_entry("content", content)?;
                if !tool_calls.is_empty() {
                    let calls: Vec<Value> = tool_calls
                        .iter()
                        .map(|t| {
                            json!({"id": t.id, "type": "function", "function": {
                                "name": t.name,
                                "arguments": serde_json::to_string(&t.arguments).unwrap_or_default(),
                            }})
                        })
                        .collect();
                    m.serialize_entry("tool_calls", &calls)?;
                }
            }
            Message::Tool {
                call_id, content, ..
            } => {
                m.serialize_entry("role", "tool")?;
                m.serialize_entry("tool_call_id", call_id)?;
                m.serialize_entry("content", content)?;
            }
        }
        m.end()
    }
}

/// The `tools` list: each function the model may call.
struct WireTools<'a>(&'a [crate::types::ToolSpec]);

impl Serialize for WireTools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|t| {
            json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}})
        }))
    }
}

/// Parses a Chat Completions answer. `Err` says which field was missing or wrong.
pub(crate) fn parse_response(v: &Value) -> Result<RawResponse, String> {
    let choice = fields::main_list(v, "choices", "OpenAI Chat Completions")?
        .first()
        .ok_or_else(|| "the answer's `choices` list is empty".to_string())?;
    let choice = fields::object(choice, "the answer's first choice")?;
    let message = match choice.get("message") {
        Some(m @ Value::Object(_)) => m,
        None => return Err("the answer's first choice has no `message`".to_string()),
        Some(other) => {
            return Err(format!(
                "the answer's `message` is {}, not an object",
                fields::kind_of(other)
            ));
        }
    };
    let text = match message.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(parts)) => {
            let s: String = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
                .collect();
            Some(s)
        }
        Some(other) => {
            return Err(format!(
                "the answer's `message.content` is {}, not text",
                fields::kind_of(other)
            ));
        }
    };
    let mut tool_calls = Vec::new();
    for (i, c) in fields::opt_list(message, "tool_calls", "message.tool_calls")?
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let c = fields::object(c, "a tool call")?;
        let f = c
            .get("function")
            .filter(|f| f.is_object())
            .ok_or_else(|| "a tool call has no `function` object".to_string())?;
        let name = fields::opt_str(f, "name", "function.name")?
            .ok_or_else(|| "a tool call has no name".to_string())?;
        let arguments = fields::arguments(f.get("arguments"));
        let id = c
            .get("id")
            .and_then(|i| i.as_str())
            .map_or_else(|| format!("call_{i}"), str::to_string);
        tool_calls.push(ToolCall::new(id, name, arguments));
    }
    let finish_reason = match fields::reason(choice.get("finish_reason")).as_deref() {
        Some("stop") | None => {
            if tool_calls.is_empty() {
                FinishReason::Stop
            } else {
                FinishReason::ToolCalls
            }
        }
        Some("length") => FinishReason::Length,
        Some("tool_calls") | Some("function_call") => FinishReason::ToolCalls,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(o) => FinishReason::Other(o.to_string()),
    };
    let (usage, usage_problem) = fields::split_usage(fields::usage(
        v.get("usage"),
        "prompt_tokens",
        "completion_tokens",
        &[],
        &[],
        "/prompt_tokens_details/cached_tokens",
    ));
    Ok(RawResponse {
        text,
        tool_calls,
        usage,
        usage_problem,
        finish_reason,
    })
}

/// Whether an error answer (any 4xx or 5xx) rejects the structured-output mode we used:
/// its message names the feature.
fn rejects_mode(err: &LlmError, mode: StructuredMode) -> bool {
    if err.status.is_none_or(|s| s < 400) || mode == StructuredMode::Instruction {
        return false;
    }
    let m = err.message.to_ascii_lowercase();
    m.contains("response_format")
        || m.contains("json_schema")
        || m.contains("json_object")
        || m.contains("response format")
        || m.contains("structured output")
        || m.contains("guided")
}

#[async_trait::async_trait]
impl Backend for OpenAiBackend {
    async fn send(
        &self,
        model: &str,
        request: &ChatRequest,
        attempts: &AtomicU32,
    ) -> Result<RawResponse, LlmError> {
        let secrets = self.c.secrets();
        let ex = self.c.exchange(model, &secrets);
        if !request.native_tools.is_empty() {
            // Chat Completions has no native tools: the Responses API has.
            return crate::providers::responses::send(&self.c, &ex, model, request).await;
        }
        let mut mode = self.structured_mode();
        loop {
            let mut builder = match &self.chat_url {
                Ok(url) => self.c.post(url.clone()),
                Err(text) => self.c.post(text.as_str()),
            };
            if let Some(k) = &self.c.api_key {
                builder = builder.bearer_auth(k);
            }
            let builder = crate::passthrough::with_headers(builder, &request.params.extra);
            let max_completion_tokens = self.uses_max_completion_tokens();
            let sent = if request.params.extra.is_empty() {
                let body = ChatBody::new(model, request, mode, max_completion_tokens);
                ex.post_json(builder, &body).await
            } else {
                let body = request_body(model, request, mode, max_completion_tokens);
                ex.post_json(builder, &body).await
            };
            match sent {
                Ok(v) => return ex.parse(|| parse_response(&v)),
                Err(e) if request.response_schema.is_some() && rejects_mode(&e, mode) => {
                    let Some(next) = mode.next() else {
                        return Err(e);
                    };
                    tracing::warn!(provider = %self.c.provider, model, from = ?mode, to = ?next, error = %e.message, "the server rejected the structured-output mode; falling back");
                    // Remember the downgrade for the later calls of this provider.
                    crate::capability::downgrade_structured_mode(
                        &self.c.provider,
                        &self.c.base_url,
                        next as u8,
                    );
                    mode = next;
                    attempts.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::types::{TokenCounts, ToolSpec};

    /// The body sent is byte for byte what the JSON value built field by field was: the same
    /// fields in the same order, the same numbers.
    #[test]
    fn the_body_keeps_its_fields_in_order() {
        let mut r = ChatRequest::user("hi \"there\"\n")
            .with_system("sys")
            .with_schema(
                "Out",
                json!({"type": "object", "properties": {"b": {"type": "number"}, "a": {"type": "string"}}}),
            );
        r.messages.push(Message::assistant_tool_calls(
            Some("thinking".into()),
            vec![ToolCall::new("c1", "f", json!({"z": 1, "a": [true, null]}))],
        ));
        r.messages.push(Message::tool_result("c1", "f", "result"));
        r.messages.push(Message::assistant_tool_calls(None, vec![]));
        r.tools = vec![ToolSpec {
            name: "f".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }];
        r.params.temperature = Some(0.2);
        r.params.max_tokens = Some(100);
        r.params.top_p = Some(0.95);
        r.params.seed = Some(7);
        r.params.stop = vec!["END".into(), "STOP".into()];
        let expected = [
            (
                StructuredMode::JsonSchema,
                r#"{"model":"gpt-x","messages":[{"role":"system","content":"sys"},{"role":"user","content":"hi \"there\"\n"},{"role":"assistant","content":"thinking","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"z\":1,\"a\":[true,null]}"}}]},{"role":"tool","tool_call_id":"c1","content":"result"},{"role":"assistant","content":null}],"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}}],"response_format":{"type":"json_schema","json_schema":{"name":"Out","schema":{"type":"object","properties":{"b":{"type":"number"},"a":{"type":"string"}}},"strict":false}},"temperature":0.2,"max_tokens":100,"top_p":0.95,"seed":7,"stop":["END","STOP"]}"#,
            ),
            (
                StructuredMode::JsonObjectSchema,
                r#"{"model":"gpt-x","messages":[{"role":"system","content":"sys\n\nRespond with only a JSON object (no code fences, no text around it) that follows this JSON schema:\n{\"type\":\"object\",\"properties\":{\"b\":{\"type\":\"number\"},\"a\":{\"type\":\"string\"}}}"},{"role":"user","content":"hi \"there\"\n"},{"role":"assistant","content":"thinking","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"z\":1,\"a\":[true,null]}"}}]},{"role":"tool","tool_call_id":"c1","content":"result"},{"role":"assistant","content":null}],"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}}],"response_format":{"type":"json_object","schema":{"type":"object","properties":{"b":{"type":"number"},"a":{"type":"string"}}}},"temperature":0.2,"max_tokens":100,"top_p":0.95,"seed":7,"stop":["END","STOP"]}"#,
            ),
        ];
        for (mode, want) in expected {
            let sent =
                serde_json::to_string(&ChatBody::new("gpt-x", &r, mode, false)).expect("body");
            assert_eq!(sent, want, "{mode:?}");
            let value = request_body("gpt-x", &r, mode, false);
            assert_eq!(
                serde_json::to_string(&value).expect("value"),
                want,
                "{mode:?}"
            );
        }
        let plain = ChatRequest::user("x");
        let sent = ChatBody::new("m", &plain, StructuredMode::JsonSchema, false);
        assert_eq!(
            serde_json::to_string(&sent).expect("body"),
            r#"{"model":"m","messages":[{"role":"user","content":"x"}]}"#
        );
    }

    #[test]
    fn body_carries_messages_tools_schema_and_params() {
        let mut r = ChatRequest::user("hi")
            .with_system("sys")
            .with_schema("Out", json!({"type": "object"}));
        r.messages.push(Message::assistant_tool_calls(
            None,
            vec![ToolCall::new("c1", "f", json!({"a": 1}))],
        ));
        r.messages.push(Message::tool_result("c1", "f", "result"));
        r.tools = vec![ToolSpec {
            name: "f".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }];
        r.params.temperature = Some(0.2);
        r.params.max_tokens = Some(100);
        r.params.stop = vec!["END".into()];
        let b = request_body("gpt", &r, StructuredMode::JsonSchema, false);
        assert_eq!(
            b["messages"][0],
            json!({"role": "system", "content": "sys"})
        );
        assert_eq!(
            b["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{\"a\":1}"
        );
        assert_eq!(
            b["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "result"})
        );
        assert_eq!(b["response_format"]["type"], "json_schema");
        assert_eq!(b["response_format"]["json_schema"]["name"], "Out");
        assert_eq!(b["max_tokens"], 100);
        assert_eq!(b["stop"], json!(["END"]));
        let b2 = request_body("gpt", &r, StructuredMode::JsonObject, true);
        assert_eq!(b2["response_format"], json!({"type": "json_object"}));
        assert!(
            b2["messages"][0]["content"]
                .as_str()
                .unwrap_or("")
                .contains("JSON schema")
        );
        assert_eq!(b2["max_completion_tokens"], 100);
        let b3 = request_body("gpt", &r, StructuredMode::Instruction, false);
        assert!(b3.get("response_format").is_none());
    }

    #[test]
    fn parses_text_tool_calls_and_usage() {
        let v = json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"id": "x", "type": "function", "function": {"name": "f", "arguments": "{\"q\":\"a\"}"}}]},
            "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 4}}});
        let r = parse_response(&v).expect("ok");
        assert_eq!(r.text, None);
        assert_eq!(r.tool_calls[0].arguments, json!({"q": "a"}));
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        assert_eq!(
            r.usage,
            Some(TokenCounts {
                input_tokens: 10,
                output_tokens: 3,
                cached_tokens: 4
            })
        );
        let no_usage = parse_response(
            &json!({"choices": [{"message": {"content": "hi"}, "finish_reason": "length"}]}),
        )
        .expect("ok");
        assert_eq!(
            (
                no_usage.usage,
                no_usage.usage_problem,
                no_usage.finish_reason
            ),
            (None, None, FinishReason::Length)
        );
        // implausible counts: usage unknown, and why (logged by the exchange)
        let bad_usage = parse_response(&json!({"choices": [{"message": {"content": "hi"}}],
            "usage": {"prompt_tokens": -5, "completion_tokens": 3}}))
        .expect("ok");
        assert_eq!(bad_usage.usage, None);
        assert!(
            bad_usage
                .usage_problem
                .as_deref()
                .is_some_and(|p| p.contains("`prompt_tokens` is -5")),
            "{:?}",
            bad_usage.usage_problem
        );
        assert!(parse_response(&json!({"id": "x"})).is_err());
    }

    /// The body llama-cpp-python 0.3.16 answers (HTTP 500) to `json_schema`, verbatim.
    const LLAMA_CPP_PYTHON_500: &str = r#"{"error":{"message":"1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \".../llama_cpp/server/app.py\", line 376, in create_chat_completion\n    POST /v1/chat/completions","type":"internal_server_error","param":null,"code":null}}"#;

    #[test]
    fn rejected_modes_are_recognised_by_their_message_on_any_error_status() {
        let err = |status: u16, body: &[u8]| {
            LlmError::new(
                crate::retry::classify_status(status),
                "p",
                "m",
                crate::backend::server_message(body),
            )
            .with_status(status)
        };
        let llama = err(500, LLAMA_CPP_PYTHON_500.as_bytes());
        assert!(
            llama
                .message
                .contains("Input should be 'text' or 'json_object'")
        );
        assert!(rejects_mode(&llama, StructuredMode::JsonSchema));
        let openai = err(
            400,
            br#"{"error":{"message":"Invalid parameter: response_format of type 'json_schema' is not supported with this model."}}"#,
        );
        assert!(rejects_mode(&openai, StructuredMode::JsonSchema));
        let vllm = err(422, br#"{"detail":"guided decoding is not enabled"}"#);
        assert!(rejects_mode(&vllm, StructuredMode::JsonObjectSchema));
        let schema_key = err(
            400,
            br#"{"error":{"message":"Additional properties are not allowed ('schema' was unexpected) - 'response_format'"}}"#,
        );
        assert!(rejects_mode(&schema_key, StructuredMode::JsonObjectSchema));
        // Not about the mode: retried or failed as usual.
        assert!(!rejects_mode(
            &err(500, b"CUDA out of memory"),
            StructuredMode::JsonSchema
        ));
        assert!(!rejects_mode(
            &err(400, b"prompt too long"),
            StructuredMode::JsonSchema
        ));
        // Nothing left to drop, or no answer at all.
        assert!(!rejects_mode(&llama, StructuredMode::Instruction));
        let transport = LlmError::new(ErrorKind::Transport, "p", "m", "response_format");
        assert!(!rejects_mode(&transport, StructuredMode::JsonSchema));
    }

    #[test]
    fn the_chain_goes_from_json_schema_to_the_instruction() {
        let r = ChatRequest::user("x").with_schema("S", json!({"type": "object"}));
        let mut mode = StructuredMode::JsonSchema;
        let mut formats = vec![request_body("m", &r, mode, false)["response_format"].clone()];
        while let Some(next) = mode.next() {
            mode = next;
            let b = request_body("m", &r, mode, false);
            assert!(
                b["messages"][0]["content"]
                    .as_str()
                    .is_some_and(|s| s.contains("JSON schema")),
                "{mode:?}: the schema is in the system prompt"
            );
            formats.push(b.get("response_format").cloned().unwrap_or(Value::Null));
        }
        assert_eq!(
            formats,
            [
                json!({"type": "json_schema", "json_schema": {"name": "S", "schema": {"type": "object"}, "strict": false}}),
                json!({"type": "json_object", "schema": {"type": "object"}}),
                json!({"type": "json_object"}),
                Value::Null,
            ]
        );
        for m in [0u8, 1, 2, 3] {
            assert_eq!(StructuredMode::from_u8(m) as u8, m);
        }
    }

    proptest::proptest! {
        #[test]
        fn any_json_answer_parses_or_fails_without_panicking(
            v in crate::providers::fields::arbitrary::json()
        ) {
            let _ = parse_response(&v);
            let _ = parse_response(&json!({"choices": [v.clone()]}));
            let _ = parse_response(&json!({"choices": [{"message": v.clone(), "finish_reason": v.clone()}], "usage": v}));
        }

        #[test]
        fn any_bytes_parse_or_fail_without_panicking(
            bytes in crate::providers::fields::arbitrary::bytes()
        ) {
            if let Ok(v) = crate::backend::parse_json_body(&bytes) {
                let _ = parse_response(&v);
            }
        }
    }
}
