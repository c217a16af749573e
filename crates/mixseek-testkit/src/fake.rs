//! Scripted fake LLM servers speaking the OpenAI Chat Completions, Anthropic Messages and
//! Gemini generateContent wire formats on 127.0.0.1, recording every request. The OpenAI
//! server also answers the Responses API (`POST /v1/responses`, used for provider-native
//! tools) in its own format.
//!
//! Provider-native tool answers: [`Reply::WebSearch`] and [`Reply::CodeExecution`] answer
//! as each wire reports a server-side search or code run (Anthropic `server_tool_use` and
//! `*_tool_result` blocks with text citations, Gemini `executableCode` /
//! `codeExecutionResult` parts and `groundingMetadata`, Responses `web_search_call` /
//! `code_interpreter_call` items and `url_citation` annotations; Chat Completions has no
//! such answer and gets the text alone). [`Reply::PauseTurn`] is Anthropic's paused
//! server-tool turn; [`Reply::SignedToolCalls`] are tool calls whose first call carries a
//! Gemini `thoughtSignature`.
//!
//! Each request takes the next [`Reply`] of the script; when the script is empty the
//! default reply answers ([`Reply::Auto`] unless changed: a schema-valid sample for a
//! structured request, a call of each not-yet-called tool, else a text answer). Usage in
//! every answer is [`USAGE_INPUT`] input and [`USAGE_OUTPUT`] output tokens unless the
//! reply is wrapped in [`Reply::without_usage`].
//!
//! [`Reply::Hostile`] answers as a broken or malicious server would (see
//! [`Hostile`]). [`FakeLlm::reject_response_formats`] makes the OpenAI server
//! refuse structured-output modes as a server without them does.

use crate::hostile::{Api, Hostile, hostile_answer};
use crate::sample::sample;
use crate::server::{Answer, HttpRequest, HttpResponse, HttpServer};
use crate::wire::{RESPONSES_PATH, USAGE_INPUT, USAGE_OUTPUT, Wire, error_response};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A text answer (for a structured request: the text as the raw output, e.g. invalid JSON).
    Text(String),
    /// A structured answer in the wire's native slot (OpenAI content, Anthropic forced
    /// tool input, Gemini JSON text).
    Json(Value),
    /// Tool calls `(name, arguments)`.
    ToolCalls(Vec<(String, Value)>),
    /// An error status with the wire's error body and extra headers.
    Error {
        /// The HTTP status.
        status: u16,
        /// The error message inside the wire's error body.
        message: String,
        /// Extra response headers (e.g. `retry-after`).
        headers: Vec<(String, String)>,
    },
    /// Any status and body (e.g. a malformed 200).
    Body {
        /// The HTTP status.
        status: u16,
        /// The body, sent as it is.
        body: String,
    },
    /// Never answers.
    Hang,
    /// Answers after a delay.
    Delayed(Duration, Box<Reply>),
    /// The inner answer without any usage field.
    NoUsage(Box<Reply>),
    /// Schema sample / tool calls / text, from the request.
    Auto,
    /// A web search the provider ran for `query`, then `text` citing `sources`
    /// (`(url, title)`).
    WebSearch {
        /// The query the provider searched for.
        query: String,
        /// The sources found, `(url, title)`.
        sources: Vec<(String, String)>,
        /// The final answer.
        text: String,
    },
    /// Python `code` the provider ran, its `output`, then `text`.
    CodeExecution {
        /// The code the provider ran.
        code: String,
        /// What it printed.
        output: String,
        /// The final answer.
        text: String,
    },
    /// Anthropic: a server-tool turn the API paused (`stop_reason: "pause_turn"`) after a
    /// web search for `query`; other wires: an empty text.
    PauseTurn {
        /// The query of the paused web search.
        query: String,
    },
    /// Tool calls `(name, arguments)`; on Gemini the first call's part carries
    /// `thoughtSignature: "fake-signature-<n>"` (the n-th request); elsewhere like
    /// [`Reply::ToolCalls`].
    SignedToolCalls(Vec<(String, Value)>),
    /// A broken or malicious answer (see [`Hostile`]).
    Hostile(Hostile),
}

