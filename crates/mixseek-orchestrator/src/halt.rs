//! A store that cannot record stops the whole execution: when the disk is full, the file
//! system read-only or the database file broken, every other team would fail the same way at
//! its next commit, and recording them as failed would keep `--resume` from continuing them.
//! The first refusal cancels every team at once (like Ctrl-C, nothing more is written); the
//! run returns [`crate::OrchestratorError::Stopped`] with that refusal as its cause, and the
//! execution stays resumable with the rounds committed before.

use mixseek_core::SinkError;
use mixseek_store::{ErrorClass, StoreError};
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// The run's stop switch for store failures.
pub(crate) struct Halt {
    /// Cancelled by the caller's token (Ctrl-C) or by [`Halt::stop`].
    token: CancellationToken,
    first: Mutex<Option<(String, SinkError)>>,
}

impl Halt {
    /// A switch that the caller's `cancel` (Ctrl-C) also trips.
    pub(crate) fn new(cancel: &CancellationToken) -> Self {
        Self {
            token: cancel.child_token(),
            first: Mutex::new(None),
        }
    }

    /// What the teams watch: cancelled on Ctrl-C and on a store failure.
    pub(crate) fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Whether the store's refusal `e` stops the run: when the environment refused (I/O,
    /// another process) or the database failed (an internal error, a writer that stopped).
    /// Invalid data handed to the store (a bad input) fails only the team that sent it.
    pub(crate) fn stops_the_run(e: &SinkError) -> bool {
        e.find::<StoreError>()
            .is_none_or(|s| s.class() != ErrorClass::BadInput)
    }

    /// Stops every team because recording `what` failed; the first failure is the one
    /// reported.
    pub(crate) fn stop(&self, what: String, source: SinkError) {
        tracing::error!(error = %source, "cannot record {what}; stopping the execution");
        if let Ok(mut first) = self.first.lock()
            && first.is_none()
        {
            *first = Some((what, source));
        }
        self.token.cancel();
    }

    /// The failure that stopped the run, if one did.
    pub(crate) fn take(&self) -> Option<(String, SinkError)> {
        self.first.lock().ok().and_then(|mut f| f.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn the_first_failure_is_kept_and_every_team_is_cancelled() {
        let ctrl_c = CancellationToken::new();
        let halt = Halt::new(&ctrl_c);
        let io = StoreError::Io {
            path: PathBuf::from("/ws/mixseek.db"),
            source: std::io::Error::other("No space left on device"),
        };
        let e = SinkError::new("store", io);
        assert!(Halt::stops_the_run(&e));
        halt.stop("round 2 of team `a`".into(), e);
        halt.stop(
            "round 1 of team `b`".into(),
            SinkError::message("store", "later"),
        );
        assert!(halt.token().is_cancelled());
        assert!(!ctrl_c.is_cancelled(), "not an interrupt");
        let (what, _) = halt.take().expect("stopped");
        assert_eq!(what, "round 2 of team `a`");
    }

    #[test]
    fn invalid_data_fails_one_team_only() {
        let e = SinkError::new("store", StoreError::Invalid("a NaN score".into()));
        assert!(!Halt::stops_the_run(&e));
    }

    #[test]
    fn ctrl_c_also_stops_the_teams() {
        let ctrl_c = CancellationToken::new();
        let halt = Halt::new(&ctrl_c);
        ctrl_c.cancel();
        assert!(halt.token().is_cancelled());
        assert!(halt.take().is_none());
    }
}
