//! Anthropic Messages (`POST {base_url}/v1/messages`, `x-api-key`, `anthropic-version:
//! 2023-06-01`).
//!
//! Structured output uses a **forced tool**: the schema becomes the `input_schema` of a
//! tool named after it, `tool_choice` forces that tool, and the tool's `input` is returned
//! as the response text (a schema whose root is not an object is wrapped in
//! `{"value": …}` and unwrapped again). `max_tokens` is required by the API: 4096 when
//! the request sets none. `seed` is not supported and not sent.
//!
//! Provider-native tools are server tools: web search is
//! `{"type": "web_search_20250305", "name": "web_search", "max_uses"?, "allowed_domains"?,
//! "blocked_domains"?}`, code execution `{"type": "code_execution_20250825", "name":
//! "code_execution"}` with the header `anthropic-beta: code-execution-2025-08-25`. In the
//! answer, `server_tool_use` blocks and their `*_tool_result` blocks become code and output
//! blocks of the text, and text `citations` its `Sources:` (see
//! [`NativeTool`](crate::types::NativeTool)); the legacy `code_execution_20250522` blocks
//! are read too. A `pause_turn` stop (a long server-tool turn the API paused) is continued
//! at once by sending the answer back, up to [`MAX_CONTINUATIONS`] times; each resend
//! counts as an attempt and the usage of every part is summed. Server tool use counts
//! (`usage.server_tool_use`) are logged at debug level: the usage record has no field
//! for them.

use crate::backend::{Backend, RawResponse};
use crate::error::LlmError;
use crate::providers::{HttpCommon, NativeText, check_native_tools, fields};
use crate::types::{ChatRequest, FinishReason, Message, NativeTool, ToolCall};
use mixseek_config::ProviderKind;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU32, Ordering};

/// `max_tokens` when the request sets none.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 4096;
pub(crate) const API_VERSION: &str = "2023-06-01";
/// The server tool type of web search.
pub(crate) const WEB_SEARCH_TOOL: &str = "web_search_20250305";
/// The server tool type of code execution.
pub(crate) const CODE_EXECUTION_TOOL: &str = "code_execution_20250825";
/// The `anthropic-beta` value code execution needs.
pub const CODE_EXECUTION_BETA: &str = "code-execution-2025-08-25";
/// How many times a `pause_turn` answer is continued within one attempt.
pub(crate) const MAX_CONTINUATIONS: u32 = 4;

/// The server-tool object of a native tool.
pub(crate) fn native_tool_json(tool: &NativeTool) -> Value {
    match tool {
        NativeTool::WebSearch(o) => {
            let mut t = json!({"type": WEB_SEARCH_TOOL, "name": "web_search"});
            if let Some(m) = o.max_uses {
                t["max_uses"] = json!(m);
            }
            if !o.allowed_domains.is_empty() {
                t["allowed_domains"] = json!(o.allowed_domains);
            }
            if !o.blocked_domains.is_empty() {
                t["blocked_domains"] = json!(o.blocked_domains);
            }
            t
        }
        NativeTool::CodeExecution => json!({"type": CODE_EXECUTION_TOOL, "name": "code_execution"}),
    }
}

/// The `anthropic-beta` header value `request` needs, if any.
pub(crate) fn beta_header(request: &ChatRequest) -> Option<&'static str> {
    request
        .native_tools
        .iter()
        .any(|t| matches!(t, NativeTool::CodeExecution))
        .then_some(CODE_EXECUTION_BETA)
}

pub(crate) struct AnthropicBackend {
    c: HttpCommon,
}

impl AnthropicBackend {
    pub(crate) fn new(c: HttpCommon) -> Self {
        Self { c }
    }
}

fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(|t| t.as_str()) == Some("object")
}

