//! `google-vertex:` against a fake OAuth token endpoint and the fake Gemini server (which
//! answers Vertex AI's path): the signed JWT, the token cache and its refresh, and the
//! errors a user must be able to act on.

use super::*;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use mixseek_llm::{ChatModel, ChatRequest, ErrorKind, StructuredOptions, ToolSpec, generate_json};
use mixseek_testkit::{
    FakeTokenServer, Reply, TEST_CLIENT_EMAIL, TEST_PRIVATE_KEY_ID, TEST_SERVICE_ACCOUNT_KEY,
    TokenReply, USAGE_INPUT, USAGE_OUTPUT, fake_access_token, service_account_json,
};
use ring::signature::KeyPair;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;

const PROJECT: &str = "mixseek-test-project";
const VERTEX_PATH: &str = "/v1/projects/mixseek-test-project/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent";

/// The fakes, the credentials file and a registry using them.
struct Vertex {
    fake: FakeLlm,
    tokens: FakeTokenServer,
    _dir: tempfile::TempDir,
    creds: PathBuf,
}

impl Vertex {
    async fn start() -> Self {
        let fake = FakeLlm::gemini().await;
        let tokens = FakeTokenServer::start().await;
        let dir = tempfile::tempdir().expect("tmp");
        let creds = dir.path().join("sa.json");
        std::fs::write(
            &creds,
            service_account_json(PROJECT, &tokens.token_url()).to_string(),
        )
        .expect("write");
        Self {
            fake,
            tokens,
            _dir: dir,
            creds,
        }
    }

    fn settings(&self) -> ProviderSettings {
        ProviderSettings {
            base_url: Some(self.fake.base_url()),
            max_attempts: 2,
            ..fast()
        }
    }

    fn registry_with(&self, s: ProviderSettings, extra_env: &[(&str, &str)]) -> ModelRegistry {
        let path = self.creds.display().to_string();
        let mut env: Vec<(&str, &str)> = vec![("GOOGLE_APPLICATION_CREDENTIALS", path.as_str())];
        env.extend_from_slice(extra_env);
        registry(vec![("google-vertex", s)], &env)
    }

    fn registry(&self) -> ModelRegistry {
        self.registry_with(self.settings(), &[])
    }
}

fn b64url_json(part: &str) -> Value {
    let bytes = URL_SAFE_NO_PAD.decode(part).expect("base64url");
    serde_json::from_slice(&bytes).expect("json")
}

/// The test key's public key, for checking signatures.
fn public_key() -> Vec<u8> {
    let body: String = TEST_SERVICE_ACCOUNT_KEY
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let der = STANDARD.decode(body).expect("pem");
    let kp = ring::signature::RsaKeyPair::from_pkcs8(&der).expect("test key");
    kp.public_key().as_ref().to_vec()
}

