//! The pairwise arena (`mixseek arena`, and an `exec` whose orchestrator names an
//! `arena_config`): the teams' submissions to one prompt judged two at a time by an LLM, each
//! pair twice with the positions swapped, the verdicts fitted with Bradley–Terry and bootstrap
//! intervals (`mixseek-judging`), the whole arena stored in one transaction.
//!
//! Phases: [`plan`] reads the contestants from the store and picks the pairs (nothing is
//! sent; `--dry-run` stops there with the estimate), [`run`] judges the games within the
//! budget, fits, and writes the [`ArenaDetail`].
//!
//! The same engine rates groups of submissions ([`run_grouped`]): `mixseek experiment arena`
//! makes each variant's submissions on every task meet the other variants', each [`Pair`]
//! judged with its own task's prompt, and fits one rating per variant ([`Groups`]) with a
//! bootstrap that resamples whole prompts (tasks), since the games of one task are not
//! independent.

mod judge;

use judge::{GameResult, Judge};
use mixseek_config::{ArenaSettings, ArenaSubmission};
use mixseek_judging::bradley_terry::{self, Anchor, Bootstrap, Scale};
use mixseek_judging::design;
use mixseek_judging::verdict::{PairAgreement, pair_agreement};
use mixseek_llm::{LlmError, ModelRegistry};
use mixseek_store::{
    ArenaDetail, ArenaGameRow, ArenaRatingRow, ArenaSummary, Store, StoreError, StoreWriter,
};
use std::sync::Arc;

/// Output tokens assumed per judge answer when `max_tokens` is unset (for the estimate).
const ESTIMATED_ANSWER_TOKENS: u64 = 400;

/// Why an arena cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ArenaError {
    /// Reading or writing the database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The executions are not about the same prompt.
    #[error(
        "the executions answer different prompts ({first} vs {other}): an arena compares answers to one prompt"
    )]
    DifferentPrompts {
        /// The first execution.
        first: String,
        /// The execution whose prompt differs.
        other: String,
    },
    /// Fewer than two teams have an evaluated round.
    #[error("{found} team(s) with an evaluated round in {executions}: an arena needs at least 2")]
    TooFewContestants {
        /// Teams found.
        found: usize,
        /// The executions read.
        executions: String,
    },
    /// `anchor` names no contestant.
    #[error("anchor '{anchor}' is not a contestant; contestants: {known}")]
    UnknownAnchor {
        /// The configured anchor.
        anchor: String,
        /// The contestants' labels.
        known: String,
    },
    /// A judge model is not usable (unknown provider, missing key, ...).
    #[error("judge model '{model}': {source}")]
    Model {
        /// The judge model.
        model: String,
        /// Why.
        source: LlmError,
    },
    /// The user template does not render.
    #[error("arena user_template: {0}")]
    Template(String),
    /// The Bradley–Terry fit failed.
    #[error("rating the teams failed: {0}")]
    Fit(#[from] bradley_terry::FitError),
}

/// One team's submission in the arena.
#[derive(Debug, Clone, PartialEq)]
pub struct Contestant {
    /// Its execution.
    pub execution_id: String,
    /// The team.
    pub team_id: String,
    /// The team's name.
    pub team_name: String,
    /// The round whose submission competes.
    pub round_number: u32,
    /// That round's score (for the comparison with the arena's rating).
    pub score: f64,
    /// The submission.
    pub submission: String,
    /// How it is named in the arena's output: `team_id`, or `EXEC8/team_id` when several
    /// executions compete (the execution id's first 8 characters).
    pub label: String,
}

/// Two contestants to judge against each other, and the prompt they answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    /// The contestant shown as A in the pair's first game (an index into
    /// [`ArenaPlan::contestants`]).
    pub first: usize,
    /// The contestant shown as A in the second game.
    pub second: usize,
    /// The prompt both answered (an index into [`ArenaPlan::prompts`]).
    pub prompt: usize,
}

/// What an arena would send, before anything is sent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Estimate {
    /// Judge calls (games × judges), before structured-output repairs.
    pub calls: u64,
    /// Input tokens (about 4 characters per token).
    pub input_tokens: u64,
    /// Output tokens (`max_tokens`, else an assumed answer length).
    pub output_tokens: u64,
    /// Cost in US dollars; `None` when a judge model has no price.
    pub cost_usd: Option<f64>,
    /// Judge models without a price.
    pub unpriced: Vec<String>,
}

