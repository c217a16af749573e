//! Google Gemini API (`POST {base_url}/v1beta/models/{model}:generateContent`, key in the
//! `x-goog-api-key` header, never in the URL).
//!
//! Structured output sets `responseMimeType: application/json` and `responseSchema`.
//! Gemini's schema dialect is a subset of OpenAPI 3: [`to_gemini_schema`] inlines `$ref`s,
//! turns `["T", "null"]` and `anyOf` with `null` into `nullable`, `const` into a one-value
//! `enum`, upper-cases types and drops keywords Gemini rejects (`$schema`, `$defs`,
//! `additionalProperties`, `title`, …). The answer is still validated against the original
//! schema by [`generate_structured`](crate::generate_structured). Tool parameters are
//! converted the same way. Function calls get ids `call_<n>` when Gemini sends none.
//!
//! A function call's `thoughtSignature` (thinking models sign their calls and require the
//! signature back with the call in the next request) is kept as the call's
//! [`provider_data`](crate::types::ToolCall::provider_data) and echoed beside the
//! `functionCall` part when the conversation is sent again.
//!
//! Provider-native tools: web search is `{"google_search": {}}`, code execution
//! `{"code_execution": {}}` (each its own entry of `tools`, after the function
//! declarations). In the answer, `executableCode` / `codeExecutionResult` parts become code
//! and output blocks of the text, and the web pages of `groundingMetadata.groundingChunks`
//! its `Sources:` (see [`NativeTool`](crate::types::NativeTool)); the search queries and
//! the rendered search widget are dropped. `toolUsePromptTokenCount` (the search results
//! read by the model) counts as input tokens.

use crate::backend::{Backend, RawResponse};
use crate::error::LlmError;
use crate::providers::{HttpCommon, NativeText, check_native_tools, fields};
use crate::types::{ChatRequest, FinishReason, Message, NativeTool, ToolCall};
use mixseek_config::ProviderKind;
use serde_json::{Map, Value, json};
use std::sync::atomic::AtomicU32;

pub(crate) struct GeminiBackend {
    c: HttpCommon,
}

impl GeminiBackend {
    pub(crate) fn new(c: HttpCommon) -> Self {
        Self { c }
    }
}

const KEPT: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "properties",
    "required",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "anyOf",
    "propertyOrdering",
    "minLength",
    "maxLength",
    "pattern",
];

/// Converts a JSON schema to Gemini's `Schema` dialect (see the module docs).
pub(crate) fn to_gemini_schema(schema: &Value) -> Value {
    convert(schema, schema, 0)
}

fn resolve<'a>(root: &'a Value, r: &str) -> Option<&'a Value> {
    let path = r.strip_prefix('#')?;
    if path.is_empty() {
        Some(root)
    } else {
        root.pointer(path)
    }
}

