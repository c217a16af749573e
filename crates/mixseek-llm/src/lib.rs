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

pub mod backend;
pub mod cache;
pub mod capability;
pub mod direct;
pub mod env;
pub mod error;
pub mod limits;
pub mod model;
pub mod observer;
pub mod pricing;
pub mod providers;
pub mod registry;
pub mod retry;
pub mod secret;
pub mod structured;
pub mod types;
mod validators;

mod cut_off;
mod observed;
mod runtime;

pub use cache::CacheStats;
pub use direct::{DirectOutcome, DirectRequest, run_direct};
pub use env::Env;
pub use error::{ErrorKind, LlmError};
pub use mixseek_core::ModelId;
pub use model::ChatModel;
pub use observer::{CallObserver, LedgerEntry, LedgerKey, UsageLedger};
pub use registry::{ModelRegistry, RegistryConfig};
pub use structured::{
    Structured, StructuredOptions, generate_json, generate_structured, schema_of,
};
pub use types::{
    CallerTag, ChatRequest, ChatResponse, FinishReason, GenerationParams, Message, ResponseSchema,
    TokenCounts, ToolCall, ToolSpec,
};

/// Re-exported settings types of `[providers]`, `[pricing]` and `[cache]`.
pub use mixseek_config::providers::{CacheSettings, Price, ProviderKind, ProviderSettings};
