//! Environment overlays: `MIXSEEK_` prefix, `__` for nesting, case-insensitive, deep-merged
//! (a nested variable changes only that key — the original replaced the whole table).
//! Values are parsed as TOML literals (`5`, `true`, `["a", "b"]`), then JSON, else kept as
//! strings. A variable that names no setting is reported as a warning (the environment is
//! shared with other tools, so it never stops a run); a variable that names a setting but
//! has a bad value is an error naming the variable.

use crate::issues::{ConfigIssue, closest};
use crate::source::{Source, SourceMap};

/// `MIXSEEK_*` variables that are not settings of a config file: the command line reads
/// them. Each with what it does (docs/configuration.md lists them from here).
pub(crate) const NON_SETTING_VARS: &[(&str, &str)] = &[
    (
        "MIXSEEK_WORKSPACE",
        "the workspace when `-w/--workspace` is not given (else `./mixseek-workspace`)",
    ),
    (
        "MIXSEEK_LOG",
        "a `tracing` filter directive (`warn,mixseek_llm=debug`); it wins over the log level",
    ),
    (
        "MIXSEEK_LOG_FORMAT",
        "`text` or `json`: the default of `--log-format`",
    ),
    (
        "MIXSEEK_LOG_LEVEL",
        "`trace`, `debug`, `info`, `warning`, `error` or `critical`: the default of `--log-level`",
    ),
    (
        "MIXSEEK_LOG_CONSOLE",
        "`0`/`false` turns the log on stderr off, like `--no-log-console` (errors of the command itself are still printed)",
    ),
    (
        "MIXSEEK_LOG_FILE",
        "`0`/`false` turns `WORKSPACE/logs/mixseek.log` off, like `--no-log-file`",
    ),
    (
        "MIXSEEK_NO_PROGRESS",
        "`1`/`true` turns the live progress display of `mixseek exec` off, like `--no-progress`",
    ),
    (
        "MIXSEEK_UI__PORT",
        "the port of `mixseek ui`, like `--port` (default 8501)",
    ),
    (
        "MIXSEEK_UI__HOST",
        "the address `mixseek ui` listens on, like `--host` (default 127.0.0.1; another needs the access token)",
    ),
    (
        "MIXSEEK_UI__TOKEN",
        "the access token `mixseek ui` requires, like `--token` (default beyond loopback: a random one, printed)",
    ),
    (
        "MIXSEEK_UI__WORKSPACE",
        "the workspace of `mixseek ui` when `-w` is not given (before `MIXSEEK_WORKSPACE`)",
    ),
    (
        "MIXSEEK_PYTHON",
        "the Python interpreter of workflow function executors that set no `python` (else `python3` on PATH)",
    ),
    (
        "MIXSEEK_TEST_PANIC",
        "test-only fault injection, read by debug builds only: `main` panics as the command starts, `team:ID` inside team ID's task at its round 2",
    ),
    (
        "MIXSEEK_TEST_STORE_FAULT",
        "test-only fault injection, read by debug builds only: `enospc:FILE` / `erofs:FILE` fail every database write while FILE exists",
    ),
];

/// Variables the original MixSeek knows that mixseek does not read. A set one is reported
/// like any unknown variable (a warning), with this note instead of a "did you mean".
pub(crate) const UNSUPPORTED_VARS: &[(&str, &str)] = &[
    (
        "MIXSEEK_CONFIG_FILE",
        "the original MixSeek's generic config.toml is not supported: give the orchestrator file with -c",
    ),
    (
        "MIXSEEK_DEVELOPMENT_MODE",
        "a legacy variable the original MixSeek does not read either",
    ),
    (
        "MIXSEEK_CLI_OUTPUT_FORMAT",
        "a legacy variable the original MixSeek does not read either; commands take -f/--format",
    ),
    (
        "MIXSEEK_GOOGLE_GENAI_USE_VERTEXAI",
        "a legacy variable the original MixSeek does not read either; Vertex AI models use the google-vertex: prefix",
    ),
];

/// Prefixes (first segment) of settings that live in other files or are not ours. `UI` and
/// `MEMBER` are the original's web UI and standalone `mixseek member` command: ignored
/// without a warning.
pub(crate) const SECTION_PREFIXES: &[&str] = &[
    "ORCHESTRATOR",
    "TEAM",
    "LEADER",
    "MEMBER",
    "WORKFLOW",
    "EVALUATOR",
    "JUDGMENT",
    "PROMPT_BUILDER",
    "UI",
];

