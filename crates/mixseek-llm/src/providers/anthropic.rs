//! Anthropic Messages (`POST {base_url}/v1/messages`, `x-api-key`, `anthropic-version:
//! 2023-06-01`).
//!
//! Structured output uses a **forced tool**: the schema becomes the `input_schema` of a
//! tool named after it, `tool_choice` forces that tool, and the tool's `input` is returned
//! as the response text (a schema whose root is not an object is wrapped in
//! `{"value": …}` and unwrapped again). `max_tokens` is required by the API: 4096 when
//! the request sets none. `seed` is not supported and not sent.

use crate::backend::{Backend, Exchange, RawResponse};
use crate::error::{ErrorKind, LlmError};
use crate::providers::HttpCommon;
use crate::types::{ChatRequest, FinishReason, Message, TokenCounts, ToolCall};
use serde_json::{Value, json};
use std::sync::atomic::AtomicU32;

/// `max_tokens` when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;
pub const API_VERSION: &str = "2023-06-01";

pub(crate) struct AnthropicBackend {
    c: HttpCommon,
}

impl AnthropicBackend {
    pub fn new(c: HttpCommon) -> Self {
        Self { c }
    }
}

fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(|t| t.as_str()) == Some("object")
}

/// The Messages body of `request` for `model`.
pub fn request_body(model: &str, request: &ChatRequest) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    // Consecutive blocks of the same role are merged into one message (the API requires
    // alternating roles; several tool results answer one assistant turn).
    let mut push = |role: &str, block: Value| {
        if let Some(last) = messages.last_mut()
            && last["role"] == role
            && let Some(content) = last["content"].as_array_mut()
        {
            content.push(block);
            return;
        }
        messages.push(json!({"role": role, "content": [block]}));
    };
    for m in &request.messages {
        match m {
            Message::User { content } => push("user", json!({"type": "text", "text": content})),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if let Some(c) = content.as_deref().filter(|c| !c.is_empty()) {
                    push("assistant", json!({"type": "text", "text": c}));
                }
                for t in tool_calls {
                    let input = if t.arguments.is_object() {
                        t.arguments.clone()
                    } else {
                        json!({"value": t.arguments})
                    };
                    push(
                        "assistant",
                        json!({"type": "tool_use", "id": t.id, "name": t.name, "input": input}),
                    );
                }
            }
            Message::Tool {
                call_id, content, ..
            } => {
                push(
                    "user",
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": content}),
                );
            }
        }
    }
    let p = &request.params;
    let mut body = json!({
        "model": model,
        "max_tokens": p.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
    });
    let mut system = request.system.clone().unwrap_or_default();
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        )
        .collect();
    if let Some(s) = &request.response_schema {
        let input_schema = if is_object_schema(&s.schema) {
            s.schema.clone()
        } else {
            json!({"type": "object", "properties": {"value": s.schema}, "required": ["value"]})
        };
        tools.push(json!({
            "name": s.name,
            "description": "Give your final answer by calling this tool with an input that follows its schema.",
            "input_schema": input_schema,
        }));
        if request.tools.is_empty() {
            body["tool_choice"] = json!({"type": "tool", "name": s.name});
        } else {
            if !system.is_empty() {
                system.push_str("\n\n");
            }
            system.push_str(&format!(
                "Give your final answer by calling the tool `{}`.",
                s.name
            ));
        }
    }
    if !system.is_empty() {
        body["system"] = json!(system);
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    if let Some(t) = p.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(t) = p.top_p {
        body["top_p"] = json!(t);
    }
    if !p.stop.is_empty() {
        body["stop_sequences"] = json!(p.stop);
    }
    body
}

/// Parses a Messages answer. With a response schema, the forced tool's input becomes the
/// text.
pub fn parse_response(v: &Value, request: &ChatRequest) -> Result<RawResponse, String> {
    let content = v
        .get("content")
        .and_then(|c| c.as_array())
        .ok_or_else(|| "the answer has no `content`".to_string())?;
    let schema_tool = request.response_schema.as_ref();
    let mut text = String::new();
    let mut has_text = false;
    let mut structured: Option<String> = None;
    let mut tool_calls = Vec::new();
    for block in content {
        match block.get("type").and_then(|t| t.as_str()) {
            Some("text") => {
                has_text = true;
                text.push_str(block.get("text").and_then(|t| t.as_str()).unwrap_or(""));
            }
            Some("tool_use") => {
                let name = block
                    .get("name")
                    .and_then(|n| n.as_str())
                    .ok_or_else(|| "a tool_use block has no name".to_string())?;
                let input = block.get("input").cloned().unwrap_or(json!({}));
                if let Some(s) = schema_tool
                    && s.name == name
                {
                    let value = if is_object_schema(&s.schema) {
                        input
                    } else {
                        input.get("value").cloned().unwrap_or(Value::Null)
                    };
                    structured = Some(serde_json::to_string(&value).unwrap_or_default());
                    continue;
                }
                let id = block
                    .get("id")
                    .and_then(|i| i.as_str())
                    .unwrap_or("")
                    .to_string();
                tool_calls.push(ToolCall {
                    id,
                    name: name.to_string(),
                    arguments: input,
                });
            }
            _ => {}
        }
    }
    let text = match structured {
        Some(s) => Some(s),
        None if has_text => Some(text),
        None => None,
    };
    let finish_reason = match v.get("stop_reason").and_then(|s| s.as_str()) {
        Some("end_turn") | Some("stop_sequence") | None => FinishReason::Stop,
        Some("max_tokens") => FinishReason::Length,
        Some("tool_use") if tool_calls.is_empty() => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("refusal") => FinishReason::ContentFilter,
        Some(o) => FinishReason::Other(o.to_string()),
    };
    let usage = v.get("usage").filter(|u| u.is_object()).and_then(|u| {
        let input = u.get("input_tokens").and_then(|x| x.as_u64());
        let output = u.get("output_tokens").and_then(|x| x.as_u64());
        if input.is_none() && output.is_none() {
            return None;
        }
        let cache_read = u
            .get("cache_read_input_tokens")
            .and_then(|x| x.as_u64())
            .unwrap_or(0);
        let cache_write = u
            .get("cache_creation_input_tokens")
            .and_then(|x| x.as_u64())
            .unwrap_or(0);
        // Anthropic's input_tokens exclude cached tokens; ours include them.
        Some(TokenCounts {
            input_tokens: input.unwrap_or(0) + cache_read + cache_write,
            output_tokens: output.unwrap_or(0),
            cached_tokens: cache_read,
        })
    });
    Ok(RawResponse {
        text,
        tool_calls,
        usage,
        finish_reason,
    })
}

