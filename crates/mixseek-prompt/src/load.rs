//! Reading the inputs of `mixseek prompt render` outside a run: `[prompt_builder]` settings
//! from a TOML file (a prompt-builder file, or an orchestrator file with an inline
//! `[prompt_builder]` table or a `prompt_builder_config` reference) and the context JSON.

use crate::context::PromptContext;
use crate::error::{PromptError, TemplateKind};
use mixseek_config::doc::{TomlDoc, deserialize_section};
use mixseek_config::prompt_builder::PromptBuilderSettings;
use mixseek_config::{ConfigIssue, Issues};
use std::path::{Path, PathBuf};

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

/// Loads settings from `path`: its `[prompt_builder]` table; else the file named by its
/// `[orchestrator] prompt_builder_config` (relative to `workspace`), which must exist; else
/// the defaults.
pub fn load_settings(path: &Path, workspace: &Path) -> Result<PromptBuilderSettings, PromptError> {
    let doc = TomlDoc::read(path, "prompt builder config").map_err(|i| invalid([i]))?;
    if doc.table.contains_key("prompt_builder") {
        return settings_from_doc(&doc);
    }
    let reference = doc
        .table
        .get("orchestrator")
        .and_then(|o| o.get("prompt_builder_config"))
        .and_then(|v| v.as_str());
    match reference {
        Some(rel) => {
            let target = resolve_in_workspace(rel, workspace);
            if !target.is_file() {
                return Err(file_error(
                    &path.display().to_string(),
                    format!(
                        "PromptBuilder config file not found: {}\nPlease check the path specified in prompt_builder_config.",
                        target.display()
                    ),
                ));
            }
            let doc = TomlDoc::read(&target, "prompt builder config").map_err(|i| invalid([i]))?;
            settings_from_doc(&doc)
        }
        None => Ok(PromptBuilderSettings::default()),
    }
}

/// The workspace's implicit settings: `{workspace}/configs/prompt_builder.toml` when it exists,
/// else the defaults.
pub fn load_workspace_settings(workspace: &Path) -> Result<PromptBuilderSettings, PromptError> {
    let path = workspace.join("configs").join("prompt_builder.toml");
    if path.is_file() {
        let doc = TomlDoc::read(&path, "prompt builder config").map_err(|i| invalid([i]))?;
        settings_from_doc(&doc)
    } else {
        tracing::debug!(path = %path.display(), "no prompt_builder.toml in the workspace; using the defaults");
        Ok(PromptBuilderSettings::default())
    }
}

fn resolve_in_workspace(path: &str, workspace: &Path) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        workspace.join(p)
    }
}

/// The fields a context file must have for `kind`.
pub fn required_fields(kind: TemplateKind) -> &'static [&'static str] {
    match kind {
        TemplateKind::Team | TemplateKind::Judgment => {
            &["user_prompt", "round_number", "team_id", "team_name"]
        }
        TemplateKind::Evaluator => &["user_prompt", "submission"],
    }
}

/// Parses a context JSON for `kind` (`origin` names it in errors): bad JSON, a wrong type
/// (with its path) or a missing required field is an error.
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
    for field in required_fields(kind) {
        let present = object.contains_key(*field)
            || (*field == "user_prompt" && object.contains_key("user_query"));
        if !present {
            return Err(file_error(
                origin,
                format!(
                    "missing field `{field}` (required for --kind {}: {})",
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
    fn load_follows_the_orchestrator_reference() {
        let dir = tempfile::tempdir().expect("tmp");
        let ws = dir.path();
        std::fs::create_dir_all(ws.join("configs")).expect("mkdir");
        std::fs::write(
            ws.join("configs/pb.toml"),
            "[prompt_builder]\nevaluator_user_prompt = \"E {{ submission }}\"\n",
        )
        .expect("write");
        std::fs::write(
            ws.join("orch.toml"),
            "[orchestrator]\nprompt_builder_config = \"configs/pb.toml\"\n",
        )
        .expect("write");
        let s = load_settings(&ws.join("orch.toml"), ws).expect("load");
        assert_eq!(s.evaluator_user_prompt, "E {{ submission }}");

        std::fs::write(
            ws.join("missing.toml"),
            "[orchestrator]\nprompt_builder_config = \"nope.toml\"\n",
        )
        .expect("write");
        let e = load_settings(&ws.join("missing.toml"), ws).expect_err("missing");
        assert!(
            e.to_string()
                .contains("PromptBuilder config file not found: "),
            "{e}"
        );
        assert!(
            e.to_string()
                .ends_with("\nPlease check the path specified in prompt_builder_config."),
            "{e}"
        );

        std::fs::write(ws.join("plain.toml"), "[orchestrator]\nmax_rounds = 2\n").expect("write");
        assert_eq!(
            load_settings(&ws.join("plain.toml"), ws).expect("defaults"),
            PromptBuilderSettings::default()
        );

        assert_eq!(
            load_workspace_settings(ws).expect("defaults"),
            PromptBuilderSettings::default()
        );
        std::fs::write(
            ws.join("configs/prompt_builder.toml"),
            "[prompt_builder]\ntimezone = \"Asia/Tokyo\"\n",
        )
        .expect("write");
        assert_eq!(
            load_workspace_settings(ws).expect("ws").timezone.as_deref(),
            Some("Asia/Tokyo")
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
            r#"{"user_prompt": "x", "team_id": "t", "team_name": "T"}"#,
            TemplateKind::Team,
            "ctx.json",
        )
        .expect_err("missing");
        assert_eq!(
            e.to_string(),
            "ctx.json: missing field `round_number` (required for --kind team: user_prompt, round_number, team_id, team_name)"
        );
        let e = parse_context(
            r#"{"user_prompt": "x", "round_number": 2, "team_id": "t", "team_name": "T",
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
