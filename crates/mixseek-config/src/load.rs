//! Loading a whole configuration: the orchestrator file, its teams (with referenced member
//! files), the evaluator, judgment and prompt-builder settings, and our top-level tables —
//! each part with its own problems, so preflight can report every category at once.
//!
//! Layering, highest first: CLI overrides > `MIXSEEK_*` environment > TOML > defaults. We use
//! our own loader rather than the `config` crate because it loses positions (no file:line for
//! a wrong type), lower-cases keys, and silently ignores misspelt environment variables — all
//! things this tool promises to report.

use crate::arena::{ArenaFile, ArenaSettings};
use crate::doc::{TomlDoc, deserialize_section};
use crate::env::{Applied, EnvVars, is_orchestrator_var, overlay};
use crate::evaluator::EvaluatorSettings;
use crate::issues::{ConfigIssue, Issues};
use crate::judgment::JudgmentSettings;
use crate::orchestrator::{HookSettings, OrchestratorSettings};
use crate::privacy::PrivacySettings;
use crate::prompt_builder::PromptBuilderSettings;
use crate::providers::{CacheSettings, Price, ProviderSettings};
use crate::source::{Source, SourceMap};
use crate::team::{MemberFile, MemberSettings, TeamFile, TeamSettings};
use crate::workflow::{WorkflowFile, WorkflowSettings, soften_unknown_workflow_keys};
use crate::workspace::Workspace;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// Values given on the command line.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `exec --timeout`.
    pub timeout_per_team_seconds: Option<u64>,
}

/// The whole orchestrator TOML: `[orchestrator]` plus our optional top-level tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(default)]
pub struct OrchestratorFile {
    /// The competition.
    pub orchestrator: OrchestratorSettings,
    /// Prompt templates and injection rules (instead of a separate prompt_builder file).
    pub prompt_builder: Option<PromptBuilderSettings>,
    /// LLM providers: endpoints, key variables, limits.
    pub providers: BTreeMap<String, ProviderSettings>,
    /// Prices per million tokens, keyed by `provider:model`.
    pub pricing: BTreeMap<String, Price>,
    /// The response cache.
    pub cache: CacheSettings,
    /// PII masking of what is stored.
    pub privacy: PrivacySettings,
    /// Commands or URLs notified of run events.
    pub hooks: Vec<HookSettings>,
}

/// Where a settings part came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A path given in the orchestrator file (`evaluator_config = ...`).
    Explicit(PathBuf),
    /// `WORKSPACE/configs/<kind>.toml`.
    Workspace(PathBuf),
    /// A table inside the orchestrator file.
    Inline(PathBuf),
    /// Built-in defaults.
    BuiltIn,
}

impl Origin {
    /// The file it came from (none for built-in defaults).
    pub fn file(&self) -> Option<&Path> {
        match self {
            Origin::Explicit(p) | Origin::Workspace(p) | Origin::Inline(p) => Some(p),
            Origin::BuiltIn => None,
        }
    }
}

/// One loaded part: its value (None when it could not be loaded), errors and warnings.
#[derive(Debug, Clone)]
pub struct Part<T> {
    /// Where it came from.
    pub origin: Origin,
    /// The settings, when they could be loaded.
    pub value: Option<T>,
    /// Problems that stop the run.
    pub errors: Issues,
    /// Problems reported and ignored.
    pub warnings: Issues,
}

impl<T> Part<T> {
    /// Loaded without errors.
    pub fn ok(&self) -> bool {
        self.value.is_some() && self.errors.is_empty()
    }

    /// The same part with its value converted.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Part<U> {
        Part {
            origin: self.origin,
            value: self.value.map(f),
            errors: self.errors,
            warnings: self.warnings,
        }
    }

    /// The built-in defaults, not loaded (the orchestrator file could not be read).
    fn built_in() -> Self {
        Self {
            origin: Origin::BuiltIn,
            value: None,
            errors: Issues::default(),
            warnings: Issues::default(),
        }
    }

    /// A part whose file could not be found: `issue` says why.
    fn failed(issue: ConfigIssue) -> Self {
        let mut part = Self::built_in();
        part.errors.push(issue);
        part
    }
}

/// A team with its members resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedTeam {
    /// The path as written in `[[orchestrator.teams]]`.
    pub entry: String,
    /// The team file.
    pub file: PathBuf,
    /// The team's settings, referenced members resolved.
    pub settings: TeamSettings,
    /// For each member, the member file it came from (reference form).
    pub member_files: Vec<Option<PathBuf>>,
}

/// A workflow file, loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedWorkflow {
    /// The path as written in `[[orchestrator.teams]]`.
    pub entry: String,
    /// The workflow file.
    pub file: PathBuf,
    /// The workflow's settings.
    pub settings: WorkflowSettings,
}

/// What a `[[orchestrator.teams]]` entry names: a team (leader and members) or a workflow
/// (fixed steps). Both play rounds and share the leaderboard; a workflow's `workflow_id` and
/// `workflow_name` are its team id and name everywhere.
// A handful per run, loaded once: the size difference costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum LoadedUnit {
    /// A team file (`[team]`).
    Team(LoadedTeam),
    /// A workflow file (`[workflow]`).
    Workflow(LoadedWorkflow),
}

impl LoadedUnit {
    /// The unit's team id (a workflow's `workflow_id`).
    pub fn id(&self) -> &mixseek_core::TeamId {
        match self {
            LoadedUnit::Team(t) => &t.settings.team_id,
            LoadedUnit::Workflow(w) => &w.settings.workflow_id,
        }
    }
    /// The unit's display name (a workflow's `workflow_name`).
    pub fn name(&self) -> &str {
        match self {
            LoadedUnit::Team(t) => &t.settings.team_name,
            LoadedUnit::Workflow(w) => &w.settings.workflow_name,
        }
    }
    /// The path as written in `[[orchestrator.teams]]`.
    pub fn entry(&self) -> &str {
        match self {
            LoadedUnit::Team(t) => &t.entry,
            LoadedUnit::Workflow(w) => &w.entry,
        }
    }
    /// The unit's file.
    pub fn file(&self) -> &Path {
        match self {
            LoadedUnit::Team(t) => &t.file,
            LoadedUnit::Workflow(w) => &w.file,
        }
    }
    /// What kind of unit it is.
    pub fn kind(&self) -> UnitKind {
        match self {
            LoadedUnit::Team(_) => UnitKind::Team,
            LoadedUnit::Workflow(_) => UnitKind::Workflow,
        }
    }
    /// The team, when it is one.
    pub fn as_team(&self) -> Option<&LoadedTeam> {
        match self {
            LoadedUnit::Team(t) => Some(t),
            LoadedUnit::Workflow(_) => None,
        }
    }
    /// The settings as JSON (for the configuration hash and `config show`).
    pub fn settings_json(&self) -> serde_json::Value {
        match self {
            LoadedUnit::Team(t) => serde_json::to_value(&t.settings).unwrap_or_default(),
            LoadedUnit::Workflow(w) => {
                serde_json::json!({ "workflow": serde_json::to_value(&w.settings).unwrap_or_default() })
            }
        }
    }
}

/// What a `[[orchestrator.teams]]` entry turned out to be, decided by the file's top-level
/// tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitKind {
    /// `[team]` only.
    Team,
    /// `[workflow]` only.
    Workflow,
    /// The file could not be read, or has both tables or neither.
    Unknown,
}

/// One `[[orchestrator.teams]]` entry, loaded.
#[derive(Debug, Clone)]
pub struct UnitEntry {
    /// The path as written.
    pub entry: String,
    /// What the file is.
    pub kind: UnitKind,
    /// The unit, with its problems.
    pub part: Part<LoadedUnit>,
}

/// Everything loaded, part by part.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// The workspace the configuration runs in.
    pub workspace: Workspace,
    /// The orchestrator file.
    pub orchestrator_file: PathBuf,
    /// The orchestrator file's settings.
    pub orchestrator: Part<OrchestratorFile>,
    /// One entry per `[[orchestrator.teams]]` (teams and workflows), in order.
    pub teams: Vec<UnitEntry>,
    /// The evaluator settings.
    pub evaluator: Part<EvaluatorSettings>,
    /// The judgment settings.
    pub judgment: Part<JudgmentSettings>,
    /// The prompt builder settings.
    pub prompt_builder: Part<PromptBuilderSettings>,
    /// The arena settings, when `arena_config` names a file.
    pub arena: Option<Part<ArenaSettings>>,
    /// Where each effective setting came from.
    pub sources: SourceMap,
    /// One warning per `MIXSEEK_*` variable that names no setting (ignored), whichever part
    /// found it; not repeated in the parts' warnings. `load` also logs them.
    pub env_warnings: Vec<ConfigIssue>,
}

/// A configuration ready to run.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    /// The workspace the configuration runs in.
    pub workspace: Workspace,
    /// The orchestrator file.
    pub orchestrator_file: PathBuf,
    /// The orchestrator file's settings.
    pub file: OrchestratorFile,
    /// The teams and workflows, in `[[orchestrator.teams]]` order.
    pub teams: Vec<LoadedUnit>,
    /// The evaluator settings.
    pub evaluator: EvaluatorSettings,
    /// Where they came from.
    pub evaluator_origin: Origin,
    /// The judgment settings.
    pub judgment: JudgmentSettings,
    /// Where they came from.
    pub judgment_origin: Origin,
    /// The prompt builder settings.
    pub prompt_builder: PromptBuilderSettings,
    /// Where they came from.
    pub prompt_builder_origin: Origin,
    /// The arena that ends the run (`arena_config`), if any.
    pub arena: Option<ArenaSettings>,
    /// Where each effective setting came from.
    pub sources: SourceMap,
    /// Warnings found while loading.
    pub warnings: Vec<ConfigIssue>,
}