/// The sections of [`SECTION_PREFIXES`] that a full load ([`crate::load()`]) overlays, as
/// `MIXSEEK_<SECTION>__<KEY>`.
pub(crate) const LOADED_SECTIONS: &[&str] = &[
    "ORCHESTRATOR",
    "TEAM",
    "LEADER",
    "WORKFLOW",
    "EVALUATOR",
    "JUDGMENT",
    "PROMPT_BUILDER",
];

/// Sections whose variables are ignored without a warning (see [`SECTION_PREFIXES`]).
pub(crate) const IGNORED_SECTIONS: &[&str] = &["UI", "MEMBER"];

/// Top-level tables of the orchestrator file that env variables may set directly.
pub(crate) const TOP_LEVEL_TABLES: &[&str] = &["PROVIDERS", "PRICING", "CACHE", "PRIVACY", "HOOKS"];

/// The most `__`-separated segments a variable may have; no setting is nested nearly as
/// deep, and a longer name (which could nest tables without bound) is an unknown variable.
pub(crate) const MAX_SEGMENTS: usize = 16;

/// The hint of an unknown variable without a close valid name.
pub(crate) const NO_MATCH_HINT: &str =
    "no mixseek setting has this name; docs/configuration.md lists the variables mixseek reads";

/// A snapshot of the `MIXSEEK_*` environment variables (injectable for tests).
#[derive(Debug, Clone, Default)]
pub struct EnvVars(pub Vec<(String, String)>);

impl EnvVars {
    /// The `MIXSEEK_*` variables of this process, sorted.
    pub fn from_process() -> Self {
        let mut v: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| k.to_ascii_uppercase().starts_with("MIXSEEK_"))
            .collect();
        v.sort();
        Self(v)
    }
    /// A snapshot of the given pairs (tests).
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Self(
            pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
    /// The value of `name` (case-insensitive), if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Parses an environment value into a TOML value.
pub(crate) fn parse_value(raw: &str) -> toml::Value {
    let wrapped = format!("v = {raw}");
    if let Ok(mut t) = toml::from_str::<toml::Table>(&wrapped) {
        if let Some(v) = t.remove("v") {
            return v;
        }
    }
    if let Ok(j) = serde_json::from_str::<serde_json::Value>(raw) {
        if j.is_object() || j.is_array() {
            if let Ok(v) = toml::Value::try_from(j) {
                return v;
            }
        }
    }
    toml::Value::String(raw.to_string())
}

/// Sets `value` at `path` inside `table`, creating tables on the way (deep merge). A numeric
/// segment indexes an array (`HOOKS__0__URL` → `hooks[0].url`); the index one past the end
/// appends an item, and a missing array is created when the next segment is an index.
pub(crate) fn set_path(table: &mut toml::Table, path: &[String], value: toml::Value) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if rest.is_empty() {
        table.insert(first.clone(), value);
        return;
    }
    let entry = table
        .entry(first.clone())
        .or_insert_with(|| empty_container(&rest[0]));
    set_in(entry, rest, value);
}

fn is_index(seg: &str) -> bool {
    !seg.is_empty() && seg.len() <= 6 && seg.bytes().all(|b| b.is_ascii_digit())
}

fn empty_container(next: &str) -> toml::Value {
    if is_index(next) {
        toml::Value::Array(Vec::new())
    } else {
        toml::Value::Table(toml::Table::new())
    }
}

fn set_in(cur: &mut toml::Value, path: &[String], value: toml::Value) {
    let Some((first, rest)) = path.split_first() else {
        *cur = value;
        return;
    };
    if let toml::Value::Array(items) = cur
        && let Some(i) = first.parse::<usize>().ok().filter(|_| is_index(first))
    {
        if i >= items.len() {
            items.push(match rest.first() {
                Some(next) => empty_container(next),
                None => toml::Value::Table(toml::Table::new()),
            });
        }
        let last = items.len() - 1;
        let slot = &mut items[i.min(last)];
        if rest.is_empty() {
            *slot = value;
        } else {
            set_in(slot, rest, value);
        }
        return;
    }
    if !cur.is_table() {
        *cur = toml::Value::Table(toml::Table::new());
    }
    if let toml::Value::Table(t) = cur {
        if rest.is_empty() {
            t.insert(first.clone(), value);
        } else {
            let entry = t
                .entry(first.clone())
                .or_insert_with(|| empty_container(&rest[0]));
            set_in(entry, rest, value);
        }
    }
}

/// The dotted key of a path, with numeric segments as indices: `hooks[0].url`.
pub(crate) fn key_of(path: &[String]) -> String {
    let mut key = String::new();
    for seg in path {
        if is_index(seg) {
            key.push_str(&format!("[{seg}]"));
        } else {
            if !key.is_empty() {
                key.push('.');
            }
            key.push_str(seg);
        }
    }
    key
}

/// One variable mapped onto a file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Applied {
    /// The variable's name.
    pub var: String,
    /// Dotted key path inside the file.
    pub key: String,
}

