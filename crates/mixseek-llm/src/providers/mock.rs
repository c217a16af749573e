//! The offline `mock:` provider: a real [`Backend`] with deterministic answers, for the
//! quickstart, CI and benchmarks. Its answers are made up and say so.
//!
//! # Behaviour
//!
//! * **Text**: `[mock answer from mock:NAME] …` quoting the start of the last user message
//!   (and, after tool calls, each tool's result), plus a variant number derived from the
//!   caller (team, round, repeat) and the input, so teams and rounds differ.
//! * **Tools**: when tools are offered, every tool not yet called in the conversation is
//!   called (all in one answer, arguments generated from its parameter schema; a string
//!   parameter named like `task`, `query`, `prompt`, `instruction`, `question`, `input` or
//!   `request` gets the last user message); once every tool has been called, it answers in
//!   text using the results.
//! * **Structured output**: an object valid for the response schema (`$ref`, `anyOf`,
//!   `enum`, `const`, bounds and lengths honoured). A number or integer named `score` is
//!   spread over 0..=100 by a hash of the input and the caller; `should_continue` follows
//!   the model name's policy (below); other values are derived from the hash.
//! * **Native tools** ([`NativeTool`]: web search, code execution): accepted, but nothing
//!   is searched or run. The text answer says so in a line per tool, e.g.
//!   `[mock web_search: offline, nothing was searched; no sources]` and
//!   `[mock code_execution: offline, no code was run]`, so a `web_search` or
//!   `code_execution` member works offline and is never mistaken for a real one.
//! * **Usage**: about one token per four characters of input and output.
//!
//! # Model name syntax
//!
//! `mock:<word>[-<word>…]` (or `+` between words). Words that mean something:
//!
//! | word | effect |
//! |---|---|
//! | `stop` / `continue` | `should_continue` false / true (default true); e.g. `mock:judge-stop` |
//! | `<N>ms`, `<N>s` | answer after that latency, e.g. `mock:slow-200ms` |
//! | `<N>pct` | fail about N % of attempts with a transient HTTP 503 (decided by a hash of the request and attempt number, so retries can succeed), e.g. `mock:fail-30pct` |
//! | `notools` | never call tools |
//! | `nousage` | report no token usage |
//!
//! Any other word only names the model (and changes the hash). Words combine:
//! `mock:member-150ms-fail-10pct`.

use crate::backend::{Backend, RawResponse, estimate_tokens};
use crate::error::{ErrorKind, LlmError};
use crate::types::{
    ChatRequest, FinishReason, Message, NativeTool, TokenCounts, ToolCall, ToolSpec,
};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Options parsed from a mock model name.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MockOptions {
    pub(crate) should_continue: bool,
    pub(crate) latency: Duration,
    /// Failure rate in percent (0..=100).
    pub(crate) fail_pct: u32,
    pub(crate) tools: bool,
    pub(crate) usage: bool,
}

impl MockOptions {
    pub(crate) fn parse(model: &str) -> Self {
        let mut o = MockOptions {
            should_continue: true,
            latency: Duration::ZERO,
            fail_pct: 0,
            tools: true,
            usage: true,
        };
        for w in model.split(['-', '+']).map(str::to_ascii_lowercase) {
            match w.as_str() {
                "stop" => o.should_continue = false,
                "continue" => o.should_continue = true,
                "notools" => o.tools = false,
                "nousage" => o.usage = false,
                _ => {
                    if let Some(n) = w.strip_suffix("pct").and_then(|n| n.parse::<u32>().ok()) {
                        o.fail_pct = n.min(100);
                    } else if let Some(n) = w.strip_suffix("ms").and_then(|n| n.parse::<u64>().ok())
                    {
                        o.latency = Duration::from_millis(n);
                    } else if let Some(n) = w.strip_suffix('s').and_then(|n| n.parse::<u64>().ok())
                    {
                        o.latency = Duration::from_secs(n);
                    }
                }
            }
        }
        o
    }
}

pub(crate) struct MockBackend;

impl MockBackend {
    pub(crate) fn new() -> Self {
        Self
    }
}

/// A 64-bit hash of strings.
fn hash64(parts: &[&str]) -> u64 {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_le_bytes(b)
}