impl LoadedConfig {
    /// The `[orchestrator]` table.
    pub fn orchestrator(&self) -> &OrchestratorSettings {
        &self.file.orchestrator
    }
}

/// Loading failed: every problem found.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", render_issues(.issues))]
pub struct LoadError {
    /// Every problem found, in the order found.
    pub issues: Vec<ConfigIssue>,
}

fn render_issues(issues: &[ConfigIssue]) -> String {
    let n = issues.len();
    let mut s = format!(
        "invalid configuration ({n} problem{}):",
        if n == 1 { "" } else { "s" }
    );
    for i in issues {
        s.push_str("\n  - ");
        s.push_str(&i.to_string());
    }
    s
}

/// Points the issues about values set by an environment variable or a command-line flag at
/// that variable or flag instead of a file position (run after `TomlDoc::locate`).
fn attribute_env(issues: &mut Issues, from: usize, sources: &SourceMap, key_prefix: &str) {
    for issue in issues.items.iter_mut().skip(from) {
        let key = format!("{key_prefix}{}", issue.key);
        // an unknown table is reported at its own key (`orchestrator.oops` for
        // `MIXSEEK_OOPS__X`): the variable set a key below it
        let below = format!("{key}.");
        let source = match sources.0.get(&key) {
            Some(s) => s.clone(),
            None if issue.message == "unknown key" => sources
                .0
                .range(below.clone()..)
                .take_while(|(k, _)| k.starts_with(&below))
                .map(|(_, s)| s)
                .find(|s| matches!(s, Source::Env { .. } | Source::Cli { .. }))
                .cloned()
                .or_else(|| nearest_ancestor(sources, &key))
                .unwrap_or(Source::Default),
            // a key inside a whole table set by one variable (`MIXSEEK_PRIVACY='{...}'`)
            None => nearest_ancestor(sources, &key).unwrap_or(Source::Default),
        };
        let origin = match source {
            Source::Env { var } => format!("set by environment variable {var}"),
            Source::Cli { flag } => format!("set by the command-line flag {flag}"),
            _ => continue,
        };
        issue.file = None;
        issue.line = None;
        issue.column = None;
        issue.message = format!("{} ({origin})", issue.message);
    }
}

/// The source of the nearest ancestor of `key` that has one (`privacy` for
/// `privacy.extra_patterns[0]`).
fn nearest_ancestor(sources: &SourceMap, key: &str) -> Option<Source> {
    let mut k = key;
    while let Some(cut) = k.rfind(['.', '[']) {
        k = &k[..cut];
        if let Some(s) = sources.0.get(k) {
            return Some(s.clone());
        }
    }
    None
}

/// The variables that set `key` or a key below it, with the key each set (`team.leadr` ←
/// `MIXSEEK_TEAM__LEADR__MODEL`, which set `team.leadr.model`). Empty when a file set `key`.
fn env_vars_at(sources: &SourceMap, key: &str) -> Vec<(String, String)> {
    match sources.0.get(key) {
        Some(Source::Env { var }) => return vec![(key.to_string(), var.clone())],
        Some(_) => return Vec::new(),
        None => {}
    }
    sources
        .0
        .range(key.to_string()..)
        .take_while(|(k, _)| k.starts_with(key))
        .filter(|(k, _)| matches!(k.as_bytes().get(key.len()), Some(b'.' | b'[')))
        .filter_map(|(k, s)| match s {
            Source::Env { var } => Some((k.clone(), var.clone())),
            _ => None,
        })
        .collect()
}

/// Drops the validation issues (from `from` on) about a key that deserialization already
/// reported (an issue before `from`, or a key of `also`): its value was unusable and left
/// out, so the check saw the default instead (a hook whose unknown `on` is reported once,
/// not again as a missing event).
fn drop_shadowed(errors: &mut Issues, from: usize, also: &HashSet<String>) {
    let mut reported: HashSet<String> = errors
        .items
        .iter()
        .take(from)
        .map(|i| i.key.clone())
        .collect();
    reported.extend(also.iter().cloned());
    let mut index = 0;
    errors.items.retain(|i| {
        index += 1;
        index <= from || !reported.contains(&i.key)
    });
}

/// `x` of the hint "did you mean `x`?".
fn suggested_key(hint: &str) -> Option<&str> {
    hint.strip_prefix("did you mean `")?.strip_suffix("`?")
}

/// Moves the unknown keys that exist only because an environment variable set them into
/// `warnings`, one warning per variable: the environment is shared with other tools, so a
/// variable that names no setting is ignored, never an error. Run on deserialization issues
/// before `TomlDoc::locate`.
fn take_unknown_env(found: &mut Issues, sources: &SourceMap, warnings: &mut Issues) {
    let mut kept = Vec::with_capacity(found.items.len());
    for issue in std::mem::take(&mut found.items) {
        let vars = if issue.message == "unknown key" {
            env_vars_at(sources, &issue.key)
        } else {
            Vec::new()
        };
        if vars.is_empty() {
            kept.push(issue);
            continue;
        }
        let suggestion = issue.hint.as_deref().and_then(suggested_key);
        for (full_key, var) in vars {
            let meant = suggestion
                .and_then(|s| crate::env::suggest_var(&var, &full_key, &issue.key, s))
                .filter(|m| !m.eq_ignore_ascii_case(&var));
            let hint = match crate::env::closest_var(&var, meant.as_deref()) {
                Some(m) => format!("did you mean `{m}`?"),
                None => crate::env::NO_MATCH_HINT.to_string(),
            };
            warnings.push(ConfigIssue::unknown_env_var(var, hint));
        }
    }
    found.items = kept;
}

/// What [`load_file`] read from one file.
struct Loaded<T> {
    value: Option<T>,
    doc: Option<TomlDoc>,
    /// Where each value came from (the file, or an environment variable).
    sources: SourceMap,
    errors: Issues,
    warnings: Issues,
}

impl<T> Loaded<T> {
    /// A file that could not be read or parsed: `issue` says why.
    fn failed(issue: ConfigIssue) -> Self {
        let mut errors = Issues::default();
        errors.push(issue);
        Self {
            value: None,
            doc: None,
            sources: SourceMap::default(),
            errors,
            warnings: Issues::default(),
        }
    }

    /// Moves what loading the file found (its sources, errors and warnings) into the
    /// caller's lists; the value and the document stay.
    fn merge_into(&mut self, sources: &mut SourceMap, errors: &mut Issues, warnings: &mut Issues) {
        sources.extend_prefixed("", &self.sources);
        errors.append(std::mem::take(&mut self.errors));
        warnings.append(std::mem::take(&mut self.warnings));
    }
}

/// What overlaying the environment on a table and deserializing it gave.
struct Overlaid<T> {
    value: Option<T>,
    /// Deserialization problems (unknown keys set by the environment taken out).
    found: Issues,
    /// The table's sources plus the variables applied.
    sources: SourceMap,
}

/// Overlays the environment (`apply`) on `table`, whose own sources are `sources`, and
/// deserializes the result (`deser`). The variables that name no key become warnings in
/// `warnings`, and the overlay is redone without them: an ignored variable has no effect at
/// all, not even the tables its path would have created (`MIXSEEK_PROVIDERS__X__Y` would
/// otherwise add a provider `x`).
fn overlay_deserialize<T>(
    table: &toml::Table,
    sources: &SourceMap,
    env: &EnvVars,
    apply: impl Fn(&mut toml::Table, &mut SourceMap, &EnvVars),
    deser: impl Fn(toml::Table, &mut Issues) -> Option<T>,
    warnings: &mut Issues,
) -> Overlaid<T> {
    let run = |env: &EnvVars| {
        let mut t = table.clone();
        let mut local = sources.clone();
        apply(&mut t, &mut local, env);
        let mut found = Issues::default();
        let value = deser(t, &mut found);
        Overlaid {
            value,
            found,
            sources: local,
        }
    };
    let mut out = run(env);
    let mut unknown = Issues::default();
    take_unknown_env(&mut out.found, &out.sources, &mut unknown);
    if !unknown.is_empty() {
        let ignored: Vec<&str> = unknown
            .items
            .iter()
            .filter_map(|i| i.env_var.as_deref())
            .collect();
        let kept = EnvVars(
            env.0
                .iter()
                .filter(|(k, _)| !ignored.contains(&k.as_str()))
                .cloned()
                .collect(),
        );
        out = run(&kept);
        // Removing variables removes keys: nothing new is unknown, but stay safe.
        take_unknown_env(&mut out.found, &out.sources, &mut unknown);
        warnings.items.extend(unknown.items);
    }
    out
}

