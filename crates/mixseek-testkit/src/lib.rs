//! Test support for mixseek (a dev-dependency only): fake LLM servers on 127.0.0.1 speaking
//! the OpenAI, Anthropic and Gemini wire formats, scripted per test and recording every
//! request ([`FakeLlm`]); the tiny HTTP server under them ([`server::HttpServer`]); a
//! schema sampler; hostile answers ([`Hostile`]: every way a server can break an answer);
//! and the `mixseek-fake-llm` binary (an OpenAI-format server with
//! configurable latency and fault rate, for benchmarks and end-to-end tests).

pub mod fake;
pub mod hostile;
pub mod sample;
pub mod server;

pub use fake::{FakeLlm, FormatRejection, RecordedRequest, Reply, USAGE_INPUT, USAGE_OUTPUT, Wire};
pub use hostile::Hostile;