impl Reply {
    /// [`Reply::Text`].
    pub fn text(s: impl Into<String>) -> Self {
        Reply::Text(s.into())
    }
    /// [`Reply::Json`].
    pub fn json(v: Value) -> Self {
        Reply::Json(v)
    }
    /// [`Reply::ToolCalls`] with one call.
    pub fn tool_call(name: &str, args: Value) -> Self {
        Reply::ToolCalls(vec![(name.to_string(), args)])
    }
    /// [`Reply::Error`] with `status`, `message` and no extra headers.
    pub fn status(status: u16, message: impl Into<String>) -> Self {
        Reply::Error {
            status,
            message: message.into(),
            headers: Vec::new(),
        }
    }
    /// HTTP 429 with `Retry-After: {retry_after}` (seconds or an HTTP date).
    pub fn rate_limited(retry_after: &str) -> Self {
        Reply::Error {
            status: 429,
            message: "Rate limit reached, slow down".into(),
            headers: vec![("retry-after".into(), retry_after.into())],
        }
    }
    /// A 200 whose body is not JSON.
    pub fn malformed() -> Self {
        Reply::Body {
            status: 200,
            body: "{\"choices\": [ this is not json".into(),
        }
    }
    /// [`Reply::Hang`].
    pub fn hang() -> Self {
        Reply::Hang
    }
    /// [`Reply::Delayed`]: `inner` after `d`.
    pub fn delayed(d: Duration, inner: Reply) -> Self {
        Reply::Delayed(d, Box::new(inner))
    }
    /// [`Reply::NoUsage`]: `inner` without usage.
    pub fn without_usage(inner: Reply) -> Self {
        Reply::NoUsage(Box::new(inner))
    }
    /// [`Reply::WebSearch`].
    pub fn web_search(query: &str, sources: &[(&str, &str)], text: &str) -> Self {
        Reply::WebSearch {
            query: query.into(),
            sources: sources
                .iter()
                .map(|(u, t)| (u.to_string(), t.to_string()))
                .collect(),
            text: text.into(),
        }
    }
    /// [`Reply::CodeExecution`].
    pub fn code_execution(code: &str, output: &str, text: &str) -> Self {
        Reply::CodeExecution {
            code: code.into(),
            output: output.into(),
            text: text.into(),
        }
    }
}

/// The signature [`Reply::SignedToolCalls`] puts on Gemini's first call of the `n`-th request.
pub fn fake_signature(n: usize) -> String {
    format!("fake-signature-{n}")
}

/// A request the fake server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// The path without the query.
    pub path: String,
    /// The query string, if any (without `?`).
    pub query: Option<String>,
    /// Header names lower-case.
    pub headers: Vec<(String, String)>,
    /// The JSON body (`Null` when not JSON).
    pub body: Value,
}

impl RecordedRequest {
    /// The value of header `name` (any case), if it was sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// How the fake OpenAI server refuses a structured-output mode
/// ([`FakeLlm::reject_response_formats_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FormatRejection {
    /// HTTP 400 with an OpenAI-style message: `Invalid parameter: response_format of type
    /// '…' is not supported with this model.`
    #[default]
    OpenAi400,
    /// HTTP 500 with the body llama-cpp-python's server (0.3.16) sends for a
    /// `response_format` type it does not know (`llama_cpp_python_rejection`).
    LlamaCppPython500,
}

/// The error body llama-cpp-python's server (0.3.16, `python -m llama_cpp.server`) answers
/// with HTTP 500 to a `response_format` of type `format` (recorded from a real server).
pub(crate) fn llama_cpp_python_rejection(format: &str) -> Value {
    json!({"error": {
        "message": format!("1 validation error:\n  {{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': '{format}', 'ctx': {{'expected': \"'text' or 'json_object'\"}}}}\n\n  File \"/venv/lib/python3.11/site-packages/llama_cpp/server/app.py\", line 376, in create_chat_completion\n    POST /v1/chat/completions"),
        "type": "internal_server_error",
        "param": null,
        "code": null
    }})
}