/// The `MIXSEEK_*` overlay of the orchestrator file: `MIXSEEK_<KEY>` and
/// `MIXSEEK_ORCHESTRATOR__<KEY>` set `orchestrator.<key>`, `MIXSEEK_<TABLE>__...` our top-level
/// tables.
fn overlay_orchestrator_env(t: &mut toml::Table, s: &mut SourceMap, env: &EnvVars) -> Vec<Applied> {
    let mut applied = overlay(
        t,
        &["orchestrator"],
        "MIXSEEK_",
        env,
        is_orchestrator_var,
        s,
    );
    // MIXSEEK_ORCHESTRATOR__MAX_ROUNDS: the same keys, named like the file's table
    // (and like the other sections' MIXSEEK_TEAM__*, MIXSEEK_JUDGMENT__*, ...).
    applied.extend(overlay(
        t,
        &["orchestrator"],
        "MIXSEEK_ORCHESTRATOR__",
        env,
        |_| true,
        s,
    ));
    // MIXSEEK_PROVIDERS__OPENAI__BASE_URL → providers.openai.base_url,
    // MIXSEEK_CACHE__ENABLED → cache.enabled, MIXSEEK_HOOKS__0__URL → hooks[0].url,
    // MIXSEEK_PRIVACY='{"mask_pii": true}' → the whole [privacy] table.
    for table in crate::env::TOP_LEVEL_TABLES {
        applied.extend(overlay(
            t,
            &[],
            "MIXSEEK_",
            env,
            |rest| rest.split("__").next() == Some(*table),
            s,
        ));
    }
    applied
}

/// The overlay of every team file: `MIXSEEK_TEAM__<KEY>`, then `MIXSEEK_LEADER__<KEY>` (which
/// wins for the same key of `team.leader`).
fn overlay_team_env(t: &mut toml::Table, s: &mut SourceMap, env: &EnvVars) -> Vec<Applied> {
    let mut applied = overlay(t, &["team"], "MIXSEEK_TEAM__", env, |_| true, s);
    applied.extend(overlay(
        t,
        &["team", "leader"],
        "MIXSEEK_LEADER__",
        env,
        |_| true,
        s,
    ));
    applied
}

/// The overlay of every workflow file's `[workflow]`.
fn overlay_workflow_env(t: &mut toml::Table, s: &mut SourceMap, env: &EnvVars) -> Vec<Applied> {
    overlay(t, &["workflow"], "MIXSEEK_WORKFLOW__", env, |_| true, s)
}

/// The overlay of the evaluator settings (flat keys).
fn overlay_evaluator_env(t: &mut toml::Table, s: &mut SourceMap, env: &EnvVars) -> Vec<Applied> {
    overlay(t, &[], "MIXSEEK_EVALUATOR__", env, |_| true, s)
}

/// The overlay of the judgment settings (flat keys).
fn overlay_judgment_env(t: &mut toml::Table, s: &mut SourceMap, env: &EnvVars) -> Vec<Applied> {
    overlay(t, &[], "MIXSEEK_JUDGMENT__", env, |_| true, s)
}

/// The overlay of the prompt-builder settings (under `prompt_builder`).
fn overlay_prompt_builder_env(
    t: &mut toml::Table,
    s: &mut SourceMap,
    env: &EnvVars,
) -> Vec<Applied> {
    overlay(
        t,
        &["prompt_builder"],
        "MIXSEEK_PROMPT_BUILDER__",
        env,
        |_| true,
        s,
    )
}

/// One kind of file a full load ([`load()`]) overlays with `MIXSEEK_*` variables: the overlay
/// its loader applies and the deserialization that reports the keys it does not know.
pub(crate) struct EnvTarget {
    /// The file kind (`orchestrator`, `team`, `workflow`, `evaluator`, `judgment`,
    /// `prompt_builder`).
    pub name: &'static str,
    /// The loader's overlay.
    apply: fn(&mut toml::Table, &mut SourceMap, &EnvVars) -> Vec<Applied>,
    /// Deserializes an overlaid table, collecting its problems (unknown keys among them).
    check: fn(toml::Table, &mut Issues),
}

/// Every file kind a full load overlays, in the order [`load()`] reads them.
pub(crate) const ENV_TARGETS: &[EnvTarget] = &[
    EnvTarget {
        name: "orchestrator",
        apply: overlay_orchestrator_env,
        check: |t, found| {
            deserialize_section::<OrchestratorFile>(&toml::Value::Table(t), "", found);
        },
    },
    EnvTarget {
        name: "team",
        apply: overlay_team_env,
        check: |t, found| {
            deserialize_section::<TeamFile>(&toml::Value::Table(t), "", found);
        },
    },
    EnvTarget {
        name: "workflow",
        apply: overlay_workflow_env,
        check: |t, found| {
            deserialize_section::<WorkflowFile>(&toml::Value::Table(t), "", found);
        },
    },
    EnvTarget {
        name: "evaluator",
        apply: overlay_evaluator_env,
        check: |t, found| {
            deserialize_section::<EvaluatorSettings>(&toml::Value::Table(t), "", found);
        },
    },
    EnvTarget {
        name: "judgment",
        apply: overlay_judgment_env,
        check: |t, found| {
            deserialize_section::<JudgmentSettings>(&toml::Value::Table(t), "", found);
        },
    },
    EnvTarget {
        name: "prompt_builder",
        apply: overlay_prompt_builder_env,
        check: |mut t, found| {
            let inner = t
                .remove("prompt_builder")
                .unwrap_or_else(|| toml::Value::Table(toml::Table::new()));
            deserialize_section::<PromptBuilderSettings>(&inner, "prompt_builder", found);
        },
    },
];

/// What one `MIXSEEK_*` variable means to a full load, found by the loaders' own overlays and
/// deserialization (the experiment file's dotted keys are checked with it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EnvRoute {
    /// The settings it sets: (file kind of [`ENV_TARGETS`], dotted key in that file).
    Sets(Vec<(&'static str, String)>),
    /// No overlay reads it.
    Unread,
    /// An overlay reads it, but `key` (the key it sets or an ancestor) is no setting of that
    /// file kind; `meant` is the variable it probably meant.
    UnknownKey {
        /// The unknown key, in the file.
        key: String,
        /// The closest valid variable.
        meant: Option<String>,
        /// Whether the variable was read by the orchestrator file's `MIXSEEK_<KEY>` overlay
        /// (any name that opens no section is).
        orchestrator_level: bool,
    },
    /// The key exists, but the value (a table) holds `key`, which is no setting.
    UnknownInValue {
        /// The unknown key, in the file.
        key: String,
        /// "did you mean" or the valid keys.
        hint: Option<String>,
    },
}

/// The (file kind, key) pairs `var` sets in a full load, by the loaders' overlays alone (no
/// check that the keys exist).
pub(crate) fn env_var_keys(var: &str) -> Vec<(&'static str, String)> {
    let env = EnvVars(vec![(var.to_string(), String::new())]);
    let mut out = Vec::new();
    for target in ENV_TARGETS {
        let mut table = toml::Table::new();
        for a in (target.apply)(&mut table, &mut SourceMap::default(), &env) {
            out.push((target.name, a.key));
        }
    }
    out
}

/// What `var` set to `raw` means to a full load: the settings it sets, or why it sets none.
pub(crate) fn route_env_var(var: &str, raw: &str) -> EnvRoute {
    let env = EnvVars(vec![(var.to_string(), raw.to_string())]);
    let mut sets = Vec::new();
    let mut unknown: Option<EnvRoute> = None;
    for target in ENV_TARGETS {
        let mut table = toml::Table::new();
        let mut sources = SourceMap::default();
        let applied = (target.apply)(&mut table, &mut sources, &env);
        if applied.is_empty() {
            continue;
        }
        let mut found = Issues::default();
        (target.check)(table, &mut found);
        let bad = found.items.into_iter().find(|i| i.message == "unknown key");
        match bad {
            None => sets.extend(applied.into_iter().map(|a| (target.name, a.key))),
            Some(issue) if unknown.is_none() => {
                let vars = env_vars_at(&sources, &issue.key);
                unknown = Some(match vars.first() {
                    Some((full_key, _)) => {
                        let meant = issue
                            .hint
                            .as_deref()
                            .and_then(suggested_key)
                            .and_then(|s| crate::env::suggest_var(var, full_key, &issue.key, s))
                            .filter(|m| !m.eq_ignore_ascii_case(var));
                        EnvRoute::UnknownKey {
                            key: issue.key,
                            meant,
                            orchestrator_level: target.name == "orchestrator"
                                && applied.iter().any(|a| a.key.starts_with("orchestrator."))
                                && !var
                                    .to_ascii_uppercase()
                                    .starts_with("MIXSEEK_ORCHESTRATOR__"),
                        }
                    }
                    None => EnvRoute::UnknownInValue {
                        key: issue.key,
                        hint: issue.hint,
                    },
                });
            }
            Some(_) => {}
        }
    }
    if !sets.is_empty() {
        EnvRoute::Sets(sets)
    } else {
        unknown.unwrap_or(EnvRoute::Unread)
    }
}

/// What kind of file [`load_file`] reads: its name in messages, the keys the original
/// accepted without effect (warnings, not errors), and the environment variables that
/// override its keys.
struct FileKind<'a> {
    what: &'a str,
    legacy: &'a [&'a str],
    env_overlay: &'a dyn Fn(&mut toml::Table, &mut SourceMap, &EnvVars),
}

/// Reads `path`, overlays the environment and deserializes it into `T`. What it found (the
/// values' sources, errors, warnings) is in the result, for the caller to merge.
fn load_file<T: DeserializeOwned + JsonSchema>(
    path: &Path,
    env: &EnvVars,
    kind: &FileKind<'_>,
) -> Loaded<T> {
    match TomlDoc::read(path, kind.what) {
        Ok(doc) => load_doc(doc, env, kind),
        Err(e) => Loaded::failed(e),
    }
}

