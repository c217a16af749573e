//! [`AgentError`]: why a team's agents could not be built, why the leader's run failed, or
//! why a workflow step failed.
//! Member failures are not errors: they become `ERROR` submissions and tool errors the
//! leader sees.

use mixseek_llm::LlmError;

/// Why a team's agents could not be built or its leader's run failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AgentError {
    /// A member (or the leader) cannot be built from its settings: unsupported type, a
    /// provider-native tool the provider or the LLM layer cannot offer, a bad command.
    #[error("member `{member}`: {message}")]
    Unsupported {
        /// The member's name.
        member: String,
        /// What is wrong.
        message: String,
        /// What to do instead.
        hint: Option<String>,
    },

    /// The model of an agent cannot be used (unknown provider, missing API key, bad id).
    #[error("{agent}: cannot use model `{model}`: {source}")]
    Model {
        /// The agent (`leader` or a member's name).
        agent: String,
        /// The model id.
        model: String,
        /// The LLM layer's error.
        #[source]
        source: Box<LlmError>,
    },

    /// The leader's LLM call failed.
    #[error("leader call failed: {0}")]
    Leader(#[source] Box<LlmError>),

    /// The leader kept sending invalid calls of one tool.
    #[error("Tool '{tool}' exceeded max retries count of {max_retries}: {last_error}")]
    ToolRetries {
        /// The tool.
        tool: String,
        /// The invalid calls allowed.
        max_retries: u32,
        /// Why the last call was invalid.
        last_error: String,
    },

    /// The leader answered without any text.
    #[error("the leader gave no final answer: {0}")]
    NoAnswer(String),

    /// A workflow step failed: an executor could not be built, or a function executor ended
    /// `ERROR` (the original's `WorkflowStepFailedError`).
    #[error(
        "WorkflowStepFailedError: Workflow step '{step}' failed at executor '{executor}': {message}"
    )]
    WorkflowStep {
        /// The step's id.
        step: String,
        /// The executor's name.
        executor: String,
        /// What went wrong.
        message: String,
    },

    /// An injection rule or context problem while building a prompt.
    #[error("prompt error: {0}")]
    Prompt(#[source] Box<mixseek_prompt::PromptError>),
}

impl From<mixseek_prompt::PromptError> for AgentError {
    fn from(e: mixseek_prompt::PromptError) -> Self {
        AgentError::Prompt(Box::new(e))
    }
}

impl AgentError {
    /// The hint to show with the error, when there is one.
    pub fn hint(&self) -> Option<&str> {
        match self {
            AgentError::Unsupported { hint, .. } => hint.as_deref(),
            _ => None,
        }
    }

    /// Whether running the same round again may succeed (a transient LLM failure).
    pub fn is_transient(&self) -> bool {
        match self {
            AgentError::Leader(e) => e.is_transient(),
            _ => false,
        }
    }
}
