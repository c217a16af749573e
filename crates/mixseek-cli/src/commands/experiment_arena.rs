//! `mixseek experiment arena NAME [-c arena.toml] [--llm-config ORCHESTRATOR.toml] [--dry-run]
//! [-f table|json]`: the experiment's variants judged pairwise over its tasks and rated
//! (`mixseek_experiment::arena`), with the same settings file and defaults as `mixseek arena`.

use crate::context::Ctx;
use crate::error::CliError;
use crate::output::to_json_pretty;
use mixseek_experiment::arena::{self, VariantArenaPlan};
use mixseek_experiment::report::{ArenaSection, arena_text};
use mixseek_llm::ModelRegistry;
use mixseek_store::Store;
use std::path::PathBuf;
use std::process::ExitCode;

/// `mixseek experiment arena …`
#[derive(clap::Args, Debug)]
pub(crate) struct ArenaArgs {
    /// The experiment's name
    pub name: String,
    /// Arena TOML (`[arena]`). Default: WORKSPACE/configs/arena.toml when present, else the
    /// built-in settings
    #[arg(short = 'c', long = "config")]
    pub config: Option<PathBuf>,
    /// Orchestrator TOML whose [providers], [pricing], [cache] and [privacy] tables to use
    /// (with `mask_pii`, the stored prompts, answers and errors are masked)
    #[arg(long = "llm-config", value_name = "ORCHESTRATOR.toml")]
    pub llm_config: Option<PathBuf>,
    /// Check everything and print the submissions, the pairs and the estimated calls, tokens
    /// and cost; send nothing
    #[arg(long)]
    pub dry_run: bool,
    /// The database (default: the workspace's mixseek.db)
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Output format
    #[arg(short = 'f', long = "format", value_enum, default_value = "table")]
    pub format: ArenaFormat,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArenaFormat {
    Table,
    Json,
}

/// Runs `mixseek experiment arena`.
pub(crate) async fn run(
    args: ArenaArgs,
    ctx: &Ctx,
    error: fn(&mixseek_experiment::ExperimentError) -> CliError,
) -> Result<ExitCode, CliError> {
    let settings = super::arena::load_settings(args.config.as_ref(), ctx)?;
    let (registry, masker) = super::llm::llm_settings(args.llm_config.as_deref(), ctx)?;
    let registry = ModelRegistry::new(registry).map_err(|e| CliError::usage(e.to_string()))?;
    let db = args.db.clone().unwrap_or_else(|| ctx.workspace.db_path());
    if !db.is_file() {
        return Err(CliError::usage(format!(
            "no database at {}: there is no experiment to compare",
            db.display()
        ))
        .with_hint(
            "run the experiment first (`mixseek experiment run FILE`), or name its database with --db",
        ));
    }
    let store = if args.dry_run {
        Store::open_read_only(&db)
    } else {
        crate::commands::db::announce_upgrade(&db);
        Store::open(&db)
    }
    .map_err(|e| CliError::from_store(&e))?;
    let plan = arena::plan(&store, &db, &args.name, &settings, &registry).map_err(|e| error(&e))?;
    if args.dry_run {
        return super::arena::print(&dry_run_text(&plan, args.format));
    }
    let writer = store.writer(masker).map_err(|e| CliError::from_store(&e))?;
    let outcome = arena::run(&plan, &registry, &writer)
        .await
        .map_err(|e| error(&e))?;
    drop(writer);
    if outcome.skipped_for_budget > 0 {
        tracing::warn!(
            games = outcome.skipped_for_budget,
            "the arena's budget was reached: games left unjudged"
        );
    }
    // what is printed is what was stored (masked when [privacy] masks)
    let stored = store
        .experiment_arena(&outcome.record.arena.summary.arena_id)
        .map_err(|e| CliError::from_store(&e))?
        .unwrap_or(outcome.record);
    let section = ArenaSection::of(&stored);
    let text = match args.format {
        ArenaFormat::Json => format!("{}\n", to_json_pretty(&section)),
        ArenaFormat::Table => {
            let mut text = format!("Experiment {}\n{}", args.name, arena_text(&section));
            if outcome.skipped_for_budget > 0 {
                text.push_str(&format!(
                    "{} games were not judged: the arena's budget was reached.\n",
                    outcome.skipped_for_budget
                ));
            }
            // `arena_text` ends with the note when a judge was `mock:` (the report shows it too).
            text
        }
    };
    super::arena::print(&text)
}

/// What `--dry-run` prints: the submissions per variant, the design and the estimate.
fn dry_run_text(plan: &VariantArenaPlan, format: ArenaFormat) -> String {
    let e = plan.estimate();
    let p = &plan.plan;
    let judges = p.settings.judge_models();
    let per_variant: Vec<(String, usize)> = plan
        .groups
        .names
        .iter()
        .enumerate()
        .map(|(g, n)| {
            (
                n.clone(),
                plan.groups.of.iter().filter(|&&x| x == g).count(),
            )
        })
        .collect();
    if format == ArenaFormat::Json {
        let v = serde_json::json!({
            "experiment": plan.experiment,
            "variants": per_variant.iter().map(|(n, c)| serde_json::json!({"variant": n, "submissions": c})).collect::<Vec<_>>(),
            "unrated_variants": plan.unrated,
            "tasks": plan.tasks,
            "submissions": p.contestants.len(),
            "left_out": {"unfinished": plan.unfinished, "without_evaluated_round": plan.unevaluated},
            "pairs": p.pairs.len(),
            "games": p.pairs.len() * 2,
            "judges": judges,
            "estimate": {
                "calls": e.calls, "input_tokens": e.input_tokens, "output_tokens": e.output_tokens,
                "cost_usd": e.cost_usd, "unpriced_judges": e.unpriced,
            },
            "budget": {"max_cost_usd": p.settings.max_cost_usd, "max_total_tokens": p.settings.max_total_tokens},
        });
        return format!("{}\n", to_json_pretty(&v));
    }
    let mut s = format!(
        "Experiment arena (dry run): {}: {} submissions of {} variants on {} tasks, {} pairs, {} games (each pair twice, positions swapped) × {} judge(s): {}\n",
        plan.experiment,
        p.contestants.len(),
        plan.groups.names.len(),
        plan.tasks,
        p.pairs.len(),
        p.pairs.len() * 2,
        judges.len(),
        judges.join(", ")
    );
    for (n, c) in &per_variant {
        s.push_str(&format!("  {n}: {c} submissions\n"));
    }
    if !plan.unrated.is_empty() {
        s.push_str(&format!(
            "  not rated (no submission with an evaluated round): {}\n",
            plan.unrated.join(", ")
        ));
    }
    s.push_str(&format!(
        "Left out: {} items not finished, {} without an evaluated round\n",
        plan.unfinished, plan.unevaluated
    ));
    s.push_str(&super::arena::estimate_lines(e, &p.settings));
    s
}
