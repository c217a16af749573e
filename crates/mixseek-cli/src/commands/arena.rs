//! `mixseek arena EXECUTION_ID... [-c arena.toml] [--dry-run]`: the teams' submissions judged
//! pairwise and rated (Bradley–Terry with bootstrap intervals). The engine lives in
//! `mixseek_orchestrator::arena`, the rendering in `mixseek_store::report`.

use crate::context::Ctx;
use crate::error::CliError;
use mixseek_config::{ArenaSettings, EnvVars, LoadError};
use mixseek_llm::ModelRegistry;
use mixseek_orchestrator::arena::{self, ArenaError, ArenaPlan};
use mixseek_store::report::Format;
use mixseek_store::{ArenaDetail, Store, db_path};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// `mixseek arena …`
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The execution (an id or a unique prefix); several executions on the same prompt make
    /// their teams compete together (e.g. one configuration with two leader models).
    #[arg(required = true, value_name = "EXECUTION_ID")]
    pub executions: Vec<String>,
    /// Arena TOML (`[arena]`). Default: WORKSPACE/configs/arena.toml when present, else the
    /// built-in settings.
    #[arg(short = 'c', long = "config")]
    pub config: Option<PathBuf>,
    /// Orchestrator TOML whose [providers], [pricing], [cache] and [privacy] tables to use
    /// (with `mask_pii`, the stored prompt, answers and errors are masked).
    #[arg(long = "llm-config", value_name = "ORCHESTRATOR.toml")]
    pub llm_config: Option<PathBuf>,
    /// Check everything and print the pairs and the estimated calls, tokens and cost; send
    /// nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Output format.
    #[arg(long, short = 'f', default_value = "table", value_parser = Format::NAMES)]
    pub format: String,
}

/// The arena settings: `-c`, else `WORKSPACE/configs/arena.toml`, else the defaults.
fn settings(args: &Args, ctx: &Ctx) -> Result<ArenaSettings, CliError> {
    load_settings(args.config.as_ref(), ctx)
}

/// The arena settings of `config` (`-c`), else `WORKSPACE/configs/arena.toml`, else the
/// defaults (also `mixseek experiment arena`'s).
pub(crate) fn load_settings(
    config: Option<&PathBuf>,
    ctx: &Ctx,
) -> Result<ArenaSettings, CliError> {
    let path = match config {
        Some(p) => Some(ctx.resolve_config_path(p)?),
        None => {
            let default = ctx.workspace()?.join("configs").join("arena.toml");
            default.is_file().then_some(default)
        }
    };
    let Some(path) = path else {
        return Ok(ArenaSettings::default());
    };
    let part = mixseek_config::load_arena(&path, &EnvVars::from_process());
    for w in &part.warnings.items {
        tracing::warn!("{w}");
    }
    if !part.errors.is_empty() {
        return Err(LoadError {
            issues: part.errors.items,
        }
        .into());
    }
    part.value
        .ok_or_else(|| CliError::usage(format!("cannot read {}", path.display())))
}

pub(crate) fn arena_error(e: ArenaError) -> CliError {
    match e {
        ArenaError::Store(e) => CliError::from_store(&e),
        ArenaError::Model { .. } => CliError::usage(e.to_string()).with_hint(
            "set the provider's API key variable, or pass --llm-config with a [providers.<name>] table",
        ),
        ArenaError::DifferentPrompts { .. }
        | ArenaError::TooFewContestants { .. }
        | ArenaError::UnknownAnchor { .. }
        | ArenaError::Template(_) => CliError::usage(e.to_string()),
        ArenaError::Fit(_) => CliError::failure(e.to_string()),
    }
}

