//! Experiments: a task set × configuration variants × repeats, each item an ordinary execution
//! in the store tagged with its experiment, task, variant and repeat (`experiment_items`).
//! This crate owns turning an experiment file (loaded by mixseek-config) into executions and
//! running them concurrently and resumably (`run.rs`: [`Runner`]), the stable split of the
//! items into shards for other machines (`shard.rs`: [`Shard`]), the manifests that run the
//! shards on a scheduler (`plan.rs`: Kubernetes Indexed Jobs, Slurm job arrays) and the report
//! with bootstrap intervals and paired comparisons (`report.rs`), and the arena of the
//! variants judged pairwise over the tasks (`arena.rs`). Merging the shards' database
//! files is mixseek-store's (`merge.rs`); the statistics are mixseek-judging's (`stats.rs`).
//!
//! **Does not:** print, parse command lines or load configuration files (the CLI does, with
//! its preflight checks, and hands over [`LoadedVariant`]s).

pub mod arena;
mod error;
pub mod plan;
pub mod report;
mod run;
mod shard;

pub use error::ExperimentError;
pub use run::{
    LoadedVariant, MAX_REPORTED_FAILURES, Outcome, Progress, ProgressFn, Runner, definition,
};
pub use shard::{SHARD_VARIABLES, Shard, ShardError};
