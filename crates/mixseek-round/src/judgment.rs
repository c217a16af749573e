//! The judgment client: asks the judgment LLM whether a team should play another round.
//!
//! System prompt: the configured `system_instruction` (unset or `""` ⇒ the built-in default,
//! Appendix A.2) after dedent and trim, then the judgment-phase injection rules (domain
//! context, language). User message: the rendered `judgment_user_prompt` (with the
//! user-side rules). The answer is the structured `ImprovementJudgment` `{should_continue,
//! reasoning, confidence_score (0..=1)}` through the LLM layer's parse → validate → check →
//! repair loop, `max_retries` repairs. The call is bounded by `judgment_timeout_seconds` as a
//! whole and `timeout_seconds` per request.

use crate::dedent::dedent_trim;
use mixseek_config::JudgmentSettings;
use mixseek_core::{Judgment, Role, Usage};
use mixseek_llm::{
    CallerTag, ChatModel, ChatRequest, GenerationParams, LlmError, Message, ModelRegistry,
    StructuredOptions, generate_structured,
};
use mixseek_prompt::{InjectionPhase, InjectionSide, PromptBuilder, PromptContext, TemplateKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// The built-in judgment instruction (effective text: 381 characters, no trailing newline).
pub(crate) const DEFAULT_JUDGMENT_INSTRUCTION: &str =
    include_str!("../assets/judgment_instruction.txt");

/// LLM-based improvement prospect judgment result
///
/// This model captures the result of LLM-as-a-Judge assessment
/// to determine if another round should be executed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "ImprovementJudgment")]
pub(crate) struct ImprovementJudgment {
    /// Whether to proceed to the next round
    #[schemars(title = "Should Continue")]
    pub(crate) should_continue: bool,
    /// Detailed reasoning for the judgment
    #[schemars(title = "Reasoning")]
    pub(crate) reasoning: String,
    /// Confidence score (0.0-1.0 range)
    #[schemars(title = "Confidence Score", range(min = 0.0, max = 1.0))]
    pub(crate) confidence_score: f64,
}

impl From<ImprovementJudgment> for Judgment {
    fn from(j: ImprovementJudgment) -> Self {
        Judgment {
            should_continue: j.should_continue,
            reasoning: j.reasoning,
            confidence_score: j.confidence_score,
        }
    }
}

/// The check run on every parsed judgment: `confidence_score` is a finite number in
/// `0.0..=1.0` (inclusive); nothing is clamped, an answer outside is repaired or fails. (JSON
/// has no `NaN` or infinity, and `1e999` does not parse: such answers fail as invalid JSON
/// before this check.)
pub(crate) fn check_judgment(j: &ImprovementJudgment) -> Result<(), String> {
    let c = j.confidence_score;
    if c.is_finite() && (0.0..=1.0).contains(&c) {
        Ok(())
    } else {
        Err(format!(
            "confidence_score must be between 0.0 and 1.0, got {c}"
        ))
    }
}

/// Characters of a rejected judgment answer quoted in [`JudgmentError::Failed`].
const ANSWER_SHOWN: usize = 300;

/// `; the model answered: {…}` for a failure on the answer itself (invalid JSON, wrong
/// shape, a confidence outside 0..=1), so the recorded reasoning shows what was said; the
/// whole answer stays in the source error's `raw_output`.
fn answered(e: &LlmError) -> String {
    use mixseek_llm::ErrorKind;
    match (&e.kind, e.raw_output.as_deref()) {
        (ErrorKind::Parse | ErrorKind::Schema | ErrorKind::Check, Some(raw)) => {
            let raw = raw.trim();
            let shown = match raw.char_indices().nth(ANSWER_SHOWN) {
                Some((i, _)) => format!("{}…", &raw[..i]),
                None => raw.to_string(),
            };
            format!("; the model answered: {shown}")
        }
        _ => String::new(),
    }
}

/// Why the judgment gave no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JudgmentError {
    /// The judgment LLM failed (after its repairs and retries) — the original's text.
    #[error(
        "Failed to judge improvement prospects after {retries} retries: {source}{} | Provider: {provider} | Retries: {retries}",
        answered(source)
    )]
    Failed {
        /// The judgment model's provider.
        provider: String,
        /// Repairs and retries made.
        retries: u32,
        /// The LLM error.
        #[source]
        source: Box<LlmError>,
    },
    /// `judgment_timeout_seconds` passed.
    #[error(
        "Failed to judge improvement prospects: no answer within {seconds} s (judgment_timeout_seconds) | Provider: {provider}"
    )]
    Timeout {
        /// The judgment model's provider.
        provider: String,
        /// The time limit, in seconds.
        seconds: f64,
    },
    /// The rendered prompt was blank.
    #[error("formatted_prompt cannot be empty")]
    EmptyPrompt,
    /// The judgment prompt could not be rendered (a template or context error).
    #[error("{0}")]
    Prompt(#[source] Box<mixseek_prompt::PromptError>),
    /// The judgment model cannot be used.
    #[error("judgment: cannot use model `{model}`: {source}")]
    Model {
        /// The model id.
        model: String,
        /// The LLM error.
        #[source]
        source: Box<LlmError>,
    },
}

