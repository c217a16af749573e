//! The OpenAI Responses API (`POST {base_url}/responses`), used by the `openai`, `grok` and
//! `xai` providers for requests that carry provider-native tools (Chat Completions has
//! none; everything else about these providers stays on Chat Completions), and by
//! `grok-responses` ([`ResponsesBackend`]) for every request: the original's
//! `grok-responses:` prefix is xAI through this API, which its native web and X search need.
//!
//! The body: `input` holds the system prompt (`{"role": "system"}`), the user and assistant
//! messages, function calls (`function_call`) and their results (`function_call_output`);
//! `tools` holds the function tools (`{"type": "function", "name", "description",
//! "parameters"}`) and the native ones: web search `{"type": "web_search"}` (OpenAI:
//! `filters.allowed_domains` / `filters.blocked_domains`; `max_uses` becomes the request's
//! `max_tool_calls`) and code execution `{"type": "code_interpreter", "container": {"type":
//! "auto"}}` (xAI: `{"type": "code_interpreter"}`, and OpenAI is asked to
//! `include` the `code_interpreter_call.outputs`). `store` is false (nothing is kept on the
//! provider's side: every request carries its whole conversation). `temperature`, `top_p`
//! and `max_output_tokens` are sent; the Responses API has no `seed` or `stop`, so they are
//! not. A response schema becomes `text.format` (`json_schema`, not strict).
//!
//! The answer: the `output_text` parts of `message` items are the text (their
//! `url_citation` annotations its `Sources:`), each `code_interpreter_call` adds its code
//! and log output (see [`NativeTool`](crate::types::NativeTool)), `function_call` items are
//! tool calls; usage is `input_tokens` / `output_tokens` (with
//! `input_tokens_details.cached_tokens`). A `failed` response is an error; an
//! `incomplete` one ends with `Length` (`max_output_tokens`) or `ContentFilter`.

use crate::backend::{Backend, Exchange, RawResponse};
use crate::error::{ErrorKind, LlmError};
use crate::providers::{HttpCommon, NativeText, check_native_tools, fields};
use crate::types::{ChatRequest, FinishReason, Message, NativeTool, ToolCall};
use mixseek_config::ProviderKind;
use serde_json::{Value, json};
use std::sync::atomic::AtomicU32;

/// The built-in provider that speaks the Responses API for every request.
pub(crate) const GROK_RESPONSES: &str = "grok-responses";

/// Which Responses API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavour {
    /// OpenAI's.
    OpenAi,
    /// xAI's (OpenAI-compatible, with its own tool options).
    Xai,
}

/// The Responses API of provider `name`, if it has one we send native tools to.
pub(crate) fn flavour(name: &str) -> Option<Flavour> {
    match name {
        "openai" => Some(Flavour::OpenAi),
        "grok" | "xai" | GROK_RESPONSES => Some(Flavour::Xai),
        _ => None,
    }
}

/// The tool object of a native tool.
pub(crate) fn native_tool_json(tool: &NativeTool, flavour: Flavour) -> Value {
    match (tool, flavour) {
        (NativeTool::WebSearch(o), Flavour::OpenAi) => {
            let mut t = json!({"type": "web_search"});
            let mut filters = serde_json::Map::new();
            if !o.allowed_domains.is_empty() {
                filters.insert("allowed_domains".into(), json!(o.allowed_domains));
            }
            if !o.blocked_domains.is_empty() {
                filters.insert("blocked_domains".into(), json!(o.blocked_domains));
            }
            if !filters.is_empty() {
                t["filters"] = Value::Object(filters);
            }
            t
        }
        (NativeTool::WebSearch(_), Flavour::Xai) => json!({"type": "web_search"}),
        (NativeTool::CodeExecution, Flavour::OpenAi) => {
            json!({"type": "code_interpreter", "container": {"type": "auto"}})
        }
        (NativeTool::CodeExecution, Flavour::Xai) => json!({"type": "code_interpreter"}),
    }
}

