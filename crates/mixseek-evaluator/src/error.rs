//! [`EvaluatorError`] (why an evaluator cannot be built or an evaluation failed) and
//! [`MetricFailure`] (one metric that failed, with the original's `… | Provider: … | Metric: …
//! | Retries: …` text).

use mixseek_llm::ErrorKind;
use mixseek_prompt::PromptError;
use serde::{Serialize, Serializer};
use std::fmt;

/// What went wrong with a metric, coarsely (`kind` of a [`MetricFailure`]); serialized as its
/// word ([`MetricFailureKind::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricFailureKind {
    /// A judge's LLM call failed, or its answers could not be used: the LLM error kind
    /// (`parse`, `schema`, `check`, `timeout`, `transport`, `server`, `rate_limited`,
    /// `permanent`, `config`).
    Llm(ErrorKind),
    /// Command metric: the program could not be started (`spawn`).
    Spawn,
    /// Command metric: the program ran out of time (`timeout`).
    Timeout,
    /// Command metric: a non-zero exit status or a signal (`exit`).
    Exit,
    /// Command metric: output that is not UTF-8, too large, not the expected JSON, or a score
    /// that is not a finite number (`bad_output`).
    BadOutput,
    /// Command metric: a score outside `min_score..=max_score` (`out_of_range`).
    OutOfRange,
    /// A crashed task or an input that could not be encoded (`internal`).
    Internal,
}

impl MetricFailureKind {
    /// The kind's word, as written in the JSON output.
    pub fn as_str(&self) -> &'static str {
        match self {
            MetricFailureKind::Llm(kind) => kind.as_str(),
            MetricFailureKind::Spawn => "spawn",
            MetricFailureKind::Timeout => "timeout",
            MetricFailureKind::Exit => "exit",
            MetricFailureKind::BadOutput => "bad_output",
            MetricFailureKind::OutOfRange => "out_of_range",
            MetricFailureKind::Internal => "internal",
        }
    }

    /// Whether another attempt may get past it: a transient LLM error, or a command that
    /// ran out of time.
    pub fn is_transient(&self) -> bool {
        match self {
            MetricFailureKind::Llm(kind) => kind.is_transient(),
            MetricFailureKind::Timeout => true,
            _ => false,
        }
    }
}

impl fmt::Display for MetricFailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for MetricFailureKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One metric that could not be scored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricFailure {
    /// The reported metric name (the canonical built-in name, or the configured name).
    pub metric_name: String,
    /// What went wrong, coarsely (see [`MetricFailureKind`]).
    pub kind: MetricFailureKind,
    /// The cause, e.g. `Failed to evaluate after retries: [openai] gpt-4o: schema error: …`.
    pub message: String,
    /// Provider of the judge that failed (LLM metrics).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Repair rounds actually made before giving up (at most `max_retries`; the original
    /// always printed `max_retries`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    /// The judge's (or the command's) last raw output, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<String>,
    /// Every raw answer the judge gave and that was rejected (invalid JSON, schema, a score
    /// outside 0..=100), in order; the last one is `raw_output`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<String>,
}

impl fmt::Display for MetricFailure {
    /// The original's evaluator API error text: the parts joined by ` | `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(p) = self.provider.as_deref().filter(|p| !p.is_empty()) {
            write!(f, " | Provider: {p}")?;
        }
        if !self.metric_name.is_empty() {
            write!(f, " | Metric: {}", self.metric_name)?;
        }
        if let Some(n) = self.retries {
            write!(f, " | Retries: {n}")?;
        }
        Ok(())
    }
}

/// Everything that can go wrong building an evaluator or evaluating a submission.
#[derive(Debug, thiserror::Error)]
pub enum EvaluatorError {
    /// The configuration is invalid (weights, names, parameters). The message is the
    /// original's where it has one (weight rules, empty names).
    #[error("{0}")]
    Config(String),
    /// A metric name that is neither a built-in nor a custom metric.
    #[error("{0}")]
    UnknownMetric(String),
    /// A judge model id that is malformed or cannot be used (unknown provider, missing API
    /// key).
    #[error("metric '{metric}': judge model '{model}' cannot be used: {message}")]
    Model {
        /// The metric.
        metric: String,
        /// The judge model id.
        model: String,
        /// Why it cannot be used.
        message: String,
    },
    /// The evaluation request is invalid (empty prompt or submission, blank ids).
    #[error("{0}")]
    InvalidRequest(String),
    /// The evaluator prompt could not be built (template or injection error).
    #[error("evaluator prompt: {0}")]
    Prompt(#[from] PromptError),
    /// A metric failed and `on_metric_error = "fail"`.
    #[error("{0}")]
    Metric(Box<MetricFailure>),
    /// Every metric failed, or every one with a weight did (`on_metric_error = "skip"` has
    /// nothing left to score with).
    #[error(
        "every metric with a weight failed (on_metric_error = \"skip\" has nothing left to score with): {}",
        join_failures(.0)
    )]
    AllMetricsFailed(Vec<MetricFailure>),
    /// The weighted overall score is not a finite number: command-metric scores close to the
    /// largest double overflow the weighted sum. Never stored.
    #[error(
        "the overall score is not a finite number: {0}; declare min_score / max_score on the command metrics"
    )]
    NonFiniteOverall(String),
}

fn join_failures(f: &[MetricFailure]) -> String {
    f.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl EvaluatorError {
    /// True when the input (configuration or request) is at fault, not the evaluation: the
    /// CLI exits 2 for these and 1 for the others.
    pub fn is_input_error(&self) -> bool {
        matches!(
            self,
            EvaluatorError::Config(_)
                | EvaluatorError::UnknownMetric(_)
                | EvaluatorError::Model { .. }
                | EvaluatorError::InvalidRequest(_)
                | EvaluatorError::Prompt(_)
        )
    }

    /// The metric failures this error carries.
    pub fn failures(&self) -> &[MetricFailure] {
        match self {
            EvaluatorError::Metric(f) => std::slice::from_ref(f.as_ref()),
            EvaluatorError::AllMetricsFailed(f) => f,
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_text_joins_the_parts_like_the_original() {
        let mut f = MetricFailure {
            metric_name: "ClarityCoherence".into(),
            kind: MetricFailureKind::Llm(ErrorKind::Schema),
            message: "Failed to evaluate after retries: boom".into(),
            provider: Some("google-gla".into()),
            retries: Some(3),
            raw_output: None,
            rejected: Vec::new(),
        };
        assert_eq!(
            f.to_string(),
            "Failed to evaluate after retries: boom | Provider: google-gla | Metric: ClarityCoherence | Retries: 3"
        );
        f.provider = Some(String::new());
        f.retries = Some(0);
        assert_eq!(
            f.to_string(),
            "Failed to evaluate after retries: boom | Metric: ClarityCoherence | Retries: 0"
        );
        f.retries = None;
        f.metric_name.clear();
        assert_eq!(f.to_string(), "Failed to evaluate after retries: boom");
    }
}
