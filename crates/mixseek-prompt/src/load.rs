//! Reading the inputs of `mixseek prompt render` and `mixseek evaluate` outside a run: the
//! `[prompt_builder]` settings, loaded exactly as a run loads them ([`load_for_run`]), and the
//! context JSON ([`parse_context`]).

use crate::context::PromptContext;
use crate::error::{PromptError, TemplateKind};
use mixseek_config::PromptBuilderSettings;
use mixseek_config::load_prompt_builder;
use mixseek_config::{
    ConfigIssue, EnvVars, Issues, Origin, Overrides, Part, SourceMap, Workspace, WorkspaceSource,
};
use mixseek_config::{TomlDoc, deserialize_section};
use std::path::Path;

fn file_error(path: &str, message: impl Into<String>) -> PromptError {
    PromptError::File {
        path: path.to_string(),
        message: message.into(),
    }
}

fn invalid(issues: impl IntoIterator<Item = ConfigIssue>) -> PromptError {
    PromptError::InvalidSettings {
        issues: issues.into_iter().map(|i| i.to_string()).collect(),
    }
}

/// The `[prompt_builder]` table of a TOML text (`origin` names it in errors); a missing table
/// or key keeps the defaults. Unknown keys (with the nearest valid one), wrong types and
/// invalid values are errors, each with file, line and column.
pub fn settings_from_toml(text: &str, origin: &str) -> Result<PromptBuilderSettings, PromptError> {
    let doc = TomlDoc::parse(Path::new(origin), text).map_err(|i| invalid([i]))?;
    settings_from_doc(&doc)
}

fn settings_from_doc(doc: &TomlDoc) -> Result<PromptBuilderSettings, PromptError> {
    let section = doc
        .table
        .get("prompt_builder")
        .cloned()
        .unwrap_or_else(|| toml::Value::Table(toml::Table::new()));
    let mut issues = Issues::default();
    let settings: Option<PromptBuilderSettings> =
        deserialize_section(&section, "prompt_builder", &mut issues);
    if let Some(s) = &settings {
        s.validate("prompt_builder", &mut issues);
    }
    doc.locate(&mut issues, 0);
    match settings {
        Some(s) if issues.is_empty() => Ok(s),
        _ => Err(invalid(issues.items)),
    }
}

/// Prompt-builder settings loaded outside a run, and how they were found.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSettings {
    /// The settings themselves.
    pub settings: PromptBuilderSettings,
    /// Where they came from: a file, an orchestrator file's inline table, or the built-in
    /// defaults.
    pub origin: Origin,
    /// Warnings of the loader (legacy keys, …), already formatted.
    pub warnings: Vec<String>,
}

fn from_part(part: Part<PromptBuilderSettings>) -> Result<LoadedSettings, PromptError> {
    if !part.errors.is_empty() {
        return Err(invalid(part.errors.items));
    }
    let warnings = part
        .warnings
        .items
        .iter()
        .map(ToString::to_string)
        .collect();
    match part.value {
        Some(settings) => Ok(LoadedSettings {
            settings,
            origin: part.origin,
            warnings,
        }),
        None => Err(invalid([ConfigIssue::new(
            "prompt_builder",
            "the prompt builder settings could not be loaded",
        )])),
    }
}

