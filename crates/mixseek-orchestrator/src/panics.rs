//! A bug in one team's task fails that team, not the run: [`catch`] turns a panic inside a
//! future into an error that says where it happened, so the engine can keep the team's
//! committed rounds and let the other teams finish.
//!
//! Where a panic happened is only known to the panic hook, so [`catch`] installs (once per
//! process) a hook that records the location in a thread-local before calling the hook that
//! was installed before it (the CLI's, which logs it). The future is polled on the thread
//! that panics, so the record is read back on the same thread.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};

thread_local! {
    /// `file:line:column` of the last panic on this thread.
    static LAST_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let at = info
                .location()
                .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
            LAST_LOCATION.with(|l| *l.borrow_mut() = at);
            previous(info);
        }));
    });
}

/// A caught panic: its message and where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Panic {
    pub message: String,
    /// `file:line:column`, when the hook saw it.
    pub location: Option<String>,
}

impl Panic {
    fn from_payload(payload: Box<dyn std::any::Any + Send>) -> Self {
        let message = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "(no message)".to_string()
        };
        Self {
            message,
            location: LAST_LOCATION.with(|l| l.borrow_mut().take()),
        }
    }
}

impl fmt::Display for Panic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(at) => write!(f, "panicked at {at}: {}", self.message),
            None => write!(f, "panicked: {}", self.message),
        }
    }
}

/// Runs `fut`, turning a panic while it is polled into `Err(Panic)`.
pub(crate) fn catch<F: Future>(fut: F) -> CatchPanic<F> {
    install_hook();
    CatchPanic {
        inner: Box::pin(fut),
    }
}

/// The future of [`catch`].
pub(crate) struct CatchPanic<F> {
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for CatchPanic<F> {
    type Output = Result<F::Output, Panic>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.inner.as_mut();
        // A panicked future is never polled again: the caller gets the error and drops it.
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(Panic::from_payload(payload))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_becomes_an_error_with_its_message_and_location() {
        let caught = catch(async {
            tokio::task::yield_now().await;
            let v: Vec<u32> = Vec::new();
            if v.is_empty() {
                panic!("boom {}", 7);
            }
            1
        })
        .await;
        let p = caught.expect_err("the panic is caught");
        assert_eq!(p.message, "boom 7");
        let at = p.location.clone().expect("a location");
        assert!(
            at.starts_with("crates/mixseek-orchestrator/src/panics.rs:"),
            "{at}"
        );
        assert!(p.to_string().starts_with("panicked at crates/"), "{p}");
    }

    #[tokio::test]
    async fn a_future_that_does_not_panic_gives_its_output() {
        assert_eq!(catch(async { 5 }).await, Ok(5));
    }
}
