//! Why an execution could not run, with its cause chain, a hint, and whether the user's input
//! or the environment is to blame ([`ErrorClass`]: the CLI's exit code follows it).

use mixseek_core::{ExecutionId, SinkError};
use mixseek_store::StoreError;
use std::path::PathBuf;

/// Who can fix a failure: the input (configuration, arguments, an execution id) or the
/// environment the run found (the disk, another process, a server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Bad input: fixing the configuration or the command line fixes it.
    BadInput,
    /// The run could not go on in this environment (disk full, a locked database, …).
    Runtime,
}

/// An execution that could not start or could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum OrchestratorError {
    /// The user prompt is blank.
    #[error("user_prompt cannot be empty")]
    EmptyPrompt,
    /// The workspace directory could not be created.
    #[error("cannot create the workspace {}", path.display())]
    Workspace {
        /// The workspace directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The store could not be opened or read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// `--resume` names no execution of this workspace.
    #[error("execution {id} not found in {}", db.display())]
    ExecutionNotFound {
        /// The id given.
        id: String,
        /// The database searched.
        db: PathBuf,
    },
    /// `--resume` names an execution that already finished.
    #[error("execution {id} already finished (status {status})")]
    AlreadyFinished {
        /// The execution.
        id: String,
        /// Its stored status.
        status: String,
    },
    /// A new execution was given an id (`exec --execution-id`) that is already stored.
    #[error("execution {id} already exists")]
    ExecutionExists {
        /// The execution.
        id: String,
    },
    /// `--resume` without `--force` on an execution whose configuration changed.
    #[error("the configuration changed since execution {id} started")]
    ConfigChanged {
        /// The execution.
        id: String,
    },
    /// A part of the run could not be built from the configuration.
    #[error("cannot set up {what}")]
    Setup {
        /// What could not be built.
        what: &'static str,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The store refused the execution's start (nothing was recorded).
    #[error("cannot record {what}")]
    Record {
        /// What could not be recorded.
        what: &'static str,
        /// The store's refusal.
        #[source]
        source: SinkError,
    },
    /// The summary could not be masked for printing (a bug: the run's data is stored).
    #[error(
        "internal error (a bug in mixseek, please report it): cannot mask the execution summary"
    )]
    Mask {
        /// The serialization error.
        #[source]
        source: serde_json::Error,
    },
    /// The store could not record part of a running execution (disk full, a read-only file
    /// system, a database that failed): every team was stopped; the rounds committed before
    /// are kept and `mixseek exec --resume` continues the execution.
    #[error("execution {execution_id} stopped: cannot record {what}")]
    Stopped {
        /// The execution, to resume.
        execution_id: ExecutionId,
        /// What could not be recorded.
        what: String,
        /// The store's refusal.
        #[source]
        source: SinkError,
    },
}

impl OrchestratorError {
    /// Who can fix it.
    pub fn class(&self) -> ErrorClass {
        match self {
            OrchestratorError::EmptyPrompt
            | OrchestratorError::ExecutionNotFound { .. }
            | OrchestratorError::AlreadyFinished { .. }
            | OrchestratorError::ExecutionExists { .. }
            | OrchestratorError::ConfigChanged { .. }
            | OrchestratorError::Setup { .. } => ErrorClass::BadInput,
            OrchestratorError::Store(e) => store_class(e),
            OrchestratorError::Workspace { .. }
            | OrchestratorError::Record { .. }
            | OrchestratorError::Mask { .. }
            | OrchestratorError::Stopped { .. } => ErrorClass::Runtime,
        }
    }

    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            OrchestratorError::EmptyPrompt => {
                Some("give the task as the PROMPT argument, `-` for stdin, or --prompt-file".into())
            }
            OrchestratorError::Workspace { .. } => Some(
                "check that the directory can be created and written (permissions, free space), or choose another with -w".into(),
            ),
            OrchestratorError::Store(e) => e.hint(),
            OrchestratorError::ExecutionNotFound { .. } => {
                Some("list this workspace's executions with `mixseek executions`".into())
            }
            OrchestratorError::AlreadyFinished { id, .. } => {
                Some(format!("show it with `mixseek show {id}`"))
            }
            OrchestratorError::ExecutionExists { id } => Some(format!(
                "give a new id, or continue it with `mixseek exec --resume {id}`"
            )),
            OrchestratorError::ConfigChanged { .. } => Some(
                "resume with the configuration it started with, or add --force to continue with this one".into(),
            ),
            OrchestratorError::Setup { .. } => None,
            OrchestratorError::Mask { .. } => {
                Some("its results are stored: read them with `mixseek leaderboard`".into())
            }
            OrchestratorError::Record { source, .. } => Some(
                source
                    .find::<StoreError>()
                    .and_then(StoreError::hint)
                    .unwrap_or_else(|| {
                        "check the workspace's disk space and permissions".to_string()
                    }),
            ),
            OrchestratorError::Stopped {
                execution_id,
                source,
                ..
            } => {
                let cause = source
                    .find::<StoreError>()
                    .and_then(StoreError::hint)
                    .unwrap_or_else(|| {
                        "check that the disk has free space and that the workspace folder and \
                         mixseek.db are writable"
                            .to_string()
                    });
                Some(format!(
                    "{cause}. Once that is fixed, `mixseek exec --resume {execution_id}` \
                     continues the execution from its committed rounds"
                ))
            }
        }
    }

    /// The execution a failure left resumable (`mixseek exec --resume ID`), if any.
    pub fn resumable_execution(&self) -> Option<&ExecutionId> {
        match self {
            OrchestratorError::Stopped { execution_id, .. } => Some(execution_id),
            _ => None,
        }
    }
}

fn store_class(e: &StoreError) -> ErrorClass {
    match e.class() {
        mixseek_store::ErrorClass::BadInput => ErrorClass::BadInput,
        _ => ErrorClass::Runtime,
    }
}
