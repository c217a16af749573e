//! [`Evaluator`]: runs a submission's metrics concurrently and aggregates their weighted
//! scores into the original's `score_details`.

use crate::combine::{combine, score2};
use crate::command::{self, CommandInput};
use crate::error::{EvaluatorError, MetricFailure, MetricFailureKind};
use crate::judge::{self, JudgeAnswer};
use crate::plan::{LlmMetric, MetricKind, MetricPlan, build_plans};
use crate::request::EvaluationRequest;
use mixseek_config::{Direction, EvaluatorSettings, MetricType, OnMetricError};
use mixseek_core::{MetricScore, Role, ScoreDetails, Usage};
use mixseek_llm::{CallerTag, ModelRegistry};
use mixseek_prompt::{InjectionPhase, PromptBuilder, TemplateKind};
use serde::Serialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tracing::Instrument;

/// Scores submissions with the configured metrics. Cheap to clone; `evaluate` may be called
/// concurrently.
#[derive(Clone)]
pub struct Evaluator {
    plans: Arc<Vec<MetricPlan>>,
    policy: OnMetricError,
    max_concurrent: usize,
    prompt_builder: Arc<PromptBuilder>,
    working_dir: Option<Arc<Path>>,
}

impl std::fmt::Debug for Evaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evaluator")
            .field(
                "metrics",
                &self
                    .plans
                    .iter()
                    .map(|p| (&p.name, p.weight))
                    .collect::<Vec<_>>(),
            )
            .field("policy", &self.policy)
            .field("max_concurrent", &self.max_concurrent)
            .finish_non_exhaustive()
    }
}

/// How one configured metric went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricReport {
    /// The reported name (as in `score_details`).
    pub metric_name: String,
    /// `llm` or `command`.
    pub kind: MetricType,
    /// The configured weight.
    pub weight: f64,
    /// The weight used for the overall score: the configured one, or renormalised over the
    /// metrics that succeeded when some were skipped; 0 for a failed metric.
    pub effective_weight: f64,
    /// The metric's score (2 decimals); `None` when it failed.
    pub score: Option<f64>,
    /// LLM usage of the metric's successful judge calls.
    pub usage: Usage,
    /// Wall time of the metric.
    pub duration_ms: u64,
}

/// The result of one evaluation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvaluationOutcome {
    /// `{overall_score, metrics: [{metric_name, score, evaluator_comment, …extra}]}`, every
    /// configured metric in configuration order. Extras of a scored metric: sample / jury
    /// details (`aggregate`, `samples`, `judges`, `agreement`) and `answers` (every raw judge
    /// answer, with any rejected ones) for LLM metrics, then, for a `minimize` metric only,
    /// `direction` and `oriented_score` (what it adds to the overall score, see
    /// `MetricSettings::direction`), then `weight` (the weight used: the
    /// configured one, renormalised after a skip), `configured_weight` (after a skip),
    /// `usage` and `duration_ms`. A metric that failed and was skipped keeps its place with
    /// `score` 0.0, its failure text as the comment, `"status": "failed"`, `"weight": 0.0`,
    /// `configured_weight`, `usage`, `duration_ms` and `error` (the [`MetricFailure`]); it adds
    /// nothing to the overall score.
    pub score_details: ScoreDetails,
    /// LLM usage of every successful judge call (the registry's ledger also sees failed ones).
    pub usage: Usage,
    /// Metrics that failed and were skipped (`on_metric_error = "skip"`).
    pub failures: Vec<MetricFailure>,
    /// Every configured metric, in configuration order.
    pub metrics: Vec<MetricReport>,
}

struct Done {
    score: MetricScore,
    usage: Usage,
}

/// What every metric task of one evaluation shares.
struct Job {
    request: EvaluationRequest,
    user_prompt: String,
    /// The rendered `current_datetime` (see `ChatRequest::cache_volatile`).
    volatile: Vec<String>,
    caller: CallerTag,
    working_dir: Option<Arc<Path>>,
}