/// The label of a request's structured-output mode as [`FakeLlm::reject_response_formats`]
/// matches it: the `response_format.type`, or `json_object+schema` for a `json_object`
/// carrying a `schema`.
fn format_label(body: &Value) -> Option<String> {
    let rf = body.get("response_format")?;
    let t = rf.get("type")?.as_str()?;
    Some(if t == "json_object" && rf.get("schema").is_some() {
        "json_object+schema".to_string()
    } else {
        t.to_string()
    })
}

#[derive(Debug)]
struct State {
    wire: Wire,
    script: Mutex<VecDeque<Reply>>,
    default: Mutex<Reply>,
    requests: Mutex<Vec<RecordedRequest>>,
    reject_formats: Mutex<(Vec<String>, FormatRejection)>,
    counter: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// Decrements the in-flight count when a request ends (or its connection is dropped).
struct InFlight<'a>(&'a State);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// A scripted fake server.
#[derive(Debug)]
pub struct FakeLlm {
    server: HttpServer,
    state: Arc<State>,
}

impl FakeLlm {
    /// Starts a server for `wire` on a random port.
    pub async fn start(wire: Wire) -> Self {
        let state = Arc::new(State {
            wire,
            script: Mutex::new(VecDeque::new()),
            default: Mutex::new(Reply::Auto),
            requests: Mutex::new(Vec::new()),
            reject_formats: Mutex::new((Vec::new(), FormatRejection::default())),
            counter: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
        });
        let s = state.clone();
        let server = match HttpServer::start_with_delivery(0, move |req| {
            let s = s.clone();
            async move { handle(&s, req).await }
        })
        .await
        {
            Ok(server) => server,
            Err(e) => panic!("cannot start the fake LLM server: {e}"),
        };
        Self { server, state }
    }
    /// [`FakeLlm::start`] for [`Wire::OpenAi`].
    pub async fn openai() -> Self {
        Self::start(Wire::OpenAi).await
    }
    /// [`FakeLlm::start`] for [`Wire::Anthropic`].
    pub async fn anthropic() -> Self {
        Self::start(Wire::Anthropic).await
    }
    /// [`FakeLlm::start`] for [`Wire::Gemini`].
    pub async fn gemini() -> Self {
        Self::start(Wire::Gemini).await
    }

    /// The base URL to configure: `http://127.0.0.1:PORT/v1` for OpenAI (as
    /// `OPENAI_BASE_URL`), `http://127.0.0.1:PORT` for Anthropic and Gemini.
    pub fn base_url(&self) -> String {
        match self.state.wire {
            Wire::OpenAi => format!("{}/v1", self.server.uri()),
            _ => self.server.uri(),
        }
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: Reply) -> &Self {
        lock(&self.state.script).push_back(reply);
        self
    }
    /// Appends replies to the script.
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) -> &Self {
        lock(&self.state.script).extend(replies);
        self
    }
    /// The reply used when the script is empty.
    pub fn set_default(&self, reply: Reply) -> &Self {
        *lock(&self.state.default) = reply;
        self
    }
    /// OpenAI: answer 400 to requests whose `response_format.type` is one of `formats`
    /// (like a server without `json_schema` support); these do not consume the script.
    /// `json_object` matches every `json_object` request; `json_object+schema` only those
    /// that carry a `schema` (as llama.cpp accepts).
    pub fn reject_response_formats(&self, formats: &[&str]) -> &Self {
        self.reject_response_formats_with(formats, FormatRejection::OpenAi400)
    }
    /// [`FakeLlm::reject_response_formats`] with the given way of refusing.
    pub fn reject_response_formats_with(&self, formats: &[&str], how: FormatRejection) -> &Self {
        *lock(&self.state.reject_formats) = (formats.iter().map(|s| s.to_string()).collect(), how);
        self
    }
    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state.requests).clone()
    }
    /// How many requests were received so far.
    pub fn request_count(&self) -> usize {
        lock(&self.state.requests).len()
    }
    /// The largest number of requests the server was handling at the same time.
    pub fn max_concurrent(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }
    /// Replies left in the script.
    pub fn remaining(&self) -> usize {
        lock(&self.state.script).len()
    }
}

