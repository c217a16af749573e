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
pub(crate) struct RawResponse {
    pub(crate) text: Option<String>,
    pub(crate) tool_calls: Vec<ToolCall>,
    /// `None` when the provider reported no token counts, or implausible ones …
    pub(crate) usage: Option<TokenCounts>,
    /// … then what was wrong with them (logged by [`Exchange::parse`]).
    pub(crate) usage_problem: Option<String>,
    pub(crate) finish_reason: FinishReason,
}

/// One provider's wire format.
#[async_trait::async_trait]
pub(crate) trait Backend: Send + Sync {
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
    pub(crate) provider: &'a str,
    pub(crate) model: &'a str,
    /// Secrets to mask in any message (the API key).
    pub(crate) secrets: &'a [&'a str],
    /// The provider's base URL (never holds a key: keys go in headers), for transport errors.
    pub(crate) base_url: &'a str,
}

impl Exchange<'_> {
    pub(crate) fn error(&self, kind: ErrorKind, message: impl AsRef<str>) -> LlmError {
        LlmError::new(
            kind,
            self.provider,
            self.model,
            mask(message.as_ref(), self.secrets),
        )
    }

    /// Runs a wire's answer parser: its `Err` becomes a [`Parse`](ErrorKind::Parse) error,
    /// and implausible token usage it found is logged with the provider and model.
    pub(crate) fn parse(
        &self,
        parse: impl FnOnce() -> Result<RawResponse, String>,
    ) -> Result<RawResponse, LlmError> {
        let raw = parse().map_err(|m| self.error(ErrorKind::Parse, m))?;
        if let Some(problem) = &raw.usage_problem {
            tracing::warn!(
                provider = %self.provider,
                model = %self.model,
                "{problem}; the call's usage is recorded as unknown"
            );
        }
        Ok(raw)
    }

    /// Maps a reqwest error (connect, timeout, body).
    pub(crate) fn transport(&self, e: reqwest::Error) -> LlmError {
        let kind = if e.is_timeout() {
            ErrorKind::Timeout
        } else {
            ErrorKind::Transport
        };
        let refused = crate::reach::is_connection_refused(&e);
        // The base URL instead of reqwest's full URL.
        let e = e.without_url();
        let mut msg = format!("{} ({})", e, self.base_url);
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            msg.push_str(": ");
            msg.push_str(&s.to_string());
            src = s.source();
        }
        let mut err = self.error(kind, msg);
        err.connection_refused = refused;
        err
    }

    /// Posts `body` as JSON and returns the parsed JSON answer, or the classified error.
    /// The answer's body is read up to [`MAX_BODY_BYTES`].
    pub(crate) async fn post_json(
        &self,
        builder: reqwest::RequestBuilder,
        body: &(impl serde::Serialize + Sync),
    ) -> Result<serde_json::Value, LlmError> {
        let resp = builder
            .json(body)
            .send()
            .await
            .map_err(|e| self.transport(e))?;
        let status = resp.status();
        let code = status.as_u16();
        // only an error answer's headers are read (its Retry-After)
        let retry = (!status.is_success()).then(|| retry_after(resp.headers()));
        let body = self.read_body(resp, code).await?;
        if let Some(retry) = retry {
            let message = match &body {
                Body::Complete(bytes) => server_message(bytes),
                Body::TooLarge { prefix, .. } => format!(
                    "{} (the error body was cut at mixseek's limit of {})",
                    server_message(prefix),
                    describe_size(MAX_BODY_BYTES)
                ),
            };
            return Err(self
                .error(classify_status(code), message)
                .with_status(code)
                .with_retry_after(retry));
        }
        let bytes = match body {
            Body::Complete(bytes) => bytes,
            Body::TooLarge { announced, .. } => {
                let size = match announced {
                    Some(n) => format!("{n} bytes announced by Content-Length"),
                    None => format!("more than {MAX_BODY_BYTES} bytes received"),
                };
                return Err(self.parse_error(
                    code,
                    format!(
                        "the server's answer is larger than mixseek's limit of {} for one answer ({size}); ask for a shorter answer (max_tokens) or check what the server sends",
                        describe_size(MAX_BODY_BYTES)
                    ),
                ));
            }
        };
        parse_json_body(&bytes).map_err(|m| self.parse_error(code, m))
    }

    fn parse_error(&self, status: u16, message: String) -> LlmError {
        let mut err = self.error(ErrorKind::Parse, message);
        err.status = Some(status);
        err
    }

    /// Reads the body of `resp` (HTTP `status`), stopping at [`MAX_BODY_BYTES`]. A body that
    /// breaks off (connection closed or reset, fewer bytes than Content-Length) is a
    /// [`Transport`](ErrorKind::Transport) error.
    async fn read_body(&self, mut resp: reqwest::Response, status: u16) -> Result<Body, LlmError> {
        let limit = MAX_BODY_BYTES;
        if let Some(n) = resp.content_length()
            && n > limit as u64
        {
            return Ok(Body::TooLarge {
                announced: Some(n),
                prefix: Vec::new(),
            });
        }
        let mut bytes: Vec<u8> = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if bytes.len().saturating_add(chunk.len()) > limit {
                        let room = limit.saturating_sub(bytes.len());
                        bytes.extend_from_slice(chunk.get(..room).unwrap_or_default());
                        return Ok(Body::TooLarge {
                            announced: None,
                            prefix: bytes,
                        });
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(None) => return Ok(Body::Complete(bytes)),
                Err(e) => {
                    let mut err = self.transport(e);
                    err.message = format!(
                        "the answer (HTTP {status}) broke off after {} bytes of its body: {}",
                        bytes.len(),
                        err.message
                    );
                    return Err(err);
                }
            }
        }
    }
}