impl Evaluator {
    /// Builds an evaluator: resolves every metric (built-in, custom LLM judge or command),
    /// their judge models through `registry`, and checks the weights with the original's
    /// rules and messages. See [`EvaluatorError`] for what can fail.
    pub fn new(
        settings: EvaluatorSettings,
        registry: Arc<ModelRegistry>,
        prompt_builder: Arc<PromptBuilder>,
    ) -> Result<Self, EvaluatorError> {
        let plans = build_plans(&settings, &registry)?;
        let policy = settings.on_metric_error;
        let max_concurrent = settings
            .max_concurrent_metrics
            .map_or(plans.len(), |n| usize::try_from(n).unwrap_or(usize::MAX))
            .max(1);
        Ok(Self {
            plans: Arc::new(plans),
            policy,
            max_concurrent,
            prompt_builder,
            working_dir: None,
        })
    }

    /// The directory command metrics run in (and relative programs such as `./score.sh` are
    /// found in); usually the evaluator file's directory. Default: the current directory.
    pub fn with_working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = Some(Arc::from(dir.into().into_boxed_path()));
        self
    }

    /// The resolved metrics, in configuration order.
    pub(crate) fn metrics(&self) -> &[MetricPlan] {
        &self.plans
    }

    /// The weight of each metric, in configuration order.
    pub fn weights(&self) -> Vec<f64> {
        self.plans.iter().map(|m| m.weight).collect()
    }

    /// Metrics evaluated at the same time.
    pub fn max_concurrent(&self) -> usize {
        self.max_concurrent
    }

    /// Evaluates one submission. Metrics run concurrently (at most `max_concurrent_metrics`
    /// at once); each LLM metric asks its judges (`samples` times each) concurrently too.
    /// With `on_metric_error = "fail"` the first failure cancels the other metrics and is
    /// returned as [`EvaluatorError::Metric`].
    pub async fn evaluate(
        &self,
        request: &EvaluationRequest,
    ) -> Result<EvaluationOutcome, EvaluatorError> {
        let request = request
            .validated()
            .map_err(EvaluatorError::InvalidRequest)?;
        let ctx = request.prompt_context();
        let rendered = self
            .prompt_builder
            .render_with_injections(TemplateKind::Evaluator, &ctx)?;
        let (user_prompt, volatile) = (rendered.prompt, rendered.volatile);
        let mut systems = Vec::with_capacity(self.plans.len());
        for plan in self.plans.iter() {
            systems.push(match &plan.kind {
                MetricKind::Llm(l) => Some(
                    self.prompt_builder
                        .inject_system(InjectionPhase::Evaluator, &l.instruction, &ctx)?
                        .prompt,
                ),
                MetricKind::Command(_) => None,
            });
        }
        let caller = CallerTag {
            execution_id: request.execution_id.as_ref().map(ToString::to_string),
            team_id: request.team_id.as_ref().map(ToString::to_string),
            round_number: request.round_number,
            role: Role::Evaluator,
            repeat: 0,
        };
        let job = Arc::new(Job {
            request,
            user_prompt,
            volatile,
            caller,
            working_dir: self.working_dir.clone(),
        });
        let semaphore = Arc::new(Semaphore::new(self.max_concurrent));
        let mut set = JoinSet::new();
        for (i, system) in systems.into_iter().enumerate() {
            let (plans, job, semaphore) = (self.plans.clone(), job.clone(), semaphore.clone());
            let span = tracing::info_span!("metric", metric = %self.plans[i].name);
            set.spawn(
                async move {
                    let _permit = semaphore.acquire_owned().await;
                    let started = Instant::now();
                    let result = run_metric(&plans, i, system.as_deref(), &job).await;
                    (i, result, started.elapsed())
                }
                .instrument(span),
            );
        }

        let n = self.plans.len();
        let mut done: Vec<Option<Done>> = (0..n).map(|_| None).collect();
        let mut failed: Vec<Option<MetricFailure>> = (0..n).map(|_| None).collect();
        let mut durations = vec![Duration::ZERO; n];
        while let Some(joined) = set.join_next().await {
            let (i, result, elapsed) = match joined {
                Ok(r) => r,
                Err(e) => {
                    // A metric task panicked or was cancelled: nothing to attribute it to.
                    let failure = MetricFailure {
                        metric_name: String::new(),
                        kind: MetricFailureKind::Internal,
                        message: format!("a metric task crashed: {e}"),
                        provider: None,
                        retries: None,
                        raw_output: None,
                        rejected: Vec::new(),
                    };
                    return Err(EvaluatorError::Metric(Box::new(failure)));
                }
            };
            durations[i] = elapsed;
            match result {
                Ok(d) => {
                    tracing::debug!(metric = %self.plans[i].name, score = d.score.score, ms = elapsed.as_millis() as u64, "metric scored");
                    done[i] = Some(d);
                }
                Err(f) => {
                    if self.policy == OnMetricError::Fail {
                        set.abort_all();
                        return Err(EvaluatorError::Metric(Box::new(f)));
                    }
                    tracing::warn!(metric = %self.plans[i].name, error = %f, "metric failed; skipped (on_metric_error = \"skip\")");
                    failed[i] = Some(f);
                }
            }
        }
        self.aggregate(done, failed, durations)
    }

    fn aggregate(
        &self,
        done: Vec<Option<Done>>,
        failed: Vec<Option<MetricFailure>>,
        durations: Vec<Duration>,
    ) -> Result<EvaluationOutcome, EvaluatorError> {
        let ok_weight: f64 = self
            .plans
            .iter()
            .zip(&done)
            .filter(|(_, d)| d.is_some())
            .map(|(p, _)| p.weight)
            .sum();
        let renormalise = failed.iter().any(Option::is_some);
        if renormalise && ok_weight <= 0.0 {
            return Err(EvaluatorError::AllMetricsFailed(
                failed.into_iter().flatten().collect(),
            ));
        }
        let mut overall = 0.0;
        let mut metrics = Vec::with_capacity(self.plans.len());
        let mut reports = Vec::with_capacity(self.plans.len());
        let mut failures = Vec::new();
        let mut usage = Usage::default();
        for (((plan, d), f), elapsed) in self.plans.iter().zip(done).zip(failed).zip(durations) {
            let duration_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
            let Some(Done {
                mut score,
                usage: u,
            }) = d
            else {
                // A skipped metric stays in the details, marked failed, with no weight: the
                // failure is recorded, never dropped.
                let failure = f.unwrap_or_else(|| MetricFailure {
                    metric_name: plan.name.clone(),
                    kind: MetricFailureKind::Internal,
                    message: "the metric produced no result".into(),
                    provider: None,
                    retries: None,
                    raw_output: None,
                    rejected: Vec::new(),
                });
                let mut entry = MetricScore::new(&plan.name, 0.0, failure.to_string());
                entry.extra.insert("status".into(), json!("failed"));
                entry.extra.insert("weight".into(), json!(0.0));
                entry
                    .extra
                    .insert("configured_weight".into(), json!(plan.weight));
                entry.extra.insert(
                    "usage".into(),
                    serde_json::to_value(Usage::default()).unwrap_or(Value::Null),
                );
                entry.extra.insert("duration_ms".into(), json!(duration_ms));
                entry.extra.insert(
                    "error".into(),
                    serde_json::to_value(&failure).unwrap_or(Value::Null),
                );
                metrics.push(entry);
                reports.push(MetricReport {
                    metric_name: plan.name.clone(),
                    kind: plan.metric_type(),
                    weight: plan.weight,
                    effective_weight: 0.0,
                    score: None,
                    usage: Usage::default(),
                    duration_ms,
                });
                failures.push(failure);
                continue;
            };
            let weight = if renormalise {
                plan.weight / ok_weight
            } else {
                plan.weight
            };
            overall += plan.oriented(score.score) * weight;
            // Our additions, after the original's three fields (and any sample/jury details).
            if plan.direction == Direction::Minimize {
                score
                    .extra
                    .insert("direction".into(), json!(plan.direction.as_str()));
                score.extra.insert(
                    "oriented_score".into(),
                    json!(score2(plan.oriented(score.score))),
                );
            }
            score.extra.insert("weight".into(), json!(weight));
            if renormalise {
                score
                    .extra
                    .insert("configured_weight".into(), json!(plan.weight));
            }
            score.extra.insert(
                "usage".into(),
                serde_json::to_value(u).unwrap_or(Value::Null),
            );
            score.extra.insert("duration_ms".into(), json!(duration_ms));
            usage += u;
            reports.push(MetricReport {
                metric_name: plan.name.clone(),
                kind: plan.metric_type(),
                weight: plan.weight,
                effective_weight: weight,
                score: Some(score.score),
                usage: u,
                duration_ms,
            });
            metrics.push(score);
        }
        if !overall.is_finite() {
            let terms: Vec<String> = reports
                .iter()
                .filter_map(|r| {
                    r.score
                        .map(|s| format!("{}={s:e}×{}", r.metric_name, r.effective_weight))
                })
                .collect();
            return Err(EvaluatorError::NonFiniteOverall(format!(
                "the weighted sum {} overflows",
                terms.join(" + ")
            )));
        }
        Ok(EvaluationOutcome {
            score_details: ScoreDetails {
                overall_score: score2(overall),
                metrics,
            },
            usage,
            failures,
            metrics: reports,
        })
    }
}