/// The contestants, pairs and judges of an arena, ready to run.
#[derive(Debug, Clone)]
pub struct ArenaPlan {
    /// The executions whose teams compete.
    pub execution_ids: Vec<String>,
    /// What the arena is stored as answering (`arena_runs.user_prompt`): the prompt of a team
    /// arena, a description for an arena over several prompts.
    pub user_prompt: String,
    /// The prompts the pairs answer (one for a team arena; one per task for an experiment's).
    pub prompts: Vec<String>,
    /// The contestants, by execution then team id.
    pub contestants: Vec<Contestant>,
    /// The pairs judged.
    pub pairs: Vec<Pair>,
    /// The settings.
    pub settings: ArenaSettings,
    /// The anchor's index, when the settings name one.
    pub anchor: Option<usize>,
    /// What it would cost.
    pub estimate: Estimate,
}

/// Reads the contestants of `execution_ids` (full ids) and picks the pairs.
pub fn plan(
    store: &Store,
    execution_ids: &[String],
    settings: &ArenaSettings,
    registry: &ModelRegistry,
) -> Result<ArenaPlan, ArenaError> {
    let mut user_prompt: Option<(String, String)> = None;
    let mut contestants = Vec::new();
    for exec in execution_ids {
        let row = store.execution(exec)?;
        let prompt = row.map(|r| r.user_prompt).unwrap_or_default();
        match &user_prompt {
            None => user_prompt = Some((exec.clone(), prompt)),
            Some((first, p)) if p.trim() != prompt.trim() => {
                return Err(ArenaError::DifferentPrompts {
                    first: first.clone(),
                    other: exec.clone(),
                });
            }
            Some(_) => {}
        }
        contestants.extend(contestants_of(
            store,
            exec,
            settings.submission,
            execution_ids.len() > 1,
        )?);
    }
    if contestants.len() < 2 {
        return Err(ArenaError::TooFewContestants {
            found: contestants.len(),
            executions: execution_ids.join(", "),
        });
    }
    let anchor = match &settings.anchor {
        None => None,
        Some(a) => Some(
            contestants
                .iter()
                .position(|c| c.label == *a || c.team_id == *a)
                .ok_or_else(|| ArenaError::UnknownAnchor {
                    anchor: a.clone(),
                    known: contestants
                        .iter()
                        .map(|c| c.label.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                })?,
        ),
    };
    let pairs = design::pairs(
        contestants.len(),
        settings.all_pairs_up_to as usize,
        settings.min_comparisons as usize,
        settings.seed,
    )
    .into_iter()
    .map(|(first, second)| Pair {
        first,
        second,
        prompt: 0,
    })
    .collect();
    let user_prompt = user_prompt.map(|(_, p)| p).unwrap_or_default();
    let mut plan = ArenaPlan {
        execution_ids: execution_ids.to_vec(),
        prompts: vec![user_prompt.clone()],
        user_prompt,
        contestants,
        pairs,
        settings: settings.clone(),
        anchor,
        estimate: Estimate::default(),
    };
    plan.estimate = estimate(&plan, registry);
    Ok(plan)
}

/// The competing submission of every team of `exec` with an evaluated round: `best` is the
/// round the team chose as its result (`final_submission`), else (a team that failed before
/// choosing) its best-scored round, the later one on a tie; `last` is its last evaluated round.
fn contestants_of(
    store: &Store,
    exec: &str,
    which: ArenaSubmission,
    prefixed: bool,
) -> Result<Vec<Contestant>, StoreError> {
    let rounds = store.completed_rounds(exec)?;
    let mut teams: Vec<&str> = rounds.iter().map(|r| r.team_id.as_str()).collect();
    teams.sort_unstable();
    teams.dedup();
    let mut out = Vec::with_capacity(teams.len());
    for team in teams {
        let mine = rounds.iter().filter(|r| r.team_id.as_str() == team);
        let by_round = |r: &&mixseek_store::CompletedRound| r.state.round_number;
        let chosen = match which {
            ArenaSubmission::Last => mine.max_by_key(by_round),
            ArenaSubmission::Best => {
                let mine: Vec<_> = mine.collect();
                mine.iter()
                    .copied()
                    .find(|r| r.final_submission)
                    .or_else(|| {
                        mine.iter().copied().max_by(|a, b| {
                            a.state
                                .evaluation_score
                                .total_cmp(&b.state.evaluation_score)
                                .then(a.state.round_number.cmp(&b.state.round_number))
                        })
                    })
            }
        };
        let Some(r) = chosen else { continue };
        out.push(Contestant {
            execution_id: exec.to_string(),
            label: if prefixed {
                format!("{}/{team}", exec.chars().take(8).collect::<String>())
            } else {
                team.to_string()
            },
            team_id: team.to_string(),
            team_name: r.team_name.clone(),
            round_number: r.state.round_number,
            score: r.state.evaluation_score,
            submission: r.state.submission_content.clone(),
        });
    }
    Ok(out)
}

/// What `plan` would send (its `estimate` is not read): calls, tokens (about 4 characters a
/// token) and cost at the judges' prices.
pub fn estimate(plan: &ArenaPlan, registry: &ModelRegistry) -> Estimate {
    let settings = &plan.settings;
    let fixed = settings.system_prompt.len() + settings.user_template.len();
    let length = |i: usize| plan.contestants.get(i).map_or(0, |c| c.submission.len());
    let per_pair: u64 = plan
        .pairs
        .iter()
        .map(|p| {
            let prompt = plan.prompts.get(p.prompt).map_or(0, String::len);
            let chars = fixed + prompt + length(p.first) + length(p.second);
            2 * (chars as u64).div_ceil(4)
        })
        .sum();
    let pairs = &plan.pairs;
    let judges = settings.judge_models();
    let games = 2 * pairs.len() as u64;
    let answer = settings.max_tokens.unwrap_or(ESTIMATED_ANSWER_TOKENS);
    let mut cost = Some(0.0);
    let mut unpriced = Vec::new();
    for j in &judges {
        match registry.price(j) {
            Some(p) => {
                cost = cost.map(|c| {
                    c + per_pair as f64 * p.input_per_million / 1e6
                        + (games * answer) as f64 * p.output_per_million / 1e6
                });
            }
            None if j.starts_with("mock:") => {}
            None => {
                cost = None;
                unpriced.push(j.clone());
            }
        }
    }
    Estimate {
        calls: games * judges.len() as u64,
        input_tokens: per_pair * judges.len() as u64,
        output_tokens: games * answer * judges.len() as u64,
        cost_usd: cost,
        unpriced,
    }
}

/// The stored arena and whether the budget stopped it early.
#[derive(Debug, Clone)]
pub struct ArenaOutcome {
    /// What was stored (ratings by rank, games by pair).
    pub record: ArenaDetail,
    /// Games left unjudged because `max_cost_usd` / `max_total_tokens` was reached.
    pub skipped_for_budget: u32,
}

/// Judges every game of `plan` (at most `max_concurrent` calls at once, none once the budget
/// is spent), rates the contestants and stores the arena through `writer`.
pub async fn run(
    plan: &ArenaPlan,
    registry: &ModelRegistry,
    writer: &StoreWriter,
) -> Result<ArenaOutcome, ArenaError> {
    let results = play(plan, registry).await?;
    let record = record_of(plan, &results)?;
    writer.write_arena(&record).await?;
    Ok(ArenaOutcome {
        skipped_for_budget: skipped(&results),
        record,
    })
}

/// Every game of `plan`, judged within its budget.
async fn play(plan: &ArenaPlan, registry: &ModelRegistry) -> Result<Vec<GameResult>, ArenaError> {
    let judge = Arc::new(Judge::new(plan, registry)?);
    Ok(judge.play_all(plan).await)
}

fn skipped(results: &[GameResult]) -> u32 {
    u32::try_from(results.iter().filter(|r| r.skipped_for_budget).count()).unwrap_or(u32::MAX)
}

/// The contestants grouped for rating: an experiment's variants, each with its submissions on
/// every task.
#[derive(Debug, Clone, PartialEq)]
pub struct Groups {
    /// The groups' names (the variants), in the order the ratings come in.
    pub names: Vec<String>,
    /// Each contestant's group (an index into `names`), by contestant.
    pub of: Vec<usize>,
    /// The group whose rating is `anchor_rating` (else the mean is).
    pub anchor: Option<usize>,
}

/// One group's rating.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupRating {
    /// The group's name.
    pub name: String,
    /// Its rating, interval, rank and record.
    pub rating: bradley_terry::Rating,
    /// Its contestants (submissions) in the arena.
    pub submissions: u32,
}

