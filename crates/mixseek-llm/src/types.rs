//! The request and response of one chat call, provider-neutral.

use mixseek_core::{Role, Usage};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Who makes a call: where its usage is booked, and (through `repeat`) which of several
/// identical calls it is, so the cache keeps repeated samples apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CallerTag {
    /// The run's execution, when the call is made inside one.
    pub execution_id: Option<String>,
    /// The team the call is made for, if any.
    pub team_id: Option<String>,
    /// The round the call is made in, if any.
    pub round_number: Option<u32>,
    /// What the call is for (leader, member, judge, …).
    pub role: Role,
    /// Index of this call among identical repeated calls (e.g. judge samples); 0 by default.
    pub repeat: u32,
}

impl Default for CallerTag {
    fn default() -> Self {
        Self {
            execution_id: None,
            team_id: None,
            round_number: None,
            role: Role::Direct,
            repeat: 0,
        }
    }
}

impl CallerTag {
    /// A tag with only a role (calls made outside a run, tests).
    pub fn role(role: Role) -> Self {
        Self {
            role,
            ..Self::default()
        }
    }
    /// A tag for a call inside a run.
    pub fn run(
        execution_id: impl Into<String>,
        team_id: impl Into<String>,
        round_number: u32,
        role: Role,
    ) -> Self {
        Self {
            execution_id: Some(execution_id.into()),
            team_id: Some(team_id.into()),
            round_number: Some(round_number),
            role,
            repeat: 0,
        }
    }
    /// The tag with [`CallerTag::repeat`] set.
    pub fn with_repeat(mut self, repeat: u32) -> Self {
        self.repeat = repeat;
        self
    }
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned id; the tool result must quote it.
    pub id: String,
    /// The name of the tool called (one of the request's [`ToolSpec`]s).
    pub name: String,
    /// The arguments as a JSON value (an object for every provider we support).
    pub arguments: serde_json::Value,
    /// Opaque data the provider attached to the call and expects back when the call is
    /// replayed in a later request (Gemini: `{"thoughtSignature": "…"}`). Providers that
    /// know nothing of it ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_data: Option<serde_json::Value>,
}

impl ToolCall {
    /// A call without provider data.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: serde_json::Value,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
            provider_data: None,
        }
    }
}

/// One message of the conversation (the system prompt is separate: [`ChatRequest::system`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the user (the caller) says.
    User {
        /// The text.
        content: String,
    },
    /// An earlier answer of the model, replayed.
    Assistant {
        /// Its text, if it had any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// The tool calls it asked for.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of a tool call, answering the assistant message that asked for it.
    Tool {
        /// The [`ToolCall::id`] answered.
        call_id: String,
        /// The tool's name.
        name: String,
        /// What the tool returned (or its error message).
        content: String,
        /// The tool failed: Anthropic gets `is_error: true` on the `tool_result`; the other
        /// wires only see the text.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

impl Message {
    /// A [`Message::User`].
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
        }
    }
    /// A [`Message::Assistant`] with text and no tool calls.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message::Assistant {
            content: Some(content.into()),
            tool_calls: Vec::new(),
        }
    }
    /// A [`Message::Assistant`] that asked for tool calls.
    pub fn assistant_tool_calls(content: Option<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message::Assistant {
            content,
            tool_calls,
        }
    }
    /// The result of a tool call that succeeded.
    pub fn tool_result(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Message::Tool {
            call_id: call_id.into(),
            name: name.into(),
            content: content.into(),
            is_error: false,
        }
    }
    /// The result of a tool call that failed (`is_error` set).
    pub fn tool_error(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Message::Tool {
            call_id: call_id.into(),
            name: name.into(),
            content: content.into(),
            is_error: true,
        }
    }
}

/// A tool (function) the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// A tool the provider runs on its own servers (a "server tool", "built-in tool" or
/// "grounding" tool), as opposed to a [`ToolSpec`] function that the caller runs.
///
/// How each wire sends it and what comes back (see the provider modules for details):
///
/// | tool | Anthropic Messages | Gemini | OpenAI / xAI (Responses API) | `mock:` |
/// |---|---|---|---|---|
/// | [`NativeTool::WebSearch`] | `web_search_20250305` server tool | `google_search` | `web_search` | labelled offline answer |
/// | [`NativeTool::CodeExecution`] | `code_execution_20250825` (beta header `code-execution-2025-08-25`) | `code_execution` | `code_interpreter` | labelled offline answer |
///
/// Which providers can run which tool (and which options) is decided by
/// [`providers::native_tool_support`](crate::providers::native_tool_support).
///
/// **What the answer text holds.** [`ChatResponse::text`] is the model's final text, in
/// order with what the tools did: each code run as a fenced block of the code followed by
/// a fenced block of its output (`Output:`), and, after a web search, a `Sources:` list of
/// the pages the answer cites (`- title — url`, de-duplicated). Nothing else is kept: the
/// raw search results and the providers' rendered search widgets are dropped. With a
/// [`ChatRequest::response_schema`] the text is the JSON document alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum NativeTool {
    /// Searching the web.
    WebSearch(WebSearchOptions),
    /// Running code in the provider's sandbox.
    CodeExecution,
}

