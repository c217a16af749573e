//! `mixseek team PROMPT -c TEAM.toml`: runs one team through its rounds (evaluation and
//! judgment from the workspace's configs, else the defaults; no store) and prints each
//! round's score and the final submission. Exit 0 when the team completed, 1 when it failed,
//! 2 on bad input or when every member call failed (`All member agents failed. No successful
//! submissions.`, as the original). The logic lives in `mixseek_round::run_team`. `--attach
//! FILE` attaches documents to the task as `exec --attach` does.

use crate::context::Ctx;
use crate::error::CliError;
use crate::output::TextOrJson;
use mixseek_round::{StandaloneError, StandaloneOptions, run_team};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The task for the team
    pub prompt: String,
    /// Team TOML (relative: against the workspace, then the current directory)
    #[arg(short = 'c', long = "config")]
    pub config: PathBuf,
    /// Output format
    #[arg(
        short = 'f',
        long = "output-format",
        alias = "format",
        value_enum,
        default_value = "text"
    )]
    pub format: TextOrJson,
    /// Rounds at most (1..=10, default 5)
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10))]
    pub max_rounds: Option<u32>,
    /// Rounds always played before the judgment is asked (default: 2, or max-rounds if lower)
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10))]
    pub min_rounds: Option<u32>,
    /// Attach a document to the task (repeatable): .txt, .md, .html, .pdf or .docx, extracted
    /// to text (capped) and given to the team, judgment and evaluator prompts in its own
    /// <attachments> tag
    #[arg(long = "attach", value_name = "FILE")]
    pub attach: Vec<PathBuf>,
}

pub(crate) async fn run(args: Args, ctx: &Ctx) -> Result<ExitCode, CliError> {
    if args.prompt.trim().is_empty() {
        return Err(CliError::usage("user_prompt cannot be empty"));
    }
    let team_file = ctx.resolve_config_path(&args.config)?;
    // The attachments are read (and checked) before anything runs, as `exec --attach`.
    let attachments = super::exec::extract_attachments(&args.attach)?;
    let options = StandaloneOptions {
        workspace: ctx.workspace.clone(),
        team_entry: args.config.display().to_string(),
        team_file,
        prompt: args.prompt,
        max_rounds: args.max_rounds,
        min_rounds: args.min_rounds,
        env: mixseek_config::EnvVars::from_process(),
        llm_env: mixseek_llm::Env::process(),
        attachments,
    };
    let run = run_team(options).await.map_err(|e| {
        let hint = e.hint().map(str::to_string);
        let err = match e {
            StandaloneError::Config(l) => CliError::from(l),
            other => CliError::from_error(&other, crate::error::EXIT_BAD_INPUT),
        };
        match hint {
            Some(h) => err.with_hint(h),
            None => err,
        }
    })?;
    let out = match args.format {
        TextOrJson::Text => run.report.to_text(),
        TextOrJson::Json => run.report.to_json(),
    };
    #[allow(clippy::print_stdout)]
    {
        println!("{out}");
    }
    if run.report.all_member_calls_failed() {
        // The original's text and exit code (2), after the report.
        return Err(
            CliError::usage("All member agents failed. No successful submissions.").with_hint(
                "each member's error is in the report above (often its model, API key or command)",
            ),
        );
    }
    Ok(if run.completed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