/// A grouped arena, judged and rated, not yet stored.
#[derive(Debug, Clone)]
pub struct GroupedOutcome {
    /// The arena's `arena_runs` row and games (its `ratings` are empty: the groups are rated).
    pub record: ArenaDetail,
    /// By group, in [`Groups::names`]' order.
    pub ratings: Vec<GroupRating>,
    /// Games left unjudged because `max_cost_usd` / `max_total_tokens` was reached.
    pub skipped_for_budget: u32,
}

/// Judges every game of `plan` as [`run`] does, then rates the **groups**: each verdict
/// counts for the two contestants' groups, one Bradley–Terry fit over all prompts, with a
/// bootstrap that resamples prompts (every game of a drawn prompt: a cluster bootstrap; see
/// `mixseek_judging::bradley_terry::rate_clustered`). Nothing is stored: the caller writes
/// the record with what links it to its groups.
pub async fn run_grouped(
    plan: &ArenaPlan,
    groups: &Groups,
    registry: &ModelRegistry,
) -> Result<GroupedOutcome, ArenaError> {
    let results = play(plan, registry).await?;
    let (record, ratings) = grouped_record_of(plan, groups, &results)?;
    Ok(GroupedOutcome {
        record,
        ratings,
        skipped_for_budget: skipped(&results),
    })
}

