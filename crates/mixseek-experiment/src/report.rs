//! `mixseek experiment report NAME`: per variant the mean score with a bootstrap interval,
//! cost, tokens and failure rate; each variant against the baseline, paired over the tasks
//! both have scores for (mean difference with its interval, wins / ties / losses); and the
//! per-task table.
//!
//! The unit of the statistics is the task: an item's score is its execution's best score
//! (the best team's best round), a variant's score on a task is the mean over its repeats,
//! and intervals resample tasks (repeats of one task are not independent samples of the
//! variant's quality). Intervals are percentile bootstraps (`mixseek_judging::stats`) with the
//! experiment's `seed` and `confidence`, so a report is the same every time it is made from
//! the same rows, whichever machines ran them. Run times are left out for that reason.
//!
//! When the experiment has an arena of its variants (`mixseek experiment arena`), the report
//! ends its variant sections with the latest one ([`ArenaSection`]): the variants' ratings
//! with their intervals, ranks and records, the judges and the cost.

use crate::error::ExperimentError;
use mixseek_judging::stats::{self, Interval};
use mixseek_store::{ItemState, Store};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Scores closer than this count as a tie in the paired comparison.
pub const TIE_TOLERANCE: f64 = 1e-9;

/// One variant's line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VariantLine {
    /// The variant.
    pub variant: String,
    /// Its items in the database.
    pub items: u64,
    /// Items whose execution ended.
    pub finished: u64,
    /// Items whose execution failed (no team has a result).
    pub failed: u64,
    /// Items whose execution partially failed (some teams failed).
    pub partial_failures: u64,
    /// `failed / finished` (0 when none finished).
    pub failure_rate: f64,
    /// Tasks with a score.
    pub tasks_scored: u64,
    /// The mean over tasks of the task's mean score, with its interval.
    pub score: Option<Interval>,
    /// Cost of its executions, in US dollars.
    pub cost_usd: f64,
    /// Input tokens of its executions.
    pub input_tokens: u64,
    /// Output tokens of its executions.
    pub output_tokens: u64,
}

/// A variant against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The variant.
    pub variant: String,
    /// The baseline variant.
    pub baseline: String,
    /// Tasks both have a score for.
    pub tasks: u64,
    /// Mean of (variant − baseline) over those tasks, with its interval.
    pub difference: Option<Interval>,
    /// Tasks where the variant scored higher.
    pub wins: u64,
    /// Tasks with equal scores.
    pub ties: u64,
    /// Tasks where the baseline scored higher.
    pub losses: u64,
}

/// One task's line: each variant's mean score over its repeats (`None`: no score).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskLine {
    /// The task's id.
    pub task_id: String,
    /// Per variant, in the report's variant order.
    pub scores: Vec<Option<f64>>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentReport {
    /// The experiment's name.
    pub experiment: String,
    /// The baseline variant.
    pub baseline: String,
    /// The intervals' confidence level.
    pub confidence: f64,
    /// The bootstrap's seed.
    pub seed: u64,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Items recorded.
    pub items: u64,
    /// Items whose execution ended.
    pub finished: u64,
    /// Per variant, in the experiment file's order.
    pub variants: Vec<VariantLine>,
    /// Each other variant against the baseline.
    pub comparisons: Vec<Comparison>,
    /// Per task, in the natural order of the task ids ([`natural_cmp`]: `t2` before `t10`).
    /// The database keeps no task order (neither the task file's line nor the item number);
    /// for numbered ids, as most task sets have, this is the file's order.
    pub tasks: Vec<TaskLine>,
    /// The latest arena of the variants, if the experiment has one (set by [`build`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arena: Option<ArenaSection>,
}

