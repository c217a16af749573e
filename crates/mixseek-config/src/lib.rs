//! Settings of every mixseek file kind — orchestrator, team (inline and referenced members),
//! member, evaluator, judgment, prompt builder — plus ours (providers, pricing, cache, privacy,
//! hooks): serde types with the original's keys and defaults, layered loading (CLI > env >
//! TOML > defaults), workspace and path resolution, validation that collects every problem,
//! and the preflight checks.
//!
//! Convention for section types: `#[derive(Debug, Clone, PartialEq, Serialize, Deserialize,
//! JsonSchema)]`, `#[serde(default)]` with a `Default` impl giving the documented defaults,
//! a doc comment on every field (it becomes docs/configuration.md), no `deny_unknown_fields`
//! (the loader reports unknown keys with a suggestion), and
//! `fn validate(&self, prefix: &str, issues: &mut Issues)` for range and consistency checks.

pub mod choice;
pub mod issues;
pub mod privacy;
pub mod prompt_builder;
pub mod providers;

pub use issues::{ConfigIssue, Issues, closest};
pub mod doc;
pub mod env;
pub mod evaluator;
pub mod judgment;
pub mod load;
pub mod model_id;
pub mod orchestrator;
pub mod source;
pub mod team;
pub mod workspace;

pub use choice::{
    Aggregate, Environment, HookEvent, MemberType, MetricType, OnJudgmentError, OnMetricError,
};
pub use env::EnvVars;
pub use evaluator::{EvaluatorSettings, LlmDefaultSettings, MetricSettings};
pub use judgment::JudgmentSettings;
pub use load::{
    LoadError, LoadReport, LoadedConfig, LoadedTeam, OrchestratorFile, Origin, Overrides, Part,
    load,
};
pub use model_id::{Credential, ModelId, ModelIdError};
pub use orchestrator::{HookSettings, OrchestratorSettings, TeamEntry};
pub use source::{Source, SourceMap};
pub use team::{Instruction, LeaderSettings, MemberSettings, TeamSettings};
pub use workspace::{PathError, Workspace, WorkspaceSource};
pub mod preflight;
pub use preflight::{CheckStatus, PreflightReport};
pub mod docs;
pub mod weights;