/// [`load_file`] for a document already read.
fn load_doc<T: DeserializeOwned + JsonSchema>(
    doc: TomlDoc,
    env: &EnvVars,
    kind: &FileKind<'_>,
) -> Loaded<T> {
    let mut loaded = Loaded {
        value: None,
        doc: None,
        sources: SourceMap::default(),
        errors: Issues::default(),
        warnings: Issues::default(),
    };
    let mut file_sources = SourceMap::default();
    doc.record_sources(&mut file_sources);
    let Overlaid {
        value,
        mut found,
        sources,
    } = overlay_deserialize(
        &doc.table,
        &file_sources,
        env,
        kind.env_overlay,
        |t, found| deserialize_section::<T>(&toml::Value::Table(t), "", found),
        &mut loaded.warnings,
    );
    doc.locate(&mut found, 0);
    attribute_env(&mut found, 0, &sources, "");
    split_legacy(found, kind.legacy, &mut loaded.errors, &mut loaded.warnings);
    loaded.value = value;
    loaded.doc = Some(doc);
    loaded.sources = sources;
    loaded
}

/// Keys the original MixSeek accepts but that have no effect (it ignored or dropped them):
/// they still load, with a warning, so a Python MixSeek config loads unchanged. Every other
/// unknown key is an error. `[]` stands for any array index.
pub(crate) const LEGACY_ORCHESTRATOR_KEYS: &[&str] = &["orchestrator.workspace_path"];
/// See [`LEGACY_ORCHESTRATOR_KEYS`]: the informational `environment` of every settings class,
/// and the member keys the original dropped silently.
pub(crate) const LEGACY_TEAM_KEYS: &[&str] = &[
    "team.environment",
    "team.leader.environment",
    "team.members[].environment",
    "team.members[].capabilities",
    "team.members[].retry_config",
    "team.members[].usage_limits",
    "team.members[].instructions",
];
/// See [`LEGACY_ORCHESTRATOR_KEYS`].
pub(crate) const LEGACY_MEMBER_KEYS: &[&str] = &[
    "agent.environment",
    "agent.capabilities",
    "agent.retry_config",
    "agent.usage_limits",
    "agent.instructions",
];
/// See [`LEGACY_ORCHESTRATOR_KEYS`]: evaluator and judgment files (flat keys).
/// The evaluator's top-level `model_settings` / `google_model_settings` are accepted and not
/// read by the original (they belong in `[llm_default]` or a metric).
pub(crate) const LEGACY_FLAT_KEYS: &[&str] =
    &["environment", "model_settings", "google_model_settings"];
/// See [`LEGACY_ORCHESTRATOR_KEYS`].
pub(crate) const LEGACY_PROMPT_BUILDER_KEYS: &[&str] = &["prompt_builder.environment"];

/// `team.members[3].capabilities` → `team.members[].capabilities`.
fn generic_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut in_index = false;
    for c in key.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push('[');
            }
            ']' => {
                in_index = false;
                out.push(']');
            }
            _ if in_index => {}
            _ => out.push(c),
        }
    }
    out
}

/// Sorts deserialization problems: unknown keys the original accepted (`legacy`) become
/// warnings, everything else is an error.
fn split_legacy(found: Issues, legacy: &[&str], errors: &mut Issues, warnings: &mut Issues) {
    for issue in found.items {
        let is_legacy = issue.message.starts_with("unknown key")
            && legacy.contains(&generic_key(&issue.key).as_str());
        if is_legacy {
            let mut w = issue;
            w.message = "ignored key".into();
            w.hint = Some(legacy_note(&w.key).into());
            warnings.push(w);
        } else {
            errors.push(issue);
        }
    }
}

fn legacy_note(key: &str) -> &'static str {
    if key.ends_with("workspace_path") {
        "the original MixSeek accepts it; the workspace comes from -w/--workspace or MIXSEEK_WORKSPACE"
    } else if key.ends_with("model_settings") {
        "the original MixSeek does not read it at the top of an evaluator file; put it in [llm_default] or a [[metrics]] entry"
    } else if key.ends_with("environment") {
        "the original MixSeek's informational dev/staging/prod field; it has no effect"
    } else {
        "the original MixSeek accepts and ignores it; it has no effect here either"
    }
}

fn validate_into<T>(
    value: &Option<T>,
    f: impl Fn(&T, &mut Issues),
    doc: &Option<TomlDoc>,
    sources: &SourceMap,
    prefix: &str,
    errors: &mut Issues,
) {
    if let Some(v) = value {
        let from = errors.len();
        f(v, errors);
        drop_shadowed(errors, from, &HashSet::new());
        if let Some(d) = doc {
            d.locate(errors, from);
        }
        attribute_env(errors, from, sources, prefix);
    }
}

/// The original's error for a file without its table (`[team]`, `[agent]`, `[workflow]`):
/// `Invalid {table} config: missing '{table}' section in {name}`, with what the file starts
/// with.
fn missing_section(
    doc: Option<&TomlDoc>,
    table: &str,
    name: &str,
    file: &Path,
    hint: &str,
) -> Option<ConfigIssue> {
    doc.filter(|d| !d.table.contains_key(table)).map(|_| {
        ConfigIssue::new(
            table,
            format!("Invalid {table} config: missing '{table}' section in {name}"),
        )
        .in_file(file)
        .with_hint(hint)
    })
}

/// What a member file starts with.
const MEMBER_FILE_HINT: &str = "a member file starts with [agent] and sets name, type and model";

/// Loads one team file (with its member references).
pub fn load_team(
    ws: &Workspace,
    entry: &str,
    path: &Path,
    env: &EnvVars,
    sources: &mut SourceMap,
    source_prefix: &str,
) -> Part<LoadedTeam> {
    let mut errors = Issues::default();
    let mut warnings = Issues::default();
    let mut local = SourceMap::default();
    let mut loaded: Loaded<TeamFile> = load_file(
        path,
        env,
        &FileKind {
            what: "team config",
            legacy: LEGACY_TEAM_KEYS,
            env_overlay: &|t, s, env| {
                overlay_team_env(t, s, env);
            },
        },
    );
    loaded.merge_into(&mut local, &mut errors, &mut warnings);
    let Some(file) = loaded.value else {
        sources.extend_prefixed(source_prefix, &local);
        return Part {
            origin: Origin::Explicit(path.to_path_buf()),
            value: None,
            errors,
            warnings,
        };
    };
    errors.items.extend(missing_section(
        loaded.doc.as_ref(),
        "team",
        &path.display().to_string(),
        path,
        "a team file starts with [team] and sets team_id and team_name",
    ));
    let mut settings = file.team;
    let mut member_files = Vec::new();
    let mut members = Vec::new();
    let mut shadowed = HashSet::new();
    for (i, m) in settings.members.iter().enumerate() {
        let Some(cfg) = m.config.clone() else {
            members.push(m.clone());
            member_files.push(None);
            continue;
        };
        // Only tool_name / tool_description may be set next to `config`: anything else
        // would be silently replaced by the member file.
        let entry = loaded
            .doc
            .as_ref()
            .and_then(|d| d.table.get("team"))
            .and_then(|t| t.get("members"))
            .and_then(|ms| ms.get(i))
            .and_then(|e| e.as_table());
        for key in entry
            .map(crate::team::reference_entry_extra_keys)
            .unwrap_or_default()
        {
            let at = format!("team.members[{i}].{key}");
            let mut issue = ConfigIssue::new(
                at.clone(),
                format!(
                    "unknown key for a member reference: `{key}` cannot be set next to `config = \"{cfg}\"` (only tool_name and tool_description can)"
                ),
            )
            .in_file(path)
            .with_hint(format!(
                "set `{key}` in the [agent] table of {cfg}, or define the member inline without `config`"
            ));
            if let Some((l, c)) = loaded.doc.as_ref().and_then(|d| d.position(&at)) {
                issue = issue.at(l, c);
            }
            errors.push(issue);
        }
        match ws.resolve_ref("member config", &cfg, path) {
            Err(e) => {
                let pos = loaded
                    .doc
                    .as_ref()
                    .and_then(|d| d.position(&format!("team.members[{i}].config")));
                let mut issue =
                    ConfigIssue::new(format!("team.members[{i}].config"), e.to_string())
                        .in_file(path);
                if let Some((l, c)) = pos {
                    issue = issue.at(l, c);
                }
                errors.push(issue);
                members.push(m.clone());
                member_files.push(None);
            }
            Ok(mpath) => {
                let mut mlocal = SourceMap::default();
                let mut ml: Loaded<MemberFile> = load_file(
                    &mpath,
                    env,
                    &FileKind {
                        what: "member config",
                        legacy: LEGACY_MEMBER_KEYS,
                        env_overlay: &|_, _, _| {},
                    },
                );
                // A value of the member file left out (an unknown `type`) is reported there,
                // not again at the reference.
                shadowed.extend(ml.errors.items.iter().filter_map(|e| {
                    e.key
                        .strip_prefix("agent.")
                        .map(|k| format!("team.members[{i}].{k}"))
                }));
                ml.merge_into(&mut mlocal, &mut errors, &mut warnings);
                errors.items.extend(missing_section(
                    ml.doc.as_ref(),
                    "agent",
                    &cfg,
                    &mpath,
                    MEMBER_FILE_HINT,
                ));
                match ml.value {
                    Some(mf) => members.push(mf.agent.with_overrides(m)),
                    None => members.push(m.clone()),
                }
                local.extend_prefixed(&format!("team.members[{i}]."), &{
                    let mut stripped = SourceMap::default();
                    for (k, v) in mlocal.0 {
                        stripped.set(k.strip_prefix("agent.").unwrap_or(&k).to_string(), v);
                    }
                    stripped
                });
                member_files.push(Some(mpath));
            }
        }
    }
    settings.members = members;
    let from = errors.len();
    settings.validate("team", &mut errors);
    drop_shadowed(&mut errors, from, &shadowed);
    if let Some(d) = &loaded.doc {
        d.locate(&mut errors, from);
    }
    attribute_env(&mut errors, from, &local, "");
    sources.extend_prefixed(source_prefix, &local);
    Part {
        origin: Origin::Explicit(path.to_path_buf()),
        value: Some(LoadedTeam {
            entry: entry.to_string(),
            file: path.to_path_buf(),
            settings,
            member_files,
        }),
        errors,
        warnings,
    }
}

