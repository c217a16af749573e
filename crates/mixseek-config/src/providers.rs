//! LLM provider settings: `[providers.<name>]` (endpoints, credentials, limits, retries),
//! `[pricing."provider:model"]` (cost per million tokens) and `[cache]` (the opt-in response
//! cache). The loader mounts them as top-level tables of the orchestrator file:
//! `providers: BTreeMap<String, ProviderSettings>`, `pricing: BTreeMap<String, Price>`,
//! `cache: CacheSettings`.

use crate::issues::Issues;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    /// OpenAI Chat Completions (`POST {base_url}/chat/completions`): OpenAI, vLLM, Ollama,
    /// llama.cpp, LM Studio, OpenRouter, xAI, …
    OpenaiCompatible,
    /// Anthropic Messages (`POST {base_url}/v1/messages`).
    Anthropic,
    /// Google Gemini API (`POST {base_url}/v1beta/models/{model}:generateContent`).
    Gemini,
}

impl ProviderKind {
    /// The TOML word (`openai-compatible`, `anthropic`, `gemini`).
    pub fn as_str(&self) -> &'static str {
        match self {
            ProviderKind::OpenaiCompatible => "openai-compatible",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
        }
    }
}

/// One `[providers.<name>]` table. For a built-in name (`openai`, `anthropic`, `google-gla`,
/// `google-vertex`, `grok`, `grok-responses`, `xai`) every key is optional and overrides the built-in default; any other name
/// defines a new provider usable as `<name>:<model>` and needs at least `base_url`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ProviderSettings {
    /// Wire format. Defaults to the built-in provider's format, or `openai-compatible` for a
    /// new name.
    pub kind: Option<ProviderKind>,
    /// Base URL of the API, e.g. `http://localhost:11434/v1` (Ollama) or
    /// `http://localhost:8000/v1` (vLLM). Defaults to the provider's public endpoint
    /// (for `openai`: `OPENAI_BASE_URL` when set).
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key (the key itself never goes in
    /// a file). Unset for a new name means "no key" (local servers).
    pub api_key_env: Option<String>,
    /// Maximum number of requests in flight at once to this provider.
    pub max_in_flight: u32,
    /// Requests per minute allowed to this provider (unset: unlimited).
    pub requests_per_minute: Option<u32>,
    /// Tokens (input + expected output) per minute allowed to this provider (unset: unlimited).
    pub tokens_per_minute: Option<u32>,
    /// Default time limit of one call, retries included, in seconds.
    pub timeout_seconds: f64,
    /// Time limit of one attempt in seconds: an attempt without an answer by then is
    /// abandoned and retried (within the call's time limit). Unset: half the call's time
    /// limit (150 s with the default `timeout_seconds`), so a hung attempt leaves room for a
    /// retry. Raise it for slow local models or long reasoning answers.
    pub attempt_timeout_seconds: Option<f64>,
    /// Attempts per call for transient failures (connect, timeout, 408, 429, 5xx), first
    /// attempt included.
    pub max_attempts: u32,
    /// First backoff delay in seconds; doubles after each failed attempt (with jitter).
    pub backoff_initial_seconds: f64,
    /// Largest backoff delay in seconds.
    pub backoff_max_seconds: f64,
    /// Extra HTTP headers sent with every request (e.g. OpenRouter's `HTTP-Referer`).
    pub headers: BTreeMap<String, String>,
    /// `google-vertex` only: the Google Cloud project. Unset: `GOOGLE_CLOUD_PROJECT`, else the
    /// credentials file's `project_id`.
    pub project: Option<String>,
    /// `google-vertex` only: the Vertex AI region (e.g. `us-central1`, `europe-west4`,
    /// `global`). Unset: `GOOGLE_CLOUD_LOCATION`, else `us-central1`.
    pub location: Option<String>,
    /// `google-vertex` only: the OAuth token endpoint. Unset: the credentials file's
    /// `token_uri`, else `https://oauth2.googleapis.com/token`.
    pub token_url: Option<String>,
}

impl Default for ProviderSettings {
    fn default() -> Self {
        Self {
            kind: None,
            base_url: None,
            api_key_env: None,
            max_in_flight: 64,
            requests_per_minute: None,
            tokens_per_minute: None,
            timeout_seconds: 300.0,
            attempt_timeout_seconds: None,
            max_attempts: 6,
            backoff_initial_seconds: 0.5,
            backoff_max_seconds: 30.0,
            headers: BTreeMap::new(),
            project: None,
            location: None,
            token_url: None,
        }
    }
}

