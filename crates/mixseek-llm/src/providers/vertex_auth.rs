//! OAuth 2.0 access tokens for Vertex AI, from Google Cloud credentials.
//!
//! * A service-account key (`type = service_account`) signs a JWT (RS256, `kid` =
//!   `private_key_id`, issuer = `client_email`, scope `cloud-platform`, audience = the token
//!   endpoint, valid one hour) and exchanges it at the token endpoint (RFC 7523 JWT bearer
//!   grant).
//! * Application Default Credentials of a user (`type = authorized_user`, written by
//!   `gcloud auth application-default login`) exchange their refresh token.
//!
//! The token is cached per [`TokenSource`] (one per provider, so every model of
//! `google-vertex` shares it) and refreshed when fewer than [`REFRESH_MARGIN`] remain. The
//! cache sits behind an async mutex held during a refresh, so concurrent calls wait for one
//! token request instead of each sending their own. A token Vertex refuses (HTTP 401) is
//! dropped with [`TokenSource::invalidate`], so the next call fetches a fresh one.
//!
//! The private key, the signed JWT, the refresh token and the access tokens never appear in
//! an error or a log line: messages name the file, the account and the endpoint, and
//! whatever the token endpoint answers is masked with [`crate::secret::mask`].

use crate::error::{ErrorKind, LlmError};
use crate::retry::{classify_status, retry_after};
use crate::secret::mask;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use mixseek_config::GoogleCredentials;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::time::Instant;

/// The OAuth scope Vertex AI needs.
pub(crate) const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// The grant type of a signed JWT.
pub(crate) const JWT_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// A token with less than this left is refreshed before use (a call may take minutes).
pub(crate) const REFRESH_MARGIN: Duration = Duration::from_secs(300);
/// How long a signed JWT is valid (Google's maximum).
const JWT_LIFETIME_SECS: i64 = 3600;

/// A cached access token.
struct Cached {
    token: String,
    expires_at: Instant,
}

/// How tokens are obtained.
enum Grant {
    /// A service-account key, parsed once (boxed: the parsed key is large).
    ServiceAccount {
        key: Box<RsaKeyPair>,
        key_id: String,
        client_email: String,
    },
    /// A user's refresh token.
    RefreshToken {
        client_id: String,
        client_secret: String,
        refresh_token: String,
    },
}

/// Access tokens of one set of credentials, cached (see the module docs).
pub(crate) struct TokenSource {
    provider: String,
    /// The credentials file, for messages.
    file: PathBuf,
    token_url: String,
    grant: Grant,
    /// The secrets of the credentials (private key or client secret and refresh token).
    secrets: Vec<String>,
    http: reqwest::Client,
    cache: tokio::sync::Mutex<Option<Cached>>,
}