/// Runs `mixseek arena`.
pub(crate) async fn run(args: Args, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let format = Format::parse(&args.format).map_err(|e| CliError::from_store(&e))?;
    let settings = settings(&args, ctx)?;
    let (registry, masker) = super::llm::llm_settings(args.llm_config.as_deref(), ctx)?;
    let registry = ModelRegistry::new(registry).map_err(|e| CliError::usage(e.to_string()))?;
    let path = db_path(&ctx.workspace()?);
    let store = if args.dry_run {
        Store::open_read_only(&path)
    } else {
        Store::open(&path)
    }
    .map_err(|e| CliError::from_store(&e))?;
    let mut ids = Vec::new();
    for given in &args.executions {
        let id = store
            .resolve_execution(given)
            .map_err(|e| CliError::from_store(&e))?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let plan = arena::plan(&store, &ids, &settings, &registry).map_err(arena_error)?;
    if args.dry_run {
        return print(&dry_run_text(&plan, format));
    }
    let writer = store.writer(masker).map_err(|e| CliError::from_store(&e))?;
    let outcome = arena::run(&plan, &registry, &writer)
        .await
        .map_err(arena_error)?;
    if outcome.skipped_for_budget > 0 {
        tracing::warn!(
            games = outcome.skipped_for_budget,
            "the arena's budget was reached: games left unjudged"
        );
    }
    // what is printed is what was stored (masked when [privacy] masks)
    let detail = store
        .arena(&outcome.record.summary.arena_id)
        .map_err(|e| CliError::from_store(&e))?
        .unwrap_or(outcome.record);
    let mut text =
        mixseek_store::report::arena(&detail, format).map_err(|e| CliError::from_store(&e))?;
    text.push_str(&mock_note(&detail, format));
    print(&text)
}

/// Under a table or Markdown: the mock provider's verdicts are made up (as `evaluate` says of
/// its scores).
pub(crate) fn mock_note(detail: &ArenaDetail, format: Format) -> String {
    let mocked = detail
        .summary
        .judge_models
        .iter()
        .any(|m| m.starts_with("mock:"));
    match (mocked, format) {
        (true, Format::Table | Format::Markdown) => {
            "\nNote: judged by the offline mock: provider; these verdicts are made up.\n".into()
        }
        _ => String::new(),
    }
}

/// What `--dry-run` prints: the contestants, the design and the estimate.
fn dry_run_text(plan: &ArenaPlan, format: Format) -> String {
    let e = &plan.estimate;
    if format == Format::Json {
        let v = serde_json::json!({
            "execution_ids": plan.execution_ids,
            "contestants": plan.contestants.iter().map(|c| serde_json::json!({
                "execution_id": c.execution_id, "team_id": c.team_id, "team_name": c.team_name,
                "round_number": c.round_number, "score": c.score, "label": c.label,
            })).collect::<Vec<_>>(),
            "pairs": plan.pairs.len(),
            "games": plan.pairs.len() * 2,
            "judges": plan.settings.judge_models(),
            "estimate": {
                "calls": e.calls, "input_tokens": e.input_tokens, "output_tokens": e.output_tokens,
                "cost_usd": e.cost_usd, "unpriced_judges": e.unpriced,
            },
        });
        return format!("{}\n", crate::output::to_json_pretty(&v));
    }
    let mut s = format!(
        "Arena (dry run): {} contestants, {} pairs, {} games (each pair twice, positions swapped) × {} judge(s): {}\n",
        plan.contestants.len(),
        plan.pairs.len(),
        plan.pairs.len() * 2,
        plan.settings.judge_models().len(),
        plan.settings.judge_models().join(", ")
    );
    for c in &plan.contestants {
        s.push_str(&format!(
            "  {} ({}): round {}, score {:.2}\n",
            c.label, c.team_name, c.round_number, c.score
        ));
    }
    s.push_str(&estimate_lines(e, &plan.settings));
    s
}

/// The dry run's last lines, shared by `mixseek arena` and `mixseek experiment arena`: the
/// estimated calls, tokens and cost, the budget, and that nothing was sent.
pub(crate) fn estimate_lines(e: &arena::Estimate, settings: &ArenaSettings) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "Estimate: {} calls, about {} input and {} output tokens, cost {}\n",
        e.calls,
        e.input_tokens,
        e.output_tokens,
        match e.cost_usd {
            Some(c) => format!("${c:.4}"),
            None => format!("unknown (no price for {})", e.unpriced.join(", ")),
        }
    ));
    if let Some(max) = settings.max_cost_usd {
        s.push_str(&format!("Budget: max_cost_usd = {max}\n"));
    }
    if let Some(max) = settings.max_total_tokens {
        s.push_str(&format!("Budget: max_total_tokens = {max}\n"));
    }
    s.push_str("Nothing was sent.\n");
    s
}

