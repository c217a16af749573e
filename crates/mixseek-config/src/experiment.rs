//! The experiment file (`experiment.toml`, table `[experiment]`; ours, the original has no
//! experiments): a task set, run by every variant of an orchestrator configuration, `repeats`
//! times. A variant is an orchestrator file plus dotted-key overrides that mean exactly what
//! the `MIXSEEK_*` environment overlays mean (`leader.temperature` is
//! `MIXSEEK_LEADER__TEMPERATURE`); a grid expands into one variant per combination of its
//! values. The file is read like every other (positions, unknown keys with the closest valid
//! one, wrong types, every problem collected), and so is its task set (`experiment/tasks.rs`).

mod dotted;
mod tasks;

pub use tasks::MAX_TASKS;

use crate::doc::{TomlDoc, deserialize_section};
use crate::env::EnvVars;
use crate::issues::{ConfigIssue, Issues, closest};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};

/// The most runs of every (variant, task) pair.
pub const MAX_REPEATS: u32 = 1000;
/// The most executions an experiment runs at once.
pub const MAX_CONCURRENT_EXECUTIONS: usize = 256;
/// The most variants one grid expands into.
pub const MAX_GRID_EXPANSIONS: usize = 1000;

/// `[experiment]`: what an experiment runs and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct ExperimentSettings {
    /// The experiment's name: 1 to 64 of `A-Z a-z 0-9 . _ -`.
    pub name: String,
    /// The task set: a `.jsonl` or `.csv` file, relative to this file's folder (see "Task sets"
    /// below).
    pub tasks: String,
    /// Runs of every (variant, task) pair (1..=1000).
    pub repeats: u32,
    /// Executions (one variant, one task, one repeat each) running at once (1..=256).
    pub max_concurrent_executions: usize,
    /// The variant the others are compared with in reports: a variant's name, the name of one
    /// expansion of a grid, or a grid variant's own name (its first expansion). Unset: the
    /// first variant.
    pub baseline: Option<String>,
    /// Stop starting executions once the experiment has used this many tokens (input +
    /// output, > 0).
    pub max_total_tokens: Option<u64>,
    /// Stop starting executions once the experiment's LLM cost reaches this many US dollars
    /// (> 0).
    pub max_cost_usd: Option<f64>,
    /// Seed of the reports' bootstrap (same seed, same intervals).
    pub seed: u64,
    /// The level of the reports' confidence intervals (0.5..1, 1 excluded).
    pub confidence: f64,
    /// The variants; at least one. Names are unique after grid expansion.
    pub variants: Vec<VariantSettings>,
}

impl Default for ExperimentSettings {
    fn default() -> Self {
        Self {
            name: String::new(),
            tasks: String::new(),
            repeats: 1,
            max_concurrent_executions: 1,
            baseline: None,
            max_total_tokens: None,
            max_cost_usd: None,
            seed: 0,
            confidence: 0.95,
            variants: Vec::new(),
        }
    }
}

/// One `[[experiment.variants]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(default)]
pub(crate) struct VariantSettings {
    /// The variant's name: 1 to 64 of `A-Z a-z 0-9 . _ -`, unique in the experiment.
    pub name: String,
    /// The orchestrator TOML this variant runs, relative to the experiment file's folder.
    pub config: String,
    /// What the variant tries, for reports.
    pub description: Option<String>,
    /// Settings changed for this variant: dotted keys, each naming what a `MIXSEEK_*`
    /// variable names (`"orchestrator.max_rounds" = 3`, `"leader.temperature" = 0.9`), with
    /// any TOML value. They win over the TOML files and the environment.
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub overrides: toml::Table,
    /// Dotted keys (as `overrides`), each with an array of values: the variant expands into
    /// one variant per combination (at most 1000), named `name[key=value,...]`.
    #[schemars(schema_with = "grid_schema")]
    pub grid: toml::Table,
}

/// A grid's schema: a table of arrays of any values.
fn grid_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "additionalProperties": { "type": "array" }
    })
}

/// An experiment TOML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(default)]
pub(crate) struct ExperimentToml {
    /// The experiment.
    pub experiment: ExperimentSettings,
}