async fn run_metric(
    plans: &Arc<Vec<MetricPlan>>,
    i: usize,
    system: Option<&str>,
    job: &Arc<Job>,
) -> Result<Done, MetricFailure> {
    let plan = &plans[i];
    match &plan.kind {
        MetricKind::Command(c) => {
            let r = &job.request;
            let input = CommandInput {
                user_prompt: &r.user_prompt,
                submission: &r.submission,
                execution_id: r.execution_id.as_ref().map(|id| id.as_str()),
                team_id: r.team_id.as_ref().map(|id| id.as_str()),
                round_number: r.round_number,
                metric: &plan.configured_name,
            };
            let (score, comment) =
                command::run(c, &plan.name, &input, job.working_dir.as_deref()).await?;
            let comment = mixseek_prompt::py_trim(&comment).to_string();
            Ok(Done {
                score: MetricScore::new(&plan.name, score2(score), comment),
                usage: Usage::default(),
            })
        }
        MetricKind::Llm(l) => {
            let system: Arc<str> = Arc::from(system.unwrap_or(l.instruction.as_str()));
            let answers = ask_all(plans, i, l, system, job).await?;
            let usage = answers.iter().map(|a| a.usage).sum();
            let judges: Vec<String> = l.judges.iter().map(|j| j.model_id.clone()).collect();
            let score =
                combine(&plan.name, &judges, l.samples, l.aggregate, &answers).map_err(|why| {
                    MetricFailure {
                        metric_name: plan.name.clone(),
                        kind: MetricFailureKind::Llm(mixseek_llm::ErrorKind::Check),
                        message: format!("metric '{}': {why}", plan.name),
                        provider: None,
                        retries: None,
                        raw_output: answers.last().map(|a| a.raw.clone()),
                        rejected: Vec::new(),
                    }
                })?;
            Ok(Done { score, usage })
        }
    }
}

