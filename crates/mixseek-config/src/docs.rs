//! The configuration reference (docs/configuration.md), generated from the settings types'
//! JSON schemas and defaults, so the documentation cannot drift from the code (a test
//! compares the file with this output; `MIXSEEK_UPDATE_DOCS=1 cargo test -p mixseek-config
//! config_reference` rewrites it).

use serde_json::Value;

fn resolve<'a>(root: &'a Value, v: &'a Value) -> &'a Value {
    if let Some(r) = v.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or_default();
        if let Some(d) = root.get("$defs").and_then(|d| d.get(name)) {
            return resolve(root, d);
        }
    }
    v
}

fn type_name(root: &Value, v: &Value) -> String {
    if let Some(any) = v.get("anyOf").and_then(Value::as_array) {
        let parts: Vec<String> = any
            .iter()
            .filter(|x| x.get("type") != Some(&Value::from("null")))
            .map(|x| type_name(root, x))
            .collect();
        let nullable = any
            .iter()
            .any(|x| x.get("type") == Some(&Value::from("null")));
        return format!(
            "{}{}",
            parts.join(" | "),
            if nullable { " (optional)" } else { "" }
        );
    }
    let v2 = resolve(root, v);
    if let Some(e) = v2.get("enum").and_then(Value::as_array) {
        return e
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(" \\| ");
    }
    if let Some(one) = v2.get("oneOf").and_then(Value::as_array) {
        let vals: Vec<String> = one
            .iter()
            .filter_map(|x| {
                x.get("const")
                    .or_else(|| x.get("enum").and_then(|e| e.get(0)))
            })
            .map(|x| x.to_string())
            .collect();
        if !vals.is_empty() {
            return vals.join(" \\| ");
        }
    }
    match v2.get("type") {
        Some(Value::String(t)) => match t.as_str() {
            "array" => format!(
                "array of {}",
                v2.get("items")
                    .map(|i| type_name(root, i))
                    .unwrap_or_else(|| "values".into())
            ),
            "object" if v2.get("properties").is_some() => "table".into(),
            "object" => match v2.get("additionalProperties") {
                Some(ap) if ap.is_object() => format!("table of {}", type_name(root, ap)),
                _ => "table".into(),
            },
            "integer" => "integer".into(),
            "number" => "float".into(),
            other => other.into(),
        },
        Some(Value::Array(ts)) => {
            let non_null: Vec<String> = ts
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .map(|t| match t {
                    "number" => "float".to_string(),
                    "array" => format!(
                        "array of {}",
                        v2.get("items")
                            .map(|i| type_name(root, i))
                            .unwrap_or_else(|| "values".into())
                    ),
                    other => other.to_string(),
                })
                .collect();
            let nullable = ts.iter().any(|t| t == "null");
            format!(
                "{}{}",
                non_null.join(" | "),
                if nullable { " (optional)" } else { "" }
            )
        }
        // A free-form value (`serde_json::Value`): anything, and it may be left out.
        _ => "any value (optional)".into(),
    }
}

fn default_text(default: Option<&Value>) -> String {
    match default {
        None | Some(Value::Null) => "—".into(),
        Some(Value::String(s)) if s.chars().count() > 60 => {
            "(long text, see the shipped default)".into()
        }
        Some(Value::Array(a)) if a.is_empty() => "`[]`".into(),
        Some(Value::Object(o)) if o.is_empty() => "`{}`".into(),
        Some(cur @ (Value::Object(_) | Value::Array(_))) => {
            let s = cur.to_string();
            if s.chars().count() > 60 {
                "(see below)".into()
            } else {
                format!("`{s}`")
            }
        }
        // JSON text: strings quoted, newlines as `\n`.
        Some(other) => format!("`{other}`"),
    }
}

/// Keys that have no default: the file must set them (validation says so when it does not).
const REQUIRED: &[&str] = &[
    "orchestrator.teams[].config",
    "hooks[].on",
    "privacy.extra_patterns[].name",
    "privacy.extra_patterns[].pattern",
    "team.team_id",
    "team.team_name",
    "workflow.workflow_id",
    "workflow.workflow_name",
    "workflow.steps[].id",
    "workflow.steps[].executors[].name",
    "workflow.steps[].executors[].type",
    "metrics[].name",
    "prompt_builder.injections[].name",
    "experiment.name",
    "experiment.tasks",
    "experiment.variants[].name",
    "experiment.variants[].config",
];

