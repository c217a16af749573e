//! The execution's ranking, kept in memory: what the store's ranking query
//! (`SELECT team_id, arg_max(team_name, round_number), max(score), count(*) FROM leader_board
//! WHERE execution_id = ? GROUP BY team_id ORDER BY max(score) DESC, team_id ASC`) answers,
//! without asking DuckDB for every team and judgment prompt. With 1,000 teams that query ran
//! 8,000 times per execution and cost more CPU than any other part of a round.
//!
//! It follows the rows the store writes: seeded with the execution's stored rounds (a resumed
//! execution), then fed by the event stream right after the store writer (a primary sink of
//! the [`EventBus`](crate::EventBus), after the store): an `Evaluated` round only once it is
//! committed (a failed commit never reaches it), and a `TeamFinished` best round that was
//! not on the board (the store inserts such a round too). A team whose run was cut off
//! while its commit was in flight (the team timeout) is read back from the store with
//! [`LiveRanking::set_team`].

use mixseek_core::{Event, EventSink, ExecutionId, SinkError};
use mixseek_prompt::RankingEntry;
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// One stored round as the ranking sees it.
#[derive(Debug, Clone)]
struct RankedRound {
    score: f64,
    team_name: String,
}

#[derive(Debug, Default)]
struct Board {
    /// team_id → round_number → round (the rows of `leader_board`).
    teams: HashMap<String, BTreeMap<u32, RankedRound>>,
    /// The ranking, in order; rebuilt for a team when its rounds change.
    sorted: Arc<Vec<RankingEntry>>,
}

impl Board {
    /// The team's entry as the query computes it (`None` without rounds).
    fn entry(&self, team_id: &str) -> Option<RankingEntry> {
        let rounds = self.teams.get(team_id)?;
        let (_, last) = rounds.iter().next_back()?;
        let max_score = rounds
            .values()
            .map(|r| r.score)
            .fold(f64::NEG_INFINITY, f64::max);
        Some(RankingEntry {
            team_id: team_id.to_string(),
            team_name: last.team_name.clone(),
            max_score,
            total_rounds: u32::try_from(rounds.len()).unwrap_or(u32::MAX),
        })
    }

    /// Moves the team's entry to its place after its rounds changed.
    fn reposition(&mut self, team_id: &str) {
        let entry = self.entry(team_id);
        let sorted = Arc::make_mut(&mut self.sorted);
        if let Some(at) = sorted.iter().position(|e| e.team_id == team_id) {
            sorted.remove(at);
        }
        if let Some(entry) = entry {
            let at = sorted.partition_point(|e| RankingEntry::order(e, &entry) == Ordering::Less);
            sorted.insert(at, entry);
        }
    }

    fn set_round(&mut self, team_id: &str, round_number: u32, score: f64, team_name: &str) {
        let round = RankedRound {
            score,
            team_name: team_name.to_string(),
        };
        self.teams
            .entry(team_id.to_string())
            .or_default()
            .insert(round_number, round);
        self.reposition(team_id);
    }
}

/// The in-memory ranking of one execution (see the module docs).
#[derive(Debug)]
pub(crate) struct LiveRanking {
    execution_id: ExecutionId,
    board: Mutex<Board>,
}

/// A stored round: (team_id, team_name, round_number, score).
pub(crate) type StoredRound<'a> = (&'a str, &'a str, u32, f64);

impl LiveRanking {
    /// The ranking of `execution_id`, holding the rounds already stored (none for a new
    /// execution).
    pub(crate) fn new<'a>(
        execution_id: impl Into<ExecutionId>,
        stored: impl IntoIterator<Item = StoredRound<'a>>,
    ) -> Self {
        let mut board = Board::default();
        for (team_id, team_name, round_number, score) in stored {
            board.teams.entry(team_id.to_string()).or_default().insert(
                round_number,
                RankedRound {
                    score,
                    team_name: team_name.to_string(),
                },
            );
        }
        let mut sorted: Vec<RankingEntry> =
            board.teams.keys().filter_map(|t| board.entry(t)).collect();
        sorted.sort_by(RankingEntry::order);
        board.sorted = Arc::new(sorted);
        Self {
            execution_id: execution_id.into(),
            board: Mutex::new(board),
        }
    }

    fn board(&self) -> std::sync::MutexGuard<'_, Board> {
        self.board.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The ranking now, in order (shared: cheap to take).
    pub(crate) fn snapshot(&self) -> Arc<Vec<RankingEntry>> {
        self.board().sorted.clone()
    }

    /// Replaces a team's rounds by those stored (after its run was cut off).
    pub(crate) fn set_team<'a>(
        &self,
        team_id: &str,
        stored: impl IntoIterator<Item = StoredRound<'a>>,
    ) {
        let mut board = self.board();
        let rounds: BTreeMap<u32, RankedRound> = stored
            .into_iter()
            .filter(|r| r.0 == team_id)
            .map(|(_, team_name, n, score)| {
                (
                    n,
                    RankedRound {
                        score,
                        team_name: team_name.to_string(),
                    },
                )
            })
            .collect();
        board.teams.insert(team_id.to_string(), rounds);
        board.reposition(team_id);
    }

    fn apply(&self, event: &Event) {
        match event {
            Event::Evaluated(r) if r.execution_id == self.execution_id => {
                self.board().set_round(
                    r.team_id.as_str(),
                    r.round_number,
                    r.score_details.overall_score,
                    &r.team_name,
                );
            }
            Event::TeamFinished {
                execution_id,
                team_id,
                best: Some(best),
                ..
            } if *execution_id == self.execution_id => {
                let mut board = self.board();
                let known = board
                    .teams
                    .get(team_id.as_str())
                    .is_some_and(|r| r.contains_key(&best.round_number));
                if !known {
                    // the store inserts a final round it did not have
                    board.set_round(
                        team_id.as_str(),
                        best.round_number,
                        best.score,
                        &best.team_name,
                    );
                }
            }
            _ => {}
        }
    }
}

