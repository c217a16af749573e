//! [`RoundContext`]: what every agent of one team round knows about the run — execution id,
//! team, round number, the original user prompt, domain context and language — and
//! [`AgentDeps`]: the shared services agents are built from.

use crate::error::AgentError;
use mixseek_core::Role;
use mixseek_llm::{CallerTag, ModelRegistry};
use mixseek_prompt::{InjectionPhase, InjectionSide, PromptBuilder, PromptContext};
use std::sync::Arc;

/// The run context of one team round. Built from the round's [`PromptContext`] (the one the
/// team prompt is rendered from), so injection rules see the same variables in every phase.
#[derive(Debug, Clone)]
pub struct RoundContext {
    /// The round's prompt context: user prompt, round number, team, execution id, history,
    /// ranking, domain context, language.
    pub prompt: PromptContext,
    /// Parts of the team prompt that change from run to run (its rendered
    /// `current_datetime`): the leader's requests pass them on to the LLM cache
    /// (`ChatRequest::cache_volatile`). Members get none: their task is the leader's output,
    /// which a rerun takes from the cache unchanged.
    pub cache_volatile: Vec<String>,
}

impl RoundContext {
    /// The context of the round `prompt` describes, with no volatile parts.
    pub fn new(prompt: PromptContext) -> Self {
        Self {
            prompt,
            cache_volatile: Vec::new(),
        }
    }
    /// See [`RoundContext::cache_volatile`].
    pub fn with_cache_volatile(mut self, volatile: Vec<String>) -> Self {
        self.cache_volatile = volatile;
        self
    }
    /// The execution id (empty outside an execution).
    pub fn execution_id(&self) -> &str {
        self.prompt.execution_id.as_deref().unwrap_or("")
    }
    /// The team id.
    pub fn team_id(&self) -> &str {
        &self.prompt.team_id
    }
    /// The team's display name.
    pub fn team_name(&self) -> &str {
        &self.prompt.team_name
    }
    /// The round number, from 1.
    pub fn round_number(&self) -> u32 {
        self.prompt.round_number
    }

    /// The caller tag of an LLM call made in this round by `role`.
    pub fn caller(&self, role: Role) -> CallerTag {
        CallerTag::run(
            self.execution_id(),
            self.team_id(),
            self.round_number(),
            role,
        )
    }

    /// The `context` object a member receives (the original's `{execution_id, team_id,
    /// round_number}` plus the team name, domain context and language).
    pub(crate) fn member_context_json(&self) -> serde_json::Value {
        serde_json::json!({
            "execution_id": self.execution_id(),
            "team_id": self.team_id(),
            "team_name": self.team_name(),
            "round_number": self.round_number(),
            "domain_context": self.prompt.domain_context,
            "language": self.prompt.language,
        })
    }
}

/// Shared services every agent is built from.
#[derive(Clone)]
pub struct AgentDeps {
    /// The models agents call.
    pub registry: Arc<ModelRegistry>,
    /// Applies the injection rules (domain context, language, suffixes) of the team and
    /// member phases.
    pub prompts: PromptBuilder,
}

impl std::fmt::Debug for AgentDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentDeps").finish_non_exhaustive()
    }
}

impl AgentDeps {
    /// Services from a registry and a prompt builder.
    pub fn new(registry: Arc<ModelRegistry>, prompts: PromptBuilder) -> Self {
        Self { registry, prompts }
    }

    /// `base` with the system-side injection rules of `phase` applied; `None` when the result
    /// is empty.
    pub fn system_prompt(
        &self,
        phase: InjectionPhase,
        base: &str,
        ctx: &RoundContext,
    ) -> Result<Option<String>, AgentError> {
        let injected = self
            .prompts
            .inject(phase, InjectionSide::System, base, &ctx.prompt)?;
        Ok((!injected.prompt.trim().is_empty()).then_some(injected.prompt))
    }

    /// `base` with the user-side injection rules of `phase` applied.
    pub fn user_prompt(
        &self,
        phase: InjectionPhase,
        base: &str,
        ctx: &RoundContext,
    ) -> Result<String, AgentError> {
        Ok(self
            .prompts
            .inject(phase, InjectionSide::User, base, &ctx.prompt)?
            .prompt)
    }
}