fn resolve_part_path(
    ws: &Workspace,
    explicit: Option<&str>,
    kind_file: &str,
    what: &str,
    orchestrator_file: &Path,
) -> Result<Option<Origin>, ConfigIssue> {
    if let Some(p) = explicit {
        return ws
            .resolve_ref(what, p, orchestrator_file)
            .map(|p| Some(Origin::Explicit(p)))
            .map_err(|e| {
                ConfigIssue::new(
                    format!("orchestrator.{}", kind_file.replace(".toml", "_config")),
                    e.to_string(),
                )
            });
    }
    let implicit = ws.configs_dir().join(kind_file);
    Ok(implicit.exists().then_some(Origin::Workspace(implicit)))
}

/// Loads the evaluator settings from a file (flat keys) with `MIXSEEK_EVALUATOR__*` overrides.
pub fn load_evaluator(
    origin: Origin,
    env: &EnvVars,
    sources: &mut SourceMap,
) -> Part<EvaluatorSettings> {
    let mut errors = Issues::default();
    let mut warnings = Issues::default();
    let Some(path) = origin.file().map(Path::to_path_buf) else {
        // The built-in defaults; a variable replaces one top-level key of them.
        let defaults = EvaluatorSettings::builtin_default();
        let base = toml::Table::try_from(&defaults).unwrap_or_default();
        let Overlaid {
            value,
            mut found,
            sources: local,
        } = overlay_deserialize(
            &toml::Table::new(),
            &SourceMap::default(),
            env,
            |t, s, env| {
                overlay_evaluator_env(t, s, env);
            },
            |t, found| {
                if t.is_empty() {
                    return Some(defaults.clone());
                }
                let mut merged = base.clone();
                merged.extend(t);
                deserialize_section::<EvaluatorSettings>(&toml::Value::Table(merged), "", found)
            },
            &mut warnings,
        );
        attribute_env(&mut found, 0, &local, "");
        split_legacy(found, LEGACY_FLAT_KEYS, &mut errors, &mut warnings);
        let value = value.unwrap_or(defaults);
        let from = errors.len();
        value.validate("", &mut errors);
        attribute_env(&mut errors, from, &local, "");
        sources.extend_prefixed("evaluator.", &local);
        return Part {
            origin,
            value: Some(value),
            errors,
            warnings,
        };
    };
    let mut local = SourceMap::default();
    let mut l: Loaded<EvaluatorSettings> = load_file(
        &path,
        env,
        &FileKind {
            what: "evaluator config",
            legacy: LEGACY_FLAT_KEYS,
            env_overlay: &|t, s, env| {
                overlay_evaluator_env(t, s, env);
            },
        },
    );
    l.merge_into(&mut local, &mut errors, &mut warnings);
    validate_into(
        &l.value,
        |v, i| v.validate("", i),
        &l.doc,
        &local,
        "",
        &mut errors,
    );
    sources.extend_prefixed("evaluator.", &local);
    Part {
        origin,
        value: l.value,
        errors,
        warnings,
    }
}

/// Loads the judgment settings (flat keys) with `MIXSEEK_JUDGMENT__*` overrides.
pub fn load_judgment(
    origin: Origin,
    env: &EnvVars,
    sources: &mut SourceMap,
) -> Part<JudgmentSettings> {
    let mut errors = Issues::default();
    let mut warnings = Issues::default();
    let mut local = SourceMap::default();
    let (value, doc) = match origin.file().map(Path::to_path_buf) {
        Some(path) => {
            let mut l: Loaded<JudgmentSettings> = load_file(
                &path,
                env,
                &FileKind {
                    what: "judgment config",
                    legacy: LEGACY_FLAT_KEYS,
                    env_overlay: &|t, s, env| {
                        overlay_judgment_env(t, s, env);
                    },
                },
            );
            l.merge_into(&mut local, &mut errors, &mut warnings);
            (l.value, l.doc)
        }
        None => {
            let Overlaid {
                value: v,
                mut found,
                sources,
            } = overlay_deserialize(
                &toml::Table::new(),
                &SourceMap::default(),
                env,
                |t, s, env| {
                    overlay_judgment_env(t, s, env);
                },
                |t, found| {
                    deserialize_section::<JudgmentSettings>(&toml::Value::Table(t), "", found)
                },
                &mut warnings,
            );
            local = sources;
            attribute_env(&mut found, 0, &local, "");
            split_legacy(found, LEGACY_FLAT_KEYS, &mut errors, &mut warnings);
            (v, None)
        }
    };
    validate_into(
        &value,
        |v, i| v.validate("", i),
        &doc,
        &local,
        "",
        &mut errors,
    );
    sources.extend_prefixed("judgment.", &local);
    Part {
        origin,
        value,
        errors,
        warnings,
    }
}

/// Loads the prompt-builder settings from a file with a `[prompt_builder]` table, an inline
/// table, or the defaults, with `MIXSEEK_PROMPT_BUILDER__*` overrides.
pub fn load_prompt_builder(
    origin: Origin,
    inline: Option<&toml::Value>,
    env: &EnvVars,
    sources: &mut SourceMap,
) -> Part<PromptBuilderSettings> {
    let mut errors = Issues::default();
    let mut warnings = Issues::default();
    let mut local = SourceMap::default();
    let mut doc = None;
    let mut table = toml::Table::new();
    match &origin {
        Origin::Explicit(p) | Origin::Workspace(p) => {
            match TomlDoc::read(p, "prompt builder config") {
                Ok(d) => {
                    d.record_sources(&mut local);
                    table = d.table.clone();
                    if !table.contains_key("prompt_builder") {
                        errors.push(
                            ConfigIssue::new("prompt_builder", "missing [prompt_builder] section")
                                .in_file(p)
                                .with_hint("put the templates under a [prompt_builder] table"),
                        );
                    }
                    doc = Some(d);
                }
                Err(e) => errors.push(e),
            }
        }
        Origin::Inline(_) => {
            if let Some(v) = inline {
                table.insert("prompt_builder".into(), v.clone());
            }
        }
        Origin::BuiltIn => {}
    }
    let Overlaid {
        value,
        mut found,
        sources: local,
    } = overlay_deserialize(
        &table,
        &local,
        env,
        |t, s, env| {
            overlay_prompt_builder_env(t, s, env);
        },
        |mut t, found| {
            let inner = t
                .remove("prompt_builder")
                .unwrap_or_else(|| toml::Value::Table(toml::Table::new()));
            deserialize_section::<PromptBuilderSettings>(&inner, "prompt_builder", found)
        },
        &mut warnings,
    );
    if let Some(d) = &doc {
        d.locate(&mut found, 0);
    }
    attribute_env(&mut found, 0, &local, "");
    split_legacy(
        found,
        LEGACY_PROMPT_BUILDER_KEYS,
        &mut errors,
        &mut warnings,
    );
    validate_into(
        &value,
        |v, i| v.validate("prompt_builder", i),
        &doc,
        &local,
        "",
        &mut errors,
    );
    if matches!(origin, Origin::Inline(_)) {
        // Inline tables are located by the orchestrator file's positions by the caller.
    }
    sources.extend_prefixed("", &local);
    Part {
        origin,
        value,
        errors,
        warnings,
    }
}

/// Loads an orchestrator TOML and everything it references: the orchestrator file, then its
/// teams, then the evaluator, judgment and prompt-builder sections. Every problem of every
/// file is collected; nothing stops at the first.
pub fn load(path: &Path, ws: &Workspace, env: &EnvVars, overrides: &Overrides) -> LoadReport {
    let mut sources = SourceMap::default();
    let (orchestrator, doc) = load_orchestrator_file(path, env, overrides, &mut sources);
    let (teams, sections) = match &orchestrator.value {
        Some(f) => (
            load_teams(ws, path, f, doc.as_ref(), env, &mut sources),
            load_sections(ws, path, f, doc.as_ref(), env, &mut sources),
        ),
        None => (
            Vec::new(),
            Sections {
                evaluator: Part::built_in(),
                judgment: Part::built_in(),
                prompt_builder: Part::built_in(),
                arena: None,
            },
        ),
    };
    let mut report = LoadReport {
        workspace: ws.clone(),
        orchestrator_file: path.to_path_buf(),
        orchestrator,
        teams,
        evaluator: sections.evaluator,
        judgment: sections.judgment,
        prompt_builder: sections.prompt_builder,
        arena: sections.arena,
        sources,
        env_warnings: crate::env::unroutable(env),
    };
    report.collect_env_warnings();
    for w in &report.env_warnings {
        tracing::warn!("{w}");
    }
    report
}

