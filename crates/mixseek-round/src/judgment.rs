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
pub const DEFAULT_JUDGMENT_INSTRUCTION: &str = include_str!("../assets/judgment_instruction.txt");

/// LLM-based improvement prospect judgment result
///
/// This model captures the result of LLM-as-a-Judge assessment
/// to determine if another round should be executed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "ImprovementJudgment")]
pub struct ImprovementJudgment {
    /// Whether to proceed to the next round
    #[schemars(title = "Should Continue")]
    pub should_continue: bool,
    /// Detailed reasoning for the judgment
    #[schemars(title = "Reasoning")]
    pub reasoning: String,
    /// Confidence score (0.0-1.0 range)
    #[schemars(title = "Confidence Score", range(min = 0.0, max = 1.0))]
    pub confidence_score: f64,
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

/// What to do when the judgment call fails (`on_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnJudgmentError {
    /// End the team with its best round; exit reason `judgment_failed` (the default).
    #[default]
    Stop,
    /// Play the next round (unless the maximum is reached).
    Continue,
    /// Fail the team, as the original does.
    Fail,
}

impl OnJudgmentError {
    /// From the settings value (`stop`, `continue`, `fail`; anything else ⇒ `stop`, which
    /// validation already reports).
    pub fn parse(s: &str) -> Self {
        match s.trim().to_ascii_lowercase().as_str() {
            "continue" => Self::Continue,
            "fail" => Self::Fail,
            _ => Self::Stop,
        }
    }
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Continue => "continue",
            Self::Fail => "fail",
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JudgmentError {
    /// The judgment LLM failed (after its repairs and retries) — the original's text.
    #[error(
        "Failed to judge improvement prospects after {retries} retries: {source} | Provider: {provider} | Retries: {retries}"
    )]
    Failed {
        provider: String,
        retries: u32,
        #[source]
        source: Box<LlmError>,
    },
    /// `judgment_timeout_seconds` passed.
    #[error(
        "Failed to judge improvement prospects: no answer within {seconds} s (judgment_timeout_seconds) | Provider: {provider}"
    )]
    Timeout { provider: String, seconds: f64 },
    /// The rendered prompt was blank.
    #[error("formatted_prompt cannot be empty")]
    EmptyPrompt,
    /// The judgment prompt could not be rendered (a template or context error).
    #[error("{0}")]
    Prompt(#[source] Box<mixseek_prompt::PromptError>),
    /// The judgment model cannot be used.
    #[error("judgment: cannot use model `{model}`: {source}")]
    Model {
        model: String,
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
    pub fn is_call_failure(&self) -> bool {
        matches!(
            self,
            JudgmentError::Failed { .. } | JudgmentError::Timeout { .. }
        )
    }
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
pub struct JudgmentAnswer {
    pub judgment: Judgment,
    pub usage: Usage,
    /// The user prompt that was sent.
    pub prompt: String,
}

/// The judgment LLM client.
#[derive(Clone)]
pub struct JudgmentClient {
    settings: JudgmentSettings,
    model: Arc<dyn ChatModel>,
    prompts: PromptBuilder,
    instruction: String,
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
pub fn judgment_instruction(configured: Option<&str>) -> String {
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
    pub fn with_model(
        settings: &JudgmentSettings,
        model: Arc<dyn ChatModel>,
        prompts: PromptBuilder,
    ) -> Self {
        Self {
            instruction: judgment_instruction(settings.system_instruction.as_deref()),
            settings: settings.clone(),
            model,
            prompts,
        }
    }

    pub fn settings(&self) -> &JudgmentSettings {
        &self.settings
    }

    fn provider(&self) -> String {
        self.settings
            .model
            .split_once(':')
            .map_or(self.settings.model.as_str(), |(p, _)| p)
            .to_string()
    }

    /// Judges the team's rounds in `ctx` (its `round_history` includes the round just played),
    /// within `timeout` as a whole when given.
    pub async fn judge(
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
        let request = ChatRequest {
            system: (!system.trim().is_empty()).then_some(system),
            messages: vec![Message::user(prompt.clone())],
            params: GenerationParams {
                temperature: Some(s.temperature),
                max_tokens: s.max_tokens.map(|t| u32::try_from(t).unwrap_or(u32::MAX)),
                top_p: s.top_p,
                seed: s.seed.map(|x| x as u64),
                stop: s.stop_sequences.clone().unwrap_or_default(),
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
        let options = StructuredOptions::<ImprovementJudgment>::default()
            .with_max_repairs(s.max_retries)
            .with_check(|j| {
                if (0.0..=1.0).contains(&j.confidence_score) {
                    Ok(())
                } else {
                    Err(format!(
                        "confidence_score must be between 0.0 and 1.0, got {}",
                        j.confidence_score
                    ))
                }
            });
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

    #[test]
    fn policies_parse() {
        assert_eq!(
            OnJudgmentError::parse("continue"),
            OnJudgmentError::Continue
        );
        assert_eq!(OnJudgmentError::parse("FAIL"), OnJudgmentError::Fail);
        assert_eq!(OnJudgmentError::parse("stop"), OnJudgmentError::Stop);
        assert_eq!(OnJudgmentError::default().as_str(), "stop");
    }
}
