//! Test support for mixseek (a dev-dependency only): fake LLM servers on 127.0.0.1 speaking
//! the OpenAI, Anthropic and Gemini wire formats, scripted per test and recording every
//! request ([`FakeLlm`]); the tiny HTTP server under them ([`HttpServer`]); a
//! schema sampler; hostile answers ([`Hostile`]: every way a server can break an answer);
//! and the `mixseek-fake-llm` binary (an OpenAI-format server with
//! configurable latency and fault rate, for benchmarks and end-to-end tests).

#![warn(missing_docs, unreachable_pub)]

mod fake;
mod hostile;
mod sample;
mod server;
mod wire;

pub use fake::{FakeLlm, FormatRejection, RecordedRequest, Reply, fake_signature, respond};
pub use hostile::{Hostile, INVALID_ARGUMENTS, UNKNOWN_FINISH_REASON, UNKNOWN_TOOL};
pub use server::{HttpRequest, HttpResponse, HttpServer};
pub use wire::{RESPONSES_PATH, USAGE_INPUT, USAGE_OUTPUT, Wire, error_response};