fn convert(s: &Value, root: &Value, depth: u32) -> Value {
    if depth > 16 {
        return json!({"type": "STRING"});
    }
    let Some(obj) = s.as_object() else {
        return json!({"type": "STRING"});
    };
    if let Some(r) = obj.get("$ref").and_then(|r| r.as_str()) {
        let mut target = resolve(root, r).map_or_else(
            || json!({"type": "STRING"}),
            |t| convert(t, root, depth + 1),
        );
        if let (Some(d), Some(t)) = (obj.get("description"), target.as_object_mut()) {
            t.insert("description".into(), d.clone());
        }
        return target;
    }
    let mut out = Map::new();
    let mut nullable = obj
        .get("nullable")
        .and_then(|n| n.as_bool())
        .unwrap_or(false);
    match obj.get("type") {
        Some(Value::String(t)) => {
            out.insert("type".into(), json!(t.to_ascii_uppercase()));
        }
        Some(Value::Array(ts)) => {
            let non_null: Vec<&str> = ts
                .iter()
                .filter_map(|t| t.as_str())
                .filter(|t| *t != "null")
                .collect();
            nullable |= non_null.len() < ts.len();
            if let Some(t) = non_null.first() {
                out.insert("type".into(), json!(t.to_ascii_uppercase()));
            }
        }
        _ => {}
    }
    if let Some(options) = obj
        .get("anyOf")
        .or_else(|| obj.get("oneOf"))
        .and_then(|a| a.as_array())
    {
        let non_null: Vec<&Value> = options
            .iter()
            .filter(|o| o.get("type").and_then(|t| t.as_str()) != Some("null"))
            .collect();
        nullable |= non_null.len() < options.len();
        if non_null.len() == 1 {
            if let Value::Object(inner) = convert(non_null[0], root, depth + 1) {
                for (k, v) in inner {
                    out.entry(k).or_insert(v);
                }
            }
        } else if !non_null.is_empty() {
            out.insert(
                "anyOf".into(),
                Value::Array(
                    non_null
                        .iter()
                        .map(|o| convert(o, root, depth + 1))
                        .collect(),
                ),
            );
        }
    }
    if let Some(c) = obj.get("const") {
        out.insert("enum".into(), json!([c_to_string(c)]));
        out.entry("type").or_insert(json!("STRING"));
    }
    for (k, v) in obj {
        if !KEPT.contains(&k.as_str()) || k == "type" || k == "anyOf" {
            continue;
        }
        match k.as_str() {
            "properties" => {
                if let Some(props) = v.as_object() {
                    let converted: Map<String, Value> = props
                        .iter()
                        .map(|(n, p)| (n.clone(), convert(p, root, depth + 1)))
                        .collect();
                    out.insert(
                        "propertyOrdering".into(),
                        Value::Array(props.keys().map(|k| json!(k)).collect()),
                    );
                    out.insert("properties".into(), Value::Object(converted));
                }
            }
            "items" => {
                out.insert("items".into(), convert(v, root, depth + 1));
            }
            "enum" => {
                // Gemini enums are strings only.
                let values: Vec<Value> = v
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter(|x| !x.is_null())
                            .map(|x| json!(c_to_string(x)))
                            .collect()
                    })
                    .unwrap_or_default();
                if !values.is_empty()
                    && values.len()
                        == v.as_array()
                            .map_or(0, |a| a.iter().filter(|x| !x.is_null()).count())
                    && v.as_array()
                        .is_some_and(|a| a.iter().all(|x| x.is_string() || x.is_null()))
                {
                    out.insert("enum".into(), Value::Array(values));
                }
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    if out.get("enum").is_some() {
        out.insert("format".into(), json!("enum"));
        out.insert("type".into(), json!("STRING"));
    }
    if !out.contains_key("type") && !out.contains_key("anyOf") {
        let t = if out.contains_key("properties") {
            "OBJECT"
        } else if out.contains_key("items") {
            "ARRAY"
        } else {
            "STRING"
        };
        out.insert("type".into(), json!(t));
    }
    if nullable {
        out.insert("nullable".into(), json!(true));
    }
    Value::Object(out)
}

fn c_to_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The part key of a function call's signature, kept in [`ToolCall::provider_data`].
pub(crate) const THOUGHT_SIGNATURE: &str = "thoughtSignature";

/// The `tools` entry of a native tool.
pub(crate) fn native_tool_json(tool: &NativeTool) -> Value {
    match tool {
        NativeTool::WebSearch(_) => json!({"google_search": {}}),
        NativeTool::CodeExecution => json!({"code_execution": {}}),
    }
}

/// The generateContent body of `request`.
pub(crate) fn request_body(request: &ChatRequest) -> Value {
    let mut contents: Vec<Value> = Vec::new();
    let mut push = |role: &str, part: Value| {
        if let Some(last) = contents.last_mut()
            && last["role"] == role
            && let Some(parts) = last["parts"].as_array_mut()
        {
            parts.push(part);
            return;
        }
        contents.push(json!({"role": role, "parts": [part]}));
    };
    for m in &request.messages {
        match m {
            Message::User { content } => push("user", json!({"text": content})),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if let Some(c) = content.as_deref().filter(|c| !c.is_empty()) {
                    push("model", json!({"text": c}));
                }
                for t in tool_calls {
                    let args = if t.arguments.is_object() {
                        t.arguments.clone()
                    } else {
                        json!({"value": t.arguments})
                    };
                    let mut part = json!({"functionCall": {"name": t.name, "args": args}});
                    if let Some(sig) = t
                        .provider_data
                        .as_ref()
                        .and_then(|d| d.get(THOUGHT_SIGNATURE))
                    {
                        part[THOUGHT_SIGNATURE] = sig.clone();
                    }
                    push("model", part);
                }
            }
            Message::Tool { name, content, .. } => {
                let response = match serde_json::from_str::<Value>(content) {
                    Ok(v @ Value::Object(_)) => v,
                    _ => json!({"content": content}),
                };
                push(
                    "user",
                    json!({"functionResponse": {"name": name, "response": response}}),
                );
            }
        }
    }
    let mut body = json!({"contents": contents});
    if let Some(s) = request.system.as_deref().filter(|s| !s.is_empty()) {
        body["systemInstruction"] = json!({"parts": [{"text": s}]});
    }
    let mut tools: Vec<Value> = Vec::new();
    if !request.tools.is_empty() {
        let decls: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parameters": to_gemini_schema(&t.parameters)}))
            .collect();
        tools.push(json!({"functionDeclarations": decls}));
    }
    tools.extend(request.native_tools.iter().map(native_tool_json));
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    let p = &request.params;
    let mut cfg = Map::new();
    if let Some(t) = p.temperature {
        cfg.insert("temperature".into(), json!(t));
    }
    if let Some(m) = p.max_tokens {
        cfg.insert("maxOutputTokens".into(), json!(m));
    }
    if let Some(t) = p.top_p {
        cfg.insert("topP".into(), json!(t));
    }
    if let Some(s) = p.seed {
        cfg.insert("seed".into(), json!(s));
    }
    if !p.stop.is_empty() {
        cfg.insert("stopSequences".into(), json!(p.stop));
    }
    if let Some(s) = &request.response_schema {
        cfg.insert("responseMimeType".into(), json!("application/json"));
        cfg.insert("responseSchema".into(), to_gemini_schema(&s.schema));
    }
    if !cfg.is_empty() {
        body["generationConfig"] = Value::Object(cfg);
    }
    crate::passthrough::gemini(&mut body, &p.extra);
    body
}

