//! The variables each template kind sees (what `mixseek prompt vars` lists) and how their
//! values are computed from a [`PromptContext`].

use crate::attachments::attachments_value;
use crate::clock::format_current_datetime;
use crate::context::{PromptContext, py_trim};
use crate::error::{PromptError, TemplateKind};
use crate::formatters::{
    effective_ranking, format_position_message, format_ranking_table, format_submission_history,
    position_in,
};
use crate::tags::TagGuard;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use minijinja::Value;

/// A template variable and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarInfo {
    /// The name templates use.
    pub name: &'static str,
    /// What it holds (shown by `mixseek prompt vars`).
    pub description: &'static str,
}

const fn v(name: &'static str, description: &'static str) -> VarInfo {
    VarInfo { name, description }
}

/// Texts neutralized like the other values (`tags.rs`); `xml_attr` for attributes.
const ATTACHMENTS_DESCRIPTION: &str = "the documents attached to the task, a list of {name, media_type, \
     size_bytes, sha256, text, truncated} (empty when none); the default templates show them in \
     <attachments> after <user_task>";

const ROUND_VARS: &[VarInfo] = &[
    v(
        "user_prompt",
        "the original user prompt (as given, not trimmed)",
    ),
    v("round_number", "the current round number (integer)"),
    v(
        "submission_history",
        "the team's completed rounds: score, score details (JSON) and submission of each",
    ),
    v(
        "ranking_table",
        "the execution's ranking (from round 2, when a store is present)",
    ),
    v(
        "team_position_message",
        "the team's position on the ranking, as a sentence",
    ),
    v(
        "current_datetime",
        "the current date and time, ISO 8601 with offset",
    ),
    v("team_id", "the team's id"),
    v("team_name", "the team's name"),
    v("execution_id", "the execution's id (\"\" when unknown)"),
    v("domain_context", "the domain context (\"\" when unset)"),
    v("language", "the answer language (\"\" when unset)"),
    v("attachments", ATTACHMENTS_DESCRIPTION),
];

const EVALUATOR_VARS: &[VarInfo] = &[
    v("user_prompt", "the user query (trimmed)"),
    v("user_query", "the same as user_prompt"),
    v("submission", "the submission being evaluated (trimmed)"),
    v(
        "current_datetime",
        "the current date and time, ISO 8601 with offset",
    ),
    v("team_id", "the team's id (\"\" when unknown)"),
    v("team_name", "the team's name (\"\" when unknown)"),
    v("execution_id", "the execution's id (\"\" when unknown)"),
    v("domain_context", "the domain context (\"\" when unset)"),
    v("language", "the answer language (\"\" when unset)"),
    v("attachments", ATTACHMENTS_DESCRIPTION),
];

/// Extra variables of injection-rule conditions and texts (besides the phase's variables:
/// the team prompt's for `team` and `member`, the evaluator prompt's for `evaluator`, the
/// judgment prompt's for `judgment`).
pub const INJECTION_VARS: &[VarInfo] = &[
    v("phase", "team, member, evaluator or judgment"),
    v("side", "system or user"),
    v(
        "system_prompt_suffix",
        "the configured system prompt suffix (\"\" when unset)",
    ),
    v(
        "prompt_suffix",
        "the configured user prompt suffix (\"\" when unset)",
    ),
];

/// The variables of a template kind, in a stable order.
pub fn template_variables(kind: TemplateKind) -> &'static [VarInfo] {
    match kind {
        TemplateKind::Team | TemplateKind::Judgment => ROUND_VARS,
        TemplateKind::Evaluator => EVALUATOR_VARS,
    }
}

/// The variable names of a template kind.
pub(crate) fn variable_names(kind: TemplateKind) -> Vec<&'static str> {
    template_variables(kind).iter().map(|v| v.name).collect()
}

fn opt(s: &Option<String>) -> Value {
    Value::from(s.as_deref().unwrap_or(""))
}

