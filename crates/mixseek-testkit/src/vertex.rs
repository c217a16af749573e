//! Google Cloud credentials for the `google-vertex:` tests: a throwaway service-account key
//! (test-only, never valid anywhere), the service-account JSON around it, and a fake OAuth
//! token endpoint on 127.0.0.1 that records every token request and answers from a script.
//!
//! The fake Vertex AI endpoint itself is [`FakeLlm::gemini`](crate::FakeLlm::gemini): Vertex
//! speaks the same generateContent body, and the Gemini fake also answers the Vertex path
//! `/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent`.

use crate::server::{HttpResponse, HttpServer};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A 2048-bit RSA private key in PKCS#8 PEM, generated with
/// `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048` for tests only. It belongs
/// to no Google account and must never be used for anything but tests.
pub const TEST_SERVICE_ACCOUNT_KEY: &str =
    include_str!("../fixtures/vertex-test-service-account-key.pem");

/// The `client_email` of [`service_account_json`].
pub const TEST_CLIENT_EMAIL: &str = "mixseek-test@mixseek-test-project.iam.gserviceaccount.com";
/// The `private_key_id` of [`service_account_json`].
pub const TEST_PRIVATE_KEY_ID: &str = "test-key-id-0001";

/// A service-account credentials file (`type = service_account`) for project `project` with
/// [`TEST_SERVICE_ACCOUNT_KEY`], whose `token_uri` is `token_uri`.
pub fn service_account_json(project: &str, token_uri: &str) -> Value {
    json!({
        "type": "service_account",
        "project_id": project,
        "private_key_id": TEST_PRIVATE_KEY_ID,
        "private_key": TEST_SERVICE_ACCOUNT_KEY,
        "client_email": TEST_CLIENT_EMAIL,
        "client_id": "000000000000000000000",
        "token_uri": token_uri,
    })
}

/// One scripted answer of the fake token endpoint.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenReply {
    /// A token valid for this many seconds (`access_token` is `fake-access-token-<n>` for the
    /// `n`-th request, from 1).
    Token {
        /// `expires_in` of the answer.
        expires_in: u64,
    },
    /// Any body with this status (hostile or broken token endpoints).
    Raw {
        /// The HTTP status.
        status: u16,
        /// The body, sent as it is.
        body: String,
    },
    /// An OAuth error answer (`{"error": …, "error_description": …}`) with this status.
    Error {
        /// The HTTP status.
        status: u16,
        /// `error` (e.g. `invalid_grant`).
        error: String,
        /// `error_description`.
        description: String,
    },
}

impl TokenReply {
    /// The token endpoint's answer to a key it does not know (HTTP 400 `invalid_grant`).
    pub fn invalid_grant() -> Self {
        TokenReply::Error {
            status: 400,
            error: "invalid_grant".into(),
            description: "Invalid JWT Signature.".into(),
        }
    }
}

/// A token request the fake endpoint received: its form fields, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenRequest {
    /// The path.
    pub path: String,
    /// The `application/x-www-form-urlencoded` fields in order.
    pub form: Vec<(String, String)>,
}

impl TokenRequest {
    /// The value of form field `name`.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.form
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug)]
struct TokenState {
    script: Mutex<VecDeque<TokenReply>>,
    default: Mutex<TokenReply>,
    requests: Mutex<Vec<TokenRequest>>,
    counter: AtomicUsize,
    delay: Mutex<Duration>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// A fake OAuth 2.0 token endpoint (`POST /token`): answers each request with the next
/// [`TokenReply`] of its script, else the default (a token valid for an hour).
#[derive(Debug)]
pub struct FakeTokenServer {
    server: HttpServer,
    state: Arc<TokenState>,
}

impl FakeTokenServer {
    /// Starts the endpoint on a random port.
    pub async fn start() -> Self {
        let state = Arc::new(TokenState {
            script: Mutex::new(VecDeque::new()),
            default: Mutex::new(TokenReply::Token { expires_in: 3600 }),
            requests: Mutex::new(Vec::new()),
            counter: AtomicUsize::new(0),
            delay: Mutex::new(Duration::ZERO),
        });
        let s = state.clone();
        let server = match HttpServer::start(0, move |req| {
            let s = s.clone();
            async move {
                let form = parse_form(&req.body);
                lock(&s.requests).push(TokenRequest {
                    path: req.path.clone(),
                    form,
                });
                let n = s.counter.fetch_add(1, Ordering::SeqCst) + 1;
                let delay = *lock(&s.delay);
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                if req.method != "POST" || req.path != "/token" {
                    return HttpResponse::json(
                        404,
                        &json!({"error": "not_found", "error_description": format!("no route for {} {}", req.method, req.path)}),
                    );
                }
                let reply = {
                    let next = lock(&s.script).pop_front();
                    next.unwrap_or_else(|| lock(&s.default).clone())
                };
                match reply {
                    TokenReply::Token { expires_in } => HttpResponse::json(
                        200,
                        &json!({
                            "access_token": fake_access_token(n),
                            "expires_in": expires_in,
                            "token_type": "Bearer",
                        }),
                    ),
                    TokenReply::Raw { status, body } => HttpResponse::text(status, body),
                    TokenReply::Error {
                        status,
                        error,
                        description,
                    } => HttpResponse::json(
                        status,
                        &json!({"error": error, "error_description": description}),
                    ),
                }
            }
        })
        .await
        {
            Ok(server) => server,
            Err(e) => panic!("cannot start the fake token server: {e}"),
        };
        Self { server, state }
    }

    /// The token URL to configure: `http://127.0.0.1:PORT/token`.
    pub fn token_url(&self) -> String {
        format!("{}/token", self.server.uri())
    }
    /// Appends a reply to the script.
    pub fn push(&self, reply: TokenReply) -> &Self {
        lock(&self.state.script).push_back(reply);
        self
    }
    /// The reply used when the script is empty.
    pub fn set_default(&self, reply: TokenReply) -> &Self {
        *lock(&self.state.default) = reply;
        self
    }
    /// Delays every answer (to let concurrent callers pile up).
    pub fn set_delay(&self, d: Duration) -> &Self {
        *lock(&self.state.delay) = d;
        self
    }
    /// Every token request received so far.
    pub fn requests(&self) -> Vec<TokenRequest> {
        lock(&self.state.requests).clone()
    }
    /// How many token requests were received so far.
    pub fn request_count(&self) -> usize {
        lock(&self.state.requests).len()
    }
}

/// The access token the fake endpoint hands out for its `n`-th request (from 1).
pub fn fake_access_token(n: usize) -> String {
    format!("fake-access-token-{n}")
}

/// Decodes an `application/x-www-form-urlencoded` body.
fn parse_form(body: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(body)
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let decoded = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                if let Some(b) = decoded {
                    out.push(b);
                    i += 3;
                    continue;
                }
                out.push(b'%');
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_decoded() {
        assert_eq!(
            parse_form(b"grant_type=urn%3Aietf%3Aparams&assertion=a.b-c_d&x=1+2&y=%"),
            vec![
                ("grant_type".into(), "urn:ietf:params".into()),
                ("assertion".into(), "a.b-c_d".into()),
                ("x".into(), "1 2".into()),
                ("y".into(), "%".into()),
            ]
        );
    }
}