#[tokio::test]
async fn a_signed_jwt_is_exchanged_and_vertex_gets_the_gemini_body_with_the_token() {
    let v = Vertex::start().await;
    v.fake.push(Reply::json(json!({"ok": true})));
    v.fake.push(Reply::tool_call("lookup", json!({"q": "x"})));
    let reg = v.registry();
    let model = reg.model("google-vertex:gemini-2.5-flash").expect("model");
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false});
    let out = generate_json(
        model.as_ref(),
        ChatRequest::user("check").with_system("sys"),
        "Ok",
        schema,
        StructuredOptions::default(),
    )
    .await
    .expect("structured");
    assert_eq!(out.value, json!({"ok": true}));
    let calls = model
        .chat(&ChatRequest::user("go").with_tools(vec![ToolSpec {
            name: "lookup".into(),
            description: "Look up".into(),
            parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        }]))
        .await
        .expect("tool call");
    assert_eq!(calls.tool_calls[0].name, "lookup");
    assert_eq!(
        (calls.usage.input_tokens, calls.usage.output_tokens),
        (USAGE_INPUT, USAGE_OUTPUT)
    );

    // Vertex: its path, the bearer token, Gemini's body.
    let sent = v.fake.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].path, VERTEX_PATH);
    assert_eq!(sent[0].query, None);
    let bearer = format!("Bearer {}", fake_access_token(1));
    assert_eq!(sent[0].header("authorization"), Some(bearer.as_str()));
    assert_eq!(sent[1].header("authorization"), Some(bearer.as_str()));
    assert_eq!(sent[0].header("x-goog-api-key"), None);
    assert_eq!(
        sent[0].body["generationConfig"]["responseSchema"],
        json!({"type": "OBJECT", "properties": {"ok": {"type": "BOOLEAN"}}, "propertyOrdering": ["ok"], "required": ["ok"]})
    );
    assert_eq!(
        sent[0].body["systemInstruction"],
        json!({"parts": [{"text": "sys"}]})
    );
    assert_eq!(
        sent[1].body["tools"][0]["functionDeclarations"][0]["name"],
        "lookup"
    );

    // The token endpoint: one request (cached for the second call), a valid RS256 JWT.
    let treqs = v.tokens.requests();
    assert_eq!(treqs.len(), 1, "{treqs:?}");
    assert_eq!(
        treqs[0].field("grant_type"),
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    );
    let jwt = treqs[0].field("assertion").expect("assertion");
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3);
    assert_eq!(
        b64url_json(parts[0]),
        json!({"alg": "RS256", "typ": "JWT", "kid": TEST_PRIVATE_KEY_ID})
    );
    let claims = b64url_json(parts[1]);
    assert_eq!(claims["iss"], TEST_CLIENT_EMAIL);
    assert_eq!(
        claims["scope"],
        "https://www.googleapis.com/auth/cloud-platform"
    );
    assert_eq!(claims["aud"], v.tokens.token_url());
    let iat = claims["iat"].as_i64().expect("iat");
    assert_eq!(claims["exp"].as_i64(), Some(iat + 3600));
    let now = chrono::Utc::now().timestamp();
    assert!((now - iat).abs() < 120, "iat {iat} now {now}");
    let sig = URL_SAFE_NO_PAD.decode(parts[2]).expect("signature");
    let signed = format!("{}.{}", parts[0], parts[1]);
    ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        public_key(),
    )
    .verify(signed.as_bytes(), &sig)
    .expect("the JWT's RS256 signature verifies with the service account's public key");
}

