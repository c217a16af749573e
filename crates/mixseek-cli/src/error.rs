//! The CLI's error type: a message, an optional hint and the exit code, rendered on stderr as
//! `Error: {message}` followed by the cause chain and the hint.

use std::fmt;
use std::process::ExitCode;

#[derive(Debug, Clone)]
pub struct CliError {
    pub message: String,
    pub hint: Option<String>,
    pub exit_code: u8,
}

impl CliError {
    /// Bad input or usage: exit 2.
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
            exit_code: 2,
        }
    }
    /// The command ran and failed: exit 1.
    pub fn failure(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
            exit_code: 1,
        }
    }
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
    /// An error with its `source()` chain appended.
    pub fn from_error(err: &(dyn std::error::Error + 'static), exit_code: u8) -> Self {
        let mut message = err.to_string();
        let mut source = err.source();
        while let Some(s) = source {
            let text = s.to_string();
            if !message.contains(&text) {
                message.push_str("\n  caused by: ");
                message.push_str(&text);
            }
            source = s.source();
        }
        Self {
            message,
            hint: None,
            exit_code,
        }
    }
    pub fn exit(&self) -> ExitCode {
        ExitCode::from(self.exit_code)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error: {}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\nHint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CliError {}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::failure(e.to_string())
    }
}

impl From<mixseek_config::LoadError> for CliError {
    fn from(e: mixseek_config::LoadError) -> Self {
        CliError::usage(e.to_string())
    }
}

impl From<mixseek_config::PathError> for CliError {
    fn from(e: mixseek_config::PathError) -> Self {
        CliError::usage(e.to_string())
            .with_hint("paths are resolved against the workspace (-w), then the current directory")
    }
}