fn expected_path(wire: Wire, path: &str) -> bool {
    match wire {
        Wire::OpenAi => path == "/v1/chat/completions" || path == RESPONSES_PATH,
        Wire::Anthropic => path == "/v1/messages",
        // Google AI's path, or Vertex AI's
        // (`/v1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent`).
        Wire::Gemini => {
            (path.starts_with("/v1beta/models/")
                || (path.starts_with("/v1/projects/")
                    && path.contains("/locations/")
                    && path.contains("/publishers/google/models/")))
                && path.ends_with(":generateContent")
        }
    }
}

async fn handle(s: &State, req: HttpRequest) -> Answer {
    let now = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    s.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let _guard = InFlight(s);
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    lock(&s.requests).push(RecordedRequest {
        path: req.path.clone(),
        query: req.query.clone(),
        headers: req.headers.clone(),
        body: body.clone(),
    });
    if req.method != "POST" || !expected_path(s.wire, &req.path) {
        return error_response(
            s.wire,
            404,
            &format!("no route for {} {}", req.method, req.path),
            &[],
        )
        .into();
    }
    if s.wire == Wire::OpenAi
        && let Some(label) = format_label(&body)
    {
        let (formats, how) = lock(&s.reject_formats).clone();
        let rejected = formats
            .iter()
            .any(|f| *f == label || (f == "json_object" && label == "json_object+schema"));
        if rejected {
            let fmt = body
                .pointer("/response_format/type")
                .and_then(|t| t.as_str())
                .unwrap_or_default();
            return match how {
                FormatRejection::OpenAi400 => error_response(
                    s.wire,
                    400,
                    &format!(
                        "Invalid parameter: response_format of type '{label}' is not supported with this model."
                    ),
                    &[],
                ),
                FormatRejection::LlamaCppPython500 => {
                    HttpResponse::json(500, &llama_cpp_python_rejection(fmt))
                }
            }
            .into();
        }
    }
    let reply = {
        let next = lock(&s.script).pop_front();
        next.unwrap_or_else(|| lock(&s.default).clone())
    };
    let n = s.counter.fetch_add(1, Ordering::Relaxed);
    if s.wire == Wire::OpenAi && req.path == RESPONSES_PATH {
        return answer_responses(reply, &body, n, true).await;
    }
    answer(s.wire, reply, &body, n, true).await
}

/// Resolves the wrappers of `reply` (delay, no usage, hang, auto) to a final reply; `None`
/// after a hang.
async fn resolve(reply: Reply, usage: bool, auto: impl Fn() -> Reply) -> Option<(Reply, bool)> {
    let mut reply = reply;
    let mut usage = usage;
    loop {
        match reply {
            Reply::Delayed(d, inner) => {
                tokio::time::sleep(d).await;
                reply = *inner;
            }
            Reply::NoUsage(inner) => {
                usage = false;
                reply = *inner;
            }
            Reply::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return None;
            }
            Reply::Auto => reply = auto(),
            other => return Some((other, usage)),
        }
    }
}

/// The OpenAI Responses API answer for `reply` to a request `body` (the `n`-th request),
/// with how it goes on the wire.
pub(crate) async fn answer_responses(reply: Reply, body: &Value, n: usize, usage: bool) -> Answer {
    let Some((reply, usage)) = resolve(reply, usage, || auto_reply_responses(body, n)).await else {
        return HttpResponse::text(504, "hung").into();
    };
    match reply {
        Reply::Error {
            status,
            message,
            headers,
        } => error_response(Wire::OpenAi, status, &message, &headers).into(),
        Reply::Body { status, body } => HttpResponse::text(status, body).into(),
        Reply::Hostile(h) => hostile_answer(
            Api::Responses,
            h,
            body,
            n,
            normal_body(Api::Responses, body, n),
        ),
        other => HttpResponse::json(200, &responses_body(&other, body, n, usage)).into(),
    }
}