/// The seed of a request: the model, its content and the caller (team, round, repeat).
fn request_seed(model: &str, request: &ChatRequest) -> u64 {
    let content = serde_json::to_string(request).unwrap_or_default();
    let c = &request.caller;
    let caller = format!(
        "{}|{}|{}|{}",
        c.team_id.as_deref().unwrap_or(""),
        c.round_number.unwrap_or(0),
        c.role,
        c.repeat
    );
    hash64(&[model, &content, &caller])
}

fn last_user(request: &ChatRequest) -> &str {
    request
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        })
        .unwrap_or("")
}

fn shorten(s: &str, max: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

fn called_tools(request: &ChatRequest) -> Vec<&str> {
    request
        .messages
        .iter()
        .flat_map(|m| match m {
            Message::Assistant { tool_calls, .. } => tool_calls
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        })
        .collect()
}

/// The deterministic answer of `mock:<model>` to `request`.
pub(crate) fn answer(model: &str, request: &ChatRequest) -> RawResponse {
    let opts = MockOptions::parse(model);
    let seed = request_seed(model, request);
    let (text, tool_calls) = if let Some(schema) = &request.response_schema {
        let mut g = Generator {
            root: &schema.schema,
            seed,
            opts: &opts,
            task: last_user(request),
            depth: 0,
        };
        let v = g.value(&schema.schema, "");
        (
            Some(serde_json::to_string(&v).unwrap_or_default()),
            Vec::new(),
        )
    } else {
        let called = called_tools(request);
        let pending: Vec<&ToolSpec> = if opts.tools {
            request
                .tools
                .iter()
                .filter(|t| !called.contains(&t.name.as_str()))
                .collect()
        } else {
            Vec::new()
        };
        if pending.is_empty() {
            (Some(text_answer(model, request, seed)), Vec::new())
        } else {
            let calls = pending
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let mut g = Generator {
                        root: &t.parameters,
                        seed: seed ^ hash64(&[&t.name]),
                        opts: &opts,
                        task: last_user(request),
                        depth: 0,
                    };
                    ToolCall::new(
                        format!("mock_call_{:08x}_{i}", seed as u32),
                        t.name.clone(),
                        g.value(&t.parameters, ""),
                    )
                })
                .collect();
            (None, calls)
        }
    };
    let finish_reason = if tool_calls.is_empty() {
        FinishReason::Stop
    } else {
        FinishReason::ToolCalls
    };
    let out_chars = text.as_deref().map_or(0, str::len)
        + tool_calls
            .iter()
            .map(|t: &ToolCall| t.arguments.to_string().len() + t.name.len())
            .sum::<usize>();
    let usage = opts.usage.then(|| TokenCounts {
        input_tokens: estimate_tokens(request),
        output_tokens: (out_chars as u64).div_ceil(4) + 1,
        cached_tokens: 0,
    });
    RawResponse {
        text,
        tool_calls,
        usage,
        usage_problem: None,
        finish_reason,
    }
}

fn text_answer(model: &str, request: &ChatRequest, seed: u64) -> String {
    let mut out = format!(
        "[mock answer from mock:{model}] This is a made-up answer from the offline mock provider, not a real model.\n\n"
    );
    let task = last_user(request);
    if !task.is_empty() {
        out.push_str(&format!("Task: {}\n", shorten(task, 160)));
    }
    let results: Vec<(&str, &str)> = request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { name, content, .. } => Some((name.as_str(), content.as_str())),
            _ => None,
        })
        .collect();
    if !results.is_empty() {
        out.push_str("Based on the tool results:\n");
        for (name, content) in results {
            out.push_str(&format!("- {name}: {}\n", shorten(content, 120)));
        }
    }
    for t in &request.native_tools {
        out.push_str(match t {
            NativeTool::WebSearch(_) => {
                "[mock web_search: offline, nothing was searched; no sources]\n"
            }
            NativeTool::CodeExecution => "[mock code_execution: offline, no code was run]\n",
        });
    }
    out.push_str(&format!("Answer variant {}.", seed % 10_000));
    out
}

/// Generates a schema-valid value.
struct Generator<'a> {
    root: &'a Value,
    seed: u64,
    opts: &'a MockOptions,
    task: &'a str,
    depth: u32,
}