/// Parses a generateContent answer.
pub(crate) fn parse_response(v: &Value) -> Result<RawResponse, String> {
    let blocked = v
        .pointer("/promptFeedback/blockReason")
        .and_then(|r| r.as_str());
    let has_candidates = v
        .get("candidates")
        .and_then(|c| c.as_array())
        .is_some_and(|c| !c.is_empty());
    if let Some(r) = blocked
        && !has_candidates
    {
        return Err(format!("the prompt was blocked ({r})"));
    }
    let candidate = fields::main_list(v, "candidates", "Gemini generateContent")?
        .first()
        .ok_or_else(|| "the answer's `candidates` list is empty".to_string())?;
    let candidate = fields::object(candidate, "the answer's first candidate")?;
    // Gemini leaves `content` out of a candidate that stopped early (safety, length).
    let parts: &[Value] = match candidate.get("content") {
        None | Some(Value::Null) => &[],
        Some(c @ Value::Object(_)) => {
            fields::opt_list(c, "parts", "content.parts")?.unwrap_or_default()
        }
        Some(other) => {
            return Err(format!(
                "the answer's `content` is {}, not an object",
                fields::kind_of(other)
            ));
        }
    };
    let mut text = NativeText::default();
    let mut tool_calls = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let part = fields::object(part, "a content part")?;
        if part.get("thought").and_then(|t| t.as_bool()) == Some(true) {
            continue;
        }
        if let Some(t) = fields::opt_str(part, "text", "text")? {
            text.text(t);
        }
        if let Some(code) = part.get("executableCode") {
            let lang = code
                .get("language")
                .and_then(|l| l.as_str())
                .filter(|l| *l != "LANGUAGE_UNSPECIFIED")
                .unwrap_or("");
            text.code(
                lang,
                code.get("code").and_then(|c| c.as_str()).unwrap_or(""),
            );
        }
        if let Some(result) = part.get("codeExecutionResult") {
            let mut out = result
                .get("output")
                .and_then(|o| o.as_str())
                .unwrap_or("")
                .trim_end()
                .to_string();
            if let Some(outcome) = result
                .get("outcome")
                .and_then(|o| o.as_str())
                .filter(|o| *o != "OUTCOME_OK")
            {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&format!("({outcome})"));
            }
            text.output(&out);
        }
        if let Some(fc) = part.get("functionCall") {
            let name = fields::opt_str(fc, "name", "functionCall.name")?
                .ok_or_else(|| "a functionCall has no name".to_string())?;
            let id = fc
                .get("id")
                .and_then(|i| i.as_str())
                .map_or_else(|| format!("call_{i}"), str::to_string);
            let args = match fc.get("args") {
                None | Some(Value::Null) => json!({}),
                Some(a) => a.clone(),
            };
            let mut call = ToolCall::new(id, name, args);
            if let Some(sig) = part.get(THOUGHT_SIGNATURE) {
                call.provider_data = Some(json!({ "thoughtSignature": sig }));
            }
            tool_calls.push(call);
        }
    }
    for chunk in candidate
        .pointer("/groundingMetadata/groundingChunks")
        .and_then(|c| c.as_array())
        .into_iter()
        .flatten()
    {
        if let Some(url) = chunk.pointer("/web/uri").and_then(|u| u.as_str()) {
            text.source(url, chunk.pointer("/web/title").and_then(|t| t.as_str()));
        }
    }
    let finish_reason = match fields::reason(candidate.get("finishReason")).as_deref() {
        _ if !tool_calls.is_empty() => FinishReason::ToolCalls,
        Some("STOP") | None => FinishReason::Stop,
        Some("MAX_TOKENS") => FinishReason::Length,
        Some("SAFETY")
        | Some("RECITATION")
        | Some("BLOCKLIST")
        | Some("PROHIBITED_CONTENT")
        | Some("SPII") => FinishReason::ContentFilter,
        Some(o) => FinishReason::Other(o.to_string()),
    };
    // Tool-use prompt tokens (search results read) are input, thinking tokens output.
    let (usage, usage_problem) = fields::split_usage(fields::usage(
        v.get("usageMetadata"),
        "promptTokenCount",
        "candidatesTokenCount",
        &["toolUsePromptTokenCount"],
        &["thoughtsTokenCount"],
        "/cachedContentTokenCount",
    ));
    Ok(RawResponse {
        text: text.finish(),
        tool_calls,
        usage,
        usage_problem,
        finish_reason,
    })
}