/// Applies every variable `PREFIX<KEY>[__<SUB>...]` onto `table` under `base` (the path of the
/// section inside the file). `accept` filters keys (first segment, upper case).
pub(crate) fn overlay(
    table: &mut toml::Table,
    base: &[&str],
    prefix: &str,
    env: &EnvVars,
    accept: impl Fn(&str) -> bool,
    sources: &mut SourceMap,
) -> Vec<Applied> {
    let mut applied = Vec::new();
    for (name, raw) in &env.0 {
        let upper = name.to_ascii_uppercase();
        let Some(rest) = upper.strip_prefix(prefix) else {
            continue;
        };
        let segments = segments(rest);
        // `MIXSEEK_TEAM____` names no key, `MIXSEEK_A__A__…` nests deeper than any setting:
        // both reported by `unroutable`, never set.
        if segments.is_empty() || segments.len() > MAX_SEGMENTS || !accept(rest) {
            continue;
        }
        let mut path: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        path.extend(segments.iter().map(|s| s.to_ascii_lowercase()));
        let key = key_of(&path);
        set_path(table, &path, parse_value(raw));
        sources.set(key.clone(), Source::Env { var: name.clone() });
        applied.push(Applied {
            var: name.clone(),
            key,
        });
    }
    applied
}

/// The non-empty `__`-separated segments of a variable name (after its prefix).
fn segments(rest: &str) -> Vec<&str> {
    rest.split("__").filter(|s| !s.is_empty()).collect()
}

/// Accepts orchestrator-level variables (`MIXSEEK_MAX_ROUNDS`), not other sections or tools.
pub(crate) fn is_orchestrator_var(rest: &str) -> bool {
    let first = rest.split("__").next().unwrap_or_default();
    let full = format!("MIXSEEK_{rest}");
    !first.is_empty()
        && !is_non_setting(&full)
        && !UNSUPPORTED_VARS.iter().any(|(v, _)| *v == full)
        && !SECTION_PREFIXES.contains(&first)
        && !TOP_LEVEL_TABLES.contains(&first)
}

/// Whether `name` is one of [`NON_SETTING_VARS`] (any case).
pub(crate) fn is_non_setting(name: &str) -> bool {
    NON_SETTING_VARS
        .iter()
        .any(|(v, _)| v.eq_ignore_ascii_case(name))
}

/// The warnings about variables that no overlay of a full load reads: those of
/// [`UNSUPPORTED_VARS`] (with their note) and names that reach no key at all (`MIXSEEK_TEAM`
/// without `__<KEY>`, `MIXSEEK___`). A variable an overlay reads but whose key does not exist
/// is reported by the loader instead, with the closest valid key.
pub(crate) fn unroutable(env: &EnvVars) -> Vec<ConfigIssue> {
    let mut out = Vec::new();
    for (name, _) in &env.0 {
        let upper = name.to_ascii_uppercase();
        let Some(rest) = upper.strip_prefix("MIXSEEK_") else {
            continue;
        };
        if is_non_setting(&upper) {
            continue;
        }
        if let Some((_, note)) = UNSUPPORTED_VARS.iter().find(|(v, _)| *v == upper) {
            out.push(ConfigIssue::unknown_env_var(name.clone(), *note));
            continue;
        }
        let segs = segments(rest);
        let Some(first) = segs.first().filter(|_| segs.len() <= MAX_SEGMENTS) else {
            out.push(ConfigIssue::unknown_env_var(name.clone(), NO_MATCH_HINT));
            continue;
        };
        // Only a segment equal to the whole first part opens a section: `MIXSEEK_TEAM_X`
        // is the orchestrator key `team_x`.
        let opens_section = rest.split("__").next() == Some(*first);
        if opens_section && IGNORED_SECTIONS.contains(first) {
            continue;
        }
        if opens_section && LOADED_SECTIONS.contains(first) && segs.len() == 1 {
            out.push(ConfigIssue::unknown_env_var(
                name.clone(),
                format!("a variable of this section names its key: MIXSEEK_{first}__<KEY>"),
            ));
        }
    }
    out
}

