//! One LLM-judge call: the metric's instruction (with the evaluator-phase system injections) as
//! the system prompt, the rendered evaluator user prompt as the single user message, and the
//! structured answer `{score, evaluator_comment}` through the LLM layer's parse → validate →
//! check → repair loop. A score outside 0..=100 is repaired, never clamped.

use crate::error::MetricFailure;
use crate::plan::{Judge, LlmMetric};
use mixseek_core::Usage;
use mixseek_llm::{CallerTag, ChatRequest, LlmError, StructuredOptions, generate_structured};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// LLM-as-a-Judgeの評価結果のための共通の構造化出力モデル。
///
/// すべての組み込みメトリクスとカスタムメトリクスは、llm-as-a-judgeの応答形式として
/// このモデルを使用できます。
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "BaseLLMEvaluation")]
pub struct JudgeVerdict {
    /// 0から100の間の評価スコア
    #[schemars(range(min = 0.0, max = 100.0))]
    pub score: f64,
    /// スコアの連鎖思考推論とフィードバック
    pub evaluator_comment: String,
}

/// The check run on every parsed verdict: `0 ≤ score ≤ 100`.
pub fn check_verdict(v: &JudgeVerdict) -> Result<(), String> {
    if v.score.is_finite() && (0.0..=100.0).contains(&v.score) {
        Ok(())
    } else {
        Err(format!(
            "score must be between 0 and 100 (inclusive), got {}",
            v.score
        ))
    }
}

/// One accepted judge answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgeAnswer {
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
    #[serde(skip)]
    pub usage: Usage,
}

/// Asks `judge` once (sample `sample`).
pub async fn ask(
    judge: &Judge,
    metric: &LlmMetric,
    metric_name: &str,
    system: &str,
    user: &str,
    caller: CallerTag,
    sample: u32,
) -> Result<JudgeAnswer, MetricFailure> {
    let mut request = ChatRequest::user(user)
        .with_system(system)
        .with_caller(caller.with_repeat(sample));
    request.params = metric.params.clone();
    request.timeout = metric.timeout;
    let options = StructuredOptions::default()
        .with_max_repairs(metric.max_retries)
        .with_check(check_verdict);
    match generate_structured::<JudgeVerdict>(judge.model.as_ref(), request, options).await {
        Ok(s) => Ok(JudgeAnswer {
            judge: judge.model_id.clone(),
            sample,
            score: s.value.score,
            evaluator_comment: s.value.evaluator_comment,
            raw: s.raw,
            repairs: s.repairs,
            usage: s.usage,
        }),
        Err(e) => Err(failure(judge, metric, metric_name, &e)),
    }
}

fn failure(judge: &Judge, metric: &LlmMetric, metric_name: &str, e: &LlmError) -> MetricFailure {
    tracing::warn!(metric = metric_name, judge = %judge.model_id, kind = %e.kind, error = %e, "judge call failed");
    MetricFailure {
        metric_name: metric_name.to_string(),
        kind: e.kind.as_str(),
        message: format!("Failed to evaluate after retries: {e}"),
        provider: Some(judge.model.provider().to_string()),
        retries: Some(metric.max_retries),
        raw_output: e.raw_output.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