/// A loaded experiment: its settings, its variants (grids expanded) and its tasks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentFile {
    /// The experiment file (absolute).
    pub path: PathBuf,
    /// The experiment's name.
    pub name: String,
    /// The task set (absolute).
    pub tasks_file: PathBuf,
    /// Runs of every (variant, task) pair.
    pub repeats: u32,
    /// Executions running at once.
    pub max_concurrent_executions: usize,
    /// The baseline variant's name (after grid expansion).
    pub baseline: String,
    /// Token budget of the whole experiment.
    pub max_total_tokens: Option<u64>,
    /// Cost budget of the whole experiment, in US dollars.
    pub max_cost_usd: Option<f64>,
    /// Seed of the reports' bootstrap.
    pub seed: u64,
    /// The level of the reports' confidence intervals.
    pub confidence: f64,
    /// The variants, grids expanded, in file order.
    pub variants: Vec<Variant>,
    /// The tasks, in file order.
    pub tasks: Vec<Task>,
}

/// One variant: an orchestrator file and the environment pairs that change it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Variant {
    /// Its name (a grid expansion's: `grid[leader.temperature=0.2,...]`).
    pub name: String,
    /// The orchestrator file (absolute).
    pub config: PathBuf,
    /// What it tries.
    pub description: Option<String>,
    /// Its overrides then its grid values: (dotted key as written, TOML literal).
    pub overrides: Vec<(String, String)>,
    /// The same as `MIXSEEK_*` variables: (name, TOML literal), in the order of `overrides`.
    pub env: Vec<(String, String)>,
}

impl Variant {
    /// The environment a run of this variant loads its configuration with
    /// ([`crate::load()`]'s `env`): `base` (the process's `MIXSEEK_*` variables) without the
    /// variables that set one of this variant's settings (or a setting inside one), then the
    /// variant's own, so that they win over the TOML files and the process environment.
    pub fn merged_env(&self, base: &EnvVars) -> EnvVars {
        let mine: Vec<(&'static str, String)> = self
            .env
            .iter()
            .flat_map(|(var, _)| dotted::keys_of_var(var))
            .collect();
        let mut out: Vec<(String, String)> = base
            .0
            .iter()
            .filter(|(name, _)| {
                !self.env.iter().any(|(v, _)| v.eq_ignore_ascii_case(name))
                    && !dotted::keys_of_var(name)
                        .iter()
                        .any(|k| mine.iter().any(|m| dotted::within(k, m)))
            })
            .cloned()
            .collect();
        out.extend(self.env.iter().cloned());
        EnvVars(out)
    }
}

/// One task of the task set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Task {
    /// Its id (an integer id as its decimal text), unique in the set.
    pub id: String,
    /// The user prompt the teams answer.
    pub prompt: String,
    /// Context about the task's domain, carried into every prompt.
    pub domain_context: Option<String>,
    /// Files attached to the prompt (absolute; they existed when the set was loaded).
    pub attachments: Vec<PathBuf>,
    /// Everything else the task's line holds (`metadata` and any other key or column).
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// The line of the task file it starts on (1-based).
    pub line: usize,
}

/// Whether `name` is 1 to 64 of `A-Z a-z 0-9 . _ -`.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

const NAME_HINT: &str = "1 to 64 letters, digits, `.`, `_` or `-`";

/// The hint of a file without `[experiment]`.
const FILE_HINT: &str = "an experiment file starts with [experiment] and sets name, tasks and its [[experiment.variants]]";

/// Problems of one file: errors with file and position.
struct Found<'a> {
    doc: &'a TomlDoc,
    errors: Issues,
}

impl Found<'_> {
    /// An error about `key` at the position of `pos_path` in the file.
    fn at(&mut self, key: String, pos_path: &str, message: String, hint: Option<String>) {
        let mut issue = ConfigIssue::new(key, message).in_file(&self.doc.path);
        if let Some((l, c)) = self.doc.position(pos_path) {
            issue = issue.at(l, c);
        }
        if let Some(h) = hint {
            issue = issue.with_hint(h);
        }
        self.errors.push(issue);
    }

    /// An error about the key `key`, at its own position.
    fn key(&mut self, key: &str, message: impl Into<String>, hint: Option<String>) {
        self.at(key.to_string(), key, message.into(), hint);
    }
}