/// The settings a run would use, loaded by the run's own loader
/// ([`mixseek_config::load_prompt_builder`], with its `MIXSEEK_PROMPT_BUILDER__*`
/// overrides from `env`):
///
/// * `config` is an orchestrator file (it has `[orchestrator]`): exactly what `mixseek exec
///   -c config` would use — its `prompt_builder_config` file, else its inline
///   `[prompt_builder]` table, else `WORKSPACE/configs/prompt_builder.toml`, else the defaults
///   (the whole orchestrator configuration is loaded; only the prompt builder's problems are
///   errors here);
/// * `config` is any other file: its `[prompt_builder]` table (which it must have);
/// * no `config`: `WORKSPACE/configs/prompt_builder.toml`, else the defaults with the
///   original's warning `Configuration file not found: {path}. Using default configuration.`
pub fn load_for_run(
    config: Option<&Path>,
    workspace: &Path,
    env: &EnvVars,
) -> Result<LoadedSettings, PromptError> {
    let ws = Workspace {
        root: workspace.to_path_buf(),
        source: WorkspaceSource::Cli,
    };
    let mut sources = SourceMap::default();
    let Some(path) = config else {
        let implicit = ws.configs_dir().join("prompt_builder.toml");
        let origin = if implicit.is_file() {
            Origin::Workspace(implicit)
        } else {
            tracing::warn!(
                "Configuration file not found: {}. Using default configuration.",
                implicit.display()
            );
            Origin::BuiltIn
        };
        return from_part(load_prompt_builder(origin, None, env, &mut sources));
    };
    let doc = TomlDoc::read(path, "prompt builder config").map_err(|i| invalid([i]))?;
    if !doc.table.contains_key("orchestrator") {
        return from_part(load_prompt_builder(
            Origin::Explicit(path.to_path_buf()),
            None,
            env,
            &mut sources,
        ));
    }
    let report = mixseek_config::load(path, &ws, env, &Overrides::default());
    if report.prompt_builder.value.is_none() && report.prompt_builder.errors.is_empty() {
        // The orchestrator file itself did not load; its errors say why.
        let mut issues = report.orchestrator.errors.items;
        if issues.is_empty() {
            issues.push(ConfigIssue::new(
                "orchestrator",
                "the orchestrator config could not be loaded",
            ));
        }
        return Err(invalid(issues));
    }
    from_part(report.prompt_builder)
}

/// The fields a context file must have for `kind` (`ranking` may be `null`: no store).
pub fn required_fields(kind: TemplateKind) -> &'static [&'static str] {
    match kind {
        TemplateKind::Team | TemplateKind::Judgment => &[
            "user_prompt",
            "round_number",
            "team_id",
            "team_name",
            "ranking",
        ],
        TemplateKind::Evaluator => &["user_prompt", "submission"],
    }
}

/// Every key a context file may have (`user_query` is another name for `user_prompt`).
pub const CONTEXT_KEYS: &[&str] = &[
    "user_prompt",
    "user_query",
    "round_number",
    "team_id",
    "team_name",
    "execution_id",
    "round_history",
    "ranking",
    "submission",
    "domain_context",
    "language",
    "system_prompt_suffix",
    "prompt_suffix",
    "attachments",
];

