//! Gemini through Google Cloud Vertex AI (`google-vertex:`):
//! `POST {base_url}/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent`
//! with `Authorization: Bearer <access token>` from [`vertex_auth`](super::vertex_auth).
//!
//! The body and the answer are Gemini's generateContent format, so this module only adds
//! the endpoint and the authentication around [`gemini::request_body`] and
//! [`gemini::parse_response`] (structured output, tools, native tools and usage behave as
//! for `google-gla:`).
//!
//! **Settings** (`[providers.google-vertex]`, then the environment, then the credentials):
//! project = `project`, `GOOGLE_CLOUD_PROJECT`, the credentials' `project_id`; location =
//! `location`, `GOOGLE_CLOUD_LOCATION`, `us-central1`; base URL = `base_url`, else
//! `https://{location}-aiplatform.googleapis.com` (`https://aiplatform.googleapis.com` for
//! `global`); token endpoint = `token_url`, the file's `token_uri`,
//! `https://oauth2.googleapis.com/token`.
//!
//! **a22 workaround (upstream §5.7).** The original turns off Gemini's
//! `include_server_side_tool_invocations` flag for Vertex models because Vertex AI rejects
//! it. The Gemini body built here never carries that flag (no
//! `includeServerSideToolInvocations` in the tool configuration), so native web search and
//! code execution work on Vertex as on Google AI.
//!
//! **Errors.** A 401 drops the cached token and the request is sent once more with a fresh
//! one; a second 401, a 403 (missing permission) and a 404 (model or region) get a message
//! saying what to fix. Retries of 429/5xx are the registry's, as for every provider.

use crate::backend::{Backend, RawResponse};
use crate::env::Env;
use crate::error::LlmError;
use crate::providers::vertex_auth::TokenSource;
use crate::providers::{HttpCommon, check_native_tools, gemini};
use crate::types::ChatRequest;
use mixseek_config::{GoogleCredentials, ProviderKind, ProviderSettings};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// The provider name.
pub(crate) const NAME: &str = "google-vertex";
/// The region used when neither the settings nor `GOOGLE_CLOUD_LOCATION` name one
/// (pydantic-ai's default for Vertex AI).
pub(crate) const DEFAULT_LOCATION: &str = "us-central1";

pub(crate) struct VertexBackend {
    c: HttpCommon,
    auth: Arc<TokenSource>,
    project: String,
    location: String,
}

/// The public endpoint of `location`.
fn default_base_url(location: &str) -> String {
    if location == "global" {
        "https://aiplatform.googleapis.com".to_string()
    } else {
        format!("https://{location}-aiplatform.googleapis.com")
    }
}

/// The backend of `google-vertex` and its base URL (see the module docs for where each
/// setting comes from). Missing or broken credentials are a
/// [`Config`](crate::ErrorKind::Config) error naming the file and what to fix.
pub(crate) fn build(
    s: &ProviderSettings,
    env: &Env,
    http: &reqwest::Client,
) -> Result<(Arc<dyn Backend>, String), LlmError> {
    let source = mixseek_config::locate_google_credentials(|v| env.get(v))
        .map_err(|m| LlmError::config(NAME, m))?;
    let creds = GoogleCredentials::load(&source.path).map_err(|m| LlmError::config(NAME, m))?;
    let project = s
        .project
        .clone()
        .or_else(|| env.get("GOOGLE_CLOUD_PROJECT"))
        .or_else(|| creds.project_id().map(str::to_string))
        .ok_or_else(|| {
            LlmError::config(
                NAME,
                format!(
                    "no Google Cloud project: the credentials file {} names none; set [providers.google-vertex] project or GOOGLE_CLOUD_PROJECT",
                    source.path.display()
                ),
            )
        })?;
    let location = s
        .location
        .clone()
        .or_else(|| env.get("GOOGLE_CLOUD_LOCATION"))
        .unwrap_or_else(|| DEFAULT_LOCATION.to_string());
    let base_url = s
        .base_url
        .clone()
        .unwrap_or_else(|| default_base_url(&location))
        .trim_end_matches('/')
        .to_string();
    let token_url = s
        .token_url
        .clone()
        .unwrap_or_else(|| creds.token_uri().to_string());
    for (what, url) in [("base_url", &base_url), ("token_url", &token_url)] {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(LlmError::config(
                NAME,
                format!("{what} `{url}` is not an http(s) URL"),
            ));
        }
    }
    let auth = TokenSource::new(NAME, &source.path, &creds, token_url, http.clone())?;
    tracing::debug!(provider = NAME, project = %project, location = %location, credentials = %source.path.display(), via = %source.via, "Vertex AI provider configured");
    let c = HttpCommon {
        provider: NAME.to_string(),
        base_url: base_url.clone(),
        api_key: None,
        headers: s
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        http: http.clone(),
    };
    Ok((
        Arc::new(VertexBackend {
            c,
            auth: Arc::new(auth),
            project,
            location,
        }),
        base_url,
    ))
}

