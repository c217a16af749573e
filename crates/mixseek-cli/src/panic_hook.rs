//! A panic is a bug in mixseek: the user gets one line saying so, with the panic's message and
//! where it happened, and exit code 1 — not Rust's `thread 'main' panicked at …` text, a
//! backtrace and exit code 101.
//!
//! * [`install`] (right after logging is set up) installs a hook that logs every panic with
//!   `tracing::error!` (the log file keeps it) and records its message and location. Rust's
//!   default output, backtrace included, is only printed when `RUST_BACKTRACE` asks for it.
//!   It chains: the orchestrator's hook (`mixseek_orchestrator`'s `panics.rs`, installed at
//!   the first team task) records the location of a team's panic and then calls this one, so
//!   a bug in one team's task is logged here and fails that team only.
//! * `main` runs the command under `catch_unwind`: a panic on the main thread ends with
//!   [`report`]'s `Error: internal error (a bug in mixseek, please report it): MESSAGE at
//!   FILE:LINE:COLUMN` and exit 1. A panic in a blocking task of a command ([`join_error`]) is
//!   reported the same way.
//!
//! One panic is not a bug: `println!` and `eprintln!` panic when the reader of the output has
//! gone (`mixseek executions | head -1` closes the pipe after one line). The hook logs it at
//! debug level only, and [`report`] / [`join_error`] turn it into
//! [`CliError::closed_pipe`]: the command ends quietly with exit 0, wherever it printed.
//!
//! Test-only fault injection ([`inject_main_panic`], [`injected_team_fault`]): in a build
//! with debug assertions (the dev profile the tests use), `MIXSEEK_TEST_PANIC=main` makes the
//! command panic on the main thread as it starts, and `MIXSEEK_TEST_PANIC=team:ID` makes
//! `mixseek exec` panic inside team `ID`'s task when it starts its round 2. A release build
//! (`cargo build --release`, `cargo install`) compiles both out, so no environment can
//! trigger them there.

use crate::error::CliError;
use std::cell::RefCell;
use std::fmt;
use std::panic::PanicHookInfo;
use std::sync::Mutex;

/// A panic as the hook saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PanicReport {
    pub message: String,
    /// `file:line:column`.
    pub location: Option<String>,
}

impl fmt::Display for PanicReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(at) = &self.location {
            write!(f, " at {at}")?;
        }
        Ok(())
    }
}

thread_local! {
    /// The last panic on this thread (read back by `main` after `catch_unwind`).
    static THIS_THREAD: RefCell<Option<PanicReport>> = const { RefCell::new(None) };
}

/// The last panic of any thread (for a panic in a blocking task, reported by its join).
static LAST: Mutex<Option<PanicReport>> = Mutex::new(None);

/// The text of a panic payload (`panic!` gives a `&str` or a `String`).
fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

fn report_of(info: &PanicHookInfo<'_>) -> PanicReport {
    PanicReport {
        message: payload_text(info.payload()),
        location: info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column())),
    }
}

/// Whether a panic's message is the standard library's for printing to a closed pipe
/// (`failed printing to stdout: Broken pipe (os error 32)`, from `println!` and friends).
pub(crate) fn is_closed_pipe(message: &str) -> bool {
    (message.starts_with("failed printing to stdout")
        || message.starts_with("failed printing to stderr"))
        && (message.contains("Broken pipe") || message.contains("os error 32"))
}

/// Whether the user asked for Rust's backtrace (`RUST_BACKTRACE` set, and not `0`).
fn backtrace_wanted() -> bool {
    std::env::var_os("RUST_BACKTRACE").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Installs the hook (once, at start-up; a hook installed later calls it).
pub(crate) fn install() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let report = report_of(info);
        let thread = std::thread::current();
        let thread = thread.name().unwrap_or("unnamed");
        let closed_pipe = is_closed_pipe(&report.message);
        if closed_pipe {
            tracing::debug!(thread, "the output pipe was closed by its reader: stopping");
        } else {
            tracing::error!(
                thread,
                location = report.location.as_deref().unwrap_or("unknown"),
                "internal error (a bug in mixseek, please report it): panic: {}",
                report.message
            );
        }
        THIS_THREAD.with(|t| *t.borrow_mut() = Some(report.clone()));
        if let Ok(mut last) = LAST.lock() {
            *last = Some(report);
        }
        if backtrace_wanted() && !closed_pipe {
            default(info);
        }
    }));
}