#[tokio::test]
async fn the_token_is_shared_by_models_and_refreshed_before_it_expires() {
    let v = Vertex::start().await;
    let reg = v.registry();
    for id in [
        "google-vertex:gemini-2.5-flash",
        "google-vertex:gemini-2.5-pro",
    ] {
        reg.model(id)
            .expect("model")
            .chat(&ChatRequest::user("hi"))
            .await
            .expect("answer");
    }
    assert_eq!(v.tokens.request_count(), 1, "one token for both models");

    // A token with less than the refresh margin (5 minutes) left is replaced before use.
    let v = Vertex::start().await;
    v.tokens.set_default(TokenReply::Token { expires_in: 60 });
    let reg = v.registry();
    let model = reg.model("google-vertex:gemini-2.5-flash").expect("model");
    for _ in 0..2 {
        model.chat(&ChatRequest::user("hi")).await.expect("answer");
    }
    assert_eq!(v.tokens.request_count(), 2);
    let auth: Vec<String> = v
        .fake
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        auth,
        vec![
            format!("Bearer {}", fake_access_token(1)),
            format!("Bearer {}", fake_access_token(2))
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_wait_for_one_token_request() {
    let v = Vertex::start().await;
    v.tokens.set_delay(std::time::Duration::from_millis(200));
    let reg = v.registry();
    let model: Arc<dyn ChatModel> = reg.model("google-vertex:gemini-2.5-flash").expect("model");
    let mut set = tokio::task::JoinSet::new();
    for i in 0..8 {
        let m = model.clone();
        set.spawn(async move { m.chat(&ChatRequest::user(format!("q{i}"))).await });
    }
    while let Some(r) = set.join_next().await {
        r.expect("join").expect("answer");
    }
    assert_eq!(
        v.tokens.request_count(),
        1,
        "no stampede on the token endpoint"
    );
    assert_eq!(v.fake.request_count(), 8);
}

#[tokio::test]
async fn a_refused_token_is_replaced_once() {
    let v = Vertex::start().await;
    v.fake.push(Reply::status(
        401,
        "Request had invalid authentication credentials.",
    ));
    let reg = v.registry();
    let model = reg.model("google-vertex:gemini-2.5-flash").expect("model");
    let r = model.chat(&ChatRequest::user("hi")).await.expect("answer");
    assert_eq!(r.attempts, 2, "the resend counts as an attempt");
    assert_eq!(v.tokens.request_count(), 2);
    let sent = v.fake.requests();
    assert_eq!(
        sent[1].header("authorization"),
        Some(format!("Bearer {}", fake_access_token(2)).as_str())
    );

    // Refused again after the refresh: an error saying so, without any token.
    v.fake.push(Reply::status(401, "expired"));
    v.fake.push(Reply::status(401, "expired"));
    v.tokens.set_default(TokenReply::Token { expires_in: 3600 });
    let e = reg
        .model("google-vertex:gemini-2.5-pro")
        .expect("model")
        .chat(&ChatRequest::user("hi"))
        .await
        .expect_err("refused twice");
    assert_eq!((e.kind, e.status), (ErrorKind::Permanent, Some(401)));
    assert!(e.message.contains("even after a refresh"), "{e}");
    assert!(e.message.contains(TEST_CLIENT_EMAIL), "{e}");
    assert!(!e.to_string().contains("fake-access-token"), "{e}");
}

#[tokio::test]
async fn hostile_token_answers_end_in_an_answer_or_a_clear_error() {
    let v = Vertex::start().await;
    let reg = v.registry();
    let model = reg.model("google-vertex:gemini-2.5-flash").expect("model");
    // an absurd lifetime is capped, not added to the clock (which would overflow)
    v.tokens.push(TokenReply::Token {
        expires_in: u64::MAX,
    });
    model
        .chat(&ChatRequest::user("hi"))
        .await
        .expect("the token is used");
    // a fresh registry: a new token request each time
    for (body, says) in [
        ("not json", "without an access_token"),
        ("{\"access_token\": 7}", "without an access_token"),
        (&"x".repeat(200 * 1024)[..], "more than 64 kB"),
    ] {
        v.tokens.push(TokenReply::Raw {
            status: 200,
            body: body.to_string(),
        });
        let reg = v.registry();
        let e = reg
            .model("google-vertex:gemini-2.5-flash")
            .expect("model")
            .chat(&ChatRequest::user("hi"))
            .await
            .expect_err("no token");
        assert_eq!(e.kind, ErrorKind::Parse, "{e}");
        assert!(
            e.message.contains(says) && e.message.contains(&v.tokens.token_url()),
            "{says}: {e}"
        );
    }
}

#[tokio::test]
async fn permission_and_model_errors_say_what_to_fix() {
    let v = Vertex::start().await;
    v.fake.push(Reply::status(
        403,
        "Permission 'aiplatform.endpoints.predict' denied on resource",
    ));
    v.fake
        .push(Reply::status(404, "Publisher Model was not found"));
    let reg = v.registry();
    let model = reg.model("google-vertex:gemini-2.5-flash").expect("model");
    let e = model.chat(&ChatRequest::user("hi")).await.expect_err("403");
    assert_eq!((e.kind, e.status), (ErrorKind::Permanent, Some(403)));
    for part in [
        "mixseek-test-project",
        "roles/aiplatform.user",
        TEST_CLIENT_EMAIL,
        "aiplatform.endpoints.predict",
    ] {
        assert!(e.message.contains(part), "{part} missing: {e}");
    }
    let e = model.chat(&ChatRequest::user("hi")).await.expect_err("404");
    assert_eq!(e.status, Some(404));
    assert!(
        e.message.contains("`gemini-2.5-flash`") && e.message.contains("`us-central1`"),
        "{e}"
    );
}

#[tokio::test]
async fn a_rejected_key_is_a_config_error_without_key_material() {
    let v = Vertex::start().await;
    v.tokens.set_default(TokenReply::invalid_grant());
    let reg = v.registry();
    let e = reg
        .model("google-vertex:gemini-2.5-flash")
        .expect("model")
        .chat(&ChatRequest::user("hi"))
        .await
        .expect_err("rejected");
    assert_eq!(e.kind, ErrorKind::Config);
    let msg = e.to_string();
    assert!(
        msg.contains("the service account key was rejected")
            && msg.contains("Invalid JWT Signature")
            && msg.contains("sa.json"),
        "{msg}"
    );
    assert_eq!(v.fake.request_count(), 0, "Vertex was never called");
    assert_eq!(v.tokens.request_count(), 1, "a config error is not retried");
    let jwt = v.tokens.requests()[0]
        .field("assertion")
        .expect("jwt")
        .to_string();
    assert!(!msg.contains(&jwt) && !msg.contains("PRIVATE KEY"), "{msg}");
}

#[tokio::test]
async fn broken_credentials_files_name_the_file_and_the_fix() {
    let v = Vertex::start().await;
    let dir = tempfile::tempdir().expect("tmp");
    let key_body = TEST_SERVICE_ACCOUNT_KEY
        .lines()
        .nth(3)
        .expect("a key line")
        .to_string();
    let cases: Vec<(&str, String, &str)> = vec![
        ("missing.json", String::new(), "cannot read"),
        ("bad.json", "{not json".into(), "not valid JSON"),
        (
            "garbled.json",
            {
                let mut sa = service_account_json(PROJECT, "http://127.0.0.1:9/token");
                // A PEM whose body is valid base64 but not a key, keeping real key lines.
                sa["private_key"] = json!(format!(
                    "-----BEGIN PRIVATE KEY-----\n{key_body}\n-----END PRIVATE KEY-----\n"
                ));
                sa.to_string()
            },
            "is not a usable RSA key",
        ),
        (
            "user.json",
            json!({"type": "external_account"}).to_string(),
            "external_account",
        ),
    ];
    for (name, content, expected) in cases {
        let path = dir.path().join(name);
        if !content.is_empty() {
            std::fs::write(&path, content).expect("write");
        }
        let p = path.display().to_string();
        let reg = registry(
            vec![("google-vertex", v.settings())],
            &[("GOOGLE_APPLICATION_CREDENTIALS", p.as_str())],
        );
        let e = reg
            .model("google-vertex:gemini-2.5-flash")
            .err()
            .expect("config error");
        assert_eq!(e.kind, ErrorKind::Config, "{name}");
        let msg = e.to_string();
        assert!(
            msg.contains(expected) && msg.contains(name),
            "{name}: {msg}"
        );
        assert!(!msg.contains(&key_body), "key material in: {msg}");
    }
    let reg = registry(
        vec![("google-vertex", v.settings())],
        &[("HOME", "/nonexistent")],
    );
    let e = reg
        .model("google-vertex:gemini-2.5-flash")
        .err()
        .expect("no credentials");
    assert!(
        e.to_string().contains("GOOGLE_APPLICATION_CREDENTIALS")
            && e.to_string()
                .contains("gcloud auth application-default login"),
        "{e}"
    );
}

#[tokio::test]
async fn project_and_location_come_from_settings_then_environment() {
    let v = Vertex::start().await;
    let reg = v.registry_with(
        v.settings(),
        &[
            ("GOOGLE_CLOUD_PROJECT", "env-project"),
            ("GOOGLE_CLOUD_LOCATION", "asia-northeast1"),
        ],
    );
    reg.model("google-vertex:gemini-2.5-flash")
        .expect("model")
        .chat(&ChatRequest::user("hi"))
        .await
        .expect("answer");
    let reg = v.registry_with(
        ProviderSettings {
            project: Some("set-project".into()),
            location: Some("global".into()),
            ..v.settings()
        },
        &[("GOOGLE_CLOUD_PROJECT", "env-project")],
    );
    reg.model("google-vertex:gemini-2.5-flash")
        .expect("model")
        .chat(&ChatRequest::user("hi"))
        .await
        .expect("answer");
    let paths: Vec<String> = v.fake.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        vec![
            "/v1/projects/env-project/locations/asia-northeast1/publishers/google/models/gemini-2.5-flash:generateContent",
            "/v1/projects/set-project/locations/global/publishers/google/models/gemini-2.5-flash:generateContent",
        ]
    );
}

#[tokio::test]
async fn application_default_credentials_of_a_user_use_the_refresh_token() {
    let v = Vertex::start().await;
    let home = tempfile::tempdir().expect("home");
    let adc = home
        .path()
        .join(".config/gcloud/application_default_credentials.json");
    std::fs::create_dir_all(adc.parent().expect("dir")).expect("mkdir");
    std::fs::write(
        &adc,
        json!({"type": "authorized_user", "client_id": "cid.apps.googleusercontent.com",
            "client_secret": "user-client-secret-123", "refresh_token": "1//user-refresh-token-456",
            "quota_project_id": "quota-project"})
        .to_string(),
    )
    .expect("write");
    let h = home.path().display().to_string();
    let token_url = v.tokens.token_url();
    let reg = registry(
        vec![(
            "google-vertex",
            ProviderSettings {
                token_url: Some(token_url),
                ..v.settings()
            },
        )],
        &[("HOME", h.as_str())],
    );
    reg.model("google-vertex:gemini-2.5-flash")
        .expect("model")
        .chat(&ChatRequest::user("hi"))
        .await
        .expect("answer");
    let t = &v.tokens.requests()[0];
    assert_eq!(t.field("grant_type"), Some("refresh_token"));
    assert_eq!(t.field("refresh_token"), Some("1//user-refresh-token-456"));
    assert_eq!(t.field("client_id"), Some("cid.apps.googleusercontent.com"));
    assert!(
        v.fake.requests()[0]
            .path
            .starts_with("/v1/projects/quota-project/locations/us-central1/")
    );

    // A rejected refresh token: log in again.
    v.tokens.set_default(TokenReply::invalid_grant());
    let reg = registry(
        vec![(
            "google-vertex",
            ProviderSettings {
                token_url: Some(v.tokens.token_url()),
                ..v.settings()
            },
        )],
        &[("HOME", h.as_str())],
    );
    let e = reg
        .model("google-vertex:gemini-2.5-flash")
        .expect("model")
        .chat(&ChatRequest::user("hi"))
        .await
        .expect_err("rejected");
    let msg = e.to_string();
    assert!(
        msg.contains("gcloud auth application-default login"),
        "{msg}"
    );
    assert!(
        !msg.contains("user-client-secret-123") && !msg.contains("user-refresh-token-456"),
        "{msg}"
    );
}

#[tokio::test]
async fn the_private_key_is_among_the_values_to_mask() {
    let v = Vertex::start().await;
    let p = v.creds.display().to_string();
    let env = Env::from_map([("GOOGLE_APPLICATION_CREDENTIALS", p.as_str())]);
    let values = mixseek_llm::api_key_values(&BTreeMap::new(), &env);
    assert!(values.iter().any(|s| s == TEST_SERVICE_ACCOUNT_KEY));
    let line = TEST_SERVICE_ACCOUNT_KEY.lines().nth(5).expect("line");
    assert!(values.iter().any(|s| s == line), "each PEM line too");
}
