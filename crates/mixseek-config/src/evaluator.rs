//! Evaluator TOML (flat file): the default judge LLM parameters and the `[[metrics]]`.
//! Here are the keys, their defaults and the range checks; the weight rules (with the
//! original's messages) are in `crate::weights` and run from `validate`.

use crate::choice::{Aggregate, Direction, MetricType, OnMetricError};
use crate::issues::Issues;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `[llm_default]`: default judge LLM parameters (wins over the same top-level keys).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(default)]
pub struct LlmDefaultSettings {
    /// `provider:model`; an empty value falls through to `default_model`.
    pub model: Option<String>,
    /// Sampling temperature (0.0..=2.0).
    pub temperature: Option<f64>,
    /// Output token limit (> 0).
    pub max_tokens: Option<u64>,
    /// Structured-output repair attempts.
    pub max_retries: Option<u32>,
    /// Per-request timeout in seconds (1..=3600).
    pub timeout_seconds: Option<u64>,
    /// Stop sequences.
    pub stop_sequences: Option<Vec<String>>,
    /// Nucleus sampling (0.0..=1.0).
    pub top_p: Option<f64>,
    /// Sampling seed.
    pub seed: Option<i64>,
    /// Request settings passed through to the model as they are (the original's
    /// `model_settings`; e.g. `presence_penalty`, `openai_reasoning_effort`, `extra_body`). A metric's own
    /// table replaces this one.
    pub model_settings: Option<serde_json::Map<String, serde_json::Value>>,
    /// As `model_settings`, for Google models only (ignored, with a warning, for any other
    /// model); wins over `model_settings`.
    pub google_model_settings: Option<serde_json::Map<String, serde_json::Value>>,
}

/// One `[[metrics]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(default)]
pub struct MetricSettings {
    /// Metric name: a built-in (`ClarityCoherence`, `Coverage`, `Relevance`, `LLMPlain`, or
    /// their snake_case aliases) or any name with its own `system_instruction` / `command`.
    pub name: String,
    /// Weight (0.0..=1.0). Either every metric has one (summing to 1.0 ± 0.001) or none does
    /// (equal weights).
    pub weight: Option<f64>,
    /// `llm` (default: an LLM judge) or `command` (an external program).
    #[serde(rename = "type")]
    pub kind: Option<MetricType>,
    /// Judge model; default: the evaluator's default model.
    pub model: Option<String>,
    /// Judge instruction; replaces the built-in metric's text.
    pub system_instruction: Option<String>,
    /// Sampling temperature (≥ 0).
    pub temperature: Option<f64>,
    /// Output token limit (> 0).
    pub max_tokens: Option<u64>,
    /// Structured-output repair attempts.
    pub max_retries: Option<u32>,
    /// Per-request (or per-command) timeout in seconds (1..=3600).
    pub timeout_seconds: Option<u64>,
    /// Stop sequences.
    pub stop_sequences: Option<Vec<String>>,
    /// Nucleus sampling (0.0..=1.0).
    pub top_p: Option<f64>,
    /// Sampling seed.
    pub seed: Option<i64>,
    /// `type = "command"`: program and arguments. It gets `{user_prompt, submission,
    /// execution_id, team_id, round_number, metric}` as JSON on stdin and prints
    /// `{score, evaluator_comment}`.
    pub command: Option<Vec<String>>,
    /// `type = "command"`: the lowest score the program may print (inclusive). Unset: no lower
    /// bound. A score outside `min_score..=max_score` fails the metric (its output is kept);
    /// nothing is clamped. Scores are finite numbers in any case.
    pub min_score: Option<f64>,
    /// `type = "command"`: the highest score the program may print (inclusive). Unset: no
    /// upper bound.
    pub max_score: Option<f64>,
    /// `maximize` (default: higher is better) or `minimize` (lower is better, e.g. an error
    /// rate). A minimized metric adds `min_score + max_score − score` to the overall score
    /// when both bounds are known (an LLM judge's are 0 and 100), else `−score`, so the
    /// overall score and every ranking stay "higher is better".
    pub direction: Option<Direction>,
    /// Repeat the judge this many times and aggregate (1..=20).
    pub samples: Option<u32>,
    /// How samples and jury votes are combined: `median` (default) or `mean`.
    pub aggregate: Option<Aggregate>,
    /// A jury: several judge models scoring the same submission.
    pub judges: Vec<String>,
    /// Models tried in order when a call to the judge model (or to each jury judge) fails
    /// after its own retries (`provider:model`). Unset: the evaluator's `fallback_models`
    /// for a metric on the default model, none otherwise.
    pub fallback_models: Option<Vec<String>>,
    /// Request settings passed through to the model as they are (the original's
    /// `model_settings`; e.g. `presence_penalty`, `openai_reasoning_effort`, `extra_body`). Replaces
    /// `[llm_default]`'s table; the metric's individual keys win over its keys.
    pub model_settings: Option<serde_json::Map<String, serde_json::Value>>,
    /// As `model_settings`, for Google models only (ignored, with a warning, for any other
    /// model); wins over `model_settings`.
    pub google_model_settings: Option<serde_json::Map<String, serde_json::Value>>,
}