/// The orchestrator file itself: its keys with the environment's `MIXSEEK_*` overrides and
/// `--timeout`, validated. Returns the part and the parsed document (for the positions of
/// the keys that reference other files).
fn load_orchestrator_file(
    path: &Path,
    env: &EnvVars,
    overrides: &Overrides,
    sources: &mut SourceMap,
) -> (Part<OrchestratorFile>, Option<TomlDoc>) {
    let mut errors = Issues::default();
    let mut warnings = Issues::default();
    let mut local = SourceMap::default();
    let mut loaded: Loaded<OrchestratorFile> = load_file(
        path,
        env,
        &FileKind {
            what: "orchestrator config",
            legacy: LEGACY_ORCHESTRATOR_KEYS,
            env_overlay: &|t, s, env| {
                overlay_orchestrator_env(t, s, env);
            },
        },
    );
    loaded.merge_into(&mut local, &mut errors, &mut warnings);
    // An inline [prompt_builder] is loaded (and its problems reported) by
    // load_prompt_builder (load_sections); do not report them twice.
    for list in [&mut errors, &mut warnings] {
        list.items.retain(|i| {
            !(i.key == "prompt_builder"
                || i.key.starts_with("prompt_builder.")
                || i.key.starts_with("prompt_builder["))
        });
    }
    let mut file = loaded.value;
    if let Some(d) = &loaded.doc
        && !d.table.contains_key("orchestrator")
    {
        let sections: Vec<&String> = d.table.keys().collect();
        errors.push(
            ConfigIssue::new("orchestrator", "missing [orchestrator] section")
                .in_file(path)
                .with_hint(format!(
                    "this does not look like an orchestrator file (sections found: {sections:?})"
                )),
        );
    }
    if let (Some(f), Some(t)) = (file.as_mut(), overrides.timeout_per_team_seconds) {
        f.orchestrator.timeout_per_team_seconds = t;
        local.set(
            "orchestrator.timeout_per_team_seconds".into(),
            Source::Cli {
                flag: "--timeout".into(),
            },
        );
    }
    if let Some(f) = &file {
        let from = errors.len();
        f.orchestrator.validate("orchestrator", &mut errors);
        crate::providers::validate_providers(&f.providers, "providers", &mut errors);
        for (name, p) in &f.pricing {
            p.validate(&format!("pricing.\"{name}\""), &mut errors);
        }
        f.cache.validate("cache", &mut errors);
        f.privacy.validate("privacy", &mut errors);
        for (i, h) in f.hooks.iter().enumerate() {
            h.validate(&format!("hooks[{i}]"), &mut errors);
        }
        drop_shadowed(&mut errors, from, &HashSet::new());
        if let Some(d) = &loaded.doc {
            d.locate(&mut errors, from);
        }
        attribute_env(&mut errors, from, &local, "");
    }
    sources.extend_prefixed("", &local);
    let part = Part {
        origin: Origin::Explicit(path.to_path_buf()),
        value: file,
        errors,
        warnings,
    };
    (part, loaded.doc)
}

/// Loads one workflow file (`[workflow]`), with `MIXSEEK_WORKFLOW__*` overrides of its
/// top-level keys.
pub fn load_workflow(
    entry: &str,
    path: &Path,
    env: &EnvVars,
    sources: &mut SourceMap,
    source_prefix: &str,
) -> Part<LoadedWorkflow> {
    let mut errors = Issues::default();
    let mut warnings = Issues::default();
    let mut local = SourceMap::default();
    let mut loaded: Loaded<WorkflowFile> = load_file(
        path,
        env,
        &FileKind {
            what: "workflow config",
            legacy: &[],
            env_overlay: &|t, s, env| {
                overlay_workflow_env(t, s, env);
            },
        },
    );
    loaded.merge_into(&mut local, &mut errors, &mut warnings);
    soften_unknown_workflow_keys(&mut errors, &mut warnings);
    let Some(file) = loaded.value else {
        sources.extend_prefixed(source_prefix, &local);
        return Part {
            origin: Origin::Explicit(path.to_path_buf()),
            value: None,
            errors,
            warnings,
        };
    };
    errors.items.extend(missing_section(
        loaded.doc.as_ref(),
        "workflow",
        &path.display().to_string(),
        path,
        "a workflow file starts with [workflow] and sets workflow_id, workflow_name and its [[workflow.steps]]",
    ));
    let settings = file.workflow;
    let from = errors.len();
    settings.validate("workflow", &mut errors);
    if let Some(d) = &loaded.doc {
        d.locate(&mut errors, from);
    }
    attribute_env(&mut errors, from, &local, "");
    sources.extend_prefixed(source_prefix, &local);
    Part {
        origin: Origin::Explicit(path.to_path_buf()),
        value: Some(LoadedWorkflow {
            entry: entry.to_string(),
            file: path.to_path_buf(),
            settings,
        }),
        errors,
        warnings,
    }
}

/// Loads one member agent file (`[agent]`), as `mixseek member -c` does: from `path`, or,
/// when `text` is given, from that text (a bundled agent; `path` then only names it in
/// messages).
pub fn load_member(path: &Path, text: Option<&str>, env: &EnvVars) -> Part<MemberSettings> {
    let kind = FileKind {
        what: "member config",
        legacy: LEGACY_MEMBER_KEYS,
        env_overlay: &|_, _, _| {},
    };
    let loaded: Loaded<MemberFile> = match text {
        None => load_file(path, env, &kind),
        Some(t) => match TomlDoc::parse(path, t) {
            Ok(doc) => load_doc(doc, env, &kind),
            Err(e) => Loaded::failed(e),
        },
    };
    let Loaded {
        value,
        doc,
        mut errors,
        warnings,
        ..
    } = loaded;
    errors.items.extend(missing_section(
        doc.as_ref(),
        "agent",
        &path.display().to_string(),
        path,
        MEMBER_FILE_HINT,
    ));
    let settings = value.map(|f| f.agent);
    if let Some(m) = &settings {
        let from = errors.len();
        m.validate("agent", &mut errors);
        if let Some(d) = &doc {
            d.locate(&mut errors, from);
        }
    }
    Part {
        origin: Origin::Explicit(path.to_path_buf()),
        value: settings,
        errors,
        warnings,
    }
}

/// Loads an arena file (`[arena]`, `mixseek arena -c`, an orchestrator's `arena_config`):
/// its values, errors (unknown keys with the closest valid one, ranges) and warnings. The
/// file is required to hold `[arena]`.
pub fn load_arena(path: &Path, env: &EnvVars) -> Part<ArenaSettings> {
    let kind = FileKind {
        what: "arena config",
        legacy: &[],
        env_overlay: &|_, _, _| {},
    };
    let Loaded {
        value,
        doc,
        mut errors,
        warnings,
        ..
    } = load_file::<ArenaFile>(path, env, &kind);
    errors.items.extend(missing_section(
        doc.as_ref(),
        "arena",
        &path.display().to_string(),
        path,
        "an arena file starts with [arena] and sets judge_model",
    ));
    let settings = value.map(|f| f.arena);
    if let Some(a) = &settings {
        let from = errors.len();
        a.validate("arena", &mut errors);
        if let Some(d) = &doc {
            d.locate(&mut errors, from);
        }
    }
    Part {
        origin: Origin::Explicit(path.to_path_buf()),
        value: settings,
        errors,
        warnings,
    }
}

/// Reads a listed file once to tell a team file from a workflow file by its top-level
/// tables (`[team]` / `[workflow]`), as the original does.
fn unit_kind(entry: &str, path: &Path) -> Result<UnitKind, ConfigIssue> {
    let doc = TomlDoc::read(path, "team or workflow config")?;
    let (team, workflow) = (
        doc.table.contains_key("team"),
        doc.table.contains_key("workflow"),
    );
    match (team, workflow) {
        (true, false) => Ok(UnitKind::Team),
        (false, true) => Ok(UnitKind::Workflow),
        (true, true) => Err(ConfigIssue::new(
            "",
            format!("Config {entry} contains both [team] and [workflow] sections"),
        )
        .in_file(path)
        .with_hint("a file is either a team or a workflow: split it in two")),
        (false, false) => Err(ConfigIssue::new(
            "",
            format!("Config {entry} contains neither [team] nor [workflow] sections"),
        )
        .in_file(path)
        .with_hint("a team file starts with [team], a workflow file with [workflow]")),
    }
}