/// The Responses body of `request` for `model`.
pub(crate) fn request_body(model: &str, request: &ChatRequest, flavour: Flavour) -> Value {
    let mut input: Vec<Value> = Vec::with_capacity(request.messages.len() + 1);
    if let Some(s) = request.system.as_deref().filter(|s| !s.is_empty()) {
        input.push(json!({"role": "system", "content": s}));
    }
    for m in &request.messages {
        match m {
            Message::User { content } => input.push(json!({"role": "user", "content": content})),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if let Some(c) = content.as_deref().filter(|c| !c.is_empty()) {
                    input.push(json!({"role": "assistant", "content": c}));
                }
                for t in tool_calls {
                    input.push(json!({
                        "type": "function_call",
                        "call_id": t.id,
                        "name": t.name,
                        "arguments": serde_json::to_string(&t.arguments).unwrap_or_default(),
                    }));
                }
            }
            Message::Tool {
                call_id, content, ..
            } => input.push(
                json!({"type": "function_call_output", "call_id": call_id, "output": content}),
            ),
        }
    }
    let mut body = json!({"model": model, "input": input, "store": false});
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters}))
        .collect();
    tools.extend(
        request
            .native_tools
            .iter()
            .map(|t| native_tool_json(t, flavour)),
    );
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    let max_uses = request.native_tools.iter().find_map(|t| match t {
        NativeTool::WebSearch(o) => o.max_uses,
        NativeTool::CodeExecution => None,
    });
    if let Some(m) = max_uses {
        body["max_tool_calls"] = json!(m);
    }
    if flavour == Flavour::OpenAi
        && request
            .native_tools
            .iter()
            .any(|t| matches!(t, NativeTool::CodeExecution))
    {
        body["include"] = json!(["code_interpreter_call.outputs"]);
    }
    if let Some(s) = &request.response_schema {
        body["text"] = json!({"format": {"type": "json_schema", "name": s.name, "schema": s.schema, "strict": false}});
    }
    let p = &request.params;
    if let Some(t) = p.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(t) = p.top_p {
        body["top_p"] = json!(t);
    }
    if let Some(m) = p.max_tokens {
        body["max_output_tokens"] = json!(m);
    }
    crate::passthrough::responses(&mut body, &p.extra);
    body
}

/// Parses a Responses answer.
pub(crate) fn parse_response(v: &Value) -> Result<RawResponse, String> {
    let status = v.get("status").and_then(|s| s.as_str());
    if status == Some("failed") {
        let why = v
            .pointer("/error/message")
            .and_then(|m| m.as_str())
            .unwrap_or("no reason given");
        return Err(format!("the response failed: {why}"));
    }
    let output = fields::main_list(v, "output", "OpenAI Responses")?;
    let mut text = NativeText::default();
    let mut tool_calls = Vec::new();
    let mut refused = false;
    for item in output {
        let item = fields::object(item, "an output item")?;
        match item.get("type").and_then(|t| t.as_str()) {
            Some("message") => {
                for part in item
                    .get("content")
                    .and_then(|c| c.as_array())
                    .into_iter()
                    .flatten()
                {
                    match part.get("type").and_then(|t| t.as_str()) {
                        Some("output_text") => {
                            text.text(
                                fields::opt_str(part, "text", "output_text.text")?.unwrap_or(""),
                            );
                            for a in part
                                .get("annotations")
                                .and_then(|a| a.as_array())
                                .into_iter()
                                .flatten()
                            {
                                if a.get("type").and_then(|t| t.as_str()) == Some("url_citation")
                                    && let Some(url) = a.get("url").and_then(|u| u.as_str())
                                {
                                    text.source(url, a.get("title").and_then(|t| t.as_str()));
                                }
                            }
                        }
                        Some("refusal") => {
                            refused = true;
                            text.text(part.get("refusal").and_then(|t| t.as_str()).unwrap_or(""));
                        }
                        _ => {}
                    }
                }
            }
            Some("code_interpreter_call") => {
                if let Some(code) = item.get("code").and_then(|c| c.as_str()) {
                    text.code("python", code);
                }
                if let Some(outputs) = item.get("outputs").and_then(|o| o.as_array()) {
                    let logs: Vec<&str> = outputs
                        .iter()
                        .map(|o| match o.get("type").and_then(|t| t.as_str()) {
                            Some("logs") => o.get("logs").and_then(|l| l.as_str()).unwrap_or(""),
                            Some("image") => "(an image)",
                            _ => "",
                        })
                        .filter(|l| !l.is_empty())
                        .collect();
                    text.output(&logs.join("\n"));
                }
            }
            Some("function_call") => {
                let name = fields::opt_str(item, "name", "function_call.name")?
                    .ok_or_else(|| "a function_call has no name".to_string())?;
                let arguments = fields::arguments(item.get("arguments"));
                let id = item
                    .get("call_id")
                    .or_else(|| item.get("id"))
                    .and_then(|i| i.as_str())
                    .map_or_else(|| format!("call_{}", tool_calls.len()), str::to_string);
                tool_calls.push(ToolCall::new(id, name, arguments));
            }
            _ => {}
        }
    }
    let finish_reason = if status == Some("incomplete") {
        match fields::reason(v.pointer("/incomplete_details/reason")).as_deref() {
            Some("max_output_tokens") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(o) => FinishReason::Other(o.to_string()),
            None => FinishReason::Other("incomplete".into()),
        }
    } else if refused {
        FinishReason::ContentFilter
    } else if !tool_calls.is_empty() {
        FinishReason::ToolCalls
    } else {
        FinishReason::Stop
    };
    let (usage, usage_problem) = fields::split_usage(fields::usage(
        v.get("usage"),
        "input_tokens",
        "output_tokens",
        &[],
        &[],
        "/input_tokens_details/cached_tokens",
    ));
    Ok(RawResponse {
        text: text.finish(),
        tool_calls,
        usage,
        usage_problem,
        finish_reason,
    })
}

