//! mixseek-orchestrator runs an execution: every team of a configuration as its own task (at
//! most `max_concurrent_teams` at once), each under its team timeout, retried from its last
//! completed round after transient failures, keeping partial results; budgets, resume after
//! a crash, interrupts; and the one event stream that feeds the DuckDB store writer, progress
//! files, hooks and the caller's progress display. It returns the `ExecutionSummary`.
//!
//! ```no_run
//! # async fn demo(config: mixseek_config::LoadedConfig) -> Result<(), mixseek_orchestrator::OrchestratorError> {
//! use mixseek_orchestrator::{Orchestrator, RunOptions};
//! let summary = Orchestrator::new(config).run(RunOptions::new("Write a haiku")).await?;
//! println!("best: {:?}", summary.best_team_id);
//! # Ok(()) }
//! ```

pub mod budget;
pub mod bus;
pub mod engine;
mod error;
mod halt;
pub mod hooks;
mod panics;
pub mod progress_files;
pub mod ranking;
pub mod resume;

pub use budget::Budget;
pub use bus::EventBus;
pub use engine::{Orchestrator, RunOptions, config_hash};
pub use error::{ErrorClass, OrchestratorError};
pub use ranking::LiveRanking;
