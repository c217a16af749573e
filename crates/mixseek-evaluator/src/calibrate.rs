//! `mixseek evaluate --labels FILE.jsonl`: calibrate the evaluator's judges against human
//! scores.
//!
//! The labels file holds one JSON object per line: `{"prompt", "submission", "score"}` (the
//! human's 0–100 overall score), optionally `"id"` (a string or a number; default: the line
//! number) and `"scores": {"MetricName": n}` (per-metric human scores). Blank lines are
//! skipped; a bad line is an input error naming `FILE:LINE` and what is wrong. At least
//! [`MIN_ROWS`] rows are required; under [`RECOMMENDED_ROWS`] a warning says so (MLflow
//! recommends at least 10, and 50–100 for a real calibration).
//!
//! Every row is scored by the evaluator `mixseek evaluate` would use
//! ([`CONCURRENT_ROWS`] rows at a time); a row whose evaluation fails is reported with its error
//! and left out of the statistics. For the overall score and for each metric (against the row's
//! per-metric human score when given, else its overall human score) the report gives n,
//! Spearman's rho, Kendall's tau-b, Pearson's r, the mean absolute error, Krippendorff's alpha
//! (interval; units = rows, raters = judge and human) and Spearman's rho between the judge's
//! score and the submission's length in characters (a known judge bias, flagged at
//! |rho| ≥ [`LENGTH_BIAS_THRESHOLD`]); then the [`TOP_DISAGREEMENTS`] rows where judge and
//! human disagree most on the overall score. An undefined statistic (fewer than 2 rows, no
//! variance) is `None`: "—" in text, `null` in JSON.
//!
//! JSON output ([`render_calibration_json`]):
//!
//! ```text
//! {
//!   "labels": "FILE",
//!   "rows": [{"id", "line", "human", "human_scores": {..}, "submission_chars",
//!             "judge": overall | null, "judge_scores": {metric: score | null}, "error": text | null}],
//!   "overall": STATS,
//!   "metrics": [{"metric", "metric_labels": rows with a per-metric human score, ...STATS}],
//!   "disagreements": [{"id", "line", "human", "judge", "difference", "submission_start"}],
//!   "failures": [{"id", "line", "error"}],
//!   "warnings": [text],
//!   "mock_judges": bool
//! }
//! STATS = {"n", "spearman", "kendall_tau_b", "pearson", "mean_absolute_error",
//!          "krippendorff_alpha", "length_spearman", "length_bias"}   (null when undefined)
//! ```

use crate::evaluator::{EvaluationOutcome, Evaluator};
use crate::report::TABLE_WIDTH;
use crate::request::{EvaluationRequest, STANDALONE_TEAM_ID};
use crate::standalone::{StandaloneError, from_evaluator, input, load_evaluator_for};
use comfy_table::{CellAlignment, ContentArrangement, Table};
use mixseek_judging::agreement::krippendorff_alpha_interval;
use mixseek_judging::correlation::{kendall_tau_b, mean_absolute_error, pearson, spearman};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Fewest labelled rows accepted.
pub const MIN_ROWS: usize = 2;
/// Fewer rows than this print a warning (MLflow's minimum recommendation).
pub const RECOMMENDED_ROWS: usize = 10;
/// Rows evaluated at once.
pub const CONCURRENT_ROWS: usize = 4;
/// |Spearman(score, length)| from which a length bias is flagged.
pub const LENGTH_BIAS_THRESHOLD: f64 = 0.5;
/// How many of the most disagreeing rows are listed.
pub const TOP_DISAGREEMENTS: usize = 5;
/// Characters of the submission shown for a disagreeing row.
const EXCERPT_CHARS: usize = 60;

/// What to calibrate and where the settings are.
#[derive(Debug, Clone)]
pub struct CalibrationArgs {
    /// The workspace (for `configs/evaluator.toml` and `configs/prompt_builder.toml`).
    pub workspace: PathBuf,
    /// An explicit evaluator file (already resolved); it must exist.
    pub config: Option<PathBuf>,
    /// The labels file (JSON Lines).
    pub labels: PathBuf,
}

