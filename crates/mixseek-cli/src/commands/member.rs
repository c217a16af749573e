//! `mixseek member PROMPT (-c AGENT.toml | --agent NAME)`: runs one member agent once
//! (development and testing, as the original's command) and prints its result in one of the
//! original's formats (`member_output.rs`). Exit 0, or 1 when the result is an error, the
//! agent is unknown or neither option is given; 2 on a configuration error or bad flags.

use crate::commands::member_output::{Format, render};
use crate::context::Ctx;
use crate::error::CliError;
use mixseek_agents::{MemberRunError, MemberRunOptions, MemberSource, run_member};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The task for the member
    pub prompt: String,
    /// Member agent TOML with an [agent] table (relative: against the workspace, then the current directory)
    #[arg(short = 'c', long = "config", conflicts_with = "agent")]
    pub config: Option<PathBuf>,
    /// A bundled agent: plain, web-search or code-exec (the original's files)
    #[arg(long)]
    pub agent: Option<String>,
    /// Output format: structured, json, text or csv (an unknown one: structured, with an error)
    #[arg(short = 'f', long = "output-format", default_value = "structured")]
    pub output_format: String,
    /// Time limit of the whole execution in seconds (default: the agent's timeout_seconds, else 30)
    #[arg(long)]
    pub timeout: Option<u64>,
    /// Override the agent's max_tokens
    #[arg(long)]
    pub max_tokens: Option<u64>,
    /// Override the agent's temperature
    #[arg(long)]
    pub temperature: Option<f64>,
}

pub(crate) async fn run(args: Args, ctx: &Ctx) -> Result<ExitCode, CliError> {
    #[allow(clippy::print_stderr)]
    {
        eprintln!("⚠️  Development/Testing only - Not for production use");
    }
    let source = match (&args.config, &args.agent) {
        (Some(c), _) => MemberSource::File(ctx.resolve_config_path(c)?),
        (None, Some(a)) => MemberSource::Bundled(a.clone()),
        (None, None) => {
            return Err(
                CliError::failure("Either --config or --agent must be specified")
                    .with_hint("mixseek member \"task\" --agent plain, or -c path/to/agent.toml"),
            );
        }
    };
    let format = match Format::parse(&args.output_format) {
        Ok(f) => f,
        Err(message) => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("Error: {message}");
            }
            Format::Structured
        }
    };
    let run = run_member(MemberRunOptions {
        workspace: ctx.workspace.clone(),
        source,
        prompt: args.prompt,
        timeout_seconds: args.timeout,
        max_tokens: args.max_tokens,
        temperature: args.temperature,
        env: mixseek_config::EnvVars::from_process(),
        llm_env: mixseek_llm::Env::process(),
    })
    .await
    .map_err(|e| match e {
        MemberRunError::Config(l) => CliError::from(l),
        MemberRunError::UnknownAgent(_) => CliError::failure(e.to_string()),
        MemberRunError::Setup(m) => CliError::usage(m),
    })?;
    let text = render(&run, format, ctx.verbose);
    #[allow(clippy::print_stdout)]
    {
        print!("{text}");
    }
    Ok(if run.failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
