//! Reads of the workspace database: opened read-only for one read on the blocking pool, then
//! closed (the last `Store` handle of the process closes the file), so the UI never keeps
//! `mixseek exec` from opening it.

use mixseek_store::{Store, StoreError};
use std::path::PathBuf;

/// Why a page could not read what it shows.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// A run (this UI's or another process's) is writing the file.
    Busy {
        /// The process holding the lock, when DuckDB names it.
        pid: Option<u32>,
    },
    /// There is no database yet (no run has been stored in this workspace).
    NoDatabase,
    /// The execution (or team) does not exist.
    NotFound(String),
    /// Anything else, as the store says it.
    Failed(String),
}

impl From<StoreError> for ReadError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Locked { pid, .. } => ReadError::Busy { pid },
            StoreError::NotFound { .. } => ReadError::NoDatabase,
            StoreError::ExecutionNotFound(id) => {
                ReadError::NotFound(format!("no execution {id} in this workspace"))
            }
            other => {
                let mut text = other.to_string();
                let mut src = std::error::Error::source(&other);
                while let Some(s) = src {
                    text.push_str(": ");
                    text.push_str(&s.to_string());
                    src = s.source();
                }
                ReadError::Failed(text)
            }
        }
    }
}

/// Runs `f` on the database opened read-only, on tokio's blocking pool.
pub(crate) async fn read<T, F>(db: PathBuf, f: F) -> Result<T, ReadError>
where
    T: Send + 'static,
    F: FnOnce(&Store) -> Result<T, ReadError> + Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        let store = Store::open_read_only(&db)?;
        f(&store)
    })
    .await
    .map_err(|e| ReadError::Failed(format!("the read stopped: {e}")))?
}
