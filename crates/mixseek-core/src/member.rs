//! What member agents return to the leader, as recorded per round.

use crate::ids::{ExecutionId, TeamId};
use crate::usage::Usage;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum MemberStatus {
    Success,
    Error,
    Warning,
}

/// One member tool call. Unlike the original, `usage` holds the real token counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberSubmission {
    pub agent_name: String,
    pub agent_type: String,
    pub content: String,
    pub status: MemberStatus,
    #[serde(default)]
    pub error_message: Option<String>,
    #[serde(default)]
    pub usage: Usage,
    #[serde(with = "crate::time::utc")]
    pub timestamp: DateTime<Utc>,
    #[serde(default)]
    pub execution_time_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_messages: Option<Vec<serde_json::Value>>,
}

/// All member submissions of one team round, with the original's computed counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberSubmissionsRecord {
    pub execution_id: ExecutionId,
    pub team_id: TeamId,
    pub team_name: String,
    pub round_number: u32,
    pub submissions: Vec<MemberSubmission>,
}

impl MemberSubmissionsRecord {
    pub fn success_count(&self) -> usize {
        self.submissions
            .iter()
            .filter(|s| s.status == MemberStatus::Success)
            .count()
    }
    pub fn failure_count(&self) -> usize {
        self.submissions
            .iter()
            .filter(|s| s.status == MemberStatus::Error)
            .count()
    }
    pub fn total_count(&self) -> usize {
        self.submissions.len()
    }
    pub fn total_usage(&self) -> Usage {
        self.submissions.iter().map(|s| s.usage).sum()
    }

    /// The JSON stored in `round_history.member_submissions_record`: the fields plus the
    /// computed `successful_submissions`, `failed_submissions`, counts and `total_usage`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        if let Some(obj) = v.as_object_mut() {
            let pick = |st: MemberStatus| -> Vec<serde_json::Value> {
                self.submissions
                    .iter()
                    .filter(|s| s.status == st)
                    .filter_map(|s| serde_json::to_value(s).ok())
                    .collect()
            };
            obj.insert(
                "successful_submissions".into(),
                pick(MemberStatus::Success).into(),
            );
            obj.insert(
                "failed_submissions".into(),
                pick(MemberStatus::Error).into(),
            );
            obj.insert("total_count".into(), self.total_count().into());
            obj.insert("success_count".into(), self.success_count().into());
            obj.insert("failure_count".into(), self.failure_count().into());
            obj.insert(
                "total_usage".into(),
                serde_json::to_value(self.total_usage()).unwrap_or_default(),
            );
        }
        v
    }
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
}