impl VertexBackend {
    /// `err` (an HTTP error from Vertex) with what to do about it.
    fn explain(&self, model: &str, mut err: LlmError) -> LlmError {
        let (project, location) = (&self.project, &self.location);
        let hint = match err.status {
            Some(401) => format!(
                "Vertex AI refused the access token of {} even after a refresh: check that the account is enabled and the credentials file is current",
                self.auth.account()
            ),
            Some(403) => format!(
                "permission denied on project `{project}`: grant {} the Vertex AI User role (roles/aiplatform.user) on the project and check that the Vertex AI API (aiplatform.googleapis.com) is enabled",
                self.auth.account()
            ),
            Some(404) => format!(
                "model `{model}` was not found in location `{location}` of project `{project}`: check the model name and that it is offered in this region ([providers.google-vertex] location or GOOGLE_CLOUD_LOCATION)"
            ),
            _ => return err,
        };
        err.message = format!("{hint} (server: {})", err.message);
        err
    }
}

#[async_trait::async_trait]
impl Backend for VertexBackend {
    async fn send(
        &self,
        model: &str,
        request: &ChatRequest,
        attempts: &AtomicU32,
    ) -> Result<RawResponse, LlmError> {
        let model_path = model.strip_prefix("models/").unwrap_or(model);
        let url = format!(
            "{}/v1/projects/{}/locations/{}/publishers/google/models/{model_path}:generateContent",
            self.c.base_url, self.project, self.location
        );
        let body = gemini::request_body(request);
        let mut refreshed = false;
        loop {
            let token = self.auth.token(model).await?;
            let secrets = [token.as_str()];
            let ex = self.c.exchange(model, &secrets);
            check_native_tools(&ex, ProviderKind::Gemini, request)?;
            let builder = self
                .c
                .post(&url)
                .header("authorization", format!("Bearer {token}"));
            let builder = crate::passthrough::with_headers(builder, &request.params.extra);
            match ex.post_json(builder, &body).await {
                Ok(v) => return ex.parse(|| gemini::parse_response(&v)),
                Err(e) if e.status == Some(401) && !refreshed => {
                    tracing::debug!(
                        provider = NAME,
                        model,
                        "Vertex AI refused the access token (HTTP 401); fetching a fresh one"
                    );
                    self.auth.invalidate(&token).await;
                    refreshed = true;
                    attempts.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => return Err(self.explain(model, e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_follows_the_location() {
        assert_eq!(
            default_base_url("europe-west4"),
            "https://europe-west4-aiplatform.googleapis.com"
        );
        assert_eq!(
            default_base_url("global"),
            "https://aiplatform.googleapis.com"
        );
    }

    #[test]
    fn the_body_never_carries_the_server_side_tool_invocations_flag() {
        let r = ChatRequest::user("x").with_native_tools(vec![
            crate::types::NativeTool::web_search(),
            crate::types::NativeTool::CodeExecution,
        ]);
        let b = gemini::request_body(&r).to_string();
        assert!(b.contains("google_search"), "{b}");
        assert!(!b.contains("ServerSideToolInvocations"), "{b}");
        assert!(!b.contains("server_side_tool_invocations"), "{b}");
    }
}
