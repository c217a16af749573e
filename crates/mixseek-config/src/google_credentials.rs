//! Google Cloud credentials for `google-vertex:` models: where they are found
//! (`GOOGLE_APPLICATION_CREDENTIALS`, else the Application Default Credentials file that
//! `gcloud auth application-default login` writes) and what such a file must hold. Shared by
//! the preflight check (the file is readable and complete, no network call) and the Vertex
//! backend (which signs and exchanges it for access tokens), so both say the same thing
//! about a broken file.
//!
//! Key material never appears in an error or in `Debug` output: messages name the file and
//! the field, not its value.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The OAuth token endpoint used when a file names none.
pub const GOOGLE_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";

/// The variable naming a credentials file.
pub const CREDENTIALS_VAR: &str = "GOOGLE_APPLICATION_CREDENTIALS";

/// The Application Default Credentials file under `$HOME`.
const ADC_RELATIVE: &str = ".config/gcloud/application_default_credentials.json";

/// A credentials file's contents.
#[derive(Clone, PartialEq, Eq)]
pub enum GoogleCredentials {
    /// `type = "service_account"`: a key that signs its own token requests (JWT bearer grant).
    ServiceAccount {
        /// `project_id`.
        project_id: String,
        /// `private_key_id` (the JWT's `kid`).
        private_key_id: String,
        /// `private_key`: PKCS#8 PEM. Secret.
        private_key: String,
        /// `client_email` (the JWT's issuer).
        client_email: String,
        /// `token_uri`, else [`GOOGLE_TOKEN_URL`].
        token_uri: String,
    },
    /// `type = "authorized_user"` (ADC from `gcloud auth application-default login`): a
    /// refresh token exchanged for access tokens.
    AuthorizedUser {
        /// `client_id`.
        client_id: String,
        /// `client_secret`. Secret.
        client_secret: String,
        /// `refresh_token`. Secret.
        refresh_token: String,
        /// `quota_project_id`, if any (the only project such a file may name).
        quota_project_id: Option<String>,
        /// `token_uri`, else [`GOOGLE_TOKEN_URL`].
        token_uri: String,
    },
}

impl std::fmt::Debug for GoogleCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Secrets stay out: type, account and project only.
        match self {
            GoogleCredentials::ServiceAccount {
                project_id,
                client_email,
                ..
            } => f
                .debug_struct("ServiceAccount")
                .field("project_id", project_id)
                .field("client_email", client_email)
                .finish_non_exhaustive(),
            GoogleCredentials::AuthorizedUser {
                quota_project_id, ..
            } => f
                .debug_struct("AuthorizedUser")
                .field("quota_project_id", quota_project_id)
                .finish_non_exhaustive(),
        }
    }
}

impl GoogleCredentials {
    /// The project the credentials belong to, if they name one.
    pub fn project_id(&self) -> Option<&str> {
        match self {
            GoogleCredentials::ServiceAccount { project_id, .. } => Some(project_id),
            GoogleCredentials::AuthorizedUser {
                quota_project_id, ..
            } => quota_project_id.as_deref(),
        }
    }

    /// The token endpoint the file names (or the default).
    pub fn token_uri(&self) -> &str {
        match self {
            GoogleCredentials::ServiceAccount { token_uri, .. }
            | GoogleCredentials::AuthorizedUser { token_uri, .. } => token_uri,
        }
    }

    /// The secret values of the file (to mask wherever text may show them).
    pub fn secrets(&self) -> Vec<&str> {
        match self {
            GoogleCredentials::ServiceAccount { private_key, .. } => vec![private_key.as_str()],
            GoogleCredentials::AuthorizedUser {
                client_secret,
                refresh_token,
                ..
            } => vec![client_secret.as_str(), refresh_token.as_str()],
        }
    }