/// Fed after the store writer: sees only what the store committed.
#[async_trait::async_trait]
impl EventSink for LiveRanking {
    async fn emit(&self, event: &Event) -> Result<(), SinkError> {
        self.apply(event);
        Ok(())
    }
}

#[async_trait::async_trait]
impl mixseek_round::RankingSource for LiveRanking {
    async fn ranking(
        &self,
        execution_id: &ExecutionId,
    ) -> Result<Option<mixseek_prompt::Ranking>, mixseek_round::RankingError> {
        if *execution_id != self.execution_id {
            return Err(mixseek_round::RankingError(format!(
                "the live ranking is of execution {}, not {execution_id}",
                self.execution_id
            )));
        }
        Ok(Some(self.snapshot()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mixseek_core::{MemberSubmissionsRecord, RoundRecord, ScoreDetails, Usage};

    fn record(execution: &str, team: &str, name: &str, round: u32, score: f64) -> RoundRecord {
        let now = chrono::Utc::now();
        RoundRecord {
            execution_id: execution.into(),
            team_id: team.into(),
            team_name: name.into(),
            round_number: round,
            prompt: String::new(),
            submission_content: String::new(),
            score_details: ScoreDetails {
                overall_score: score,
                metrics: Vec::new(),
            },
            round_started_at: now,
            round_ended_at: now,
            leader_messages: Vec::new(),
            member_submissions: MemberSubmissionsRecord {
                execution_id: execution.into(),
                team_id: team.into(),
                team_name: name.into(),
                round_number: round,
                submissions: Vec::new(),
            },
            agent_usage: Usage::default(),
            evaluation_usage: Usage::default(),
            applied_injections: Vec::new(),
        }
    }

    fn evaluated(team: &str, name: &str, round: u32, score: f64) -> Event {
        Event::Evaluated(Box::new(record("e", team, name, round, score)))
    }

    fn rows(r: &LiveRanking) -> Vec<(String, String, f64, u32)> {
        r.snapshot()
            .iter()
            .map(|e| {
                (
                    e.team_id.clone(),
                    e.team_name.clone(),
                    e.max_score,
                    e.total_rounds,
                )
            })
            .collect()
    }

    #[tokio::test]
    async fn follows_the_query_order_best_score_then_team_id() {
        let r = LiveRanking::new("e", [("b", "B", 1, 50.0)]);
        for e in [
            evaluated("a", "A", 1, 50.0),
            evaluated("c", "C", 1, 70.0),
            evaluated("b", "B2", 2, 40.0),
            // another execution's round is not this ranking's
            Event::Evaluated(Box::new(record("other", "z", "Z", 1, 99.0))),
        ] {
            r.emit(&e).await.expect("emit");
        }
        assert_eq!(
            rows(&r),
            vec![
                ("c".into(), "C".into(), 70.0, 1),
                ("a".into(), "A".into(), 50.0, 1),
                // the name of its latest round, its best score, both rounds
                ("b".into(), "B2".into(), 50.0, 2),
            ]
        );
        // a round written again replaces its row (the last write wins)
        r.emit(&evaluated("a", "A", 1, 90.0)).await.expect("emit");
        assert_eq!(rows(&r)[0], ("a".into(), "A".into(), 90.0, 1));
        assert_eq!(rows(&r).len(), 3);
    }

    #[tokio::test]
    async fn a_cut_off_team_is_read_back() {
        let r = LiveRanking::new("e", []);
        r.emit(&evaluated("a", "A", 1, 10.0)).await.expect("emit");
        r.set_team(
            "a",
            [
                ("a", "A", 1, 10.0),
                ("a", "A", 2, 30.0),
                ("b", "B", 1, 99.0),
            ],
        );
        assert_eq!(rows(&r), vec![("a".into(), "A".into(), 30.0, 2)]);
        r.set_team("a", []);
        assert!(rows(&r).is_empty());
    }

    #[tokio::test]
    async fn a_final_round_the_board_lacks_is_added() {
        let r = LiveRanking::new("e", []);
        r.emit(&evaluated("a", "A", 1, 10.0)).await.expect("emit");
        let finished = |round: u32, score: f64| {
            let now = chrono::Utc::now();
            Event::TeamFinished {
                execution_id: "e".into(),
                team_id: "a".into(),
                team_name: "A".into(),
                status: mixseek_core::TeamStatusKind::Completed,
                best: Some(Box::new(mixseek_core::LeaderboardEntry {
                    id: None,
                    execution_id: "e".into(),
                    team_id: "a".into(),
                    team_name: "A".into(),
                    round_number: round,
                    submission_content: String::new(),
                    submission_format: "md".into(),
                    score,
                    score_details: ScoreDetails {
                        overall_score: score,
                        metrics: Vec::new(),
                    },
                    final_submission: true,
                    exit_reason: None,
                    created_at: now,
                    updated_at: now,
                })),
                exit_reason: None,
                rounds_completed: 1,
                error_message: None,
                usage: Usage::default(),
                at: now,
            }
        };
        // its best round is on the board: nothing changes
        r.emit(&finished(1, 77.0)).await.expect("emit");
        assert_eq!(rows(&r), vec![("a".into(), "A".into(), 10.0, 1)]);
        r.emit(&finished(2, 20.0)).await.expect("emit");
        assert_eq!(rows(&r), vec![("a".into(), "A".into(), 20.0, 2)]);
    }
}
