//! The wire formats, one module each, and the resolution of a provider name to its
//! backend, base URL and API key.
//!
//! **Why hand-written `reqwest` code and not `genai`.** Each format needs only one endpoint
//! (Chat Completions, Messages, generateContent) and a few hundred lines; writing them
//! ourselves gives exactly what the layers above rely on and `genai` (0.x, churning) does
//! not expose uniformly: the HTTP status and headers of every failure (for `Retry-After`
//! and rate-limit reset headers), the server's message with our key masking, the
//! `json_schema` → `json_object` → instruction capability fallback for OpenAI-compatible
//! servers, Anthropic's forced tool for schemas, Gemini's schema dialect, exact control of
//! the request body (tested byte for byte against the testkit's fake servers) and one
//! shared connection pool. Adding a provider is one module implementing
//! `crate::backend::Backend`.
//!
//! **Resolution of a provider name.** `[providers.<name>]` keys win; otherwise the built-in
//! defaults apply:
//!
//! | name | wire | base URL | API key (first set wins) |
//! |---|---|---|---|
//! | `openai` | OpenAI | `OPENAI_BASE_URL`, else `https://api.openai.com/v1` | `OPENAI_API_KEY` |
//! | `anthropic` | Anthropic | `ANTHROPIC_BASE_URL`, else `https://api.anthropic.com` | `ANTHROPIC_API_KEY` |
//! | `google-gla` | Gemini | `GOOGLE_GLA_BASE_URL`, else `https://generativelanguage.googleapis.com` | `GOOGLE_API_KEY`, `GEMINI_API_KEY` |
//! | `grok`, `xai` | OpenAI | `https://api.x.ai/v1` | `GROK_API_KEY`, `XAI_API_KEY` |
//! | `mock` | offline | — | — |
//! | any other | `kind` (default OpenAI) | `base_url` (required) | `api_key_env`, else none |
//!
//! A built-in provider without its key, or a configured `api_key_env` that is unset, is a
//! [`Config`](crate::ErrorKind::Config) error when the model is resolved.

pub mod anthropic;
pub mod gemini;
pub mod mock;
pub mod openai;

use crate::backend::Backend;
use crate::env::Env;
use crate::error::LlmError;
use mixseek_config::providers::{ProviderKind, ProviderSettings};
use std::sync::Arc;

/// Built-in defaults of a provider name: kind, base URL, API key variables.
fn builtin(name: &str, env: &Env) -> Option<(ProviderKind, String, &'static [&'static str])> {
    match name {
        "openai" => Some((
            ProviderKind::OpenaiCompatible,
            env.get("OPENAI_BASE_URL")
                .unwrap_or_else(|| "https://api.openai.com/v1".to_string()),
            &["OPENAI_API_KEY"],
        )),
        "anthropic" => Some((
            ProviderKind::Anthropic,
            env.get("ANTHROPIC_BASE_URL")
                .unwrap_or_else(|| "https://api.anthropic.com".to_string()),
            &["ANTHROPIC_API_KEY"],
        )),
        "google-gla" => Some((
            ProviderKind::Gemini,
            env.get("GOOGLE_GLA_BASE_URL")
                .unwrap_or_else(|| "https://generativelanguage.googleapis.com".to_string()),
            &["GOOGLE_API_KEY", "GEMINI_API_KEY"],
        )),
        "grok" | "xai" => Some((
            ProviderKind::OpenaiCompatible,
            "https://api.x.ai/v1".to_string(),
            &["GROK_API_KEY", "XAI_API_KEY"],
        )),
        _ => None,
    }
}

/// The backend and base URL of provider `name`.
pub(crate) fn build_backend(
    name: &str,
    s: &ProviderSettings,
    env: &Env,
    http: &reqwest::Client,
) -> Result<(Arc<dyn Backend>, String), LlmError> {
    if name == "mock" {
        return Ok((
            Arc::new(mock::MockBackend::new()),
            "mock://offline".to_string(),
        ));
    }
    let builtin = builtin(name, env);
    let kind = s
        .kind
        .or(builtin.as_ref().map(|b| b.0))
        .unwrap_or(ProviderKind::OpenaiCompatible);
    let base_url = match (&s.base_url, &builtin) {
        (Some(u), _) => u.clone(),
        (None, Some(b)) => b.1.clone(),
        (None, None) => {
            return Err(LlmError::config(
                name,
                format!("provider `{name}` has no base_url; set [providers.{name}] base_url"),
            ));
        }
    };
    let base_url = base_url.trim_end_matches('/').to_string();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(LlmError::config(
            name,
            format!("base_url `{base_url}` is not an http(s) URL"),
        ));
    }
    let api_key = match (&s.api_key_env, &builtin) {
        (Some(var), _) => Some(env.get(var).ok_or_else(|| {
            LlmError::config(name, format!("{var} environment variable not found"))
        })?),
        (None, Some((_, _, vars))) => {
            Some(vars.iter().find_map(|v| env.get(v)).ok_or_else(|| {
                LlmError::config(
                    name,
                    format!("{} environment variable not found", vars.join(" or ")),
                )
            })?)
        }
        (None, None) => None,
    };
    let common = providers_common(name, base_url.clone(), api_key, s, http);
    let backend: Arc<dyn Backend> = match kind {
        ProviderKind::OpenaiCompatible => Arc::new(openai::OpenAiBackend::new(common)),
        ProviderKind::Anthropic => Arc::new(anthropic::AnthropicBackend::new(common)),
        ProviderKind::Gemini => Arc::new(gemini::GeminiBackend::new(common)),
    };
    Ok((backend, base_url))
}

/// What every HTTP backend holds.
pub(crate) struct HttpCommon {
    pub provider: String,
    pub base_url: String,
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    pub http: reqwest::Client,
}

impl HttpCommon {
    /// The secrets to mask in messages.
    pub fn secrets(&self) -> Vec<&str> {
        self.api_key.iter().map(String::as_str).collect()
    }

    /// A POST with the extra headers.
    pub fn post(&self, url: &str) -> reqwest::RequestBuilder {
        let mut b = self.http.post(url);
        for (k, v) in &self.headers {
            b = b.header(k, v);
        }
        b
    }
}

fn providers_common(
    name: &str,
    base_url: String,
    api_key: Option<String>,
    s: &ProviderSettings,
    http: &reqwest::Client,
) -> HttpCommon {
    HttpCommon {
        provider: name.to_string(),
        base_url,
        api_key,
        headers: s
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        http: http.clone(),
    }
}
