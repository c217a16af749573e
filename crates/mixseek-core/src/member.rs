//! What member agents return to the leader, as recorded per round.

use crate::ids::{ExecutionId, TeamId};
use crate::usage::Usage;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// How a member call ended (`SUCCESS`, `ERROR`, `WARNING` in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum MemberStatus {
    /// The member answered.
    Success,
    /// The member failed; its `content` is empty or an error text.
    Error,
    /// The member answered with a caveat (e.g. an empty answer, or a command that said so).
    Warning,
}

/// One member tool call. Unlike the original, `usage` holds the real token counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberSubmission {
    /// The member's name (its tool name for the leader).
    pub agent_name: String,
    /// The member's type (`plain`, `web_fetch`, `command`, …).
    pub agent_type: String,
    /// What the member returned.
    pub content: String,
    /// How the call ended.
    pub status: MemberStatus,
    /// The error, when the call failed.
    #[serde(default)]
    pub error_message: Option<String>,
    /// Tokens, requests and cost of the member's own LLM calls.
    #[serde(default)]
    pub usage: Usage,
    /// When the call ended.
    #[serde(with = "crate::time::utc")]
    pub timestamp: DateTime<Utc>,
    /// How long the call took.
    #[serde(default)]
    pub execution_time_ms: Option<u64>,
    /// The member's message history (JSON messages), when it keeps one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_messages: Option<Vec<serde_json::Value>>,
}

/// All member submissions of one team round, with the original's computed counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberSubmissionsRecord {
    /// The execution of the round.
    pub execution_id: ExecutionId,
    /// The team of the round.
    pub team_id: TeamId,
    /// The team's display name.
    pub team_name: String,
    /// The round number, from 1.
    pub round_number: u32,
    /// One entry per member call, in call order.
    pub submissions: Vec<MemberSubmission>,
}

impl MemberSubmissionsRecord {
    /// Calls that ended `SUCCESS`.
    pub fn success_count(&self) -> usize {
        self.submissions
            .iter()
            .filter(|s| s.status == MemberStatus::Success)
            .count()
    }
    /// Calls that ended `ERROR`.
    pub(crate) fn failure_count(&self) -> usize {
        self.submissions
            .iter()
            .filter(|s| s.status == MemberStatus::Error)
            .count()
    }
    /// All calls.
    pub fn total_count(&self) -> usize {
        self.submissions.len()
    }
    /// The usage of all calls, summed.
    pub fn total_usage(&self) -> Usage {
        self.submissions.iter().map(|s| s.usage).sum()
    }

    /// The JSON stored in `round_history.member_submissions_record`: the fields plus the
    /// computed `successful_submissions`, `failed_submissions`, counts and `total_usage`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self.document()).unwrap_or(serde_json::Value::Null)
    }

    /// [`Self::to_json`]'s document, to serialize without building a `Value`.
    pub fn document(&self) -> MemberRecordDocument<'_> {
        let with = |status: MemberStatus| {
            self.submissions
                .iter()
                .filter(|s| s.status == status)
                .collect()
        };
        MemberRecordDocument {
            execution_id: &self.execution_id,
            team_id: &self.team_id,
            team_name: &self.team_name,
            round_number: self.round_number,
            submissions: &self.submissions,
            successful_submissions: with(MemberStatus::Success),
            failed_submissions: with(MemberStatus::Error),
            total_count: self.total_count(),
            success_count: self.success_count(),
            failure_count: self.failure_count(),
            total_usage: self.total_usage(),
        }
    }
}

/// A [`MemberSubmissionsRecord`] as the original stores and prints it: its fields in
/// declaration order, then the computed lists, counts and total usage.
#[derive(Debug, Serialize)]
pub struct MemberRecordDocument<'a> {
    execution_id: &'a ExecutionId,
    team_id: &'a TeamId,
    team_name: &'a str,
    round_number: u32,
    submissions: &'a [MemberSubmission],
    successful_submissions: Vec<&'a MemberSubmission>,
    failed_submissions: Vec<&'a MemberSubmission>,
    total_count: usize,
    success_count: usize,
    failure_count: usize,
    total_usage: Usage,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(status: MemberStatus, tokens: u64) -> MemberSubmission {
        MemberSubmission {
            agent_name: "a".into(),
            agent_type: "plain".into(),
            content: String::new(),
            status,
            error_message: None,
            usage: Usage {
                input_tokens: tokens,
                requests: 1,
                ..Usage::default()
            },
            timestamp: Utc::now(),
            execution_time_ms: Some(1),
            all_messages: None,
        }
    }

    #[test]
    fn warnings_count_as_neither_success_nor_failure() {
        let rec = MemberSubmissionsRecord {
            execution_id: "e".into(),
            team_id: "t".into(),
            team_name: "T".into(),
            round_number: 1,
            submissions: vec![
                sub(MemberStatus::Success, 3),
                sub(MemberStatus::Error, 4),
                sub(MemberStatus::Warning, 5),
            ],
        };
        assert_eq!(
            (rec.success_count(), rec.failure_count(), rec.total_count()),
            (1, 1, 3)
        );
        let j = rec.to_json();
        assert_eq!(j["total_usage"]["input_tokens"], 12);
        assert_eq!(
            j["successful_submissions"].as_array().map(Vec::len),
            Some(1)
        );
    }

    #[test]
    fn the_stored_document_lists_the_fields_then_the_computed_values() {
        let rec = MemberSubmissionsRecord {
            execution_id: "e".into(),
            team_id: "t".into(),
            team_name: "T".into(),
            round_number: 2,
            submissions: vec![sub(MemberStatus::Error, 4)],
        };
        let text = serde_json::to_string(&rec.document()).expect("serializes");
        let keys: Vec<String> = match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
            other => panic!("not an object: {other:?}"),
        };
        assert_eq!(
            keys,
            [
                "execution_id",
                "team_id",
                "team_name",
                "round_number",
                "submissions",
                "successful_submissions",
                "failed_submissions",
                "total_count",
                "success_count",
                "failure_count",
                "total_usage",
            ]
        );
        assert_eq!(rec.to_json()["failed_submissions"][0]["status"], "ERROR");
        assert_eq!(rec.to_json().to_string(), text);
    }
}