/// One labelled row of the labels file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelRow {
    /// The row's `id`, else its line number.
    pub id: String,
    /// 1-based line number in the file.
    pub line: usize,
    /// The user prompt.
    pub prompt: String,
    /// The submission to score.
    pub submission: String,
    /// The human's overall score (0–100).
    pub score: f64,
    /// Per-metric human scores (0–100), by metric name as written.
    pub scores: BTreeMap<String, f64>,
}

/// The judge's scores of one row.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeScores {
    /// The overall score.
    pub overall: f64,
    /// Every metric in configuration order; `None` when it failed and was skipped.
    pub metrics: Vec<(String, Option<f64>)>,
}

impl JudgeScores {
    /// The scores of an evaluation outcome.
    pub fn of(outcome: &EvaluationOutcome) -> Self {
        JudgeScores {
            overall: outcome.score_details.overall_score,
            metrics: outcome
                .metrics
                .iter()
                .map(|m| (m.metric_name.clone(), m.score))
                .collect(),
        }
    }
}

/// One row with its result.
#[derive(Debug, Clone, PartialEq)]
pub struct RowResult {
    /// The label.
    pub label: LabelRow,
    /// The judge's scores, or why the evaluation failed.
    pub judge: Result<JudgeScores, String>,
}

/// Agreement statistics of a judge with the human labels; `None`: undefined.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct AgreementStats {
    /// Rows counted.
    pub n: usize,
    /// Spearman's rho.
    pub spearman: Option<f64>,
    /// Kendall's tau-b.
    pub kendall_tau_b: Option<f64>,
    /// Pearson's r.
    pub pearson: Option<f64>,
    /// Mean absolute error, in score points.
    pub mean_absolute_error: Option<f64>,
    /// Krippendorff's alpha (interval), units = rows, raters = judge and human.
    pub krippendorff_alpha: Option<f64>,
    /// Spearman's rho between the judge's score and the submission's length.
    pub length_spearman: Option<f64>,
    /// Whether |length_spearman| ≥ [`LENGTH_BIAS_THRESHOLD`].
    pub length_bias: bool,
}

impl AgreementStats {
    /// The statistics of paired `judge` / `human` scores, with `lengths` the submissions'
    /// character counts (all three slices the same length).
    pub fn compute(judge: &[f64], human: &[f64], lengths: &[f64]) -> Self {
        let units: Vec<Vec<f64>> = judge.iter().zip(human).map(|(j, h)| vec![*j, *h]).collect();
        let length_spearman = spearman(judge, lengths);
        AgreementStats {
            n: judge.len(),
            spearman: spearman(judge, human),
            kendall_tau_b: kendall_tau_b(judge, human),
            pearson: pearson(judge, human),
            mean_absolute_error: mean_absolute_error(judge, human),
            krippendorff_alpha: krippendorff_alpha_interval(&units),
            length_spearman,
            length_bias: length_spearman.is_some_and(|r| r.abs() >= LENGTH_BIAS_THRESHOLD),
        }
    }
}

/// The calibration of one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricCalibration {
    /// The metric's reported name.
    pub metric: String,
    /// Rows compared against a per-metric human score (the others: the overall score).
    pub metric_labels: usize,
    /// The statistics.
    #[serde(flatten)]
    pub stats: AgreementStats,
}

/// A row where judge and human disagree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Disagreement {
    /// The row's id.
    pub id: String,
    /// Its line in the labels file.
    pub line: usize,
    /// The human's overall score.
    pub human: f64,
    /// The judge's overall score.
    pub judge: f64,
    /// judge − human.
    pub difference: f64,
    /// The start of the submission.
    pub submission_start: String,
}

/// A row whose evaluation failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowFailure {
    /// The row's id.
    pub id: String,
    /// Its line in the labels file.
    pub line: usize,
    /// Why.
    pub error: String,
}

/// A finished calibration.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The labels file.
    pub labels: PathBuf,
    /// Every row in file order.
    pub rows: Vec<RowResult>,
    /// The overall score against the human score.
    pub overall: AgreementStats,
    /// Each metric, in configuration order.
    pub metrics: Vec<MetricCalibration>,
    /// The most disagreeing rows on the overall score, worst first.
    pub disagreements: Vec<Disagreement>,
    /// Rows whose evaluation failed.
    pub failures: Vec<RowFailure>,
    /// Warnings (few rows, per-metric labels matching no metric).
    pub warnings: Vec<String>,
    /// True when a judge was the offline `mock:` provider (the scores are made up).
    pub mock_judges: bool,
}

