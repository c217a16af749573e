//! Member agents: the [`MemberAgent`] interface, what a member returns ([`MemberOutput`]),
//! and building a member from its settings ([`build_member`]) with the checks preflight can
//! run without building anything ([`check_member`]).
//!
//! Types: `plain` (one LLM call, [`llm::LlmMember`]), `web_fetch` (an LLM with a `fetch_url`
//! tool doing real HTTP GETs, [`web_fetch::WebFetchMember`]), `command` (an external program
//! speaking JSON on stdin/stdout, [`command::CommandMember`]), `web_search` and
//! `code_execution` (one LLM call carrying the provider's native tool, [`native`]).

pub(crate) mod command;
pub(crate) mod llm;
pub(crate) mod native;
pub(crate) mod web_fetch;

use crate::context::{AgentDeps, RoundContext};
use crate::error::AgentError;
use mixseek_config::{MemberSettings, MemberType};
use mixseek_core::{MemberStatus, Usage};
use std::path::Path;
use std::sync::Arc;

/// What a member returns for one task. Failures are values, not errors: the leader gets
/// them as tool errors and the round goes on.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberOutput {
    /// How the call ended.
    pub status: MemberStatus,
    /// The answer (`""` on error).
    pub content: String,
    /// The error, when the call failed.
    pub error_message: Option<String>,
    /// Real token usage of the member's LLM calls (or what a command reported).
    pub usage: Usage,
    /// The member's own message history (JSON messages).
    pub messages: Vec<serde_json::Value>,
}

impl MemberOutput {
    /// A `SUCCESS` answer.
    pub fn success(
        content: impl Into<String>,
        usage: Usage,
        messages: Vec<serde_json::Value>,
    ) -> Self {
        Self {
            status: MemberStatus::Success,
            content: content.into(),
            error_message: None,
            usage,
            messages,
        }
    }
    /// An `ERROR` answer carrying `message`.
    pub fn error(
        message: impl Into<String>,
        usage: Usage,
        messages: Vec<serde_json::Value>,
    ) -> Self {
        Self {
            status: MemberStatus::Error,
            content: String::new(),
            error_message: Some(message.into()),
            usage,
            messages,
        }
    }
}

/// A member agent. Built fresh every round; may be called several times (and concurrently)
/// within the round.
#[async_trait::async_trait]
pub trait MemberAgent: Send + Sync {
    /// The member's name (its tool name for the leader).
    fn name(&self) -> &str;
    /// The member's type (`plain`, `web_fetch`, `command`, …).
    fn agent_type(&self) -> &str;
    /// Executes `task` in the round `ctx`. Never panics on bad input; failures come back as
    /// an `ERROR` output.
    async fn execute(&self, task: &str, ctx: &RoundContext) -> MemberOutput;
}

/// The message of a blank task (the original's `EMPTY_TASK`).
pub const EMPTY_TASK: &str = "Task cannot be empty or contain only whitespace";

/// Checks what can be checked without building: the type is supported and, for
/// provider-native types, the tool settings and that the model's provider (and each
/// fallback's) can offer the tool — decided here for the built-in providers; a
/// `[providers.<name>]` provider is checked against its kind when the member is built
/// ([`build_member`]). For preflight.
pub fn check_member(settings: &MemberSettings) -> Result<(), AgentError> {
    let name = settings.name.clone().unwrap_or_else(|| "member".into());
    let unsupported = |message: String, hint: &str| AgentError::Unsupported {
        member: name.clone(),
        message,
        hint: Some(hint.to_string()),
    };
    match settings.agent_type {
        Some(MemberType::Plain | MemberType::WebFetch) => Ok(()),
        Some(MemberType::Command) => {
            if settings
                .command
                .as_ref()
                .is_none_or(|c| c.first().is_none_or(|p| p.trim().is_empty()))
            {
                return Err(unsupported(
                    "type = \"command\" needs a command".into(),
                    "command = [\"python3\", \"agent.py\"]",
                ));
            }
            Ok(())
        }
        Some(t @ (MemberType::WebSearch | MemberType::CodeExecution)) => {
            let tool = native::tool_for(settings, t)?;
            native::check(
                &name,
                t,
                settings.model.as_deref().unwrap_or(""),
                &settings.fallback_models,
                &tool,
            )
        }
        Some(MemberType::Custom) => Err(unsupported(
            "type = \"custom\" (Python plugins) is not supported".into(),
            "write the agent as a program and use type = \"command\" with command = [\"python3\", \"agent.py\"]",
        )),
        None => Err(unsupported(
            "a member needs a type".into(),
            "type = \"plain\"",
        )),
    }
}

/// [`check_member`] plus what needs the registry's `[providers.<name>]` settings: that a
/// configured provider of a `web_search` / `code_execution` member (and of each fallback)
/// has the native tool. For preflight when a registry is at hand (`mixseek exec`).
pub fn check_member_with_registry(
    settings: &MemberSettings,
    registry: &mixseek_llm::ModelRegistry,
) -> Result<(), AgentError> {
    check_member(settings)?;
    if let Some(t) = settings.agent_type.filter(MemberType::is_native_tool) {
        let tool = native::tool_for(settings, t)?;
        native::check_with_registry(
            settings.name.as_deref().unwrap_or("member"),
            t,
            settings.model.as_deref().unwrap_or(""),
            &settings.fallback_models,
            &tool,
            registry,
        )?;
    }
    Ok(())
}

/// Builds a member from its settings. `base_dir` is the folder of the file that defined it
/// (the working directory of a `command` member).
pub fn build_member(
    settings: &MemberSettings,
    deps: &AgentDeps,
    base_dir: Option<&Path>,
) -> Result<Arc<dyn MemberAgent>, AgentError> {
    check_member(settings)?;
    match settings.agent_type {
        Some(MemberType::Command) => Ok(Arc::new(command::CommandMember::new(settings, base_dir)?)),
        Some(MemberType::WebFetch) => Ok(Arc::new(web_fetch::WebFetchMember::new(settings, deps)?)),
        Some(t @ (MemberType::WebSearch | MemberType::CodeExecution)) => {
            check_member_with_registry(settings, &deps.registry)?;
            let tool = native::tool_for(settings, t)?;
            Ok(Arc::new(llm::LlmMember::with_native_tool(
                settings, deps, tool,
            )?))
        }
        _ => Ok(Arc::new(llm::LlmMember::new(settings, deps)?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(toml_src: &str) -> MemberSettings {
        toml::from_str(toml_src).expect("toml")
    }

    #[test]
    fn checks_by_type() {
        assert!(
            check_member(&member(
                "name = \"a\"\ntype = \"plain\"\nmodel = \"mock:x\""
            ))
            .is_ok()
        );
        assert!(
            check_member(&member(
                "name = \"a\"\ntype = \"web_fetch\"\nmodel = \"mock:x\""
            ))
            .is_ok()
        );
        let e = check_member(&member("name = \"a\"\ntype = \"command\"")).expect_err("no command");
        assert!(e.to_string().contains("needs a command"), "{e}");
        let e = check_member(&member("name = \"a\"\ntype = \"custom\"")).expect_err("custom");
        assert!(e.hint().is_some_and(|h| h.contains("type = \"command\"")));
        // An unknown type does not load (the loader reports it with the valid ones).
        assert!(toml::from_str::<MemberSettings>("name = \"a\"\ntype = \"telepathy\"").is_err());
        let e = check_member(&member("name = \"a\"\nmodel = \"mock:x\"")).expect_err("no type");
        assert_eq!(e.to_string(), "member `a`: a member needs a type");
    }
}
