//! `mixseek init`: a workspace with the offline quick-start competition and example configs.

use crate::context::Ctx;
use crate::error::CliError;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Overwrite sample files that already exist
    #[arg(long)]
    pub force: bool,
}

/// The files `init` writes, relative to the workspace.
pub(crate) const FILES: &[(&str, &str)] = &[
    (
        "configs/quickstart/orchestrator.toml",
        include_str!("../../../../configs/quickstart/orchestrator.toml"),
    ),
    (
        "configs/quickstart/team_alpha.toml",
        include_str!("../../../../configs/quickstart/team_alpha.toml"),
    ),
    (
        "configs/quickstart/team_beta.toml",
        include_str!("../../../../configs/quickstart/team_beta.toml"),
    ),
    (
        "configs/quickstart/team_gamma.toml",
        include_str!("../../../../configs/quickstart/team_gamma.toml"),
    ),
    (
        "configs/quickstart/evaluator.toml",
        include_str!("../../../../configs/quickstart/evaluator.toml"),
    ),
    (
        "configs/quickstart/judgment.toml",
        include_str!("../../../../configs/quickstart/judgment.toml"),
    ),
    // Real-provider examples (a key or a local server needed); see configs/examples/README.md.
    (
        "configs/examples/README.md",
        include_str!("../../../../configs/examples/README.md"),
    ),
    (
        "configs/examples/openai/evaluator.toml",
        include_str!("../../../../configs/examples/openai/evaluator.toml"),
    ),
    (
        "configs/examples/openai/judgment.toml",
        include_str!("../../../../configs/examples/openai/judgment.toml"),
    ),
    (
        "configs/examples/openai/orchestrator.toml",
        include_str!("../../../../configs/examples/openai/orchestrator.toml"),
    ),
    (
        "configs/examples/openai/team_analyst.toml",
        include_str!("../../../../configs/examples/openai/team_analyst.toml"),
    ),
    (
        "configs/examples/openai/team_writer.toml",
        include_str!("../../../../configs/examples/openai/team_writer.toml"),
    ),
    (
        "configs/examples/anthropic/evaluator.toml",
        include_str!("../../../../configs/examples/anthropic/evaluator.toml"),
    ),
    (
        "configs/examples/anthropic/judgment.toml",
        include_str!("../../../../configs/examples/anthropic/judgment.toml"),
    ),
    (
        "configs/examples/anthropic/orchestrator.toml",
        include_str!("../../../../configs/examples/anthropic/orchestrator.toml"),
    ),
    (
        "configs/examples/anthropic/team_haiku.toml",
        include_str!("../../../../configs/examples/anthropic/team_haiku.toml"),
    ),
    (
        "configs/examples/anthropic/team_sonnet.toml",
        include_str!("../../../../configs/examples/anthropic/team_sonnet.toml"),
    ),
    (
        "configs/examples/gemini/evaluator.toml",
        include_str!("../../../../configs/examples/gemini/evaluator.toml"),
    ),
    (
        "configs/examples/gemini/judgment.toml",
        include_str!("../../../../configs/examples/gemini/judgment.toml"),
    ),
    (
        "configs/examples/gemini/orchestrator.toml",
        include_str!("../../../../configs/examples/gemini/orchestrator.toml"),
    ),
    (
        "configs/examples/gemini/team_flash.toml",
        include_str!("../../../../configs/examples/gemini/team_flash.toml"),
    ),
    (
        "configs/examples/gemini/team_lite.toml",
        include_str!("../../../../configs/examples/gemini/team_lite.toml"),
    ),
    (
        "configs/examples/local/evaluator.toml",
        include_str!("../../../../configs/examples/local/evaluator.toml"),
    ),
    (
        "configs/examples/local/judgment.toml",
        include_str!("../../../../configs/examples/local/judgment.toml"),
    ),
    (
        "configs/examples/local/orchestrator.toml",
        include_str!("../../../../configs/examples/local/orchestrator.toml"),
    ),
    (
        "configs/examples/local/team_a.toml",
        include_str!("../../../../configs/examples/local/team_a.toml"),
    ),
    (
        "configs/examples/local/team_b.toml",
        include_str!("../../../../configs/examples/local/team_b.toml"),
    ),
    (
        "configs/examples/workflow/orchestrator.toml",
        include_str!("../../../../configs/examples/workflow/orchestrator.toml"),
    ),
    (
        "configs/examples/workflow/workflow_notes.toml",
        include_str!("../../../../configs/examples/workflow/workflow_notes.toml"),
    ),
    (
        "configs/examples/workflow/team_solo.toml",
        include_str!("../../../../configs/examples/workflow/team_solo.toml"),
    ),
    (
        "configs/examples/workflow/steps.py",
        include_str!("../../../../configs/examples/workflow/steps.py"),
    ),
    (
        "configs/examples/workflow/evaluator.toml",
        include_str!("../../../../configs/examples/workflow/evaluator.toml"),
    ),
    (
        "configs/examples/workflow/judgment.toml",
        include_str!("../../../../configs/examples/workflow/judgment.toml"),
    ),
    (
        "configs/examples/arena/arena.toml",
        include_str!("../../../../configs/examples/arena/arena.toml"),
    ),
    (
        "configs/examples/calibration/labels.jsonl",
        include_str!("../../../../configs/examples/calibration/labels.jsonl"),
    ),
];

const DIRS: &[&str] = &[
    "",
    "logs",
    "configs",
    "configs/quickstart",
    "configs/examples",
    "configs/examples/openai",
    "configs/examples/anthropic",
    "configs/examples/gemini",
    "configs/examples/local",
    "configs/examples/workflow",
    "configs/examples/arena",
    "configs/examples/calibration",
    "templates",
];

pub(crate) async fn run(args: Args, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let root = ctx.workspace()?;
    if root.exists() && !root.is_dir() {
        return Err(
            CliError::failure(format!("{} exists and is not a directory", root.display()))
                .with_hint("choose another path with --workspace"),
        );
    }
    let existing: Vec<PathBuf> = FILES
        .iter()
        .map(|(p, _)| root.join(p))
        .filter(|p| p.exists())
        .collect();
    if !existing.is_empty() && !args.force {
        let list = existing
            .iter()
            .map(|p| format!("  {}", p.display()))
            .collect::<Vec<_>>()
            .join("\n");
        return Err(CliError::failure(format!(
            "the workspace at {} already has these files:\n{list}",
            root.display()
        ))
        .with_hint("re-run with --force to overwrite them (other files are left untouched)"));
    }
    let mut created_dirs = 0;
    for d in DIRS {
        let p = root.join(d);
        if !p.is_dir() {
            std::fs::create_dir_all(&p).map_err(|e| {
                CliError::failure(format!("cannot create {}: {e}", p.display()))
                    .with_hint("check directory permissions or choose a different path")
            })?;
            created_dirs += 1;
        }
    }
    for (rel, content) in FILES {
        let p = root.join(rel);
        std::fs::write(&p, content)
            .map_err(|e| CliError::failure(format!("cannot write {}: {e}", p.display())))?;
    }
    println!("Workspace initialized successfully at: {}", root.display());
    println!("Created directories: {created_dirs}");
    println!("Created files: {}", FILES.len());
    println!();
    println!("Next: run the offline quick-start competition (no API key needed):");
    println!(
        "  mixseek exec \"Write a haiku about autumn\" -w {} -c configs/quickstart/orchestrator.toml",
        root.display()
    );
    println!();
    println!(
        "Examples for OpenAI, Anthropic, Gemini and local servers: {}",
        root.join("configs/examples").display()
    );
    Ok(ExitCode::SUCCESS)
}