fn bad_line(path: &Path, line: usize, what: impl std::fmt::Display) -> StandaloneError {
    input(
        format!("{}:{line}: {what}", path.display()),
        Some(
            "each line must be a JSON object {\"prompt\": \"...\", \"submission\": \"...\", \"score\": 0-100}, optionally with \"id\" and \"scores\": {\"Metric\": 0-100}",
        ),
    )
}

fn human_score(v: &Value) -> Result<f64, String> {
    match v.as_f64() {
        Some(x) if x.is_finite() && (0.0..=100.0).contains(&x) => Ok(x),
        Some(x) => Err(format!("must be within 0..=100, got {x}")),
        None => Err(format!("must be a number within 0..=100, got {v}")),
    }
}

/// Parses the text of a labels file (`path` only names it in messages).
pub fn parse_labels(path: &Path, text: &str) -> Result<Vec<LabelRow>, StandaloneError> {
    let mut rows: Vec<LabelRow> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let raw = raw.trim();
        if raw.is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(raw)
            .map_err(|e| bad_line(path, line, format!("not valid JSON: {e}")))?;
        let Value::Object(obj) = value else {
            return Err(bad_line(path, line, "not a JSON object"));
        };
        let text_field = |key: &str| -> Result<String, StandaloneError> {
            match obj.get(key) {
                None => Err(bad_line(path, line, format!("missing key \"{key}\""))),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(other) => Err(bad_line(
                    path,
                    line,
                    format!("\"{key}\" must be a string, got {other}"),
                )),
            }
        };
        let prompt = text_field("prompt")?;
        let submission = text_field("submission")?;
        let score = match obj.get("score") {
            None => return Err(bad_line(path, line, "missing key \"score\"")),
            Some(v) => {
                human_score(v).map_err(|e| bad_line(path, line, format!("\"score\" {e}")))?
            }
        };
        let id = match obj.get("id") {
            None | Some(Value::Null) => line.to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(other) => {
                return Err(bad_line(
                    path,
                    line,
                    format!("\"id\" must be a string or a number, got {other}"),
                ));
            }
        };
        if let Some(first) = rows.iter().find(|r| r.id == id) {
            return Err(bad_line(
                path,
                line,
                format!("duplicate id \"{id}\" (first on line {})", first.line),
            ));
        }
        let mut scores = BTreeMap::new();
        match obj.get("scores") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (name, v) in m {
                    let s = human_score(v)
                        .map_err(|e| bad_line(path, line, format!("\"scores\".\"{name}\" {e}")))?;
                    scores.insert(name.clone(), s);
                }
            }
            Some(other) => {
                return Err(bad_line(
                    path,
                    line,
                    format!("\"scores\" must be an object {{\"Metric\": 0-100}}, got {other}"),
                ));
            }
        }
        rows.push(LabelRow {
            id,
            line,
            prompt,
            submission,
            score,
            scores,
        });
    }
    if rows.len() < MIN_ROWS {
        return Err(input(
            format!(
                "{}: {} labelled row(s); calibration needs at least {MIN_ROWS}",
                path.display(),
                rows.len()
            ),
            Some(
                "MLflow recommends at least 10 labelled examples, and 50–100 for a real calibration",
            ),
        ));
    }
    Ok(rows)
}

/// Reads and parses a labels file.
pub fn load_labels(path: &Path) -> Result<Vec<LabelRow>, StandaloneError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        input(
            format!("cannot read the labels file {}: {e}", path.display()),
            Some("give a JSON Lines file with --labels FILE"),
        )
    })?;
    parse_labels(path, &text)
}

/// The human score of `row` for `metric`: its per-metric score (exact name, else
/// case-insensitive) or its overall score; `true` when per-metric.
fn human_for(row: &LabelRow, metric: &str) -> (f64, bool) {
    if let Some(s) = row.scores.get(metric) {
        return (*s, true);
    }
    match row
        .scores
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(metric))
    {
        Some((_, s)) => (*s, true),
        None => (row.score, false),
    }
}

