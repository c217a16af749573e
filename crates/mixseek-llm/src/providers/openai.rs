//! OpenAI Chat Completions (`POST {base_url}/chat/completions`), spoken by OpenAI and every
//! OpenAI-compatible server (xAI, vLLM, Ollama, llama.cpp, LM Studio, OpenRouter, …).
//!
//! Structured output asks with `response_format: {type: json_schema}`. A server that
//! rejects it (HTTP 400/422 naming `response_format`/`json_schema`) is asked again at once
//! with `json_object` plus the schema in the system prompt, and if that is rejected too,
//! with the instruction alone; the mode that worked is remembered for this provider and
//! base URL for the rest of the process (`crate::capability`), so later calls start there. Each resend counts as an attempt.
//!
//! A request with provider-native tools goes to the Responses API instead
//! ([`responses`](crate::providers::responses)), for `openai`, `grok` and `xai` only.

use crate::backend::{Backend, Exchange, RawResponse};
use crate::error::{ErrorKind, LlmError};
use crate::providers::HttpCommon;
use crate::types::{ChatRequest, FinishReason, Message, TokenCounts, ToolCall};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU32, Ordering};

/// How structured output is requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum StructuredMode {
    JsonSchema = 0,
    JsonObject = 1,
    Instruction = 2,
}

impl StructuredMode {
    fn from_u8(v: u8) -> Self {
        match v {
            0 => StructuredMode::JsonSchema,
            1 => StructuredMode::JsonObject,
            _ => StructuredMode::Instruction,
        }
    }
    fn next(self) -> Option<Self> {
        match self {
            StructuredMode::JsonSchema => Some(StructuredMode::JsonObject),
            StructuredMode::JsonObject => Some(StructuredMode::Instruction),
            StructuredMode::Instruction => None,
        }
    }
}

pub(crate) struct OpenAiBackend {
    c: HttpCommon,
}

impl OpenAiBackend {
    pub fn new(c: HttpCommon) -> Self {
        Self { c }
    }

    /// The structured-output mode this provider currently starts with.
    pub fn structured_mode(&self) -> StructuredMode {
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
pub fn schema_instruction(schema: &Value) -> String {
    format!(
        "Respond with only a JSON object (no code fences, no text around it) that follows this JSON schema:\n{}",
        serde_json::to_string(schema).unwrap_or_default()
    )
}

/// The Chat Completions body of `request` for `model`.
pub fn request_body(
    model: &str,
    request: &ChatRequest,
    mode: StructuredMode,
    max_completion_tokens: bool,
) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    let mut system = request.system.clone().unwrap_or_default();
    if let Some(s) = &request.response_schema
        && mode != StructuredMode::JsonSchema
    {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&schema_instruction(&s.schema));
    }
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    for m in &request.messages {
        messages.push(match m {
            Message::User { content } => json!({"role": "user", "content": content}),
            Message::Assistant { content, tool_calls } => {
                let mut o = json!({"role": "assistant", "content": content});
                if !tool_calls.is_empty() {
                    o["tool_calls"] = Value::Array(
                        tool_calls
                            .iter()
                            .map(|t| {
                                json!({"id": t.id, "type": "function", "function": {
                                    "name": t.name,
                                    "arguments": serde_json::to_string(&t.arguments).unwrap_or_default(),
                                }})
                            })
                            .collect(),
                    );
                }
                o
            }
            Message::Tool { call_id, content, .. } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
        });
    }
    let mut body = json!({"model": model, "messages": messages});
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(
            request
                .tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
                .collect(),
        );
    }
    if let Some(s) = &request.response_schema {
        match mode {
            StructuredMode::JsonSchema => {
                body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": s.name, "schema": s.schema, "strict": false}});
            }
            StructuredMode::JsonObject => body["response_format"] = json!({"type": "json_object"}),
            StructuredMode::Instruction => {}
        }
    }
    let p = &request.params;
    if let Some(t) = p.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(m) = p.max_tokens {
        body[if max_completion_tokens {
            "max_completion_tokens"
        } else {
            "max_tokens"
        }] = json!(m);
    }
    if let Some(t) = p.top_p {
        body["top_p"] = json!(t);
    }
    if let Some(s) = p.seed {
        body["seed"] = json!(s);
    }
    if !p.stop.is_empty() {
        body["stop"] = json!(p.stop);
    }
    body
}

