//! What can stop the UI from starting.

use std::path::PathBuf;

/// The UI could not start.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    /// The address could not be bound (in use, not local, no permission).
    #[error("cannot listen on {addr}")]
    Bind {
        /// `host:port`.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `--host` is not an IP address.
    #[error("`{host}` is not an IP address to listen on")]
    Host {
        /// What was given.
        host: String,
    },
    /// The workspace directory is missing or unreadable.
    #[error("the workspace {path} cannot be used")]
    Workspace {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The server stopped with an I/O error.
    #[error("the web server stopped")]
    Serve(#[source] std::io::Error),
}

impl UiError {
    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            UiError::Bind { .. } => Some(
                "choose another port with --port N (or MIXSEEK_UI__PORT), or stop what listens there"
                    .into(),
            ),
            UiError::Host { .. } => {
                Some("give an IP address, e.g. --host 127.0.0.1 or --host 0.0.0.0".into())
            }
            UiError::Workspace { .. } => Some(
                "create it with `mixseek init -w DIR`, or pass -w DIR (MIXSEEK_UI__WORKSPACE)".into(),
            ),
            UiError::Serve(_) => None,
        }
    }
}