/// The Responses API success body for `reply` (not an error) to a request `body`.
pub(crate) fn responses_body(reply: &Reply, body: &Value, n: usize, usage: bool) -> Value {
    let message = |text: &str, annotations: Vec<Value>| {
        json!({"type": "message", "id": format!("msg_fake_{n}"), "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": annotations}]})
    };
    let output: Vec<Value> = match reply {
        Reply::Text(t) => vec![message(t, Vec::new())],
        Reply::Json(v) => vec![message(&v.to_string(), Vec::new())],
        Reply::ToolCalls(calls) | Reply::SignedToolCalls(calls) => calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| json!({"type": "function_call", "id": format!("fc_{n}_{i}"), "call_id": format!("call_{n}_{i}"), "name": name, "arguments": args.to_string(), "status": "completed"}))
            .collect(),
        Reply::WebSearch {
            query,
            sources,
            text,
        } => vec![
            json!({"type": "web_search_call", "id": format!("ws_{n}"), "status": "completed", "action": {"type": "search", "query": query}}),
            message(
                text,
                sources
                    .iter()
                    .map(|(url, title)| json!({"type": "url_citation", "start_index": 0, "end_index": text.len(), "url": url, "title": title}))
                    .collect(),
            ),
        ],
        Reply::CodeExecution { code, output, text } => vec![
            json!({"type": "code_interpreter_call", "id": format!("ci_{n}"), "status": "completed", "code": code, "container_id": "cntr_fake",
                "outputs": [{"type": "logs", "logs": output}]}),
            message(text, Vec::new()),
        ],
        _ => vec![message("", Vec::new())],
    };
    let mut out = json!({"id": format!("resp_fake_{n}"), "object": "response", "status": "completed",
        "model": body.get("model").cloned().unwrap_or(json!("fake")), "output": output});
    if usage {
        out["usage"] = json!({"input_tokens": USAGE_INPUT, "output_tokens": USAGE_OUTPUT, "total_tokens": USAGE_INPUT + USAGE_OUTPUT,
            "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}});
    }
    out
}

/// What [`Reply::Auto`] answers on the Responses API: a schema sample (`text.format`), a
/// call of each function tool not called yet, else a text answer.
pub(crate) fn auto_reply_responses(body: &Value, n: usize) -> Reply {
    if let Some(schema) = body.pointer("/text/format/schema") {
        return Reply::Json(sample(schema));
    }
    let called: Vec<&str> = body
        .get("input")
        .and_then(|i| i.as_array())
        .into_iter()
        .flatten()
        .filter(|i| i.get("type").and_then(|t| t.as_str()) == Some("function_call"))
        .filter_map(|i| i.get("name").and_then(|n| n.as_str()))
        .collect();
    let pending: Vec<(String, Value)> = body
        .get("tools")
        .and_then(|t| t.as_array())
        .into_iter()
        .flatten()
        .filter(|t| t.get("type").and_then(|t| t.as_str()) == Some("function"))
        .filter_map(|t| {
            let name = t.get("name")?.as_str()?;
            (!called.contains(&name)).then(|| {
                (
                    name.to_string(),
                    sample(&t.get("parameters").cloned().unwrap_or(json!({}))),
                )
            })
        })
        .collect();
    if !pending.is_empty() {
        return Reply::ToolCalls(pending);
    }
    Reply::Text(format!("fake answer {n}"))
}

/// The response of `wire` for `reply` to a request `body` (the `n`-th request). A
/// [`Reply::Hostile`] that breaks the HTTP exchange itself needs the private `answer`.
pub async fn respond(
    wire: Wire,
    reply: Reply,
    body: &Value,
    n: usize,
    usage: bool,
) -> HttpResponse {
    answer(wire, reply, body, n, usage).await.response
}

/// [`respond`] with how the answer goes on the wire.
pub(crate) async fn answer(
    wire: Wire,
    reply: Reply,
    body: &Value,
    n: usize,
    usage: bool,
) -> Answer {
    let Some((reply, usage)) = resolve(reply, usage, || auto_reply(wire, body, n)).await else {
        return HttpResponse::text(504, "hung").into();
    };
    match reply {
        Reply::Error {
            status,
            message,
            headers,
        } => error_response(wire, status, &message, &headers).into(),
        Reply::Body { status, body } => HttpResponse::text(status, body).into(),
        Reply::Hostile(h) => hostile_answer(
            Api::Chat(wire),
            h,
            body,
            n,
            normal_body(Api::Chat(wire), body, n),
        ),
        other => HttpResponse::json(200, &success_body(wire, &other, body, n, usage)).into(),
    }
}

/// The answer [`Reply::Auto`] gives on `api` to `req` (the `n`-th request), with usage: what
/// each hostile case starts from.
pub(crate) fn normal_body(api: Api, req: &Value, n: usize) -> Value {
    match api {
        Api::Chat(wire) => success_body(wire, &auto_reply(wire, req, n), req, n, true),
        Api::Responses => responses_body(&auto_reply_responses(req, n), req, n, true),
    }
}

/// The success body of `wire` for `reply` (not an error) to a request `req`.
pub(crate) fn success_body(wire: Wire, reply: &Reply, req: &Value, n: usize, usage: bool) -> Value {
    let model = req.get("model").cloned().unwrap_or(json!("fake"));
    let mut out = match (wire, reply) {
        (Wire::OpenAi, Reply::ToolCalls(calls)) => {
            let calls: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, (name, args))| json!({"id": format!("call_{n}_{i}"), "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
                .collect();
            json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": calls}, "finish_reason": "tool_calls"}]})
        }
        (Wire::OpenAi, Reply::SignedToolCalls(calls)) => {
            return success_body(wire, &Reply::ToolCalls(calls.clone()), req, n, usage);
        }
        (Wire::OpenAi, other) => {
            let content = match other {
                Reply::Json(v) => v.to_string(),
                Reply::Text(t) => t.clone(),
                Reply::WebSearch { text, .. } | Reply::CodeExecution { text, .. } => text.clone(),
                _ => String::new(),
            };
            json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]})
        }
        (
            Wire::Anthropic,
            Reply::WebSearch {
                query,
                sources,
                text,
            },
        ) => {
            let id = format!("srvtoolu_{n}");
            let results: Vec<Value> = sources
                .iter()
                .map(|(url, title)| json!({"type": "web_search_result", "url": url, "title": title, "encrypted_content": "ZmFrZQ==", "page_age": null}))
                .collect();
            let citations: Vec<Value> = sources
                .iter()
                .map(|(url, title)| json!({"type": "web_search_result_location", "url": url, "title": title, "cited_text": "…", "encrypted_index": "ZmFrZQ=="}))
                .collect();
            json!({"content": [
                {"type": "server_tool_use", "id": id, "name": "web_search", "input": {"query": query}},
                {"type": "web_search_tool_result", "tool_use_id": id, "content": results},
                {"type": "text", "text": text, "citations": citations}
            ], "stop_reason": "end_turn"})
        }
        (Wire::Anthropic, Reply::CodeExecution { code, output, text }) => {
            let id = format!("srvtoolu_{n}");
            json!({"content": [
                {"type": "server_tool_use", "id": id, "name": "bash_code_execution", "input": {"command": code}},
                {"type": "bash_code_execution_tool_result", "tool_use_id": id, "content": {"type": "bash_code_execution_result", "stdout": output, "stderr": "", "return_code": 0, "content": []}},
                {"type": "text", "text": text}
            ], "stop_reason": "end_turn"})
        }
        (Wire::Anthropic, Reply::PauseTurn { query }) => {
            let id = format!("srvtoolu_{n}");
            json!({"content": [
                {"type": "server_tool_use", "id": id, "name": "web_search", "input": {"query": query}},
                {"type": "web_search_tool_result", "tool_use_id": id, "content": []}
            ], "stop_reason": "pause_turn"})
        }
        (Wire::Anthropic, Reply::SignedToolCalls(calls)) => {
            return success_body(wire, &Reply::ToolCalls(calls.clone()), req, n, usage);
        }
        (Wire::Anthropic, Reply::ToolCalls(calls)) => {
            let blocks: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, (name, args))| json!({"type": "tool_use", "id": format!("toolu_{n}_{i}"), "name": name, "input": args}))
                .collect();
            json!({"content": blocks, "stop_reason": "tool_use"})
        }
        (Wire::Anthropic, Reply::Json(v)) => {
            let name = req
                .pointer("/tool_choice/name")
                .and_then(|x| x.as_str())
                .or_else(|| {
                    req.get("tools")
                        .and_then(|t| t.as_array())
                        .and_then(|t| t.last())
                        .and_then(|t| t.get("name"))
                        .and_then(|x| x.as_str())
                })
                .unwrap_or("json");
            json!({"content": [{"type": "tool_use", "id": format!("toolu_{n}"), "name": name, "input": v}], "stop_reason": "tool_use"})
        }
        (Wire::Anthropic, other) => {
            let text = if let Reply::Text(t) = other {
                t.clone()
            } else {
                String::new()
            };
            json!({"content": [{"type": "text", "text": text}], "stop_reason": "end_turn"})
        }
        (Wire::Gemini, Reply::ToolCalls(calls) | Reply::SignedToolCalls(calls)) => {
            let signed = matches!(reply, Reply::SignedToolCalls(_));
            let parts: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, (name, args))| {
                    let mut p = json!({"functionCall": {"name": name, "args": args}});
                    if signed && i == 0 {
                        p["thoughtSignature"] = json!(fake_signature(n));
                    }
                    p
                })
                .collect();
            json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}]})
        }
        (
            Wire::Gemini,
            Reply::WebSearch {
                query,
                sources,
                text,
            },
        ) => {
            let chunks: Vec<Value> = sources
                .iter()
                .map(|(url, title)| json!({"web": {"uri": url, "title": title}}))
                .collect();
            let supports: Vec<Value> = (0..sources.len())
                .map(|i| json!({"segment": {"startIndex": 0, "endIndex": text.len(), "text": text}, "groundingChunkIndices": [i]}))
                .collect();
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0,
                "groundingMetadata": {"webSearchQueries": [query], "groundingChunks": chunks, "groundingSupports": supports,
                    "searchEntryPoint": {"renderedContent": "<div class=\"fake-search-widget\"></div>"}}}]})
        }
        (Wire::Gemini, Reply::CodeExecution { code, output, text }) => {
            json!({"candidates": [{"content": {"role": "model", "parts": [
                {"executableCode": {"language": "PYTHON", "code": code}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": output}},
                {"text": text}
            ]}, "finishReason": "STOP", "index": 0}]})
        }
        (Wire::Gemini, other) => {
            let text = match other {
                Reply::Json(v) => v.to_string(),
                Reply::Text(t) => t.clone(),
                Reply::WebSearch { text, .. } | Reply::CodeExecution { text, .. } => text.clone(),
                _ => String::new(),
            };
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}]})
        }
    };
    match wire {
        Wire::OpenAi => {
            out["id"] = json!(format!("chatcmpl-fake-{n}"));
            out["object"] = json!("chat.completion");
            out["model"] = model;
            if usage {
                out["usage"] = json!({"prompt_tokens": USAGE_INPUT, "completion_tokens": USAGE_OUTPUT, "total_tokens": USAGE_INPUT + USAGE_OUTPUT});
            }
        }
        Wire::Anthropic => {
            out["id"] = json!(format!("msg_fake_{n}"));
            out["type"] = json!("message");
            out["role"] = json!("assistant");
            out["model"] = model;
            if usage {
                out["usage"] = json!({"input_tokens": USAGE_INPUT, "output_tokens": USAGE_OUTPUT});
                if matches!(reply, Reply::WebSearch { .. } | Reply::PauseTurn { .. }) {
                    out["usage"]["server_tool_use"] = json!({"web_search_requests": 1});
                }
            }
        }
        Wire::Gemini => {
            if usage {
                out["usageMetadata"] = json!({"promptTokenCount": USAGE_INPUT, "candidatesTokenCount": USAGE_OUTPUT, "totalTokenCount": USAGE_INPUT + USAGE_OUTPUT});
            }
        }
    }
    out
}