/// An evaluator TOML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct EvaluatorSettings {
    /// Default judge model (`provider:model`).
    pub default_model: String,
    /// Default judge parameters; its keys win over the top-level ones.
    pub llm_default: Option<LlmDefaultSettings>,
    /// Default temperature (0.0..=2.0). Read here too (the original ignored it).
    pub temperature: Option<f64>,
    /// Default output token limit. Read here too (the original ignored it).
    pub max_tokens: Option<u64>,
    /// Default structured-output repair attempts.
    pub max_retries: u32,
    /// Default per-request timeout in seconds (1..=3600).
    pub timeout_seconds: u64,
    /// Default stop sequences.
    pub stop_sequences: Option<Vec<String>>,
    /// Default nucleus sampling (0.0..=1.0).
    pub top_p: Option<f64>,
    /// Default sampling seed.
    pub seed: Option<i64>,
    /// The metrics. A file without `[[metrics]]` has none (a preflight error); no file at all
    /// gives ClarityCoherence 0.334, Coverage 0.333, Relevance 0.333.
    pub metrics: Vec<MetricSettings>,
    /// The original's Python metric plugins; not supported — use `type = "command"` metrics.
    pub custom_metrics: BTreeMap<String, serde_json::Value>,
    /// What a failing metric does: `fail` (the evaluation fails, the original's behaviour) or
    /// `skip` (the other metrics' weights are renormalised and the failure recorded).
    pub on_metric_error: OnMetricError,
    /// Metrics evaluated at the same time; default: all of them.
    pub max_concurrent_metrics: Option<u32>,
    /// Models tried in order when a call to the default model fails after its own retries
    /// (`provider:model`), for every metric judged by the default model.
    pub fallback_models: Vec<String>,
}

impl Default for EvaluatorSettings {
    fn default() -> Self {
        Self {
            default_model: "google-gla:gemini-flash-lite-latest".into(),
            llm_default: None,
            temperature: None,
            max_tokens: None,
            max_retries: 3,
            timeout_seconds: 300,
            stop_sequences: None,
            top_p: None,
            seed: None,
            metrics: Vec::new(),
            custom_metrics: BTreeMap::new(),
            on_metric_error: OnMetricError::Fail,
            max_concurrent_metrics: None,
            fallback_models: Vec::new(),
        }
    }
}

impl EvaluatorSettings {
    /// The settings used when there is no evaluator file at all.
    pub fn builtin_default() -> Self {
        let m = |name: &str, w: f64| MetricSettings {
            name: name.into(),
            weight: Some(w),
            ..Default::default()
        };
        Self {
            metrics: vec![
                m("ClarityCoherence", 0.334),
                m("Coverage", 0.333),
                m("Relevance", 0.333),
            ],
            ..Self::default()
        }
    }

