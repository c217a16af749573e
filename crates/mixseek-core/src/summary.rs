//! Leaderboard entries and the execution summary (the JSON that `mixseek exec -f json` prints).

use crate::ids::{ExecutionId, TeamId};
use crate::score::ScoreDetails;
use crate::usage::{Usage, UsageByRole};
use chrono::{DateTime, Utc};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use std::collections::BTreeSet;

/// One team's round as it appears on the leaderboard (`LeaderBoardEntry`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaderboardEntry {
    /// The `leader_board` row id, when it was read from the store.
    pub id: Option<i64>,
    /// The execution.
    pub execution_id: ExecutionId,
    /// The team.
    pub team_id: TeamId,
    /// The team's display name.
    pub team_name: String,
    /// The round number, from 1.
    pub round_number: u32,
    /// The leader's answer.
    pub submission_content: String,
    /// The submission's format (`md`).
    pub submission_format: String,
    /// The round's overall score.
    pub score: f64,
    /// The evaluation: overall score and per-metric scores.
    pub score_details: ScoreDetails,
    /// Whether this is the team's final (best) round.
    pub final_submission: bool,
    /// Why the team stopped, on its final round.
    pub exit_reason: Option<String>,
    /// When the row was created.
    #[serde(with = "crate::time::utc")]
    pub created_at: DateTime<Utc>,
    /// When the row was last updated.
    #[serde(with = "crate::time::utc")]
    pub updated_at: DateTime<Utc>,
}

/// `FailedTeamInfo`: a team that failed (partial teams appear here and in `team_results`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedTeamInfo {
    /// The team.
    pub team_id: TeamId,
    /// The team's display name.
    pub team_name: String,
    /// What made the team fail.
    pub error_message: String,
}

/// `completed` (no failures), `partial_failure`, `failed` (no results); ours adds `interrupted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// The execution is still running (as stored while it runs).
    Running,
    /// Every team completed.
    Completed,
    /// Some teams failed, others have results.
    PartialFailure,
    /// No team has a result.
    Failed,
    /// The run was interrupted before every team finished.
    Interrupted,
}

impl ExecutionStatus {
    /// The stored and printed name (`running`, `completed`, …).
    pub fn as_str(&self) -> &'static str {
        match self {
            ExecutionStatus::Running => "running",
            ExecutionStatus::Completed => "completed",
            ExecutionStatus::PartialFailure => "partial_failure",
            ExecutionStatus::Failed => "failed",
            ExecutionStatus::Interrupted => "interrupted",
        }
    }

    /// The status named `s` (as [`Self::as_str`] prints it).
    pub fn parse(s: &str) -> Option<Self> {
        [
            ExecutionStatus::Running,
            ExecutionStatus::Completed,
            ExecutionStatus::PartialFailure,
            ExecutionStatus::Failed,
            ExecutionStatus::Interrupted,
        ]
        .into_iter()
        .find(|x| x.as_str() == s)
    }
}

/// The result of one execution. Serialized with the original's keys in its order
/// (`execution_id` … `partial_teams`), followed by ours (`status`, `usage`, `usage_by_role`,
/// `stop_reason`, `stopped_team_ids`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ExecutionSummary {
    /// The execution.
    pub execution_id: ExecutionId,
    /// The task every team worked on.
    pub user_prompt: String,
    /// Each team's final (best) round.
    pub team_results: Vec<LeaderboardEntry>,
    /// The team with the best score, if any.
    pub best_team_id: Option<TeamId>,
    /// The best score, if any.
    pub best_score: Option<f64>,
    /// Wall time of the whole execution, in seconds.
    pub total_execution_time_seconds: f64,
    /// The teams that failed (a partial team is also in `team_results`).
    pub failed_teams_info: Vec<FailedTeamInfo>,
    /// When the execution started.
    #[serde(with = "crate::time::utc")]
    pub created_at: DateTime<Utc>,
    /// Ours: the stored execution status.
    pub status: ExecutionStatus,
    /// Ours: usage and cost of every LLM call of the execution.
    #[serde(default)]
    pub usage: Usage,
    /// Ours: the same usage, split by role.
    #[serde(default)]
    pub usage_by_role: UsageByRole,
    /// Ours: why the run ended early (budget reached, interrupted), if it did.
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// Ours: teams that did not finish because the run stopped early (`stop_reason`): never
    /// started, or interrupted. In team-config order. Neither completed nor failed; counted in
    /// `total_teams`.
    #[serde(default)]
    pub stopped_team_ids: Vec<TeamId>,
}

