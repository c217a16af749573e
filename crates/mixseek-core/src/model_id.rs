//! `provider:model` ids and the providers mixseek knows by name: the one definition that
//! configuration checks, the LLM registry and the agents share.

use std::fmt;

/// A built-in provider: the prefix of its model ids and the environment variables that may hold
/// its API key (the first one set wins; none for providers that need no key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinProvider {
    /// The prefix of its model ids (`openai`).
    pub name: &'static str,
    /// The variables that may hold its API key, in the order they are read.
    pub key_vars: &'static [&'static str],
}

/// The built-in providers. Others are declared in `[providers.<name>]`.
pub const BUILTIN_PROVIDERS: &[BuiltinProvider] = &[
    BuiltinProvider {
        name: "openai",
        key_vars: &["OPENAI_API_KEY"],
    },
    BuiltinProvider {
        name: "anthropic",
        key_vars: &["ANTHROPIC_API_KEY"],
    },
    BuiltinProvider {
        name: "google-gla",
        key_vars: &["GOOGLE_API_KEY", "GEMINI_API_KEY"],
    },
    // Vertex AI authenticates with Google Cloud credentials (GOOGLE_APPLICATION_CREDENTIALS
    // or Application Default Credentials), not an API key variable.
    BuiltinProvider {
        name: "google-vertex",
        key_vars: &[],
    },
    BuiltinProvider {
        name: "grok",
        key_vars: &["GROK_API_KEY", "XAI_API_KEY"],
    },
    BuiltinProvider {
        name: "grok-responses",
        key_vars: &["GROK_API_KEY", "XAI_API_KEY"],
    },
    BuiltinProvider {
        name: "xai",
        key_vars: &["XAI_API_KEY", "GROK_API_KEY"],
    },
    BuiltinProvider {
        name: "mock",
        key_vars: &[],
    },
];

/// The built-in provider named `name`, if there is one.
pub fn builtin_provider(name: &str) -> Option<&'static BuiltinProvider> {
    BUILTIN_PROVIDERS.iter().find(|p| p.name == name)
}

/// A parsed `provider:model` id. The model part may itself contain `:` (`ollama:llama3.1:8b`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelId {
    /// The provider part, before the first `:`.
    pub provider: String,
    /// The model part, after the first `:`.
    pub model: String,
}

/// A model id without a provider or without a model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid model id `{0}`: expected `provider:model`, e.g. `openai:gpt-4o` or `mock:default`"
)]
pub struct ModelIdFormatError(pub String);

impl ModelId {
    /// Splits at the first `:`; both parts, trimmed, must be non-empty.
    pub fn parse(id: &str) -> Result<Self, ModelIdFormatError> {
        let id = id.trim();
        match id.split_once(':') {
            Some((p, m)) if !p.trim().is_empty() && !m.trim().is_empty() => Ok(Self {
                provider: p.trim().to_string(),
                model: m.trim().to_string(),
            }),
            _ => Err(ModelIdFormatError(id.to_string())),
        }
    }
}

/// The provider part of an id string, without parsing it into a [`ModelId`] (empty when it has no
/// `:`): for ids that were checked when they were loaded.
pub fn provider_of(id: &str) -> &str {
    id.split_once(':').map_or("", |(p, _)| p.trim())
}

/// The model part of an id string (the whole string when it has no `:`).
pub fn model_of(id: &str) -> &str {
    id.split_once(':').map_or(id, |(_, m)| m.trim())
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
    fn splits_at_the_first_colon() {
        let id = ModelId::parse("openai:ft:gpt-4o:org").expect("ok");
        assert_eq!(
            (id.provider.as_str(), id.model.as_str()),
            ("openai", "ft:gpt-4o:org")
        );
        assert_eq!(id.to_string(), "openai:ft:gpt-4o:org");
        let id = ModelId::parse(" ollama : llama3.1:8b ").expect("ok");
        assert_eq!(
            (id.provider.as_str(), id.model.as_str()),
            ("ollama", "llama3.1:8b")
        );
        for bad in ["gpt-4o", ":x", "openai:", " : "] {
            let e = ModelId::parse(bad).expect_err(bad).to_string();
            assert!(e.contains("expected `provider:model`"), "{e}");
        }
    }

    #[test]
    fn parts_of_an_unparsed_id() {
        assert_eq!(provider_of("ollama:llama3.1:8b"), "ollama");
        assert_eq!(model_of("ollama:llama3.1:8b"), "llama3.1:8b");
        assert_eq!((provider_of("gpt-4o"), model_of("gpt-4o")), ("", "gpt-4o"));
    }

    #[test]
    fn providers_are_named_once() {
        assert_eq!(builtin_provider("mock").map(|p| p.key_vars.len()), Some(0));
        assert_eq!(
            builtin_provider("google-gla").map(|p| p.key_vars),
            Some(&["GOOGLE_API_KEY", "GEMINI_API_KEY"][..])
        );
        assert_eq!(
            builtin_provider("grok-responses").map(|p| p.key_vars),
            builtin_provider("grok").map(|p| p.key_vars)
        );
        // credentials from a file, not a key variable
        assert_eq!(
            builtin_provider("google-vertex").map(|p| p.key_vars.len()),
            Some(0)
        );
    }
}