/// The name of the type a schema refers to (directly or as the non-null arm of `anyOf`).
fn ref_name(v: &Value) -> Option<&str> {
    if let Some(r) = v.get("$ref").and_then(Value::as_str) {
        return r.rsplit('/').next();
    }
    v.get("anyOf")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().find_map(ref_name))
}

/// The defaults of a settings type by its schema name: used for array items, `<name>`
/// entries and optional tables, whose defaults the enclosing type cannot show. A type that
/// is not listed here makes the reference test fail (its keys would have no default).
fn type_default(name: &str) -> Option<Value> {
    use crate::evaluator::{LlmDefaultSettings, MetricSettings};
    use crate::orchestrator::{HookSettings, TeamEntry};
    use crate::privacy::{PiiPattern, PrivacySettings};
    use crate::prompt_builder::{InjectionRuleSettings, PromptBuilderSettings};
    use crate::providers::{CacheSettings, Price, ProviderSettings};
    use crate::team::{LeaderSettings, MemberSettings};
    let v = match name {
        "ProviderSettings" => serde_json::to_value(ProviderSettings::default()),
        "Price" => serde_json::to_value(Price::default()),
        "CacheSettings" => serde_json::to_value(CacheSettings::default()),
        "PrivacySettings" => serde_json::to_value(PrivacySettings::default()),
        "PiiPattern" => serde_json::to_value(PiiPattern::default()),
        "HookSettings" => serde_json::to_value(HookSettings::default()),
        "TeamEntry" => serde_json::to_value(TeamEntry::default()),
        "PromptBuilderSettings" => serde_json::to_value(PromptBuilderSettings::default()),
        "InjectionRuleSettings" => serde_json::to_value(InjectionRuleSettings::default()),
        "LeaderSettings" => serde_json::to_value(LeaderSettings::default()),
        "MemberSettings" => serde_json::to_value(MemberSettings::default()),
        "WorkflowStep" => serde_json::to_value(crate::workflow::WorkflowStep::default()),
        "ExecutorSettings" => serde_json::to_value(crate::workflow::ExecutorSettings::default()),
        "MetricSettings" => serde_json::to_value(MetricSettings::default()),
        "LlmDefaultSettings" => serde_json::to_value(LlmDefaultSettings::default()),
        "VariantSettings" => serde_json::to_value(crate::experiment::VariantSettings::default()),
        _ => return None,
    };
    v.ok()
}

