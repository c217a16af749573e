//! The per-provider wire code behind the registry's models: one
//! attempt of one request, plus HTTP helpers shared by the providers (status → error kind,
//! the server's message, masking of API keys).

use crate::error::{ErrorKind, LlmError};
use crate::retry::{classify_status, retry_after};
use crate::secret::mask;
use crate::types::{ChatRequest, FinishReason, TokenCounts, ToolCall};
use std::sync::atomic::AtomicU32;

/// What a provider answered, before accounting.
#[derive(Debug, Clone, PartialEq)]
pub struct RawResponse {
    pub text: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    /// `None` when the provider reported no token counts.
    pub usage: Option<TokenCounts>,
    pub finish_reason: FinishReason,
}

/// One provider's wire format.
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// Sends one attempt of `request` to `model`. `attempts` already counts this attempt; a
    /// backend that resends internally (capability fallback) adds its extra sends to it.
    async fn send(
        &self,
        model: &str,
        request: &ChatRequest,
        attempts: &AtomicU32,
    ) -> Result<RawResponse, LlmError>;
}

/// Context of one HTTP exchange, for errors.
pub(crate) struct Exchange<'a> {
    pub provider: &'a str,
    pub model: &'a str,
    /// Secrets to mask in any message (the API key).
    pub secrets: &'a [&'a str],
    /// The provider's base URL (never holds a key: keys go in headers), for transport errors.
    pub base_url: &'a str,
}

impl Exchange<'_> {
    pub fn error(&self, kind: ErrorKind, message: impl AsRef<str>) -> LlmError {
        LlmError::new(
            kind,
            self.provider,
            self.model,
            mask(message.as_ref(), self.secrets),
        )
    }

    /// Maps a reqwest error (connect, timeout, body).
    pub fn transport(&self, e: reqwest::Error) -> LlmError {
        let kind = if e.is_timeout() {
            ErrorKind::Timeout
        } else {
            ErrorKind::Transport
        };
        // The base URL instead of reqwest's full URL.
        let e = e.without_url();
        let mut msg = format!("{} ({})", e, self.base_url);
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            msg.push_str(": ");
            msg.push_str(&s.to_string());
            src = s.source();
        }
        self.error(kind, msg)
    }

    /// Posts `body` as JSON and returns the parsed JSON answer, or the classified error.
    pub async fn post_json(
        &self,
        builder: reqwest::RequestBuilder,
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, LlmError> {
        let resp = builder
            .json(body)
            .send()
            .await
            .map_err(|e| self.transport(e))?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.bytes().await.map_err(|e| self.transport(e))?;
        if !status.is_success() {
            let code = status.as_u16();
            let message = server_message(&bytes);
            return Err(self
                .error(classify_status(code), message)
                .with_status(code)
                .with_retry_after(retry_after(&headers)));
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            let mut err = self.error(
                ErrorKind::Parse,
                format!("the server's answer is not JSON ({e}): {}", snippet(&bytes)),
            );
            err.status = Some(status.as_u16());
            err
        })
    }
}

/// The server's error message: `error.message` (OpenAI, Anthropic, Gemini), `message`,
/// `detail`, `error` as a string, else the start of the body.
pub fn server_message(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
        let candidates = [
            v.pointer("/error/message"),
            v.get("message"),
            v.get("detail"),
            v.get("error"),
        ];
        for c in candidates.into_iter().flatten() {
            if let Some(s) = c.as_str() {
                return s.to_string();
            }
        }
        if let Some(first) = v.as_array().and_then(|a| a.first())
            && let Some(s) = first.pointer("/error/message").and_then(|m| m.as_str())
        {
            return s.to_string();
        }
    }
    let s = snippet(body);
    if s.is_empty() {
        "(empty answer)".to_string()
    } else {
        s
    }
}

/// The first 500 characters of a body.
pub fn snippet(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(body);
    let s = s.trim();
    match s.char_indices().nth(500) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// A rough token estimate of a request (4 characters per token), for the tokens-per-minute
/// limit and the `mock:` provider.
pub fn estimate_tokens(request: &ChatRequest) -> u64 {
    let mut chars = request.system.as_deref().map_or(0, str::len);
    for m in &request.messages {
        chars += match m {
            crate::types::Message::User { content } => content.len(),
            crate::types::Message::Assistant {
                content,
                tool_calls,
            } => {
                content.as_deref().map_or(0, str::len)
                    + tool_calls
                        .iter()
                        .map(|t| t.name.len() + t.arguments.to_string().len())
                        .sum::<usize>()
            }
            crate::types::Message::Tool { content, name, .. } => content.len() + name.len(),
        };
    }
    for t in &request.tools {
        chars += t.name.len() + t.description.len() + t.parameters.to_string().len();
    }
    if let Some(s) = &request.response_schema {
        chars += s.schema.to_string().len();
    }
    (chars as u64).div_ceil(4) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_messages_are_extracted() {
        assert_eq!(
            server_message(br#"{"error":{"message":"bad model","type":"invalid_request_error"}}"#),
            "bad model"
        );
        assert_eq!(
            server_message(
                br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(
            server_message(br#"[{"error":{"code":400,"message":"gemini says no"}}]"#),
            "gemini says no"
        );
        assert_eq!(server_message(br#"{"detail":"nope"}"#), "nope");
        assert_eq!(server_message(b"<html>502</html>"), "<html>502</html>");
        assert_eq!(server_message(b""), "(empty answer)");
    }
}