impl ExecutionSummary {
    /// Distinct team ids in results ∪ failures ∪ stopped teams.
    pub fn total_teams(&self) -> usize {
        let ids: BTreeSet<&str> = self
            .team_results
            .iter()
            .map(|e| e.team_id.as_str())
            .chain(self.failed_teams_info.iter().map(|f| f.team_id.as_str()))
            .chain(self.stopped_team_ids.iter().map(TeamId::as_str))
            .collect();
        ids.len()
    }
    /// Teams with a result.
    pub fn completed_teams(&self) -> usize {
        self.team_results.len()
    }
    /// Teams that failed (partial ones included).
    pub fn failed_teams(&self) -> usize {
        self.failed_teams_info.len()
    }
    /// Ids present in both results and failures, sorted.
    pub fn partial_team_ids(&self) -> Vec<TeamId> {
        let failed: BTreeSet<&str> = self
            .failed_teams_info
            .iter()
            .map(|f| f.team_id.as_str())
            .collect();
        let mut ids: Vec<TeamId> = self
            .team_results
            .iter()
            .filter(|e| failed.contains(e.team_id.as_str()))
            .map(|e| e.team_id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }
    /// Teams that failed after completing rounds.
    pub fn partial_teams(&self) -> usize {
        self.partial_team_ids().len()
    }
    /// Whether `team_id` failed after completing rounds.
    pub fn is_partial(&self, team_id: &str) -> bool {
        self.partial_team_ids().iter().any(|t| t == team_id)
    }

    /// The status implied by the results: `completed`, `partial_failure` or `failed`.
    pub fn derive_status(
        team_results: &[LeaderboardEntry],
        failed: &[FailedTeamInfo],
    ) -> ExecutionStatus {
        if failed.is_empty() {
            ExecutionStatus::Completed
        } else if team_results.is_empty() {
            ExecutionStatus::Failed
        } else {
            ExecutionStatus::PartialFailure
        }
    }

    /// The winner: the first team by [`crate::team_order`]'s rule (highest score, then the
    /// smaller `team_id`), so it is the first row of every leaderboard.
    pub fn pick_best(team_results: &[LeaderboardEntry]) -> Option<&LeaderboardEntry> {
        team_results.iter().min_by(|a, b| {
            crate::team_order((a.score, a.team_id.as_str()), (b.score, b.team_id.as_str()))
        })
    }

    /// Exit code of `mixseek exec`: 0 all ok, 1 some failed, 2 all failed.
    pub fn exit_code(&self) -> i32 {
        if self.failed_teams_info.is_empty() && !self.team_results.is_empty() {
            0
        } else if !self.team_results.is_empty() {
            1
        } else {
            2
        }
    }
}

impl Serialize for ExecutionSummary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Utc<'a>(&'a DateTime<chrono::Utc>);
        impl Serialize for Utc<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                crate::time::utc::serialize(self.0, s)
            }
        }
        let mut st = s.serialize_struct("ExecutionSummary", 18)?;
        st.serialize_field("execution_id", &self.execution_id)?;
        st.serialize_field("user_prompt", &self.user_prompt)?;
        st.serialize_field("team_results", &self.team_results)?;
        st.serialize_field("best_team_id", &self.best_team_id)?;
        st.serialize_field("best_score", &self.best_score)?;
        st.serialize_field(
            "total_execution_time_seconds",
            &self.total_execution_time_seconds,
        )?;
        st.serialize_field("failed_teams_info", &self.failed_teams_info)?;
        st.serialize_field("created_at", &Utc(&self.created_at))?;
        st.serialize_field("total_teams", &self.total_teams())?;
        st.serialize_field("completed_teams", &self.completed_teams())?;
        st.serialize_field("failed_teams", &self.failed_teams())?;
        st.serialize_field("partial_team_ids", &self.partial_team_ids())?;
        st.serialize_field("partial_teams", &self.partial_teams())?;
        st.serialize_field("status", &self.status)?;
        st.serialize_field("usage", &self.usage)?;
        st.serialize_field("usage_by_role", &self.usage_by_role)?;
        st.serialize_field("stop_reason", &self.stop_reason)?;
        st.serialize_field("stopped_team_ids", &self.stopped_team_ids)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::score::ScoreDetails;

    fn entry(team: &str, score: f64) -> LeaderboardEntry {
        LeaderboardEntry {
            id: None,
            execution_id: "e".into(),
            team_id: team.into(),
            team_name: format!("Team {team}"),
            round_number: 1,
            submission_content: "x".into(),
            submission_format: "md".into(),
            score,
            score_details: ScoreDetails {
                overall_score: score,
                metrics: vec![],
            },
            final_submission: true,
            exit_reason: None,
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
        }
    }

    fn summary(results: Vec<LeaderboardEntry>, failed: Vec<FailedTeamInfo>) -> ExecutionSummary {
        ExecutionSummary {
            execution_id: "e".into(),
            user_prompt: "p".into(),
            status: ExecutionSummary::derive_status(&results, &failed),
            best_team_id: ExecutionSummary::pick_best(&results).map(|b| b.team_id.clone()),
            best_score: ExecutionSummary::pick_best(&results).map(|b| b.score),
            team_results: results,
            total_execution_time_seconds: 1.0,
            failed_teams_info: failed,
            created_at: chrono::Utc::now(),
            usage: Usage::default(),
            usage_by_role: UsageByRole::default(),
            stop_reason: None,
            stopped_team_ids: Vec::new(),
        }
    }

    fn failure(team: &str) -> FailedTeamInfo {
        FailedTeamInfo {
            team_id: team.into(),
            team_name: team.into(),
            error_message: "boom".into(),
        }
    }

    #[test]
    fn computed_counts_and_key_order() {
        let s = summary(
            vec![entry("a", 80.0), entry("b", 90.0)],
            vec![failure("b"), failure("c")],
        );
        assert_eq!(
            (
                s.total_teams(),
                s.completed_teams(),
                s.failed_teams(),
                s.partial_teams()
            ),
            (3, 2, 2, 1)
        );
        assert_eq!(s.partial_team_ids(), vec!["b".to_string()]);
        assert_eq!(s.status, ExecutionStatus::PartialFailure);
        assert_eq!(s.exit_code(), 1);
        let v = serde_json::to_value(&s).unwrap_or_default();
        let keys: Vec<&String> = v
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        let expected = [
            "execution_id",
            "user_prompt",
            "team_results",
            "best_team_id",
            "best_score",
            "total_execution_time_seconds",
            "failed_teams_info",
            "created_at",
            "total_teams",
            "completed_teams",
            "failed_teams",
            "partial_team_ids",
            "partial_teams",
            "status",
            "usage",
            "usage_by_role",
            "stop_reason",
            "stopped_team_ids",
        ];
        assert_eq!(keys, expected.iter().collect::<Vec<_>>());
    }

    #[test]
    fn stopped_teams_count_in_the_total_only() {
        let mut s = summary(vec![entry("a", 80.0)], vec![]);
        s.stopped_team_ids = vec!["b".into()];
        assert_eq!(
            (s.total_teams(), s.completed_teams(), s.failed_teams()),
            (2, 1, 0)
        );
        assert_eq!(s.status, ExecutionStatus::Completed);
        assert_eq!(s.exit_code(), 0, "a budget stop is not a failure");
    }

    #[test]
    fn ties_go_to_the_smaller_team_id_whatever_the_config_order() {
        for results in [
            vec![entry("a", 90.0), entry("b", 90.0), entry("c", 10.0)],
            vec![entry("c", 10.0), entry("b", 90.0), entry("a", 90.0)],
        ] {
            assert_eq!(
                ExecutionSummary::pick_best(&results).map(|e| e.team_id.as_str()),
                Some("a")
            );
        }
        assert!(ExecutionSummary::pick_best(&[]).is_none());
    }

    #[test]
    fn exit_codes() {
        assert_eq!(summary(vec![entry("a", 1.0)], vec![]).exit_code(), 0);
        assert_eq!(summary(vec![], vec![failure("a")]).exit_code(), 2);
        assert_eq!(
            summary(vec![], vec![failure("a")]).status,
            ExecutionStatus::Failed
        );
    }
}
