//! `plain` members: one LLM call with the member's instruction (plus the member-phase
//! injection rules: domain context, language) and the task. `web_search` and
//! `code_execution` members are the same call carrying the provider's native tool
//! ([`LlmMember::with_native_tool`], see [`crate::member::native`]).

use crate::context::{AgentDeps, RoundContext};
use crate::error::AgentError;
use crate::history::{answered, started};
use crate::instructions::{default_member_instruction, join_system};
use crate::member::{EMPTY_TASK, MemberAgent, MemberOutput};
use crate::params::{generation_params, request_timeout, with_model_settings};
use mixseek_config::{MemberSettings, MemberType};
use mixseek_core::{MemberStatus, Role, Usage};
use mixseek_llm::{ChatModel, ChatRequest, FinishReason, GenerationParams, Message, NativeTool};
use mixseek_prompt::InjectionPhase;
use std::sync::Arc;
use std::time::Duration;

/// What every LLM-backed member shares: its model, instruction and parameters.
#[derive(Clone)]
pub(crate) struct LlmSetup {
    pub name: String,
    pub agent_type: String,
    pub model: Arc<dyn ChatModel>,
    pub instruction: String,
    pub params: GenerationParams,
    pub timeout: Option<Duration>,
    pub deps: AgentDeps,
    /// Provider-native tools sent with every request (`web_search` / `code_execution`).
    pub native_tools: Vec<NativeTool>,
}

impl LlmSetup {
    pub(crate) fn new(settings: &MemberSettings, deps: &AgentDeps) -> Result<Self, AgentError> {
        let name = settings.name.clone().unwrap_or_else(|| "member".into());
        let member_type = settings.agent_type.unwrap_or(MemberType::Plain);
        let agent_type = member_type.to_string();
        let model_id = settings.model.clone().unwrap_or_default();
        let model = deps
            .registry
            .model_with_fallbacks(&model_id, &settings.fallback_models)
            .map_err(|e| AgentError::Model {
                agent: format!("member `{name}`"),
                model: model_id.clone(),
                source: Box::new(e),
            })?;
        let instruction = match &settings.system_instruction {
            Some(i) => i.0.clone(),
            None => default_member_instruction(member_type).to_string(),
        };
        let (params, timeout) = with_model_settings(
            generation_params(
                settings.temperature,
                settings.max_tokens,
                settings.top_p,
                settings.seed,
                settings.stop_sequences.as_deref(),
            ),
            request_timeout(settings.timeout_seconds),
            &model_id,
            settings.model_settings.as_ref(),
            settings.google_model_settings.as_ref(),
        );
        Ok(Self {
            instruction: join_system(&instruction, settings.system_prompt.as_deref()),
            params,
            timeout,
            name,
            agent_type,
            model,
            deps: deps.clone(),
            native_tools: Vec::new(),
        })
    }

    /// The system prompt and first user message of a task, with the member-phase rules.
    pub(crate) fn prompts(
        &self,
        task: &str,
        ctx: &RoundContext,
    ) -> Result<(Option<String>, String), AgentError> {
        let system = self
            .deps
            .system_prompt(InjectionPhase::Member, &self.instruction, ctx)?;
        let user = self.deps.user_prompt(InjectionPhase::Member, task, ctx)?;
        Ok((system, user))
    }

    pub(crate) fn request(
        &self,
        system: Option<String>,
        messages: Vec<Message>,
        ctx: &RoundContext,
    ) -> ChatRequest {
        ChatRequest {
            system,
            messages,
            params: self.params.clone(),
            native_tools: self.native_tools.clone(),
            timeout: self.timeout,
            caller: ctx.caller(Role::Member),
            ..ChatRequest::default()
        }
    }
}

/// A `plain` member, or (with a native tool) a `web_search` / `code_execution` member.
pub(crate) struct LlmMember {
    setup: LlmSetup,
}

impl LlmMember {
    pub(crate) fn new(settings: &MemberSettings, deps: &AgentDeps) -> Result<Self, AgentError> {
        Ok(Self {
            setup: LlmSetup::new(settings, deps)?,
        })
    }