/// The Messages body of `request` for `model`.
pub(crate) fn request_body(model: &str, request: &ChatRequest) -> Value {
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
                call_id,
                content,
                is_error,
                ..
            } => {
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
                if *is_error {
                    block["is_error"] = json!(true);
                }
                push("user", block);
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
    tools.extend(request.native_tools.iter().map(native_tool_json));
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
        if request.tools.is_empty() && request.native_tools.is_empty() {
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
    let has_tools = body.get("tools").is_some();
    crate::passthrough::anthropic(&mut body, &p.extra, has_tools);
    body
}

/// Parses a Messages answer. With a response schema, the forced tool's input becomes the
/// text.
pub(crate) fn parse_response(v: &Value, request: &ChatRequest) -> Result<RawResponse, String> {
    let content = fields::main_list(v, "content", "Anthropic Messages")?;
    let schema_tool = request.response_schema.as_ref();
    let mut text = NativeText::default();
    let mut structured: Option<String> = None;
    let mut tool_calls = Vec::new();
    for block in content {
        let block = fields::object(block, "a content block")?;
        match block.get("type").and_then(|t| t.as_str()) {
            Some("text") => {
                text.text(fields::opt_str(block, "text", "text")?.unwrap_or(""));
                for c in block
                    .get("citations")
                    .and_then(|c| c.as_array())
                    .into_iter()
                    .flatten()
                {
                    if let Some(url) = c.get("url").and_then(|u| u.as_str()) {
                        text.source(url, c.get("title").and_then(|t| t.as_str()));
                    }
                }
            }
            Some("server_tool_use") => server_tool_use(block, &mut text),
            Some(t) if t.ends_with("_tool_result") => server_tool_result(t, block, &mut text),
            Some("tool_use") => {
                let name = fields::opt_str(block, "name", "tool_use.name")?
                    .ok_or_else(|| "a tool_use block has no name".to_string())?;
                let input = match block.get("input") {
                    None | Some(Value::Null) => json!({}),
                    Some(i) => i.clone(),
                };
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
                tool_calls.push(ToolCall::new(id, name, input));
            }
            _ => {}
        }
    }
    let text = match structured {
        Some(s) => Some(s),
        None => text.finish(),
    };
    let finish_reason = match fields::reason(v.get("stop_reason")).as_deref() {
        Some("end_turn") | Some("stop_sequence") | None => FinishReason::Stop,
        Some("max_tokens") => FinishReason::Length,
        Some("tool_use") if tool_calls.is_empty() => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("refusal") => FinishReason::ContentFilter,
        Some(o) => FinishReason::Other(o.to_string()),
    };
    if let Some(stu) = v
        .pointer("/usage/server_tool_use")
        .filter(|s| s.is_object())
    {
        tracing::debug!(server_tool_use = %stu, "Anthropic server tool use");
    }
    // Anthropic's input_tokens exclude cached tokens (read or written); ours include them.
    let (usage, usage_problem) = fields::split_usage(fields::usage(
        v.get("usage"),
        "input_tokens",
        "output_tokens",
        &["cache_read_input_tokens", "cache_creation_input_tokens"],
        &[],
        "/cache_read_input_tokens",
    ));
    Ok(RawResponse {
        text,
        tool_calls,
        usage,
        usage_problem,
        finish_reason,
    })
}

/// A `server_tool_use` block: the code of a code run (web searches leave no trace: their
/// sources come from the citations).
fn server_tool_use(block: &Value, text: &mut NativeText) {
    let name = block.get("name").and_then(|n| n.as_str()).unwrap_or("");
    let input = block.get("input").cloned().unwrap_or(Value::Null);
    let s = |k: &str| input.get(k).and_then(|v| v.as_str());
    match name {
        // code_execution_20250522
        "code_execution" => {
            if let Some(code) = s("code") {
                text.code("python", code);
            }
        }
        "bash_code_execution" => {
            if let Some(cmd) = s("command") {
                text.code("bash", cmd);
            }
        }
        "text_editor_code_execution" => {
            if let (Some(path), Some(content)) = (s("path"), s("file_text")) {
                let lang = path.rsplit_once('.').map_or("", |(_, ext)| match ext {
                    "py" => "python",
                    "sh" => "bash",
                    other => other,
                });
                text.code(lang, &format!("# {path}\n{content}"));
            }
        }
        _ => {}
    }
}

/// A `*_tool_result` block: the output of a code run, or the error of a server tool.
fn server_tool_result(kind: &str, block: &Value, text: &mut NativeText) {
    let Some(content) = block.get("content") else {
        return;
    };
    if let Some(code) = content
        .get("error_code")
        .and_then(|c| c.as_str())
        .filter(|_| {
            content
                .get("type")
                .and_then(|t| t.as_str())
                .is_some_and(|t| t.ends_with("_error"))
        })
    {
        let tool = kind.trim_end_matches("_tool_result");
        text.output(&format!("({tool} failed: {code})"));
        return;
    }
    if kind == "web_search_tool_result" || kind == "text_editor_code_execution_tool_result" {
        return;
    }
    let stdout = content.get("stdout").and_then(|s| s.as_str()).unwrap_or("");
    let stderr = content.get("stderr").and_then(|s| s.as_str()).unwrap_or("");
    if content.get("stdout").is_none() && content.get("stderr").is_none() {
        return;
    }
    let mut out = stdout.trim_end().to_string();
    if !stderr.trim().is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(stderr.trim_end());
    }
    if let Some(rc) = content.get("return_code").and_then(|r| r.as_i64())
        && rc != 0
    {
        out.push_str(&format!("\n(exit code {rc})"));
    }
    text.output(&out);
}

