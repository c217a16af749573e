//! Test support for mixseek (a dev-dependency only): fake LLM servers on 127.0.0.1 speaking
//! the OpenAI, Anthropic and Gemini wire formats, scripted per test and recording every
//! request ([`FakeLlm`]; the Gemini one also answers Vertex AI's path); a fake OAuth token
//! endpoint and a test-only service-account key for `google-vertex:` ([`FakeTokenServer`]); the tiny HTTP server under them ([`HttpServer`]); a
//! schema sampler; hostile answers ([`Hostile`]: every way a server can break an answer);
//! an OTLP/HTTP traces receiver ([`OtlpReceiver`]); and the `mixseek-fake-llm` binary (an OpenAI-format server with
//! configurable latency and fault rate, for benchmarks and end-to-end tests).

#![warn(missing_docs, unreachable_pub)]

mod fake;
mod hostile;
mod otlp;
mod sample;
mod server;
mod vertex;
mod wire;

pub use fake::{FakeLlm, FormatRejection, RecordedRequest, Reply, fake_signature, respond};
pub use hostile::{Hostile, INVALID_ARGUMENTS, UNKNOWN_FINISH_REASON, UNKNOWN_TOOL};
pub use otlp::{OtlpReceiver, ReceivedSpan};
pub use server::{HttpRequest, HttpResponse, HttpServer};
pub use vertex::{
    FakeTokenServer, TEST_CLIENT_EMAIL, TEST_PRIVATE_KEY_ID, TEST_SERVICE_ACCOUNT_KEY, TokenReply,
    TokenRequest, fake_access_token, service_account_json,
};
pub use wire::{RESPONSES_PATH, USAGE_INPUT, USAGE_OUTPUT, Wire, error_response};