/// The error a panic on this thread ends the command with: the message and location the
/// hook recorded (else the payload's text).
pub(crate) fn report(payload: &(dyn std::any::Any + Send)) -> CliError {
    let report = THIS_THREAD
        .with(|t| t.borrow_mut().take())
        .unwrap_or_else(|| PanicReport {
            message: payload_text(payload),
            location: None,
        });
    internal_error(&report)
}

fn internal_error(report: &PanicReport) -> CliError {
    if is_closed_pipe(&report.message) {
        return CliError::closed_pipe();
    }
    let mut err = CliError::failure(format!(
        "internal error (a bug in mixseek, please report it): {report}"
    ));
    if !backtrace_wanted() {
        err = err.with_hint(
            "run the command again with RUST_BACKTRACE=1 to add a backtrace to the report",
        );
    }
    err
}

/// The error of a blocking task that did not finish: a panic (reported as an internal error
/// with where it happened) or a cancelled task.
pub(crate) fn join_error(e: &tokio::task::JoinError) -> CliError {
    if e.is_panic() {
        let last = LAST.lock().ok().and_then(|mut l| l.take());
        let report = last.unwrap_or_else(|| PanicReport {
            message: e.to_string(),
            location: None,
        });
        internal_error(&report)
    } else {
        CliError::failure(format!(
            "internal error: a background task was cancelled: {e}"
        ))
    }
}

/// The fault `MIXSEEK_TEST_PANIC` asks for (debug builds only).
#[cfg(debug_assertions)]
fn injected() -> Option<String> {
    std::env::var("MIXSEEK_TEST_PANIC").ok()
}

/// Test-only: with `MIXSEEK_TEST_PANIC=main` (debug builds), panics on the main thread.
pub(crate) fn inject_main_panic() {
    #[cfg(debug_assertions)]
    if injected().as_deref() == Some("main") {
        panic!("injected fault (MIXSEEK_TEST_PANIC=main)");
    }
}

/// Test-only: with `MIXSEEK_TEST_PANIC=team:ID` (debug builds), a display sink that panics
/// when team `ID` starts its round 2 — inside that team's task, as a bug in a sink would.
pub(crate) fn injected_team_fault() -> Option<std::sync::Arc<dyn mixseek_core::EventSink>> {
    #[cfg(debug_assertions)]
    if let Some(team) = injected().and_then(|v| v.strip_prefix("team:").map(str::to_string)) {
        return Some(std::sync::Arc::new(TeamFault { team }));
    }
    None
}

/// See [`injected_team_fault`].
#[cfg(debug_assertions)]
struct TeamFault {
    team: String,
}

#[cfg(debug_assertions)]
#[async_trait::async_trait]
impl mixseek_core::EventSink for TeamFault {
    async fn emit(&self, event: &mixseek_core::Event) -> Result<(), mixseek_core::SinkError> {
        if let mixseek_core::Event::RoundStarted {
            team_id,
            round_number: 2,
            ..
        } = event
            && *team_id == self.team
        {
            panic!("injected fault in team {team_id} (MIXSEEK_TEST_PANIC)");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_the_message_and_the_location() {
        let r = PanicReport {
            message: "index out of bounds".into(),
            location: Some("crates/x/src/y.rs:3:9".into()),
        };
        let e = internal_error(&r);
        assert_eq!(e.exit_code, 1);
        assert_eq!(
            e.message,
            "internal error (a bug in mixseek, please report it): index out of bounds at crates/x/src/y.rs:3:9"
        );
    }

    #[test]
    fn printing_to_a_closed_pipe_is_not_a_bug() {
        for message in [
            "failed printing to stdout: Broken pipe (os error 32)",
            "failed printing to stderr: Broken pipe (os error 32)",
        ] {
            assert!(is_closed_pipe(message), "{message}");
            let e = internal_error(&PanicReport {
                message: message.into(),
                location: Some("library/std/src/io/stdio.rs:1:1".into()),
            });
            assert!(e.closed_pipe && e.exit_code == 0, "{e:?}");
        }
        for message in [
            "failed printing to stdout: No space left on device (os error 28)",
            "called `Result::unwrap()` on an `Err` value: Broken pipe (os error 32)",
        ] {
            assert!(!is_closed_pipe(message), "{message}");
        }
    }

    #[test]
    fn payload_texts() {
        assert_eq!(payload_text(&"a"), "a");
        assert_eq!(payload_text(&String::from("b")), "b");
        assert_eq!(payload_text(&7u8), "(no message)");
    }
}
