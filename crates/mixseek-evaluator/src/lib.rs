//! mixseek-evaluator owns scoring a submission: weighted metrics — the original's built-in
//! LLM judges (`ClarityCoherence`, `Coverage`, `Relevance`, `LLMPlain`, instructions verbatim,
//! snake_case aliases accepted), custom LLM judges (any name with its own
//! `system_instruction`) and command metrics (`type = "command"`: any program, JSON on stdin
//! and stdout) — run concurrently and aggregated into the original's `score_details`; judge
//! samples and juries; the `on_metric_error` policy; and the logic and output formats of
//! `mixseek evaluate`.
//!
//! # Use (round controller, orchestrator)
//!
//! ```no_run
//! # async fn demo(settings: mixseek_config::EvaluatorSettings,
//! #               registry: std::sync::Arc<mixseek_llm::ModelRegistry>,
//! #               prompts: std::sync::Arc<mixseek_prompt::PromptBuilder>)
//! #               -> Result<(), mixseek_evaluator::EvaluatorError> {
//! use mixseek_evaluator::{EvaluationRequest, Evaluator};
//! // Checks names, weights (the original's rules and messages), models, parameters.
//! let evaluator = Evaluator::new(settings, registry, prompts)?
//!     .with_working_dir("/path/to/configs"); // where command metrics run
//! let outcome = evaluator
//!     .evaluate(&EvaluationRequest {
//!         user_prompt: "the task".into(),
//!         submission: "the leader's answer".into(),
//!         execution_id: Some("exec-1".into()),
//!         team_id: Some("team1".into()),
//!         team_name: Some("Alpha".into()),
//!         round_number: Some(1),
//!         domain_context: None,
//!         language: None,
//!         ..Default::default()
//!     })
//!     .await?;
//! let score = outcome.score_details.overall_score; // Σ weight × score, rounded like Python
//! # let _ = (score, outcome.usage, outcome.failures); Ok(()) }
//! ```
//!
//! * [`Evaluator::new`]`(EvaluatorSettings, Arc<ModelRegistry>, Arc<PromptBuilder>) ->
//!   Result<Evaluator, EvaluatorError>` — all configuration errors surface here:
//!   `List should have at least 1 item after validation, not 0`; the mixed-weights message
//!   `すべてのメトリクスの重みを指定するか、…`; `Metric weights must sum to 1.0, got: …`;
//!   `Duplicate metric names found: …`; `Metric class not found: '…'. Available metrics: …`;
//!   `Invalid model format: '…'. …`; an unusable judge model ([`EvaluatorError::Model`]).
//! * [`Evaluator::evaluate`]`(&EvaluationRequest) -> Result<EvaluationOutcome,
//!   EvaluatorError>`: [`EvaluationOutcome`] has `score_details: ScoreDetails` (configuration
//!   order; each [`MetricScore`](mixseek_core::MetricScore) keeps `metric_name`, `score` (2
//!   decimals), `evaluator_comment`, then our extras: `aggregate`, `samples`, `judges`,
//!   `agreement` for samples and juries, `answers` (every raw judge answer, with the answers
//!   rejected before it, and `answered_by` when a fallback model answered) for LLM metrics,
//!   `weight` (the weight used), `configured_weight` (after a skip), `usage`, `duration_ms`;
//!   a skipped metric stays in place with `"status": "failed"`, weight 0 and its `error`),
//!   `usage: Usage`, `failures: Vec<MetricFailure>` (skipped metrics) and
//!   `metrics: Vec<MetricReport>`. The submission-history prompt of later rounds prints the
//!   original's shape only (`mixseek_prompt::original_score_details`), so these
//!   additions never change its bytes.
//! * The user prompt of every judge is the prompt builder's `evaluator_user_prompt` with the
//!   evaluator-phase user injections; the request's `attachments`
//!   ([`EvaluationRequest::with_attachments`]) are its `attachments` (the default template
//!   shows them after `<user_task>`). Its system prompt is the metric's instruction with the
//!   evaluator-phase system injections (domain context, language, suffix). The answer is
//!   structured (`BaseLLMEvaluation {score, evaluator_comment}`), validated and repaired up to
//!   `max_retries` times by the LLM layer; a score outside 0..=100 is repaired, never
//!   clamped. Calls are tagged `Role::Evaluator` with the sample index as `repeat`.
//! * Concurrency: every metric at once (`max_concurrent_metrics` bounds it), and every
//!   (judge, sample) call of a metric at once. `on_metric_error = "fail"` (default): the
//!   first failure cancels the rest and is returned as [`EvaluatorError::Metric`] (text as
//!   the original's: `Failed to evaluate after retries: … | Provider: … | Metric: … | Retries:
//!   …`, with the repairs actually made rather than `max_retries`). `"skip"`: the failure is
//!   recorded (in `failures` and in `score_details`) and the weights of the metrics that
//!   succeeded are renormalised; nothing left ⇒ [`EvaluatorError::AllMetricsFailed`].
//! * Judge models: `fallback_models` (the evaluator's for metrics on the default model, or a
//!   metric's own) are tried in order when a call fails (`ModelRegistry::model_with_fallbacks`).
//! * Command metrics run in their own process group, killed as a whole on a timeout; their
//!   stdout is read up to [`MAX_STDOUT`]. Scores are finite (a `NaN`, an infinity or
//!   a number too large for a double is bad output) and within `min_score..=max_score` when
//!   the metric declares them; a judge's score is within 0..=100. Nothing is clamped: a bad
//!   score is a metric failure carrying the raw output, and the overall score is always
//!   finite ([`EvaluatorError::NonFiniteOverall`] otherwise).
//! * Overall score: `round2(Σ weight × round2(score))` ([`mixseek_core::round2`], Python's
//!   `round(x, 2)`).
//! * `mixseek evaluate`: [`run_standalone`], then [`render_text`] / [`render_json`].
//! * `mixseek evaluate --labels FILE.jsonl` (judge calibration against human scores):
//!   [`run_calibration`], then [`render_calibration_text`] / [`render_calibration_json`]
//!   (Spearman, Kendall tau-b, Pearson, MAE, Krippendorff's alpha and the length bias per
//!   metric, from mixseek-judging; the most disagreeing rows).

#![warn(missing_docs, unreachable_pub)]

mod aggregate;
mod builtin;
mod calibrate;
mod combine;
mod command;
mod error;
mod evaluator;
mod judge;
mod plan;
mod report;
mod request;
mod standalone;
mod weights;

// One namespace stays public: the configuration checks the CLI adds to preflight and
// `config validate` (`checks::metric_names`, `checks::check_loaded`).
pub mod checks;

pub use builtin::{EVALUATOR_GUARD, builtin_instruction};
pub use calibrate::{
    AgreementStats, CONCURRENT_ROWS, Calibration, CalibrationArgs, Disagreement, JudgeScores,
    LENGTH_BIAS_THRESHOLD, LabelRow, MIN_ROWS, MetricCalibration, RECOMMENDED_ROWS, RowFailure,
    RowResult, TOP_DISAGREEMENTS, assemble, load_labels, parse_labels, render_calibration_json,
    render_calibration_text, run_calibration,
};
pub use command::MAX_STDOUT;
pub use error::{EvaluatorError, MetricFailure, MetricFailureKind};
pub use evaluator::{EvaluationOutcome, Evaluator, MetricReport};
pub use report::{render_json, render_text};
pub use request::EvaluationRequest;
pub use standalone::{Standalone, StandaloneArgs, StandaloneError, run_standalone};
