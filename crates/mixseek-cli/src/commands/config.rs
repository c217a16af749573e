//! `mixseek config show` / `mixseek config validate`.

use crate::context::Ctx;
use crate::error::CliError;
use crate::output::{TextOrJson, mask_secrets, to_json_pretty};
use mixseek_config::{EnvVars, LoadReport, LoadedUnit, Overrides, SourceMap};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub(crate) enum ConfigCommand {
    /// Show every effective setting with its source (default, file:line, env, cli); secrets masked
    Show(ShowArgs),
    /// Load and validate a configuration; exit 0 when valid, 2 otherwise
    Validate(ValidateArgs),
}

#[derive(clap::Args, Debug)]
pub(crate) struct ShowArgs {
    /// Orchestrator TOML (relative: against the workspace, then the current directory)
    #[arg(short = 'c', long = "config")]
    pub config: PathBuf,
    /// Only this key (e.g. `orchestrator.max_rounds`, or a bare `max_rounds`)
    pub key: Option<String>,
    #[arg(short = 'f', long = "format", value_enum, default_value = "text")]
    pub format: TextOrJson,
}

#[derive(clap::Args, Debug)]
pub(crate) struct ValidateArgs {
    /// Orchestrator TOML
    #[arg(short = 'c', long = "config")]
    pub config: PathBuf,
    #[arg(short = 'f', long = "format", value_enum, default_value = "text")]
    pub format: TextOrJson,
}

pub(crate) async fn run(cmd: ConfigCommand, ctx: &Ctx) -> Result<ExitCode, CliError> {
    match cmd {
        ConfigCommand::Show(a) => show(a, ctx),
        ConfigCommand::Validate(a) => validate(a, ctx),
    }
}

pub(crate) fn load_report(
    ctx: &Ctx,
    config: &std::path::Path,
    overrides: &Overrides,
) -> Result<LoadReport, CliError> {
    load_report_with(ctx, config, overrides, &EnvVars::from_process())
}

/// [`load_report`] with these `MIXSEEK_*` variables instead of the process's (an experiment
/// variant's overrides are added to them).
pub(crate) fn load_report_with(
    ctx: &Ctx,
    config: &std::path::Path,
    overrides: &Overrides,
    env: &EnvVars,
) -> Result<LoadReport, CliError> {
    let path = ctx.resolve_config_path(config)?;
    let mut report = mixseek_config::load(&path, &ctx.workspace, env, overrides);
    // What only the evaluator knows (its built-in metrics' names).
    mixseek_evaluator::checks::check_loaded(&mut report);
    Ok(report)
}

/// Flattens a JSON value into `(dotted path, value)` leaves.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(map) if !map.is_empty() => {
            for (k, val) in map {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&p, val, out);
            }
        }
        Value::Array(items) if !items.is_empty() && items.iter().any(|i| i.is_object()) => {
            for (i, val) in items.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), val, out);
            }
        }
        _ => out.push((prefix.to_string(), v.clone())),
    }
}

/// Every effective setting as one JSON object, `"section › key": value`, secrets masked as
/// `config show` masks them: recorded in the execution file so the web UI can compare the
/// configurations of executions.
pub(crate) fn settings_snapshot(report: &LoadReport) -> Value {
    let mut out = serde_json::Map::new();
    for mut s in sections(report) {
        mask_secrets(&mut s.settings);
        let mut leaves = Vec::new();
        flatten("", &s.settings, &mut leaves);
        for (k, v) in leaves {
            out.insert(format!("{} › {k}", s.title), v);
        }
    }
    Value::Object(out)
}

struct Section {
    title: String,
    file: Option<String>,
    /// Prefix of this section's keys in the source map.
    source_prefix: String,
    settings: Value,
}

fn sections(report: &LoadReport) -> Vec<Section> {
    let mut out = Vec::new();
    let ser = |v: &dyn erased::Ser| v.to_value();
    if let Some(f) = &report.orchestrator.value {
        out.push(Section {
            title: "orchestrator".into(),
            file: Some(report.orchestrator_file.display().to_string()),
            source_prefix: String::new(),
            settings: ser(f),
        });
    }
    for (i, unit) in report.teams.iter().enumerate() {
        let kind = if unit.kind == mixseek_config::UnitKind::Workflow {
            "workflow"
        } else {
            "team"
        };
        if let Some(u) = &unit.part.value {
            out.push(Section {
                title: format!("{kind} {} ({})", i + 1, u.id()),
                file: Some(u.file().display().to_string()),
                source_prefix: format!("teams[{i}]."),
                settings: match u {
                    LoadedUnit::Team(t) => json!({ "team": ser(&t.settings) }),
                    LoadedUnit::Workflow(w) => json!({ "workflow": ser(&w.settings) }),
                },
            });
        } else {
            out.push(Section {
                title: format!("{kind} {} ({})", i + 1, unit.entry),
                file: None,
                source_prefix: format!("teams[{i}]."),
                settings: Value::Null,
            });
        }
    }
    let origin_file = |o: &mixseek_config::Origin| o.file().map(|p| p.display().to_string());
    if let Some(e) = &report.evaluator.value {
        out.push(Section {
            title: "evaluator".into(),
            file: origin_file(&report.evaluator.origin),
            source_prefix: "evaluator.".into(),
            settings: ser(e),
        });
    }
    if let Some(j) = &report.judgment.value {
        out.push(Section {
            title: "judgment".into(),
            file: origin_file(&report.judgment.origin),
            source_prefix: "judgment.".into(),
            settings: ser(j),
        });
    }
    if let Some(p) = &report.prompt_builder.value {
        out.push(Section {
            title: "prompt_builder".into(),
            file: origin_file(&report.prompt_builder.origin),
            source_prefix: String::new(),
            settings: json!({ "prompt_builder": ser(p) }),
        });
    }
    out
}

