//! Why an experiment could not run, merge or report.

use mixseek_orchestrator::arena::ArenaError;
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
    /// The arena engine refused or failed (a judge model, the template, the fit, the store).
    #[error(transparent)]
    Arena(#[from] mixseek_orchestrator::arena::ArenaError),
    /// Fewer than two variants have a submission to compare.
    #[error(
        "experiment `{name}`: {} variant(s) with an evaluated round{}: an arena of variants needs at least 2",
        found.len(),
        if found.is_empty() { String::new() } else { format!(" ({})", found.join(", ")) }
    )]
    ArenaTooFewVariants {
        /// The experiment.
        name: String,
        /// The variants that have submissions.
        found: Vec<String>,
        /// Items left out because their execution has not finished.
        unfinished: u32,
        /// Finished items left out because they have no evaluated round.
        unevaluated: u32,
    },
    /// No task and repeat has submissions of two variants.
    #[error(
        "experiment `{name}`: no task and repeat has evaluated submissions of two variants ({}), so no pair can be judged",
        variants.join(", ")
    )]
    ArenaNoCommonTask {
        /// The experiment.
        name: String,
        /// The variants that have submissions.
        variants: Vec<String>,
    },
    /// The arena settings' `anchor` names no variant with submissions.
    #[error("arena anchor `{anchor}` is not a variant with submissions; variants: {}", variants.join(", "))]
    ArenaUnknownAnchor {
        /// The configured anchor.
        anchor: String,
        /// The variants that can be anchored.
        variants: Vec<String>,
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
            ExperimentError::DefinitionChanged { .. }
            | ExperimentError::NotFound { .. }
            | ExperimentError::ArenaTooFewVariants { .. }
            | ExperimentError::ArenaNoCommonTask { .. }
            | ExperimentError::ArenaUnknownAnchor { .. } => true,
            ExperimentError::Arena(e) => match e {
                ArenaError::Store(s) => s.class() == mixseek_store::ErrorClass::BadInput,
                ArenaError::Fit(_) => false,
                _ => true,
            },
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
            ExperimentError::Arena(ArenaError::Store(e)) => e.hint(),
            ExperimentError::Arena(ArenaError::Model { .. }) => Some(
                "set the provider's API key variable, or pass --llm-config with a \
                 [providers.<name>] table"
                    .into(),
            ),
            ExperimentError::Arena(ArenaError::Template(_)) => Some(
                "fix user_template in the arena settings (-c): it may use user_prompt, answer_a \
                 and answer_b"
                    .into(),
            ),
            ExperimentError::Arena(_) => None,
            ExperimentError::ArenaTooFewVariants {
                name,
                unfinished,
                unevaluated,
                ..
            } => Some(format!(
                "left out: {unfinished} item(s) not finished and {unevaluated} without an \
                 evaluated round; run or resume the experiment first (`mixseek experiment run \
                 FILE`), then `mixseek experiment report {name}` shows what each variant has"
            )),
            ExperimentError::ArenaNoCommonTask { .. } => Some(
                "variants are compared on the same task and repeat: run (or resume) the \
                 experiment until the variants have evaluated rounds on common tasks"
                    .into(),
            ),
            ExperimentError::ArenaUnknownAnchor { anchor, variants } => {
                let close = mixseek_config::closest(anchor, variants.iter().map(String::as_str))
                    .map(|c| format!("did you mean `{c}`? "))
                    .unwrap_or_default();
                Some(format!(
                    "{close}set `anchor` in the arena settings to one of the variants, or remove \
                     it to anchor the mean rating"
                ))
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
