//! What a prompt is rendered from: the round context (prompt, attachments, round, team,
//! history, ranking, submission) plus the inputs of the built-in injection rules (domain
//! context, language, suffixes). Its JSON form is the `--context` file of `mixseek prompt
//! render`.

use crate::error::PromptError;
use mixseek_config::is_blank;
use mixseek_core::{Attachment, RoundState, ScoreDetails};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// One completed round of the team, as the submission history shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryRound {
    /// The round's number (1-based).
    pub round_number: u32,
    /// What the team submitted in that round.
    pub submission_content: String,
    /// The round's overall evaluation score.
    pub evaluation_score: f64,
    /// Any JSON object; in a run it is the round's `ScoreDetails`
    /// (`{"overall_score", "metrics": [...]}`), printed in its key order.
    pub score_details: serde_json::Value,
}

impl From<&RoundState> for HistoryRound {
    /// The round as the prompts show it: its score details in the original's shape
    /// ([`original_score_details`]).
    fn from(r: &RoundState) -> Self {
        Self {
            round_number: r.round_number,
            submission_content: r.submission_content.clone(),
            evaluation_score: r.evaluation_score,
            score_details: original_score_details(&r.score_details),
        }
    }
}

/// `score_details` as the original's submission history prints it: `{"overall_score",
/// "metrics": [{"metric_name", "score", "evaluator_comment"}]}` and nothing else. Our
/// additions (judge samples and juries with their raw answers, per-metric weight, usage and
/// duration) stay in the stored details but are left out of later rounds' prompts, which
/// they would only bloat; metrics that failed and were skipped (`"status": "failed"`) are
/// left out too, as they were not scored. A `direction = "minimize"` metric keeps its
/// `"direction": "minimize"` (after the three fields) so the team knows lower is better.
pub fn original_score_details(details: &ScoreDetails) -> serde_json::Value {
    let metrics: Vec<serde_json::Value> = details
        .metrics
        .iter()
        .filter(|m| m.extra.get("status").and_then(|s| s.as_str()) != Some("failed"))
        .map(|m| {
            let mut shown = serde_json::json!({
                "metric_name": m.metric_name,
                "score": m.score,
                "evaluator_comment": m.evaluator_comment,
            });
            // ours: a metric where lower is better says so, or the team would chase the
            // wrong way (the original has no such metric, so its prompts are unchanged)
            if let Some(d @ serde_json::Value::String(_)) = m.extra.get("direction") {
                shown["direction"] = d.clone();
            }
            shown
        })
        .collect();
    serde_json::json!({"overall_score": details.overall_score, "metrics": metrics})
}

/// One row of the execution's ranking, in ranking order (best score descending, then
/// `team_id` ascending — the store's order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankingEntry {
    /// The team's id.
    pub team_id: String,
    /// The team's display name.
    pub team_name: String,
    /// The team's best round score so far.
    pub max_score: f64,
    /// How many rounds the team has completed.
    pub total_rounds: u32,
}

/// A ranking shared by the contexts that show it (cloning one copies no entry).
pub type Ranking = Arc<Vec<RankingEntry>>;

/// `Option<Ranking>` (de)serialized as an optional list of entries.
mod shared_ranking {
    use super::{Ranking, RankingEntry};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::sync::Arc;

    pub(crate) fn serialize<S: Serializer>(r: &Option<Ranking>, s: S) -> Result<S::Ok, S::Error> {
        r.as_deref().serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Ranking>, D::Error> {
        Ok(Option::<Vec<RankingEntry>>::deserialize(d)?.map(Arc::new))
    }
}

/// `Arc<[HistoryRound]>` (de)serialized as a list of rounds.
mod shared_history {
    use super::HistoryRound;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::sync::Arc;

    pub(crate) fn serialize<S: Serializer>(
        h: &Arc<[HistoryRound]>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        h.as_ref().serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Arc<[HistoryRound]>, D::Error> {
        Ok(Vec::<HistoryRound>::deserialize(d)?.into())
    }
}

/// `Arc<[Attachment]>` (de)serialized as a list of attachments.
mod shared_attachments {
    use mixseek_core::Attachment;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::sync::Arc;

