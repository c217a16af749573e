//! The store's error type.

use std::path::PathBuf;

/// Everything that can go wrong opening, writing or reading the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No database file yet (read commands before the first `mixseek exec`).
    #[error("no database at {}: nothing has been recorded in this workspace yet", path.display())]
    NotFound {
        /// Where the database file was looked for.
        path: PathBuf,
    },

    /// Another process holds DuckDB's file lock.
    #[error(
        "the database file {} is in use by another process{}",
        path.display(),
        pid.map(|p| format!(" (PID {p})")).unwrap_or_default()
    )]
    Locked {
        /// The database file.
        path: PathBuf,
        /// The process holding the lock, when DuckDB's message names it.
        pid: Option<u32>,
        /// Whether this open wanted to write ([`Store::open`](crate::Store::open)) rather than
        /// read ([`Store::open_read_only`](crate::Store::open_read_only)); it picks the hint.
        write: bool,
        /// DuckDB's own error (it names the holder's program).
        #[source]
        source: Option<DuckDbError>,
    },

    /// The file was written by a newer mixseek.
    #[error(
        "{} has schema version {found}, newer than this mixseek supports (up to {supported}); \
         upgrade mixseek to use this workspace",
        path.display()
    )]
    SchemaTooNew {
        /// The database file.
        path: PathBuf,
        /// The schema version the file records.
        found: i64,
        /// The newest version this build knows ([`SCHEMA_VERSION`](crate::SCHEMA_VERSION)).
        supported: i64,
    },

    /// DuckDB could not open the file for another reason (the message says which: e.g. a
    /// permission or a read-only file system; see [`StoreError::class`]).
    #[error("cannot open the database {}: {message}", path.display())]
    Open {
        /// The database file.
        path: PathBuf,
        /// What went wrong (DuckDB's message, or ours when DuckDB gave none).
        message: String,
        /// DuckDB's error, when it gave one (`message` is its text).
        #[source]
        source: Option<DuckDbError>,
    },

    /// The file is not a DuckDB database at all (random bytes, a text file), or a damaged one
    /// (truncated, corrupted blocks).
    #[error("{} is not a mixseek database (not a readable DuckDB file): {detail}", path.display())]
    NotADatabase {
        /// The file.
        path: PathBuf,
        /// DuckDB's message, or `the file is empty (0 bytes)`.
        detail: String,
        /// DuckDB's error, when it gave one.
        #[source]
        source: Option<DuckDbError>,
    },

    /// A DuckDB file whose tables are not mixseek's (another program's database, or one of
    /// our tables with other columns).
    #[error("{} is a DuckDB database, but not a mixseek one: {problem}", path.display())]
    ForeignSchema {
        /// The database file.
        path: PathBuf,
        /// What is not mixseek's (e.g. a missing table or column).
        problem: String,
    },

    /// Something other than a file (a directory) is where the database file should be.
    #[error("{} is a directory, not a database file", path.display())]
    NotAFile {
        /// The path where the database file should be.
        path: PathBuf,
    },

    /// The copy of an old file made before upgrading it could not be written (the file was
    /// not upgraded).
    #[error(
        "cannot back up {} to {} before upgrading its schema (the file was left as it is): {source}",
        path.display(),
        backup.display()
    )]
    Backup {
        /// The database file (left as it was).
        path: PathBuf,
        /// The backup file that could not be written (`mixseek.db.v<N>.bak`, …).
        backup: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// Creating the schema, or upgrading an older one, failed. It runs in one transaction: the
    /// file is left at its old version (an older file's backup, made before, stays beside it).
    #[error("upgrading {} from schema version {from} to {to} failed: {source}", path.display())]
    Migration {
        /// The database file.
        path: PathBuf,
        /// The schema version the file had (0: none yet; 1: the original Python MixSeek's).
        from: i64,
        /// The version the upgrade was writing.
        to: i64,
        /// The statement's error.
        #[source]
        source: DuckDbError,
    },

    /// A DuckDB statement failed.
    #[error("{context}: {source}")]
    Db {
        /// What the store was doing (`writing round_status`, `reading the ranking`, …).
        context: String,
        /// DuckDB's error.
        #[source]
        source: DuckDbError,
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
        /// The round's execution.
        execution_id: String,
        /// The round's team.
        team_id: String,
        /// The round's number.
        round_number: i32,
    },

    /// A stored value could not be decoded.
    #[error("unreadable {what} in the database: {message}")]
    Decode {
        /// The column that could not be read (`table.column`).
        what: String,
        /// Why (the decoder's message).
        message: String,
    },

    /// An execution id (or prefix) that matches no execution.
    #[error("no execution matches `{0}`")]
    ExecutionNotFound(String),

    /// An execution id prefix that matches several executions.
    #[error("`{prefix}` matches several executions: {}", candidates.join(", "))]
    AmbiguousExecution {
        /// The prefix as given (trimmed).
        prefix: String,
        /// The first execution ids it matches (at most 11), sorted.
        candidates: Vec<String>,
    },

    /// A database file cannot be merged into another (`mixseek experiment merge`).
    #[error("cannot merge {}: {problem}", path.display())]
    Merge {
        /// The file being merged.
        path: PathBuf,
        /// Why (another schema version, the output itself, an experiment defined otherwise).
        problem: String,
        /// What to do about it.
        hint: String,
    },

    /// A write on a store opened read-only.
    #[error("{} was opened read-only", path.display())]
    ReadOnly {
        /// The database file.
        path: PathBuf,
    },

    /// The writer thread is gone (it panicked or the store was shut down).
    #[error("the database writer has stopped")]
    WriterStopped,

    /// A `[privacy]` setting (a PII detector or pattern) cannot be used.
    #[error(transparent)]
    Pii(#[from] mixseek_core::PiiError),

    /// An operating-system error outside DuckDB (creating the database's folder, starting the
    /// writer thread).
    #[error("{}: {source}", path.display())]
    Io {
        /// The folder, or the database file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// Formatting a report's CSV or JSON failed, or a blocking read run by an `*_async` method
    /// did not finish (its task panicked or was cancelled); the message says which.
    #[error("export failed: {0}")]
    Export(String),

    /// An export's output file or folder could not be written (a full disk, a read-only
    /// folder): the operating system's error, possibly inside the encoder's, is the source.
    #[error("cannot write the export {}: {source}", path.display())]
    ExportFile {
        /// The output file or folder.
        path: PathBuf,
        /// The error; its chain leads to the operating system's.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// DuckDB's error as the cause of a [`StoreError`]. Its message says everything; the
/// `duckdb::Error`'s own source, the C API's generic `Error code 1: Unknown error code`, is
/// left out of the chain that users see.
#[derive(Debug)]
pub struct DuckDbError(pub duckdb::Error);

impl std::fmt::Display for DuckDbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for DuckDbError {}

impl From<duckdb::Error> for DuckDbError {
    fn from(e: duckdb::Error) -> Self {
        Self(e)
    }
}

/// What kind of failure a [`StoreError`] is, for callers that react differently (the CLI's
/// exit code and hint).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The input is wrong: no database yet, a file that is not a (mixseek) database, a schema
    /// newer than this build, an unknown execution, invalid data. Retrying will not help.
    BadInput,
    /// Another process holds the database file: retrying later may work.
    Busy,
    /// The operating system refused: disk full, read-only file system, permission denied.
    Io,
    /// Anything else (a bug, DuckDB failing internally).
    Internal,
}

/// The class of a DuckDB error message (DuckDB's errors carry their kind only as text:
/// `IO Error: …`, `INTERNAL Error: …`).
pub(crate) fn class_of_message(text: &str) -> ErrorClass {
    const BUSY: [&str; 2] = ["Could not set lock", "Conflicting lock"];
    const NOT_A_DATABASE: [&str; 4] = [
        "not a valid DuckDB database file",
        "Corrupt database file",
        "Could not read enough bytes",
        "database file is too small",
    ];
    const IO: [&str; 7] = [
        "No space left on device",
        "Read-only file system",
        "Permission denied",
        "Disk quota exceeded",
        "File too large",
        "Input/output error",
        "IO Error",
    ];
    if BUSY.iter().any(|p| text.contains(p)) {
        ErrorClass::Busy
    } else if NOT_A_DATABASE.iter().any(|p| text.contains(p)) {
        ErrorClass::BadInput
    } else if IO.iter().any(|p| text.contains(p)) {
        ErrorClass::Io
    } else {
        ErrorClass::Internal
    }
}

impl StoreError {
    /// The kind of failure (see [`ErrorClass`]).
    pub fn class(&self) -> ErrorClass {
        match self {
            StoreError::NotFound { .. }
            | StoreError::SchemaTooNew { .. }
            | StoreError::NotADatabase { .. }
            | StoreError::ForeignSchema { .. }
            | StoreError::NotAFile { .. }
            | StoreError::Invalid(_)
            | StoreError::Decode { .. }
            | StoreError::ExecutionNotFound(_)
            | StoreError::AmbiguousExecution { .. }
            | StoreError::Merge { .. }
            | StoreError::Pii(_) => ErrorClass::BadInput,
            StoreError::Locked { .. } => ErrorClass::Busy,
            StoreError::Io { .. }
            | StoreError::Backup { .. }
            | StoreError::Export(_)
            | StoreError::ExportFile { .. } => ErrorClass::Io,
            StoreError::Open { message, .. } => class_of_message(message),
            StoreError::Migration { source, .. } | StoreError::Db { source, .. } => {
                class_of_message(&source.to_string())
            }
            StoreError::MissingSubmission { .. }
            | StoreError::ReadOnly { .. }
            | StoreError::WriterStopped => ErrorClass::Internal,
        }
    }

    pub(crate) fn db(context: impl Into<String>) -> impl FnOnce(duckdb::Error) -> StoreError {
        let context = context.into();
        move |source| StoreError::Db {
            context,
            source: DuckDbError(source),
        }
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
            StoreError::NotADatabase { path, .. } => Some(format!(
                "move {} out of the way (mixseek then starts a new database there), or restore \
                 a backup: an upgrade leaves the previous file beside it as `{}.v<N>.bak`",
                path.display(),
                path.file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default()
            )),
            StoreError::ForeignSchema { .. } => Some(
                "this file was not written by mixseek: point -w/--workspace at a mixseek \
                 workspace, or move the file out of the way"
                    .to_string(),
            ),
            StoreError::Merge { hint, .. } => Some(hint.clone()),
            StoreError::NotAFile { .. } => Some(
                "remove or rename the directory; mixseek creates the database file there"
                    .to_string(),
            ),
            StoreError::Backup { .. } => Some(
                "free some disk space (the backup is a full copy of the file) or make the \
                 workspace folder writable, then run the command again"
                    .to_string(),
            ),
            StoreError::ExportFile { .. } => Some(
                "check the free space and the permissions where the export goes, or write it \
                 elsewhere with -o"
                    .to_string(),
            ),
            e if e.class() == ErrorClass::Io => Some(
                "check that the disk has free space and that the workspace folder and \
                 mixseek.db are writable; the rounds committed before are kept"
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

    /// The database refused a second row of a key (PRIMARY KEY or UNIQUE).
    pub(crate) fn is_duplicate_key(&self) -> bool {
        match self {
            StoreError::Db { source, .. } => {
                let text = source.to_string();
                text.contains("Constraint Error") && text.contains("Duplicate key")
            }
            _ => false,
        }
    }

    /// Whether retrying the same write may succeed (I/O and transaction conflicts); constraint,
    /// binder and validation errors fail at once.
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