/// Sums the numeric fields of two `usage` objects (the parts of a continued turn).
fn add_usage(total: &mut Value, part: &Value) {
    let (Some(t), Some(p)) = (total.as_object_mut(), part.as_object()) else {
        if part.is_object() {
            *total = part.clone();
        }
        return;
    };
    for (k, v) in p {
        match (t.get_mut(k), v) {
            (Some(Value::Number(a)), Value::Number(b)) => {
                if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
                    *a = x.saturating_add(y).into();
                }
            }
            (Some(a @ Value::Object(_)), Value::Object(_)) => add_usage(a, v),
            (None, _) => {
                t.insert(k.clone(), v.clone());
            }
            _ => {}
        }
    }
}

#[async_trait::async_trait]
impl Backend for AnthropicBackend {
    async fn send(
        &self,
        model: &str,
        request: &ChatRequest,
        attempts: &AtomicU32,
    ) -> Result<RawResponse, LlmError> {
        let secrets = self.c.secrets();
        let ex = self.c.exchange(model, &secrets);
        check_native_tools(&ex, ProviderKind::Anthropic, request)?;
        let url = format!("{}/v1/messages", self.c.base_url);
        let mut body = request_body(model, request);
        // The blocks and usage of every part of a turn continued after `pause_turn`.
        let mut blocks: Vec<Value> = Vec::new();
        let mut usage = Value::Null;
        let mut continuations = 0;
        loop {
            let mut builder = self.c.post(&url).header("anthropic-version", API_VERSION);
            if let Some(k) = &self.c.api_key {
                builder = builder.header("x-api-key", k);
            }
            if let Some(beta) = beta_header(request) {
                builder = builder.header("anthropic-beta", beta);
            }
            let builder = crate::passthrough::with_headers(builder, &request.params.extra);
            let mut v = ex.post_json(builder, &body).await?;
            let paused = v.get("stop_reason").and_then(|s| s.as_str()) == Some("pause_turn");
            let content = v.get("content").cloned().unwrap_or(Value::Null);
            if let Some(u) = v.get("usage") {
                add_usage(&mut usage, u);
            }
            if paused && continuations < MAX_CONTINUATIONS && content.is_array() {
                continuations += 1;
                attempts.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(provider = %self.c.provider, model, continuations, "pause_turn: continuing the server-tool turn");
                blocks.extend(content.as_array().into_iter().flatten().cloned());
                if let Some(m) = body["messages"].as_array_mut() {
                    m.push(json!({"role": "assistant", "content": content}));
                }
                continue;
            }
            if continuations > 0 {
                blocks.extend(content.as_array().into_iter().flatten().cloned());
                v["content"] = Value::Array(blocks);
                v["usage"] = usage;
            }
            return ex.parse(|| parse_response(&v, request));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{TokenCounts, ToolSpec};

    #[test]
    fn body_merges_roles_and_forces_the_schema_tool() {
        let mut r = ChatRequest::user("hi")
            .with_system("sys")
            .with_schema("Out", json!({"type": "object"}));
        r.messages.push(Message::assistant_tool_calls(
            Some("thinking".into()),
            vec![
                ToolCall::new("a", "f", json!({"x": 1})),
                ToolCall::new("b", "f", json!({"x": 2})),
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

    #[test]
    fn native_tools_are_server_tools_with_the_beta_header() {
        use crate::types::WebSearchOptions;
        let r = ChatRequest::user("x").with_native_tools(vec![
            NativeTool::WebSearch(WebSearchOptions {
                max_uses: Some(2),
                allowed_domains: Vec::new(),
                blocked_domains: vec!["spam.example".into()],
            }),
            NativeTool::CodeExecution,
        ]);
        let b = request_body("claude", &r);
        assert_eq!(
            b["tools"],
            json!([
                {"type": "web_search_20250305", "name": "web_search", "max_uses": 2, "blocked_domains": ["spam.example"]},
                {"type": "code_execution_20250825", "name": "code_execution"}
            ])
        );
        assert_eq!(beta_header(&r), Some("code-execution-2025-08-25"));
        let ws = ChatRequest::user("x").with_native_tools(vec![NativeTool::web_search()]);
        assert_eq!(beta_header(&ws), None);
        assert_eq!(
            request_body("claude", &ws)["tools"],
            json!([{"type": "web_search_20250305", "name": "web_search"}])
        );
    }

    #[test]
    fn server_tool_blocks_become_code_output_and_sources() {
        let v = json!({"content": [
            {"type": "text", "text": "Let me compute."},
            {"type": "server_tool_use", "id": "s1", "name": "bash_code_execution", "input": {"command": "python -c 'print(6*7)'"}},
            {"type": "bash_code_execution_tool_result", "tool_use_id": "s1", "content": {"type": "bash_code_execution_result", "stdout": "42\n", "stderr": "", "return_code": 0}},
            {"type": "server_tool_use", "id": "s2", "name": "code_execution", "input": {"code": "1/0"}},
            {"type": "code_execution_tool_result", "tool_use_id": "s2", "content": {"type": "code_execution_result", "stdout": "", "stderr": "ZeroDivisionError", "return_code": 1}},
            {"type": "server_tool_use", "id": "s3", "name": "web_search", "input": {"query": "q"}},
            {"type": "web_search_tool_result", "tool_use_id": "s3", "content": [{"type": "web_search_result", "url": "https://ignored.example", "title": "not cited"}]},
            {"type": "server_tool_use", "id": "s4", "name": "web_search", "input": {"query": "q2"}},
            {"type": "web_search_tool_result", "tool_use_id": "s4", "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}},
            {"type": "text", "text": "The answer is 42.", "citations": [{"type": "web_search_result_location", "url": "https://a.example", "title": "A", "cited_text": "42"}]}
        ], "stop_reason": "end_turn", "usage": {"input_tokens": 100, "output_tokens": 20, "server_tool_use": {"web_search_requests": 2}}});
        let p = parse_response(&v, &ChatRequest::user("x")).expect("ok");
        assert_eq!(
            p.text.as_deref(),
            Some(
                "Let me compute.\n\n```bash\npython -c 'print(6*7)'\n```\n\nOutput:\n```\n42\n```\n\n```python\n1/0\n```\n\nOutput:\n```\nZeroDivisionError\n(exit code 1)\n```\n\nOutput:\n```\n(web_search failed: max_uses_exceeded)\n```\n\nThe answer is 42.\n\nSources:\n- A — https://a.example"
            )
        );
        assert_eq!(p.finish_reason, FinishReason::Stop);
        assert!(p.tool_calls.is_empty());
        assert_eq!(p.usage.map(|u| u.input_tokens), Some(100));
    }

    #[test]
    fn continued_usage_is_summed() {
        let mut total = Value::Null;
        add_usage(
            &mut total,
            &json!({"input_tokens": 10, "output_tokens": 2, "server_tool_use": {"web_search_requests": 1}}),
        );
        add_usage(
            &mut total,
            &json!({"input_tokens": 30, "output_tokens": 5, "cache_read_input_tokens": 4, "server_tool_use": {"web_search_requests": 1}}),
        );
        assert_eq!(
            total,
            json!({"input_tokens": 40, "output_tokens": 7, "cache_read_input_tokens": 4, "server_tool_use": {"web_search_requests": 2}})
        );
    }

    proptest::proptest! {
        #[test]
        fn any_json_answer_parses_or_fails_without_panicking(
            v in crate::providers::fields::arbitrary::json()
        ) {
            let requests = [
                ChatRequest::user("x"),
                ChatRequest::user("x").with_schema("Verdict", json!({"type": "object"})),
                ChatRequest::user("x").with_schema("Verdict", json!({"type": "array"})),
            ];
            for r in &requests {
                let _ = parse_response(&v, r);
                let _ = parse_response(&json!({"content": [v.clone()], "stop_reason": v.clone(), "usage": v.clone()}), r);
                let _ = parse_response(&json!({"content": [{"type": "tool_use", "name": "Verdict", "input": v.clone()}]}), r);
            }
            let mut total = v.clone();
            add_usage(&mut total, &v);
            add_usage(&mut total, &json!({"input_tokens": u64::MAX}));
        }

        #[test]
        fn any_bytes_parse_or_fail_without_panicking(
            bytes in crate::providers::fields::arbitrary::bytes()
        ) {
            if let Ok(v) = crate::backend::parse_json_body(&bytes) {
                let _ = parse_response(&v, &ChatRequest::user("x"));
            }
        }
    }
}