/// An absolute path, its `.` and `..` components resolved without following symlinks.
fn absolute(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// A file named in the experiment file: resolved against its folder, which must hold a
/// regular file there. Canonical when it exists.
fn resolve_file(base: &Path, given: &str, what: &str) -> Result<PathBuf, (String, String)> {
    let path = base.join(given);
    let hint = format!(
        "paths are relative to the experiment file's folder ({})",
        base.display()
    );
    match std::fs::metadata(&path) {
        Ok(m) if m.is_dir() => Err((
            format!("{what} `{given}` is a directory: {}", path.display()),
            "name the file itself".into(),
        )),
        Ok(m) if !m.is_file() => Err((
            format!("{what} `{given}` is not a regular file: {}", path.display()),
            hint,
        )),
        Ok(_) => Ok(std::fs::canonicalize(&path).unwrap_or_else(|_| absolute(&path))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err((
            format!("{what} `{given}` not found: {}", path.display()),
            hint,
        )),
        Err(e) => Err((
            format!("{what} `{given}` cannot be read ({e}): {}", path.display()),
            hint,
        )),
    }
}

/// One dotted key of `overrides` or `grid`, its nested tables flattened
/// (`overrides = { leader.temperature = 0.9 }` is `"leader.temperature"`).
struct Entry {
    /// As shown: the dotted key, segments quoted where needed.
    key: String,
    /// Its path in the file's position index.
    pos_path: String,
    value: toml::Value,
}

/// The entries of a table of dotted keys; a nested table is read as more segments.
fn flatten(table: &toml::Table, key: &str, pos: &str, out: &mut Vec<Entry>) {
    for (k, v) in table {
        let shown = if key.is_empty() {
            k.clone()
        } else {
            format!("{key}.{}", dotted::render_segment(k))
        };
        let pos_path = format!("{pos}.{k}");
        match v {
            toml::Value::Table(t) if !t.is_empty() => flatten(t, &shown, &pos_path, out),
            _ => out.push(Entry {
                key: shown,
                pos_path,
                value: v.clone(),
            }),
        }
    }
}

/// A dotted key checked: what it sets and its variable.
struct Checked {
    entry: Entry,
    routed: dotted::Routed,
}

/// `experiment.variants[1].overrides."leader.temperature"`.
fn entry_key(prefix: &str, entry: &Entry) -> String {
    format!("{prefix}.\"{}\"", entry.key.replace('"', "\\\""))
}

/// Checks the dotted keys of one table (`overrides` or `grid`) of variant `i`.
fn check_entries(
    found: &mut Found<'_>,
    table: &toml::Table,
    prefix: &str,
    grid: bool,
) -> Vec<Checked> {
    let mut entries = Vec::new();
    flatten(table, "", prefix, &mut entries);
    let mut out = Vec::new();
    for entry in entries {
        let key = entry_key(prefix, &entry);
        if let toml::Value::Table(_) = &entry.value {
            found.at(
                key,
                &entry.pos_path,
                "an empty table sets nothing".into(),
                Some("remove it, or give the keys to set".into()),
            );
            continue;
        }
        // A grid's key is routed with its first value (only the key is checked here).
        let sample = match (&entry.value, grid) {
            (toml::Value::Array(items), true) => match items.first() {
                Some(first) => first.clone(),
                None => {
                    found.at(
                        key,
                        &entry.pos_path,
                        "a grid key without values".into(),
                        Some("list at least one value, or remove the key".into()),
                    );
                    continue;
                }
            },
            (other, true) => {
                found.at(
                    key,
                    &entry.pos_path,
                    format!("expected an array of values, found {}", other.type_str()),
                    Some(format!(
                        "a grid gives each key its values: \"{}\" = [{}, ...]; a single value belongs in `overrides`",
                        entry.key,
                        dotted::literal(other)
                    )),
                );
                continue;
            }
            (v, false) => v.clone(),
        };
        match dotted::route(&entry.key, &dotted::literal(&sample)) {
            Ok(routed) => out.push(Checked { entry, routed }),
            Err(e) => found.at(key, &entry.pos_path, e.message, e.hint),
        }
    }
    out
}

/// The variants of one `[[experiment.variants]]` entry: itself, or its grid's expansions.
fn expand(
    found: &mut Found<'_>,
    i: usize,
    v: &VariantSettings,
    config: &Option<PathBuf>,
) -> Vec<Variant> {
    let prefix = format!("experiment.variants[{i}]");
    let overrides = check_entries(found, &v.overrides, &format!("{prefix}.overrides"), false);
    let grid = check_entries(found, &v.grid, &format!("{prefix}.grid"), true);
    let grid_written = found
        .doc
        .table
        .get("experiment")
        .and_then(|e| e.get("variants"))
        .and_then(|vs| vs.get(i))
        .and_then(|v| v.get("grid"))
        .is_some();
    let mut ok = true;
    if grid_written && v.grid.is_empty() {
        found.key(
            &format!("{prefix}.grid"),
            "an empty grid",
            Some("give each key an array of values, or remove the grid".into()),
        );
        ok = false;
    }
    // No two keys may set the same setting (or one inside another's): which would win?
    let all: Vec<&Checked> = overrides.iter().chain(&grid).collect();
    for (n, later) in all.iter().enumerate() {
        for earlier in &all[..n] {
            let clash = later.routed.keys.iter().any(|a| {
                earlier
                    .routed
                    .keys
                    .iter()
                    .any(|b| dotted::within(a, b) || dotted::within(b, a))
            });
            if clash {
                ok = false;
                let (later_in, earlier_in) = (
                    if n >= overrides.len() {
                        "grid"
                    } else {
                        "overrides"
                    },
                    if overrides.iter().any(|o| std::ptr::eq(o, *earlier)) {
                        "overrides"
                    } else {
                        "grid"
                    },
                );
                let line = found
                    .doc
                    .position(&earlier.entry.pos_path)
                    .map(|(l, _)| format!(" on line {l}"))
                    .unwrap_or_default();
                found.at(
                    entry_key(&format!("{prefix}.{later_in}"), &later.entry),
                    &later.entry.pos_path,
                    format!(
                        "`{}` sets the same setting as `{}` in {earlier_in}{line}",
                        later.entry.key, earlier.entry.key
                    ),
                    Some("give each setting once: in `overrides` for every run, or in `grid` to vary it".into()),
                );
                break;
            }
        }
    }
    // The grid's values: each array non-empty (checked above), no value twice.
    let mut axes: Vec<(&Checked, Vec<toml::Value>)> = Vec::new();
    for g in &grid {
        let toml::Value::Array(items) = &g.entry.value else {
            continue;
        };
        for (j, item) in items.iter().enumerate() {
            if items[..j].contains(item) {
                ok = false;
                found.at(
                    format!("{}[{j}]", entry_key(&format!("{prefix}.grid"), &g.entry)),
                    &format!("{}[{j}]", g.entry.pos_path),
                    format!("the value {} is listed twice", dotted::literal(item)),
                    Some("list each value once".into()),
                );
            }
        }
        axes.push((g, items.clone()));
    }
    let size = axes
        .iter()
        .fold(1usize, |n, (_, items)| n.saturating_mul(items.len()));
    if size > MAX_GRID_EXPANSIONS {
        ok = false;
        let sizes: Vec<String> = axes.iter().map(|(_, i)| i.len().to_string()).collect();
        found.key(
            &format!("{prefix}.grid"),
            format!(
                "the grid expands into {size} variants ({}), more than {MAX_GRID_EXPANSIONS}",
                sizes.join(" × ")
            ),
            Some("use fewer values, or split the grid over several variants".into()),
        );
    }
    let (Some(config), true) = (config, ok) else {
        return Vec::new();
    };
    let base_pairs: Vec<(String, String, String)> = overrides
        .iter()
        .map(|o| {
            (
                o.entry.key.clone(),
                dotted::literal(&o.entry.value),
                o.routed.var.clone(),
            )
        })
        .collect();
    let make = |name: String, extra: Vec<(String, String, String)>| {
        let pairs: Vec<(String, String, String)> =
            base_pairs.iter().cloned().chain(extra).collect();
        Variant {
            name,
            config: config.clone(),
            description: v.description.clone(),
            overrides: pairs
                .iter()
                .map(|(k, l, _)| (k.clone(), l.clone()))
                .collect(),
            env: pairs.into_iter().map(|(_, l, var)| (var, l)).collect(),
        }
    };
    if axes.is_empty() {
        return vec![make(v.name.clone(), Vec::new())];
    }
    // The Cartesian product, the first key varying slowest.
    let mut out = Vec::with_capacity(size);
    let mut index = vec![0usize; axes.len()];
    loop {
        let mut extra = Vec::with_capacity(axes.len());
        let mut label = Vec::with_capacity(axes.len());
        for ((g, items), &at) in axes.iter().zip(&index) {
            let value = &items[at];
            label.push(format!("{}={}", g.entry.key, dotted::compact(value)));
            extra.push((
                g.entry.key.clone(),
                dotted::literal(value),
                g.routed.var.clone(),
            ));
        }
        out.push(make(format!("{}[{}]", v.name, label.join(",")), extra));
        // The next combination, like an odometer.
        let mut k = axes.len();
        loop {
            if k == 0 {
                return out;
            }
            k -= 1;
            index[k] += 1;
            if index[k] < axes[k].1.len() {
                break;
            }
            index[k] = 0;
        }
    }
}

/// Loads an experiment file and its task set. Every problem of both files is collected:
/// unknown keys (with the closest valid key), wrong types, ranges, dotted keys that name no
/// setting (with the closest valid key), duplicate variant names, grids, missing files and
/// every task-set problem with its line.
pub fn load_experiment(path: &Path) -> Result<ExperimentFile, Vec<ConfigIssue>> {
    let doc = TomlDoc::read(path, "experiment config").map_err(|e| vec![e])?;
    let mut found = Found {
        doc: &doc,
        errors: Issues::default(),
    };
    let file: Option<ExperimentToml> = deserialize_section(
        &toml::Value::Table(doc.table.clone()),
        "",
        &mut found.errors,
    );
    doc.locate(&mut found.errors, 0);
    if !doc.table.contains_key("experiment") {
        found.errors.push(
            ConfigIssue::new("experiment", "missing [experiment] section")
                .in_file(path)
                .with_hint(FILE_HINT),
        );
        return Err(found.errors.items);
    }
    let Some(file) = file else {
        return Err(found.errors.items);
    };
    // Values that could not be read were reported (they, a table holding them, or a key
    // inside them): not again as missing or out of range.
    let reported: Vec<String> = found.errors.items.iter().map(|i| i.key.clone()).collect();
    let inside = |inner: &str, outer: &str| {
        inner == outer
            || inner
                .strip_prefix(outer)
                .is_some_and(|rest| rest.starts_with(['.', '[']))
    };
    let unread = |key: &str| {
        reported
            .iter()
            .any(|r| !r.is_empty() && (inside(r, key) || inside(key, r)))
    };
    let s = &file.experiment;
    let path_abs = std::fs::canonicalize(path).unwrap_or_else(|_| absolute(path));
    let base = path_abs.parent().map(Path::to_path_buf).unwrap_or_default();

    if s.name.is_empty() && !unread("experiment.name") {
        found.key(
            "experiment.name",
            "the experiment has no name",
            Some(format!("set `name` under [experiment]: {NAME_HINT}")),
        );
    } else if !s.name.is_empty() && !valid_name(&s.name) {
        found.key(
            "experiment.name",
            format!("invalid experiment name `{}`", s.name),
            Some(NAME_HINT.into()),
        );
    }
    let mut checks = Issues::default();
    checks.range_i64(
        "experiment",
        "repeats",
        i64::from(s.repeats),
        1,
        i64::from(MAX_REPEATS),
    );
    checks.range_i64(
        "experiment",
        "max_concurrent_executions",
        i64::try_from(s.max_concurrent_executions).unwrap_or(i64::MAX),
        1,
        MAX_CONCURRENT_EXECUTIONS as i64,
    );
    if s.max_total_tokens == Some(0) {
        checks.error("experiment", "max_total_tokens", "must be > 0");
    }
    if let Some(c) = s.max_cost_usd {
        if !(c.is_finite() && c > 0.0) {
            checks.error("experiment", "max_cost_usd", format!("{c} must be > 0"));
        }
    }
    if !(s.confidence >= 0.5 && s.confidence < 1.0) {
        checks.error_hint(
            "experiment",
            "confidence",
            format!("{} is out of range", s.confidence),
            "a probability in 0.5..1, e.g. 0.95",
        );
    }
    checks.items.retain(|i| !unread(&i.key));
    let from = found.errors.len();
    found.errors.append(checks);
    doc.locate(&mut found.errors, from);

    // The task set.
    let mut task_set = None;
    let mut tasks_file = PathBuf::new();
    if s.tasks.trim().is_empty() {
        if !unread("experiment.tasks") {
            found.key(
                "experiment.tasks",
                "the experiment has no task set",
                Some("set `tasks` to a .jsonl or .csv file, relative to this file".into()),
            );
        }
    } else {
        match tasks::Format::of(Path::new(&s.tasks)) {
            None => found.key(
                "experiment.tasks",
                format!("`{}` is neither a .jsonl nor a .csv file", s.tasks),
                Some("a task set is JSON Lines (.jsonl, one object per line) or CSV (.csv, with a header row)".into()),
            ),
            Some(format) => match resolve_file(&base, &s.tasks, "task file") {
                Ok(p) => {
                    task_set = Some(tasks::read(&p, format));
                    tasks_file = p;
                }
                Err((message, hint)) => found.key("experiment.tasks", message, Some(hint)),
            },
        }
    }

    // The variants.
    if s.variants.is_empty() && !unread("experiment.variants") {
        found.key(
            "experiment.variants",
            "the experiment has no variant",
            Some("add at least one [[experiment.variants]] with name and config".into()),
        );
    }
    let mut variants: Vec<Variant> = Vec::new();
    // Expanded name → (entry index, line of its name).
    let mut names: HashMap<String, (usize, Option<usize>)> = HashMap::new();
    // Grid variant's own name → its first expansion.
    let mut grid_firsts: HashMap<String, String> = HashMap::new();
    for (i, v) in s.variants.iter().enumerate() {
        let prefix = format!("experiment.variants[{i}]");
        let name_key = format!("{prefix}.name");
        let mut named = true;
        if v.name.is_empty() {
            named = false;
            if !unread(&name_key) {
                found.key(
                    &name_key,
                    format!("variant {} has no name", i + 1),
                    Some(format!("set `name`: {NAME_HINT}")),
                );
            }
        } else if !valid_name(&v.name) {
            named = false;
            found.key(
                &name_key,
                format!("invalid variant name `{}`", v.name),
                Some(NAME_HINT.into()),
            );
        }
        let config_key = format!("{prefix}.config");
        let config = if v.config.trim().is_empty() {
            if !unread(&config_key) {
                found.key(
                    &config_key,
                    format!("variant `{}` has no config", v.name),
                    Some("set `config` to its orchestrator TOML, relative to this file".into()),
                );
            }
            None
        } else {
            match resolve_file(&base, &v.config, "orchestrator config") {
                Ok(p) => Some(p),
                Err((message, hint)) => {
                    found.key(&config_key, message, Some(hint));
                    None
                }
            }
        };
        let expanded = expand(&mut found, i, v, &config);
        if !named {
            continue;
        }
        let line = doc.position(&name_key).map(|(l, _)| l);
        if !v.grid.is_empty() {
            if let Some(first) = expanded.first() {
                grid_firsts.insert(v.name.clone(), first.name.clone());
            }
        }
        // A grid variant's own name is taken too: `baseline` may name it.
        let mut taken: Vec<String> = expanded.iter().map(|e| e.name.clone()).collect();
        if !taken.contains(&v.name) {
            taken.insert(0, v.name.clone());
        }
        let mut clash = false;
        for name in &taken {
            if let Some((j, first_line)) = names.get(name) {
                clash = true;
                let at = first_line
                    .map(|l| format!(", line {l}"))
                    .unwrap_or_default();
                found.key(
                    &name_key,
                    format!(
                        "duplicate variant name `{name}` (also variant {}{at})",
                        j + 1
                    ),
                    Some("give every variant a unique name".into()),
                );
                break;
            }
        }
        if clash {
            continue;
        }
        for name in taken {
            names.insert(name, (i, line));
        }
        variants.extend(expanded);
    }

    // The baseline.
    let baseline = match &s.baseline {
        None => variants.first().map(|v| v.name.clone()).unwrap_or_default(),
        Some(b) => {
            if variants.iter().any(|v| &v.name == b) {
                b.clone()
            } else if let Some(first) = grid_firsts.get(b) {
                first.clone()
            } else {
                if !names.contains_key(b) {
                    let all: Vec<&str> = names.keys().map(String::as_str).collect();
                    let hint = match closest(b, all.iter().copied()) {
                        Some(c) => format!("did you mean `{c}`?"),
                        None => {
                            let mut own: Vec<&str> = s
                                .variants
                                .iter()
                                .map(|v| v.name.as_str())
                                .filter(|n| !n.is_empty())
                                .collect();
                            own.sort_unstable();
                            format!("name one of the variants: {}", own.join(", "))
                        }
                    };
                    found.key(
                        "experiment.baseline",
                        format!("the baseline `{b}` is no variant"),
                        Some(hint),
                    );
                }
                String::new()
            }
        }
    };

    let mut errors = found.errors.items;
    let tasks = match task_set {
        Some(set) => {
            errors.extend(set.issues);
            set.tasks
        }
        None => Vec::new(),
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(ExperimentFile {
        path: path_abs,
        name: s.name.clone(),
        tasks_file,
        repeats: s.repeats,
        max_concurrent_executions: s.max_concurrent_executions,
        baseline,
        max_total_tokens: s.max_total_tokens,
        max_cost_usd: s.max_cost_usd,
        seed: s.seed,
        confidence: s.confidence,
        variants,
        tasks,
    })
}

/// A path as hashed: relative to `base` when inside it (so a moved or copied experiment
/// keeps its hash), with `/` separators.
fn hashed_path(path: &Path, base: Option<&Path>) -> String {
    let rel = base.and_then(|b| path.strip_prefix(b).ok()).unwrap_or(path);
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

/// Feeds length-prefixed fields to SHA-256 (so no two field lists hash alike).
struct Fields(Sha256);

impl Fields {
    fn put(&mut self, s: &str) {
        self.0.update((s.len() as u64).to_le_bytes());
        self.0.update(s.as_bytes());
    }
    fn opt(&mut self, s: Option<&str>) {
        match s {
            None => self.0.update([0u8]),
            Some(s) => {
                self.0.update([1u8]);
                self.put(s);
            }
        }
    }
}

/// SHA-256 (hex) of what defines an experiment's executions and how they run: its name,
/// `repeats`, every variant (name, orchestrator file, environment pairs) and every task (id,
/// prompt, domain context, attachment paths). Paths count relative to the experiment file's
/// folder (variant files) and the task file's folder (attachments) when inside them. Not
/// hashed: what only schedules or reports the executions (`max_concurrent_executions`,
/// budgets, `seed`, `confidence`, `baseline`), descriptions, task metadata and line numbers.
pub fn experiment_hash(e: &ExperimentFile) -> String {
    let mut f = Fields(Sha256::new());
    f.put("mixseek-experiment/1");
    f.put(&e.name);
    f.put(&e.repeats.to_string());
    let exp_dir = e.path.parent();
    f.put(&e.variants.len().to_string());
    for v in &e.variants {
        f.put(&v.name);
        f.put(&hashed_path(&v.config, exp_dir));
        f.put(&v.env.len().to_string());
        for (name, value) in &v.env {
            f.put(name);
            f.put(value);
        }
    }
    let task_dir = e.tasks_file.parent();
    f.put(&e.tasks.len().to_string());
    for t in &e.tasks {
        f.put(&t.id);
        f.put(&t.prompt);
        f.opt(t.domain_context.as_deref());
        f.put(&t.attachments.len().to_string());
        for a in &t.attachments {
            f.put(&hashed_path(a, task_dir));
        }
    }
    f.0.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests;