/// The context checks of `kind` (what [`compute`] runs first).
pub(crate) fn validate(kind: TemplateKind, ctx: &PromptContext) -> Result<(), PromptError> {
    match kind {
        TemplateKind::Team | TemplateKind::Judgment => ctx.validate_round(),
        TemplateKind::Evaluator => ctx.validate_evaluator(),
    }
}

/// The variables of `kind` for `ctx` at `now` in `tz`, validating the context first. The
/// values that come from outside the configuration (the user prompt, the submissions and the
/// judges' comments, team names in the ranking, the attachments' texts) are neutralized by
/// `guard`, the tag guard of the template in use (see `tags.rs`).
pub(crate) fn compute(
    kind: TemplateKind,
    ctx: &PromptContext,
    now: DateTime<Utc>,
    tz: Tz,
    guard: &TagGuard,
) -> Result<Vec<(&'static str, Value)>, PromptError> {
    let current_datetime = format_current_datetime(now, tz);
    match kind {
        TemplateKind::Team | TemplateKind::Judgment => {
            ctx.validate_round()?;
            let ranking =
                effective_ranking(ctx.round_number, ctx.ranking.as_deref().map(Vec::as_slice));
            let (position, total) = position_in(ranking, &ctx.team_id);
            Ok(vec![
                (
                    "user_prompt",
                    Value::from(guard.neutralize(&ctx.user_prompt).as_ref()),
                ),
                ("round_number", Value::from(ctx.round_number)),
                (
                    "submission_history",
                    Value::from(format_submission_history(&ctx.round_history, guard)),
                ),
                (
                    "ranking_table",
                    Value::from(format_ranking_table(ranking, &ctx.team_id, guard)),
                ),
                (
                    "team_position_message",
                    Value::from(format_position_message(position, total)?),
                ),
                ("current_datetime", Value::from(current_datetime)),
                ("team_id", Value::from(ctx.team_id.as_str())),
                ("team_name", Value::from(ctx.team_name.as_str())),
                ("execution_id", opt(&ctx.execution_id)),
                ("domain_context", opt(&ctx.domain_context)),
                ("language", opt(&ctx.language)),
                ("attachments", attachments_value(&ctx.attachments, guard)),
            ])
        }
        TemplateKind::Evaluator => {
            ctx.validate_evaluator()?;
            let query = Value::from(guard.neutralize(py_trim(&ctx.user_prompt)).as_ref());
            Ok(vec![
                ("user_prompt", query.clone()),
                ("user_query", query),
                (
                    "submission",
                    Value::from(
                        guard
                            .neutralize(py_trim(ctx.submission.as_deref().unwrap_or("")))
                            .as_ref(),
                    ),
                ),
                ("current_datetime", Value::from(current_datetime)),
                ("team_id", Value::from(ctx.team_id.as_str())),
                ("team_name", Value::from(ctx.team_name.as_str())),
                ("execution_id", opt(&ctx.execution_id)),
                ("domain_context", opt(&ctx.domain_context)),
                ("language", opt(&ctx.language)),
                ("attachments", attachments_value(&ctx.attachments, guard)),
            ])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn computed_variables_match_the_listed_ones() {
        let ctx = PromptContext {
            user_prompt: "q".into(),
            round_number: 1,
            team_id: "t".into(),
            team_name: "T".into(),
            submission: Some("s".into()),
            ..Default::default()
        };
        for kind in TemplateKind::ALL {
            let names: Vec<&str> = compute(kind, &ctx, Utc::now(), Tz::UTC, &TagGuard::default())
                .expect("vars")
                .iter()
                .map(|(n, _)| *n)
                .collect();
            assert_eq!(names, variable_names(kind), "{kind:?}");
        }
    }

    #[test]
    fn evaluator_values_are_trimmed() {
        let ctx = PromptContext {
            user_prompt: "  q \n".into(),
            submission: Some("\n s ".into()),
            ..Default::default()
        };
        let vars = compute(
            TemplateKind::Evaluator,
            &ctx,
            Utc::now(),
            Tz::UTC,
            &TagGuard::default(),
        )
        .expect("vars");
        assert_eq!(vars[0].1.as_str(), Some("q"));
        assert_eq!(vars[2].1.as_str(), Some("s"));
    }
}