fn chars(s: &str) -> f64 {
    s.chars().count() as f64
}

fn excerpt(s: &str) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= EXCERPT_CHARS {
        flat
    } else {
        format!(
            "{}…",
            flat.chars().take(EXCERPT_CHARS - 1).collect::<String>()
        )
    }
}

/// Assembles the statistics of scored rows (pure: no evaluation).
pub fn assemble(
    labels: PathBuf,
    rows: Vec<RowResult>,
    mock_judges: bool,
    mut warnings: Vec<String>,
) -> Calibration {
    let scored: Vec<(&LabelRow, &JudgeScores)> = rows
        .iter()
        .filter_map(|r| r.judge.as_ref().ok().map(|j| (&r.label, j)))
        .collect();
    let overall = {
        let judge: Vec<f64> = scored.iter().map(|(_, j)| j.overall).collect();
        let human: Vec<f64> = scored.iter().map(|(l, _)| l.score).collect();
        let lengths: Vec<f64> = scored.iter().map(|(l, _)| chars(&l.submission)).collect();
        AgreementStats::compute(&judge, &human, &lengths)
    };
    // Metric names in configuration order, as the outcomes report them.
    let mut names: Vec<String> = Vec::new();
    for (_, j) in &scored {
        for (name, _) in &j.metrics {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    let metrics: Vec<MetricCalibration> = names
        .iter()
        .map(|name| {
            let (mut judge, mut human, mut lengths, mut metric_labels) =
                (Vec::new(), Vec::new(), Vec::new(), 0);
            for (l, j) in &scored {
                let Some(Some(score)) = j.metrics.iter().find(|(n, _)| n == name).map(|(_, s)| *s)
                else {
                    continue;
                };
                let (h, per_metric) = human_for(l, name);
                judge.push(score);
                human.push(h);
                lengths.push(chars(&l.submission));
                metric_labels += usize::from(per_metric);
            }
            MetricCalibration {
                metric: name.clone(),
                metric_labels,
                stats: AgreementStats::compute(&judge, &human, &lengths),
            }
        })
        .collect();
    if !names.is_empty() {
        let mut unknown: Vec<&str> = rows
            .iter()
            .flat_map(|r| r.label.scores.keys())
            .filter(|k| !names.iter().any(|n| n.eq_ignore_ascii_case(k)))
            .map(String::as_str)
            .collect();
        unknown.sort_unstable();
        unknown.dedup();
        if !unknown.is_empty() {
            warnings.push(format!(
                "per-metric human scores for metrics the evaluator does not have were ignored: {} (metrics: {})",
                unknown.join(", "),
                names.join(", ")
            ));
        }
    }
    let mut disagreements: Vec<Disagreement> = scored
        .iter()
        .map(|(l, j)| Disagreement {
            id: l.id.clone(),
            line: l.line,
            human: l.score,
            judge: j.overall,
            difference: j.overall - l.score,
            submission_start: excerpt(&l.submission),
        })
        .collect();
    // Stable: equal differences keep the file order.
    disagreements.sort_by(|a, b| b.difference.abs().total_cmp(&a.difference.abs()));
    disagreements.truncate(TOP_DISAGREEMENTS);
    let failures = rows
        .iter()
        .filter_map(|r| {
            r.judge.as_ref().err().map(|e| RowFailure {
                id: r.label.id.clone(),
                line: r.label.line,
                error: e.clone(),
            })
        })
        .collect();
    Calibration {
        labels,
        rows,
        overall,
        metrics,
        disagreements,
        failures,
        warnings,
        mock_judges,
    }
}

async fn score_row(evaluator: &Evaluator, label: &LabelRow) -> Result<JudgeScores, String> {
    let request = EvaluationRequest {
        team_id: Some(STANDALONE_TEAM_ID.into()),
        ..EvaluationRequest::new(label.prompt.clone(), label.submission.clone())
    };
    match evaluator.evaluate(&request).await {
        Ok(outcome) => Ok(JudgeScores::of(&outcome)),
        Err(e) => Err(from_evaluator(e).to_string()),
    }
}

/// Loads the labels and the evaluator, scores every row ([`CONCURRENT_ROWS`] at a time, file
/// order kept) and assembles the statistics. Bad labels or configuration: an input error;
/// rows that fail are reported in [`Calibration::failures`]; no row scored at all: a failure.
pub async fn run_calibration(args: CalibrationArgs) -> Result<Calibration, StandaloneError> {
    let labels = load_labels(&args.labels)?;
    let mut warnings = Vec::new();
    if labels.len() < RECOMMENDED_ROWS {
        let w = format!(
            "only {} labelled rows: MLflow recommends at least {RECOMMENDED_ROWS}, and 50–100 for a real calibration; treat these statistics as rough",
            labels.len()
        );
        tracing::warn!("{w}");
        warnings.push(w);
    }
    let (evaluator, mock_judges) = load_evaluator_for(&args.workspace, args.config.as_deref())?;
    let evaluator = Arc::new(evaluator);
    let limit = Arc::new(tokio::sync::Semaphore::new(CONCURRENT_ROWS));
    let handles: Vec<_> = labels
        .iter()
        .map(|label| {
            let (evaluator, limit, label) = (evaluator.clone(), limit.clone(), label.clone());
            tokio::spawn(async move {
                let _permit = limit
                    .acquire_owned()
                    .await
                    .map_err(|e| format!("internal error: {e}"))?;
                score_row(&evaluator, &label).await
            })
        })
        .collect();
    let mut rows = Vec::with_capacity(labels.len());
    for (label, handle) in labels.into_iter().zip(handles) {
        let judge = match handle.await {
            Ok(r) => r,
            Err(e) => Err(format!("the evaluation of this row stopped: {e}")),
        };
        if let Err(e) = &judge {
            tracing::warn!(id = %label.id, line = label.line, "row not scored: {e}");
        }
        rows.push(RowResult { label, judge });
    }
    if rows.iter().all(|r| r.judge.is_err()) {
        let first = rows
            .iter()
            .find_map(|r| r.judge.as_ref().err().cloned())
            .unwrap_or_default();
        return Err(StandaloneError::Failed {
            message: format!("no labelled row could be scored; the first error: {first}"),
            hint: None,
        });
    }
    Ok(assemble(args.labels, rows, mock_judges, warnings))
}

fn fmt_coef(v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_string(), |x| format!("{x:.3}"))
}

fn fmt_points(v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_string(), |x| format!("{x:.2}"))
}