/// The DER bytes of a PEM block (`-----BEGIN …-----` … `-----END …-----`).
fn pem_to_der(pem: &str) -> Option<Vec<u8>> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .skip_while(|l| !l.starts_with("-----BEGIN"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    STANDARD.decode(body.as_bytes()).ok()
}

impl TokenSource {
    /// Token source for `creds` read from `file`; the token endpoint is `token_url`. A key
    /// that cannot be used is a [`Config`](ErrorKind::Config) error naming the file.
    pub(crate) fn new(
        provider: &str,
        file: &Path,
        creds: &GoogleCredentials,
        token_url: String,
        http: reqwest::Client,
    ) -> Result<Self, LlmError> {
        let grant = match creds {
            GoogleCredentials::ServiceAccount {
                private_key_id,
                private_key,
                client_email,
                ..
            } => {
                let bad = |why: String| {
                    LlmError::config(
                        provider,
                        format!(
                            "the private_key of the Google Cloud credentials file {} {why}; create a new JSON key for {client_email} in the Google Cloud console and point GOOGLE_APPLICATION_CREDENTIALS at it",
                            file.display()
                        ),
                    )
                };
                let der = pem_to_der(private_key).ok_or_else(|| {
                    bad("is not valid PEM (its base64 body does not decode)".into())
                })?;
                // KeyRejected names the problem ("InvalidEncoding", …), never key bytes.
                let key = RsaKeyPair::from_pkcs8(&der)
                    .map_err(|e| bad(format!("is not a usable RSA key ({e})")))?;
                Grant::ServiceAccount {
                    key: Box::new(key),
                    key_id: private_key_id.clone(),
                    client_email: client_email.clone(),
                }
            }
            GoogleCredentials::AuthorizedUser {
                client_id,
                client_secret,
                refresh_token,
                ..
            } => Grant::RefreshToken {
                client_id: client_id.clone(),
                client_secret: client_secret.clone(),
                refresh_token: refresh_token.clone(),
            },
        };
        Ok(Self {
            provider: provider.to_string(),
            file: file.to_path_buf(),
            token_url,
            grant,
            secrets: creds.secrets().into_iter().map(str::to_string).collect(),
            http,
            cache: tokio::sync::Mutex::new(None),
        })
    }

    /// The account the tokens are for (a service account's e-mail, else `your user account`).
    pub(crate) fn account(&self) -> &str {
        match &self.grant {
            Grant::ServiceAccount { client_email, .. } => client_email,
            Grant::RefreshToken { .. } => "your user account",
        }
    }

    /// A valid access token: the cached one while more than [`REFRESH_MARGIN`] is left,
    /// else a fresh one (one request at a time: concurrent callers wait for it).
    pub(crate) async fn token(&self, model: &str) -> Result<String, LlmError> {
        let mut cache = self.cache.lock().await;
        if let Some(c) = cache.as_ref()
            && c.expires_at.saturating_duration_since(Instant::now()) > REFRESH_MARGIN
        {
            return Ok(c.token.clone());
        }
        let (token, lifetime) = self.fetch(model).await?;
        tracing::debug!(provider = %self.provider, account = %self.account(), lifetime_secs = lifetime.as_secs(), "fetched a Google Cloud access token");
        *cache = Some(Cached {
            token: token.clone(),
            expires_at: Instant::now() + lifetime,
        });
        Ok(token)
    }

    /// Drops the cached token if it is still `stale` (the server refused it), so the next
    /// [`TokenSource::token`] fetches a fresh one; a token another call refreshed meanwhile
    /// is kept.
    pub(crate) async fn invalidate(&self, stale: &str) {
        let mut cache = self.cache.lock().await;
        if cache.as_ref().is_some_and(|c| c.token == stale) {
            *cache = None;
        }
    }

    /// The signed JWT of a service account, issued at `now` (Unix seconds).
    fn signed_jwt(
        key: &RsaKeyPair,
        key_id: &str,
        client_email: &str,
        audience: &str,
        now: i64,
    ) -> Result<String, String> {
        let header = json!({"alg": "RS256", "typ": "JWT", "kid": key_id});
        let claims = json!({
            "iss": client_email,
            "scope": SCOPE,
            "aud": audience,
            "iat": now,
            "exp": now + JWT_LIFETIME_SECS,
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let mut sig = vec![0u8; key.public().modulus_len()];
        key.sign(
            &RSA_PKCS1_SHA256,
            &ring::rand::SystemRandom::new(),
            signing_input.as_bytes(),
            &mut sig,
        )
        .map_err(|_| "signing the token request with the service-account key failed".to_string())?;
        Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig)))
    }

    /// One token request: the token and how long it is valid.
    async fn fetch(&self, model: &str) -> Result<(String, Duration), LlmError> {
        let mut secrets: Vec<String> = self.secrets.clone();
        let form: Vec<(&str, String)> = match &self.grant {
            Grant::ServiceAccount {
                key,
                key_id,
                client_email,
            } => {
                let jwt = Self::signed_jwt(
                    key,
                    key_id,
                    client_email,
                    &self.token_url,
                    chrono::Utc::now().timestamp(),
                )
                .map_err(|m| LlmError::new(ErrorKind::Config, &self.provider, model, m))?;
                secrets.push(jwt.clone());
                vec![("grant_type", JWT_GRANT.to_string()), ("assertion", jwt)]
            }
            Grant::RefreshToken {
                client_id,
                client_secret,
                refresh_token,
            } => vec![
                ("grant_type", "refresh_token".to_string()),
                ("client_id", client_id.clone()),
                ("client_secret", client_secret.clone()),
                ("refresh_token", refresh_token.clone()),
            ],
        };
        let refs: Vec<&str> = secrets.iter().map(String::as_str).collect();
        let err = |kind: ErrorKind, m: String| {
            LlmError::new(kind, &self.provider, model, mask(&m, &refs).into_owned())
        };
        let resp = self
            .http
            .post(&self.token_url)
            .form(&form)
            .send()
            .await
            .map_err(|e| {
                let kind = if e.is_timeout() {
                    ErrorKind::Timeout
                } else {
                    ErrorKind::Transport
                };
                err(
                    kind,
                    format!(
                        "cannot reach the Google Cloud token endpoint {}: {}",
                        self.token_url,
                        e.without_url()
                    ),
                )
            })?;
        let status = resp.status().as_u16();
        let wait = retry_after(resp.headers());
        let body = read_token_body(resp).await.map_err(|m| {
            err(
                ErrorKind::Parse,
                format!("the Google Cloud token endpoint {} {m}", self.token_url),
            )
        })?;
        if !(200..300).contains(&status) {
            let code = body.get("error").and_then(Value::as_str).unwrap_or("");
            let desc = body
                .get("error_description")
                .and_then(Value::as_str)
                .unwrap_or("");
            let what = format!("{code}{}{desc}", if desc.is_empty() { "" } else { ": " });
            if code == "invalid_grant" || code == "invalid_client" || code == "unauthorized_client"
            {
                let fix = match &self.grant {
                    Grant::ServiceAccount { client_email, .. } => format!(
                        "the service account key was rejected by {} ({what}): the key may have been deleted or disabled, or the account {client_email} no longer exists; create a new key for the service account, update {} and check the machine's clock",
                        self.token_url,
                        self.file.display()
                    ),
                    Grant::RefreshToken { .. } => format!(
                        "the Application Default Credentials in {} were rejected by {} ({what}); run `gcloud auth application-default login` again",
                        self.file.display(),
                        self.token_url
                    ),
                };
                return Err(err(ErrorKind::Config, fix).with_status(status));
            }
            let what = if what.is_empty() {
                "no error description".to_string()
            } else {
                what
            };
            return Err(err(
                classify_status(status),
                format!(
                    "the Google Cloud token endpoint {} answered HTTP {status} ({what})",
                    self.token_url
                ),
            )
            .with_status(status)
            .with_retry_after(wait));
        }
        let token = body
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                err(
                    ErrorKind::Parse,
                    format!(
                        "the Google Cloud token endpoint {} answered without an access_token",
                        self.token_url
                    ),
                )
            })?;
        // Google always sends expires_in; without it assume the usual hour. An absurd
        // lifetime is capped (Google's tokens live one hour, at most twelve).
        let lifetime = body
            .get("expires_in")
            .and_then(Value::as_u64)
            .unwrap_or(3600)
            .min(MAX_TOKEN_LIFETIME.as_secs());
        Ok((token.to_string(), Duration::from_secs(lifetime)))
    }
}