    /// A member whose call carries the provider-native `tool`. The caller has checked that
    /// the provider can run it ([`crate::member::native::check_with_registry`]).
    pub(crate) fn with_native_tool(
        settings: &MemberSettings,
        deps: &AgentDeps,
        tool: NativeTool,
    ) -> Result<Self, AgentError> {
        let mut setup = LlmSetup::new(settings, deps)?;
        let model = settings.model.as_deref().unwrap_or("");
        if matches!(tool, NativeTool::WebSearch(_))
            && mixseek_core::model_id::provider_of(model) == "grok-responses"
        {
            keep_only_temperature_and_max_tokens(&mut setup);
        }
        setup.native_tools = vec![tool];
        Ok(Self { setup })
    }
}

/// The original builds a `web_search` member of a `grok-responses:` model with xAI's native
/// search tool and forwards only `max_tokens` and `temperature` to it: `top_p`, `seed`,
/// `stop_sequences` and `timeout_seconds` are dropped (the provider's default time limit
/// applies). Same here, with a warning naming what was set and is not sent.
fn keep_only_temperature_and_max_tokens(setup: &mut LlmSetup) {
    let p = &setup.params;
    let dropped: Vec<&str> = [
        ("top_p", p.top_p.is_some()),
        ("seed", p.seed.is_some()),
        ("stop_sequences", !p.stop.is_empty()),
        ("timeout_seconds", setup.timeout.is_some()),
        ("model_settings", !p.extra.is_empty()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
    .collect();
    if !dropped.is_empty() {
        tracing::warn!(member = %setup.name, dropped = %dropped.join(", "), "a web_search member of a grok-responses: model sends only temperature and max_tokens, as the original; the other settings are ignored");
    }
    setup.params = GenerationParams {
        temperature: p.temperature,
        max_tokens: p.max_tokens,
        ..GenerationParams::default()
    };
    setup.timeout = None;
}

/// The output of a final text answer: success, a warning when cut at the token limit, an
/// error when empty.
pub(crate) fn text_output(
    text: Option<&str>,
    finish: &FinishReason,
    usage: Usage,
    messages: Vec<serde_json::Value>,
) -> MemberOutput {
    let text = text.unwrap_or("");
    if text.trim().is_empty() {
        let why = if *finish == FinishReason::Length {
            "the token limit was reached before any text"
        } else {
            "the model returned no text"
        };
        return MemberOutput::error(why, usage, messages);
    }
    let mut out = MemberOutput::success(text, usage, messages);
    if *finish == FinishReason::Length {
        out.status = MemberStatus::Warning;
        out.error_message = Some("the answer was cut at the token limit (max_tokens)".into());
    }
    out
}

#[async_trait::async_trait]
impl MemberAgent for LlmMember {
    fn name(&self) -> &str {
        &self.setup.name
    }
    fn agent_type(&self) -> &str {
        &self.setup.agent_type
    }

    async fn execute(&self, task: &str, ctx: &RoundContext) -> MemberOutput {
        if task.trim().is_empty() {
            return MemberOutput::error(EMPTY_TASK, Usage::default(), Vec::new());
        }
        let (system, user) = match self.setup.prompts(task, ctx) {
            Ok(p) => p,
            Err(e) => return MemberOutput::error(e.to_string(), Usage::default(), Vec::new()),
        };
        let mut history = started(system.as_deref(), &user);
        let user_msg = Message::user(user);
        let request = self.setup.request(system, vec![user_msg], ctx);
        match self.setup.model.chat(&request).await {
            Ok(resp) => {
                answered(
                    &mut history,
                    resp.text.as_deref(),
                    &[],
                    &resp.model,
                    &resp.usage,
                );
                text_output(
                    resp.text.as_deref(),
                    &resp.finish_reason,
                    resp.usage,
                    history.finish(),
                )
            }
            Err(e) => MemberOutput::error(e.to_string(), Usage::default(), history.finish()),
        }
    }
}
