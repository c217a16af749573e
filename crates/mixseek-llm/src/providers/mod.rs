//! The wire formats, one module each, and the resolution of a provider name to its
//! backend, base URL and API key.
//!
//! **Why hand-written `reqwest` code and not `genai`.** Each format needs only one endpoint
//! (Chat Completions, Messages, generateContent; plus the Responses API for OpenAI's and
//! xAI's native tools and for every call of `grok-responses`) and a few hundred lines; writing them
//! ourselves gives exactly what the layers above rely on and `genai` (0.x, churning) does
//! not expose uniformly: the HTTP status and headers of every failure (for `Retry-After`
//! and rate-limit reset headers), the server's message with our key masking, the
//! `json_schema` → `json_object` + schema → `json_object` → instruction capability
//! fallback for OpenAI-compatible
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
//! | `google-vertex` | Gemini on Vertex AI ([`vertex`]) | `https://{location}-aiplatform.googleapis.com` | OAuth token from `GOOGLE_APPLICATION_CREDENTIALS`, else Application Default Credentials (see [`vertex_auth`]) |
//! | `grok`, `xai` | OpenAI | `https://api.x.ai/v1` | `GROK_API_KEY`, `XAI_API_KEY` |
//! | `grok-responses` | OpenAI Responses (every call) | `https://api.x.ai/v1` | `GROK_API_KEY`, `XAI_API_KEY` |
//! | `mock` | offline | — | — |
//! | any other | `kind` (default OpenAI) | `base_url` (required) | `api_key_env`, else none |
//!
//! A built-in provider without its key, or a configured `api_key_env` that is unset, is a
//! [`Config`](crate::ErrorKind::Config) error when the model is resolved.
//!
//! **Provider-native tools** ([`NativeTool`]: web search, code execution) are sent by the
//! Anthropic and Gemini wires (any provider of that `kind`), by `openai`, `grok`, `xai` and
//! `grok-responses` through the Responses API (`POST {base_url}/responses`, see [`responses`]), and answered
//! offline by `mock`. Any other OpenAI-compatible provider (`[providers.<name>]`, kind
//! `openai-compatible`) is refused: Chat Completions has no such tools, and whether a
//! server also speaks the Responses API cannot be known. [`native_tool_support`] says which.

pub(crate) mod anthropic;
pub(crate) mod fields;
pub(crate) mod gemini;
pub(crate) mod mock;
pub(crate) mod openai;
pub(crate) mod responses;
pub(crate) mod vertex;
pub(crate) mod vertex_auth;

use crate::backend::Backend;
use crate::env::Env;
use crate::error::LlmError;
use crate::types::NativeTool;
use mixseek_config::{ProviderKind, ProviderSettings};
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
        "grok" | "xai" | "grok-responses" => Some((
            ProviderKind::OpenaiCompatible,
            "https://api.x.ai/v1".to_string(),
            &["GROK_API_KEY", "XAI_API_KEY"],
        )),
        _ => None,
    }
}

/// The values of every API key variable a run may read: the built-in providers' variables
/// and each `[providers.<name>] api_key_env` that is set (what no log, error or file may show,
/// see `crate::secret::mask`).
pub fn api_key_values(
    providers: &std::collections::BTreeMap<String, ProviderSettings>,
    env: &Env,
) -> Vec<String> {
    let builtin_vars = ["openai", "anthropic", "google-gla", "grok"]
        .into_iter()
        .filter_map(|name| builtin(name, env))
        .flat_map(|b| b.2.iter().map(|v| (*v).to_string()));
    let configured = providers.values().filter_map(|s| s.api_key_env.clone());
    let mut values: Vec<String> = builtin_vars
        .chain(configured)
        .filter_map(|var| env.get(&var))
        .filter(|v| !v.trim().is_empty())
        .collect();
    values.extend(google_credential_secrets(env));
    values.sort();
    values.dedup();
    values
}

/// The base URL the calls of provider `name` go to: `[providers.<name>] base_url`, else the
/// built-in default (`None`: the offline `mock`, or a new name without a base URL).
pub fn base_url_of(name: &str, settings: Option<&ProviderSettings>, env: &Env) -> Option<String> {
    if name == "mock" {
        return None;
    }
    settings
        .and_then(|s| s.base_url.clone())
        .or_else(|| builtin(name, env).map(|b| b.1))
        .map(|u| u.trim_end_matches('/').to_string())
}

