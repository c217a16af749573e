//! `mixseek evaluate`: score one submission with the evaluator's metrics (`--attach FILE`: the
//! task's documents, as `exec --attach`), or with `--labels FILE.jsonl` calibrate the judges
//! against human scores. The logic and the output formats
//! live in `mixseek-evaluator` (`run_standalone`, `render_text`, `render_json`;
//! `run_calibration`, `render_calibration_text`, `render_calibration_json`).

use crate::context::Ctx;
use crate::error::CliError;
use crate::output::{TextOrJson, to_json_pretty};
use mixseek_evaluator::{
    CalibrationArgs, StandaloneArgs, StandaloneError, render_calibration_json,
    render_calibration_text, render_json, render_text, run_calibration, run_standalone,
};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The user prompt (task) the submission answers
    #[arg(long, required_unless_present = "labels")]
    pub prompt: Option<String>,
    /// The submission to evaluate
    #[arg(
        long,
        conflicts_with = "submission_file",
        required_unless_present_any = ["submission_file", "labels"]
    )]
    pub submission: Option<String>,
    /// Read the submission from a file (`-`: stdin)
    #[arg(long, value_name = "FILE")]
    pub submission_file: Option<PathBuf>,
    /// Calibrate the judges against human scores: a JSON Lines file of
    /// {"prompt", "submission", "score": 0-100} (optional "id", "scores": {"Metric": 0-100});
    /// reports Spearman, Kendall, Pearson, MAE, Krippendorff's alpha and length bias
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["submission", "submission_file", "prompt"]
    )]
    pub labels: Option<PathBuf>,
    /// Evaluator TOML (relative: against the workspace, then the current directory).
    /// Default: WORKSPACE/configs/evaluator.toml, else the built-in metrics
    #[arg(short = 'c', long = "config")]
    pub config: Option<PathBuf>,
    /// Attach a document to the task (repeatable): .txt, .md, .html, .pdf or .docx, extracted
    /// to text (capped) and given to the judges' prompts in its own <attachments> tag
    #[arg(long = "attach", value_name = "FILE", conflicts_with = "labels")]
    pub attach: Vec<PathBuf>,
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

fn cli_error(e: StandaloneError) -> CliError {
    let (err, hint) = match e {
        StandaloneError::Input { message, hint } => (CliError::usage(message), hint),
        StandaloneError::Failed { message, hint } => (CliError::failure(message), hint),
    };
    match hint {
        Some(h) => err.with_hint(h),
        None => err,
    }
}

fn write_out(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

async fn calibrate(
    labels: PathBuf,
    config: Option<PathBuf>,
    format: TextOrJson,
    ctx: &Ctx,
) -> Result<ExitCode, CliError> {
    let args = CalibrationArgs {
        workspace: ctx.workspace()?,
        config,
        labels,
    };
    let done = run_calibration(args).await.map_err(cli_error)?;
    let text = match format {
        TextOrJson::Text => render_calibration_text(&done),
        TextOrJson::Json => format!("{}\n", to_json_pretty(&render_calibration_json(&done))),
    };
    write_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn run(args: Args, ctx: &Ctx) -> Result<ExitCode, CliError> {
    if let Some(labels) = &args.labels {
        let config = match &args.config {
            Some(c) => Some(ctx.resolve_config_path(c)?),
            None => None,
        };
        return calibrate(labels.clone(), config, args.format, ctx).await;
    }
    let submission = read_submission(&args)?;
    // The attachments are read (and checked) before anything runs, as `exec --attach`.
    let attachments = super::exec::extract_attachments(&args.attach)?;
    let config = match &args.config {
        Some(c) => Some(ctx.resolve_config_path(c)?),
        None => None,
    };
    let Some(prompt) = args.prompt.clone() else {
        return Err(CliError::usage(
            "give the user prompt with --prompt TEXT (or a labels file with --labels FILE)",
        ));
    };
    let standalone = StandaloneArgs {
        workspace: ctx.workspace()?,
        config,
        prompt,
        submission,
        attachments,
    };
    let done = run_standalone(standalone).await.map_err(cli_error)?;
    let text = match args.format {
        TextOrJson::Text => render_text(&done.outcome, done.mock_judges, ctx.verbose),
        TextOrJson::Json => format!(
            "{}\n",
            to_json_pretty(&render_json(&done.outcome, done.mock_judges))
        ),
    };
    write_out(&text)?;
    Ok(ExitCode::SUCCESS)
}