/// Builds the report of experiment `name` from `store`.
pub fn build(store: &Store, db: &Path, name: &str) -> Result<ExperimentReport, ExperimentError> {
    let Some(record) = store.experiment(name)? else {
        return Err(ExperimentError::NotFound {
            name: name.to_string(),
            db: db.to_path_buf(),
            known: store
                .experiments()?
                .into_iter()
                .map(|e| e.experiment_id)
                .collect(),
        });
    };
    let def = &record.definition;
    let mut order: Vec<String> = def["variants"]
        .as_array()
        .map(|vs| {
            vs.iter()
                .filter_map(|v| v["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let items = store.experiment_items(name)?;
    // Variants found only in the items (a definition changed with --force) come last.
    for i in &items {
        if !order.contains(&i.item.variant) {
            order.push(i.item.variant.clone());
        }
    }
    let baseline = def["baseline"]
        .as_str()
        .map(str::to_string)
        .or_else(|| order.first().cloned())
        .unwrap_or_default();
    let confidence = def["confidence"].as_f64().unwrap_or(0.95);
    let seed = def["seed"].as_u64().unwrap_or(0);
    let mut report = compute(
        name,
        &order,
        &baseline,
        confidence,
        seed,
        stats::DEFAULT_RESAMPLES,
        &items,
    );
    report.arena = store
        .latest_experiment_arena(name)?
        .map(|a| ArenaSection::of(&a));
    Ok(report)
}

/// The report from the items (pure).
pub fn compute(
    name: &str,
    order: &[String],
    baseline: &str,
    confidence: f64,
    seed: u64,
    resamples: usize,
    items: &[ItemState],
) -> ExperimentReport {
    // variant → task → scores of its repeats
    let mut scores: BTreeMap<&str, BTreeMap<&str, Vec<f64>>> = BTreeMap::new();
    let mut lines: Vec<VariantLine> = order
        .iter()
        .map(|v| VariantLine {
            variant: v.clone(),
            items: 0,
            finished: 0,
            failed: 0,
            partial_failures: 0,
            failure_rate: 0.0,
            tasks_scored: 0,
            score: None,
            cost_usd: 0.0,
            input_tokens: 0,
            output_tokens: 0,
        })
        .collect();
    let mut task_ids: Vec<&str> = Vec::new();
    for i in items {
        let Some(line) = lines.iter_mut().find(|l| l.variant == i.item.variant) else {
            continue;
        };
        line.items += 1;
        line.finished += u64::from(i.finished());
        line.failed += u64::from(i.status.as_deref() == Some("failed"));
        line.partial_failures += u64::from(i.status.as_deref() == Some("partial_failure"));
        line.cost_usd += i.cost_usd;
        line.input_tokens += i.input_tokens;
        line.output_tokens += i.output_tokens;
        task_ids.push(&i.item.task_id);
        if let Some(s) = i.best_score.filter(|s| s.is_finite() && i.finished()) {
            scores
                .entry(&i.item.variant)
                .or_default()
                .entry(&i.item.task_id)
                .or_default()
                .push(s);
        }
    }
    task_ids.sort_unstable_by(|a, b| natural_cmp(a, b));
    task_ids.dedup();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let task_means = |variant: &str| -> BTreeMap<&str, f64> {
        scores
            .get(variant)
            .map(|m| {
                m.iter()
                    .filter(|(_, v)| !v.is_empty())
                    .map(|(t, v)| (*t, mean(v)))
                    .collect()
            })
            .unwrap_or_default()
    };
    for line in &mut lines {
        if line.finished > 0 {
            line.failure_rate = line.failed as f64 / line.finished as f64;
        }
        let means: Vec<f64> = task_means(&line.variant).into_values().collect();
        line.tasks_scored = means.len() as u64;
        line.score = stats::mean_interval(&means, confidence, resamples, seed);
    }
    let base = task_means(baseline);
    let comparisons = order
        .iter()
        .filter(|v| v.as_str() != baseline)
        .map(|v| {
            let mine = task_means(v);
            let pairs: Vec<(f64, f64)> = mine
                .iter()
                .filter_map(|(t, s)| base.get(t).map(|b| (*s, *b)))
                .collect();
            let paired = stats::paired(&pairs, TIE_TOLERANCE, confidence, resamples, seed);
            Comparison {
                variant: v.clone(),
                baseline: baseline.to_string(),
                tasks: pairs.len() as u64,
                difference: paired.as_ref().map(|p| p.difference),
                wins: paired.as_ref().map_or(0, |p| p.wins as u64),
                ties: paired.as_ref().map_or(0, |p| p.ties as u64),
                losses: paired.as_ref().map_or(0, |p| p.losses as u64),
            }
        })
        .collect();
    let per_variant: Vec<BTreeMap<&str, f64>> = order.iter().map(|v| task_means(v)).collect();
    let tasks = task_ids
        .iter()
        .map(|t| TaskLine {
            task_id: t.to_string(),
            scores: per_variant.iter().map(|m| m.get(t).copied()).collect(),
        })
        .collect();
    ExperimentReport {
        experiment: name.to_string(),
        baseline: baseline.to_string(),
        confidence,
        seed,
        resamples,
        items: items.len() as u64,
        finished: items.iter().filter(|i| i.finished()).count() as u64,
        variants: lines,
        comparisons,
        tasks,
        arena: None,
    }
}

/// Compares task ids as a person reads them: runs of ASCII digits by their number (`t2` before
/// `t10` before `t100`), the rest by character. Ties (`t01` and `t1`) fall back to the plain
/// order, so only equal ids compare equal and the order is the same on every machine.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    /// The leading run of digits or of other characters, and the rest.
    fn chunk(s: &str) -> Option<(&str, &str)> {
        let digit = s.chars().next()?.is_ascii_digit();
        let end = s
            .find(|c: char| c.is_ascii_digit() != digit)
            .unwrap_or(s.len());
        Some(s.split_at(end))
    }
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let (mut x, mut y) = (a, b);
    loop {
        let ((cx, rx), (cy, ry)) = match (chunk(x), chunk(y)) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(cx), Some(cy)) => (cx, cy),
        };
        let order = if digits(cx) && digits(cy) {
            let (nx, ny) = (cx.trim_start_matches('0'), cy.trim_start_matches('0'));
            nx.len().cmp(&ny.len()).then_with(|| nx.cmp(ny))
        } else {
            cx.cmp(cy)
        };
        if order != Ordering::Equal {
            return order;
        }
        (x, y) = (rx, ry);
    }
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_string(), |v| format!("{v:.2}"))
}

