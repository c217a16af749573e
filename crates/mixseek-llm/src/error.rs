//! [`LlmError`]: every failure of an LLM call, with its kind (what the caller may do about
//! it), the provider and model, the HTTP status and the server's message (API keys masked),
//! and, for structured output, the model's raw output.

use std::fmt;
use std::time::Duration;

/// What went wrong, coarsely: decides retries, fallbacks and how a caller reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// Connection refused/reset, DNS, TLS, a body cut short. Transient.
    Transport,
    /// The call's time limit ran out (retries included), or one attempt hung. Transient.
    Timeout,
    /// HTTP 429. Transient.
    RateLimited,
    /// HTTP 408, 500, 502, 503, 504, 529. Transient.
    Server,
    /// HTTP 400, 401, 403, 404 and other 4xx: retrying cannot help. `status` is set.
    Permanent,
    /// The answer was not what the wire format promises, or (structured output) not JSON.
    Parse,
    /// Structured output that does not follow the response schema.
    Schema,
    /// Structured output the caller's check refused (e.g. a score outside 0..=100).
    Check,
    /// Unknown provider, missing API key, bad base URL, unsupported model id.
    Config,
}

impl ErrorKind {
    /// The snake_case name (`rate_limited`), as serialised and displayed.
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorKind::Transport => "transport",
            ErrorKind::Timeout => "timeout",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Server => "server",
            ErrorKind::Permanent => "permanent",
            ErrorKind::Parse => "parse",
            ErrorKind::Schema => "schema",
            ErrorKind::Check => "check",
            ErrorKind::Config => "config",
        }
    }

    /// Whether another attempt at the same request may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ErrorKind::Transport | ErrorKind::Timeout | ErrorKind::RateLimited | ErrorKind::Server
        )
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed LLM call. Rendered as
/// `[provider] model: kind error (HTTP status): message`; the message never contains an API
/// key (every message built from a server answer or a transport error is masked).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct LlmError {
    /// What went wrong, coarsely.
    pub kind: ErrorKind,
    /// Provider name (`openai`, `ollama`, …); empty when the id could not be parsed.
    pub provider: String,
    /// Model name without the provider prefix.
    pub model: String,
    /// HTTP status, when the server answered.
    pub status: Option<u16>,
    /// What went wrong, in words (API keys masked).
    pub message: String,
    /// The model's raw output (structured output failures).
    pub raw_output: Option<String>,
    /// How long the server asked us to wait (429/503 `Retry-After` and rate-limit headers).
    pub retry_after: Option<Duration>,
    /// HTTP attempts made before giving up, over all models tried.
    pub attempts: u32,
    /// The attempt found nothing listening at the provider's address (connection refused):
    /// the runtime reports a server that is down from the start at once (see
    /// `crate::reach`) instead of retrying it like a server that went away.
    pub(crate) connection_refused: bool,
}

impl fmt::Display for LlmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.provider.is_empty() {
            write!(f, "[{}] ", self.provider)?;
        }
        if !self.model.is_empty() {
            write!(f, "{}: ", self.model)?;
        }
        write!(f, "{} error", self.kind)?;
        if let Some(status) = self.status {
            write!(f, " (HTTP {status})")?;
        }
        write!(f, ": {}", self.message)?;
        if self.attempts > 1 {
            write!(f, " (after {} attempts)", self.attempts)?;
        }
        Ok(())
    }
}

impl LlmError {
    /// An error without status, raw output, wait hint or attempts.
    pub fn new(
        kind: ErrorKind,
        provider: impl Into<String>,
        model: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            provider: provider.into(),
            model: model.into(),
            status: None,
            message: message.into(),
            raw_output: None,
            retry_after: None,
            attempts: 0,
            connection_refused: false,
        }
    }
    /// A configuration error (unknown provider, missing key, …).
    pub fn config(provider: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Config, provider, "", message)
    }
    /// The error with an HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }
    /// The error with the model's raw output.
    pub fn with_raw_output(mut self, raw: impl Into<String>) -> Self {
        self.raw_output = Some(raw.into());
        self
    }
    /// The error with the server's wait hint.
    pub fn with_retry_after(mut self, retry_after: Option<Duration>) -> Self {
        self.retry_after = retry_after;
        self
    }
    /// The error with the number of attempts made.
    pub fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts;
        self
    }
    /// [`LlmError::kind`].
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// Whether another attempt may succeed ([`ErrorKind::is_transient`]).
    pub fn is_transient(&self) -> bool {
        self.kind.is_transient()
    }
    /// [`LlmError::raw_output`], borrowed.
    pub fn raw_output(&self) -> Option<&str> {
        self.raw_output.as_deref()
    }
    /// `provider:model`.
    pub fn model_id(&self) -> String {
        format!("{}:{}", self.provider, self.model)
    }
}