impl ProviderSettings {
    /// Adds this section's range and consistency problems to `issues`, keys under `prefix`.
    pub fn validate(&self, prefix: &str, issues: &mut Issues) {
        issues.range_i64(
            prefix,
            "max_in_flight",
            i64::from(self.max_in_flight),
            1,
            100_000,
        );
        issues.opt_range_i64(
            prefix,
            "requests_per_minute",
            self.requests_per_minute.map(i64::from),
            1,
            i64::MAX,
        );
        issues.opt_range_i64(
            prefix,
            "tokens_per_minute",
            self.tokens_per_minute.map(i64::from),
            1,
            i64::MAX,
        );
        issues.range_f64(
            prefix,
            "timeout_seconds",
            self.timeout_seconds,
            0.001,
            86_400.0,
        );
        issues.opt_range_f64(
            prefix,
            "attempt_timeout_seconds",
            self.attempt_timeout_seconds,
            0.001,
            86_400.0,
        );
        issues.range_i64(prefix, "max_attempts", i64::from(self.max_attempts), 1, 100);
        issues.range_f64(
            prefix,
            "backoff_initial_seconds",
            self.backoff_initial_seconds,
            0.0,
            3_600.0,
        );
        issues.range_f64(
            prefix,
            "backoff_max_seconds",
            self.backoff_max_seconds,
            0.0,
            3_600.0,
        );
        if let Some(url) = &self.base_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            issues.error_hint(
                prefix,
                "base_url",
                format!("`{url}` is not an http(s) URL"),
                "e.g. http://localhost:11434/v1",
            );
        }
        if let Some(env) = &self.api_key_env {
            issues.non_blank(prefix, "api_key_env", env);
        }
        if let Some(url) = &self.token_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            issues.error_hint(
                prefix,
                "token_url",
                format!("`{url}` is not an http(s) URL"),
                "e.g. https://oauth2.googleapis.com/token",
            );
        }
        if let Some(p) = &self.project {
            issues.non_blank(prefix, "project", p);
        }
        if let Some(l) = &self.location {
            if l.trim().is_empty()
                || !l
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            {
                issues.error_hint(
                    prefix,
                    "location",
                    format!("`{l}` is not a Google Cloud region"),
                    "e.g. us-central1, europe-west4 or global",
                );
            }
        }
    }
}

/// Validates a whole `[providers]` table: each entry, plus the rules that depend on the
/// name (a new provider needs `base_url`; `grok-responses` and `google-vertex` keep their wire;
/// `[providers.mock]` may only tune limits and retries).
pub(crate) fn validate_providers(
    providers: &BTreeMap<String, ProviderSettings>,
    prefix: &str,
    issues: &mut Issues,
) {
    for (name, settings) in providers {
        let key_prefix = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        settings.validate(&key_prefix, issues);
        if name.is_empty() || name.contains(':') || name.chars().any(char::is_whitespace) {
            issues.error(
                prefix,
                name,
                "a provider name must be non-empty, without `:` or spaces",
            );
            continue;
        }
        if name == "grok-responses"
            && settings
                .kind
                .is_some_and(|k| k != ProviderKind::OpenaiCompatible)
        {
            // Its wire is fixed: the point of the name is xAI's Responses API.
            issues.error_hint(
                &key_prefix,
                "kind",
                "`grok-responses` always speaks the OpenAI Responses API",
                "remove kind, or set kind = \"openai-compatible\"",
            );
            continue;
        }
        if name != "google-vertex" {
            for (key, set) in [
                ("project", settings.project.is_some()),
                ("location", settings.location.is_some()),
                ("token_url", settings.token_url.is_some()),
            ] {
                if set {
                    issues.error_hint(
                        &key_prefix,
                        key,
                        format!("`{key}` applies only to [providers.google-vertex]"),
                        "remove it from this provider",
                    );
                }
            }
        } else if settings.kind.is_some_and(|k| k != ProviderKind::Gemini) {
            issues.error_hint(
                &key_prefix,
                "kind",
                "google-vertex speaks the Gemini generateContent format",
                "remove kind (or set kind = \"gemini\")",
            );
        }
        if name == "mock"
            && (settings.kind.is_some()
                || settings.base_url.is_some()
                || settings.api_key_env.is_some())
        {
            issues.error_hint(
                prefix,
                name,
                "the offline mock provider has no endpoint: kind, base_url and api_key_env do not apply",
                "keep only limits and retry keys in [providers.mock]",
            );
            continue;
        }
        if mixseek_core::model_id::builtin_provider(name).is_none() && settings.base_url.is_none() {
            issues.error_hint(
                &key_prefix,
                "base_url",
                format!("provider `{name}` is not built in, so it needs a base_url"),
                "e.g. base_url = \"http://localhost:11434/v1\" for Ollama",
            );
        }
    }
}

/// `[pricing."provider:model"]`: what one million tokens cost, in USD. Entries here replace
/// the shipped defaults for the same model id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Price {
    /// USD per million input (prompt) tokens.
    pub input_per_million: f64,
    /// USD per million output (completion) tokens.
    pub output_per_million: f64,
    /// USD per million cached input tokens (unset: same as `input_per_million`).
    pub cached_input_per_million: Option<f64>,
}