/// The team and workflow files `[[orchestrator.teams]]` names, in order; a `team_id` (or
/// `workflow_id`) used twice is an error of the second unit.
fn load_teams(
    ws: &Workspace,
    path: &Path,
    file: &OrchestratorFile,
    doc: Option<&TomlDoc>,
    env: &EnvVars,
    sources: &mut SourceMap,
) -> Vec<UnitEntry> {
    let mut teams = Vec::new();
    let mut seen_ids: BTreeMap<mixseek_core::TeamId, usize> = BTreeMap::new();
    for (i, entry) in file.orchestrator.teams.iter().enumerate() {
        let prefix = format!("teams[{i}].");
        let (kind, mut part) = match ws.resolve_ref("team config", &entry.config, path) {
            Ok(tp) => match unit_kind(&entry.config, &tp) {
                Ok(UnitKind::Workflow) => {
                    let p = load_workflow(&entry.config, &tp, env, sources, &prefix);
                    (UnitKind::Workflow, p.map(LoadedUnit::Workflow))
                }
                Ok(_) => {
                    let p = load_team(ws, &entry.config, &tp, env, sources, &prefix);
                    (UnitKind::Team, p.map(LoadedUnit::Team))
                }
                Err(issue) => (UnitKind::Unknown, Part::failed(issue)),
            },
            Err(e) => {
                let key = format!("orchestrator.teams[{i}].config");
                let mut issue = ConfigIssue::new(key.clone(), e.to_string()).in_file(path);
                if let Some((l, c)) = doc.and_then(|d| d.position(&key)) {
                    issue = issue.at(l, c);
                }
                (UnitKind::Unknown, Part::failed(issue))
            }
        };
        if let Some(u) = &part.value {
            let id = u.id().clone();
            if let Some(first) = seen_ids.get(&id) {
                let key = match u {
                    LoadedUnit::Team(_) => "team.team_id",
                    LoadedUnit::Workflow(_) => "workflow.workflow_id",
                };
                part.errors.push(
                    ConfigIssue::new(
                        key,
                        format!(
                            "Duplicate team_id detected: '{id}' (also used by team {})",
                            first + 1
                        ),
                    )
                    .in_file(u.file())
                    .with_hint("Each team configuration must have a unique team_id (workflow_id for a workflow)."),
                );
            } else if !id.is_empty() {
                seen_ids.insert(id, i);
            }
        }
        teams.push(UnitEntry {
            entry: entry.config.clone(),
            kind,
            part,
        });
    }
    teams
}

/// The evaluator, judgment and prompt-builder settings of a run.
struct Sections {
    evaluator: Part<EvaluatorSettings>,
    judgment: Part<JudgmentSettings>,
    prompt_builder: Part<PromptBuilderSettings>,
    arena: Option<Part<ArenaSettings>>,
}

/// The evaluator, judgment and prompt-builder files the orchestrator file names (or finds in
/// the workspace's `configs/`, or the built-in defaults); `[prompt_builder]` may be inline.
/// A path that does not resolve is reported at its key in the orchestrator file.
fn load_sections(
    ws: &Workspace,
    path: &Path,
    file: &OrchestratorFile,
    doc: Option<&TomlDoc>,
    env: &EnvVars,
    sources: &mut SourceMap,
) -> Sections {
    let o = &file.orchestrator;
    let part_origin =
        |explicit: Option<&String>, kind: &str, what: &str| -> Result<Origin, ConfigIssue> {
            resolve_part_path(ws, explicit.map(String::as_str), kind, what, path)
                .map(|o| o.unwrap_or(Origin::BuiltIn))
                .map_err(|e| {
                    let e = e.in_file(path);
                    match doc.and_then(|d| d.position(&e.key)) {
                        Some((l, c)) => e.at(l, c),
                        None => e,
                    }
                })
        };
    let evaluator = match part_origin(
        o.evaluator_config.as_ref(),
        "evaluator.toml",
        "evaluator config",
    ) {
        Ok(origin) => load_evaluator(origin, env, sources),
        Err(e) => Part::failed(e),
    };
    let judgment = match part_origin(
        o.judgment_config.as_ref(),
        "judgment.toml",
        "judgment config",
    ) {
        Ok(origin) => load_judgment(origin, env, sources),
        Err(e) => Part::failed(e),
    };
    let inline = doc.and_then(|d| d.table.get("prompt_builder").cloned());
    let prompt_builder = if o.prompt_builder_config.is_none() && inline.is_some() {
        let mut p = load_prompt_builder(
            Origin::Inline(path.to_path_buf()),
            inline.as_ref(),
            env,
            sources,
        );
        if let Some(d) = doc {
            d.locate(&mut p.errors, 0);
        }
        p
    } else {
        match part_origin(
            o.prompt_builder_config.as_ref(),
            "prompt_builder.toml",
            "prompt builder config",
        ) {
            Ok(origin) => load_prompt_builder(origin, None, env, sources),
            Err(e) => Part::failed(e),
        }
    };
    let arena = o.arena_config.as_ref().map(|explicit| {
        match part_origin(Some(explicit), "arena.toml", "arena config") {
            Ok(Origin::Explicit(file)) => load_arena(&file, env),
            Ok(_) => Part::built_in(),
            Err(e) => Part::failed(e),
        }
    });
    Sections {
        evaluator,
        judgment,
        prompt_builder,
        arena,
    }
}

impl LoadReport {
    /// Moves the parts' warnings about unknown variables into `env_warnings`, once per
    /// variable (a `MIXSEEK_TEAM__*` typo is found in every team file), sorted by name.
    fn collect_env_warnings(&mut self) {
        let mut lists: Vec<&mut Issues> = vec![
            &mut self.orchestrator.warnings,
            &mut self.evaluator.warnings,
            &mut self.judgment.warnings,
            &mut self.prompt_builder.warnings,
        ];
        lists.extend(self.teams.iter_mut().map(|t| &mut t.part.warnings));
        for list in lists {
            let (env, other): (Vec<ConfigIssue>, Vec<ConfigIssue>) =
                std::mem::take(&mut list.items)
                    .into_iter()
                    .partition(|i| i.env_var.is_some());
            list.items = other;
            self.env_warnings.extend(env);
        }
        self.env_warnings.sort_by(|a, b| a.env_var.cmp(&b.env_var));
        self.env_warnings.dedup_by(|a, b| a.env_var == b.env_var);
    }

    /// Every error of every part.
    pub fn errors(&self) -> Vec<ConfigIssue> {
        let mut v: Vec<ConfigIssue> = self.orchestrator.errors.items.clone();
        for t in &self.teams {
            v.extend(t.part.errors.items.iter().cloned());
        }
        v.extend(self.evaluator.errors.items.iter().cloned());
        v.extend(self.judgment.errors.items.iter().cloned());
        v.extend(self.prompt_builder.errors.items.iter().cloned());
        if let Some(a) = &self.arena {
            v.extend(a.errors.items.iter().cloned());
        }
        v
    }

    /// Every warning of every part.
    pub fn warnings(&self) -> Vec<ConfigIssue> {
        let mut v: Vec<ConfigIssue> = self.orchestrator.warnings.items.clone();
        for t in &self.teams {
            v.extend(t.part.warnings.items.iter().cloned());
        }
        v.extend(self.evaluator.warnings.items.iter().cloned());
        v.extend(self.judgment.warnings.items.iter().cloned());
        v.extend(self.prompt_builder.warnings.items.iter().cloned());
        if let Some(a) = &self.arena {
            v.extend(a.warnings.items.iter().cloned());
        }
        v
    }

