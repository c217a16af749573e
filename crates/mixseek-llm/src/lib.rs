//! The LLM layer of mixseek: the [`ChatModel`] trait and its providers (OpenAI Chat
//! Completions and every OpenAI-compatible server, Anthropic Messages, Google Gemini, and
//! the offline `mock:` provider), chosen by `provider:model` ids through a
//! [`ModelRegistry`]; structured output with JSON-schema validation and repair
//! ([`generate_structured`]); retries with backoff honouring `Retry-After`, per-provider
//! limits, fallback models, usage and cost accounting ([`UsageLedger`], [`CallObserver`]),
//! and the opt-in response cache.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mixseek_llm::LlmError> {
//! use mixseek_llm::{ChatRequest, ModelRegistry};
//! let registry = ModelRegistry::with_defaults()?;
//! let model = registry.model("mock:default")?;
//! let answer = model.chat(&ChatRequest::user("Say hello")).await?;
//! println!("{} ({} attempts)", answer.text_or_empty(), answer.attempts);
//! # Ok(()) }
//! ```

// `LlmError` carries provider, model, status, message and raw output by value (~130 bytes):
// errors are the cold path of a network call, and a flat, public struct is easier to use
// than a boxed one.
#![allow(clippy::result_large_err)]
#![warn(missing_docs, unreachable_pub)]

mod backend;
mod cache;
mod capability;
mod direct;
mod env;
mod error;
mod limits;
mod model;
mod observer;
mod passthrough;
mod pricing;
mod providers;
mod reach;
mod registry;
mod retry;
mod secret;
mod structured;
mod types;
mod validators;

mod cut_off;
mod observed;
mod runtime;

pub use backend::estimate_tokens;
pub use cache::{CacheStats, ResponseCache, process_stats};
pub use direct::{DirectOutcome, DirectRequest, run_direct};
pub use env::Env;
pub use error::{ErrorKind, LlmError};
pub use model::ChatModel;
pub use observed::{set_genai_attributes, set_trace_texts};
pub use observer::{CallObserver, LedgerEntry, LedgerKey, UsageLedger};
pub use passthrough::{apply_model_settings, merged_model_settings};
pub use providers::anthropic::CODE_EXECUTION_BETA;
pub use providers::{api_key_values, base_url_of, native_tool_support};
pub use reach::{is_local_url, probe};
pub use registry::{ModelRegistry, RegistryConfig, SharedRuntimes};
pub use retry::MAX_SERVER_WAIT;
pub use secret::mask;
pub use structured::{
    CheckFn, Structured, StructuredOptions, generate_json, generate_structured, parse_json,
    schema_of,
};
pub use types::{
    CallerTag, ChatRequest, ChatResponse, FinishReason, GenerationParams, Message, NativeTool,
    ResponseSchema, TokenCounts, ToolCall, ToolSpec, WebSearchOptions,
};