impl NativeTool {
    /// Web search with default options.
    pub fn web_search() -> Self {
        NativeTool::WebSearch(WebSearchOptions::default())
    }
    /// The name used in messages: `web_search` or `code_execution`.
    pub fn name(&self) -> &'static str {
        match self {
            NativeTool::WebSearch(_) => "web_search",
            NativeTool::CodeExecution => "code_execution",
        }
    }
}

/// Options of [`NativeTool::WebSearch`]. A provider that cannot honour a set option refuses
/// the request (see [`providers::native_tool_support`](crate::providers::native_tool_support)).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSearchOptions {
    /// Most searches in one answer (Anthropic `max_uses`; OpenAI/xAI `max_tool_calls`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u32>,
    /// Only search these domains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_domains: Vec<String>,
    /// Never search these domains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_domains: Vec<String>,
}

/// A JSON schema the answer must follow. With it, [`ChatResponse::text`] holds the JSON
/// document the model produced (each provider uses its native feature: OpenAI
/// `response_format`, Anthropic a forced tool, Gemini `responseSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseSchema {
    /// A short identifier (`[A-Za-z0-9_-]`, as OpenAI requires), e.g. `JudgmentResult`.
    pub name: String,
    /// The JSON schema itself.
    pub schema: serde_json::Value,
}

/// Sampling parameters. `None` leaves the provider's default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GenerationParams {
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Most tokens in the answer.
    pub max_tokens: Option<u32>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// Sampling seed, for providers that honour one.
    pub seed: Option<u64>,
    /// Stop sequences (none: the provider's default).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// The rest of the configuration's `model_settings` / `google_model_settings` (see
    /// [`crate::apply_model_settings`]): keys each wire format maps onto its request
    /// (`presence_penalty`, `openai_reasoning_effort`, `google_thinking_config`,
    /// `extra_body`, `extra_headers`, …); a key a wire does not know is not sent.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// One chat call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The system prompt.
    pub system: Option<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Functions the model may call (the caller runs them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// Tools the provider runs itself (web search, code execution); see [`NativeTool`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub native_tools: Vec<NativeTool>,
    /// The schema of a structured answer (see [`ResponseSchema`]).
    pub response_schema: Option<ResponseSchema>,
    /// Sampling parameters.
    pub params: GenerationParams,
    /// Time limit of the whole call, retries and backoff included (`None`: the provider's
    /// `timeout_seconds`).
    #[serde(skip)]
    pub timeout: Option<Duration>,
    /// Who makes the call (usage booking, cache key). Never sent.
    #[serde(skip)]
    pub caller: CallerTag,
    /// Exact substrings of the rendered prompt (the system prompt and the first user message)
    /// that change from one run to the next without changing what is asked — the rendered
    /// `current_datetime`: the response cache masks them there in its key, so a rerun with
    /// the cache on is answered from it. Never sent.
    #[serde(skip)]
    pub cache_volatile: Vec<String>,
}

impl ChatRequest {
    /// A request with one user message.
    pub fn user(prompt: impl Into<String>) -> Self {
        Self {
            messages: vec![Message::user(prompt)],
            ..Self::default()
        }
    }
    /// The request with a system prompt.
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }
    /// The request with [`ChatRequest::caller`] set.
    pub fn with_caller(mut self, caller: CallerTag) -> Self {
        self.caller = caller;
        self
    }
    /// See [`ChatRequest::cache_volatile`].
    pub fn with_cache_volatile(mut self, volatile: Vec<String>) -> Self {
        self.cache_volatile = volatile;
        self
    }
    /// The request asking for a structured answer following `schema`.
    pub fn with_schema(mut self, name: impl Into<String>, schema: serde_json::Value) -> Self {
        self.response_schema = Some(ResponseSchema {
            name: name.into(),
            schema,
        });
        self
    }
    /// The request offering `tools`.
    pub fn with_tools(mut self, tools: Vec<ToolSpec>) -> Self {
        self.tools = tools;
        self
    }
    /// The request with provider-run tools.
    pub fn with_native_tools(mut self, tools: Vec<NativeTool>) -> Self {
        self.native_tools = tools;
        self
    }
    /// The request with a time limit for the whole call.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model finished its answer.
    Stop,
    /// The token limit was reached (the answer may be cut).
    Length,
    /// The model stopped to have tools called.
    ToolCalls,
    /// The provider's content filter cut the answer.
    ContentFilter,
    /// Any other reason, as the provider named it.
    Other(String),
}

/// Token counts as a provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCounts {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Answer tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's prompt cache.
    pub cached_tokens: u64,
}

/// The answer to one chat call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The text answer (with a response schema: the raw JSON document).
    pub text: Option<String>,
    /// The tool calls the model asked for.
    pub tool_calls: Vec<ToolCall>,
    /// Accounting view of this call: tokens, `requests = 1`, cost when the model has a price,
    /// `requests_without_usage = 1` when the provider reported no token counts.
    pub usage: Usage,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// Wall time of the call, retries included.
    #[serde(with = "duration_ms")]
    pub latency: Duration,
    /// HTTP attempts made, over all models tried (1 when the first attempt succeeded; 0 on a
    /// cache hit).
    pub attempts: u32,
    /// `provider:model` that answered (differs from the requested one after a fallback).
    pub model: String,
    /// Answered from the response cache.
    pub cache_hit: bool,
}

impl ChatResponse {
    /// The text, or "" when there is none.
    pub fn text_or_empty(&self) -> &str {
        self.text.as_deref().unwrap_or("")
    }
}

mod duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}
