//! `provider:model` ids: parsing, the built-in providers, and the original's ids we do not
//! support yet.

use crate::error::LlmError;
use std::fmt;

/// Built-in provider prefixes.
pub const BUILTIN_PROVIDERS: &[&str] =
    &["openai", "anthropic", "google-gla", "grok", "xai", "mock"];

/// Prefixes of the original MixSeek that this version does not implement yet.
pub const UNSUPPORTED_PROVIDERS: &[(&str, &str)] = &[
    (
        "google-vertex",
        "Gemini through Vertex AI is not supported yet; use `google-gla:` with GOOGLE_API_KEY",
    ),
    (
        "grok-responses",
        "the xAI Responses API is not supported yet; use `grok:` (Chat Completions)",
    ),
];

/// A parsed `provider:model` id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelId {
    pub provider: String,
    pub model: String,
}

impl ModelId {
    /// Splits at the first `:`; both parts must be non-empty.
    pub fn parse(id: &str) -> Result<Self, LlmError> {
        let id = id.trim();
        match id.split_once(':') {
            Some((p, m)) if !p.trim().is_empty() && !m.trim().is_empty() => Ok(Self {
                provider: p.trim().to_string(),
                model: m.trim().to_string(),
            }),
            _ => Err(LlmError::config(
                "",
                format!(
                    "invalid model id `{id}`: expected `provider:model`, e.g. `openai:gpt-4o` or `mock:default`"
                ),
            )),
        }
    }
}

impl fmt::Display for ModelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.provider, self.model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_first_colon() {
        let id = ModelId::parse("openai:ft:gpt-4o:org").expect("ok");
        assert_eq!(id.provider, "openai");
        assert_eq!(id.model, "ft:gpt-4o:org");
        assert_eq!(id.to_string(), "openai:ft:gpt-4o:org");
        assert!(ModelId::parse("gpt-4o").is_err());
        assert!(ModelId::parse(":x").is_err());
        assert!(ModelId::parse("openai:").is_err());
    }
}
