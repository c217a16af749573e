//! `mixseek prompt render` (render a user-prompt template from a context file, exactly as a
//! run would, nothing added) and `mixseek prompt vars` (the variables of each template).
//! The logic lives in `mixseek-prompt`.

use crate::context::Ctx;
use crate::error::CliError;
use crate::output::TextOrJson;
use chrono::{DateTime, Utc};
use mixseek_prompt::{
    FixedClock, INJECTION_VARS, PromptBuilder, PromptError, TemplateKind, TimeZoneSource, env_tz,
    load_for_run, parse_context, parse_time_zone, resolve_time_zone, template_variables,
};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// `mixseek prompt …`
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub command: PromptCommand,
}

#[derive(clap::Subcommand, Debug)]
pub(crate) enum PromptCommand {
    /// Render a user prompt (team, evaluator or judgment) from a context JSON file and print it
    /// exactly, with nothing added
    Render(RenderArgs),
    /// List the variables each template (and each injection rule) can use
    Vars(VarsArgs),
}

/// The three templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    Team,
    Evaluator,
    Judgment,
}

impl From<Kind> for TemplateKind {
    fn from(k: Kind) -> Self {
        match k {
            Kind::Team => TemplateKind::Team,
            Kind::Evaluator => TemplateKind::Evaluator,
            Kind::Judgment => TemplateKind::Judgment,
        }
    }
}

#[derive(clap::Args, Debug)]
pub(crate) struct RenderArgs {
    /// Which template to render.
    #[arg(long, value_enum)]
    pub kind: Kind,
    /// Context JSON: {"user_prompt", "round_number", "team_id", "team_name", "execution_id"?,
    /// "round_history": [{"round_number", "submission_content", "evaluation_score",
    /// "score_details"}], "ranking": [{"team_id", "team_name", "max_score", "total_rounds"}] or
    /// null (no store; required for team and judgment), "submission"?, "domain_context"?,
    /// "language"?, "system_prompt_suffix"?, "prompt_suffix"?}. Unknown keys are errors.
    /// `-` reads stdin.
    #[arg(long, value_name = "CTX.json")]
    pub context: PathBuf,
    /// An orchestrator file (its prompt builder settings are loaded exactly as `mixseek exec`
    /// loads them: `prompt_builder_config`, else its inline [prompt_builder], else
    /// WORKSPACE/configs/prompt_builder.toml) or a file with a [prompt_builder] table.
    /// Default: WORKSPACE/configs/prompt_builder.toml, else the shipped templates.
    /// MIXSEEK_PROMPT_BUILDER__* variables override either, as in a run.
    #[arg(short = 'c', long, value_name = "CONFIG")]
    pub config: Option<PathBuf>,
    /// Fix the clock: an RFC 3339 instant with an offset or `Z` (e.g. 2025-11-25T14:30:00+09:00).
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
    /// Time zone of current_datetime (IANA name). Default: [prompt_builder] timezone, else TZ,
    /// else UTC.
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,
    /// Also apply the phase's user-side injection rules (the rules applied are logged).
    #[arg(long)]
    pub with_injections: bool,
}

#[derive(clap::Args, Debug)]
pub(crate) struct VarsArgs {
    /// Only this template's variables.
    #[arg(long, value_enum)]
    pub kind: Option<Kind>,
    /// Output format.
    #[arg(short = 'f', long, value_enum, default_value = "text")]
    pub format: TextOrJson,
}

pub(crate) async fn run(args: Args, ctx: &Ctx) -> Result<ExitCode, CliError> {
    match args.command {
        PromptCommand::Render(a) => render(a, ctx),
        PromptCommand::Vars(a) => vars(a),
    }
}

fn print(text: &str) -> Result<ExitCode, CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush())?;
    Ok(ExitCode::SUCCESS)
}

fn prompt_error(e: PromptError, kind: TemplateKind) -> CliError {
    let err = CliError::from_error(&e, crate::error::EXIT_BAD_INPUT);
    match &e {
        PromptError::UndefinedVariable { .. } => err.with_hint(format!(
            "`mixseek prompt vars --kind {}` lists the variables",
            kind.as_str()
        )),
        PromptError::InvalidTimeZone { .. } => {
            err.with_hint("use an IANA zone name such as Asia/Tokyo")
        }
        _ => err,
    }
}