/// The longest an access token is kept, whatever `expires_in` says.
const MAX_TOKEN_LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// The most a token endpoint's answer may hold (a token answer is well under 4 kB).
const MAX_TOKEN_BODY: usize = 64 * 1024;

/// The token endpoint's answer as JSON (`Null` when it is not JSON: the caller reports what
/// is missing), read up to [`MAX_TOKEN_BODY`]; `Err` says what went wrong, to follow the
/// endpoint's URL.
async fn read_token_body(mut resp: reqwest::Response) -> Result<Value, String> {
    let mut bytes: Vec<u8> = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| format!("broke off its answer: {}", e.without_url()))?
    {
        if bytes.len() + chunk.len() > MAX_TOKEN_BODY {
            return Err(format!(
                "answered more than {} kB, not a token answer",
                MAX_TOKEN_BODY / 1024
            ));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_bodies_decode_and_garbage_does_not() {
        let pem = "-----BEGIN PRIVATE KEY-----\nAAEC\nAwQ=\n-----END PRIVATE KEY-----\n";
        assert_eq!(pem_to_der(pem), Some(vec![0, 1, 2, 3, 4]));
        assert_eq!(
            pem_to_der("-----BEGIN PRIVATE KEY-----\n!!\n-----END PRIVATE KEY-----"),
            None
        );
    }
}
