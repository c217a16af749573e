//! Why an experiment could not run, merge or report.

use mixseek_store::StoreError;
use std::path::PathBuf;

/// An experiment that could not go on.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// The database could not be opened, read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The experiment is stored with another definition (task set, variants, repeats).
    #[error("experiment `{name}` in {} was run with another definition", db.display())]
    DefinitionChanged {
        /// The experiment's name.
        name: String,
        /// The database.
        db: PathBuf,
    },
    /// No experiment of this name in the database.
    #[error("no experiment `{name}` in {}", db.display())]
    NotFound {
        /// The name given.
        name: String,
        /// The database.
        db: PathBuf,
        /// The experiments it has.
        known: Vec<String>,
    },
    /// An execution stopped because the environment failed (the disk, the database): the
    /// experiment stops, every item stays resumable.
    #[error("the experiment stopped at {item}")]
    Execution {
        /// The item (task, variant, repeat).
        item: String,
        /// The execution's error.
        #[source]
        source: Box<mixseek_orchestrator::OrchestratorError>,
    },
}

impl ExperimentError {
    /// Whether the input is to blame (exit 2) rather than the environment (exit 1).
    pub fn is_bad_input(&self) -> bool {
        match self {
            ExperimentError::Store(e) => e.class() == mixseek_store::ErrorClass::BadInput,
            ExperimentError::DefinitionChanged { .. } | ExperimentError::NotFound { .. } => true,
            ExperimentError::Execution { .. } => false,
        }
    }

    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            ExperimentError::Store(e) => e.hint(),
            ExperimentError::DefinitionChanged { name, .. } => Some(format!(
                "the task set, the variants or the repeats changed since `{name}` first ran: \
                 give the changed experiment another name, or add --force to go on with this \
                 definition (finished items whose task, variant and repeat still exist are kept)"
            )),
            ExperimentError::NotFound { known, .. } if known.is_empty() => Some(
                "this database has no experiment: run one with `mixseek experiment run FILE`, \
                 or name the database with --db"
                    .into(),
            ),
            ExperimentError::NotFound { name, known, .. } => {
                let close = mixseek_config::closest(name, known.iter().map(String::as_str))
                    .map(|c| format!("did you mean `{c}`? "))
                    .unwrap_or_default();
                Some(format!("{close}experiments here: {}", known.join(", ")))
            }
            ExperimentError::Execution { source, .. } => {
                let cause = source.hint().unwrap_or_default();
                Some(format!(
                    "{cause}{}rerun the same `mixseek experiment run` command to go on: finished \
                     items are kept, the others are resumed",
                    if cause.is_empty() { "" } else { ". Then " }
                ))
            }
        }
    }
}

/// An error and its causes, one line (`a: b: c`).
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}