/// Every (judge, sample) answer of an LLM metric, asked concurrently; the first failure
/// cancels the others and fails the metric.
async fn ask_all(
    plans: &Arc<Vec<MetricPlan>>,
    i: usize,
    l: &LlmMetric,
    system: Arc<str>,
    job: &Arc<Job>,
) -> Result<Vec<JudgeAnswer>, MetricFailure> {
    let name = &plans[i].name;
    if l.judges.len() == 1 && l.samples == 1 {
        let question = judge::Question {
            metric_name: name,
            system: &system,
            user: &job.user_prompt,
            volatile: &job.volatile,
            caller: &job.caller,
        };
        let a = judge::ask(&l.judges[0], l, &question, 0).await?;
        return Ok(vec![a]);
    }
    let mut set = JoinSet::new();
    for j in 0..l.judges.len() {
        for sample in 0..l.samples {
            let (plans, job, system) = (plans.clone(), job.clone(), system.clone());
            set.spawn(
                async move {
                    let plan = &plans[i];
                    let MetricKind::Llm(l) = &plan.kind else {
                        return Err(MetricFailure {
                            metric_name: plan.name.clone(),
                            kind: MetricFailureKind::Internal,
                            message: "not an LLM metric".into(),
                            provider: None,
                            retries: None,
                            raw_output: None,
                            rejected: Vec::new(),
                        });
                    };
                    let question = judge::Question {
                        metric_name: &plan.name,
                        system: &system,
                        user: &job.user_prompt,
                        volatile: &job.volatile,
                        caller: &job.caller,
                    };
                    judge::ask(&l.judges[j], l, &question, sample).await
                }
                .in_current_span(),
            );
        }
    }
    let mut answers = Vec::with_capacity(set.len());
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok(Ok(a)) => answers.push(a),
            Ok(Err(f)) => {
                set.abort_all();
                return Err(f);
            }
            Err(e) => {
                set.abort_all();
                return Err(MetricFailure {
                    metric_name: name.clone(),
                    kind: MetricFailureKind::Internal,
                    message: format!("a judge task crashed: {e}"),
                    provider: None,
                    retries: None,
                    raw_output: None,
                    rejected: Vec::new(),
                });
            }
        }
    }
    Ok(answers)
}
