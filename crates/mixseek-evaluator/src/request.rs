//! [`EvaluationRequest`]: what to evaluate, validated and trimmed with the original's rules
//! and messages.

use mixseek_config::is_blank;
use mixseek_core::{Attachment, ExecutionId, TeamId};
use mixseek_prompt::{PromptContext, py_trim};
use std::sync::Arc;

/// The team id the original uses for a standalone `mixseek evaluate`.
pub(crate) const STANDALONE_TEAM_ID: &str = "standalone-evaluation";

/// One submission to evaluate, with the context the prompts and command metrics see.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EvaluationRequest {
    /// The original user prompt (the original's `user_query`).
    pub user_prompt: String,
    /// The submission (the leader's output).
    pub submission: String,
    /// The execution (for command metrics and call tags).
    pub execution_id: Option<ExecutionId>,
    /// The team (for command metrics and call tags).
    pub team_id: Option<TeamId>,
    /// The team's display name (for the prompts).
    pub team_name: Option<String>,
    /// ≥ 1 when given.
    pub round_number: Option<u32>,
    /// Carried into the judges' system prompts by the `domain_context` injection rule.
    pub domain_context: Option<String>,
    /// Answer language for the `language_preference` rule (`ja`, `en`, …; `auto` = none).
    pub language: Option<String>,
    /// Input of the `system_prompt_suffix` injection rule.
    pub system_prompt_suffix: Option<String>,
    /// Input of the `prompt_suffix` injection rule.
    pub prompt_suffix: Option<String>,
    /// The documents attached to the task (default: none): the `attachments` of the
    /// evaluator prompt, which the default template shows in `<attachments>` after
    /// `<user_task>`.
    pub attachments: Arc<[Attachment]>,
}

impl EvaluationRequest {
    /// A request with only the prompt and the submission.
    pub fn new(user_prompt: impl Into<String>, submission: impl Into<String>) -> Self {
        Self {
            user_prompt: user_prompt.into(),
            submission: submission.into(),
            ..Self::default()
        }
    }

    /// The request with `attachments` (a `Vec<Attachment>` or an already shared
    /// `Arc<[Attachment]>`).
    pub fn with_attachments(mut self, attachments: impl Into<Arc<[Attachment]>>) -> Self {
        self.attachments = attachments.into();
        self
    }

    /// The request with `user_prompt`, `submission` and the ids trimmed, or the original's
    /// message for the first invalid field.
    pub fn validated(&self) -> Result<Self, String> {
        if is_blank(&self.user_prompt) {
            return Err("User query cannot be empty or whitespace-only. Please provide a valid query for evaluation.".into());
        }
        if is_blank(&self.submission) {
            return Err(
                "AI response cannot be empty or whitespace-only. Cannot evaluate empty responses."
                    .into(),
            );
        }
        if self
            .execution_id
            .as_ref()
            .is_some_and(|id| is_blank(id.as_str()))
        {
            return Err("Execution ID cannot be empty or whitespace-only when provided".into());
        }
        if self
            .team_id
            .as_ref()
            .is_some_and(|id| is_blank(id.as_str()))
        {
            return Err("Team ID cannot be empty or whitespace-only when provided".into());
        }
        if self.round_number == Some(0) {
            return Err("round_number must be >= 1 when provided".into());
        }
        Ok(Self {
            user_prompt: py_trim(&self.user_prompt).to_string(),
            submission: py_trim(&self.submission).to_string(),
            execution_id: self
                .execution_id
                .as_ref()
                .map(|id| py_trim(id.as_str()).into()),
            team_id: self.team_id.as_ref().map(|id| py_trim(id.as_str()).into()),
            ..self.clone()
        })
    }

    /// The prompt builder's view of the request.
    pub(crate) fn prompt_context(&self) -> PromptContext {
        PromptContext {
            user_prompt: self.user_prompt.clone(),
            round_number: self.round_number.unwrap_or(0),
            team_id: self
                .team_id
                .as_ref()
                .map(TeamId::to_string)
                .unwrap_or_default(),
            team_name: self.team_name.clone().unwrap_or_default(),
            execution_id: self.execution_id.as_ref().map(ExecutionId::to_string),
            submission: Some(self.submission.clone()),
            domain_context: self.domain_context.clone(),
            language: self.language.clone(),
            system_prompt_suffix: self.system_prompt_suffix.clone(),
            prompt_suffix: self.prompt_suffix.clone(),
            attachments: self.attachments.clone(),
            ..PromptContext::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_original_rules_and_messages() {
        let ok = EvaluationRequest::new("  q \n", "\u{3000}s ");
        let v = ok.validated().expect("valid");
        assert_eq!((v.user_prompt.as_str(), v.submission.as_str()), ("q", "s"));
        let cases: [(EvaluationRequest, &str); 5] = [
            (
                EvaluationRequest::new(" ", "s"),
                "User query cannot be empty or whitespace-only. Please provide a valid query for evaluation.",
            ),
            (
                EvaluationRequest::new("q", "\u{1f}"),
                "AI response cannot be empty or whitespace-only. Cannot evaluate empty responses.",
            ),
            (
                EvaluationRequest {
                    execution_id: Some(" ".into()),
                    ..EvaluationRequest::new("q", "s")
                },
                "Execution ID cannot be empty or whitespace-only when provided",
            ),
            (
                EvaluationRequest {
                    team_id: Some("".into()),
                    ..EvaluationRequest::new("q", "s")
                },
                "Team ID cannot be empty or whitespace-only when provided",
            ),
            (
                EvaluationRequest {
                    round_number: Some(0),
                    ..EvaluationRequest::new("q", "s")
                },
                "round_number must be >= 1 when provided",
            ),
        ];
        for (req, msg) in cases {
            assert_eq!(req.validated(), Err(msg.to_string()));
        }
        let v = EvaluationRequest {
            team_id: Some(" t1 ".into()),
            ..EvaluationRequest::new("q", "s")
        }
        .validated()
        .expect("valid");
        assert_eq!(v.team_id.as_ref().map(TeamId::as_str), Some("t1"));
    }

    #[test]
    fn attachments_reach_the_prompt_context() {
        let a = Attachment {
            name: "a.md".into(),
            media_type: "text/markdown".into(),
            size_bytes: 3,
            sha256: "ab".into(),
            text: "# A".into(),
            truncated: false,
        };
        assert!(EvaluationRequest::new("q", "s").attachments.is_empty());
        let v = EvaluationRequest::new(" q ", "s")
            .with_attachments(vec![a.clone()])
            .validated()
            .expect("valid");
        assert_eq!(v.prompt_context().attachments.as_ref(), [a]);
    }
}
