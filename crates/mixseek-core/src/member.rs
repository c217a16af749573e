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
    /// Tokens, requests and cost of the member's own LLM calls (stored in the framework's
    /// `RunUsage` shape, with mixseek's cost fields after it).
    #[serde(default, with = "run_usage")]
    pub usage: Usage,
    /// When the call ended.
    #[serde(with = "crate::time::utc")]
    pub timestamp: DateTime<Utc>,
    /// How long the call took (the original writes a float: read either).
    #[serde(default, deserialize_with = "millis")]
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
    #[serde(with = "run_usage")]
    total_usage: Usage,
}

/// `execution_time_ms` as a whole number of milliseconds, from an integer or (the original's)
/// a float.
fn millis<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v: Option<f64> = Option::deserialize(d)?;
    Ok(v.filter(|x| x.is_finite() && *x >= 0.0)
        .map(|x| x.round() as u64))
}

/// A member's usage in the shape of the framework's `RunUsage` (what the original stores and
/// its readers validate: `input_tokens`, `cache_write_tokens`, `cache_read_tokens`,
/// `output_tokens`, the audio counts, `details`, `requests`, `tool_calls`), followed by
/// mixseek's own `cost_usd`, `unpriced_requests` and `requests_without_usage`. Reads that shape
/// and mixseek's earlier one (`cached_tokens`).
mod run_usage {
    use crate::usage::Usage;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize)]
    struct RunUsage<'a> {
        input_tokens: u64,
        cache_write_tokens: u64,
        cache_read_tokens: u64,
        output_tokens: u64,
        input_audio_tokens: u64,
        cache_audio_read_tokens: u64,
        output_audio_tokens: u64,
        details: &'a serde_json::Map<String, serde_json::Value>,
        requests: u64,
        tool_calls: u64,
        cost_usd: f64,
        unpriced_requests: u64,
        requests_without_usage: u64,
    }

    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Read {
        input_tokens: u64,
        output_tokens: u64,
        cached_tokens: Option<u64>,
        cache_read_tokens: Option<u64>,
        requests: u64,
        cost_usd: f64,
        unpriced_requests: u64,
        requests_without_usage: u64,
    }

    /// Writes `u` in the `RunUsage` shape.
    pub(super) fn serialize<S: Serializer>(u: &Usage, s: S) -> Result<S::Ok, S::Error> {
        RunUsage {
            input_tokens: u.input_tokens,
            cache_write_tokens: 0,
            cache_read_tokens: u.cached_tokens,
            output_tokens: u.output_tokens,
            input_audio_tokens: 0,
            cache_audio_read_tokens: 0,
            output_audio_tokens: 0,
            details: &serde_json::Map::new(),
            requests: u.requests,
            tool_calls: 0,
            cost_usd: u.cost_usd,
            unpriced_requests: u.unpriced_requests,
            requests_without_usage: u.requests_without_usage,
        }
        .serialize(s)
    }

    /// Reads the `RunUsage` shape or mixseek's earlier one (`null` reads as no usage).
    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Usage, D::Error> {
        let r: Option<Read> = Option::deserialize(d)?;
        let r = r.unwrap_or_default();
        Ok(Usage {
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            cached_tokens: r.cached_tokens.or(r.cache_read_tokens).unwrap_or(0),
            requests: r.requests,
            cost_usd: r.cost_usd,
            unpriced_requests: r.unpriced_requests,
            requests_without_usage: r.requests_without_usage,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_stored_as_run_usage_and_both_shapes_read_back() {
        let mut s = sub(MemberStatus::Success, 7);
        s.usage.cached_tokens = 2;
        s.usage.cost_usd = 0.5;
        s.timestamp = crate::time::now_utc();
        let v = serde_json::to_value(&s).expect("json");
        assert_eq!(v["usage"]["cache_read_tokens"], 2);
        assert_eq!(v["usage"]["tool_calls"], 0);
        assert_eq!(v["usage"]["details"], serde_json::json!({}));
        assert_eq!(v["usage"]["cost_usd"], 0.5);
        let back: MemberSubmission = serde_json::from_value(v).expect("read back");
        assert_eq!(back, s);
        // mixseek's earlier shape, and the original's row (float milliseconds, RunUsage)
        let earlier = serde_json::json!({"agent_name": "a", "agent_type": "plain", "content": "c",
            "status": "SUCCESS", "usage": {"input_tokens": 1, "output_tokens": 2, "cached_tokens": 1, "requests": 1},
            "timestamp": "2025-11-05T10:00:15Z", "execution_time_ms": 12});
        let e: MemberSubmission = serde_json::from_value(earlier).expect("earlier");
        assert_eq!((e.usage.cached_tokens, e.execution_time_ms), (1, Some(12)));
        let original = serde_json::json!({"agent_name": "a", "agent_type": "system", "content": "c",
            "status": "SUCCESS", "error_message": null, "usage": {"input_tokens": 0, "cache_write_tokens": 0,
            "cache_read_tokens": 0, "output_tokens": 0, "input_audio_tokens": 0, "cache_audio_read_tokens": 0,
            "output_audio_tokens": 0, "details": {}, "requests": 1, "tool_calls": 0},
            "timestamp": "2025-11-05T10:00:15.123456Z", "execution_time_ms": 2500.4, "all_messages": null});
        let o: MemberSubmission = serde_json::from_value(original).expect("original");
        assert_eq!((o.usage.requests, o.execution_time_ms), (1, Some(2500)));
    }

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
