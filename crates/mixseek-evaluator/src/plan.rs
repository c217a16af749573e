//! From [`EvaluatorSettings`] to the metrics an evaluator runs: each `[[metrics]]` entry
//! resolved to a built-in or custom LLM judge (instruction, judge models, parameters, samples)
//! or a command metric, with its weight. All configuration errors surface here, before any
//! call.

use crate::aggregate::Aggregate;
use crate::builtin::builtin_instruction;
use crate::builtin::{BUILTIN_METRICS, builtin_metric};
use crate::command::{CommandMetric, ScoreRange};
use crate::error::EvaluatorError;
use crate::weights::resolve_weights;
use mixseek_config::{Direction, EvaluatorSettings, Issues, MetricSettings, MetricType};
use mixseek_llm::{ChatModel, GenerationParams, ModelRegistry};
use std::sync::Arc;
use std::time::Duration;

/// The most samples a metric may ask for.
pub(crate) const MAX_SAMPLES: u32 = 20;

/// Time limit of a command metric whose `timeout_seconds` is 0.
pub(crate) const DEFAULT_COMMAND_TIMEOUT_SECS: u64 = 300;

/// One judge model of an LLM metric.
#[derive(Clone)]
pub(crate) struct Judge {
    /// `provider:model` as configured.
    pub model_id: String,
    pub model: Arc<dyn ChatModel>,
}

impl std::fmt::Debug for Judge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judge")
            .field("model_id", &self.model_id)
            .finish()
    }
}

/// An LLM-as-judge metric, resolved.
#[derive(Debug, Clone)]
pub(crate) struct LlmMetric {
    /// The system instruction: the metric's `system_instruction` verbatim, else the built-in
    /// text; then the prompt-injection guard paragraph (`builtin::EVALUATOR_GUARD`).
    pub instruction: String,
    /// One judge, or several (a jury, `judges = [...]`).
    pub judges: Vec<Judge>,
    /// Answers asked from each judge (`samples`, default 1).
    pub samples: u32,
    pub aggregate: Aggregate,
    pub params: GenerationParams,
    /// Repair rounds for invalid structured output (`max_retries`).
    pub max_retries: u32,
    /// Time limit of each call (`timeout_seconds`; 0 = the provider's default).
    pub timeout: Option<Duration>,
}

impl LlmMetric {
    /// True when a judge is the offline `mock:` provider (its scores are made up).
    pub(crate) fn uses_mock(&self) -> bool {
        self.judges.iter().any(|j| j.model.is_mock())
    }
}

/// What a metric is.
#[derive(Debug, Clone)]
pub(crate) enum MetricKind {
    Llm(LlmMetric),
    Command(CommandMetric),
}

/// One metric of the evaluation, ready to run.
#[derive(Debug, Clone)]
pub(crate) struct MetricPlan {
    /// The name in results: the canonical built-in name (`clarity_coherence` ⇒
    /// `ClarityCoherence`, as the original reports its class name) or the configured name.
    pub name: String,
    /// The `name` as configured (trimmed).
    pub configured_name: String,
    /// The configured weight (or `1/n` when no metric sets one).
    pub weight: f64,
    pub kind: MetricKind,
    /// Which way its scores point (`direction`; default `maximize`).
    pub direction: Direction,
}

impl MetricPlan {
    /// What `score` adds (times the weight) to the overall score, which is always "higher is
    /// better": the score itself for a maximized metric; for a minimized one its reflection
    /// in the metric's range (`min + max − score`: an LLM judge's 20 counts 80) when both
    /// bounds are known, else `−score`.
    pub(crate) fn oriented(&self, score: f64) -> f64 {
        match self.direction {
            Direction::Maximize => score,
            Direction::Minimize => match self.range() {
                (Some(lo), Some(hi)) => lo + hi - score,
                _ => -score,
            },
        }
    }

    /// The scores the metric can give: 0..=100 for an LLM judge, the declared
    /// `min_score..=max_score` (either open) for a command.
    pub(crate) fn range(&self) -> (Option<f64>, Option<f64>) {
        match &self.kind {
            MetricKind::Llm(_) => (Some(0.0), Some(100.0)),
            MetricKind::Command(c) => (c.range.min, c.range.max),
        }
    }

