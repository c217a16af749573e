//! Model ids in configuration: whether a `provider:model` id names a provider this
//! configuration can use, and the credential each provider needs (presence checked without any
//! network call, for preflight). The id type and the provider list are `mixseek_core`'s.

use crate::providers::ProviderSettings;
use mixseek_core::ModelId;
use mixseek_core::model_id::{BUILTIN_PROVIDERS, builtin_provider};
use std::collections::BTreeMap;

/// A model id configuration cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ModelIdError {
    /// Not `provider:model`.
    #[error(transparent)]
    Format(#[from] mixseek_core::ModelIdFormatError),
    #[error(
        "model id `{id}`: unknown provider `{provider}`{suggestion} (known providers: {known}; define others in [providers.<name>])"
    )]
    /// A provider neither built in nor declared in `[providers.<name>]`.
    Unknown {
        /// The id as given.
        id: String,
        /// Its provider part.
        provider: String,
        /// ` (did you mean …?)`, or empty.
        suggestion: String,
        /// The providers this configuration can use.
        known: String,
    },
}

/// All provider names usable in model ids: built-ins plus `[providers.<name>]`.
pub(crate) fn known_providers(custom: &BTreeMap<String, ProviderSettings>) -> Vec<String> {
    let mut v: Vec<String> = BUILTIN_PROVIDERS
        .iter()
        .map(|p| p.name.to_string())
        .collect();
    for k in custom.keys() {
        if !v.contains(k) {
            v.push(k.clone());
        }
    }
    v
}

/// Parses an id and checks that its provider is known.
pub(crate) fn resolve(
    id: &str,
    custom: &BTreeMap<String, ProviderSettings>,
) -> Result<ModelId, ModelIdError> {
    let mid = ModelId::parse(id)?;
    let known = known_providers(custom);
    if known.contains(&mid.provider) {
        return Ok(mid);
    }
    let suggestion = crate::issues::closest(&mid.provider, known.iter().map(String::as_str))
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    Err(ModelIdError::Unknown {
        id: id.into(),
        provider: mid.provider,
        suggestion,
        known: known.join(", "),
    })
}

/// What a provider needs to authenticate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Credential {
    /// No key (mock, local servers).
    None,
    /// One of these variables must be set and non-blank.
    EnvVar(Vec<String>),
    /// Google Cloud credentials (`google-vertex`): `GOOGLE_APPLICATION_CREDENTIALS`, else the
    /// Application Default Credentials file, readable and with the fields its type needs.
    GoogleCloud,
}

/// The credential a provider needs: `api_key_env` of `[providers.<name>]` when set, else the
/// built-in variables, else none (a custom endpoint without a key).
pub(crate) fn credential_for(
    provider: &str,
    custom: &BTreeMap<String, ProviderSettings>,
) -> Credential {
    if let Some(var) = custom.get(provider).and_then(|p| p.api_key_env.clone()) {
        return Credential::EnvVar(vec![var]);
    }
    if provider == "google-vertex" {
        return Credential::GoogleCloud;
    }
    match builtin_provider(provider) {
        Some(p) if !p.key_vars.is_empty() => {
            Credential::EnvVar(p.key_vars.iter().map(|v| v.to_string()).collect())
        }
        _ => Credential::None,
    }
}

