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
        _ => "any".into(),
    }
}

fn default_text(defaults: &Value, path: &[String]) -> String {
    let mut cur = defaults;
    for p in path {
        match cur.get(p) {
            Some(v) => cur = v,
            None => return "—".into(),
        }
    }
    match cur {
        Value::Null => "—".into(),
        Value::String(s) if s.contains('\n') || s.chars().count() > 60 => {
            "(long text, see the shipped default)".into()
        }
        Value::Array(a) if a.is_empty() => "`[]`".into(),
        Value::Object(o) if o.is_empty() => "`{}`".into(),
        Value::Object(_) | Value::Array(_) => {
            let s = cur.to_string();
            if s.chars().count() > 60 {
                "(see below)".into()
            } else {
                format!("`{s}`")
            }
        }
        other => format!("`{other}`"),
    }
}

fn walk(
    root: &Value,
    node: &Value,
    defaults: &Value,
    prefix: &str,
    path: &mut Vec<String>,
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
        path.push(key.clone());
        out.push_str(&format!(
            "| `{full}` | {} | {} | {desc} |\n",
            type_name(root, schema),
            default_text(defaults, path)
        ));
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
                walk(root, inner, defaults, &full, path, out, depth + 1);
            } else if let Some(items) = inner.get("items") {
                let it = resolve(root, items);
                if it.get("properties").is_some() {
                    walk(
                        root,
                        it,
                        &Value::Null,
                        &format!("{full}[]"),
                        &mut Vec::new(),
                        out,
                        depth + 1,
                    );
                }
            } else if let Some(ap) = inner.get("additionalProperties") {
                let it = resolve(root, ap);
                if it.get("properties").is_some() {
                    walk(
                        root,
                        it,
                        &Value::Null,
                        &format!("{full}.<name>"),
                        &mut Vec::new(),
                        out,
                        depth + 1,
                    );
                }
            }
        }
        path.pop();
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
    walk(
        &schema,
        &schema,
        &defaults,
        "",
        &mut Vec::new(),
        &mut out,
        0,
    );
    out.push('\n');
    out
}

/// The whole reference, as committed in docs/configuration.md.
pub fn reference_markdown() -> String {
    let mut s = String::from(
        "# Configuration reference\n\n\
         Generated from the settings types (`mixseek-config`); a test fails when this file and the code disagree.\n\
         Regenerate with `MIXSEEK_UPDATE_DOCS=1 cargo test -p mixseek-config config_reference`.\n\n\
         Layering, highest first: command-line flags > `MIXSEEK_*` environment variables > TOML > defaults.\n\
         Environment variables use `__` for nesting: `MIXSEEK_MAX_ROUNDS=3` sets `orchestrator.max_rounds`;\n\
         `MIXSEEK_TEAM__LEADER__MODEL`, `MIXSEEK_LEADER__MODEL` (every team's leader), `MIXSEEK_EVALUATOR__*`,\n\
         `MIXSEEK_JUDGMENT__*`, `MIXSEEK_PROMPT_BUILDER__*`, `MIXSEEK_PROVIDERS__<NAME>__*`, `MIXSEEK_CACHE__*`,\n\
         `MIXSEEK_PRIVACY__*`. A variable that matches no setting is an error, not silently ignored.\n\
         Relative paths resolve against the workspace first, then the folder of the file that names them.\n\n",
    );
    s.push_str(&section::<crate::load::OrchestratorFile>(
        "Orchestrator file",
        "The file given to `mixseek exec -c`. `[orchestrator]` is required; the other tables are optional.",
        &crate::load::OrchestratorFile::default(),
    ));
    s.push_str(&section::<crate::team::TeamFile>(
        "Team file",
        "Referenced by `[[orchestrator.teams]] config`. Unknown keys are warnings (the original ignored them).",
        &crate::team::TeamFile::default(),
    ));
    s.push_str(&section::<crate::team::MemberFile>(
        "Member file",
        "Referenced by `[[team.members]] config`; only `tool_name` and `tool_description` may be overridden there.",
        &crate::team::MemberFile::default(),
    ));
    s.push_str(&section::<crate::evaluator::EvaluatorSettings>(
        "Evaluator file",
        "Flat keys. Without any evaluator file the metrics are ClarityCoherence 0.334, Coverage 0.333, Relevance 0.333.",
        &crate::evaluator::EvaluatorSettings::default(),
    ));
    s.push_str(&section::<crate::judgment::JudgmentSettings>(
        "Judgment file",
        "Flat keys.",
        &crate::judgment::JudgmentSettings::default(),
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_reference_matches_docs() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
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
}