/// The scale and bootstrap of `settings`, anchored at `anchor` (else the mean).
fn fit_settings(s: &ArenaSettings, anchor: Option<usize>) -> (Scale, Bootstrap) {
    (
        Scale {
            points: s.scale,
            base: s.base,
            anchor_rating: s.anchor_rating,
            anchor: anchor.map_or(Anchor::Mean, Anchor::Contestant),
        },
        Bootstrap {
            rounds: s.bootstrap_rounds as usize,
            confidence: s.confidence,
            seed: s.seed,
        },
    )
}

/// A grouped arena's record (no team ratings) and the groups' ratings.
fn grouped_record_of(
    plan: &ArenaPlan,
    groups: &Groups,
    results: &[GameResult],
) -> Result<(ArenaDetail, Vec<GroupRating>), ArenaError> {
    let s = &plan.settings;
    let group = |c: usize| groups.of.get(c).copied();
    let mut comparisons = Vec::new();
    let mut clusters = Vec::new();
    for r in results {
        let Some(c) = r.game.comparison(s.strong_weight) else {
            continue;
        };
        let (Some(a), Some(b)) = (group(c.a), group(c.b)) else {
            continue;
        };
        // two submissions of one group are never paired; such a game would say nothing
        if a == b {
            continue;
        }
        comparisons.push(bradley_terry::Comparison { a, b, ..c });
        clusters.push(r.prompt);
    }
    let (scale, boot) = fit_settings(s, groups.anchor);
    let rated =
        bradley_terry::rate_clustered(groups.names.len(), &comparisons, &clusters, &scale, &boot)?;
    let ratings = groups
        .names
        .iter()
        .zip(&rated.ratings)
        .enumerate()
        .map(|(g, (name, rating))| GroupRating {
            name: name.clone(),
            rating: *rating,
            submissions: u32::try_from(groups.of.iter().filter(|&&x| x == g).count())
                .unwrap_or(u32::MAX),
        })
        .collect();
    let record = detail_of(plan, results, comparisons.len(), rated.regularized);
    Ok((record.sorted(), ratings))
}

/// The arena's record: every game, the pair agreements, the fit and its intervals.
fn record_of(plan: &ArenaPlan, results: &[GameResult]) -> Result<ArenaDetail, ArenaError> {
    let s = &plan.settings;
    let comparisons: Vec<_> = results
        .iter()
        .filter_map(|r| r.game.comparison(s.strong_weight))
        .collect();
    let (scale, boot) = fit_settings(s, plan.anchor);
    let rated = bradley_terry::rate(plan.contestants.len(), &comparisons, &scale, &boot)?;
    let mut record = detail_of(plan, results, comparisons.len(), rated.regularized);
    record.ratings = rated
        .ratings
        .iter()
        .zip(&plan.contestants)
        .map(|(r, c)| ArenaRatingRow {
            execution_id: c.execution_id.clone(),
            team_id: c.team_id.clone(),
            team_name: c.team_name.clone(),
            round_number: c.round_number,
            rating: r.rating,
            lower: r.lower,
            upper: r.upper,
            rank: u32::try_from(r.rank).unwrap_or(u32::MAX),
            wins: r.wins,
            losses: r.losses,
            ties: r.ties,
            games: r.games,
        })
        .collect();
    Ok(record.sorted())
}