mod erased {
    pub(super) trait Ser {
        fn to_value(&self) -> serde_json::Value;
    }
    impl<T: serde::Serialize> Ser for T {
        fn to_value(&self) -> serde_json::Value {
            serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
        }
    }
}

fn display_value(v: &Value) -> String {
    let s = match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    if s.chars().count() > 80 {
        format!("{}...", s.chars().take(77).collect::<String>())
    } else {
        s
    }
}

fn source_of(sources: &SourceMap, section: &Section, key: &str) -> mixseek_config::Source {
    sources.get(&format!("{}{key}", section.source_prefix))
}

fn show(args: ShowArgs, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let report = load_report(ctx, &args.config, &Overrides::default())?;
    let errors = report.errors();
    if report.orchestrator.value.is_none() {
        return Err(CliError::failure(
            mixseek_config::LoadError { issues: errors }.to_string(),
        ));
    }
    let mut secs = sections(&report);
    for s in &mut secs {
        mask_secrets(&mut s.settings);
    }
    let mut rows: Vec<(String, String, Value, mixseek_config::Source)> = Vec::new();
    for s in &secs {
        let mut leaves = Vec::new();
        flatten("", &s.settings, &mut leaves);
        for (k, v) in leaves {
            let src = source_of(&report.sources, s, &k);
            rows.push((s.title.clone(), k, v, src));
        }
    }
    if let Some(key) = &args.key {
        let matches: Vec<&(String, String, Value, mixseek_config::Source)> = rows
            .iter()
            .filter(|(_, k, _, _)| k == key || k.ends_with(&format!(".{key}")))
            .collect();
        if matches.is_empty() {
            let all: Vec<&str> = rows.iter().map(|(_, k, _, _)| k.as_str()).collect();
            let hint = mixseek_config::closest(key, all.iter().copied())
                .map(|s| format!("did you mean `{s}`?"))
                .unwrap_or_else(|| "run `mixseek config show -c FILE` to list every key".into());
            return Err(
                CliError::failure(format!("Configuration key '{key}' not found.")).with_hint(hint),
            );
        }
        match args.format {
            TextOrJson::Json => {
                let arr: Vec<Value> = matches
                    .iter()
                    .map(|(sec, k, v, src)| json!({"section": sec, "key": k, "value": v, "source": src.to_string(), "source_type": src.kind()}))
                    .collect();
                println!("{}", to_json_pretty(&arr));
            }
            TextOrJson::Text => {
                for (sec, k, v, src) in matches {
                    println!("[{sec}] {k} = {}    # {src}", display_value(v));
                }
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    match args.format {
        TextOrJson::Json => {
            let mut out = serde_json::Map::new();
            let mut teams = Vec::new();
            for s in &secs {
                let mut leaves = Vec::new();
                flatten("", &s.settings, &mut leaves);
                let sources: serde_json::Map<String, Value> = leaves
                    .iter()
                    .map(|(k, _)| {
                        (
                            k.clone(),
                            Value::String(source_of(&report.sources, s, k).to_string()),
                        )
                    })
                    .collect();
                let v = json!({"source_file": s.file, "settings": s.settings, "sources": sources});
                if s.title.starts_with("team ") {
                    teams.push(v);
                } else {
                    out.insert(s.title.clone(), v);
                }
            }
            out.insert("teams".into(), Value::Array(teams));
            out.insert("workspace".into(), json!({"path": ctx.workspace.root.display().to_string(), "source": ctx.workspace.source.describe()}));
            println!("{}", to_json_pretty(&Value::Object(out)));
        }
        TextOrJson::Text => {
            println!(
                "workspace: {}    # {}",
                ctx.workspace.root.display(),
                ctx.workspace.source.describe()
            );
            let mut current = String::new();
            for (sec, k, v, src) in &rows {
                if *sec != current {
                    let file = secs
                        .iter()
                        .find(|s| &s.title == sec)
                        .and_then(|s| s.file.clone())
                        .unwrap_or_else(|| "built-in defaults".into());
                    println!();
                    println!("[{sec}] ({file})");
                    current = sec.clone();
                }
                println!("  {k} = {}    # {src}", display_value(v));
            }
        }
    }
    if !errors.is_empty() {
        eprintln!("{}", mixseek_config::LoadError { issues: errors });
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

fn validate(args: ValidateArgs, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let report = load_report(ctx, &args.config, &Overrides::default())?;
    let errors = report.errors();
    // The files' warnings, then one per MIXSEEK_* variable that names no setting.
    let mut warnings = report.warnings();
    warnings.extend(report.env_warnings.iter().cloned());
    match args.format {
        TextOrJson::Json => {
            let render = |v: &[mixseek_config::ConfigIssue]| -> Vec<Value> {
                v.iter()
                    .map(|i| {
                        json!({"file": i.file.as_ref().map(|f| f.display().to_string()), "key": i.key, "line": i.line,
                               "column": i.column, "message": i.message, "hint": i.hint, "text": i.to_string()})
                    })
                    .collect()
            };
            println!(
                "{}",
                to_json_pretty(
                    &json!({"valid": errors.is_empty(), "errors": render(&errors), "warnings": render(&warnings)})
                )
            );
        }
        TextOrJson::Text => {
            for w in &warnings {
                println!("⚠️  {w}");
            }
            if errors.is_empty() {
                let teams = report.teams.len();
                println!(
                    "✅ {} is valid ({teams} team{})",
                    report.orchestrator_file.display(),
                    if teams == 1 { "" } else { "s" }
                );
            } else {
                println!(
                    "❌ {}",
                    mixseek_config::LoadError {
                        issues: errors.clone()
                    }
                );
            }
        }
    }
    Ok(if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}