impl From<mixseek_prompt::PromptError> for JudgmentError {
    fn from(e: mixseek_prompt::PromptError) -> Self {
        JudgmentError::Prompt(Box::new(e))
    }
}

impl JudgmentError {
    /// Whether `on_error` decides what happens (a failed or timed-out call); prompt and
    /// configuration errors always fail the team.
    pub(crate) fn is_call_failure(&self) -> bool {
        matches!(
            self,
            JudgmentError::Failed { .. } | JudgmentError::Timeout { .. }
        )
    }
    /// Whether a retry may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            JudgmentError::Failed { source, .. } => source.is_transient(),
            JudgmentError::Timeout { .. } => true,
            _ => false,
        }
    }
}

/// A judgment with what it cost.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JudgmentAnswer {
    /// The judgment.
    pub(crate) judgment: Judgment,
    /// Usage of the call.
    pub(crate) usage: Usage,
    /// The user prompt that was sent.
    pub(crate) prompt: String,
}

/// The judgment LLM client.
#[derive(Clone)]
pub struct JudgmentClient {
    settings: JudgmentSettings,
    model: Arc<dyn ChatModel>,
    prompts: PromptBuilder,
    instruction: String,
    /// `model_settings` / `google_model_settings`, merged for the judgment's model.
    model_settings: Option<serde_json::Map<String, serde_json::Value>>,
}

impl std::fmt::Debug for JudgmentClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JudgmentClient")
            .field("model", &self.settings.model)
            .finish_non_exhaustive()
    }
}

/// The effective judgment instruction: configured (non-empty) or the default, dedented and
/// trimmed.
pub(crate) fn judgment_instruction(configured: Option<&str>) -> String {
    match configured {
        Some(s) if !s.is_empty() => dedent_trim(s),
        _ => dedent_trim(DEFAULT_JUDGMENT_INSTRUCTION),
    }
}

impl JudgmentClient {
    /// A client for `settings`, its model (with `fallback_models`) from `registry`.
    pub fn new(
        settings: &JudgmentSettings,
        registry: &ModelRegistry,
        prompts: PromptBuilder,
    ) -> Result<Self, JudgmentError> {
        let model = registry
            .model_with_fallbacks(&settings.model, &settings.fallback_models)
            .map_err(|e| JudgmentError::Model {
                model: settings.model.clone(),
                source: Box::new(e),
            })?;
        Ok(Self::with_model(settings, model, prompts))
    }

    /// A client with an already built model.
    pub(crate) fn with_model(
        settings: &JudgmentSettings,
        model: Arc<dyn ChatModel>,
        prompts: PromptBuilder,
    ) -> Self {
        let model_settings = (settings.model_settings.is_some()
            || settings.google_model_settings.is_some())
        .then(|| {
            mixseek_llm::merged_model_settings(
                &settings.model,
                settings.model_settings.as_ref(),
                settings.google_model_settings.as_ref(),
            )
        });
        Self {
            instruction: judgment_instruction(settings.system_instruction.as_deref()),
            settings: settings.clone(),
            model,
            prompts,
            model_settings,
        }
    }