/// The summary and games of an arena (no ratings): `parsed` games had a verdict, the fit was
/// `regularized` or not.
fn detail_of(
    plan: &ArenaPlan,
    results: &[GameResult],
    parsed: usize,
    regularized: bool,
) -> ArenaDetail {
    let s = &plan.settings;
    let mut game_rows = Vec::with_capacity(results.len());
    let mut disagreeing = 0;
    for pair in results.chunks(2) {
        let [g1, g2] = pair else { continue };
        let agreement = pair_agreement(&g1.game, &g2.game);
        if agreement == PairAgreement::Disagree {
            disagreeing += 1;
        }
        for r in [g1, g2] {
            game_rows.push(game_row(plan, r, agreement));
        }
    }
    let (input_tokens, output_tokens) = results.iter().fold((0, 0), |(i, o), r| {
        (i + r.usage.input_tokens, o + r.usage.output_tokens)
    });
    let unpriced = results.iter().any(|r| r.usage.unpriced_requests > 0);
    let summary = ArenaSummary {
        arena_id: uuid::Uuid::new_v4().to_string(),
        created_at: chrono::Utc::now(),
        user_prompt: plan.user_prompt.clone(),
        execution_ids: plan.execution_ids.clone(),
        judge_models: s.judge_models(),
        settings: settings_json(s),
        pairs: u32::try_from(plan.pairs.len()).unwrap_or(u32::MAX),
        games: u32::try_from(results.len()).unwrap_or(u32::MAX),
        parsed_games: u32::try_from(parsed).unwrap_or(u32::MAX),
        disagreeing_pairs: disagreeing,
        regularized,
        bootstrap_rounds: s.bootstrap_rounds,
        confidence: s.confidence,
        input_tokens,
        output_tokens,
        cost_usd: (!unpriced).then(|| results.iter().map(|r| r.usage.cost_usd).sum()),
    };
    ArenaDetail {
        summary,
        ratings: Vec::new(),
        games: game_rows,
    }
}

fn game_row(plan: &ArenaPlan, r: &GameResult, agreement: PairAgreement) -> ArenaGameRow {
    let (a, b) = (
        &plan.contestants[r.game.first],
        &plan.contestants[r.game.second],
    );
    ArenaGameRow {
        pair_index: r.pair_index,
        game: r.order,
        judge: r.judge.clone(),
        a_execution_id: a.execution_id.clone(),
        a_team_id: a.team_id.clone(),
        b_execution_id: b.execution_id.clone(),
        b_team_id: b.team_id.clone(),
        verdict: r.game.verdict.map(|v| v.label().to_string()),
        raw_output: r.raw.clone(),
        agreement: match agreement {
            PairAgreement::Agree => "agree",
            PairAgreement::Disagree => "disagree",
            PairAgreement::Incomplete => "incomplete",
        }
        .to_string(),
        error: r.error.clone(),
        input_tokens: r.usage.input_tokens,
        output_tokens: r.usage.output_tokens,
        cost_usd: (r.usage.unpriced_requests == 0 && r.usage.requests > 0)
            .then_some(r.usage.cost_usd),
    }
}