    /// The configuration, when every part loaded without errors.
    pub fn into_config(self) -> Result<LoadedConfig, LoadError> {
        let errors = self.errors();
        let warnings = self.warnings();
        if !errors.is_empty() {
            return Err(LoadError { issues: errors });
        }
        let missing = |what: &str| LoadError {
            issues: vec![ConfigIssue::new("", format!("{what} could not be loaded"))],
        };
        let file = self
            .orchestrator
            .value
            .ok_or_else(|| missing("the orchestrator config"))?;
        let mut teams = Vec::new();
        for t in self.teams {
            let entry = t.entry;
            teams.push(
                t.part
                    .value
                    .ok_or_else(|| missing(&format!("team `{entry}`")))?,
            );
        }
        Ok(LoadedConfig {
            workspace: self.workspace,
            orchestrator_file: self.orchestrator_file,
            file,
            teams,
            evaluator: self
                .evaluator
                .value
                .ok_or_else(|| missing("the evaluator config"))?,
            evaluator_origin: self.evaluator.origin,
            judgment: self
                .judgment
                .value
                .ok_or_else(|| missing("the judgment config"))?,
            judgment_origin: self.judgment.origin,
            prompt_builder: self
                .prompt_builder
                .value
                .ok_or_else(|| missing("the prompt builder config"))?,
            prompt_builder_origin: self.prompt_builder.origin,
            arena: match self.arena {
                Some(a) => Some(a.value.ok_or_else(|| missing("the arena config"))?),
                None => None,
            },
            sources: self.sources,
            warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_with(orch: &str, env: &[(&str, &str)]) -> LoadReport {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(
            dir.path().join("team.toml"),
            "[team]\nteam_id = \"a\"\nteam_name = \"A\"\n[team.leader]\nmodel = \"mock:l\"\n",
        )
        .expect("write");
        let path = dir.path().join("orch.toml");
        std::fs::write(&path, orch).expect("write");
        let ws = Workspace::at(dir.path());
        load(
            &path,
            &ws,
            &EnvVars::from_pairs(env.iter().copied()),
            &Overrides::default(),
        )
    }

    const ORCH: &str = "[orchestrator]\n[[orchestrator.teams]]\nconfig = \"team.toml\"\n";

    #[test]
    fn top_level_table_variables_land_in_their_tables() {
        let r = load_with(
            ORCH,
            &[
                (
                    "MIXSEEK_PROVIDERS__OLLAMA__BASE_URL",
                    "http://127.0.0.1:9/v1",
                ),
                ("MIXSEEK_CACHE__ENABLED", "true"),
                ("MIXSEEK_PRIVACY", "{\"mask_pii\": true}"),
                ("MIXSEEK_HOOKS__0__ON", "round_complete"),
                ("MIXSEEK_HOOKS__0__COMMAND", "[\"true\"]"),
            ],
        );
        assert!(r.errors().is_empty(), "{:?}", r.errors());
        let f = r.orchestrator.value.as_ref().expect("loaded");
        assert_eq!(
            f.providers["ollama"].base_url.as_deref(),
            Some("http://127.0.0.1:9/v1")
        );
        assert!(f.cache.enabled && f.privacy.mask_pii);
        assert_eq!(f.hooks[0].on, Some(mixseek_core::HookEvent::RoundComplete));
        assert_eq!(
            r.sources.get("cache.enabled"),
            Source::Env {
                var: "MIXSEEK_CACHE__ENABLED".into()
            }
        );
        assert_eq!(
            r.sources.get("hooks[0].on"),
            Source::Env {
                var: "MIXSEEK_HOOKS__0__ON".into()
            }
        );
        // A typo is a warning naming the variable and the one meant; the run is not stopped.
        let r = load_with(ORCH, &[("MIXSEEK_CACHE__ENABELD", "true")]);
        assert!(r.errors().is_empty(), "{:?}", r.errors());
        let text: Vec<String> = r.env_warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "`MIXSEEK_CACHE__ENABELD`: unknown environment variable, ignored (did you mean `MIXSEEK_CACHE__ENABLED`?)"
            ]
        );
    }

    fn env_hints(r: &LoadReport) -> Vec<(String, String)> {
        r.env_warnings
            .iter()
            .map(|w| {
                (
                    w.env_var.clone().unwrap_or_default(),
                    w.hint.clone().unwrap_or_default(),
                )
            })
            .collect()
    }

    #[test]
    fn unknown_variables_are_warnings_with_the_variable_meant() {
        let meant = |m: &str| format!("did you mean `{m}`?");
        for (var, hint) in [
            ("MIXSEEK_QZ", crate::env::NO_MATCH_HINT.to_string()),
            ("MIXSEEK_MAX_ROUNDZ", meant("MIXSEEK_MAX_ROUNDS")),
            (
                "MIXSEEK_ORCHESTRATOR__MAX_ROUNDZ",
                meant("MIXSEEK_ORCHESTRATOR__MAX_ROUNDS"),
            ),
            ("MIXSEEK_LOG_LEVL", meant("MIXSEEK_LOG_LEVEL")),
            (
                "MIXSEEK_TEAM__LEADR__MODEL",
                meant("MIXSEEK_TEAM__LEADER__MODEL"),
            ),
            ("MIXSEEK_LEADER__MODLE", meant("MIXSEEK_LEADER__MODEL")),
            ("MIXSEEK_JUDGMENT__MODLE", meant("MIXSEEK_JUDGMENT__MODEL")),
            (
                "MIXSEEK_EVALUATOR__TIMEOUT_SECOND",
                meant("MIXSEEK_EVALUATOR__TIMEOUT_SECONDS"),
            ),
            (
                "MIXSEEK_PROMPT_BUILDER__TEAM_USER_PROMT",
                meant("MIXSEEK_PROMPT_BUILDER__TEAM_USER_PROMPT"),
            ),
            (
                "MIXSEEK_PROVIDERS__OLLAMA__BASE_URLL",
                meant("MIXSEEK_PROVIDERS__OLLAMA__BASE_URL"),
            ),
            (
                "MIXSEEK_TEAM",
                "a variable of this section names its key: MIXSEEK_TEAM__<KEY>".to_string(),
            ),
            ("MIXSEEK___", crate::env::NO_MATCH_HINT.to_string()),
            (
                "MIXSEEK_CONFIG_FILE",
                crate::env::UNSUPPORTED_VARS[0].1.to_string(),
            ),
        ] {
            let r = load_with(ORCH, &[(var, "3")]);
            assert!(r.errors().is_empty(), "{var}: {:?}", r.errors());
            assert_eq!(env_hints(&r), [(var.to_string(), hint)], "{var}");
            // Not repeated among the parts' warnings (exec logs those once more).
            assert!(r.warnings().is_empty(), "{var}: {:?}", r.warnings());
            let pf = crate::preflight::run(&r, |_| None);
            let cat = pf.categories.last().expect("categories");
            assert_eq!(cat.category, crate::preflight::ENV_CATEGORY);
            assert!(
                cat.checks.len() == 1
                    && cat.checks[0].status == crate::preflight::CheckStatus::Warning
                    && cat.checks[0].message.contains(var),
                "{var}: {cat:?}"
            );
        }
        // Variables that are not settings, or belong to the original's other commands.
        for var in [
            "MIXSEEK_WORKSPACE",
            "MIXSEEK_NO_PROGRESS",
            "MIXSEEK_UI__PORT",
            "MIXSEEK_MEMBER__MODEL",
        ] {
            let r = load_with(ORCH, &[(var, "3")]);
            assert!(r.errors().is_empty() && r.env_warnings.is_empty(), "{var}");
            let pf = crate::preflight::run(&r, |_| None);
            assert!(
                pf.categories
                    .iter()
                    .all(|c| c.category != crate::preflight::ENV_CATEGORY)
            );
        }
    }

    #[test]
    fn a_variable_nested_past_any_setting_is_unknown_not_set() {
        let deep = format!("MIXSEEK_CACHE{}", "__A".repeat(100_000));
        let r = load_with(ORCH, &[(deep.as_str(), "1")]);
        assert!(r.errors().is_empty(), "{:?}", r.errors());
        assert_eq!(r.env_warnings.len(), 1);
        assert_eq!(r.env_warnings[0].env_var.as_deref(), Some(deep.as_str()));
    }

    #[test]
    fn an_unknown_variable_checked_against_every_team_is_reported_once() {
        let orch = format!("{ORCH}[[orchestrator.teams]]\nconfig = \"team2.toml\"\n");
        let dir = tempfile::tempdir().expect("tmp");
        for (name, id) in [("team.toml", "a"), ("team2.toml", "b")] {
            std::fs::write(
                dir.path().join(name),
                format!("[team]\nteam_id = \"{id}\"\nteam_name = \"A\"\n[team.leader]\nmodel = \"mock:l\"\n"),
            )
            .expect("write");
        }
        let path = dir.path().join("orch.toml");
        std::fs::write(&path, orch).expect("write");
        let r = load(
            &path,
            &Workspace::at(dir.path()),
            &EnvVars::from_pairs([("MIXSEEK_TEAM__TEAM_NAM", "x"), ("MIXSEEK_PY", "1")]),
            &Overrides::default(),
        );
        assert_eq!(r.teams.len(), 2);
        let vars: Vec<String> = env_hints(&r).into_iter().map(|(v, _)| v).collect();
        assert_eq!(vars, ["MIXSEEK_PY", "MIXSEEK_TEAM__TEAM_NAM"]);
    }

    #[test]
    fn a_variable_naming_a_setting_with_a_bad_value_is_an_error_naming_it() {
        let r = load_with(ORCH, &[("MIXSEEK_ORCHESTRATOR__MAX_ROUNDS", "4")]);
        assert!(r.errors().is_empty(), "{:?}", r.errors());
        assert_eq!(
            r.orchestrator
                .value
                .expect("loaded")
                .orchestrator
                .max_rounds,
            4
        );
        assert_eq!(
            r.sources.get("orchestrator.max_rounds"),
            Source::Env {
                var: "MIXSEEK_ORCHESTRATOR__MAX_ROUNDS".into()
            }
        );
        for (var, value) in [
            ("MIXSEEK_ORCHESTRATOR__MAX_ROUNDS", "abc"),
            ("MIXSEEK_MAX_ROUNDS", "abc"),
            ("MIXSEEK_MAX_ROUNDS", "11"),
            ("MIXSEEK_JUDGMENT__TEMPERATURE", "hot"),
            ("MIXSEEK_TEAM__LEADER", "5"),
        ] {
            let r = load_with(ORCH, &[(var, value)]);
            let errors: Vec<String> = r.errors().iter().map(ToString::to_string).collect();
            assert!(
                errors.len() == 1
                    && errors[0].contains(&format!("(set by environment variable {var})")),
                "{var}={value}: {errors:?}"
            );
            assert!(r.env_warnings.is_empty(), "{var}");
        }
        // A key inside a whole table set by one variable is that variable's bad value.
        let r = load_with(ORCH, &[("MIXSEEK_PRIVACY", "{\"mask_pi\": true}")]);
        let errors: Vec<String> = r.errors().iter().map(ToString::to_string).collect();
        assert_eq!(
            errors,
            [
                "`privacy.mask_pi`: unknown key (set by environment variable MIXSEEK_PRIVACY) (did you mean `mask_pii`?)"
            ]
        );
        assert!(r.env_warnings.is_empty());
    }

    #[test]
    fn legacy_keys_are_warnings_and_other_unknown_keys_errors() {
        assert_eq!(
            generic_key("team.members[12].capabilities"),
            "team.members[].capabilities"
        );
        let r = load_with(
            "[orchestrator]\nworkspace_path = \"/x\"\nmax_roundz = 1\n[[orchestrator.teams]]\nconfig = \"team.toml\"\n",
            &[],
        );
        let errors: Vec<String> = r.errors().iter().map(|i| i.key.clone()).collect();
        let warnings: Vec<String> = r.warnings().iter().map(|i| i.key.clone()).collect();
        assert_eq!(errors, ["orchestrator.max_roundz"]);
        assert_eq!(warnings, ["orchestrator.workspace_path"]);
    }

    #[test]
    fn an_inline_prompt_builder_typo_is_reported_once() {
        let r = load_with(
            &format!("{ORCH}[prompt_builder]\nteam_user_promt = \"x\"\n"),
            &[],
        );
        let keys: Vec<String> = r.errors().iter().map(|i| i.key.clone()).collect();
        assert_eq!(keys, ["prompt_builder.team_user_promt"]);
    }
}
