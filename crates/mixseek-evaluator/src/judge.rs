//! One LLM-judge call: the metric's instruction (with the evaluator-phase system injections) as
//! the system prompt, the rendered evaluator user prompt as the single user message, and the
//! structured answer `{score, evaluator_comment}` through the LLM layer's parse → validate →
//! check → repair loop. A score outside 0..=100 is repaired, never clamped.

use crate::error::{MetricFailure, MetricFailureKind};
use crate::plan::{Judge, LlmMetric};
use mixseek_core::Usage;
use mixseek_llm::{
    CallerTag, ChatModel, ChatRequest, ChatResponse, ErrorKind, LlmError, StructuredOptions,
    generate_structured,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// LLM-as-a-Judgeの評価結果のための共通の構造化出力モデル。
///
/// すべての組み込みメトリクスとカスタムメトリクスは、llm-as-a-judgeの応答形式として
/// このモデルを使用できます。
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "BaseLLMEvaluation")]
pub(crate) struct JudgeVerdict {
    /// 0から100の間の評価スコア
    #[schemars(range(min = 0.0, max = 100.0))]
    pub score: f64,
    /// スコアの連鎖思考推論とフィードバック
    pub evaluator_comment: String,
}

/// The check run on every parsed verdict: `0 ≤ score ≤ 100`.
pub(crate) fn check_verdict(v: &JudgeVerdict) -> Result<(), String> {
    check_score(v.score)
}

/// A judge's score is a finite number in `0..=100` (inclusive); nothing is clamped. (JSON
/// has no `NaN` or infinity, and `1e999` does not parse: such answers fail as invalid JSON
/// before this check.)
pub(crate) fn check_score(score: f64) -> Result<(), String> {
    if score.is_finite() && (0.0..=100.0).contains(&score) {
        Ok(())
    } else {
        Err(format!(
            "score must be between 0 and 100 (inclusive), got {score}"
        ))
    }
}

/// Characters of a judge's answer quoted in a failure's message (the whole answer is kept in
/// its `raw_output`).
const EXCERPT: usize = 300;

/// The start of a raw answer for a message: trimmed, at most [`EXCERPT`] characters, `…` at
/// a cut.
pub(crate) fn excerpt(raw: &str) -> String {
    let s = raw.trim();
    match s.char_indices().nth(EXCERPT) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// One accepted judge answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct JudgeAnswer {
    /// `provider:model` of the judge as configured.
    pub judge: String,
    /// Sample index (0-based) of this answer among the judge's samples.
    pub sample: u32,
    /// The score as the judge gave it (not rounded).
    pub score: f64,
    pub evaluator_comment: String,
    /// The judge's raw output that was accepted.
    pub raw: String,
    /// Repair rounds it needed.
    pub repairs: u32,
    /// The raw outputs rejected before the accepted one (invalid JSON, schema or a score
    /// outside 0..=100), in order; one per repair round.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<String>,
    /// `provider:model` that answered, when a fallback model answered instead of `judge`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    #[serde(skip)]
    pub usage: Usage,
}

/// Wraps a judge model for one structured call and keeps every raw answer it gives, so
/// rejected answers are kept and the repairs actually made are counted.
struct Recording<'a> {
    inner: &'a dyn ChatModel,
    /// The raw text of each call, in order; `None` for a call that failed.
    calls: Mutex<Vec<Option<String>>>,
}

impl<'a> Recording<'a> {
    fn new(inner: &'a dyn ChatModel) -> Self {
        Self {
            inner,
            calls: Mutex::new(Vec::new()),
        }
    }

    fn calls(&self) -> Vec<Option<String>> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

#[async_trait::async_trait]
impl ChatModel for Recording<'_> {
    fn id(&self) -> &str {
        self.inner.id()
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let result = self.inner.chat(request).await;
        let entry = result.as_ref().ok().map(|r| r.text_or_empty().to_string());
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(entry);
        }
        result
    }

    fn default_timeout(&self) -> Option<std::time::Duration> {
        self.inner.default_timeout()
    }

    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn is_mock(&self) -> bool {
        self.inner.is_mock()
    }
}

/// What every judge of a metric is asked.
pub(crate) struct Question<'a> {
    pub metric_name: &'a str,
    /// The metric's instruction (its system prompt).
    pub system: &'a str,
    /// The evaluation prompt: the user's task and the submission.
    pub user: &'a str,
    /// Parts of the prompt the response cache ignores (the current time).
    pub volatile: &'a [String],
    pub caller: &'a CallerTag,
}

/// Asks `judge` the `question` once (sample `sample`).
pub(crate) async fn ask(
    judge: &Judge,
    metric: &LlmMetric,
    question: &Question<'_>,
    sample: u32,
) -> Result<JudgeAnswer, MetricFailure> {
    let metric_name = question.metric_name;
    let mut request = ChatRequest::user(question.user)
        .with_system(question.system)
        .with_caller(question.caller.clone().with_repeat(sample))
        .with_cache_volatile(question.volatile.to_vec());
    request.params = metric.params.clone();
    request.timeout = metric.timeout;
    let options = StructuredOptions::default()
        .with_max_repairs(metric.max_retries)
        .with_check(check_verdict);
    let recording = Recording::new(judge.model.as_ref());
    let result = generate_structured::<JudgeVerdict>(&recording, request, options).await;
    let calls = recording.calls();
    match result {
        Ok(s) => {
            // Every answer before the accepted (last) one was rejected.
            let rejected = calls[..calls.len().saturating_sub(1)]
                .iter()
                .flatten()
                .cloned()
                .collect();
            let answered_by = Some(s.response.model.clone())
                .filter(|m| !m.is_empty() && m.as_str() != judge.model_id);
            Ok(JudgeAnswer {
                judge: judge.model_id.clone(),
                sample,
                score: s.value.score,
                evaluator_comment: s.value.evaluator_comment,
                raw: s.raw,
                repairs: s.repairs,
                rejected,
                answered_by,
                usage: s.usage,
            })
        }
        Err(e) => {
            let rejected = calls.iter().flatten().cloned().collect();
            // Repair rounds actually made: every call after the first one.
            let retries = u32::try_from(calls.len().saturating_sub(1)).unwrap_or(u32::MAX);
            Err(failure(judge, metric_name, &e, retries, rejected))
        }
    }
}