fn parse_now(s: &str) -> Result<DateTime<Utc>, CliError> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            CliError::usage(format!("invalid --now value {s:?}: {e}")).with_hint(
                "give an RFC 3339 instant with an offset or Z, e.g. 2025-11-25T14:30:00+09:00",
            )
        })
}

fn render(args: RenderArgs, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let kind = TemplateKind::from(args.kind);
    let workspace = ctx.workspace()?;
    let config = match &args.config {
        Some(path) => Some(ctx.resolve_config_path(path)?),
        None => None,
    };
    // Exactly as a run loads them: the same loader, MIXSEEK_PROMPT_BUILDER__* overrides and
    // precedence (prompt_builder_config, else inline [prompt_builder], else the workspace
    // file, else the defaults).
    let loaded = load_for_run(
        config.as_deref(),
        &workspace,
        &mixseek_config::EnvVars::from_process(),
    )
    .map_err(|e| prompt_error(e, kind))?;
    for w in &loaded.warnings {
        tracing::warn!("{w}");
    }
    let settings = loaded.settings;
    let tz = match &args.tz {
        Some(zone) => parse_time_zone(zone, TimeZoneSource::Cli),
        None => resolve_time_zone(settings.timezone.as_deref(), env_tz().as_deref()),
    }
    .map_err(|e| prompt_error(e, kind))?;
    let mut builder = PromptBuilder::with_zone(&settings, tz).map_err(|e| prompt_error(e, kind))?;
    if let Some(now) = &args.now {
        builder = builder.with_clock(Arc::new(FixedClock(parse_now(now)?)));
    }

    let (json, origin) = if args.context.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| CliError::usage(format!("cannot read stdin: {e}")))?;
        (text, "<stdin>".to_string())
    } else {
        let shown = args.context.display().to_string();
        let text = std::fs::read_to_string(&args.context)
            .map_err(|e| CliError::usage(format!("cannot read context file {shown}: {e}")))?;
        (text, shown)
    };
    let context = parse_context(&json, kind, &origin).map_err(|e| {
        prompt_error(e, kind).with_hint(format!(
            "--kind {} needs {}; see `mixseek prompt render --help` for the format",
            kind.as_str(),
            mixseek_prompt::required_fields(kind).join(", ")
        ))
    })?;

    let prompt = if args.with_injections {
        let out = builder
            .render_with_injections(kind, &context)
            .map_err(|e| prompt_error(e, kind))?;
        tracing::info!(kind = kind.as_str(), rules = ?out.applied, "injection rules applied");
        out.prompt
    } else {
        builder
            .render(kind, &context)
            .map_err(|e| prompt_error(e, kind))?
    };
    print(&prompt)
}

fn vars(args: VarsArgs) -> Result<ExitCode, CliError> {
    let kinds: Vec<TemplateKind> = match args.kind {
        Some(k) => vec![k.into()],
        None => TemplateKind::ALL.to_vec(),
    };
    let with_rules = args.kind.is_none();
    match args.format {
        TextOrJson::Json => {
            let list = |vars: &[mixseek_prompt::VarInfo]| {
                vars.iter()
                    .map(|v| serde_json::json!({"name": v.name, "description": v.description}))
                    .collect::<Vec<_>>()
            };
            let mut obj = serde_json::Map::new();
            for k in &kinds {
                obj.insert(k.as_str().into(), list(template_variables(*k)).into());
            }
            if with_rules {
                obj.insert("injection_rules".into(), list(INJECTION_VARS).into());
            }
            print(&format!("{}\n", crate::output::to_json_pretty(&obj)))
        }
        TextOrJson::Text => {
            let mut out = String::new();
            let width = template_variables(TemplateKind::Team)
                .iter()
                .chain(template_variables(TemplateKind::Evaluator))
                .chain(INJECTION_VARS)
                .map(|v| v.name.len())
                .max()
                .unwrap_or(0);
            let mut section = |title: String, vars: &[mixseek_prompt::VarInfo]| {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&title);
                out.push('\n');
                for v in vars {
                    out.push_str(&format!("  {:<width$}  {}\n", v.name, v.description));
                }
            };
            for k in &kinds {
                section(
                    format!("{} ({}):", k.as_str(), k.key()),
                    template_variables(*k),
                );
            }
            if with_rules {
                section(
                    "injection rules (`when` and `text`): the phase's variables (member: team's) plus:".into(),
                    INJECTION_VARS,
                );
            }
            print(&out)
        }
    }
}