impl Generator<'_> {
    fn h(&self, name: &str, salt: &str) -> u64 {
        self.seed ^ hash64(&[name, salt])
    }

    fn resolve(&self, schema: &Value) -> Option<Value> {
        let r = schema.get("$ref")?.as_str()?;
        let path = r.strip_prefix('#')?;
        if path.is_empty() {
            return Some(self.root.clone());
        }
        self.root.pointer(path).cloned()
    }

    fn value(&mut self, schema: &Value, name: &str) -> Value {
        self.depth += 1;
        let v = self.value_inner(schema, name);
        self.depth -= 1;
        v
    }

    fn value_inner(&mut self, schema: &Value, name: &str) -> Value {
        if self.depth > 24 {
            return Value::Null;
        }
        let Some(obj) = schema.as_object() else {
            // `true` or `{}`: anything goes.
            return json!(format!("mock {name}"));
        };
        if obj.contains_key("$ref") {
            let target = self.resolve(schema).unwrap_or(Value::Bool(true));
            return self.value(&target, name);
        }
        if let Some(c) = obj.get("const") {
            return c.clone();
        }
        if let Some(e) = obj
            .get("enum")
            .and_then(|e| e.as_array())
            .filter(|e| !e.is_empty())
        {
            let non_null: Vec<&Value> = e.iter().filter(|v| !v.is_null()).collect();
            let pool = if non_null.is_empty() {
                e.iter().collect()
            } else {
                non_null
            };
            return pool[(self.h(name, "enum") % pool.len() as u64) as usize].clone();
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(options) = obj
                .get(key)
                .and_then(|o| o.as_array())
                .filter(|o| !o.is_empty())
            {
                let pick = options
                    .iter()
                    .find(|o| o.get("type").and_then(|t| t.as_str()) != Some("null"))
                    .unwrap_or(&options[0]);
                let pick = pick.clone();
                return self.value(&pick, name);
            }
        }
        if let Some(all) = obj.get("allOf").and_then(|o| o.as_array()) {
            let mut merged = Map::new();
            for part in all {
                let part = self.resolve(part).unwrap_or_else(|| part.clone());
                if let Some(p) = part.as_object() {
                    for (k, v) in p {
                        merged.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
            }
            for (k, v) in obj {
                if k != "allOf" {
                    merged.insert(k.clone(), v.clone());
                }
            }
            return self.value(&Value::Object(merged), name);
        }
        let ty = match obj.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(|t| t.as_str())
                .find(|t| *t != "null")
                .unwrap_or("null")
                .to_string(),
            _ if obj.contains_key("properties") => "object".to_string(),
            _ if obj.contains_key("items") => "array".to_string(),
            _ => "string".to_string(),
        };
        match ty.as_str() {
            "object" => self.object(obj),
            "array" => self.array(obj, name),
            "boolean" => self.boolean(name),
            "integer" => self.number(obj, name, true),
            "number" => self.number(obj, name, false),
            "null" => Value::Null,
            _ => self.string(obj, name),
        }
    }

    fn object(&mut self, obj: &Map<String, Value>) -> Value {
        let mut out = Map::new();
        if let Some(props) = obj.get("properties").and_then(|p| p.as_object()) {
            for (k, s) in props {
                let v = self.value(s, k);
                out.insert(k.clone(), v);
            }
        }
        if let Some(req) = obj.get("required").and_then(|r| r.as_array()) {
            for k in req.iter().filter_map(|k| k.as_str()) {
                if !out.contains_key(k) {
                    out.insert(k.to_string(), json!(format!("mock {k}")));
                }
            }
        }
        Value::Object(out)
    }

    fn array(&mut self, obj: &Map<String, Value>, name: &str) -> Value {
        let min = obj.get("minItems").and_then(|m| m.as_u64()).unwrap_or(1);
        let max = obj
            .get("maxItems")
            .and_then(|m| m.as_u64())
            .unwrap_or(min.max(2));
        let n = (min.max(1) + self.h(name, "len") % 2)
            .min(max.max(min))
            .min(16);
        let items = obj.get("items").cloned().unwrap_or(Value::Bool(true));
        let base = self.seed;
        let mut out = Vec::new();
        for i in 0..n {
            self.seed = base ^ hash64(&[name, &i.to_string()]);
            out.push(self.value(&items, name));
        }
        self.seed = base;
        Value::Array(out)
    }

    fn boolean(&self, name: &str) -> Value {
        if name == "should_continue" {
            return json!(self.opts.should_continue);
        }
        json!(self.h(name, "bool").is_multiple_of(2))
    }

    fn number(&self, obj: &Map<String, Value>, name: &str, integer: bool) -> Value {
        let f = |k: &str| obj.get(k).and_then(|v| v.as_f64());
        let mut lo = f("minimum").unwrap_or(0.0);
        let mut hi = f("maximum").unwrap_or(if name.contains("confidence") {
            1.0
        } else {
            100.0
        });
        if let Some(x) = f("exclusiveMinimum") {
            lo = lo.max(x + if integer { 1.0 } else { 0.01 });
        }
        if let Some(x) = f("exclusiveMaximum") {
            hi = hi.min(x - if integer { 1.0 } else { 0.01 });
        }
        if hi < lo {
            hi = lo;
        }
        if name.contains("confidence") && f("minimum").is_none() && hi > 0.5 {
            lo = lo.max(0.5);
        }
        let frac = (self.h(name, "num") % 10_001) as f64 / 10_000.0;
        let v = lo + (hi - lo) * frac;
        if integer {
            let lo_i = lo.ceil();
            let hi_i = hi.floor().max(lo_i);
            json!(v.round().clamp(lo_i, hi_i) as i64)
        } else {
            let rounded = ((v * 100.0).round() / 100.0).clamp(lo, hi);
            json!(rounded)
        }
    }

    fn string(&self, obj: &Map<String, Value>, name: &str) -> Value {
        let lname = name.to_ascii_lowercase();
        let mut s = if [
            "task",
            "query",
            "prompt",
            "instruction",
            "question",
            "input",
            "request",
            "message",
        ]
        .iter()
        .any(|k| lname.contains(k))
        {
            if self.task.is_empty() {
                "mock task".to_string()
            } else {
                shorten(self.task, 400)
            }
        } else if ["reason", "comment", "explanation", "feedback", "rationale"]
            .iter()
            .any(|k| lname.contains(k))
        {
            format!(
                "Mock {} (offline mock provider, not a real model): variant {}.",
                name.replace('_', " "),
                self.h(name, "s") % 1000
            )
        } else {
            match obj.get("format").and_then(|f| f.as_str()) {
                Some("date-time") => "2025-01-01T00:00:00Z".to_string(),
                Some("date") => "2025-01-01".to_string(),
                Some("email") => "mock@example.com".to_string(),
                Some("uri") => "https://example.com/mock".to_string(),
                _ => format!(
                    "mock {} {}",
                    if name.is_empty() { "value" } else { name },
                    self.h(name, "s") % 1000
                ),
            }
        };
        let min = obj.get("minLength").and_then(|m| m.as_u64()).unwrap_or(0) as usize;
        while s.chars().count() < min {
            s.push('.');
        }
        if let Some(max) = obj.get("maxLength").and_then(|m| m.as_u64()) {
            s = s.chars().take(max as usize).collect();
        }
        json!(s)
    }
}