    /// The effective default model (`[llm_default].model` when non-empty).
    pub fn effective_default_model(&self) -> String {
        self.llm_default
            .as_ref()
            .and_then(|d| d.model.clone())
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| self.default_model.clone())
    }
    /// `temperature` of `[llm_default]`, else the evaluator's, else 0.
    pub fn effective_temperature(&self) -> f64 {
        self.llm_default
            .as_ref()
            .and_then(|d| d.temperature)
            .or(self.temperature)
            .unwrap_or(0.0)
    }
    /// `max_tokens` of `[llm_default]`, else the evaluator's.
    pub fn effective_max_tokens(&self) -> Option<u64> {
        self.llm_default
            .as_ref()
            .and_then(|d| d.max_tokens)
            .or(self.max_tokens)
    }
    /// `max_retries` of `[llm_default]`, else the evaluator's.
    pub fn effective_max_retries(&self) -> u32 {
        self.llm_default
            .as_ref()
            .and_then(|d| d.max_retries)
            .unwrap_or(self.max_retries)
    }
    /// `timeout_seconds` of `[llm_default]`, else the evaluator's.
    pub fn effective_timeout_seconds(&self) -> u64 {
        self.llm_default
            .as_ref()
            .and_then(|d| d.timeout_seconds)
            .unwrap_or(self.timeout_seconds)
    }
    /// `stop_sequences` of `[llm_default]`, else the evaluator's.
    pub fn effective_stop_sequences(&self) -> Option<Vec<String>> {
        self.llm_default
            .as_ref()
            .and_then(|d| d.stop_sequences.clone())
            .or_else(|| self.stop_sequences.clone())
    }
    /// `top_p` of `[llm_default]`, else the evaluator's.
    pub fn effective_top_p(&self) -> Option<f64> {
        self.llm_default
            .as_ref()
            .and_then(|d| d.top_p)
            .or(self.top_p)
    }
    /// `seed` of `[llm_default]`, else the evaluator's.
    pub fn effective_seed(&self) -> Option<i64> {
        self.llm_default.as_ref().and_then(|d| d.seed).or(self.seed)
    }

    /// Every model id the evaluator may call.
    pub fn model_ids(&self) -> Vec<String> {
        let mut ids = vec![self.effective_default_model()];
        for m in &self.metrics {
            if m.kind == Some(MetricType::Command) {
                continue;
            }
            if let Some(model) = &m.model {
                ids.push(model.clone());
            }
            ids.extend(m.judges.iter().cloned());
            ids.extend(self.metric_fallbacks(m));
        }
        ids
    }

    /// The fallback models of metric `m`: its own `fallback_models`, else the evaluator's
    /// when the metric is judged by the default model (no `model`, no `judges`).
    pub fn metric_fallbacks(&self, m: &MetricSettings) -> Vec<String> {
        match &m.fallback_models {
            Some(list) => list.clone(),
            None if m.model.is_none() && m.judges.is_empty() => self.fallback_models.clone(),
            None => Vec::new(),
        }
    }

    /// The weight rules of `crate::weights` (all or none, sum 1.0 ± 0.001, unique names),
    /// reported on the key `metrics` with the original's message.
    fn validate_weights(&self, prefix: &str, issues: &mut Issues) {
        let names: Vec<String> = self
            .metrics
            .iter()
            .map(|m| m.name.trim().to_string())
            .collect();
        if names.iter().any(String::is_empty) {
            return; // reported as an empty name
        }
        // Names as written: two names for one built-in metric (`coverage`, `Coverage`) are the
        // evaluator's knowledge, and it checks them (`mixseek_evaluator::checks`).
        let weights: Vec<Option<f64>> = self.metrics.iter().map(|m| m.weight).collect();
        if let Err(message) = crate::weights::resolve_weights(&names, &weights, &names) {
            issues.push(crate::issues::ConfigIssue::new(
                if prefix.is_empty() {
                    "metrics".to_string()
                } else {
                    format!("{prefix}.metrics")
                },
                message,
            ));
        }
    }

    /// Adds this section's range and consistency problems to `issues`, keys under `prefix`.
    pub fn validate(&self, prefix: &str, issues: &mut Issues) {
        issues.opt_range_f64(prefix, "temperature", self.temperature, 0.0, 2.0);
        issues.opt_range_f64(prefix, "top_p", self.top_p, 0.0, 1.0);
        if let Some(d) = &self.llm_default {
            let p = if prefix.is_empty() {
                "llm_default".to_string()
            } else {
                format!("{prefix}.llm_default")
            };
            issues.opt_range_f64(&p, "temperature", d.temperature, 0.0, 2.0);
            issues.opt_range_f64(&p, "top_p", d.top_p, 0.0, 1.0);
            if let Some(t) = d.timeout_seconds {
                issues.range_i64(&p, "timeout_seconds", clamp_i64(t), 1, 3600);
            }
            if d.max_tokens == Some(0) {
                issues.error(&p, "max_tokens", "must be > 0");
            }
        }
        if self.max_tokens == Some(0) {
            issues.error(prefix, "max_tokens", "must be > 0");
        }
        issues.range_i64(
            prefix,
            "timeout_seconds",
            clamp_i64(self.timeout_seconds),
            1,
            3600,
        );
        if self.max_concurrent_metrics == Some(0) {
            issues.error(prefix, "max_concurrent_metrics", "must be > 0");
        }
        if !self.custom_metrics.is_empty() {
            issues.error_hint(
                prefix,
                "custom_metrics",
                "Python metric plugins are not supported",
                "write the metric as a program and use [[metrics]] type = \"command\", command = [\"python3\", \"metric.py\"]",
            );
        }
        if self.metrics.is_empty() {
            issues.error_hint(
                prefix,
                "metrics",
                "no metrics defined (at least one is required)",
                "add a [[metrics]] entry, e.g. name = \"Coverage\"",
            );
        } else {
            self.validate_weights(prefix, issues);
        }
        for (i, m) in self.metrics.iter().enumerate() {
            let p = if prefix.is_empty() {
                format!("metrics[{i}]")
            } else {
                format!("{prefix}.metrics[{i}]")
            };
            if m.name.trim().is_empty() {
                issues.error(&p, "name", "Metric name cannot be empty");
            }
            issues.opt_range_f64(&p, "weight", m.weight, 0.0, 1.0);
            if let Some(t) = m.temperature {
                if t < 0.0 {
                    issues.error_hint(
                        &p,
                        "temperature",
                        format!("{t} is out of range"),
                        "must be >= 0",
                    );
                }
            }
            issues.opt_range_f64(&p, "top_p", m.top_p, 0.0, 1.0);
            if m.max_tokens == Some(0) {
                issues.error(&p, "max_tokens", "must be > 0");
            }
            if let Some(t) = m.timeout_seconds {
                issues.range_i64(&p, "timeout_seconds", clamp_i64(t), 1, 3600);
            }
            if let Some(s) = m.samples {
                issues.range_i64(&p, "samples", s as i64, 1, 20);
            }
            let is_command = m.kind == Some(MetricType::Command);
            for (key, bound) in [("min_score", m.min_score), ("max_score", m.max_score)] {
                match bound {
                    Some(_) if !is_command => issues.error_hint(
                        &p,
                        key,
                        format!("{key} applies to type = \"command\" metrics only"),
                        "an LLM judge always scores 0..=100; remove the key",
                    ),
                    Some(b) if !b.is_finite() => {
                        issues.error(&p, key, format!("{b} is not a finite number"));
                    }
                    _ => {}
                }
            }
            if let (Some(lo), Some(hi)) = (m.min_score, m.max_score) {
                if lo > hi {
                    issues.error_hint(
                        &p,
                        "max_score",
                        format!("max_score ({hi}) is below min_score ({lo})"),
                        "min_score must not exceed max_score",
                    );
                }
            }
            if is_command && m.command.as_ref().is_none_or(|c| c.is_empty()) {
                issues.error_hint(
                    &p,
                    "command",
                    "type = \"command\" needs a command",
                    "command = [\"python3\", \"score.py\"]",
                );
            }
        }
    }
}