/// Parses a Chat Completions answer.
pub fn parse_response(v: &Value) -> Result<RawResponse, String> {
    let choice = v
        .get("choices")
        .and_then(|c| c.as_array())
        .and_then(|c| c.first())
        .ok_or_else(|| "the answer has no `choices`".to_string())?;
    let message = choice
        .get("message")
        .ok_or_else(|| "the answer's choice has no `message`".to_string())?;
    let text = match message.get("content") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(parts)) => {
            let s: String = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
                .collect();
            Some(s)
        }
        _ => None,
    };
    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls").and_then(|t| t.as_array()) {
        for (i, c) in calls.iter().enumerate() {
            let f = c
                .get("function")
                .ok_or_else(|| "a tool call has no `function`".to_string())?;
            let name = f
                .get("name")
                .and_then(|n| n.as_str())
                .ok_or_else(|| "a tool call has no name".to_string())?;
            let arguments = match f.get("arguments") {
                Some(Value::String(s)) if s.trim().is_empty() => json!({}),
                Some(Value::String(s)) => {
                    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
                }
                Some(other) => other.clone(),
                None => json!({}),
            };
            let id = c
                .get("id")
                .and_then(|i| i.as_str())
                .map_or_else(|| format!("call_{i}"), str::to_string);
            tool_calls.push(ToolCall::new(id, name, arguments));
        }
    }
    let finish_reason = match choice.get("finish_reason").and_then(|f| f.as_str()) {
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
    let usage = v.get("usage").filter(|u| u.is_object()).and_then(|u| {
        let input = u.get("prompt_tokens").and_then(|x| x.as_u64());
        let output = u.get("completion_tokens").and_then(|x| x.as_u64());
        if input.is_none() && output.is_none() {
            return None;
        }
        Some(TokenCounts {
            input_tokens: input.unwrap_or(0),
            output_tokens: output.unwrap_or(0),
            cached_tokens: u
                .pointer("/prompt_tokens_details/cached_tokens")
                .and_then(|x| x.as_u64())
                .unwrap_or(0),
        })
    });
    Ok(RawResponse {
        text,
        tool_calls,
        usage,
        finish_reason,
    })
}

/// Whether a 400/422 answer rejects the structured-output mode we used.
fn rejects_mode(err: &LlmError, mode: StructuredMode) -> bool {
    if !matches!(err.status, Some(400) | Some(422)) || mode == StructuredMode::Instruction {
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
        let ex = Exchange {
            provider: &self.c.provider,
            model,
            secrets: &secrets,
            base_url: &self.c.base_url,
        };
        if !request.native_tools.is_empty() {
            // Chat Completions has no native tools: the Responses API has.
            return crate::providers::responses::send(&self.c, &ex, model, request).await;
        }
        let url = format!("{}/chat/completions", self.c.base_url);
        let mut mode = self.structured_mode();
        loop {
            let body = request_body(model, request, mode, self.uses_max_completion_tokens());
            let mut builder = self.c.post(&url);
            if let Some(k) = &self.c.api_key {
                builder = builder.bearer_auth(k);
            }
            match ex.post_json(builder, &body).await {
                Ok(v) => return parse_response(&v).map_err(|m| ex.error(ErrorKind::Parse, m)),
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
    use crate::types::ToolSpec;

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
            (no_usage.usage, no_usage.finish_reason),
            (None, FinishReason::Length)
        );
        assert!(parse_response(&json!({"id": "x"})).is_err());
    }
}
