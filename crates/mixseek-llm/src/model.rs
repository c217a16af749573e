//! The [`ChatModel`] trait: one chat call to one configured model.
//!
//! # Contract
//!
//! * **Object-safe, shareable.** Models are handed out as `Arc<dyn ChatModel>` by
//!   [`ModelRegistry::model`](crate::ModelRegistry::model); they are `Send + Sync` and may be
//!   called concurrently from any number of tasks. Per-provider limits (in-flight requests,
//!   requests and tokens per minute) are enforced inside, so callers need no throttling.
//! * **One call, complete.** [`ChatModel::chat`] does everything for one request: waits for
//!   the provider's limits, sends, retries transient failures (connect, timeout, 408, 429,
//!   500, 502, 503, 504, 529) with exponential backoff and jitter honouring `Retry-After`,
//!   all within [`ChatRequest::timeout`](crate::ChatRequest::timeout) (default: the
//!   provider's `timeout_seconds`); an attempt that gets no answer within the provider's
//!   `attempt_timeout_seconds` (default: half the call's limit) is abandoned and retried.
//!   Then it tries the configured fallback models in order, each with the time the call has
//!   left (one call never takes longer than its limit, fallbacks included). Permanent failures (400, 401, 403, 404, …) end the
//!   call at once. [`ChatResponse::attempts`](crate::ChatResponse::attempts) counts every
//!   HTTP attempt, over all models tried.
//! * **Structured output.** With [`ChatRequest::response_schema`](crate::ChatRequest) set,
//!   the provider's native feature is used (OpenAI `response_format` json_schema, falling
//!   back to json_object with the schema (llama.cpp), json_object, then a plain instruction
//!   on servers that reject it — remembered
//!   per provider and base URL for the rest of the process; Anthropic a forced tool; Gemini `responseSchema`) and
//!   `text` holds the raw JSON document. `chat` does **not** validate it: use
//!   [`generate_structured`](crate::generate_structured) /
//!   [`generate_json`](crate::generate_json) for parse → validate → check → repair.
//! * **Accounting.** `usage` is the accounting view of the call (`requests = 1`, tokens,
//!   cost from the pricing table, `requests_without_usage = 1` when the provider reported no
//!   counts). Models from a registry report one [`LlmCallRecord`](mixseek_core::LlmCallRecord)
//!   per `chat` call (success or failure) to the registry's
//!   [`CallObserver`](crate::CallObserver)s and its [`UsageLedger`](crate::UsageLedger).
//! * **Caching.** When the registry's cache is enabled, an identical request (provider,
//!   base URL, model, system, messages, tools, schema, params and
//!   [`CallerTag::repeat`](crate::CallerTag)) is answered from disk with `cache_hit = true`
//!   and `attempts = 0`. Errors are never cached.
//! * **Errors** are [`LlmError`]s: a kind (transient or not), provider, model, status, the
//!   server's message with API keys masked, attempts, and the raw output when relevant.
//! * **Secrets.** No API key ever appears in an error, a log line or a cache file.

use crate::error::LlmError;
use crate::types::{ChatRequest, ChatResponse};

/// One configured model (`provider:model`), ready to answer chat requests. See the module
/// documentation for the contract.
#[async_trait::async_trait]
pub trait ChatModel: Send + Sync {
    /// The model id as configured, `provider:model` (e.g. `openai:gpt-4o`, `mock:judge-stop`).
    fn id(&self) -> &str;

    /// Sends one request and returns the model's answer.
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;

    /// The time limit of a call whose request sets no [`ChatRequest::timeout`], when the
    /// model has one (the provider's `timeout_seconds`).
    fn default_timeout(&self) -> Option<std::time::Duration> {
        None
    }

    /// The provider part of [`ChatModel::id`].
    fn provider(&self) -> &str {
        mixseek_core::model_id::provider_of(self.id())
    }

    /// True for the offline `mock:` provider, whose answers are made up (label them so).
    fn is_mock(&self) -> bool {
        self.provider() == "mock"
    }
}