/// The backend of `grok-responses`: every request (text, structured output through
/// `text.format`, function tools, native tools) goes to `{base_url}/responses`. There is no
/// structured-output fallback chain as on Chat Completions: xAI's Responses API takes
/// `json_schema`.
pub(crate) struct ResponsesBackend {
    c: HttpCommon,
}

impl ResponsesBackend {
    pub(crate) fn new(c: HttpCommon) -> Self {
        Self { c }
    }
}

#[async_trait::async_trait]
impl Backend for ResponsesBackend {
    async fn send(
        &self,
        model: &str,
        request: &ChatRequest,
        _attempts: &AtomicU32,
    ) -> Result<RawResponse, LlmError> {
        let secrets = self.c.secrets();
        let ex = self.c.exchange(model, &secrets);
        send(&self.c, &ex, model, request).await
    }
}

/// Sends `request` to `{base_url}/responses` (for `openai`, `grok`, `xai`: only requests
/// with native tools).
pub(crate) async fn send(
    c: &HttpCommon,
    ex: &Exchange<'_>,
    model: &str,
    request: &ChatRequest,
) -> Result<RawResponse, LlmError> {
    check_native_tools(ex, ProviderKind::OpenaiCompatible, request)?;
    let Some(flavour) = flavour(&c.provider) else {
        // check_native_tools refuses every provider without a flavour.
        return Err(ex.error(
            ErrorKind::Config,
            format!("provider `{}` has no Responses API", c.provider),
        ));
    };
    let url = format!("{}/responses", c.base_url);
    let mut builder = c.post(&url);
    if let Some(k) = &c.api_key {
        builder = builder.bearer_auth(k);
    }
    let v = ex
        .post_json(
            crate::passthrough::with_headers(builder, &request.params.extra),
            &request_body(model, request, flavour),
        )
        .await?;
    ex.parse(|| parse_response(&v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::TokenCounts;
    use crate::types::{ToolSpec, WebSearchOptions};

    #[test]
    fn body_carries_input_native_tools_and_params() {
        let mut r = ChatRequest::user("find it")
            .with_system("sys")
            .with_native_tools(vec![NativeTool::WebSearch(WebSearchOptions {
                max_uses: Some(3),
                allowed_domains: vec!["example.com".into()],
                blocked_domains: Vec::new(),
            })]);
        r.params.max_tokens = Some(200);
        r.params.seed = Some(1);
        r.params.stop = vec!["END".into()];
        let b = request_body("gpt-4.1", &r, Flavour::OpenAi);
        assert_eq!(
            b,
            json!({
                "model": "gpt-4.1",
                "input": [{"role": "system", "content": "sys"}, {"role": "user", "content": "find it"}],
                "store": false,
                "tools": [{"type": "web_search", "filters": {"allowed_domains": ["example.com"]}}],
                "max_tool_calls": 3,
                "max_output_tokens": 200
            })
        );
        let code = ChatRequest::user("x").with_native_tools(vec![NativeTool::CodeExecution]);
        let b = request_body("gpt-4.1", &code, Flavour::OpenAi);
        assert_eq!(
            b["tools"],
            json!([{"type": "code_interpreter", "container": {"type": "auto"}}])
        );
        assert_eq!(b["include"], json!(["code_interpreter_call.outputs"]));
        let b = request_body("grok-4", &code, Flavour::Xai);
        assert_eq!(b["tools"], json!([{"type": "code_interpreter"}]));
        assert!(b.get("include").is_none());

        let mut f = ChatRequest::user("go")
            .with_native_tools(vec![NativeTool::web_search()])
            .with_tools(vec![ToolSpec {
                name: "f".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }]);
        f.messages.push(Message::assistant_tool_calls(
            None,
            vec![ToolCall::new("c1", "f", json!({"a": 1}))],
        ));
        f.messages.push(Message::tool_result("c1", "f", "r"));
        let b = request_body("gpt", &f, Flavour::OpenAi);
        assert_eq!(
            b["input"][1],
            json!({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"a\":1}"})
        );
        assert_eq!(
            b["input"][2],
            json!({"type": "function_call_output", "call_id": "c1", "output": "r"})
        );
        assert_eq!(
            b["tools"][0],
            json!({"type": "function", "name": "f", "description": "d", "parameters": {"type": "object"}})
        );
    }

    #[test]
    fn parses_messages_code_runs_citations_and_usage() {
        let v = json!({"status": "completed", "output": [
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            {"type": "code_interpreter_call", "id": "ci_1", "code": "print(6*7)", "outputs": [{"type": "logs", "logs": "42\n"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is 42.",
                "annotations": [{"type": "url_citation", "url": "https://a.example/x", "title": "A"},
                                {"type": "url_citation", "url": "https://a.example/x", "title": "A"}]}]}
        ], "usage": {"input_tokens": 30, "output_tokens": 9, "input_tokens_details": {"cached_tokens": 4}}});
        let r = parse_response(&v).expect("ok");
        assert_eq!(
            r.text.as_deref(),
            Some(
                "```python\nprint(6*7)\n```\n\nOutput:\n```\n42\n```\n\nIt is 42.\n\nSources:\n- A — https://a.example/x"
            )
        );
        assert_eq!(r.finish_reason, FinishReason::Stop);
        assert_eq!(
            r.usage,
            Some(TokenCounts {
                input_tokens: 30,
                output_tokens: 9,
                cached_tokens: 4
            })
        );
        let fc = parse_response(&json!({"status": "completed", "output": [
            {"type": "function_call", "call_id": "call_9", "name": "f", "arguments": "{\"q\":1}"}]}))
        .expect("ok");
        assert_eq!(
            (fc.tool_calls[0].id.as_str(), fc.finish_reason, fc.text),
            ("call_9", FinishReason::ToolCalls, None)
        );
        let cut = parse_response(
            &json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "par"}]}]}),
        )
        .expect("ok");
        assert_eq!(
            (cut.text.as_deref(), cut.finish_reason),
            (Some("par"), FinishReason::Length)
        );
        assert!(
            parse_response(&json!({"status": "failed", "error": {"message": "boom"}}))
                .is_err_and(|e| e.contains("boom"))
        );
        assert!(parse_response(&json!({"id": "x"})).is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_json_answer_parses_or_fails_without_panicking(
            v in crate::providers::fields::arbitrary::json()
        ) {
            let _ = parse_response(&v);
            let _ = parse_response(&json!({"status": v.clone(), "output": [v.clone()], "usage": v.clone()}));
            let _ = parse_response(&json!({"output": [{"type": "message", "content": [v.clone()]}], "incomplete_details": v}));
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
