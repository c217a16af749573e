//! `mixseek experiment arena NAME`: the experiment's **variants** compared pairwise by judge
//! LLMs over its tasks, with the team arena's engine (`mixseek_orchestrator::arena`).
//!
//! * **Submissions.** An item's submission is its execution's best team's best round — the
//!   round behind the item's score in the report (ties: the execution's best team, then the
//!   lower team id, then the later round). Items not finished, or without an evaluated round,
//!   are left out and counted.
//! * **Pairs.** For every task and repeat index, the variants' submissions are paired: every
//!   pair up to `all_pairs_up_to` variants, else the seeded design of `mixseek-judging` (seeded
//!   with `seed` plus the group's position, so tasks do not all get the same pairs). Each pair
//!   is judged twice with the positions swapped, with **that task's own prompt** in the judge
//!   prompt.
//! * **Ratings.** The verdicts of every task are pooled into one Bradley–Terry fit over the
//!   variants. The intervals come from a cluster bootstrap over **tasks** (each resample draws
//!   as many tasks as there are, with every game of a drawn task): the games of one task share
//!   its difficulty and its judge's view of it, so they are not independent evidence.
//! * **Budget.** `max_cost_usd` / `max_total_tokens` of the arena settings stop new judge calls
//!   as in the team arena; the unjudged games are stored as such.
//! * **Stored** in one transaction: an `arena_runs` row, the `arena_games` (real execution and
//!   team ids), the `experiment_arenas` row and the variants' `experiment_arena_ratings`
//!   (schema version 9, `mixseek_store::ExperimentArena`).

use crate::error::ExperimentError;
use mixseek_config::ArenaSettings;
use mixseek_judging::design;
use mixseek_llm::ModelRegistry;
use mixseek_orchestrator::arena::{self, ArenaPlan, Contestant, Estimate, Groups, Pair};
use mixseek_store::{
    ExperimentArena, ExperimentArenaLink, ItemState, Store, StoreWriter, VariantRatingRow,
};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// What the bootstrap of an experiment arena resamples (`experiment_arenas.bootstrap_unit`).
pub const BOOTSTRAP_UNIT: &str = "task";

/// An experiment arena, planned: nothing is sent yet (`--dry-run` stops here).
#[derive(Debug, Clone)]
pub struct VariantArenaPlan {
    /// The experiment's name.
    pub experiment: String,
    /// The engine's plan: one contestant per competing item, the pairs with their task's
    /// prompt (one prompt per task), the estimate.
    pub plan: ArenaPlan,
    /// Which variant each contestant is (the rated groups).
    pub groups: Groups,
    /// Each contestant's task and repeat, by contestant.
    pub items: Vec<(String, u32)>,
    /// The tasks with at least one pair.
    pub tasks: u32,
    /// Items left out because their execution has not finished.
    pub unfinished: u32,
    /// Finished items left out because their execution has no evaluated round.
    pub unevaluated: u32,
    /// Variants of the experiment without any competing submission (not rated).
    pub unrated: Vec<String>,
}

impl VariantArenaPlan {
    /// Items left out in all.
    pub fn left_out(&self) -> u32 {
        self.unfinished.saturating_add(self.unevaluated)
    }

    /// What it would send.
    pub fn estimate(&self) -> &Estimate {
        &self.plan.estimate
    }
}

/// A stored experiment arena.
#[derive(Debug, Clone)]
pub struct VariantArenaOutcome {
    /// What was stored (ratings by rank).
    pub record: ExperimentArena,
    /// Games left unjudged because the budget was reached.
    pub skipped_for_budget: u32,
}

/// The experiment named `name` (its record), or [`ExperimentError::NotFound`] with the names
/// the database has.
fn find(
    store: &Store,
    db: &Path,
    name: &str,
) -> Result<mixseek_store::ExperimentRecord, ExperimentError> {
    store.experiment(name)?.ok_or_else(|| {
        let known = store
            .experiments()
            .map(|l| l.into_iter().map(|e| e.experiment_id).collect())
            .unwrap_or_default();
        ExperimentError::NotFound {
            name: name.to_string(),
            db: db.to_path_buf(),
            known,
        }
    })
}