fn walk(
    root: &Value,
    node: &Value,
    defaults: &Value,
    prefix: &str,
    out: &mut String,
    depth: usize,
) {
    let node = resolve(root, node);
    let Some(props) = node.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, schema) in props {
        let full = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        let desc = schema
            .get("description")
            .or_else(|| resolve(root, schema).get("description"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .replace('\n', " ")
            .replace('|', "\\|");
        let own = defaults.get(key).filter(|v| !v.is_null());
        let shown = if REQUIRED.contains(&full.as_str()) {
            "required".to_string()
        } else {
            default_text(own)
        };
        out.push_str(&format!(
            "| `{full}` | {} | {shown} | {desc} |\n",
            type_name(root, schema)
        ));
        // Children of an unset optional table show the defaults of its type.
        let child_defaults = own
            .cloned()
            .or_else(|| ref_name(schema).and_then(type_default))
            .unwrap_or(Value::Null);
        if depth < 6 {
            let inner = resolve(root, schema);
            let inner = inner
                .get("anyOf")
                .and_then(Value::as_array)
                .and_then(|a| {
                    a.iter()
                        .map(|x| resolve(root, x))
                        .find(|x| x.get("properties").is_some() || x.get("items").is_some())
                })
                .unwrap_or(inner);
            if inner.get("properties").is_some() {
                walk(root, inner, &child_defaults, &full, out, depth + 1);
            } else if let Some(items) = inner.get("items") {
                let it = resolve(root, items);
                if it.get("properties").is_some() {
                    let item_defaults = ref_name(items).and_then(type_default).unwrap_or_default();
                    walk(
                        root,
                        it,
                        &item_defaults,
                        &format!("{full}[]"),
                        out,
                        depth + 1,
                    );
                }
            } else if let Some(ap) = inner.get("additionalProperties") {
                let it = resolve(root, ap);
                if it.get("properties").is_some() {
                    let entry_defaults = ref_name(ap).and_then(type_default).unwrap_or_default();
                    walk(
                        root,
                        it,
                        &entry_defaults,
                        &format!("{full}.<name>"),
                        out,
                        depth + 1,
                    );
                }
            }
        }
    }
}

fn section<T: schemars::JsonSchema + serde::Serialize>(
    title: &str,
    intro: &str,
    defaults: &T,
) -> String {
    let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
    let defaults = serde_json::to_value(defaults).unwrap_or_default();
    let mut out =
        format!("## {title}\n\n{intro}\n\n| key | type | default | meaning |\n|---|---|---|---|\n");
    walk(&schema, &schema, &defaults, "", &mut out, 0);
    out.push('\n');
    out
}

/// A standalone prompt-builder TOML (`prompt_builder_config = "..."` or
/// `WORKSPACE/configs/prompt_builder.toml`).
#[derive(serde::Serialize, schemars::JsonSchema, Default)]
struct PromptBuilderFile {
    /// The templates, time zone and injection rules (the same keys as an inline
    /// `[prompt_builder]` table of the orchestrator file).
    prompt_builder: crate::prompt_builder::PromptBuilderSettings,
}

/// What the experiment file's table cannot say: dotted keys, grids and task sets.
const EXPERIMENT_NOTES: &str = "\
### Overrides and grids

The keys of `overrides` and `grid` are dotted keys that mean exactly what the `MIXSEEK_*` variables above mean: \
`orchestrator.max_rounds` (or `max_rounds`) is `MIXSEEK_ORCHESTRATOR__MAX_ROUNDS`, `team.leader.model` is \
`MIXSEEK_TEAM__LEADER__MODEL` (every team file), `leader.temperature` is `MIXSEEK_LEADER__TEMPERATURE`, and so are \
`workflow.*`, `evaluator.*`, `judgment.*`, `prompt_builder.*`, `providers.<name>.<key>`, `pricing.\"<model>\".<key>`, \
`cache.*`, `privacy.*` and `hooks[N].<key>` (quote a segment that holds a dot; an unquoted TOML dotted key, \
`overrides = { leader.temperature = 0.9 }`, reads the same). A variant runs with these variables (the value as a TOML \
literal, strings quoted), and they win over the TOML files and over the process's own `MIXSEEK_*` variables. A key \
that names no setting is an **error** here, at its line, with the closest valid key (a variable is only a warning); \
the values are checked when the variant's configuration is loaded, and such an error names the variant.

A grid gives each key an array of values (at least one, each once); the variant expands into one variant per \
combination, the first key varying slowest, at most 1000, named `name[key=value,...]` (strings without quotes, long \
values cut): `grid[team.leader.model=mock:a,leader.temperature=0.2]`. A grid may sit next to `overrides`, but no \
setting may be given twice (in both, or a table and a key inside it). Variant names must be unique after expansion, \
and `baseline` may name a grid variant itself (its first expansion).

### Task sets

`tasks` names a JSON Lines file (`.jsonl`: one JSON object per line, blank lines skipped) or a CSV file (`.csv`: a \
header row, then one task per record, quoted fields may hold commas and line breaks). At most 1,000,000 tasks; \
an empty set is an error.

| field | JSON Lines | CSV column | meaning |
|---|---|---|---|
| `id` | string or integer | text | required, unique, non-empty, no control characters; an integer id becomes its decimal text |
| `prompt` | string | text | required, not blank: the user prompt the teams answer |
| `domain_context` | string | text (empty: none) | context about the task's domain, carried into every prompt |
| `attachments` | array of paths | paths separated by `;` | files attached to the prompt, relative to the task file's folder; each must exist when the set is loaded |
| `metadata` | object | a JSON object (empty: none) | free-form, for reports |
| any other | any value | text | kept in the task's metadata |

Every problem names the task file and line (a CSV record's first line): invalid JSON (with its column), a missing \
`prompt` or `id` (a CSV without an `id` or `prompt` column: its header line), a duplicate id (with the line of the \
first), a wrong type, an attachment that does not exist (with the task's id and the path tried).
";

/// The whole reference, as committed in docs/configuration.md.
pub(crate) fn reference_markdown() -> String {
    let mut s = String::from(
        "# Configuration reference\n\n\
         Generated from the settings types (`mixseek-config`); a test fails when this file and the code disagree.\n\
         Regenerate with `MIXSEEK_UPDATE_DOCS=1 cargo test -p mixseek-config config_reference`.\n\n\
         Layering, highest first: command-line flags (`exec --timeout`) > `MIXSEEK_*` environment variables > TOML > defaults.\n\n\
         ## Environment variables\n\n\
         Names are case-insensitive and use `__` for nesting; nested variables change only their key (deep merge).\n\
         A value is read as a TOML literal (`5`, `true`, `[\"a\", \"b\"]`), else as JSON, else as a plain string.\n\n\
         - `MIXSEEK_<KEY>` or `MIXSEEK_ORCHESTRATOR__<KEY>` sets `orchestrator.<key>`: `MIXSEEK_MAX_ROUNDS=3`.\n\
         - `MIXSEEK_PROVIDERS__<NAME>__<KEY>`, `MIXSEEK_PRICING__<NAME>__<KEY>`, `MIXSEEK_CACHE__<KEY>`, `MIXSEEK_PRIVACY__<KEY>`\n  \
           set the top-level tables of the orchestrator file: `MIXSEEK_PROVIDERS__OLLAMA__BASE_URL=http://localhost:11434/v1`\n  \
           sets `providers.ollama.base_url`. `MIXSEEK_HOOKS__<N>__<KEY>` sets `hooks[N].<key>` (N one past the last hook adds one).\n  \
           `MIXSEEK_CACHE='{\"enabled\": true}'` replaces a whole table.\n\
         - `MIXSEEK_TEAM__<KEY>` applies to every team file (`MIXSEEK_TEAM__LEADER__MODEL`), `MIXSEEK_LEADER__<KEY>` to every\n  \
           team's leader; `MIXSEEK_EVALUATOR__<KEY>`, `MIXSEEK_JUDGMENT__<KEY>` and `MIXSEEK_PROMPT_BUILDER__<KEY>` to those settings\n  \
           (with or without a file).\n\
         - A variable that names a setting but holds a value it does not accept (`MIXSEEK_MAX_ROUNDS=abc`) is an error\n  \
           naming the variable. A `MIXSEEK_` variable that names no setting is a **warning**, never an error (the\n  \
           environment is shared with other tools): `exec --dry-run` and `config validate` list it, every command that loads\n  \
           the configuration logs it, with the closest valid variable (`MIXSEEK_MAX_ROUNDZ`: did you mean\n  \
           `MIXSEEK_MAX_ROUNDS`?), and the run goes on without it. `MIXSEEK_TEAM__*` and `MIXSEEK_LEADER__*` are checked\n  \
           against each team file loaded and reported once. `MIXSEEK_UI__*` (the web UI's, below) and the original's\n  \
           `MIXSEEK_MEMBER__*` (its standalone `mixseek member` command) are not settings of a file: no warning.\n\n\
         Variables that are not settings of a file, read by the command line (a flag wins over its variable; a\n\
         variable with a value it does not accept stops the command with exit 2, naming it):\n\n",
    );
    for (name, meaning) in crate::env::NON_SETTING_VARS {
        s.push_str(&format!("- `{name}`: {meaning}.\n"));
    }
    s.push_str(
        "\nVariables of the original MixSeek that mixseek does not read; a set one gets the unknown-variable warning:\n\n",
    );
    for (name, note) in crate::env::UNSUPPORTED_VARS {
        s.push_str(&format!("- `{name}`: {note}.\n"));
    }
    s.push_str(
        "\n\
         ## Unknown keys\n\n\
         A key that is not in the tables below is an error in every file kind (orchestrator, team, member, evaluator,\n\
         judgment, prompt builder), reported with the file, the key path, line:column and the closest valid key\n\
         (did you mean `max_rounds`?). The original MixSeek ignored typos in team, member, evaluator and judgment files;\n\
         a misspelt `wieght` silently changed the run, so this is a deliberate difference. The keys the original accepts\n\
         without any effect still load, with a warning (`ignored key`), so a Python MixSeek configuration loads unchanged:\n\
         `environment` in team, leader, member, evaluator, judgment and prompt-builder settings (the orchestrator's\n\
         `environment` is a key of its own, checked: `dev`, `staging` or `prod`), `orchestrator.workspace_path`, and the\n\
         member keys `capabilities`, `retry_config`, `usage_limits` and `instructions`. Free-form values are not checked:\n\
         a member's `tool_settings`, `metadata` and `plugin`, and the evaluator's `custom_metrics`.\n\n\
         ## Paths\n\n\
         Relative paths resolve against the workspace first, then the folder of the file that names them; when neither exists\n\
         the error names both. A relative path may not leave that folder through `..` or a symlink. Absolute paths are used as\n\
         written: they are an explicit choice of whoever wrote the file, so they are not confined to the workspace.\n\n",
    );
    s.push_str(&section::<crate::load::OrchestratorFile>(
        "Orchestrator file",
        "The file given to `mixseek exec -c`. `[orchestrator]` is required; the other tables are optional. \
         A `[prompt_builder]` table here replaces the prompt-builder file (see below for its keys).",
        &crate::load::OrchestratorFile::default(),
    ));
    s.push_str(&section::<crate::team::TeamFile>(
        "Team file",
        "Referenced by `[[orchestrator.teams]] config`. `[team]` is required.",
        &crate::team::TeamFile::default(),
    ));
    s.push_str(&section::<crate::team::MemberFile>(
        "Member file",
        "Referenced by `[[team.members]] config`; only `tool_name` and `tool_description` may be overridden there.",
        &crate::team::MemberFile::default(),
    ));
    s.push_str(&section::<crate::workflow::WorkflowFile>(
        "Workflow file",
        "Also referenced by `[[orchestrator.teams]] config`: a file with `[workflow]` (and no `[team]`) is a workflow, \
         which plays rounds like a team but runs fixed steps instead of a leader (user guide, \"Workflows\"). \
         `workflow_id`, `workflow_name` and at least one step with one executor are required; `workflow_id` and \
         `workflow_name` are the unit's team id and name everywhere. Unknown keys of `[workflow]` itself are \
         ignored with a warning, as the original ignores them; unknown keys of steps, executors and plugins are errors. \
         Each executor `type` accepts only its keys: agents (`plain`, `web_search`, `web_fetch`, `code_execution`) the \
         LLM keys, `function` only `plugin`, `timeout_seconds` and `python`, `command` only `command`, \
         `timeout_seconds` and `metadata`. `MIXSEEK_WORKFLOW__<KEY>` overrides a key of `[workflow]` in every \
         workflow file of the run.",
        &crate::workflow::WorkflowFile::default(),
    ));
    s.push_str(&section::<crate::evaluator::EvaluatorSettings>(
        "Evaluator file",
        "Flat keys. Without any evaluator file the metrics are ClarityCoherence 0.334, Coverage 0.333, Relevance 0.333. \
         Weights: either every metric has one or none does (equal weights); they must sum to 1.0 ± 0.001 \
         (`config validate` and `exec --dry-run` check it).",
        &crate::evaluator::EvaluatorSettings::default(),
    ));
    s.push_str(&section::<crate::judgment::JudgmentSettings>(
        "Judgment file",
        "Flat keys.",
        &crate::judgment::JudgmentSettings::default(),
    ));
    s.push_str(&section::<crate::arena::ArenaFile>(
        "Arena file",
        "Ours: given to `mixseek arena -c`, or named by an orchestrator's `arena_config` so that `exec` ends with \
         an arena. `[arena]` is required. The judge compares the teams' submissions two at a time, each pair \
         twice with the positions swapped, and the verdicts are fitted with Bradley–Terry (user guide, \
         \"Reading results with confidence\"). `mixseek experiment arena -c` reads the same file; there the \
         contestants are the experiment's variants (user guide, \"Arena of variants\").",
        &crate::arena::ArenaFile::default(),
    ));
    s.push_str(&section::<PromptBuilderFile>(
        "Prompt-builder file",
        "Named by `orchestrator.prompt_builder_config`, else `WORKSPACE/configs/prompt_builder.toml` when it exists \
         (an inline `[prompt_builder]` table of the orchestrator file wins over the workspace file). \
         The keys sit under a `[prompt_builder]` table, as in the original; missing keys keep the shipped defaults.",
        &PromptBuilderFile::default(),
    ));
    s.push_str(&section::<crate::experiment::ExperimentToml>(
        "Experiment file",
        "Ours: an experiment runs every task of a task set with every variant, `repeats` times; each run \
         (a variant, a task, a repeat) is one execution of the variant's orchestrator file with the task as its \
         prompt. `[experiment]` with `name`, `tasks` and at least one `[[experiment.variants]]` is required; \
         relative paths resolve against the experiment file's folder. The file is checked like the others: \
         unknown keys with the closest valid one, wrong types and ranges, each at its line.",
        &crate::experiment::ExperimentToml::default(),
    ));
    s.push_str(EXPERIMENT_NOTES);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_reference_matches_docs() {
        // At run time: a test binary reused from another checkout has the other path baked in.
        let manifest_dir = std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string());
        let path = std::path::Path::new(&manifest_dir).join("../../docs/configuration.md");
        let generated = reference_markdown();
        if std::env::var("MIXSEEK_UPDATE_DOCS").is_ok() {
            std::fs::write(&path, &generated).expect("write docs");
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/configuration.md is out of date: run `MIXSEEK_UPDATE_DOCS=1 cargo test -p mixseek-config config_reference`"
        );
        for key in [
            "`orchestrator.max_rounds`",
            "`team.leader.model`",
            "`metrics[].weight`",
            "`judge_on_final_round`",
            "`providers.<name>.base_url`",
        ] {
            assert!(generated.contains(key), "{key} missing from the reference");
        }
    }

    /// The cells of every table row: `[key, type, default, meaning]`.
    fn rows(md: &str) -> Vec<Vec<String>> {
        md.lines()
            .filter(|l| l.starts_with("| `"))
            .map(|l| {
                l.trim_start_matches("| ")
                    .trim_end_matches(" |")
                    .split(" | ")
                    .map(str::to_string)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn every_key_has_a_meaning_and_every_non_optional_key_a_default() {
        let md = reference_markdown();
        let rows = rows(&md);
        assert!(rows.len() > 150, "{} rows", rows.len());
        let mut problems = Vec::new();
        for r in &rows {
            assert_eq!(r.len(), 4, "{r:?}");
            let (key, ty, default, meaning) = (&r[0], &r[1], &r[2], &r[3]);
            if meaning.trim().is_empty() {
                problems.push(format!("{key}: no meaning (add a doc comment)"));
            }
            if default == "—" && !ty.ends_with("(optional)") {
                problems.push(format!("{key} ({ty}): no default shown"));
            }
        }
        assert!(problems.is_empty(), "{problems:#?}");
        // The defaults that used to be missing.
        for (key, default) in [
            ("`providers.<name>.max_in_flight`", "`64`"),
            ("`providers.<name>.timeout_seconds`", "`300.0`"),
            ("`providers.<name>.max_attempts`", "`6`"),
            ("`providers.<name>.backoff_initial_seconds`", "`0.5`"),
            ("`providers.<name>.backoff_max_seconds`", "`30.0`"),
            ("`hooks[].timeout_seconds`", "`10`"),
            ("`prompt_builder.builtin_injections`", "`true`"),
            ("`prompt_builder.injections[].enabled`", "`true`"),
            ("`prompt_builder.user_separator`", "`\"\\n\\n\"`"),
            ("`team.members[].allow_private_network`", "`false`"),
            ("`team.members[].fallback_models`", "`[]`"),
            ("`team.team_id`", "required"),
        ] {
            let row = rows
                .iter()
                .find(|r| r[0] == key)
                .unwrap_or_else(|| panic!("{key} missing"));
            assert_eq!(row[2], default, "{key}");
        }
        assert!(md.contains("## Prompt-builder file"));
        assert!(!md.contains("matches no setting is an error, not silently ignored"));
    }
}