fn new_table(header: Vec<&str>) -> Table {
    let mut table = Table::new();
    table
        .load_style(crate::report::STYLE)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(TABLE_WIDTH)
        .set_header(header);
    table
}

/// The text output: the agreement table (overall, then each metric), length-bias flags, the
/// most disagreeing rows, the failed rows and any warnings.
pub fn render_calibration_text(c: &Calibration) -> String {
    let scored = c.rows.len() - c.failures.len();
    let mut out = format!(
        "Calibration against {} labelled rows from {} ({} scored, {} failed)\n\nAgreement with human labels\n",
        c.rows.len(),
        c.labels.display(),
        scored,
        c.failures.len()
    );
    let mut table = new_table(vec![
        "Score",
        "Human label",
        "n",
        "Spearman",
        "Kendall τb",
        "Pearson",
        "MAE",
        "α (interval)",
        "Length ρ",
    ]);
    let row = |name: String, human: String, s: &AgreementStats| {
        vec![
            name,
            human,
            s.n.to_string(),
            fmt_coef(s.spearman),
            fmt_coef(s.kendall_tau_b),
            fmt_coef(s.pearson),
            fmt_points(s.mean_absolute_error),
            fmt_coef(s.krippendorff_alpha),
            match s.length_bias {
                true => format!("{} ⚠", fmt_coef(s.length_spearman)),
                false => fmt_coef(s.length_spearman),
            },
        ]
    };
    table.add_row(row("Overall".into(), "score".into(), &c.overall));
    for m in &c.metrics {
        let human = match m.metric_labels {
            0 => "score".to_string(),
            k if k == m.stats.n => "per metric".to_string(),
            k => format!("per metric ({k}/{})", m.stats.n),
        };
        table.add_row(row(m.metric.clone(), human, &m.stats));
    }
    for i in 2..=8 {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    out.push_str(&table.to_string());
    out.push('\n');
    let biased: Vec<String> = std::iter::once(("Overall", &c.overall))
        .chain(c.metrics.iter().map(|m| (m.metric.as_str(), &m.stats)))
        .filter(|(_, s)| s.length_bias)
        .map(|(n, s)| format!("{n} (ρ = {})", fmt_coef(s.length_spearman)))
        .collect();
    if !biased.is_empty() {
        out.push_str(&format!(
            "\n⚠ Length bias: the judge's score follows the answer's length (|ρ| ≥ {LENGTH_BIAS_THRESHOLD}): {}\n",
            biased.join(", ")
        ));
    }
    out.push_str("\nα: Krippendorff's alpha (interval) with judge and human as the two raters; MAE in score points.\n");
    let undefined = std::iter::once(&c.overall)
        .chain(c.metrics.iter().map(|m| &m.stats))
        .any(|s| {
            [
                s.spearman,
                s.kendall_tau_b,
                s.pearson,
                s.mean_absolute_error,
                s.krippendorff_alpha,
                s.length_spearman,
            ]
            .iter()
            .any(Option::is_none)
        });
    if undefined {
        out.push_str("\"—\": undefined (fewer than 2 rows, or a score that does not vary).\n");
    }
    if !c.disagreements.is_empty() {
        out.push_str("\nMost disagreeing rows\n");
        let mut t = new_table(vec!["ID", "Human", "Judge", "Judge − human", "Submission"]);
        for d in &c.disagreements {
            t.add_row(vec![
                d.id.clone(),
                format!("{:.2}", d.human),
                format!("{:.2}", d.judge),
                format!("{:+.2}", d.difference),
                d.submission_start.clone(),
            ]);
        }
        for i in 1..=3 {
            if let Some(col) = t.column_mut(i) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
        out.push_str(&t.to_string());
        out.push('\n');
    }
    if !c.failures.is_empty() {
        out.push_str(&format!(
            "\nFailed rows ({}, left out of the statistics)\n",
            c.failures.len()
        ));
        for f in &c.failures {
            out.push_str(&format!("  {} (line {}): {}\n", f.id, f.line, f.error));
        }
    }
    for w in &c.warnings {
        out.push_str(&format!("\nWarning: {w}\n"));
    }
    if c.mock_judges {
        out.push_str("\nNote: scored by the offline mock: provider; these scores are made up.\n");
    }
    out
}

/// The JSON output (shape in the module documentation).
pub fn render_calibration_json(c: &Calibration) -> Value {
    let rows: Vec<Value> = c
        .rows
        .iter()
        .map(|r| {
            let (judge, judge_scores, error) = match &r.judge {
                Ok(j) => {
                    let scores: Map<String, Value> = j
                        .metrics
                        .iter()
                        .map(|(n, s)| (n.clone(), json!(s)))
                        .collect();
                    (json!(j.overall), Value::Object(scores), Value::Null)
                }
                Err(e) => (Value::Null, Value::Null, json!(e)),
            };
            json!({
                "id": r.label.id,
                "line": r.label.line,
                "human": r.label.score,
                "human_scores": r.label.scores,
                "submission_chars": r.label.submission.chars().count(),
                "judge": judge,
                "judge_scores": judge_scores,
                "error": error,
            })
        })
        .collect();
    json!({
        "labels": c.labels.display().to_string(),
        "rows": rows,
        "overall": c.overall,
        "metrics": c.metrics,
        "disagreements": c.disagreements,
        "failures": c.failures,
        "warnings": c.warnings,
        "mock_judges": c.mock_judges,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path() -> PathBuf {
        PathBuf::from("labels.jsonl")
    }

    fn message(e: StandaloneError) -> String {
        e.to_string()
    }

    #[test]
    fn calibration_parses_a_good_file_skipping_blank_lines() {
        let text = "{\"prompt\": \"p1\", \"submission\": \"s1\", \"score\": 80}\n\n   \n\
            {\"id\": \"b\", \"prompt\": \"p2\", \"submission\": \"s2\", \"score\": 12.5, \"scores\": {\"Coverage\": 40}}\n\
            {\"id\": 7, \"prompt\": \"日本語\", \"submission\": \"答え\", \"score\": 0}\n";
        let rows = parse_labels(&path(), text).expect("parses");
        assert_eq!(rows.len(), 3);
        assert_eq!((rows[0].id.as_str(), rows[0].line), ("1", 1));
        assert_eq!((rows[1].id.as_str(), rows[1].line), ("b", 4));
        assert_eq!(rows[1].score, 12.5);
        assert_eq!(rows[1].scores.get("Coverage"), Some(&40.0));
        assert_eq!(
            (rows[2].id.as_str(), rows[2].prompt.as_str()),
            ("7", "日本語")
        );
    }

    #[test]
    fn calibration_names_the_file_and_line_of_each_bad_line() {
        let good = "{\"prompt\": \"p\", \"submission\": \"s\", \"score\": 50}";
        let cases: &[(&str, &str)] = &[
            ("{not json", "not valid JSON"),
            ("[1, 2]", "not a JSON object"),
            (
                "{\"submission\": \"s\", \"score\": 1}",
                "missing key \"prompt\"",
            ),
            (
                "{\"prompt\": \"p\", \"score\": 1}",
                "missing key \"submission\"",
            ),
            (
                "{\"prompt\": \"p\", \"submission\": \"s\"}",
                "missing key \"score\"",
            ),
            (
                "{\"prompt\": 3, \"submission\": \"s\", \"score\": 1}",
                "\"prompt\" must be a string",
            ),
            (
                "{\"prompt\": \"p\", \"submission\": \"s\", \"score\": \"80\"}",
                "\"score\" must be a number",
            ),
            (
                "{\"prompt\": \"p\", \"submission\": \"s\", \"score\": 100.5}",
                "within 0..=100",
            ),
            (
                "{\"prompt\": \"p\", \"submission\": \"s\", \"score\": -1}",
                "within 0..=100",
            ),
            (
                "{\"prompt\": \"p\", \"submission\": \"s\", \"score\": 1e999}",
                "not valid JSON",
            ),
            (
                "{\"prompt\": \"p\", \"submission\": \"s\", \"score\": 5, \"scores\": {\"Coverage\": 101}}",
                "\"scores\".\"Coverage\"",
            ),
            (
                "{\"prompt\": \"p\", \"submission\": \"s\", \"score\": 5, \"scores\": [1]}",
                "\"scores\" must be an object",
            ),
            (
                "{\"prompt\": \"p\", \"submission\": \"s\", \"score\": 5, \"id\": [1]}",
                "\"id\" must be a string or a number",
            ),
            (
                "{\"prompt\": \"p\", \"submission\": \"s\", \"score\": 5, \"id\": \"1\"}",
                "duplicate id \"1\"",
            ),
        ];
        for (bad, what) in cases {
            let text = format!("{good}\n\n{bad}\n{good}\n");
            let msg = message(parse_labels(&path(), &text).expect_err(bad));
            assert!(msg.starts_with("labels.jsonl:3: "), "{bad}: {msg}");
            assert!(msg.contains(what), "{bad}: {msg}");
        }
    }

    #[test]
    fn calibration_needs_two_rows_and_a_readable_file() {
        let one = "{\"prompt\": \"p\", \"submission\": \"s\", \"score\": 50}\n";
        let msg = message(parse_labels(&path(), one).expect_err("one row"));
        assert!(msg.contains("at least 2"), "{msg}");
        let msg = message(parse_labels(&path(), "").expect_err("empty"));
        assert!(msg.contains("0 labelled row(s)"), "{msg}");
        let err = load_labels(Path::new("/nonexistent/labels.jsonl")).expect_err("missing");
        assert!(matches!(err, StandaloneError::Input { .. }));
        assert!(message(err).contains("/nonexistent/labels.jsonl"));
    }

    fn label(id: &str, score: f64, submission: &str, scores: &[(&str, f64)]) -> LabelRow {
        LabelRow {
            id: id.into(),
            line: id.parse().unwrap_or(0),
            prompt: "p".into(),
            submission: submission.into(),
            score,
            scores: scores.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    fn scored(overall: f64, metrics: &[(&str, Option<f64>)]) -> Result<JudgeScores, String> {
        Ok(JudgeScores {
            overall,
            metrics: metrics.iter().map(|(n, s)| (n.to_string(), *s)).collect(),
        })
    }

    #[test]
    fn calibration_assembles_statistics_on_fixed_numbers() {
        // Judge agrees in order with the human, and grows with length.
        let rows = vec![
            RowResult {
                label: label("1", 10.0, "a", &[("Coverage", 20.0)]),
                judge: scored(20.0, &[("Coverage", Some(20.0)), ("Relevance", Some(50.0))]),
            },
            RowResult {
                label: label("2", 50.0, "aaaa", &[]),
                judge: scored(50.0, &[("Coverage", Some(40.0)), ("Relevance", Some(50.0))]),
            },
            RowResult {
                label: label("3", 90.0, "aaaaaaaa", &[("coverage", 90.0), ("Nope", 1.0)]),
                judge: scored(80.0, &[("Coverage", Some(90.0)), ("Relevance", None)]),
            },
            RowResult {
                label: label("4", 30.0, "x", &[]),
                judge: Err("boom".into()),
            },
        ];
        let c = assemble(path(), rows, false, vec![]);
        assert_eq!(c.overall.n, 3);
        assert!((c.overall.spearman.expect("rho") - 1.0).abs() < 1e-12);
        assert!((c.overall.kendall_tau_b.expect("tau") - 1.0).abs() < 1e-12);
        let r = c.overall.pearson.expect("r");
        assert!(r > 0.99 && r <= 1.0, "{r}");
        // |20−10| + |50−50| + |80−90| = 20 over 3 rows.
        assert!((c.overall.mean_absolute_error.expect("mae") - 20.0 / 3.0).abs() < 1e-12);
        let alpha = c.overall.krippendorff_alpha.expect("alpha");
        assert!(alpha > 0.8 && alpha <= 1.0, "{alpha}");
        assert!((c.overall.length_spearman.expect("length rho") - 1.0).abs() < 1e-12);
        assert!(c.overall.length_bias);

        assert_eq!(c.metrics.len(), 2);
        let cov = &c.metrics[0];
        assert_eq!(
            (cov.metric.as_str(), cov.stats.n, cov.metric_labels),
            ("Coverage", 3, 2)
        );
        // Human per metric: 20 (label), 50 (overall), 90 (case-insensitive label).
        assert_eq!(cov.stats.mean_absolute_error, Some(10.0 / 3.0));
        let rel = &c.metrics[1];
        assert_eq!((rel.stats.n, rel.metric_labels), (2, 0));
        // The judge gave 50 twice: no variance, so the coefficients are undefined.
        assert_eq!(rel.stats.spearman, None);
        assert_eq!(rel.stats.pearson, None);
        assert_eq!(rel.stats.length_spearman, None);
        assert!(!rel.stats.length_bias);
        assert_eq!(rel.stats.mean_absolute_error, Some(20.0));

        assert_eq!(c.failures.len(), 1);
        assert_eq!(
            (c.failures[0].id.as_str(), c.failures[0].error.as_str()),
            ("4", "boom")
        );
        let order: Vec<&str> = c.disagreements.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(order, ["1", "3", "2"]);
        assert_eq!(c.disagreements[1].difference, -10.0);
        assert!(c.warnings.iter().any(|w| w.contains("Nope")));

        let text = render_calibration_text(&c);
        for heading in [
            "Agreement with human labels",
            "Most disagreeing rows",
            "Failed rows",
            "Length bias",
            "—",
        ] {
            assert!(text.contains(heading), "{heading}\n{text}");
        }
        let v = render_calibration_json(&c);
        assert_eq!(v["overall"]["n"], 3);
        assert_eq!(v["metrics"][1]["spearman"], Value::Null);
        assert_eq!(v["metrics"][0]["metric"], "Coverage");
        assert_eq!(v["rows"].as_array().map(Vec::len), Some(4));
        assert_eq!(v["rows"][3]["error"], "boom");
        assert_eq!(v["rows"][2]["judge_scores"]["Relevance"], Value::Null);
        assert_eq!(v["disagreements"][0]["id"], "1");
        assert_eq!(v["failures"][0]["line"], 4);
    }

    #[test]
    fn calibration_excerpt_is_short_and_flat() {
        assert_eq!(excerpt("a\n b"), "a b");
        let long = "x".repeat(200);
        assert_eq!(excerpt(&long).chars().count(), EXCERPT_CHARS);
    }
}