#[async_trait::async_trait]
impl Backend for GeminiBackend {
    async fn send(
        &self,
        model: &str,
        request: &ChatRequest,
        _attempts: &AtomicU32,
    ) -> Result<RawResponse, LlmError> {
        let secrets = self.c.secrets();
        let ex = self.c.exchange(model, &secrets);
        check_native_tools(&ex, ProviderKind::Gemini, request)?;
        let model_path = model.strip_prefix("models/").unwrap_or(model);
        let url = format!(
            "{}/v1beta/models/{model_path}:generateContent",
            self.c.base_url
        );
        let mut builder = self.c.post(&url);
        if let Some(k) = &self.c.api_key {
            builder = builder.header("x-goog-api-key", k);
        }
        let builder = crate::passthrough::with_headers(builder, &request.params.extra);
        let v = ex.post_json(builder, &request_body(request)).await?;
        ex.parse(|| parse_response(&v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::TokenCounts;

    #[test]
    fn schemas_are_converted_to_gemini_dialect() {
        let s = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "J",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "a": {"type": ["number", "null"], "minimum": 0},
                "b": {"$ref": "#/$defs/B"},
                "c": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "d": {"const": "x"},
                "e": {"type": "array", "items": {"type": "integer"}}
            },
            "required": ["a"],
            "$defs": {"B": {"type": "string", "enum": ["p", "q"]}}
        });
        let g = to_gemini_schema(&s);
        assert_eq!(g["type"], "OBJECT");
        assert!(
            g.get("$schema").is_none()
                && g.get("additionalProperties").is_none()
                && g.get("title").is_none()
                && g.get("$defs").is_none()
        );
        assert_eq!(
            g["properties"]["a"],
            json!({"type": "NUMBER", "minimum": 0, "nullable": true})
        );
        assert_eq!(g["properties"]["b"]["enum"], json!(["p", "q"]));
        assert_eq!(
            g["properties"]["c"],
            json!({"type": "STRING", "nullable": true})
        );
        assert_eq!(g["properties"]["d"]["enum"], json!(["x"]));
        assert_eq!(g["properties"]["e"]["items"]["type"], "INTEGER");
        assert_eq!(g["propertyOrdering"], json!(["a", "b", "c", "d", "e"]));
        assert_eq!(g["required"], json!(["a"]));
    }