/// The secrets of the Google Cloud credentials `google-vertex` would use (private key, or
/// client secret and refresh token), when a credentials file is found and readable: each
/// whole and, for a PEM key, each of its base64 lines (a log line may hold the key with its
/// line breaks escaped, so only the lines match).
fn google_credential_secrets(env: &Env) -> Vec<String> {
    let Ok(source) = mixseek_config::locate_google_credentials(|v| env.get(v)) else {
        return Vec::new();
    };
    let Ok(creds) = mixseek_config::GoogleCredentials::load(&source.path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for s in creds.secrets() {
        out.push(s.to_string());
        out.extend(
            s.lines()
                .map(str::trim)
                .filter(|l| l.len() >= 16 && !l.starts_with("-----"))
                .map(str::to_string),
        );
    }
    out
}

/// The wire kind of provider `name` with its settings (`None`: the offline `mock`).
fn kind_of(name: &str, settings: Option<&ProviderSettings>) -> Option<ProviderKind> {
    if name == "mock" {
        return None;
    }
    let builtin_kind = match name {
        "anthropic" => Some(ProviderKind::Anthropic),
        "google-gla" | vertex::NAME => Some(ProviderKind::Gemini),
        _ => None,
    };
    Some(
        settings
            .and_then(|s| s.kind)
            .or(builtin_kind)
            .unwrap_or(ProviderKind::OpenaiCompatible),
    )
}

/// Whether provider `name` (with its `[providers.<name>]` settings, if any) can run the
/// provider-native `tool` with its options. `Err` says why not, naming the provider.
///
/// | provider | web search | code execution |
/// |---|---|---|
/// | kind `anthropic` | yes (`max_uses`; `allowed_domains` or `blocked_domains`, not both) | yes |
/// | kind `gemini` | yes (no options: `google_search` has none) | yes |
/// | `openai` | yes (`max_uses`, `allowed_domains`, `blocked_domains`) | yes |
/// | `grok`, `xai`, `grok-responses` | yes (`max_uses`; no domain filters) | yes |
/// | `mock` | yes (offline, labelled; options ignored) | yes |
/// | other OpenAI-compatible | no | no |
pub fn native_tool_support(
    name: &str,
    settings: Option<&ProviderSettings>,
    tool: &NativeTool,
) -> Result<(), String> {
    match kind_of(name, settings) {
        Some(kind) => native_support_for_kind(name, kind, tool),
        None => Ok(()),
    }
}

/// [`native_tool_support`] for a provider of wire `kind` (the backends check each request
/// with it too).
pub(crate) fn native_support_for_kind(
    name: &str,
    kind: ProviderKind,
    tool: &NativeTool,
) -> Result<(), String> {
    let label = match tool {
        NativeTool::WebSearch(_) => "web search",
        NativeTool::CodeExecution => "code execution",
    };
    let options = match tool {
        NativeTool::WebSearch(o) => Some(o),
        NativeTool::CodeExecution => None,
    };
    match kind {
        ProviderKind::Anthropic => {
            if let Some(o) = options
                && !o.allowed_domains.is_empty()
                && !o.blocked_domains.is_empty()
            {
                return Err(format!(
                    "provider `{name}` (Anthropic) accepts allowed_domains or blocked_domains for web search, not both; keep one of them"
                ));
            }
            Ok(())
        }
        ProviderKind::Gemini => {
            if let Some(o) = options {
                let set: Vec<&str> = [
                    ("max_uses", o.max_uses.is_some()),
                    ("allowed_domains", !o.allowed_domains.is_empty()),
                    ("blocked_domains", !o.blocked_domains.is_empty()),
                ]
                .iter()
                .filter(|(_, on)| *on)
                .map(|(k, _)| *k)
                .collect();
                if !set.is_empty() {
                    return Err(format!(
                        "provider `{name}` (Gemini google_search) has no {} option; remove it from the web search settings",
                        set.join(" / ")
                    ));
                }
            }
            Ok(())
        }
        ProviderKind::OpenaiCompatible => match responses::flavour(name) {
            Some(responses::Flavour::OpenAi) => Ok(()),
            Some(responses::Flavour::Xai) => {
                if let Some(o) = options
                    && (!o.allowed_domains.is_empty() || !o.blocked_domains.is_empty())
                {
                    return Err(format!(
                        "provider `{name}` (xAI): mixseek sends no domain filters to xAI's web search; remove allowed_domains / blocked_domains"
                    ));
                }
                Ok(())
            }
            None => Err(format!(
                "provider `{name}` speaks the OpenAI-compatible Chat Completions API, which has no native {label} tool (only `openai`, `grok`/`xai`/`grok-responses` (Responses API), `anthropic`-kind and `gemini`-kind providers, and the offline `mock`, have one)"
            )),
        },
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
    if name == vertex::NAME {
        return vertex::build(s, env, http);
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
        // xAI's Responses API for every call, not only those with native tools.
        ProviderKind::OpenaiCompatible if name == responses::GROK_RESPONSES => {
            Arc::new(responses::ResponsesBackend::new(common))
        }
        ProviderKind::OpenaiCompatible => Arc::new(openai::OpenAiBackend::new(common)),
        ProviderKind::Anthropic => Arc::new(anthropic::AnthropicBackend::new(common)),
        ProviderKind::Gemini => Arc::new(gemini::GeminiBackend::new(common)),
    };
    Ok((backend, base_url))
}

/// What every HTTP backend holds.
pub(crate) struct HttpCommon {
    pub(crate) provider: String,
    pub(crate) base_url: String,
    pub(crate) api_key: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) http: reqwest::Client,
}

impl HttpCommon {
    /// The secrets to mask in messages.
    pub(crate) fn secrets(&self) -> Vec<&str> {
        self.api_key.iter().map(String::as_str).collect()
    }

    /// The context of one exchange with `model`, masking `secrets` in its errors (usually
    /// [`HttpCommon::secrets`]).
    pub(crate) fn exchange<'a>(
        &'a self,
        model: &'a str,
        secrets: &'a [&'a str],
    ) -> crate::backend::Exchange<'a> {
        crate::backend::Exchange {
            provider: &self.provider,
            model,
            secrets,
            base_url: &self.base_url,
        }
    }

    /// A POST with the extra headers.
    pub(crate) fn post(&self, url: impl reqwest::IntoUrl) -> reqwest::RequestBuilder {
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

/// Refuses (as a [`Config`](crate::ErrorKind::Config) error, never retried) a request whose
/// native tools a provider of wire `kind` cannot run.
pub(crate) fn check_native_tools(
    ex: &crate::backend::Exchange<'_>,
    kind: ProviderKind,
    request: &crate::types::ChatRequest,
) -> Result<(), LlmError> {
    for t in &request.native_tools {
        native_support_for_kind(ex.provider, kind, t)
            .map_err(|m| ex.error(crate::error::ErrorKind::Config, m))?;
    }
    Ok(())
}

/// Builds the answer text of a response that may hold native-tool activity (see
/// [`NativeTool`] for the format): text pieces, code runs and their output in order, then
/// the cited sources.
#[derive(Debug, Default)]
pub(crate) struct NativeText {
    text: String,
    has_text: bool,
    /// A code run or output was added.
    blocks: bool,
    sources: Vec<(String, String)>,
}

impl NativeText {
    /// A piece of the model's text.
    pub(crate) fn text(&mut self, t: &str) {
        self.has_text = true;
        self.text.push_str(t);
    }

    fn block(&mut self, block: String) {
        self.blocks = true;
        if !self.text.is_empty() && !self.text.ends_with("\n\n") {
            self.text.push_str(if self.text.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            });
        }
        self.text.push_str(&block);
        self.text.push_str("\n\n");
    }

    /// Code the provider ran (`lang` for the fence: `python`, `bash`, …).
    pub(crate) fn code(&mut self, lang: &str, code: &str) {
        let lang = lang.to_ascii_lowercase();
        self.block(format!("```{lang}\n{}\n```", code.trim_end()));
    }

    /// The output of the code run just before.
    pub(crate) fn output(&mut self, output: &str) {
        let out = output.trim_end();
        let out = if out.is_empty() { "(no output)" } else { out };
        self.block(format!("Output:\n```\n{out}\n```"));
    }

    /// A page the answer cites (kept once, in first-seen order).
    pub(crate) fn source(&mut self, url: &str, title: Option<&str>) {
        let url = url.trim();
        if url.is_empty() || self.sources.iter().any(|(u, _)| u == url) {
            return;
        }
        let title = title
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .unwrap_or(url);
        self.sources.push((url.to_string(), title.to_string()));
    }

    /// The text (`None` when the model wrote none and no tool ran). Without tool activity,
    /// exactly the concatenated text pieces.
    pub(crate) fn finish(mut self) -> Option<String> {
        if !self.blocks && self.sources.is_empty() {
            return self.has_text.then_some(self.text);
        }
        let mut t = self.text.trim_end().to_string();
        if !self.sources.is_empty() {
            if !t.is_empty() {
                t.push_str("\n\n");
            }
            t.push_str("Sources:");
            for (url, title) in std::mem::take(&mut self.sources) {
                t.push_str(&format!("\n- {title} — {url}"));
            }
        }
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::WebSearchOptions;

    fn kind(k: ProviderKind) -> ProviderSettings {
        ProviderSettings {
            kind: Some(k),
            ..ProviderSettings::default()
        }
    }

    #[test]
    fn native_tool_support_by_provider_and_options() {
        let ws = NativeTool::web_search();
        let code = NativeTool::CodeExecution;
        for name in [
            "openai",
            "anthropic",
            "google-gla",
            "google-vertex",
            "grok",
            "xai",
            "grok-responses",
            "mock",
        ] {
            assert_eq!(native_tool_support(name, None, &ws), Ok(()), "{name}");
            assert_eq!(native_tool_support(name, None, &code), Ok(()), "{name}");
        }
        // A configured provider: its kind decides.
        let claude = kind(ProviderKind::Anthropic);
        assert_eq!(
            native_tool_support("corp-claude", Some(&claude), &code),
            Ok(())
        );
        let gem = kind(ProviderKind::Gemini);
        assert_eq!(native_tool_support("corp-gemini", Some(&gem), &ws), Ok(()));
        let local = kind(ProviderKind::OpenaiCompatible);
        let e = native_tool_support("local", Some(&local), &ws).expect_err("no tool");
        assert!(
            e.starts_with("provider `local` speaks the OpenAI-compatible Chat Completions API, which has no native web search tool"),
            "{e}"
        );
        assert!(native_tool_support("local", None, &code).is_err());

        let both = NativeTool::WebSearch(WebSearchOptions {
            max_uses: None,
            allowed_domains: vec!["a.example".into()],
            blocked_domains: vec!["b.example".into()],
        });
        assert!(
            native_tool_support("anthropic", None, &both).is_err_and(|e| e.contains("not both"))
        );
        assert_eq!(native_tool_support("openai", None, &both), Ok(()));
        for xai in ["xai", "grok-responses"] {
            assert!(
                native_tool_support(xai, None, &both).is_err_and(|e| e.contains("domain filters")),
                "{xai}"
            );
        }
        let max = NativeTool::WebSearch(WebSearchOptions {
            max_uses: Some(3),
            ..WebSearchOptions::default()
        });
        assert!(
            native_tool_support("google-gla", None, &max)
                .is_err_and(|e| e.contains("has no max_uses option"))
        );
        assert_eq!(native_tool_support("grok", None, &max), Ok(()));
    }

    #[test]
    fn native_text_keeps_plain_text_untouched() {
        let mut t = NativeText::default();
        t.text("hello\n");
        assert_eq!(t.finish().as_deref(), Some("hello\n"));
        assert_eq!(NativeText::default().finish(), None);
        let mut t = NativeText::default();
        t.code("PYTHON", "print(1)\n");
        t.output("");
        assert_eq!(
            t.finish().as_deref(),
            Some("```python\nprint(1)\n```\n\nOutput:\n```\n(no output)\n```")
        );
    }
}