fn failure(
    judge: &Judge,
    metric_name: &str,
    e: &LlmError,
    retries: u32,
    rejected: Vec<String>,
) -> MetricFailure {
    tracing::warn!(metric = metric_name, judge = %judge.model_id, kind = %e.kind, retries, error = %e, "judge call failed");
    // A rejected answer (invalid JSON such as `{"score": NaN}`, the wrong shape, a score
    // outside 0..=100) is quoted, so the text recorded for the failure shows what was said.
    let answered = match (&e.kind, e.raw_output.as_deref()) {
        (ErrorKind::Parse | ErrorKind::Schema | ErrorKind::Check, Some(raw)) => {
            format!("; the judge answered: {}", excerpt(raw))
        }
        _ => String::new(),
    };
    MetricFailure {
        metric_name: metric_name.to_string(),
        kind: MetricFailureKind::Llm(e.kind),
        message: format!("Failed to evaluate after retries: {e}{answered}"),
        provider: Some(judge.model.provider().to_string()),
        retries: Some(retries),
        raw_output: e.raw_output.clone(),
        rejected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn schema_matches_the_original_output_model() {
        let schema = mixseek_llm::schema_of::<JudgeVerdict>();
        assert_eq!(schema["title"], "BaseLLMEvaluation");
        assert_eq!(
            schema["required"],
            serde_json::json!(["score", "evaluator_comment"])
        );
        let score = &schema["properties"]["score"];
        assert_eq!(
            (score["minimum"].as_f64(), score["maximum"].as_f64()),
            (Some(0.0), Some(100.0))
        );
        assert_eq!(score["description"], "0から100の間の評価スコア");
        assert_eq!(score["type"], "number");
        assert_eq!(
            schema["properties"]["evaluator_comment"]["description"],
            "スコアの連鎖思考推論とフィードバック"
        );
        let desc = schema["description"].as_str().unwrap_or_default();
        assert!(
            desc.starts_with("LLM-as-a-Judgeの評価結果のための共通の構造化出力モデル。"),
            "{desc}"
        );
        assert!(!desc.contains("Example"));
    }

    #[test]
    fn the_check_rejects_out_of_range_scores() {
        let v = |score| JudgeVerdict {
            score,
            evaluator_comment: String::new(),
        };
        assert_eq!(check_verdict(&v(0.0)), Ok(()));
        assert_eq!(check_verdict(&v(100.0)), Ok(()));
        assert_eq!(
            check_verdict(&v(100.5)),
            Err("score must be between 0 and 100 (inclusive), got 100.5".into())
        );
        assert!(check_verdict(&v(-1.0)).is_err());
    }

    #[test]
    fn non_finite_scores_are_rejected() {
        for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.001, 1e300] {
            assert!(check_score(x).is_err(), "{x}");
        }
        // JSON cannot carry them: the answer fails to parse and is repaired or fails.
        for raw in [
            "{\"score\": NaN, \"evaluator_comment\": \"\"}",
            "{\"score\": 1e999, \"evaluator_comment\": \"\"}",
        ] {
            assert!(mixseek_llm::parse_json(raw).is_err(), "{raw}");
        }
    }

    #[test]
    fn excerpts_are_bounded() {
        assert_eq!(excerpt("  {\"score\": 1}\n"), "{\"score\": 1}");
        let long = "x".repeat(EXCERPT + 10);
        assert_eq!(excerpt(&long), format!("{}…", "x".repeat(EXCERPT)));
    }

    /// A judge's raw answer through the real steps of the structured call: tolerant JSON
    /// parsing, the output type, then the check.
    fn accepted(raw: &str) -> Option<f64> {
        let json = mixseek_llm::parse_json(raw).ok()?;
        let v: JudgeVerdict = serde_json::from_value(json).ok()?;
        check_verdict(&v).ok()?;
        Some(v.score)
    }

    proptest! {
        #[test]
        fn the_score_check_accepts_exactly_the_finite_scores_from_0_to_100(x in any::<f64>()) {
            prop_assert_eq!(check_score(x).is_ok(), x.is_finite() && (0.0..=100.0).contains(&x));
        }

        #[test]
        fn no_answer_yields_a_non_finite_or_out_of_range_score(
            raw in any::<String>(),
            token in prop_oneof![
                any::<f64>().prop_map(|x| x.to_string()),
                any::<f64>().prop_map(|x| format!("{x:e}")),
                (any::<f64>(), -400i32..400).prop_map(|(m, e)| format!("{m}e{e}")),
                prop::sample::select(
                    ["NaN", "Infinity", "-Infinity", "1e999", "-0", "100.0000000000001", "\"50\""]
                        .map(str::to_string)
                        .to_vec()
                ),
            ],
            chatter in "[ a-z`{}\n]{0,12}",
        ) {
            for text in [
                raw,
                format!("{{\"score\": {token}, \"evaluator_comment\": \"ok\"}}"),
                format!("{chatter}```json\n{{\"evaluator_comment\": \"c\", \"score\":{token}}}\n```{chatter}"),
            ] {
                if let Some(s) = accepted(&text) {
                    prop_assert!(s.is_finite() && (0.0..=100.0).contains(&s), "{text} gave {s}");
                }
            }
        }
    }
}