/// A `u64` setting as `i64` for the range checks (huge values stay out of range).
fn clamp_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llm_default_wins_over_top_level_and_top_level_is_read() {
        let s: EvaluatorSettings = toml::from_str(
            "default_model = \"a:b\"\ntemperature = 0.7\nmax_retries = 5\n[llm_default]\nmodel = \"\"\nmax_retries = 1\n",
        )
        .expect("toml");
        assert_eq!(s.effective_default_model(), "a:b");
        assert_eq!(s.effective_max_retries(), 1);
        assert_eq!(s.effective_temperature(), 0.7);
        assert!(s.metrics.is_empty(), "a file without [[metrics]] has none");
        assert_eq!(EvaluatorSettings::builtin_default().metrics.len(), 3);
    }

    #[test]
    fn score_bounds_are_for_command_metrics_finite_and_ordered() {
        let text = |src: &str| {
            let s: EvaluatorSettings = toml::from_str(src).expect("toml");
            let mut issues = Issues::default();
            s.validate("", &mut issues);
            issues
                .items
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
        };
        let command =
            "[[metrics]]\nname = \"pnl\"\ntype = \"command\"\ncommand = [\"sh\", \"x.sh\"]\n";
        assert_eq!(
            text(&format!("{command}min_score = -100\nmax_score = 100.5\n")),
            Vec::<String>::new()
        );
        let s: EvaluatorSettings =
            toml::from_str(&format!("{command}min_score = 0\n")).expect("toml");
        assert_eq!(
            (s.metrics[0].min_score, s.metrics[0].max_score),
            (Some(0.0), None)
        );
        let issues = text(&format!("{command}min_score = 10\nmax_score = 5\n"));
        assert!(
            issues.iter().any(|i| i.contains("`metrics[0].max_score`")
                && i.contains("max_score (5) is below min_score (10)")),
            "{issues:#?}"
        );
        let issues = text(&format!("{command}max_score = nan\nmin_score = -inf\n"));
        assert!(
            issues
                .iter()
                .any(|i| i.contains("NaN is not a finite number")),
            "{issues:#?}"
        );
        assert!(
            issues
                .iter()
                .any(|i| i.contains("-inf is not a finite number")),
            "{issues:#?}"
        );
        let issues = text("[[metrics]]\nname = \"Coverage\"\nmax_score = 10\n");
        assert!(
            issues
                .iter()
                .any(|i| i.contains("max_score applies to type = \"command\" metrics only")),
            "{issues:#?}"
        );
    }

    #[test]
    fn a_misspelt_score_bound_is_an_unknown_key_with_a_suggestion() {
        let value: toml::Value = toml::from_str(
            "[[metrics]]\nname = \"pnl\"\ntype = \"command\"\ncommand = [\"x\"]\nmax_scor = 1\n",
        )
        .expect("toml");
        let mut issues = Issues::default();
        let s: Option<EvaluatorSettings> = crate::doc::deserialize_section(&value, "", &mut issues);
        assert!(s.is_some());
        let text: Vec<String> = issues.items.iter().map(|i| i.to_string()).collect();
        assert!(
            text.iter()
                .any(|t| t
                    .contains("`metrics[0].max_scor`: unknown key (did you mean `max_score`?)")),
            "{text:#?}"
        );
    }

    #[test]
    fn empty_metric_list_and_bad_policy_are_errors() {
        let value: toml::Value = toml::from_str(
            "on_metric_error = \"skp\"\n[[metrics]]\nname = \"Coverage\"\naggregate = \"mode\"\ntype = \"comand\"\n",
        )
        .expect("toml");
        let mut issues = Issues::default();
        let s: Option<EvaluatorSettings> = crate::doc::deserialize_section(&value, "", &mut issues);
        let s = s.expect("the rest loads");
        assert_eq!(s.on_metric_error, OnMetricError::Fail);
        EvaluatorSettings::default().validate("", &mut issues);
        let text: Vec<String> = issues.items.iter().map(|i| i.to_string()).collect();
        assert_eq!(
            text,
            [
                "`on_metric_error`: unknown value `skp` (did you mean `skip`? one of: fail, skip)",
                "`metrics[0].aggregate`: unknown value `mode` (one of: median, mean)",
                "`metrics[0].type`: unknown value `comand` (did you mean `command`? one of: llm, command)",
                "`metrics`: no metrics defined (at least one is required) (add a [[metrics]] entry, e.g. name = \"Coverage\")",
            ],
        );
    }
}
