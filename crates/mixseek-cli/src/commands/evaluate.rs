//! `mixseek evaluate`: score one submission with the evaluator's metrics. The logic and the
//! output formats live in `mixseek-evaluator` (`run_standalone`, `render_text`,
//! `render_json`).

use crate::context::Ctx;
use crate::error::CliError;
use crate::output::{TextOrJson, to_json_pretty};
use mixseek_evaluator::{
    StandaloneArgs, StandaloneError, render_json, render_text, run_standalone,
};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The user prompt (task) the submission answers
    #[arg(long)]
    pub prompt: String,
    /// The submission to evaluate
    #[arg(
        long,
        conflicts_with = "submission_file",
        required_unless_present = "submission_file"
    )]
    pub submission: Option<String>,
    /// Read the submission from a file (`-`: stdin)
    #[arg(long, value_name = "FILE")]
    pub submission_file: Option<PathBuf>,
    /// Evaluator TOML (relative: against the workspace, then the current directory).
    /// Default: WORKSPACE/configs/evaluator.toml, else the built-in metrics
    #[arg(short = 'c', long = "config")]
    pub config: Option<PathBuf>,
    /// Output format
    #[arg(
        short = 'f',
        long = "output-format",
        alias = "format",
        value_enum,
        default_value = "text"
    )]
    pub format: TextOrJson,
}

fn read_submission(args: &Args) -> Result<String, CliError> {
    if let Some(s) = &args.submission {
        return Ok(s.clone());
    }
    let Some(path) = &args.submission_file else {
        return Err(CliError::usage(
            "give the submission with --submission TEXT or --submission-file FILE",
        ));
    };
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| CliError::usage(format!("cannot read the submission from stdin: {e}")))?;
        return Ok(s);
    }
    std::fs::read_to_string(path).map_err(|e| {
        CliError::usage(format!(
            "cannot read the submission file {}: {e}",
            path.display()
        ))
    })
}

pub(crate) async fn run(args: Args, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let submission = read_submission(&args)?;
    let config = match &args.config {
        Some(c) => Some(ctx.resolve_config_path(c)?),
        None => None,
    };
    let standalone = StandaloneArgs {
        workspace: ctx.workspace()?,
        config,
        prompt: args.prompt.clone(),
        submission,
    };
    let done = run_standalone(standalone).await.map_err(|e| {
        let (err, hint) = match e {
            StandaloneError::Input { message, hint } => (CliError::usage(message), hint),
            StandaloneError::Failed { message, hint } => (CliError::failure(message), hint),
        };
        match hint {
            Some(h) => err.with_hint(h),
            None => err,
        }
    })?;
    let text = match args.format {
        TextOrJson::Text => render_text(&done.outcome, done.mock_judges, ctx.verbose),
        TextOrJson::Json => format!(
            "{}\n",
            to_json_pretty(&render_json(&done.outcome, done.mock_judges))
        ),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