    /// `llm` or `command`.
    pub(crate) fn metric_type(&self) -> MetricType {
        match self.kind {
            MetricKind::Llm(_) => MetricType::Llm,
            MetricKind::Command(_) => MetricType::Command,
        }
    }
}

/// Checks a model id as the original does before any call.
pub(crate) fn check_model_format(model: &str) -> Result<(), String> {
    const EXAMPLE: &str =
        "Expected format: 'provider:model-name' (e.g., 'anthropic:claude-sonnet-4-5-20250929')";
    let Some((provider, name)) = model.split_once(':').filter(|_| !model.trim().is_empty()) else {
        return Err(format!("Invalid model format: '{model}'. {EXAMPLE}"));
    };
    if provider.trim().is_empty() || name.trim().is_empty() {
        return Err(format!(
            "Invalid model format: '{model}'. Both provider and model name must be non-empty. {EXAMPLE}"
        ));
    }
    Ok(())
}

/// The error for a name that is neither built-in nor custom.
fn unknown_metric(name: &str) -> EvaluatorError {
    let builtins: Vec<&str> = BUILTIN_METRICS.iter().map(|(c, _)| *c).collect();
    let suggestion =
        mixseek_config::closest(name, BUILTIN_METRICS.iter().flat_map(|(c, a)| [*c, *a]))
            .map(|s| format!(" Did you mean '{s}'?"))
            .unwrap_or_default();
    EvaluatorError::UnknownMetric(format!(
        "Metric class not found: '{name}'. Available metrics: {}.{suggestion} Any other name is a custom metric: give it a system_instruction (an LLM judge) or type = \"command\" with a command (a program).",
        builtins.join(", ")
    ))
}

/// Resolves every configured metric. See the module docs.
pub(crate) fn build_plans(
    settings: &EvaluatorSettings,
    registry: &ModelRegistry,
) -> Result<Vec<MetricPlan>, EvaluatorError> {
    for m in &settings.metrics {
        if m.name.trim().is_empty() {
            return Err(EvaluatorError::Config("Metric name cannot be empty".into()));
        }
    }
    let configured: Vec<String> = settings
        .metrics
        .iter()
        .map(|m| m.name.trim().to_string())
        .collect();
    let reported: Vec<String> = configured
        .iter()
        .map(|n| builtin_metric(n).map_or_else(|| n.clone(), str::to_string))
        .collect();
    let weights: Vec<Option<f64>> = settings.metrics.iter().map(|m| m.weight).collect();
    let resolved =
        resolve_weights(&configured, &weights, &reported).map_err(EvaluatorError::Config)?;

    let mut issues = Issues::default();
    settings.validate("", &mut issues);
    if !issues.is_empty() {
        let text: Vec<String> = issues.items.iter().map(ToString::to_string).collect();
        return Err(EvaluatorError::Config(text.join("\n")));
    }
    check_model_format(&settings.effective_default_model()).map_err(EvaluatorError::Config)?;

    let mut plans = Vec::with_capacity(settings.metrics.len());
    for (i, m) in settings.metrics.iter().enumerate() {
        let kind = if m.kind == Some(MetricType::Command) {
            MetricKind::Command(command_metric(settings, m, &configured[i])?)
        } else {
            MetricKind::Llm(llm_metric(settings, m, &configured[i], registry)?)
        };
        plans.push(MetricPlan {
            name: reported[i].clone(),
            configured_name: configured[i].clone(),
            weight: resolved[i],
            kind,
            direction: m.direction.unwrap_or_default(),
        });
    }
    Ok(plans)
}

fn command_metric(
    settings: &EvaluatorSettings,
    m: &MetricSettings,
    name: &str,
) -> Result<CommandMetric, EvaluatorError> {
    let argv = m.command.clone().unwrap_or_default();
    if argv.is_empty() || argv[0].trim().is_empty() {
        return Err(EvaluatorError::Config(format!(
            "metric '{name}': type = \"command\" needs a command, e.g. command = [\"python3\", \"score.py\"]"
        )));
    }
    if !m.judges.is_empty() || m.samples.is_some_and(|s| s != 1) {
        return Err(EvaluatorError::Config(format!(
            "metric '{name}': samples and judges apply to LLM-judge metrics, not to type = \"command\""
        )));
    }
    let secs = m
        .timeout_seconds
        .unwrap_or_else(|| settings.effective_timeout_seconds());
    let timeout = Duration::from_secs(if secs == 0 {
        DEFAULT_COMMAND_TIMEOUT_SECS
    } else {
        secs
    });
    Ok(CommandMetric {
        argv,
        timeout,
        range: ScoreRange {
            min: m.min_score,
            max: m.max_score,
        },
    })
}