#[async_trait::async_trait]
impl Backend for AnthropicBackend {
    async fn send(
        &self,
        model: &str,
        request: &ChatRequest,
        _attempts: &AtomicU32,
    ) -> Result<RawResponse, LlmError> {
        let secrets = self.c.secrets();
        let ex = Exchange {
            provider: &self.c.provider,
            model,
            secrets: &secrets,
            base_url: &self.c.base_url,
        };
        let url = format!("{}/v1/messages", self.c.base_url);
        let mut builder = self.c.post(&url).header("anthropic-version", API_VERSION);
        if let Some(k) = &self.c.api_key {
            builder = builder.header("x-api-key", k);
        }
        let v = ex.post_json(builder, &request_body(model, request)).await?;
        parse_response(&v, request).map_err(|m| ex.error(ErrorKind::Parse, m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ToolSpec;

    #[test]
    fn body_merges_roles_and_forces_the_schema_tool() {
        let mut r = ChatRequest::user("hi")
            .with_system("sys")
            .with_schema("Out", json!({"type": "object"}));
        r.messages.push(Message::assistant_tool_calls(
            Some("thinking".into()),
            vec![
                ToolCall {
                    id: "a".into(),
                    name: "f".into(),
                    arguments: json!({"x": 1}),
                },
                ToolCall {
                    id: "b".into(),
                    name: "f".into(),
                    arguments: json!({"x": 2}),
                },
            ],
        ));
        r.messages.push(Message::tool_result("a", "f", "ra"));
        r.messages.push(Message::tool_result("b", "f", "rb"));
        let b = request_body("claude", &r);
        assert_eq!(b["system"], "sys");
        assert_eq!(b["max_tokens"], DEFAULT_MAX_TOKENS);
        let msgs = b["messages"].as_array().expect("messages");
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[1]["content"].as_array().map(Vec::len), Some(3));
        assert_eq!(
            msgs[2]["content"][1],
            json!({"type": "tool_result", "tool_use_id": "b", "content": "rb"})
        );
        assert_eq!(b["tool_choice"], json!({"type": "tool", "name": "Out"}));
        assert!(b.get("seed").is_none());

        let with_tools = request_body(
            "claude",
            &ChatRequest::user("x").with_tools(vec![ToolSpec {
                name: "t".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }]),
        );
        assert!(with_tools.get("tool_choice").is_none());
        assert_eq!(
            with_tools["tools"][0]["input_schema"],
            json!({"type": "object"})
        );
    }

    #[test]
    fn parses_structured_tool_text_and_usage() {
        let r = ChatRequest::user("x").with_schema("Out", json!({"type": "array"}));
        let v = json!({"content": [{"type": "tool_use", "id": "t1", "name": "Out", "input": {"value": [1, 2]}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 7, "cache_read_input_tokens": 10}});
        let p = parse_response(&v, &r).expect("ok");
        assert_eq!(p.text.as_deref(), Some("[1,2]"));
        assert!(p.tool_calls.is_empty());
        assert_eq!(p.finish_reason, FinishReason::Stop);
        assert_eq!(
            p.usage,
            Some(TokenCounts {
                input_tokens: 15,
                output_tokens: 7,
                cached_tokens: 10
            })
        );
        let plain = json!({"content": [{"type": "text", "text": "a"}, {"type": "tool_use", "id": "t", "name": "g", "input": {}}], "stop_reason": "tool_use"});
        let p = parse_response(&plain, &ChatRequest::user("x")).expect("ok");
        assert_eq!(
            (p.text.as_deref(), p.tool_calls.len(), p.usage),
            (Some("a"), 1, None)
        );
        assert_eq!(p.finish_reason, FinishReason::ToolCalls);
    }
}
