//! The CLI's error type: a message, an optional hint and the exit code, rendered on stderr as
//! `Error: {message}` followed by the cause chain (`caused by: …`) and the hint.
//!
//! The exit code follows who can fix the failure (docs/user-guide.md, "Exit codes"):
//!
//! | code | kind | examples |
//! |---|---|---|
//! | 2 | bad input: fixing the command line or the files it names fixes it | an invalid configuration (any [`mixseek_config::LoadError`], an unreadable file included), a bad argument, an unknown execution id, a file that is not a mixseek database, a schema newer than this build |
//! | 1 | the command ran and failed, or the environment stopped it | store I/O (disk full, read-only file system, permission denied), a database locked by another process, a provider failure, an internal error (a bug) |
//!
//! `mixseek exec` adds the original's rules for a run that ended: 0 when every team finished,
//! 1 when some failed, 2 when none has a result; 130 after Ctrl-C.
//!
//! A command whose output pipe was closed by its reader (`mixseek executions | head -1`) ends
//! quietly with exit 0, as `head`'s writer is expected to: [`CliError::closed_pipe`], which
//! `main` prints nothing for.

use mixseek_orchestrator::OrchestratorError;
use mixseek_store::StoreError;
use std::fmt;
use std::process::ExitCode;

/// Exit code of bad input (configuration, arguments, the files they name).
pub(crate) const EXIT_BAD_INPUT: u8 = 2;
/// Exit code of a command that ran and failed (runtime failures, internal errors).
pub(crate) const EXIT_FAILURE: u8 = 1;

#[derive(Debug, Clone)]
pub(crate) struct CliError {
    pub message: String,
    pub hint: Option<String>,
    pub exit_code: u8,
    /// The command's standard output (or error) was closed by its reader: not an error to
    /// report (see [`CliError::closed_pipe`]).
    pub closed_pipe: bool,
}

impl CliError {
    /// Bad input or usage: exit 2.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
            exit_code: EXIT_BAD_INPUT,
            closed_pipe: false,
        }
    }
    /// The command ran and failed: exit 1.
    pub(crate) fn failure(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
            exit_code: EXIT_FAILURE,
            closed_pipe: false,
        }
    }
    /// The reader of the command's output went away (a closed pipe: `… | head -1`): the
    /// command stops there and exits 0 without a message, as a pipeline expects.
    pub(crate) fn closed_pipe() -> Self {
        Self {
            message: "the output pipe was closed by its reader".into(),
            hint: None,
            exit_code: 0,
            closed_pipe: true,
        }
    }
    pub(crate) fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
    /// An error with its `source()` chain appended (a cause whose text the message already
    /// shows is not repeated).
    pub(crate) fn from_error(err: &(dyn std::error::Error + 'static), exit_code: u8) -> Self {
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
            closed_pipe: false,
        }
    }
    /// A store error, with its chain and hint; the exit code follows its class: bad input 2,
    /// the rest (another process holding the file, the operating system refusing, DuckDB
    /// failing) 1. "No database yet" exits 1 like "no executions yet": the workspace has
    /// nothing recorded, the command itself was right.
    pub(crate) fn from_store(e: &StoreError) -> Self {
        let code = match (e, e.class()) {
            (StoreError::NotFound { .. }, _) => EXIT_FAILURE,
            (_, mixseek_store::ErrorClass::BadInput) => EXIT_BAD_INPUT,
            _ => EXIT_FAILURE,
        };
        Self::from_error(e, code).with_optional_hint(e.hint())
    }
    /// An orchestrator error, with its chain and hint; bad input exits 2, a run the
    /// environment stopped (disk, a locked database, a bug) 1.
    pub(crate) fn from_orchestrator(e: &OrchestratorError) -> Self {
        let code = match e.class() {
            mixseek_orchestrator::ErrorClass::BadInput => EXIT_BAD_INPUT,
            mixseek_orchestrator::ErrorClass::Runtime => EXIT_FAILURE,
        };
        Self::from_error(e, code).with_optional_hint(e.hint())
    }
    fn with_optional_hint(self, hint: Option<String>) -> Self {
        match hint {
            Some(h) => self.with_hint(h),
            None => self,
        }
    }
    pub(crate) fn exit(&self) -> ExitCode {
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

/// An I/O error of the command itself (writing its output, a file it was asked to write):
/// a runtime failure; a broken pipe (the reader of the output went away) is
/// [`CliError::closed_pipe`].
impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return CliError::closed_pipe();
        }
        CliError::from_error(&e, EXIT_FAILURE)
    }
}

/// Every configuration problem is bad input (exit 2), a file that cannot be read included
/// (missing, a directory, permission denied, an I/O error): it is a file the command line
/// named, and the original's preflight reports an unreadable configuration with exit 2 too.
/// Each issue keeps its file, position, the operating system's reason and its hint.
impl From<mixseek_config::LoadError> for CliError {
    fn from(e: mixseek_config::LoadError) -> Self {
        CliError::from_error(&e, EXIT_BAD_INPUT)
    }
}

impl From<mixseek_config::PathError> for CliError {
    fn from(e: mixseek_config::PathError) -> Self {
        CliError::from_error(&e, EXIT_BAD_INPUT)
            .with_hint("paths are resolved against the workspace (-w), then the current directory")
    }
}

impl From<StoreError> for CliError {
    fn from(e: StoreError) -> Self {
        CliError::from_store(&e)
    }
}

impl From<OrchestratorError> for CliError {
    fn from(e: OrchestratorError) -> Self {
        CliError::from_orchestrator(&e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn store_errors_exit_by_their_class() {
        let path = PathBuf::from("/ws/mixseek.db");
        let locked = StoreError::Locked {
            path: path.clone(),
            pid: Some(42),
            write: true,
            source: None,
        };
        let e = CliError::from_store(&locked);
        assert_eq!(e.exit_code, 1);
        assert!(e.message.contains("in use by another process"), "{e}");
        assert!(e.hint.is_some());
        let io = StoreError::Io {
            path: path.clone(),
            source: std::io::Error::other("No space left on device"),
        };
        assert_eq!(CliError::from_store(&io).exit_code, 1);
        for bad in [
            StoreError::ExecutionNotFound("nope".into()),
            StoreError::SchemaTooNew {
                path: path.clone(),
                found: 99,
                supported: 5,
            },
            StoreError::NotAFile { path: path.clone() },
        ] {
            assert_eq!(CliError::from_store(&bad).exit_code, 2, "{bad}");
        }
        assert_eq!(
            CliError::from_store(&StoreError::NotFound { path }).exit_code,
            1
        );
    }

    #[test]
    fn the_chain_is_kept_and_not_repeated() {
        #[derive(Debug, thiserror::Error)]
        #[error("cannot record the round")]
        struct Outer(#[source] std::io::Error);
        let e = CliError::from_error(&Outer(std::io::Error::other("disk full")), 1);
        assert_eq!(e.message, "cannot record the round\n  caused by: disk full");
        let e = CliError::from_error(&std::io::Error::other("disk full"), 1);
        assert_eq!(e.message, "disk full");
    }

    #[test]
    fn a_broken_pipe_is_a_closed_pipe_not_a_failure() {
        let e = CliError::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert!(e.closed_pipe);
        assert_eq!(e.exit_code, 0);
        let e = CliError::from(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert!(!e.closed_pipe);
        assert_eq!(e.exit_code, 1);
    }
}