impl Default for Price {
    fn default() -> Self {
        Self {
            input_per_million: 0.0,
            output_per_million: 0.0,
            cached_input_per_million: None,
        }
    }
}

impl Price {
    /// Adds this section's range and consistency problems to `issues`, keys under `prefix`.
    pub fn validate(&self, prefix: &str, issues: &mut Issues) {
        issues.range_f64(
            prefix,
            "input_per_million",
            self.input_per_million,
            0.0,
            1.0e6,
        );
        issues.range_f64(
            prefix,
            "output_per_million",
            self.output_per_million,
            0.0,
            1.0e6,
        );
        issues.opt_range_f64(
            prefix,
            "cached_input_per_million",
            self.cached_input_per_million,
            0.0,
            1.0e6,
        );
    }
}

/// `[cache]`: the opt-in LLM response cache. Identical requests (same provider, base URL,
/// model, messages, tools, schema, parameters and repeat index) are answered from disk;
/// errors are never cached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct CacheSettings {
    /// Turn the cache on.
    pub enabled: bool,
    /// How long an entry stays valid, in seconds.
    pub ttl_seconds: u64,
    /// Directory of the cache, relative to the workspace unless absolute.
    pub dir: String,
}

impl Default for CacheSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            ttl_seconds: 7 * 24 * 3600,
            dir: ".cache/llm".to_string(),
        }
    }
}

impl CacheSettings {
    /// Adds this section's range and consistency problems to `issues`, keys under `prefix`.
    pub fn validate(&self, prefix: &str, issues: &mut Issues) {
        issues.range_i64(
            prefix,
            "ttl_seconds",
            i64::try_from(self.ttl_seconds).unwrap_or(i64::MAX),
            1,
            i64::MAX,
        );
        issues.non_blank(prefix, "dir", &self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_tables_parse_with_defaults() {
        let t: BTreeMap<String, ProviderSettings> = toml::from_str(
            r#"
            [ollama]
            kind = "openai-compatible"
            base_url = "http://localhost:11434/v1"
            max_in_flight = 4

            [anthropic]
            requests_per_minute = 50
            "#,
        )
        .expect("parse");
        assert_eq!(t["ollama"].kind, Some(ProviderKind::OpenaiCompatible));
        assert_eq!(t["ollama"].max_in_flight, 4);
        assert_eq!(t["ollama"].max_attempts, 6);
        assert_eq!(t["anthropic"].requests_per_minute, Some(50));
        assert_eq!(t["anthropic"].max_in_flight, 64);
        let mut issues = Issues::default();
        validate_providers(&t, "providers", &mut issues);
        assert!(issues.is_empty(), "{:?}", issues.items);
    }

    #[test]
    fn a_new_provider_needs_a_base_url_and_sane_limits() {
        let t: BTreeMap<String, ProviderSettings> =
            toml::from_str("[vllm]\nmax_in_flight = 0\n[mock]\nbase_url = \"http://x\"\n[x]\nbase_url = \"localhost\"\n[grok-responses]\nkind = \"anthropic\"\n")
                .expect("parse");
        let mut issues = Issues::default();
        validate_providers(&t, "providers", &mut issues);
        let keys: Vec<&str> = issues.items.iter().map(|i| i.key.as_str()).collect();
        assert!(keys.contains(&"providers.vllm.base_url"), "{keys:?}");
        assert!(keys.contains(&"providers.vllm.max_in_flight"), "{keys:?}");
        assert!(keys.contains(&"providers.mock"), "{keys:?}");
        assert!(keys.contains(&"providers.x.base_url"), "{keys:?}");
        assert!(keys.contains(&"providers.grok-responses.kind"), "{keys:?}");
        // Limits of the mock provider may be tuned.
        let ok: BTreeMap<String, ProviderSettings> = toml::from_str(
            "[mock]\nmax_attempts = 2\n[grok-responses]\nbase_url = \"http://127.0.0.1:9/v1\"\n",
        )
        .expect("parse");
        let mut issues = Issues::default();
        validate_providers(&ok, "providers", &mut issues);
        assert!(issues.is_empty(), "{:?}", issues.items);
    }

    #[test]
    fn pricing_and_cache_parse() {
        #[derive(Deserialize)]
        struct F {
            pricing: BTreeMap<String, Price>,
            #[serde(default)]
            cache: CacheSettings,
        }
        let f: F = toml::from_str(
            "[pricing.\"openai:gpt-4o\"]\ninput_per_million = 2.5\noutput_per_million = 10.0\n[cache]\nenabled = true\n",
        )
        .expect("parse");
        assert_eq!(f.pricing["openai:gpt-4o"].output_per_million, 10.0);
        assert!(f.cache.enabled);
        assert_eq!(f.cache.ttl_seconds, 604_800);
        let mut issues = Issues::default();
        Price {
            input_per_million: -1.0,
            ..Price::default()
        }
        .validate("pricing.x", &mut issues);
        assert_eq!(issues.len(), 1);
    }
}