fn interval(i: &Option<Interval>) -> String {
    match i {
        Some(i) => format!("{:.2} [{:.2}, {:.2}]", i.estimate, i.low, i.high),
        None => "—".into(),
    }
}

/// Columns padded to their widest cell (by characters).
fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = widths[i].saturating_sub(c.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            s.push_str(c);
            s.push_str(&" ".repeat(pad));
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(head.to_vec());
    out.push_str(&line(
        widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str)
            .collect(),
    ));
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

/// The report as text tables.
pub fn text(r: &ExperimentReport) -> String {
    let pct = (r.confidence * 100.0).round();
    let mut s = format!(
        "Experiment {}: {} items, {} finished (baseline: {}; {pct}% bootstrap intervals over tasks, {} resamples, seed {})\n\n",
        r.experiment, r.items, r.finished, r.baseline, r.resamples, r.seed
    );
    let rows: Vec<Vec<String>> = r
        .variants
        .iter()
        .map(|v| {
            vec![
                v.variant.clone(),
                format!("{}/{}", v.finished, v.items),
                v.tasks_scored.to_string(),
                interval(&v.score),
                format!("{:.0}%", v.failure_rate * 100.0),
                v.partial_failures.to_string(),
                format!("${:.4}", v.cost_usd),
                (v.input_tokens + v.output_tokens).to_string(),
            ]
        })
        .collect();
    s.push_str(&table(
        &[
            "Variant",
            "Finished",
            "Tasks",
            &format!("Score (mean [{pct}% CI])"),
            "Failed",
            "Partial",
            "Cost",
            "Tokens",
        ],
        &rows,
    ));
    if !r.comparisons.is_empty() {
        s.push_str(&format!("\nPaired against {} (same tasks)\n", r.baseline));
        let rows: Vec<Vec<String>> = r
            .comparisons
            .iter()
            .map(|c| {
                vec![
                    c.variant.clone(),
                    c.tasks.to_string(),
                    interval(&c.difference),
                    format!("{}/{}/{}", c.wins, c.ties, c.losses),
                    verdict(c).to_string(),
                ]
            })
            .collect();
        s.push_str(&table(
            &["Variant", "Tasks", "Difference [CI]", "W/T/L", "Verdict"],
            &rows,
        ));
    }
    if let Some(a) = &r.arena {
        s.push('\n');
        s.push_str(&arena_text(a));
    }
    if !r.tasks.is_empty() {
        s.push_str("\nPer task (mean score over repeats)\n");
        let mut head = vec!["Task"];
        head.extend(r.variants.iter().map(|v| v.variant.as_str()));
        let rows: Vec<Vec<String>> = r
            .tasks
            .iter()
            .map(|t| {
                let mut row = vec![t.task_id.clone()];
                row.extend(t.scores.iter().map(|s| num(*s)));
                row
            })
            .collect();
        s.push_str(&table(&head, &rows));
    }
    s
}