    /// Parses a credentials file's text; `Err` names what is missing (never a value).
    pub fn parse(text: &str) -> Result<Self, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| {
            format!(
                "is not valid JSON (line {}, column {}); download the key again from the Google Cloud console",
                e.line(),
                e.column()
            )
        })?;
        let field = |name: &str| -> Result<String, String> {
            match v.get(name) {
                Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
                Some(_) => Err(format!("has an empty or non-string `{name}`")),
                None => Err(format!("has no `{name}` field")),
            }
        };
        let opt = |name: &str| -> Option<String> {
            v.get(name)
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
                .map(str::to_string)
        };
        let token_uri = opt("token_uri").unwrap_or_else(|| GOOGLE_TOKEN_URL.to_string());
        match v.get("type").and_then(Value::as_str) {
            Some("service_account") => {
                let private_key = field("private_key")?;
                if !private_key.contains("-----BEGIN PRIVATE KEY-----") {
                    return Err("has a `private_key` that is not a PKCS#8 PEM key (-----BEGIN PRIVATE KEY-----); use the JSON key file Google Cloud generates for the service account".to_string());
                }
                Ok(GoogleCredentials::ServiceAccount {
                    project_id: field("project_id")?,
                    private_key_id: field("private_key_id")?,
                    private_key,
                    client_email: field("client_email")?,
                    token_uri,
                })
            }
            Some("authorized_user") => Ok(GoogleCredentials::AuthorizedUser {
                client_id: field("client_id")?,
                client_secret: field("client_secret")?,
                refresh_token: field("refresh_token")?,
                quota_project_id: opt("quota_project_id"),
                token_uri,
            }),
            Some(other) => Err(format!(
                "has `type = \"{other}\"`; mixseek supports `service_account` keys and `authorized_user` Application Default Credentials"
            )),
            None => Err(
                "has no `type` field (expected \"service_account\" or \"authorized_user\")"
                    .to_string(),
            ),
        }
    }

    /// Reads and parses the file at `path`; `Err` names the file and what to fix.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "cannot read the Google Cloud credentials file {}: {e}; point {CREDENTIALS_VAR} at a readable service-account JSON key",
                path.display()
            )
        })?;
        Self::parse(&text)
            .map_err(|why| format!("the Google Cloud credentials file {} {why}", path.display()))
    }
}

/// Where the credentials come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialsSource {
    /// The file.
    pub path: PathBuf,
    /// How it was found: `GOOGLE_APPLICATION_CREDENTIALS` or `application default credentials`.
    pub via: String,
}

/// Finds the credentials file: `GOOGLE_APPLICATION_CREDENTIALS`, else the Application Default
/// Credentials file under `$HOME`, if it exists. `Err` says how to provide one.
pub fn locate(lookup: impl Fn(&str) -> Option<String>) -> Result<CredentialsSource, String> {
    let set = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
    if let Some(p) = set(CREDENTIALS_VAR) {
        return Ok(CredentialsSource {
            path: PathBuf::from(p),
            via: CREDENTIALS_VAR.to_string(),
        });
    }
    if let Some(home) = set("HOME") {
        let adc = Path::new(&home).join(ADC_RELATIVE);
        if adc.is_file() {
            return Ok(CredentialsSource {
                path: adc,
                via: "application default credentials".to_string(),
            });
        }
    }
    Err(format!(
        "no Google Cloud credentials: set {CREDENTIALS_VAR} to a service-account JSON key file, or run `gcloud auth application-default login`"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEM: &str = "-----BEGIN PRIVATE KEY-----\nMIIE...\n-----END PRIVATE KEY-----\n";

    #[test]
    fn service_account_and_authorized_user_files() {
        let sa = serde_json::json!({"type": "service_account", "project_id": "p", "private_key_id": "k",
            "private_key": PEM, "client_email": "a@p.iam.gserviceaccount.com"});
        let c = GoogleCredentials::parse(&sa.to_string()).expect("ok");
        assert_eq!(c.project_id(), Some("p"));
        assert_eq!(c.token_uri(), GOOGLE_TOKEN_URL);
        assert!(!format!("{c:?}").contains("MIIE"), "{c:?}");
        let mut missing = sa.clone();
        missing.as_object_mut().map(|o| o.remove("client_email"));
        assert_eq!(
            GoogleCredentials::parse(&missing.to_string()),
            Err("has no `client_email` field".into())
        );
        let au = serde_json::json!({"type": "authorized_user", "client_id": "i", "client_secret": "s",
            "refresh_token": "r", "token_uri": "http://127.0.0.1:1/token"});
        let c = GoogleCredentials::parse(&au.to_string()).expect("ok");
        assert_eq!(
            (c.project_id(), c.token_uri()),
            (None, "http://127.0.0.1:1/token")
        );
        let e = GoogleCredentials::parse(r#"{"type": "external_account"}"#).expect_err("type");
        assert!(e.contains("external_account"), "{e}");
        let e = GoogleCredentials::parse("{not json").expect_err("json");
        assert!(e.contains("not valid JSON"), "{e}");
    }

    #[test]
    fn locate_prefers_the_variable_then_adc() {
        let dir = tempfile::tempdir().expect("tmp");
        let home = dir.path().display().to_string();
        let e = locate(|v| (v == "HOME").then(|| home.clone())).expect_err("none");
        assert!(e.contains("GOOGLE_APPLICATION_CREDENTIALS"), "{e}");
        let adc = dir.path().join(ADC_RELATIVE);
        std::fs::create_dir_all(adc.parent().expect("parent")).expect("mkdir");
        std::fs::write(&adc, "{}").expect("write");
        let s = locate(|v| (v == "HOME").then(|| home.clone())).expect("adc");
        assert_eq!(s.path, adc);
        let s = locate(|v| match v {
            "HOME" => Some(home.clone()),
            CREDENTIALS_VAR => Some("/x/key.json".into()),
            _ => None,
        })
        .expect("var");
        assert_eq!(s.via, CREDENTIALS_VAR);
    }
}