    pub(crate) fn serialize<S: Serializer>(a: &Arc<[Attachment]>, s: S) -> Result<S::Ok, S::Error> {
        a.as_ref().serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Arc<[Attachment]>, D::Error> {
        Ok(Vec::<Attachment>::deserialize(d)?.into())
    }
}

impl RankingEntry {
    /// The ranking order, [`mixseek_core::team_order`]'s rule: best score first, then `team_id`
    /// ascending. `Less` when `a` ranks above `b`.
    pub fn order(a: &Self, b: &Self) -> std::cmp::Ordering {
        mixseek_core::team_order(
            (a.max_score, a.team_id.as_str()),
            (b.max_score, b.team_id.as_str()),
        )
    }
}

/// Everything the three prompts and the injection rules are rendered from.
///
/// Team / judgment prompts need `user_prompt`, `round_number` (≥ 1), `team_id`, `team_name`
/// (and `execution_id` when given) non-blank; the evaluator prompt needs `user_prompt` (the
/// user query) and `submission`. Absent optional strings render as `""`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PromptContext {
    /// The original user prompt (`user_query` is accepted as its name in JSON).
    #[serde(alias = "user_query")]
    pub user_prompt: String,
    /// The current round (1-based).
    pub round_number: u32,
    /// The id of the team the prompt is for.
    pub team_id: String,
    /// The display name of that team.
    pub team_name: String,
    /// The execution the round belongs to, when known.
    pub execution_id: Option<String>,
    /// The team's completed rounds, in order (team prompt of round N: rounds 1..N-1;
    /// judgment after round N: rounds 1..N). Shared: the judgment after round N and the
    /// team prompt of round N+1 show the same rounds.
    #[serde(with = "shared_history")]
    pub round_history: Arc<[HistoryRound]>,
    /// The execution's ranking; `None` = no store (persistence off). Only used from round 2.
    /// Shared: every prompt of an execution's round may show the same 1,000-line ranking.
    #[serde(with = "shared_ranking")]
    pub ranking: Option<Ranking>,
    /// The submission to evaluate (evaluator prompt).
    pub submission: Option<String>,
    /// A domain description set once (orchestrator or team) and carried into every phase.
    pub domain_context: Option<String>,
    /// Answer language (`ja`, `en`, … or a language name; `auto` or unset = no preference).
    pub language: Option<String>,
    /// Text appended to system prompts by the built-in `system_prompt_suffix` rule.
    pub system_prompt_suffix: Option<String>,
    /// Text appended to user prompts by the built-in `prompt_suffix` rule.
    pub prompt_suffix: Option<String>,
    /// The documents attached to the task (their extracted texts), in order; empty when none.
    /// Every template sees them as `attachments`; the default templates show them in
    /// `<attachments>` after `<user_task>`. Shared: every prompt of a run shows the same ones.
    #[serde(
        with = "shared_attachments",
        skip_serializing_if = "attachments_are_empty"
    )]
    pub attachments: Arc<[Attachment]>,
}

fn attachments_are_empty(a: &Arc<[Attachment]>) -> bool {
    a.is_empty()
}

impl PromptContext {
    /// Sets the attachments (a `Vec<Attachment>` or an already shared `Arc<[Attachment]>`).
    pub fn with_attachments(mut self, attachments: impl Into<Arc<[Attachment]>>) -> Self {
        self.attachments = attachments.into();
        self
    }

    /// Sets the history from the store's rounds.
    pub fn with_rounds<'a>(mut self, rounds: impl IntoIterator<Item = &'a RoundState>) -> Self {
        self.round_history = rounds.into_iter().map(HistoryRound::from).collect();
        self
    }

    /// The original's checks for the round prompts (team, judgment), first failure wins.
    pub(crate) fn validate_round(&self) -> Result<(), PromptError> {
        if is_blank(&self.user_prompt) {
            return Err(PromptError::InvalidContext(
                "user_prompt cannot be empty".into(),
            ));
        }
        if self.round_number < 1 {
            return Err(PromptError::InvalidContext(
                "round_number must be >= 1".into(),
            ));
        }
        if is_blank(&self.team_id) {
            return Err(PromptError::InvalidContext(
                "team_id cannot be empty".into(),
            ));
        }
        if is_blank(&self.team_name) {
            return Err(PromptError::InvalidContext(
                "team_name cannot be empty".into(),
            ));
        }
        if self.execution_id.as_deref().is_some_and(is_blank) {
            return Err(PromptError::InvalidContext(
                "execution_id cannot be empty".into(),
            ));
        }
        Ok(())
    }

    /// The original's checks for the evaluator prompt.
    pub(crate) fn validate_evaluator(&self) -> Result<(), PromptError> {
        if is_blank(&self.user_prompt) {
            return Err(PromptError::InvalidContext(
                "user_query cannot be empty".into(),
            ));
        }
        if self.submission.as_deref().is_none_or(is_blank) {
            return Err(PromptError::InvalidContext(
                "submission cannot be empty".into(),
            ));
        }
        Ok(())
    }
}