/// What the interval says: better, worse, or no clear difference.
pub fn verdict(c: &Comparison) -> &'static str {
    match &c.difference {
        Some(d) if d.n >= 2 && d.low > 0.0 => "better",
        Some(d) if d.n >= 2 && d.high < 0.0 => "worse",
        Some(_) => "no clear difference",
        None => "no common task",
    }
}

/// The latest arena of the variants (`mixseek experiment arena`), as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArenaSection {
    /// The arena's id.
    pub arena_id: String,
    /// When it ran (UTC, RFC 3339).
    pub created_at: String,
    /// The judge models.
    pub judges: Vec<String>,
    /// Whether a judge was the offline `mock:` provider: its verdicts are made up, and the
    /// report says so as `mixseek experiment arena` does.
    pub mock_judges: bool,
    /// Tasks with judged pairs.
    pub tasks: u32,
    /// Items whose submission competed.
    pub submissions: u32,
    /// Items left out (not finished, or without an evaluated round).
    pub left_out: u32,
    /// Pairs judged (each twice, positions swapped, per judge).
    pub pairs: u32,
    /// Games played.
    pub games: u32,
    /// Games with a verdict.
    pub parsed_games: u32,
    /// Pairs whose two games disagreed once the positions are swapped back.
    pub disagreeing_pairs: u32,
    /// Whether the fit needed its weak prior (a variant won or lost everything).
    pub regularized: bool,
    /// What the bootstrap resampled (`task`: whole tasks).
    pub bootstrap_unit: String,
    /// Bootstrap resamples.
    pub bootstrap_rounds: u32,
    /// The intervals' confidence level.
    pub confidence: f64,
    /// Input tokens of the judge calls.
    pub input_tokens: u64,
    /// Output tokens of the judge calls.
    pub output_tokens: u64,
    /// Cost of the judge calls in US dollars; `None` when a judge is unpriced.
    pub cost_usd: Option<f64>,
    /// The variants' ratings, by rank.
    pub ratings: Vec<mixseek_store::VariantRatingRow>,
    /// How to read it, one paragraph.
    pub how_to_read: String,
}

impl ArenaSection {
    /// The section of a stored arena.
    pub fn of(a: &mixseek_store::ExperimentArena) -> ArenaSection {
        let s = &a.arena.summary;
        let points = s.settings["scale"].as_f64().unwrap_or(400.0);
        let base = s.settings["base"].as_f64().unwrap_or(10.0);
        let pct = (s.confidence * 100.0).round();
        let unit = if a.link.bootstrap_unit == "task" {
            "tasks (each resample draws whole tasks with all their games)"
        } else {
            "games"
        };
        let how_to_read = format!(
            "Each variant's submissions met the other variants' on the same task and repeat, \
             each pair judged twice with the positions swapped; the ratings are one \
             Bradley-Terry fit over all tasks, where {points} points more means {base}:1 odds of \
             winning a game. The intervals are {pct}% bootstrap intervals over {unit}; variants \
             whose intervals overlap share a rank, so only a different rank is a clear \
             difference. W/L/T count games, a strong verdict counting more than one."
        );
        ArenaSection {
            arena_id: s.arena_id.clone(),
            created_at: mixseek_core::time::format_utc(&s.created_at),
            judges: s.judge_models.clone(),
            mock_judges: mock_judged(&s.judge_models),
            tasks: a.link.tasks,
            submissions: a.link.submissions,
            left_out: a.link.left_out,
            pairs: s.pairs,
            games: s.games,
            parsed_games: s.parsed_games,
            disagreeing_pairs: s.disagreeing_pairs,
            regularized: s.regularized,
            bootstrap_unit: a.link.bootstrap_unit.clone(),
            bootstrap_rounds: s.bootstrap_rounds,
            confidence: s.confidence,
            input_tokens: s.input_tokens,
            output_tokens: s.output_tokens,
            cost_usd: s.cost_usd,
            ratings: a.ratings.clone(),
            how_to_read,
        }
    }