pub(crate) fn print(text: &str) -> Result<ExitCode, CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush())?;
    Ok(ExitCode::SUCCESS)
}

/// What an `exec` whose orchestrator names an `arena_config` needs to end with an arena.
pub(crate) struct AfterExec {
    pub settings: ArenaSettings,
    pub registry: mixseek_llm::RegistryConfig,
    pub workspace: PathBuf,
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    pub masker: mixseek_core::PiiMasker,
}

impl AfterExec {
    /// From the loaded configuration (before the run takes it), when it names an arena.
    pub(crate) fn of(
        config: &mixseek_config::LoadedConfig,
        max_cost_usd: Option<f64>,
        max_tokens: Option<u64>,
    ) -> Option<AfterExec> {
        let settings = config.arena.clone()?;
        Some(AfterExec {
            settings,
            registry: mixseek_llm::RegistryConfig::new()
                .with_providers(config.file.providers.clone())
                .with_pricing(config.file.pricing.clone())
                .with_cache(
                    config.file.cache.clone(),
                    Some(config.workspace.root.clone()),
                )
                .with_env(mixseek_llm::Env::process()),
            workspace: config.workspace.root.clone(),
            max_cost_usd: max_cost_usd.or(config.orchestrator().max_cost_usd),
            max_tokens: max_tokens.or(config.orchestrator().max_total_tokens),
            // the run's masking applies to the arena's rows too (judges quote submissions)
            masker: config
                .file
                .privacy
                .masker()
                .unwrap_or_else(|_| mixseek_core::PiiMasker::disabled()),
        })
    }

    /// Runs the arena of the finished execution within what is left of the run's budget.
    /// A failure is reported and returned; the execution itself stays as it is.
    pub(crate) async fn run(
        mut self,
        summary: &mixseek_core::ExecutionSummary,
    ) -> Result<ArenaDetail, CliError> {
        let spent = summary.usage_by_role.total();
        if let Some(max) = self.max_cost_usd {
            let left = max - spent.cost_usd;
            if left <= 0.0 {
                return Err(CliError::failure(format!(
                    "no arena: the run spent its budget max_cost_usd = {max}"
                )));
            }
            self.settings.max_cost_usd =
                Some(self.settings.max_cost_usd.map_or(left, |a| a.min(left)));
        }
        if let Some(max) = self.max_tokens {
            let used = spent.input_tokens + spent.output_tokens;
            let left = max.saturating_sub(used);
            if left == 0 {
                return Err(CliError::failure(format!(
                    "no arena: the run spent its budget max_total_tokens = {max}"
                )));
            }
            self.settings.max_total_tokens =
                Some(self.settings.max_total_tokens.map_or(left, |a| a.min(left)));
        }
        let registry =
            ModelRegistry::new(self.registry).map_err(|e| CliError::usage(e.to_string()))?;
        let store = Store::open(db_path(&self.workspace)).map_err(|e| CliError::from_store(&e))?;
        let ids = vec![summary.execution_id.as_str().to_string()];
        let plan = arena::plan(&store, &ids, &self.settings, &registry).map_err(arena_error)?;
        let writer = store
            .writer(self.masker)
            .map_err(|e| CliError::from_store(&e))?;
        let outcome = arena::run(&plan, &registry, &writer)
            .await
            .map_err(arena_error)?;
        Ok(outcome.record)
    }
}