/// What [`Reply::Auto`] answers to `body`.
pub(crate) fn auto_reply(wire: Wire, body: &Value, n: usize) -> Reply {
    let (schema, tools, called): (Option<Value>, Vec<(String, Value)>, Vec<String>) = match wire {
        Wire::OpenAi => {
            // `json_schema`, or llama.cpp's `json_object` with a `schema`.
            let schema = body
                .pointer("/response_format/json_schema/schema")
                .or_else(|| body.pointer("/response_format/schema"))
                .cloned();
            let tools = body
                .get("tools")
                .and_then(|t| t.as_array())
                .map(|t| {
                    t.iter()
                        .filter_map(|t| {
                            let f = t.get("function")?;
                            Some((
                                f.get("name")?.as_str()?.to_string(),
                                f.get("parameters").cloned().unwrap_or(json!({})),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default();
            let called = body
                .get("messages")
                .and_then(|m| m.as_array())
                .map(|m| {
                    m.iter()
                        .filter_map(|m| m.get("tool_calls").and_then(|t| t.as_array()))
                        .flatten()
                        .filter_map(|c| {
                            c.pointer("/function/name")
                                .and_then(|n| n.as_str())
                                .map(str::to_string)
                        })
                        .collect()
                })
                .unwrap_or_default();
            (schema, tools, called)
        }
        Wire::Anthropic => {
            let forced = body
                .pointer("/tool_choice/name")
                .and_then(|n| n.as_str())
                .map(str::to_string);
            let all: Vec<(String, Value)> = body
                .get("tools")
                .and_then(|t| t.as_array())
                .map(|t| {
                    t.iter()
                        .filter_map(|t| {
                            Some((
                                t.get("name")?.as_str()?.to_string(),
                                t.get("input_schema").cloned().unwrap_or(json!({})),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default();
            let schema = forced
                .as_ref()
                .and_then(|f| all.iter().find(|(n, _)| n == f).map(|(_, s)| s.clone()));
            let tools = all
                .into_iter()
                .filter(|(n, _)| Some(n) != forced.as_ref())
                .collect();
            let called = body
                .get("messages")
                .and_then(|m| m.as_array())
                .map(|m| {
                    m.iter()
                        .filter_map(|m| m.get("content").and_then(|c| c.as_array()))
                        .flatten()
                        .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("tool_use"))
                        .filter_map(|b| b.get("name").and_then(|n| n.as_str()).map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            (schema, tools, called)
        }
        Wire::Gemini => {
            let schema = body.pointer("/generationConfig/responseSchema").cloned();
            let tools = body
                .pointer("/tools/0/functionDeclarations")
                .and_then(|t| t.as_array())
                .map(|t| {
                    t.iter()
                        .filter_map(|t| {
                            Some((
                                t.get("name")?.as_str()?.to_string(),
                                t.get("parameters").cloned().unwrap_or(json!({})),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default();
            let called = body
                .get("contents")
                .and_then(|m| m.as_array())
                .map(|m| {
                    m.iter()
                        .filter_map(|m| m.get("parts").and_then(|c| c.as_array()))
                        .flatten()
                        .filter_map(|p| {
                            p.pointer("/functionCall/name")
                                .and_then(|n| n.as_str())
                                .map(str::to_string)
                        })
                        .collect()
                })
                .unwrap_or_default();
            (schema, tools, called)
        }
    };
    if let Some(schema) = schema {
        return Reply::Json(sample(&schema));
    }
    let pending: Vec<(String, Value)> = tools
        .into_iter()
        .filter(|(name, _)| !called.contains(name))
        .map(|(name, params)| (name, sample(&params)))
        .collect();
    if !pending.is_empty() {
        return Reply::ToolCalls(pending);
    }
    Reply::Text(format!("fake answer {n}"))
}
