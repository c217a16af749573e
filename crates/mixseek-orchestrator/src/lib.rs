//! mixseek-orchestrator runs an execution: every team of a configuration as its own task (at
//! most `max_concurrent_teams` at once), each under its team timeout, retried from its last
//! completed round after transient failures, keeping partial results; budgets, resume after
//! a crash, interrupts; and the one event stream that feeds the DuckDB store writer, progress
//! files, hooks and the caller's progress display. It returns the `ExecutionSummary`.
//!
//! It also holds the two engines that work on stored executions: [`arena`] (the teams'
//! submissions judged pairwise and rated) and [`themes`] (what the judges' comments keep
//! criticising or praising, `mixseek analyze`).
//!
//! ```no_run
//! # async fn demo(config: mixseek_config::LoadedConfig) -> Result<(), mixseek_orchestrator::OrchestratorError> {
//! use mixseek_orchestrator::{Orchestrator, RunOptions};
//! let summary = Orchestrator::new(config).run(RunOptions::new("Write a haiku")).await?;
//! println!("best: {:?}", summary.best_team_id);
//! # Ok(()) }
//! ```

#![warn(missing_docs, unreachable_pub)]

pub mod arena;
mod budget;
mod bus;
mod engine;
mod error;
mod halt;
mod hooks;
mod open_files;
mod panics;
mod progress_files;
mod ranking;
mod resume;
pub mod themes;

pub use bus::EventBus;
pub use engine::{Orchestrator, RunOptions};
pub use error::{ErrorClass, OrchestratorError};