/// The largest answer body read from a server (32 MiB): a longer answer is a
/// [`Parse`](ErrorKind::Parse) error naming the limit (an error answer is cut there).
pub(crate) const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// A body read up to [`MAX_BODY_BYTES`].
enum Body {
    Complete(Vec<u8>),
    /// Over the limit: what Content-Length announced, if that is how we know, and the first
    /// bytes read.
    TooLarge {
        announced: Option<u64>,
        prefix: Vec<u8>,
    },
}

/// `32 MiB`, `512 KiB`, `100 bytes`.
fn describe_size(n: usize) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// Parses a successful answer's body as JSON; `Err` says what is wrong with it (empty, not
/// UTF-8, an HTML page, not JSON), with the start of the body.
pub(crate) fn parse_json_body(bytes: &[u8]) -> Result<serde_json::Value, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("the server's answer is empty (no body)".to_string());
    }
    if let Err(e) = std::str::from_utf8(bytes) {
        return Err(format!(
            "the server's answer is not valid UTF-8 (invalid byte at offset {}): {}",
            e.valid_up_to(),
            snippet(bytes)
        ));
    }
    serde_json::from_slice(bytes).map_err(|e| {
        let html = bytes
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|b| *b == b'<');
        let hint = if html {
            " (an HTML page, not an API answer: check the provider's base_url)"
        } else {
            ""
        };
        format!(
            "the server's answer is not JSON ({e}){hint}: {}",
            snippet(bytes)
        )
    })
}

/// The server's error message: `error.message` (OpenAI, Anthropic, Gemini), `message`,
/// `detail`, `error` as a string, else the start of the body.
pub(crate) fn server_message(body: &[u8]) -> String {
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
pub(crate) fn snippet(body: &[u8]) -> String {
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

    #[test]
    fn bodies_that_are_not_json_say_what_they_are() {
        assert_eq!(
            parse_json_body(b"{\"a\": 1}"),
            Ok(serde_json::json!({"a": 1}))
        );
        assert!(parse_json_body(b"").is_err_and(|e| e.contains("empty")));
        assert!(parse_json_body(b" \r\n").is_err_and(|e| e.contains("empty")));
        assert!(
            parse_json_body(b"{\"a\": \"\xff\xfe\"}")
                .is_err_and(|e| e.contains("not valid UTF-8 (invalid byte at offset 7)"))
        );
        assert!(
            parse_json_body(b"  <!DOCTYPE html><html></html>")
                .is_err_and(|e| e.contains("HTML page") && e.contains("base_url"))
        );
        assert!(
            parse_json_body(b"{\"choices\": [")
                .is_err_and(|e| e.contains("not JSON") && e.contains("EOF"))
        );
        assert_eq!(describe_size(MAX_BODY_BYTES), "32 MiB");
        assert_eq!(describe_size(2048), "2 KiB");
        assert_eq!(describe_size(100), "100 bytes");
    }
}
