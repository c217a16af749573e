//! The store's error type.

use std::path::PathBuf;

/// Everything that can go wrong opening, writing or reading the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No database file yet (read commands before the first `mixseek exec`).
    #[error("no database at {}: nothing has been recorded in this workspace yet", path.display())]
    NotFound { path: PathBuf },

    /// Another process holds DuckDB's file lock.
    #[error("{} is locked by another process{}", path.display(), pid.map(|p| format!(" (PID {p})")).unwrap_or_default())]
    Locked {
        path: PathBuf,
        pid: Option<u32>,
        write: bool,
    },

    /// The file was written by a newer mixseek.
    #[error(
        "{} has schema version {found}, newer than this mixseek supports (up to {supported}); \
         upgrade mixseek to use this workspace",
        path.display()
    )]
    SchemaTooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },

    /// The file is not a mixseek database (or not a DuckDB file at all).
    #[error("cannot open {} as a mixseek database: {message}", path.display())]
    Open { path: PathBuf, message: String },

    #[error("upgrading {} from schema version {from} to {to} failed: {source}", path.display())]
    Migration {
        path: PathBuf,
        from: i64,
        to: i64,
        #[source]
        source: duckdb::Error,
    },

    /// A DuckDB statement failed.
    #[error("{context}: {source}")]
    Db {
        context: String,
        #[source]
        source: duckdb::Error,
    },

    /// Invalid data handed to a writer (fails fast, never retried).
    #[error("{0}")]
    Invalid(String),

    /// An evaluation staged without its transcript whose submission is not stored (its
    /// write failed): the emitter writes the evaluation again with its transcript.
    #[error(
        "the evaluation of round {round_number} of team {team_id} (execution {execution_id}) \
         came without its transcript, but the round's submission is not stored"
    )]
    MissingSubmission {
        execution_id: String,
        team_id: String,
        round_number: i32,
    },

    /// A stored value could not be decoded.
    #[error("unreadable {what} in the database: {message}")]
    Decode { what: String, message: String },

    /// An execution id (or prefix) that matches no execution.
    #[error("no execution matches `{0}`")]
    ExecutionNotFound(String),

    /// An execution id prefix that matches several executions.
    #[error("`{prefix}` matches several executions: {}", candidates.join(", "))]
    AmbiguousExecution {
        prefix: String,
        candidates: Vec<String>,
    },

    /// A write on a store opened read-only.
    #[error("{} was opened read-only", path.display())]
    ReadOnly { path: PathBuf },

    /// The writer thread is gone (it panicked or the store was shut down).
    #[error("the database writer has stopped")]
    WriterStopped,

    /// A configured PII pattern does not compile.
    #[error("privacy.extra_patterns[{index}] (`{name}`): invalid regular expression: {message}")]
    Pattern {
        index: usize,
        name: String,
        message: String,
    },

    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("export failed: {0}")]
    Export(String),
}

impl StoreError {
    pub(crate) fn db(context: impl Into<String>) -> impl FnOnce(duckdb::Error) -> StoreError {
        let context = context.into();
        move |source| StoreError::Db { context, source }
    }

    pub(crate) fn decode(what: impl Into<String>, message: impl std::fmt::Display) -> StoreError {
        StoreError::Decode {
            what: what.into(),
            message: message.to_string(),
        }
    }

    /// What the user can do about it, when there is something to say.
    pub fn hint(&self) -> Option<String> {
        match self {
            StoreError::NotFound { .. } => Some(
                "run an execution first, e.g. `mixseek exec \"your task\" -c orchestrator.toml`; \
                 it creates the database"
                    .to_string(),
            ),
            StoreError::Locked { write: true, .. } => Some(
                "only one process can write to a workspace database at a time: wait for the other \
                 `mixseek exec` (or UI) to finish, or use another workspace with -w/--workspace"
                    .to_string(),
            ),
            StoreError::Locked { write: false, .. } => Some(
                "DuckDB does not let other processes read while a run is writing: wait for the \
                 running `mixseek exec` to finish, or look at its progress output"
                    .to_string(),
            ),
            StoreError::SchemaTooNew { .. } => Some(
                "install the mixseek version that created this workspace, or a newer one"
                    .to_string(),
            ),
            StoreError::AmbiguousExecution { .. } => {
                Some("give more characters of the execution id".to_string())
            }
            StoreError::ExecutionNotFound(_) => {
                Some("`mixseek executions` lists the stored executions".to_string())
            }
            _ => None,
        }
    }

    /// Whether retrying the same write may succeed (I/O and transaction conflicts); constraint,
    /// binder and validation errors fail at once.
    /// DuckDB ran out of the memory its `memory_limit` allows (see [`crate::Store::limit_memory`]).
    pub(crate) fn is_out_of_memory(&self) -> bool {
        match self {
            StoreError::Db { source, .. } => {
                let text = source.to_string();
                [
                    "Out of Memory Error",
                    "failed to pin block",
                    "failed to allocate",
                ]
                .iter()
                .any(|p| text.contains(p))
            }
            _ => false,
        }
    }

    pub(crate) fn is_transient(&self) -> bool {
        match self {
            StoreError::Db { source, .. } => {
                let text = source.to_string();
                let permanent = [
                    "Constraint Error",
                    "Invalid Input Error",
                    "Binder Error",
                    "Parser Error",
                    "Catalog Error",
                    "Conversion Error",
                    "Not implemented",
                ];
                !permanent.iter().any(|p| text.contains(p))
            }
            _ => false,
        }
    }
}

/// `Result` with [`StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