/// Parses a context JSON for `kind` (`origin` names it in errors): bad JSON, an unknown key
/// (with the nearest valid one), a wrong type (with its path) or a missing required field is
/// an error. For team and judgment prompts `ranking` must be given: a list, or `null` when
/// there is no store (a misspelt key must not silently mean "no store").
pub fn parse_context(
    json: &str,
    kind: TemplateKind,
    origin: &str,
) -> Result<PromptContext, PromptError> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| file_error(origin, format!("invalid JSON: {e}")))?;
    let object = value
        .as_object()
        .ok_or_else(|| file_error(origin, "the context must be a JSON object"))?;
    let unknown: Vec<String> = object
        .keys()
        .filter(|k| !CONTEXT_KEYS.contains(&k.as_str()))
        .map(|k| {
            let hint = mixseek_config::closest(k, CONTEXT_KEYS.iter().copied())
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            format!("unknown key `{k}`{hint}")
        })
        .collect();
    if !unknown.is_empty() {
        return Err(file_error(
            origin,
            format!(
                "{}; valid keys: {}",
                unknown.join("; "),
                CONTEXT_KEYS.join(", ")
            ),
        ));
    }
    for field in required_fields(kind) {
        let present = object.contains_key(*field)
            || (*field == "user_prompt" && object.contains_key("user_query"));
        if !present {
            let null_hint = if *field == "ranking" {
                " — give `\"ranking\": null` when there is no store"
            } else {
                ""
            };
            return Err(file_error(
                origin,
                format!(
                    "missing field `{field}` (required for --kind {}: {}){null_hint}",
                    kind.as_str(),
                    required_fields(kind).join(", ")
                ),
            ));
        }
    }
    serde_path_to_error::deserialize::<_, PromptContext>(&value).map_err(|e| {
        let path = e.path().to_string();
        file_error(origin, format!("`{path}`: {}", e.into_inner()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_keep_defaults_for_missing_keys_and_report_bad_values() {
        let s = settings_from_toml(
            "[prompt_builder]\nteam_user_prompt = \"x {{ user_prompt }}\"\n",
            "f.toml",
        )
        .expect("ok");
        assert_eq!(s.team_user_prompt, "x {{ user_prompt }}");
        assert_eq!(
            s.judgment_user_prompt,
            PromptBuilderSettings::default().judgment_user_prompt
        );
        let e = settings_from_toml("[prompt_builder]\nteam_user_prompt = \"  \"\n", "f.toml")
            .expect_err("blank");
        assert_eq!(
            e.to_string(),
            "invalid [prompt_builder] settings:\nf.toml:2:1: `prompt_builder.team_user_prompt`: team_user_prompt cannot be empty"
        );
        let e = settings_from_toml("[prompt_builder]\ntimezone = 9\n", "f.toml").expect_err("type");
        assert!(
            e.to_string()
                .contains("\nf.toml:2:1: `prompt_builder.timezone`: invalid type"),
            "{e}"
        );
        let e = settings_from_toml("[prompt_builder]\nteam_user_promt = \"x\"\n", "f.toml")
            .expect_err("unknown");
        assert!(
            e.to_string().contains(
                "`prompt_builder.team_user_promt`: unknown key (did you mean `team_user_prompt`?)"
            ),
            "{e}"
        );
        let e = settings_from_toml("[prompt_builder\n", "f.toml").expect_err("syntax");
        assert!(e.to_string().contains("f.toml:1:"), "{e}");
    }

    #[test]
    fn settings_load_as_a_run_loads_them() {
        let dir = tempfile::tempdir().expect("tmp");
        let ws = dir.path();
        let write = |name: &str, text: &str| std::fs::write(ws.join(name), text).expect("write");
        let none = EnvVars::default();
        std::fs::create_dir_all(ws.join("configs")).expect("mkdir");
        write(
            "configs/pb.toml",
            "[prompt_builder]\nevaluator_user_prompt = \"E {{ submission }}\"\n",
        );
        // The reference wins over an inline table, as in a run.
        write(
            "orch.toml",
            "[orchestrator]\nprompt_builder_config = \"configs/pb.toml\"\n\n[prompt_builder]\nevaluator_user_prompt = \"inline {{ submission }}\"\n",
        );
        let loaded = load_for_run(Some(&ws.join("orch.toml")), ws, &none).expect("load");
        assert_eq!(loaded.settings.evaluator_user_prompt, "E {{ submission }}");
        assert_eq!(loaded.origin, Origin::Explicit(ws.join("configs/pb.toml")));
        // An inline table alone is used; MIXSEEK_PROMPT_BUILDER__* overrides it.
        write(
            "inline.toml",
            "[orchestrator]\n\n[prompt_builder]\nevaluator_user_prompt = \"inline {{ submission }}\"\ntimezone = \"UTC\"\n",
        );
        let env = EnvVars::from_pairs([("MIXSEEK_PROMPT_BUILDER__TIMEZONE", "Asia/Tokyo")]);
        let loaded = load_for_run(Some(&ws.join("inline.toml")), ws, &env).expect("inline");
        assert_eq!(
            loaded.settings.evaluator_user_prompt,
            "inline {{ submission }}"
        );
        assert_eq!(loaded.settings.timezone.as_deref(), Some("Asia/Tokyo"));
        assert!(matches!(loaded.origin, Origin::Inline(_)));

        write(
            "missing.toml",
            "[orchestrator]\nprompt_builder_config = \"nope.toml\"\n",
        );
        let e = load_for_run(Some(&ws.join("missing.toml")), ws, &none).expect_err("missing");
        assert!(e.to_string().contains("nope.toml"), "{e}");

        // Neither table: an orchestrator file uses the workspace file or the defaults; any
        // other file must have [prompt_builder].
        write("plain.toml", "[orchestrator]\n");
        assert_eq!(
            load_for_run(Some(&ws.join("plain.toml")), ws, &none)
                .expect("defaults")
                .settings,
            PromptBuilderSettings::default()
        );
        write("other.toml", "[evaluator]\n");
        let e = load_for_run(Some(&ws.join("other.toml")), ws, &none).expect_err("no table");
        assert!(
            e.to_string().contains("missing [prompt_builder] section"),
            "{e}"
        );

        let loaded = load_for_run(None, ws, &none).expect("defaults");
        assert_eq!(
            (loaded.settings, loaded.origin),
            (PromptBuilderSettings::default(), Origin::BuiltIn)
        );
        write(
            "configs/prompt_builder.toml",
            "[prompt_builder]\ntimezone = \"Asia/Tokyo\"\n",
        );
        let loaded = load_for_run(None, ws, &none).expect("ws");
        assert_eq!(loaded.settings.timezone.as_deref(), Some("Asia/Tokyo"));
        let env = EnvVars::from_pairs([("MIXSEEK_PROMPT_BUILDER__PROMPT_SUFFIX", "Be brief.")]);
        let loaded = load_for_run(Some(&ws.join("plain.toml")), ws, &env).expect("ws+env");
        assert_eq!(
            (
                loaded.settings.timezone.as_deref(),
                loaded.settings.prompt_suffix.as_deref()
            ),
            (Some("Asia/Tokyo"), Some("Be brief."))
        );
        write(
            "configs/prompt_builder.toml",
            "[prompt_builder]\nteam_user_prompt = \" \"\n",
        );
        let e = load_for_run(None, ws, &none).expect_err("blank");
        assert!(
            e.to_string().contains("team_user_prompt cannot be empty"),
            "{e}"
        );
    }

    #[test]
    fn context_errors_are_clear() {
        let e = parse_context("{", TemplateKind::Team, "ctx.json").expect_err("json");
        assert!(
            e.to_string()
                .starts_with("ctx.json: invalid JSON: EOF while parsing"),
            "{e}"
        );
        let e = parse_context(
            r#"{"user_prompt": "x", "team_id": "t", "team_name": "T", "ranking": null}"#,
            TemplateKind::Team,
            "ctx.json",
        )
        .expect_err("missing");
        assert_eq!(
            e.to_string(),
            "ctx.json: missing field `round_number` (required for --kind team: user_prompt, round_number, team_id, team_name, ranking)"
        );
        let e = parse_context(
            r#"{"user_prompt": "x", "round_number": 1, "team_id": "t", "team_name": "T"}"#,
            TemplateKind::Judgment,
            "ctx.json",
        )
        .expect_err("no ranking");
        assert_eq!(
            e.to_string(),
            "ctx.json: missing field `ranking` (required for --kind judgment: user_prompt, round_number, team_id, team_name, ranking) — give `\"ranking\": null` when there is no store"
        );
        let e = parse_context(
            r#"{"user_prompt": "x", "round_number": 1, "team_id": "t", "team_name": "T", "rankng": []}"#,
            TemplateKind::Team,
            "ctx.json",
        )
        .expect_err("typo");
        assert!(
            e.to_string()
                .starts_with("ctx.json: unknown key `rankng` (did you mean `ranking`?); valid keys: user_prompt, user_query,"),
            "{e}"
        );
        let e = parse_context(
            r#"{"user_prompt": "x", "round_number": 2, "team_id": "t", "team_name": "T",
                "ranking": [{"team_id": "t", "team_name": "T", "max_score": 1.0, "total_rounds": 1, "rank": 1}]}"#,
            TemplateKind::Team,
            "ctx.json",
        )
        .expect_err("nested unknown");
        assert!(
            e.to_string()
                .starts_with("ctx.json: `ranking[0].rank`: unknown field `rank`"),
            "{e}"
        );
        let c = parse_context(
            r#"{"user_prompt": "x", "round_number": 2, "team_id": "t", "team_name": "T", "ranking": null}"#,
            TemplateKind::Team,
            "ctx.json",
        )
        .expect("null ranking");
        assert_eq!(c.ranking, None);
        let e = parse_context(
            r#"{"user_prompt": "x", "round_number": 2, "team_id": "t", "team_name": "T", "ranking": null,
                "round_history": [{"round_number": 1, "submission_content": "s", "evaluation_score": "high", "score_details": {}}]}"#,
            TemplateKind::Team,
            "ctx.json",
        )
        .expect_err("type");
        assert!(
            e.to_string().starts_with(
                "ctx.json: `round_history[0].evaluation_score`: invalid type: string \"high\""
            ),
            "{e}"
        );
        let e = parse_context("[]", TemplateKind::Team, "ctx.json").expect_err("array");
        assert_eq!(e.to_string(), "ctx.json: the context must be a JSON object");
        let c = parse_context(
            r#"{"user_query": "q", "submission": "s"}"#,
            TemplateKind::Evaluator,
            "ctx.json",
        )
        .expect("ok");
        assert_eq!(c.user_prompt, "q");
        let e = parse_context(
            r#"{"user_prompt": "q"}"#,
            TemplateKind::Evaluator,
            "ctx.json",
        )
        .expect_err("missing");
        assert!(e.to_string().contains("missing field `submission`"));
    }
}