/// The variants in the experiment file's order, then those found only in the items (a
/// definition changed with `--force`), as the report orders them.
fn variant_order(definition: &serde_json::Value, items: &[ItemState]) -> Vec<String> {
    let mut order: Vec<String> = definition["variants"]
        .as_array()
        .map(|vs| {
            vs.iter()
                .filter_map(|v| v["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    for i in items {
        if !order.contains(&i.item.variant) {
            order.push(i.item.variant.clone());
        }
    }
    order
}

/// The item's submission: its execution's best team's best round (see the module docs).
fn submission_of(
    store: &Store,
    item: &ItemState,
    best_team: Option<&str>,
    variant: &str,
) -> Result<Option<Contestant>, ExperimentError> {
    let exec = item.item.execution_id.as_str();
    let rounds = store.completed_rounds(exec)?;
    let best = rounds
        .iter()
        .filter(|r| r.state.evaluation_score.is_finite())
        .max_by(|a, b| {
            a.state
                .evaluation_score
                .total_cmp(&b.state.evaluation_score)
                .then_with(|| {
                    let is_best =
                        |r: &mixseek_store::CompletedRound| Some(r.team_id.as_str()) == best_team;
                    is_best(a).cmp(&is_best(b))
                })
                .then_with(|| b.team_id.as_str().cmp(a.team_id.as_str()))
                .then(a.state.round_number.cmp(&b.state.round_number))
        });
    Ok(best.map(|r| Contestant {
        execution_id: exec.to_string(),
        team_id: r.team_id.as_str().to_string(),
        team_name: r.team_name.clone(),
        round_number: r.state.round_number,
        score: r.state.evaluation_score,
        submission: r.state.submission_content.clone(),
        label: format!(
            "{variant} on {} (repeat {})",
            item.item.task_id, item.item.repeat_index
        ),
    }))
}

/// Reads the items of experiment `name` from `store` (the database at `db`, for messages),
/// picks their submissions and pairs them: see the module docs.
pub fn plan(
    store: &Store,
    db: &Path,
    name: &str,
    settings: &ArenaSettings,
    registry: &ModelRegistry,
) -> Result<VariantArenaPlan, ExperimentError> {
    let record = find(store, db, name)?;
    let items = store.experiment_items(name)?;
    let order = variant_order(&record.definition, &items);
    let executions: HashMap<String, mixseek_store::ExecutionRow> = store
        .executions(None)?
        .into_iter()
        .map(|e| (e.execution_id.as_str().to_string(), e))
        .collect();
    let (mut unfinished, mut unevaluated) = (0u32, 0u32);
    // (task, repeat) → [(variant index, contestant index)], in task and repeat order
    let mut by_item: BTreeMap<(String, u32), Vec<(usize, usize)>> = BTreeMap::new();
    let mut contestants: Vec<Contestant> = Vec::new();
    let mut variant_of: Vec<usize> = Vec::new();
    let mut task_prompt: BTreeMap<String, String> = BTreeMap::new();
    let mut item_keys: Vec<(String, u32)> = Vec::new();
    for item in &items {
        if !item.finished() {
            unfinished += 1;
            continue;
        }
        let Some(v) = order.iter().position(|o| *o == item.item.variant) else {
            continue;
        };
        let row = executions.get(&item.item.execution_id);
        let best_team = row.and_then(|r| r.best_team_id.as_ref().map(|t| t.as_str()));
        let Some(c) = submission_of(store, item, best_team, &order[v])? else {
            unevaluated += 1;
            continue;
        };
        if let Some(row) = row {
            task_prompt
                .entry(item.item.task_id.clone())
                .or_insert_with(|| row.user_prompt.clone());
        }
        by_item
            .entry((item.item.task_id.clone(), item.item.repeat_index))
            .or_default()
            .push((v, contestants.len()));
        contestants.push(c);
        variant_of.push(v);
        item_keys.push((item.item.task_id.clone(), item.item.repeat_index));
    }
    // only variants with a submission are rated
    let mut rated: Vec<usize> = variant_of.clone();
    rated.sort_unstable();
    rated.dedup();
    let names: Vec<String> = rated.iter().map(|&v| order[v].clone()).collect();
    let unrated: Vec<String> = order
        .iter()
        .enumerate()
        .filter(|(v, _)| !rated.contains(v))
        .map(|(_, n)| n.clone())
        .collect();
    if names.len() < 2 {
        return Err(ExperimentError::ArenaTooFewVariants {
            name: name.to_string(),
            found: names,
            unfinished,
            unevaluated,
        });
    }
    let group_of = |v: usize| rated.iter().position(|&r| r == v).unwrap_or_default();
    let anchor = match &settings.anchor {
        None => None,
        Some(a) => Some(names.iter().position(|n| n == a).ok_or_else(|| {
            ExperimentError::ArenaUnknownAnchor {
                anchor: a.clone(),
                variants: names.clone(),
            }
        })?),
    };
    let tasks: Vec<String> = task_prompt.keys().cloned().collect();
    let mut pairs = Vec::new();
    let mut paired_tasks = std::collections::BTreeSet::new();
    for (at, ((task, _), members)) in by_item.iter_mut().enumerate() {
        // one submission per variant and item (an item is unique); by variant order
        members.sort_unstable();
        let prompt = tasks.iter().position(|t| t == task).unwrap_or_default();
        let seed = settings.seed.wrapping_add(at as u64);
        for (i, j) in design::pairs(
            members.len(),
            settings.all_pairs_up_to as usize,
            settings.min_comparisons as usize,
            seed,
        ) {
            pairs.push(Pair {
                first: members[i].1,
                second: members[j].1,
                prompt,
            });
            paired_tasks.insert(task.clone());
        }
    }
    if pairs.is_empty() {
        return Err(ExperimentError::ArenaNoCommonTask {
            name: name.to_string(),
            variants: names,
        });
    }
    let mut execution_ids: Vec<String> = Vec::new();
    for c in &contestants {
        if !execution_ids.contains(&c.execution_id) {
            execution_ids.push(c.execution_id.clone());
        }
    }
    let groups = Groups {
        of: variant_of.iter().map(|&v| group_of(v)).collect(),
        names,
        anchor,
    };
    let task_count = u32::try_from(paired_tasks.len()).unwrap_or(u32::MAX);
    let mut plan = ArenaPlan {
        execution_ids,
        user_prompt: format!(
            "Experiment {name}: its variants' submissions on {task_count} tasks, each pair \
             judged with its own task's prompt"
        ),
        prompts: tasks
            .iter()
            .map(|t| task_prompt.get(t).cloned().unwrap_or_default())
            .collect(),
        contestants,
        pairs,
        settings: settings.clone(),
        // the groups are anchored, not the submissions
        anchor: None,
        estimate: Estimate::default(),
    };
    plan.estimate = arena::estimate(&plan, registry);
    Ok(VariantArenaPlan {
        experiment: name.to_string(),
        plan,
        groups,
        items: item_keys,
        tasks: task_count,
        unfinished,
        unevaluated,
        unrated,
    })
}

/// Judges every game of `plan` within the budget, rates the variants and stores the arena
/// through `writer` (one transaction).
pub async fn run(
    plan: &VariantArenaPlan,
    registry: &ModelRegistry,
    writer: &StoreWriter,
) -> Result<VariantArenaOutcome, ExperimentError> {
    let outcome = arena::run_grouped(&plan.plan, &plan.groups, registry).await?;
    let record = record_of(plan, outcome.record, &outcome.ratings);
    writer.write_experiment_arena(&record).await?;
    Ok(VariantArenaOutcome {
        record,
        skipped_for_budget: outcome.skipped_for_budget,
    })
}

/// The stored form of a judged and rated plan.
fn record_of(
    plan: &VariantArenaPlan,
    arena: mixseek_store::ArenaDetail,
    ratings: &[arena::GroupRating],
) -> ExperimentArena {
    ExperimentArena {
        arena,
        link: ExperimentArenaLink {
            experiment_id: plan.experiment.clone(),
            tasks: plan.tasks,
            submissions: u32::try_from(plan.plan.contestants.len()).unwrap_or(u32::MAX),
            left_out: plan.left_out(),
            bootstrap_unit: BOOTSTRAP_UNIT.to_string(),
        },
        ratings: ratings
            .iter()
            .map(|g| VariantRatingRow {
                variant: g.name.clone(),
                rating: g.rating.rating,
                lower: g.rating.lower,
                upper: g.rating.upper,
                rank: u32::try_from(g.rating.rank).unwrap_or(u32::MAX),
                wins: g.rating.wins,
                losses: g.rating.losses,
                ties: g.rating.ties,
                games: g.rating.games,
                submissions: g.submissions,
            })
            .collect(),
    }
    .sorted()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mixseek_store::ExperimentItem;

    fn item(task: &str, variant: &str, repeat: u32, status: Option<&str>) -> ItemState {
        ItemState {
            item: ExperimentItem {
                experiment_id: "x".into(),
                task_id: task.into(),
                variant: variant.into(),
                repeat_index: repeat,
                execution_id: format!("{task}-{variant}-{repeat}"),
                task_metadata: serde_json::json!({}),
            },
            status: status.map(str::to_string),
            best_score: None,
            input_tokens: 0,
            output_tokens: 0,
            cost_usd: 0.0,
            seconds: None,
        }
    }

    #[test]
    fn variants_come_in_the_files_order_then_those_only_in_the_items() {
        let def = serde_json::json!({"variants": [{"name": "b"}, {"name": "a"}]});
        let items = [
            item("t", "a", 0, Some("completed")),
            item("t", "z", 0, Some("completed")),
        ];
        assert_eq!(variant_order(&def, &items), ["b", "a", "z"]);
        assert_eq!(variant_order(&serde_json::Value::Null, &items), ["a", "z"]);
    }

    #[test]
    fn a_record_carries_the_link_and_the_ratings_by_rank() {
        let contestant = |exec: &str| Contestant {
            execution_id: exec.into(),
            team_id: "a".into(),
            team_name: "A".into(),
            round_number: 1,
            score: 50.0,
            submission: "s".into(),
            label: exec.into(),
        };
        let plan = VariantArenaPlan {
            experiment: "copper".into(),
            plan: ArenaPlan {
                execution_ids: vec!["e1".into(), "e2".into()],
                user_prompt: "Experiment copper".into(),
                prompts: vec!["task".into()],
                contestants: vec![contestant("e1"), contestant("e2")],
                pairs: vec![Pair {
                    first: 0,
                    second: 1,
                    prompt: 0,
                }],
                settings: ArenaSettings::default(),
                anchor: None,
                estimate: Estimate::default(),
            },
            groups: Groups {
                names: vec!["base".into(), "hot".into()],
                of: vec![0, 1],
                anchor: None,
            },
            items: vec![("t".into(), 0), ("t".into(), 0)],
            tasks: 1,
            unfinished: 2,
            unevaluated: 1,
            unrated: vec![],
        };
        let rating = |rating: f64, rank: usize| mixseek_judging::bradley_terry::Rating {
            rating,
            lower: rating - 1.0,
            upper: rating + 1.0,
            rank,
            wins: 1.0,
            losses: 0.0,
            ties: 0.0,
            games: 1.0,
        };
        let ratings = [
            arena::GroupRating {
                name: "base".into(),
                rating: rating(990.0, 2),
                submissions: 1,
            },
            arena::GroupRating {
                name: "hot".into(),
                rating: rating(1010.0, 1),
                submissions: 1,
            },
        ];
        let detail = mixseek_store::ArenaDetail {
            summary: mixseek_store::ArenaSummary {
                arena_id: "a1".into(),
                created_at: mixseek_core::time::now_utc(),
                user_prompt: "Experiment copper".into(),
                execution_ids: vec!["e1".into(), "e2".into()],
                judge_models: vec!["mock:j".into()],
                settings: serde_json::json!({}),
                pairs: 1,
                games: 0,
                parsed_games: 0,
                disagreeing_pairs: 0,
                regularized: false,
                bootstrap_rounds: 0,
                confidence: 0.95,
                input_tokens: 0,
                output_tokens: 0,
                cost_usd: None,
            },
            ratings: vec![],
            games: vec![],
        };
        let r = record_of(&plan, detail, &ratings);
        assert_eq!(r.link.left_out, 3);
        assert_eq!(r.link.submissions, 2);
        assert_eq!(r.link.bootstrap_unit, "task");
        assert_eq!(r.ratings[0].variant, "hot");
        assert_eq!(r.ratings[1].rank, 2);
    }
}
