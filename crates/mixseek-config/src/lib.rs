//! Settings of every mixseek file kind — orchestrator, team (inline and referenced members),
//! member, workflow, evaluator, judgment, prompt builder — plus ours (providers, pricing, cache,
//! privacy, hooks, and experiment files with their task sets): serde types with the original's
//! keys and defaults, layered loading (CLI > env > TOML > defaults), workspace and path
//! resolution, validation that collects every problem, and the preflight checks.
//!
//! Convention for section types: `#[derive(Debug, Clone, PartialEq, Serialize, Deserialize,
//! JsonSchema)]`, `#[serde(default)]` with a `Default` impl giving the documented defaults,
//! a doc comment on every field (it becomes docs/configuration.md), no `deny_unknown_fields`
//! (the loader reports unknown keys with a suggestion), and
//! `fn validate(&self, prefix: &str, issues: &mut Issues)` for range and consistency checks.

#![warn(missing_docs, unreachable_pub)]

mod arena;
mod choice;
mod doc;
mod env;
mod evaluator;
mod experiment;
mod google_credentials;
mod issues;
mod judgment;
mod load;
mod model_id;
mod orchestrator;
mod privacy;
mod prompt_builder;
mod providers;
mod source;
mod team;
mod weights;
mod workflow;
mod workspace;

// The generator of docs/configuration.md: only its test (which compares the file with it)
// uses it.
#[cfg(test)]
mod docs;

// One namespace stays public: the preflight checks (`preflight::run`) and the parts of their
// report (`preflight::Category`, `preflight::Check`, …).
pub mod preflight;

pub use arena::{ArenaSettings, DEFAULT_ARENA_SYSTEM_PROMPT, DEFAULT_ARENA_USER_TEMPLATE};
pub use choice::{
    Aggregate, ArenaSubmission, Direction, Environment, MemberType, MetricType, OnJudgmentError,
    OnMetricError, VerdictFormat,
};
pub use doc::{TomlDoc, deserialize_section};
pub use env::EnvVars;
pub use evaluator::{EvaluatorSettings, LlmDefaultSettings, MetricSettings};
pub use experiment::{
    ExperimentFile, MAX_CONCURRENT_EXECUTIONS, MAX_GRID_EXPANSIONS, MAX_REPEATS, MAX_TASKS, Task,
    Variant, experiment_hash, load_experiment,
};
pub use google_credentials::{
    CREDENTIALS_VAR as GOOGLE_CREDENTIALS_VAR, CredentialsSource as GoogleCredentialsSource,
    GOOGLE_TOKEN_URL, GoogleCredentials, locate as locate_google_credentials,
};
pub use issues::{ConfigIssue, Issues, closest};
pub use judgment::JudgmentSettings;
pub use load::{
    LoadError, LoadReport, LoadedConfig, LoadedTeam, LoadedUnit, LoadedWorkflow, OrchestratorFile,
    Origin, Overrides, Part, UnitEntry, UnitKind, load, load_arena, load_evaluator, load_judgment,
    load_member, load_prompt_builder, load_team, load_workflow,
};
pub use orchestrator::{HookSettings, OrchestratorSettings, TeamEntry};
pub use privacy::PrivacySettings;
pub use prompt_builder::{
    InjectionPhase, InjectionRuleSettings, InjectionSide, InjectionTarget, PromptBuilderSettings,
    is_blank, is_py_whitespace, parse_time_zone,
};
pub use providers::{CacheSettings, Price, ProviderKind, ProviderSettings};
pub use source::{Source, SourceMap};
pub use team::{Instruction, LeaderSettings, MemberSettings, TeamFile, TeamSettings};
pub use weights::resolve_weights;
pub use workflow::{
    DEFAULT_WORKFLOW_MODEL, ExecutorSettings, ExecutorType, FinalOutputFormat, PluginSettings,
    WorkflowFile, WorkflowSettings, WorkflowStep,
};
pub use workspace::{PathError, Workspace, WorkspaceSource};