/// Trims Python whitespace (Unicode whitespace plus `\x1c`–`\x1f`) from both ends.
pub fn py_trim(s: &str) -> &str {
    s.trim_matches(mixseek_config::is_py_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use mixseek_core::MetricScore;

    fn round_ctx() -> PromptContext {
        PromptContext {
            user_prompt: "task".into(),
            round_number: 1,
            team_id: "t1".into(),
            team_name: "Alpha".into(),
            execution_id: Some("e1".into()),
            ..Default::default()
        }
    }

    #[test]
    fn round_context_rules_and_messages() {
        assert_eq!(round_ctx().validate_round(), Ok(()));
        type Breaker = fn(&mut PromptContext);
        let cases: [(Breaker, &str); 5] = [
            (
                |c| c.user_prompt = " \u{3000}".into(),
                "user_prompt cannot be empty",
            ),
            (|c| c.round_number = 0, "round_number must be >= 1"),
            (|c| c.team_id = String::new(), "team_id cannot be empty"),
            (|c| c.team_name = "\t".into(), "team_name cannot be empty"),
            (
                |c| c.execution_id = Some(" ".into()),
                "execution_id cannot be empty",
            ),
        ];
        for (break_it, msg) in cases {
            let mut c = round_ctx();
            break_it(&mut c);
            assert_eq!(
                c.validate_round().map_err(|e| e.to_string()),
                Err(msg.to_string())
            );
        }
        let mut c = round_ctx();
        c.execution_id = None;
        assert_eq!(c.validate_round(), Ok(()));
    }

    #[test]
    fn evaluator_context_rules_and_messages() {
        let mut c = PromptContext {
            user_prompt: "q".into(),
            submission: Some("s".into()),
            ..Default::default()
        };
        assert_eq!(c.validate_evaluator(), Ok(()));
        c.submission = Some("  ".into());
        assert_eq!(
            c.validate_evaluator().map_err(|e| e.to_string()),
            Err("submission cannot be empty".into())
        );
        c.submission = None;
        assert_eq!(
            c.validate_evaluator().map_err(|e| e.to_string()),
            Err("submission cannot be empty".into())
        );
        c.user_prompt = "\u{1f}".into();
        assert_eq!(
            c.validate_evaluator().map_err(|e| e.to_string()),
            Err("user_query cannot be empty".into())
        );
    }

    #[test]
    fn rounds_convert_with_score_details_in_key_order() {
        let r = RoundState {
            round_number: 2,
            submission_content: "s".into(),
            evaluation_score: 82.5,
            score_details: ScoreDetails {
                overall_score: 82.5,
                metrics: vec![MetricScore::new("Relevance", 80.0, "OK")],
            },
            improvement_judgment: None,
            round_started_at: Utc::now(),
            round_ended_at: Utc::now(),
            message_history: vec![],
        };
        let c = PromptContext::default().with_rounds([&r]);
        assert_eq!(c.round_history[0].round_number, 2);
        assert_eq!(
            serde_json::to_string(&c.round_history[0].score_details).expect("json"),
            r#"{"overall_score":82.5,"metrics":[{"metric_name":"Relevance","score":80.0,"evaluator_comment":"OK"}]}"#
        );
    }

    #[test]
    fn history_shows_the_original_shape_without_our_extras() {
        let mut jury = MetricScore::new("Relevance", 80.0, "OK");
        jury.extra.insert("weight".into(), serde_json::json!(1.0));
        jury.extra.insert(
            "answers".into(),
            serde_json::json!([{"raw": "x".repeat(10_000)}]),
        );
        let mut failed = MetricScore::new("Coverage", 0.0, "Failed to evaluate after retries");
        failed
            .extra
            .insert("status".into(), serde_json::json!("failed"));
        let details = ScoreDetails {
            overall_score: 80.0,
            metrics: vec![jury, failed],
        };
        assert_eq!(
            serde_json::to_string(&original_score_details(&details)).expect("json"),
            r#"{"overall_score":80.0,"metrics":[{"metric_name":"Relevance","score":80.0,"evaluator_comment":"OK"}]}"#
        );
    }

    #[test]
    fn a_minimized_metric_tells_the_team_that_lower_is_better() {
        let mut errors = MetricScore::new("ErrorRate", 12.5, "3 of 24 failed");
        errors
            .extra
            .insert("direction".into(), serde_json::json!("minimize"));
        errors
            .extra
            .insert("oriented_score".into(), serde_json::json!(87.5));
        let details = ScoreDetails {
            overall_score: 87.5,
            metrics: vec![errors],
        };
        assert_eq!(
            serde_json::to_string(&original_score_details(&details)).expect("json"),
            r#"{"overall_score":87.5,"metrics":[{"metric_name":"ErrorRate","score":12.5,"evaluator_comment":"3 of 24 failed","direction":"minimize"}]}"#
        );
    }

    #[test]
    fn json_accepts_user_query_as_the_prompt_name() {
        let c: PromptContext =
            serde_json::from_str(r#"{"user_query": "q", "submission": "s"}"#).expect("json");
        assert_eq!(c.user_prompt, "q");
        assert_eq!(c.ranking, None);
    }

    #[test]
    fn py_trim_includes_separator_controls() {
        assert_eq!(py_trim("\u{1c}\u{3000} a b \n\u{1f}"), "a b");
    }
}