fn llm_metric(
    settings: &EvaluatorSettings,
    m: &MetricSettings,
    name: &str,
    registry: &ModelRegistry,
) -> Result<LlmMetric, EvaluatorError> {
    let instruction = match (&m.system_instruction, builtin_metric(name)) {
        // Set (even empty) ⇒ used verbatim for a built-in, as the original does.
        (Some(text), Some(_)) => text.clone(),
        (None, Some(canonical)) => builtin_instruction(canonical)
            .unwrap_or_default()
            .to_string(),
        (Some(text), None) if !text.trim().is_empty() => text.clone(),
        _ => return Err(unknown_metric(name)),
    };
    let instruction = crate::builtin::guarded(&instruction);
    let model_ids: Vec<String> = if m.judges.is_empty() {
        vec![
            m.model
                .clone()
                .unwrap_or_else(|| settings.effective_default_model()),
        ]
    } else {
        m.judges.clone()
    };
    let fallbacks: Vec<String> = settings
        .metric_fallbacks(m)
        .iter()
        .map(|f| f.trim().to_string())
        .collect();
    for f in &fallbacks {
        check_model_format(f).map_err(|e| EvaluatorError::Model {
            metric: name.into(),
            model: f.clone(),
            message: format!("in fallback_models: {e}"),
        })?;
    }
    let mut judges: Vec<Judge> = Vec::with_capacity(model_ids.len());
    for id in model_ids {
        let id = id.trim().to_string();
        if judges.iter().any(|j| j.model_id == id) {
            return Err(EvaluatorError::Config(format!(
                "metric '{name}': judge '{id}' is listed twice in judges (use samples = N to ask one judge several times)"
            )));
        }
        check_model_format(&id).map_err(|e| EvaluatorError::Model {
            metric: name.into(),
            model: id.clone(),
            message: e,
        })?;
        // Each fallback is tried in order when a call to `id` fails after its own retries.
        let model = registry
            .model_with_fallbacks(&id, &fallbacks)
            .map_err(|e| EvaluatorError::Model {
                metric: name.into(),
                model: id.clone(),
                message: e.to_string(),
            })?;
        judges.push(Judge {
            model_id: id,
            model,
        });
    }
    let samples = m.samples.unwrap_or(1);
    if !(1..=MAX_SAMPLES).contains(&samples) {
        return Err(EvaluatorError::Config(format!(
            "metric '{name}': samples must be between 1 and {MAX_SAMPLES}, got {samples}"
        )));
    }
    let aggregate = m.aggregate.unwrap_or_default();
    let seed = match m.seed.or_else(|| settings.effective_seed()) {
        None => None,
        Some(s) => Some(u64::try_from(s).map_err(|_| {
            EvaluatorError::Config(format!("metric '{name}': seed must be >= 0, got {s}"))
        })?),
    };
    let params = GenerationParams {
        temperature: Some(
            m.temperature
                .unwrap_or_else(|| settings.effective_temperature()),
        ),
        max_tokens: m
            .max_tokens
            .or_else(|| settings.effective_max_tokens())
            .map(|t| u32::try_from(t).unwrap_or(u32::MAX)),
        top_p: m.top_p.or_else(|| settings.effective_top_p()),
        seed,
        stop: m
            .stop_sequences
            .clone()
            .or_else(|| settings.effective_stop_sequences())
            .unwrap_or_default(),
        extra: serde_json::Map::new(),
    };
    let secs = m
        .timeout_seconds
        .unwrap_or_else(|| settings.effective_timeout_seconds());
    let mut params = params;
    let mut timeout = (secs > 0).then(|| Duration::from_secs(secs));
    // Each table: the metric's own replaces `[llm_default]`'s (no merge between the levels),
    // as in the original; merged for the metric's first judge.
    let llm_default = settings.llm_default.as_ref();
    let model_settings = m
        .model_settings
        .as_ref()
        .or_else(|| llm_default.and_then(|d| d.model_settings.as_ref()));
    let google_model_settings = m
        .google_model_settings
        .as_ref()
        .or_else(|| llm_default.and_then(|d| d.google_model_settings.as_ref()));
    if model_settings.is_some() || google_model_settings.is_some() {
        let model_id = judges.first().map(|j| j.model_id.as_str()).unwrap_or("");
        let merged =
            mixseek_llm::merged_model_settings(model_id, model_settings, google_model_settings);
        mixseek_llm::apply_model_settings(&mut params, &mut timeout, merged);
    }
    Ok(LlmMetric {
        instruction,
        judges,
        samples,
        aggregate,
        params,
        max_retries: m
            .max_retries
            .unwrap_or_else(|| settings.effective_max_retries()),
        timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::{COVERAGE, LLM_PLAIN};

    fn registry() -> ModelRegistry {
        ModelRegistry::new(
            mixseek_llm::RegistryConfig::new()
                .with_env(mixseek_llm::Env::from_map([("OPENAI_API_KEY", "sk-test")])),
        )
        .expect("registry")
    }

    fn metric(name: &str) -> MetricSettings {
        MetricSettings {
            name: name.into(),
            ..Default::default()
        }
    }

    fn settings(metrics: Vec<MetricSettings>) -> EvaluatorSettings {
        EvaluatorSettings {
            default_model: "mock:judge".into(),
            metrics,
            ..Default::default()
        }
    }

    fn err(s: EvaluatorSettings) -> String {
        build_plans(&s, &registry())
            .map(|_| ())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn builtins_resolve_with_aliases_and_their_instructions() {
        let mut custom = metric("LLMPlain");
        custom.system_instruction = Some("Evaluate the technical accuracy of the response.".into());
        let plans = build_plans(
            &settings(vec![metric("coverage"), custom, metric("Relevance")]),
            &registry(),
        )
        .expect("plans");
        let names: Vec<&str> = plans.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["Coverage", "LLMPlain", "Relevance"]);
        assert_eq!(plans[0].configured_name, "coverage");
        let MetricKind::Llm(l) = &plans[0].kind else {
            panic!("llm")
        };
        assert_eq!(l.instruction, crate::builtin::guarded(COVERAGE));
        assert_eq!(l.params.temperature, Some(0.0));
        assert_eq!(l.max_retries, 3);
        assert_eq!(l.timeout, Some(Duration::from_secs(300)));
        assert_eq!(l.judges[0].model_id, "mock:judge");
        let MetricKind::Llm(l) = &plans[1].kind else {
            panic!("llm")
        };
        // a configured instruction gets the guard too
        assert_eq!(
            l.instruction,
            crate::builtin::guarded("Evaluate the technical accuracy of the response.")
        );
        assert_ne!(l.instruction, crate::builtin::guarded(LLM_PLAIN));
        assert!((plans[0].weight - 1.0 / 3.0).abs() < 1e-15);
    }

    #[test]
    fn an_unknown_name_without_instruction_is_an_error_with_a_suggestion() {
        let e = err(settings(vec![metric("Coverag")]));
        assert!(e.starts_with("Metric class not found: 'Coverag'. Available metrics: ClarityCoherence, Coverage, LLMPlain, Relevance. Did you mean 'Coverage'?"), "{e}");
        let mut custom = metric("novelty");
        custom.system_instruction = Some("Rate novelty.".into());
        assert!(build_plans(&settings(vec![custom]), &registry()).is_ok());
    }

    #[test]
    fn per_metric_parameters_win_over_the_defaults() {
        let mut s = settings(vec![MetricSettings {
            name: "Coverage".into(),
            model: Some("mock:other".into()),
            temperature: Some(0.7),
            max_tokens: Some(99),
            max_retries: Some(1),
            timeout_seconds: Some(5),
            top_p: Some(0.5),
            seed: Some(7),
            stop_sequences: Some(vec!["END".into()]),
            ..Default::default()
        }]);
        s.llm_default = Some(mixseek_config::LlmDefaultSettings {
            temperature: Some(0.2),
            ..Default::default()
        });
        let plans = build_plans(&s, &registry()).expect("plans");
        let MetricKind::Llm(l) = &plans[0].kind else {
            panic!("llm")
        };
        assert_eq!(l.judges[0].model_id, "mock:other");
        assert_eq!(
            l.params,
            GenerationParams {
                temperature: Some(0.7),
                max_tokens: Some(99),
                top_p: Some(0.5),
                seed: Some(7),
                stop: vec!["END".into()],
                extra: serde_json::Map::new(),
            }
        );
        assert_eq!(
            (l.max_retries, l.timeout),
            (1, Some(Duration::from_secs(5)))
        );
    }

    #[test]
    fn model_ids_are_checked_before_any_call() {
        let mut m = metric("Coverage");
        m.model = Some("no-colon-format".into());
        let e = err(settings(vec![m]));
        assert!(e.contains("Invalid model format: 'no-colon-format'. Expected format: 'provider:model-name' (e.g., 'anthropic:claude-sonnet-4-5-20250929')"), "{e}");
        let mut m = metric("Coverage");
        m.model = Some("only-provider:".into());
        let e = err(settings(vec![m]));
        assert!(e.contains("Invalid model format: 'only-provider:'. Both provider and model name must be non-empty."), "{e}");
        let mut m = metric("Coverage");
        m.judges = vec!["mock:a".into(), "nosuch:model".into()];
        let e = err(settings(vec![m]));
        assert!(
            e.contains("judge model 'nosuch:model' cannot be used")
                && e.contains("unknown provider"),
            "{e}"
        );
        assert_eq!(check_model_format(":"), Err("Invalid model format: ':'. Both provider and model name must be non-empty. Expected format: 'provider:model-name' (e.g., 'anthropic:claude-sonnet-4-5-20250929')".into()));
        assert!(check_model_format("").is_err());
    }

    #[test]
    fn names_weights_and_options_are_validated() {
        assert_eq!(
            err(settings(vec![metric("  ")])),
            "Metric name cannot be empty"
        );
        assert_eq!(
            err(settings(vec![])),
            "List should have at least 1 item after validation, not 0"
        );
        assert_eq!(
            err(settings(vec![metric("Coverage"), metric("coverage")])),
            "Duplicate metric names found: Coverage. Each metric must have a unique name."
        );
        let mut m = metric("Coverage");
        m.samples = Some(0);
        assert!(err(settings(vec![m])).contains("samples"));
        let mut m = metric("score");
        m.kind = Some(MetricType::Command);
        assert!(err(settings(vec![m])).contains("needs a command"));
    }

    #[test]
    fn command_metrics_take_their_own_timeout() {
        let mut m = metric("backtest");
        m.kind = Some(MetricType::Command);
        m.command = Some(vec!["python3".into(), "score.py".into()]);
        m.timeout_seconds = Some(9);
        let plans = build_plans(&settings(vec![m]), &registry()).expect("plans");
        assert_eq!(plans[0].name, "backtest");
        let MetricKind::Command(c) = &plans[0].kind else {
            panic!("command")
        };
        assert_eq!((c.argv.len(), c.timeout), (2, Duration::from_secs(9)));
    }

    #[test]
    fn a_metrics_model_settings_replace_llm_defaults_and_fill_only_unset_fields() {
        let table = |v: serde_json::Value| v.as_object().cloned();
        let s = EvaluatorSettings {
            default_model: "mock:judge".into(),
            llm_default: Some(mixseek_config::LlmDefaultSettings {
                model_settings: table(serde_json::json!({"presence_penalty": 0.1, "top_p": 0.3})),
                ..Default::default()
            }),
            metrics: vec![
                MetricSettings {
                    model_settings: table(
                        serde_json::json!({"frequency_penalty": 0.2, "temperature": 0.9}),
                    ),
                    ..metric("Coverage")
                },
                metric("Relevance"),
            ],
            ..EvaluatorSettings::default()
        };
        let plans = build_plans(&s, &registry()).expect("plans");
        let params = |i: usize| match &plans[i].kind {
            MetricKind::Llm(l) => l.params.clone(),
            _ => panic!("llm"),
        };
        // The metric's table replaces [llm_default]'s; temperature is always set (0.0).
        let own = params(0);
        assert_eq!(own.temperature, Some(0.0));
        assert_eq!(own.top_p, None);
        assert_eq!(
            own.extra,
            table(serde_json::json!({"frequency_penalty": 0.2})).unwrap_or_default()
        );
        // Without its own table, [llm_default]'s applies.
        let inherited = params(1);
        assert_eq!(inherited.top_p, Some(0.3));
        assert_eq!(
            inherited.extra,
            table(serde_json::json!({"presence_penalty": 0.1})).unwrap_or_default()
        );
    }
}