/// The variable a misspelt one probably meant. `var` set `full_key`; the key `unknown_key`
/// (`full_key` or one of its ancestors) does not exist, and `suggestion` is the closest valid
/// key in its place. The variable's segments match the key's from the right
/// (`MIXSEEK_TEAM__LEADR__MODEL` set `team.leadr.model`; `team.leadr` is unknown, `leader` the
/// closest key: `MIXSEEK_TEAM__LEADER__MODEL`).
pub(crate) fn suggest_var(
    var: &str,
    full_key: &str,
    unknown_key: &str,
    suggestion: &str,
) -> Option<String> {
    let upper = var.to_ascii_uppercase();
    let mut segs: Vec<String> = segments(upper.strip_prefix("MIXSEEK_")?)
        .into_iter()
        .map(str::to_string)
        .collect();
    let k = crate::doc::split_path(full_key).len();
    let n = crate::doc::split_path(unknown_key).len();
    let from_right = k.checked_sub(n)?;
    let i = segs.len().checked_sub(1)?.checked_sub(from_right)?;
    *segs.get_mut(i)? = suggestion.to_ascii_uppercase();
    Some(format!("MIXSEEK_{}", segs.join("__")))
}

/// For an orchestrator-level variable (`MIXSEEK_<NAME>`, no `__`): the closest of the
/// variable the loader suggested (`candidate`) and the [`NON_SETTING_VARS`]
/// (`MIXSEEK_LOG_LEVL` → `MIXSEEK_LOG_LEVEL`), compared without the common `MIXSEEK_`.
pub(crate) fn closest_var(var: &str, candidate: Option<&str>) -> Option<String> {
    let upper = var.to_ascii_uppercase();
    let rest = upper.strip_prefix("MIXSEEK_")?;
    if rest.contains("__") {
        return candidate.map(str::to_string);
    }
    let names: Vec<&str> = candidate
        .into_iter()
        .chain(NON_SETTING_VARS.iter().map(|(v, _)| *v))
        .filter_map(|v| v.strip_prefix("MIXSEEK_"))
        .collect();
    closest(rest, names).map(|r| format!("MIXSEEK_{r}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_as_toml_then_json_then_string() {
        assert_eq!(parse_value("5"), toml::Value::Integer(5));
        assert_eq!(parse_value("true"), toml::Value::Boolean(true));
        assert_eq!(parse_value("0.5"), toml::Value::Float(0.5));
        assert_eq!(
            parse_value("openai:gpt-4o"),
            toml::Value::String("openai:gpt-4o".into())
        );
        assert!(parse_value("[\"a\", \"b\"]").is_array());
        assert!(parse_value("{\"a\": 1}").is_table());
    }

    #[test]
    fn nested_overrides_deep_merge() {
        let mut t: toml::Table =
            toml::from_str("[team.leader]\nmodel = \"a\"\ntemperature = 0.5\n").expect("toml");
        let env = EnvVars::from_pairs([("MIXSEEK_TEAM__LEADER__MODEL", "b")]);
        let mut src = SourceMap::default();
        let applied = overlay(
            &mut t,
            &["team"],
            "MIXSEEK_TEAM__",
            &env,
            |_| true,
            &mut src,
        );
        assert_eq!(applied.len(), 1);
        assert_eq!(t["team"]["leader"]["model"].as_str(), Some("b"));
        assert_eq!(t["team"]["leader"]["temperature"].as_float(), Some(0.5));
        assert_eq!(
            src.get("team.leader.model"),
            Source::Env {
                var: "MIXSEEK_TEAM__LEADER__MODEL".into()
            }
        );
    }

    #[test]
    fn numeric_segments_index_arrays() {
        let mut t: toml::Table =
            toml::from_str("[[hooks]]\non = \"round_complete\"\nurl = \"http://a\"\n")
                .expect("toml");
        let env = EnvVars::from_pairs([
            ("MIXSEEK_HOOKS__0__URL", "http://b"),
            ("MIXSEEK_HOOKS__1__ON", "team_complete"),
        ]);
        let mut src = SourceMap::default();
        let applied = overlay(
            &mut t,
            &[],
            "MIXSEEK_",
            &env,
            |r| r.starts_with("HOOKS"),
            &mut src,
        );
        assert_eq!(applied[0].key, "hooks[0].url");
        assert_eq!(t["hooks"][0]["url"].as_str(), Some("http://b"));
        assert_eq!(t["hooks"][0]["on"].as_str(), Some("round_complete"));
        assert_eq!(t["hooks"][1]["on"].as_str(), Some("team_complete"));
        // A missing array is created.
        let mut t = toml::Table::new();
        set_path(
            &mut t,
            &["a".into(), "0".into(), "b".into()],
            toml::Value::Integer(1),
        );
        assert_eq!(t["a"][0]["b"].as_integer(), Some(1));
    }

    #[test]
    fn orchestrator_filter_skips_other_sections_and_tool_vars() {
        assert!(is_orchestrator_var("MAX_ROUNDS"));
        assert!(!is_orchestrator_var("WORKSPACE"));
        assert!(!is_orchestrator_var("TEAM__TEAM_NAME"));
        assert!(!is_orchestrator_var("PROVIDERS__X__BASE_URL"));
    }
}