    /// The judgment settings.
    pub fn settings(&self) -> &JudgmentSettings {
        &self.settings
    }

    fn provider(&self) -> String {
        mixseek_core::model_id::provider_of(&self.settings.model).to_string()
    }

    /// Judges the team's rounds in `ctx` (its `round_history` includes the round just played),
    /// within `timeout` as a whole when given.
    pub(crate) async fn judge(
        &self,
        ctx: &PromptContext,
        timeout: Option<Duration>,
    ) -> Result<JudgmentAnswer, JudgmentError> {
        let rendered = self
            .prompts
            .render_with_injections(TemplateKind::Judgment, ctx)?;
        let (prompt, volatile) = (rendered.prompt, rendered.volatile);
        if prompt.trim().is_empty() {
            return Err(JudgmentError::EmptyPrompt);
        }
        let system = self
            .prompts
            .inject(
                InjectionPhase::Judgment,
                InjectionSide::System,
                &self.instruction,
                ctx,
            )?
            .prompt;
        let s = &self.settings;
        let mut request = ChatRequest {
            system: (!system.trim().is_empty()).then_some(system),
            messages: vec![Message::user(prompt.clone())],
            params: GenerationParams {
                temperature: Some(s.temperature),
                max_tokens: s.max_tokens.map(|t| u32::try_from(t).unwrap_or(u32::MAX)),
                top_p: s.top_p,
                seed: s.seed.map(|x| x as u64),
                stop: s.stop_sequences.clone().unwrap_or_default(),
                extra: serde_json::Map::new(),
            },
            timeout: (s.timeout_seconds > 0).then(|| Duration::from_secs(s.timeout_seconds)),
            caller: CallerTag {
                execution_id: ctx.execution_id.clone(),
                team_id: Some(ctx.team_id.clone()),
                round_number: Some(ctx.round_number),
                role: Role::Judgment,
                repeat: 0,
            },
            cache_volatile: volatile,
            ..ChatRequest::default()
        };
        if let Some(merged) = &self.model_settings {
            // temperature and timeout are always set: those keys of the tables have no effect
            mixseek_llm::apply_model_settings(
                &mut request.params,
                &mut request.timeout,
                merged.clone(),
            );
        }
        let options = StructuredOptions::<ImprovementJudgment>::default()
            .with_max_repairs(s.max_retries)
            .with_check(check_judgment);
        let call = generate_structured(self.model.as_ref(), request, options);
        let result = match timeout {
            Some(t) => match tokio::time::timeout(t, call).await {
                Ok(r) => r,
                Err(_) => {
                    return Err(JudgmentError::Timeout {
                        provider: self.provider(),
                        seconds: t.as_secs_f64(),
                    });
                }
            },
            None => call.await,
        };
        match result {
            Ok(out) => Ok(JudgmentAnswer {
                judgment: out.value.into(),
                usage: out.usage,
                prompt,
            }),
            Err(e) => Err(JudgmentError::Failed {
                provider: self.provider(),
                retries: s.max_retries,
                source: Box::new(e),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn default_instruction_is_the_original_effective_text() {
        let d = judgment_instruction(None);
        assert_eq!(d.chars().count(), 381);
        assert_eq!(d.len(), 947);
        assert!(d.starts_with(
            "あなたは複数ラウンドにわたるチームの提出物の改善を分析する専門的な判定者です。"
        ));
        assert!(d.ends_with(
            "直近のスコアが低くても、数ラウンド先での改善が見込まれる場合は、継続を推奨"
        ));
        assert_eq!(judgment_instruction(Some("")), d);
        assert_eq!(
            judgment_instruction(Some("\n    Judge.\n      Carefully.\n")),
            "Judge.\n  Carefully."
        );
    }

    #[test]
    fn schema_has_the_original_fields_and_bounds() {
        let s = mixseek_llm::schema_of::<ImprovementJudgment>();
        assert_eq!(s["title"], "ImprovementJudgment");
        assert_eq!(
            s["required"],
            serde_json::json!(["should_continue", "reasoning", "confidence_score"])
        );
        assert_eq!(s["properties"]["confidence_score"]["minimum"], 0.0);
        assert_eq!(s["properties"]["confidence_score"]["maximum"], 1.0);
        assert_eq!(
            s["properties"]["should_continue"]["description"],
            "Whether to proceed to the next round"
        );
        assert_eq!(s["properties"]["reasoning"]["title"], "Reasoning");
    }

    fn judgment(confidence_score: f64) -> ImprovementJudgment {
        ImprovementJudgment {
            should_continue: true,
            reasoning: String::new(),
            confidence_score,
        }
    }

    #[test]
    fn confidence_outside_0_to_1_or_not_finite_is_rejected() {
        assert_eq!(check_judgment(&judgment(0.0)), Ok(()));
        assert_eq!(check_judgment(&judgment(1.0)), Ok(()));
        assert_eq!(
            check_judgment(&judgment(1.5)),
            Err("confidence_score must be between 0.0 and 1.0, got 1.5".into())
        );
        for c in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.01] {
            assert!(check_judgment(&judgment(c)).is_err(), "{c}");
        }
    }

    #[test]
    fn a_failure_on_the_answer_quotes_it() {
        let e = LlmError::new(
            mixseek_llm::ErrorKind::Parse,
            "openai",
            "judge",
            "not valid JSON: number out of range",
        )
        .with_raw_output("{\"should_continue\": true, \"confidence_score\": 1e999}");
        let failed = JudgmentError::Failed {
            provider: "openai".into(),
            retries: 0,
            source: Box::new(e),
        };
        assert_eq!(
            failed.to_string(),
            "Failed to judge improvement prospects after 0 retries: [openai] judge: parse error: not valid JSON: number out of range; the model answered: {\"should_continue\": true, \"confidence_score\": 1e999} | Provider: openai | Retries: 0"
        );
        let e = LlmError::new(mixseek_llm::ErrorKind::Server, "openai", "judge", "boom")
            .with_raw_output("ignored");
        let failed = JudgmentError::Failed {
            provider: "openai".into(),
            retries: 0,
            source: Box::new(e),
        };
        assert!(!failed.to_string().contains("answered"), "{failed}");
    }

    /// A judgment answer through the real steps of the structured call: tolerant JSON
    /// parsing, the output type, then the check.
    fn accepted(raw: &str) -> Option<f64> {
        let json = mixseek_llm::parse_json(raw).ok()?;
        let j: ImprovementJudgment = serde_json::from_value(json).ok()?;
        check_judgment(&j).ok()?;
        Some(j.confidence_score)
    }

    proptest! {
        #[test]
        fn the_check_accepts_exactly_finite_confidences_from_0_to_1(c in any::<f64>()) {
            prop_assert_eq!(
                check_judgment(&judgment(c)).is_ok(),
                c.is_finite() && (0.0..=1.0).contains(&c)
            );
        }

        #[test]
        fn no_answer_yields_a_non_finite_or_out_of_range_confidence(
            raw in "\\PC{0,80}",
            token in prop_oneof![
                any::<f64>().prop_map(|x| x.to_string()),
                (any::<f64>(), -400i32..400).prop_map(|(m, e)| format!("{m}e{e}")),
                prop::sample::select(
                    ["NaN", "Infinity", "-Infinity", "1e999", "-0", "1.0000000000000002", "\"0.5\""]
                        .map(str::to_string)
                        .to_vec()
                ),
            ],
        ) {
            for text in [
                raw,
                format!("{{\"should_continue\": false, \"reasoning\": \"r\", \"confidence_score\": {token}}}"),
            ] {
                if let Some(c) = accepted(&text) {
                    prop_assert!(c.is_finite() && (0.0..=1.0).contains(&c), "{text} gave {c}");
                }
            }
        }
    }
}