/// Checks the credential in an environment lookup. Ok(Some(var)) names the variable found.
pub(crate) fn check_credential(
    cred: &Credential,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<String>, String> {
    match cred {
        Credential::None => Ok(None),
        Credential::GoogleCloud => {
            // Like the original: the file is readable and holds the fields its type needs
            // (the key itself is checked when the first token is requested).
            let source = crate::google_credentials::locate(&lookup)?;
            crate::google_credentials::GoogleCredentials::load(&source.path)?;
            Ok(Some(format!("{} ({})", source.via, source.path.display())))
        }
        Credential::EnvVar(vars) => {
            for v in vars {
                if lookup(v).is_some_and(|val| !val.trim().is_empty()) {
                    return Ok(Some(v.clone()));
                }
            }
            Err(if vars.len() == 1 {
                format!("environment variable {} is not set", vars[0])
            } else {
                format!(
                    "none of the environment variables {} is set",
                    vars.join(", ")
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_prefixes_are_explicit_and_every_original_prefix_resolves() {
        let none = BTreeMap::new();
        let e = resolve("opnai:gpt-4o", &none)
            .expect_err("unknown")
            .to_string();
        assert!(
            e.contains("did you mean `openai`?") && e.contains("known providers: openai"),
            "{e}"
        );
        for id in [
            "google-gla:gemini-2.5-flash",
            "google-vertex:gemini-2.5-pro",
            "openai:gpt-4o",
            "anthropic:claude-sonnet-4-5",
            "grok:grok-4",
            "grok-responses:grok-4-1-fast",
        ] {
            assert!(resolve(id, &none).is_ok(), "{id}");
        }
        let mut custom = BTreeMap::new();
        custom.insert("ollama".to_string(), ProviderSettings::default());
        assert!(resolve("ollama:llama3", &custom).is_ok());
    }

    #[test]
    fn credentials() {
        let none = BTreeMap::new();
        assert_eq!(credential_for("mock", &none), Credential::None);
        let c = credential_for("grok", &none);
        assert_eq!(
            check_credential(&c, |v| (v == "XAI_API_KEY").then(|| "xai-1".into())),
            Ok(Some("XAI_API_KEY".into()))
        );
        // `grok-responses` reads the same variables as `grok` (the original's GROK_API_KEY first).
        let c = credential_for("grok-responses", &none);
        assert_eq!(
            c,
            Credential::EnvVar(vec!["GROK_API_KEY".into(), "XAI_API_KEY".into()])
        );
        assert!(resolve("grok-responses:grok-4", &none).is_ok());
        let e = check_credential(&credential_for("openai", &none), |_| None).expect_err("missing");
        assert!(e.contains("OPENAI_API_KEY"));
    }

    #[test]
    fn google_vertex_needs_a_readable_complete_credentials_file() {
        let none = BTreeMap::new();
        let c = credential_for("google-vertex", &none);
        assert_eq!(c, Credential::GoogleCloud);
        let dir = tempfile::tempdir().expect("tmp");
        let home = dir.path().display().to_string();
        let e = check_credential(&c, |v| (v == "HOME").then(|| home.clone())).expect_err("none");
        assert!(e.contains("GOOGLE_APPLICATION_CREDENTIALS"), "{e}");
        let key = dir.path().join("key.json");
        let key_s = key.display().to_string();
        let env = |v: &str| (v == "GOOGLE_APPLICATION_CREDENTIALS").then(|| key_s.clone());
        let e = check_credential(&c, env).expect_err("unreadable");
        assert!(e.contains("cannot read") && e.contains("key.json"), "{e}");
        std::fs::write(
            &key,
            r#"{"type": "service_account", "project_id": "p", "private_key_id": "k",
               "private_key": "-----BEGIN PRIVATE KEY-----\nSECRETBYTES\n-----END PRIVATE KEY-----\n"}"#,
        )
        .expect("write");
        let e = check_credential(&c, env).expect_err("incomplete");
        assert!(
            e.contains("client_email") && !e.contains("SECRETBYTES"),
            "{e}"
        );
        std::fs::write(
            &key,
            r#"{"type": "service_account", "project_id": "p", "private_key_id": "k", "client_email": "a@b",
               "private_key": "-----BEGIN PRIVATE KEY-----\nSECRETBYTES\n-----END PRIVATE KEY-----\n"}"#,
        )
        .expect("write");
        let ok = check_credential(&c, env).expect("complete");
        assert!(
            ok.is_some_and(|v| v.starts_with("GOOGLE_APPLICATION_CREDENTIALS (")),
            "found"
        );
    }
}