    #[test]
    fn body_and_answer() {
        let mut r = ChatRequest::user("hi")
            .with_system("sys")
            .with_schema("S", json!({"type": "object"}));
        r.params.max_tokens = Some(50);
        r.params.seed = Some(7);
        r.messages.push(Message::assistant_tool_calls(
            None,
            vec![ToolCall::new("c", "f", json!({"q": 1}))],
        ));
        r.messages.push(Message::tool_result("c", "f", "plain"));
        let b = request_body(&r);
        assert_eq!(b["systemInstruction"], json!({"parts": [{"text": "sys"}]}));
        assert_eq!(
            b["contents"][1],
            json!({"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"q": 1}}}]})
        );
        assert_eq!(
            b["contents"][2]["parts"][0]["functionResponse"]["response"],
            json!({"content": "plain"})
        );
        assert_eq!(b["generationConfig"]["maxOutputTokens"], 50);
        assert_eq!(b["generationConfig"]["seed"], 7);
        assert_eq!(
            b["generationConfig"]["responseMimeType"],
            "application/json"
        );

        let v = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "{\"a\":"}, {"text": "1}"}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 2, "thoughtsTokenCount": 3}});
        let p = parse_response(&v).expect("ok");
        assert_eq!(p.text.as_deref(), Some("{\"a\":1}"));
        assert_eq!(
            p.usage,
            Some(TokenCounts {
                input_tokens: 4,
                output_tokens: 5,
                cached_tokens: 0
            })
        );
        let blocked = parse_response(&json!({"promptFeedback": {"blockReason": "SAFETY"}}));
        assert!(blocked.is_err_and(|e| e.contains("SAFETY")));
        let fc = parse_response(&json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {"x": 1}}}]}, "finishReason": "STOP"}]})).expect("ok");
        assert_eq!(
            (
                fc.tool_calls[0].id.as_str(),
                fc.finish_reason.clone(),
                fc.text
            ),
            ("call_0", FinishReason::ToolCalls, None)
        );
    }

    #[test]
    fn native_tools_follow_the_function_declarations() {
        let r = ChatRequest::user("x")
            .with_tools(vec![crate::types::ToolSpec {
                name: "f".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }])
            .with_native_tools(vec![NativeTool::web_search(), NativeTool::CodeExecution]);
        let b = request_body(&r);
        assert_eq!(b["tools"][1], json!({"google_search": {}}));
        assert_eq!(b["tools"][2], json!({"code_execution": {}}));
        assert_eq!(b["tools"][0]["functionDeclarations"][0]["name"], "f");
    }

    #[test]
    fn code_parts_and_grounding_become_text() {
        let v = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"text": "Computing."},
            {"executableCode": {"language": "PYTHON", "code": "print(2**10)"}},
            {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1024\n"}},
            {"executableCode": {"language": "PYTHON", "code": "while True: pass"}},
            {"codeExecutionResult": {"outcome": "OUTCOME_DEADLINE_EXCEEDED"}},
            {"text": "It is 1024."}
        ]}, "finishReason": "STOP",
            "groundingMetadata": {"webSearchQueries": ["two to the ten"], "groundingChunks": [
                {"web": {"uri": "https://b.example/p", "title": "b.example"}},
                {"web": {"uri": "https://b.example/p", "title": "b.example"}}],
                "searchEntryPoint": {"renderedContent": "<div/>"}}}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 4, "toolUsePromptTokenCount": 50}});
        let p = parse_response(&v).expect("ok");
        assert_eq!(
            p.text.as_deref(),
            Some(
                "Computing.\n\n```python\nprint(2**10)\n```\n\nOutput:\n```\n1024\n```\n\n```python\nwhile True: pass\n```\n\nOutput:\n```\n(OUTCOME_DEADLINE_EXCEEDED)\n```\n\nIt is 1024.\n\nSources:\n- b.example — https://b.example/p"
            )
        );
        assert_eq!(p.usage.map(|u| u.input_tokens), Some(60));
    }

    #[test]
    fn thought_signatures_are_kept_and_echoed() {
        let v = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "f", "args": {"x": 1}}, "thoughtSignature": "c2lnbmF0dXJl"},
            {"functionCall": {"name": "g", "args": {}}}
        ]}, "finishReason": "STOP"}]});
        let p = parse_response(&v).expect("ok");
        assert_eq!(
            p.tool_calls[0].provider_data,
            Some(json!({"thoughtSignature": "c2lnbmF0dXJl"}))
        );
        assert_eq!(p.tool_calls[1].provider_data, None);
        let mut r = ChatRequest::user("go");
        r.messages
            .push(Message::assistant_tool_calls(None, p.tool_calls.clone()));
        r.messages.push(Message::tool_result("call_0", "f", "{}"));
        r.messages.push(Message::tool_result("call_1", "g", "{}"));
        let b = request_body(&r);
        assert_eq!(
            b["contents"][1]["parts"],
            json!([
                {"functionCall": {"name": "f", "args": {"x": 1}}, "thoughtSignature": "c2lnbmF0dXJl"},
                {"functionCall": {"name": "g", "args": {}}}
            ])
        );
    }

    proptest::proptest! {
        #[test]
        fn any_json_answer_parses_or_fails_without_panicking(
            v in crate::providers::fields::arbitrary::json()
        ) {
            let _ = parse_response(&v);
            let _ = parse_response(&json!({"candidates": [v.clone()], "usageMetadata": v.clone()}));
            let _ = parse_response(&json!({"candidates": [{"content": {"parts": [v.clone()]}, "finishReason": v}]}));
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