    fn cost(&self) -> String {
        self.cost_usd.map_or_else(
            || "unknown (a judge has no price)".into(),
            |c| format!("${c:.4}"),
        )
    }

    fn facts(&self) -> String {
        format!(
            "{} submissions on {} tasks ({} items left out: not finished or without an evaluated round); {} pairs, {} games ({} with a verdict, {} pairs disagreeing once swapped back); judges: {}; {} tokens, cost {}",
            self.submissions,
            self.tasks,
            self.left_out,
            self.pairs,
            self.games,
            self.parsed_games,
            self.disagreeing_pairs,
            self.judges.join(", "),
            self.input_tokens + self.output_tokens,
            self.cost()
        )
    }
}

/// What the report says under an arena judged by the offline `mock:` provider (the words of
/// `mixseek arena`'s note).
pub const MOCK_VERDICTS_NOTE: &str =
    "Note: judged by the offline mock: provider; these verdicts are made up.";

/// Whether one of `judges` is the offline `mock:` provider (the test of `mixseek arena`).
pub fn mock_judged(judges: &[String]) -> bool {
    judges.iter().any(|m| m.starts_with("mock:"))
}

fn wlt(r: &mixseek_store::VariantRatingRow) -> String {
    let n = |v: f64| {
        if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    };
    format!("{}/{}/{}", n(r.wins), n(r.losses), n(r.ties))
}

/// The arena section as text (also what `mixseek experiment arena` prints).
pub fn arena_text(a: &ArenaSection) -> String {
    let pct = (a.confidence * 100.0).round();
    let mut s = format!(
        "Arena of the variants ({}, {})\n",
        a.arena_id.chars().take(8).collect::<String>(),
        a.created_at
    );
    let rows: Vec<Vec<String>> = a
        .ratings
        .iter()
        .map(|r| {
            vec![
                r.rank.to_string(),
                r.variant.clone(),
                format!("{:.0}", r.rating),
                format!("[{:.0}, {:.0}]", r.lower, r.upper),
                wlt(r),
                format!("{:.0}", r.games),
                r.submissions.to_string(),
            ]
        })
        .collect();
    s.push_str(&table(
        &[
            "Rank",
            "Variant",
            "Rating",
            &format!("{pct}% interval"),
            "W/L/T",
            "Games",
            "Submissions",
        ],
        &rows,
    ));
    let _ = writeln!(s, "{}.", a.facts());
    if a.regularized {
        s.push_str("The fit needed its weak prior: a variant won or lost every game.\n");
    }
    let _ = writeln!(s, "{}", a.how_to_read);
    if a.mock_judges {
        let _ = writeln!(s, "{MOCK_VERDICTS_NOTE}");
    }
    s
}

/// The arena section as HTML (escaped).
fn arena_html(a: &ArenaSection) -> String {
    use mixseek_store::report::html::escape;
    let pct = (a.confidence * 100.0).round();
    let mut s = format!(
        "<h2>Arena of the variants</h2>\n<p>{}</p>\n<table><thead><tr><th>Rank</th><th>Variant</th><th>Rating</th><th>{pct}% interval</th><th>W/L/T</th><th>Games</th><th>Submissions</th></tr></thead><tbody>\n",
        escape(&a.how_to_read)
    );
    for r in &a.ratings {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{:.0}</td><td>[{:.0}, {:.0}]</td><td>{}</td><td>{:.0}</td><td>{}</td></tr>",
            r.rank,
            escape(&r.variant),
            r.rating,
            r.lower,
            r.upper,
            wlt(r),
            r.games,
            r.submissions
        );
    }
    let _ = writeln!(
        s,
        "</tbody></table>\n<p>Arena {} of {}: {}.{}</p>",
        escape(&a.arena_id),
        escape(&a.created_at),
        escape(&a.facts()),
        if a.regularized {
            " The fit needed its weak prior: a variant won or lost every game."
        } else {
            ""
        }
    );
    if a.mock_judges {
        let _ = writeln!(
            s,
            "<p class=\"notice\" id=\"arena-mock-note\">{}</p>",
            escape(MOCK_VERDICTS_NOTE)
        );
    }
    s
}