/// The settings as stored: every key but the long prompt texts, which are kept only when
/// they differ from the defaults (then as given).
fn settings_json(s: &ArenaSettings) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap_or(serde_json::Value::Null);
    if let Some(map) = v.as_object_mut() {
        if s.system_prompt == mixseek_config::DEFAULT_ARENA_SYSTEM_PROMPT {
            map.insert("system_prompt".into(), "default".into());
        }
        if s.user_template == mixseek_config::DEFAULT_ARENA_USER_TEMPLATE {
            map.insert("user_template".into(), "default".into());
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use mixseek_judging::verdict::{Game, Verdict};

    fn plan(teams: &[&str]) -> ArenaPlan {
        let contestants: Vec<Contestant> = teams
            .iter()
            .map(|t| Contestant {
                execution_id: "e".into(),
                team_id: (*t).into(),
                team_name: t.to_uppercase(),
                round_number: 1,
                score: 50.0,
                submission: format!("answer of {t}"),
                label: (*t).into(),
            })
            .collect();
        ArenaPlan {
            execution_ids: vec!["e".into()],
            user_prompt: "task".into(),
            prompts: vec!["task".into()],
            pairs: design::pairs(contestants.len(), 12, 4, 0)
                .into_iter()
                .map(|(first, second)| Pair {
                    first,
                    second,
                    prompt: 0,
                })
                .collect(),
            contestants,
            settings: ArenaSettings {
                bootstrap_rounds: 0,
                ..ArenaSettings::default()
            },
            anchor: None,
            estimate: Estimate::default(),
        }
    }

    fn result(pair: u32, order: u8, first: usize, second: usize, v: Option<Verdict>) -> GameResult {
        GameResult {
            pair_index: pair,
            prompt: 0,
            order,
            judge: "mock:j".into(),
            game: Game {
                first,
                second,
                verdict: v,
            },
            raw: v.map(|v| format!("[[{}]]", v.label())),
            error: v.is_none().then(|| "no verdict".to_string()),
            usage: mixseek_core::Usage::default(),
            skipped_for_budget: false,
        }
    }

    #[test]
    fn a_position_biased_pair_is_counted_as_disagreeing_and_both_games_are_evidence() {
        let p = plan(&["a", "b"]);
        // the judge prefers position A both times: a over b, then b over a
        let results = [
            result(0, 1, 0, 1, Some(Verdict::ABetter)),
            result(0, 2, 1, 0, Some(Verdict::ABetter)),
        ];
        let r = record_of(&p, &results).expect("record");
        assert_eq!(
            (
                r.summary.games,
                r.summary.parsed_games,
                r.summary.disagreeing_pairs
            ),
            (2, 2, 1)
        );
        assert!(r.games.iter().all(|g| g.agreement == "disagree"));
        // one win each: equal ratings at the anchor
        assert!((r.ratings[0].rating - r.ratings[1].rating).abs() < 1e-6);
        assert!((r.ratings[0].rating - 1000.0).abs() < 1e-6);
        assert_eq!(r.games[1].a_team_id, "b");
    }

    #[test]
    fn grouped_contestants_are_rated_as_their_groups_over_the_prompts() {
        // two tasks, each with a submission of variant x (contestants 0, 2) and y (1, 3)
        let mut p = plan(&["x1", "y1", "x2", "y2"]);
        p.settings.judge_model = "mock:j".into();
        p.prompts = vec!["task one".into(), "task two".into()];
        p.pairs = vec![
            Pair {
                first: 0,
                second: 1,
                prompt: 0,
            },
            Pair {
                first: 2,
                second: 3,
                prompt: 1,
            },
        ];
        let groups = Groups {
            names: vec!["x".into(), "y".into()],
            of: vec![0, 1, 0, 1],
            anchor: None,
        };
        let mut results = vec![
            result(0, 1, 0, 1, Some(Verdict::ABetter)),
            result(0, 2, 1, 0, Some(Verdict::BBetter)),
            result(1, 1, 2, 3, Some(Verdict::ABetter)),
            result(1, 2, 3, 2, Some(Verdict::Tie)),
        ];
        for r in &mut results[2..] {
            r.prompt = 1;
        }
        let (record, ratings) = grouped_record_of(&p, &groups, &results).expect("rated");
        assert!(
            record.ratings.is_empty(),
            "the groups are rated, not the submissions"
        );
        assert_eq!((record.summary.games, record.summary.parsed_games), (4, 4));
        assert_eq!(record.games[2].a_team_id, "x2");
        let names: Vec<&str> = ratings.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["x", "y"]);
        assert_eq!(ratings[0].submissions, 2);
        // x won 3 games and tied 1
        assert_eq!((ratings[0].rating.wins, ratings[0].rating.ties), (3.0, 1.0));
        assert!(ratings[0].rating.rating > ratings[1].rating.rating);
        // every prompt renders its own task
        let judge = Judge::new(
            &p,
            &ModelRegistry::new(mixseek_llm::RegistryConfig::new()).expect("registry"),
        )
        .expect("judge");
        let second = judge.render(&p, 1, 2, 3).expect("render");
        assert!(
            second.contains("task two") && !second.contains("task one"),
            "{second}"
        );
        assert!(
            judge.render(&p, 5, 0, 1).is_err(),
            "an unknown prompt is an error, not a panic"
        );
    }

    #[test]
    fn an_unparseable_verdict_is_kept_but_never_counted() {
        let p = plan(&["a", "b"]);
        let results = [
            result(0, 1, 0, 1, Some(Verdict::AMuchBetter)),
            result(0, 2, 1, 0, None),
        ];
        let r = record_of(&p, &results).expect("record");
        assert_eq!(
            (
                r.summary.games,
                r.summary.parsed_games,
                r.summary.disagreeing_pairs
            ),
            (2, 1, 0)
        );
        assert_eq!(r.games[1].verdict, None);
        assert_eq!(r.games[1].agreement, "incomplete");
        // the strong verdict counts strong_weight (3) wins for a
        assert_eq!(r.ratings[0].wins, 3.0);
        assert!(r.ratings[0].rating > r.ratings[1].rating);
    }
}