#[async_trait::async_trait]
impl Backend for MockBackend {
    async fn send(
        &self,
        model: &str,
        request: &ChatRequest,
        attempts: &AtomicU32,
    ) -> Result<RawResponse, LlmError> {
        let opts = MockOptions::parse(model);
        if !opts.latency.is_zero() {
            tokio::time::sleep(opts.latency).await;
        }
        if opts.fail_pct > 0 {
            let attempt = attempts.load(Ordering::Relaxed);
            let roll = hash64(&[
                model,
                &request_seed(model, request).to_string(),
                &attempt.to_string(),
            ]) % 100;
            if roll < u64::from(opts.fail_pct) {
                return Err(LlmError::new(
                    ErrorKind::Server,
                    "mock",
                    model,
                    format!("injected failure ({}% of attempts fail)", opts.fail_pct),
                )
                .with_status(503));
            }
        }
        Ok(answer(model, request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::CallerTag;
    use mixseek_core::Role;

    #[test]
    fn model_names_set_options() {
        let o = MockOptions::parse("judge-stop");
        assert!(!o.should_continue);
        let o = MockOptions::parse("member-150ms-fail-10pct");
        assert_eq!(
            (o.latency, o.fail_pct, o.should_continue),
            (Duration::from_millis(150), 10, true)
        );
        assert_eq!(
            MockOptions::parse("slow-2s").latency,
            Duration::from_secs(2)
        );
        assert!(!MockOptions::parse("x+nousage+notools").usage);
    }

    #[test]
    fn text_answers_are_labelled_and_deterministic() {
        let r = ChatRequest::user("Write a haiku about rust");
        let a = answer("default", &r);
        let text = a.text.clone().unwrap_or_default();
        assert!(text.contains("mock"), "{text}");
        assert!(text.contains("haiku"), "{text}");
        assert_eq!(a, answer("default", &r));
        assert!(
            a.usage
                .is_some_and(|u| u.input_tokens > 0 && u.output_tokens > 0)
        );
        assert!(answer("nousage", &r).usage.is_none());
    }

    #[test]
    fn tools_are_called_once_then_results_used() {
        let tool = |n: &str| ToolSpec {
            name: n.into(),
            description: "d".into(),
            parameters: json!({"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]}),
        };
        let mut r = ChatRequest::user("do it").with_tools(vec![tool("a"), tool("b")]);
        let first = answer("leader", &r);
        assert_eq!(first.tool_calls.len(), 2);
        assert_eq!(first.tool_calls[0].arguments["task"], "do it");
        assert_eq!(first.finish_reason, FinishReason::ToolCalls);
        r.messages.push(Message::assistant_tool_calls(
            None,
            first.tool_calls.clone(),
        ));
        for c in &first.tool_calls {
            r.messages.push(Message::tool_result(
                &c.id,
                &c.name,
                format!("result of {}", c.name),
            ));
        }
        let second = answer("leader", &r);
        assert!(second.tool_calls.is_empty());
        let text = second.text.unwrap_or_default();
        assert!(
            text.contains("result of a") && text.contains("result of b"),
            "{text}"
        );
        assert!(
            answer(
                "leader-notools",
                &ChatRequest::user("x").with_tools(vec![tool("a")])
            )
            .tool_calls
            .is_empty()
        );
    }

    fn judge_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "should_continue": {"type": "boolean"},
                "reasoning": {"type": "string", "minLength": 5},
                "confidence_score": {"type": "number", "minimum": 0, "maximum": 1},
                "score": {"type": "number", "minimum": 0, "maximum": 100},
                "level": {"$ref": "#/$defs/Level"},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
                "note": {"anyOf": [{"type": "null"}, {"type": "integer", "exclusiveMinimum": 3, "maximum": 5}]}
            },
            "required": ["should_continue", "reasoning", "confidence_score", "score"],
            "additionalProperties": false,
            "$defs": {"Level": {"type": "string", "enum": ["low", "high"]}}
        })
    }

    #[test]
    fn structured_answers_follow_the_schema_and_policy() {
        let schema = judge_schema();
        let validator = jsonschema::validator_for(&schema).expect("schema");
        for model in ["judge", "judge-stop", "judge-continue"] {
            let r = ChatRequest::user("judge this").with_schema("J", schema.clone());
            let v: Value =
                serde_json::from_str(&answer(model, &r).text.unwrap_or_default()).expect("json");
            assert!(validator.is_valid(&v), "{v}");
            assert_eq!(v["should_continue"], json!(model != "judge-stop"));
        }
    }

    #[test]
    fn scores_spread_across_teams_and_rounds() {
        let schema = json!({"type": "object", "properties": {"score": {"type": "number", "minimum": 0, "maximum": 100}}, "required": ["score"]});
        let mut scores = Vec::new();
        for team in ["a", "b", "c", "d"] {
            for round in 1..=3 {
                let r = ChatRequest::user("same submission")
                    .with_schema("S", schema.clone())
                    .with_caller(CallerTag::run("e", team, round, Role::Evaluator));
                let v: Value = serde_json::from_str(&answer("eval", &r).text.unwrap_or_default())
                    .expect("json");
                let s = v["score"].as_f64().expect("number");
                assert!((0.0..=100.0).contains(&s));
                scores.push((s * 100.0) as i64);
            }
        }
        scores.sort_unstable();
        scores.dedup();
        assert!(scores.len() >= 10, "scores should differ: {scores:?}");
    }

    #[test]
    fn native_tools_are_answered_offline_and_say_so() {
        let r = ChatRequest::user("latest rust release")
            .with_native_tools(vec![NativeTool::web_search(), NativeTool::CodeExecution]);
        let a = answer("searcher", &r);
        let text = a.text.unwrap_or_default();
        assert!(
            text.starts_with("[mock answer from mock:searcher]"),
            "{text}"
        );
        assert!(
            text.contains("[mock web_search: offline, nothing was searched; no sources]"),
            "{text}"
        );
        assert!(
            text.contains("[mock code_execution: offline, no code was run]"),
            "{text}"
        );
        assert!(a.tool_calls.is_empty());
    }
}