/// The report as a self-contained HTML page.
pub fn html(r: &ExperimentReport) -> String {
    use mixseek_store::report::html::{CSS, escape};
    let pct = (r.confidence * 100.0).round();
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Experiment {}</title><style>{CSS}</style></head><body>\n<h1>Experiment {}</h1>\n<p>{} items, {} finished. Baseline: <b>{}</b>. {pct}% percentile-bootstrap intervals over tasks ({} resamples, seed {}).</p>\n",
        escape(&r.experiment),
        escape(&r.experiment),
        r.items,
        r.finished,
        escape(&r.baseline),
        r.resamples,
        r.seed
    );
    s.push_str("<h2>Variants</h2>\n<table><thead><tr><th>Variant</th><th>Finished</th><th>Tasks</th><th>Score</th><th>CI</th><th>Failed</th><th>Partial</th><th>Cost</th><th>Tokens</th></tr></thead><tbody>\n");
    for v in &r.variants {
        let (est, ci) = match &v.score {
            Some(i) => (
                format!("{:.2}", i.estimate),
                format!("[{:.2}, {:.2}]", i.low, i.high),
            ),
            None => ("—".into(), "—".into()),
        };
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}/{}</td><td>{}</td><td>{est}</td><td>{ci}</td><td>{:.0}%</td><td>{}</td><td>${:.4}</td><td>{}</td></tr>",
            escape(&v.variant),
            v.finished,
            v.items,
            v.tasks_scored,
            v.failure_rate * 100.0,
            v.partial_failures,
            v.cost_usd,
            v.input_tokens + v.output_tokens
        );
    }
    s.push_str("</tbody></table>\n");
    if !r.comparisons.is_empty() {
        let _ = write!(
            s,
            "<h2>Paired against {}</h2>\n<table><thead><tr><th>Variant</th><th>Tasks</th><th>Difference</th><th>CI</th><th>Wins</th><th>Ties</th><th>Losses</th><th>Verdict</th></tr></thead><tbody>\n",
            escape(&r.baseline)
        );
        for c in &r.comparisons {
            let (est, ci) = match &c.difference {
                Some(i) => (
                    format!("{:+.2}", i.estimate),
                    format!("[{:+.2}, {:+.2}]", i.low, i.high),
                ),
                None => ("—".into(), "—".into()),
            };
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{est}</td><td>{ci}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&c.variant),
                c.tasks,
                c.wins,
                c.ties,
                c.losses,
                verdict(c)
            );
        }
        s.push_str("</tbody></table>\n");
    }
    if let Some(a) = &r.arena {
        s.push_str(&arena_html(a));
    }
    if !r.tasks.is_empty() {
        s.push_str(
            "<h2>Per task</h2>\n<p>Mean score over repeats.</p>\n<table><thead><tr><th>Task</th>",
        );
        for v in &r.variants {
            let _ = write!(s, "<th>{}</th>", escape(&v.variant));
        }
        s.push_str("</tr></thead><tbody>\n");
        for t in &r.tasks {
            let _ = write!(s, "<tr><td>{}</td>", escape(&t.task_id));
            for v in &t.scores {
                let _ = write!(s, "<td>{}</td>", num(*v));
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</tbody></table>\n");
    }
    s.push_str("</body></html>\n");
    s
}

/// The report as an HTML fragment to embed in another page (the web UI's): the body of
/// [`html`]'s page, so it has every section that page has, styled by the same
/// `mixseek_store::report::html::CSS` (which the page embedding it must provide).
pub fn html_fragment(r: &ExperimentReport) -> String {
    let page = html(r);
    // Every stored text in the page is escaped, so the first `<body>` and the last `</body>`
    // are the page's own.
    let start = page.find("<body>").map_or(0, |i| i + "<body>".len());
    let end = page
        .rfind("</body>")
        .filter(|&e| e >= start)
        .unwrap_or(page.len());
    page[start..end].trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mixseek_store::ExperimentItem;

    #[test]
    fn the_arena_section_ranks_the_variants_says_how_to_read_and_escapes_names() {
        let rating = |variant: &str, rank: u32, rating: f64| mixseek_store::VariantRatingRow {
            variant: variant.into(),
            rating,
            lower: rating - 40.0,
            upper: rating + 40.0,
            rank,
            wins: 7.0,
            losses: 2.5,
            ties: 1.0,
            games: 10.5,
            submissions: 4,
        };
        let section = ArenaSection {
            arena_id: "0123456789".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            judges: vec!["mock:j".into()],
            mock_judges: mock_judged(&["openai:gpt".into(), "mock:j".into()]),
            tasks: 2,
            submissions: 8,
            left_out: 1,
            pairs: 4,
            games: 8,
            parsed_games: 7,
            disagreeing_pairs: 1,
            regularized: false,
            bootstrap_unit: "task".into(),
            bootstrap_rounds: 100,
            confidence: 0.9,
            input_tokens: 10,
            output_tokens: 5,
            cost_usd: None,
            ratings: vec![rating("<hot>", 1, 1100.0), rating("base", 2, 900.0)],
            how_to_read: "read <this>".into(),
        };
        let shown = arena_text(&section);
        assert!(
            shown.starts_with("Arena of the variants (01234567, "),
            "{shown}"
        );
        assert!(shown.contains("90% interval"), "{shown}");
        assert!(
            shown.contains("1     <hot>    1100    [1060, 1140]  7/2.5/1"),
            "{shown}"
        );
        assert!(shown.contains("(1 items left out"), "{shown}");
        assert!(
            shown.contains("cost unknown (a judge has no price)"),
            "{shown}"
        );
        let mut r = compute("x", &[], "", 0.95, 0, 10, &[]);
        r.arena = Some(section);
        let page = html(&r);
        assert!(page.contains("<h2>Arena of the variants</h2>"), "{page}");
        assert!(
            !page.contains("<hot>") && !page.contains("<this>"),
            "{page}"
        );
        assert!(text(&r).contains("Arena of the variants"));
        // a mock judge's verdicts are made up, and every format says so
        assert!(
            shown.ends_with(&format!("{MOCK_VERDICTS_NOTE}\n")),
            "{shown}"
        );
        assert!(text(&r).contains(MOCK_VERDICTS_NOTE));
        assert!(page.contains("these verdicts are made up.</p>"), "{page}");
        // JSON carries the section only when there is one
        let json = serde_json::to_value(&r).expect("json");
        assert_eq!(json["arena"]["ratings"][0]["variant"], "<hot>");
        assert_eq!(json["arena"]["mock_judges"], true);
        // real judges: no note
        let mut real = r.arena.clone().expect("the section");
        real.judges = vec!["openai:gpt".into()];
        real.mock_judges = mock_judged(&real.judges);
        assert!(!real.mock_judges);
        assert!(!arena_text(&real).contains("made up"));
        r.arena = Some(real);
        assert!(!html(&r).contains("made up") && !text(&r).contains("made up"));
        assert_eq!(
            serde_json::to_value(&r).expect("json")["arena"]["mock_judges"],
            false
        );
        r.arena = None;
        let json = serde_json::to_value(&r).expect("json");
        assert!(json.get("arena").is_none());
    }

    fn item(task: &str, variant: &str, repeat: u32, status: &str, score: Option<f64>) -> ItemState {
        ItemState {
            item: ExperimentItem {
                experiment_id: "x".into(),
                task_id: task.into(),
                variant: variant.into(),
                repeat_index: repeat,
                execution_id: format!("{task}-{variant}-{repeat}"),
                task_metadata: serde_json::json!({}),
            },
            status: Some(status.into()),
            best_score: score,
            input_tokens: 10,
            output_tokens: 5,
            cost_usd: 0.01,
            seconds: Some(1.0),
        }
    }

    #[test]
    fn a_better_variant_wins_every_task_and_its_interval_is_above_zero() {
        let mut items = Vec::new();
        for t in 0..6 {
            let task = format!("t{t}");
            for r in 0..2 {
                let base = 50.0 + t as f64;
                items.push(item(&task, "base", r, "completed", Some(base + r as f64)));
                items.push(item(&task, "hot", r, "completed", Some(base + 10.0)));
            }
        }
        items.push(item("t9", "hot", 0, "failed", None));
        let order = vec!["base".to_string(), "hot".to_string()];
        let r = compute("x", &order, "base", 0.95, 0, 500, &items);
        assert_eq!(r.items, 25);
        let hot = &r.variants[1];
        assert_eq!((hot.items, hot.finished, hot.failed), (13, 13, 1));
        assert_eq!(hot.tasks_scored, 6);
        assert!((hot.failure_rate - 1.0 / 13.0).abs() < 1e-12);
        let base = r.variants[0].score.expect("scored");
        assert!((base.estimate - 53.0).abs() < 1e-9, "{base:?}");
        let c = &r.comparisons[0];
        assert_eq!((c.tasks, c.wins, c.ties, c.losses), (6, 6, 0, 0));
        let d = c.difference.expect("paired");
        assert!((d.estimate - 9.5).abs() < 1e-9 && d.low > 0.0, "{d:?}");
        assert_eq!(verdict(c), "better");
        // The per-task table has every task, a dash where a variant has no score.
        assert_eq!(r.tasks.len(), 7);
        assert_eq!(r.tasks[6].scores, vec![None, None]);
        let text = text(&r);
        assert!(text.contains("Paired against base"), "{text}");
        let html = html(&r);
        assert!(html.contains("<td>better</td>"), "{html}");
        // The same rows give the same report.
        assert_eq!(compute("x", &order, "base", 0.95, 0, 500, &items), r);
    }

    #[test]
    fn tasks_are_listed_in_natural_order_in_every_format() {
        let ids = ["t10", "t2", "t100", "t1", "b", "t01", "a10", "a9"];
        let items: Vec<ItemState> = ids
            .iter()
            .map(|t| item(t, "base", 0, "completed", Some(1.0)))
            .collect();
        let r = compute("x", &["base".to_string()], "base", 0.95, 0, 10, &items);
        let order: Vec<&str> = r.tasks.iter().map(|t| t.task_id.as_str()).collect();
        assert_eq!(order, ["a9", "a10", "b", "t01", "t1", "t2", "t10", "t100"]);
        let at = |page: &str, id: &str| page.find(id).unwrap_or(usize::MAX);
        let shown = text(&r);
        let page = html(&r);
        let json = serde_json::to_value(&r).expect("json");
        assert!(at(&shown, "\nt2 ") < at(&shown, "\nt10 "), "{shown}");
        assert!(at(&shown, "\nt10 ") < at(&shown, "\nt100 "), "{shown}");
        assert!(
            at(&page, "<td>t2</td>") < at(&page, "<td>t10</td>"),
            "{page}"
        );
        assert_eq!(json["tasks"][5]["task_id"], "t2");
        // a total order: only equal ids tie
        assert_eq!(natural_cmp("t1", "t1"), std::cmp::Ordering::Equal);
        assert_eq!(natural_cmp("t01", "t1"), std::cmp::Ordering::Less);
        assert_eq!(natural_cmp("t1", "t1a"), std::cmp::Ordering::Less);
        assert_eq!(natural_cmp("é2", "é10"), std::cmp::Ordering::Less);
        assert_eq!(
            natural_cmp("t99999999999999999999999", "t100000000000000000000000"),
            std::cmp::Ordering::Less
        );
    }

    #[test]
    fn names_are_escaped_in_html() {
        let items = vec![item("<t>", "<script>", 0, "completed", Some(1.0))];
        let r = compute(
            "<x>",
            &["<script>".to_string()],
            "<script>",
            0.9,
            1,
            100,
            &items,
        );
        let html = html(&r);
        assert!(!html.contains("<script>"), "{html}");
    }
}
