//! Progress files for live views: `WORKSPACE/logs/{execution_id}.{team_id}.progress.json`,
//! the original's format, overwritten at each step; write failures are logged, never fatal.
//! Unlike the original, a completed team reports its last executed round in `current_round`
//! and its best round in `best_round`, and a failed team always ends in status `failed`.
//! Ours also carry the team's best score so far (`best_score`) and what its LLM calls used
//! (`usage`: tokens, requests, cost), and each execution has one more file,
//! `{execution_id}.execution.json` (the process id, status, task, configuration file, team
//! count): what the web UI's live view reads, since a running execution holds the database.
//! A plain `exec` leaves its files behind when it ends, as the original does; an experiment
//! asks for them to be removed once its execution ended ([`ProgressFiles::removed_at_end`]),
//! since an experiment of 10,000 executions would otherwise leave 40,000 files in `logs/`.

use crate::open_files::OpenFiles;
use chrono::{SecondsFormat, Utc};
use mixseek_core::{Event, EventSink, ExecutionId, SinkError, TeamId, TeamStatusKind, Usage};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Mutex;

#[derive(Debug, Clone, Default)]
struct TeamProgress {
    team_name: String,
    current_round: u32,
    best_score: Option<f64>,
    usage: Usage,
}

#[derive(Debug)]
pub(crate) struct ProgressFiles {
    dir: PathBuf,
    total_rounds: Mutex<u32>,
    teams: Mutex<HashMap<TeamId, TeamProgress>>,
    /// The workflows' ids (no leader).
    workflows: HashSet<TeamId>,
    /// The orchestrator file, named in the execution file.
    config: Option<PathBuf>,
    /// The effective settings, recorded in the execution file.
    settings: Option<serde_json::Value>,
    /// The execution file's fields from `ExecutionStarted`, kept for its last version.
    started: Mutex<serde_json::Value>,
    /// Remove the execution's files once it ended instead of writing their last version.
    remove_at_end: bool,
    /// The teams' files, kept open from their first write to their team's end.
    open: OpenFiles,
}

/// What one progress file says about a team.
struct Snapshot<'a> {
    execution_id: &'a ExecutionId,
    team_id: &'a TeamId,
    team_name: &'a str,
    /// `running`, `completed` or `failed`.
    status: &'a str,
    round: u32,
    /// The agent at work (`leader`, `evaluator`), if any.
    agent: Option<&'a str>,
    error: Option<&'a str>,
    best_round: Option<u32>,
}

/// A progress file's content, in the original's key order (ours follow: `best_score`, `usage`).
#[derive(serde::Serialize)]
struct ProgressDoc<'a> {
    execution_id: &'a ExecutionId,
    status: &'a str,
    current_round: u32,
    total_rounds: u32,
    team_id: &'a TeamId,
    team_name: &'a str,
    current_agent: Option<&'a str>,
    updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    best_round: Option<u32>,
    best_score: Option<f64>,
    usage: UsageDoc,
}

/// What a team's LLM calls used so far.
#[derive(serde::Serialize)]
struct UsageDoc {
    input_tokens: u64,
    output_tokens: u64,
    requests: u64,
    cost_usd: f64,
}

impl ProgressFiles {
    pub(crate) fn new(logs_dir: PathBuf, total_rounds: u32) -> Self {
        Self {
            dir: logs_dir,
            total_rounds: Mutex::new(total_rounds),
            teams: Mutex::new(HashMap::new()),
            workflows: HashSet::new(),
            config: None,
            settings: None,
            started: Mutex::new(json!({})),
            remove_at_end: false,
            open: OpenFiles::default(),
        }
    }

    /// With `remove`, the execution's files (its execution file and every team's) are removed
    /// when it ends (`ExecutionFinished`, whatever its status), instead of being left with
    /// their final state: the store has the rows by then, since the store's sink commits the
    /// summary before the secondary sinks get the event. An execution that could not record
    /// its end keeps them (its process is gone, so the live view shows it `stopped`).
    pub(crate) fn removed_at_end(mut self, remove: bool) -> Self {
        self.remove_at_end = remove;
        self
    }

    /// Names the orchestrator file in the execution file (the UI resumes with it).
    pub(crate) fn with_config(
        mut self,
        orchestrator_file: PathBuf,
        settings: Option<serde_json::Value>,
    ) -> Self {
        self.config = Some(orchestrator_file);
        self.settings = settings;
        self
    }

    /// The execution file of `execution_id`.
    pub(crate) fn execution_path(&self, execution_id: &ExecutionId) -> PathBuf {
        self.dir.join(format!("{execution_id}.execution.json"))
    }

    /// Writes the execution file (`fields` are added to the process id and the time).
    fn write_execution(&self, execution_id: &ExecutionId, fields: serde_json::Value) {
        let mut v = json!({
            "execution_id": execution_id,
            "pid": std::process::id(),
            "config": self.config.as_ref().map(|p| p.display().to_string()),
            "settings": self.settings,
            "updated_at": Utc::now().to_rfc3339_opts(SecondsFormat::Micros, false),
        });
        if let (Some(obj), serde_json::Value::Object(more)) = (v.as_object_mut(), fields) {
            obj.extend(more);
        }
        let path = self.execution_path(execution_id);
        self.write_json(&path, &v);
        // written twice per execution: not worth a descriptor
        self.open.close(&path);
    }

    /// Writes `v` to `path` (the file stays open for the next write: see [`OpenFiles`]).
    fn write_json(&self, path: &std::path::Path, v: &impl serde::Serialize) {
        let text = serde_json::to_string_pretty(v).unwrap_or_default();
        let written = match self.open.rewrite(path, &text) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(&self.dir).and_then(|_| self.open.rewrite(path, &text))
            }
            other => other,
        };
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "cannot write progress file");
        }
    }

    /// `workflows` are workflow ids: their rounds start with `current_agent = null`.
    pub(crate) fn with_workflows(mut self, workflows: HashSet<TeamId>) -> Self {
        self.workflows = workflows;
        self
    }

    /// The progress file of team `team_id` in execution `execution_id`.
    pub(crate) fn path(&self, execution_id: &ExecutionId, team_id: &TeamId) -> PathBuf {
        self.dir
            .join(format!("{execution_id}.{team_id}.progress.json"))
    }

    fn write(&self, snapshot: &Snapshot<'_>) {
        let &Snapshot {
            execution_id,
            team_id,
            team_name,
            status,
            round,
            agent,
            error,
            best_round,
        } = snapshot;
        let total = self.total_rounds.lock().map(|t| *t).unwrap_or(0);
        let p = self.current(team_id);
        let doc = ProgressDoc {
            execution_id,
            status,
            current_round: round,
            total_rounds: total,
            team_id,
            team_name,
            current_agent: agent,
            updated_at: Utc::now().to_rfc3339_opts(SecondsFormat::Micros, false),
            error_message: error,
            best_round,
            best_score: p.best_score,
            usage: UsageDoc {
                input_tokens: p.usage.input_tokens,
                output_tokens: p.usage.output_tokens,
                requests: p.usage.requests,
                cost_usd: p.usage.cost_usd,
            },
        };
        self.write_json(&self.path(execution_id, team_id), &doc);
    }

    /// What is known of `team_id` so far.
    fn current(&self, team_id: &TeamId) -> TeamProgress {
        let teams = match self.teams.lock() {
            Ok(t) => t,
            Err(p) => p.into_inner(),
        };
        teams.get(team_id).cloned().unwrap_or_default()
    }

    /// Adds to what `team_id` knows (its usage, its best score).
    fn update(&self, team_id: &TeamId, f: impl FnOnce(&mut TeamProgress)) {
        let mut teams = match self.teams.lock() {
            Ok(t) => t,
            Err(p) => p.into_inner(),
        };
        f(teams.entry(team_id.clone()).or_default());
    }

    /// Removes the files of `execution_id`: its execution file, and the progress file of every
    /// team it wrote or announced (`ExecutionStarted` names every team, those whose files an
    /// earlier process of a resumed execution wrote included). A file already gone is fine.
    fn remove_all(&self, execution_id: &ExecutionId) {
        let teams: Vec<TeamId> = match self.teams.lock() {
            Ok(t) => t.keys().cloned().collect(),
            Err(p) => p.into_inner().keys().cloned().collect(),
        };
        let paths = teams
            .iter()
            .map(|t| self.path(execution_id, t))
            .chain(std::iter::once(self.execution_path(execution_id)));
        for path in paths {
            self.open.close(&path);
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot remove progress file");
                }
                _ => {}
            }
        }
    }

    fn remember(&self, team_id: &TeamId, team_name: &str, round: Option<u32>) -> TeamProgress {
        let mut teams = match self.teams.lock() {
            Ok(t) => t,
            Err(p) => p.into_inner(),
        };
        let e = teams.entry(team_id.clone()).or_default();
        e.team_name = team_name.to_string();
        if let Some(r) = round {
            e.current_round = r;
        }
        e.clone()
    }
}

#[async_trait::async_trait]
impl EventSink for ProgressFiles {
    async fn emit(&self, event: &Event) -> Result<(), SinkError> {
        match event {
            Event::ExecutionStarted {
                execution_id,
                user_prompt,
                teams,
                max_rounds,
                at,
                ..
            } => {
                if let Ok(mut t) = self.total_rounds.lock() {
                    *t = *max_rounds;
                }
                let started = json!({
                    "status": "running",
                    "user_prompt": user_prompt,
                    "total_teams": teams.len(),
                    "max_rounds": max_rounds,
                    "started_at": at.to_rfc3339_opts(SecondsFormat::Micros, false),
                });
                if let Ok(mut s) = self.started.lock() {
                    *s = started.clone();
                }
                // Every team, so that the end removes the files of those that write none in
                // this process too.
                for t in teams {
                    self.remember(&t.team_id, &t.team_name, None);
                }
                self.write_execution(execution_id, started);
            }
            Event::ExecutionFinished(summary) if self.remove_at_end => {
                self.remove_all(&summary.execution_id);
            }
            Event::ExecutionFinished(summary) => {
                let mut fields = self.started.lock().map(|s| s.clone()).unwrap_or_default();
                if let Some(obj) = fields.as_object_mut() {
                    obj.insert("status".into(), json!(summary.status));
                    obj.insert("best_team_id".into(), json!(summary.best_team_id));
                    obj.insert("best_score".into(), json!(summary.best_score));
                    obj.insert(
                        "completed_at".into(),
                        json!(Utc::now().to_rfc3339_opts(SecondsFormat::Micros, false)),
                    );
                }
                self.write_execution(&summary.execution_id, fields);
            }
            Event::LlmCall(call) => {
                if let Some(team) = &call.team_id {
                    self.update(&TeamId::from(team.as_str()), |p| p.usage += call.usage);
                }
            }
            Event::RoundStarted {
                execution_id,
                team_id,
                team_name,
                round_number,
                ..
            } => {
                self.remember(team_id, team_name, Some(*round_number));
                // A workflow has no leader: the original writes null there.
                let agent = (!self.workflows.contains(team_id)).then_some("leader");
                self.write(&Snapshot {
                    execution_id,
                    team_id,
                    team_name,
                    status: "running",
                    round: *round_number,
                    agent,
                    error: None,
                    best_round: None,
                });
            }
            Event::SubmissionReady {
                execution_id,
                team_id,
                team_name,
                round_number,
                ..
            } => {
                self.write(&Snapshot {
                    execution_id,
                    team_id,
                    team_name,
                    status: "running",
                    round: *round_number,
                    agent: Some("evaluator"),
                    error: None,
                    best_round: None,
                });
            }
            Event::Evaluated(r) => {
                let score = r.score_details.overall_score;
                self.update(&r.team_id, |p| {
                    p.best_score = Some(p.best_score.map_or(score, |b| b.max(score)));
                });
                self.write(&Snapshot {
                    execution_id: &r.execution_id,
                    team_id: &r.team_id,
                    team_name: &r.team_name,
                    status: "running",
                    round: r.round_number,
                    agent: None,
                    error: None,
                    best_round: None,
                });
            }
            Event::TeamFinished {
                execution_id,
                team_id,
                team_name,
                status,
                best,
                error_message,
                rounds_completed,
                ..
            } => {
                let p = self.remember(team_id, team_name, None);
                let last = p.current_round.max(*rounds_completed);
                let best_round = best.as_ref().map(|b| b.round_number);
                if *status == TeamStatusKind::Completed {
                    self.write(&Snapshot {
                        execution_id,
                        team_id,
                        team_name,
                        status: "completed",
                        round: last,
                        agent: None,
                        error: None,
                        best_round,
                    });
                } else {
                    let msg = error_message.as_deref().unwrap_or("Unknown error");
                    self.write(&Snapshot {
                        execution_id,
                        team_id,
                        team_name,
                        status: "failed",
                        round: (*rounds_completed).max(1),
                        agent: None,
                        error: Some(msg),
                        best_round,
                    });
                }
                // the team's last write
                self.open.close(&self.path(execution_id, team_id));
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mixseek_core::TeamRef;

    #[tokio::test]
    async fn files_follow_the_team() {
        let dir = tempfile::tempdir().expect("tmp");
        let pf = ProgressFiles::new(dir.path().to_path_buf(), 3);
        let at = mixseek_core::time::now_utc();
        pf.emit(&Event::RoundStarted {
            execution_id: "e".into(),
            team_id: "t".into(),
            team_name: "T".into(),
            round_number: 2,
            at,
        })
        .await
        .expect("emit");
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(pf.path(&"e".into(), &"t".into())).expect("file"),
        )
        .expect("json");
        assert_eq!(
            (
                v["status"].as_str(),
                v["current_round"].as_u64(),
                v["total_rounds"].as_u64()
            ),
            (Some("running"), Some(2), Some(3))
        );
        assert_eq!(v["current_agent"], "leader");
        assert!(
            v["updated_at"]
                .as_str()
                .unwrap_or_default()
                .ends_with("+00:00")
        );
        assert!(v.get("error_message").is_none());
        // kept open for the team's next write…
        assert_eq!(pf.open.open_count(), 1);
        pf.emit(&Event::TeamFinished {
            execution_id: "e".into(),
            team_id: "t".into(),
            team_name: "T".into(),
            status: TeamStatusKind::Failed,
            best: None,
            exit_reason: None,
            rounds_completed: 1,
            error_message: Some("boom".into()),
            usage: Default::default(),
            at,
        })
        .await
        .expect("emit");
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(pf.path(&"e".into(), &"t".into())).expect("file"),
        )
        .expect("json");
        assert_eq!(
            (v["status"].as_str(), v["error_message"].as_str()),
            (Some("failed"), Some("boom"))
        );
        // … and closed after its last
        assert_eq!(pf.open.open_count(), 0);
    }

    #[tokio::test]
    async fn a_workflow_round_has_no_current_agent() {
        let dir = tempfile::tempdir().expect("tmp");
        let pf = ProgressFiles::new(dir.path().to_path_buf(), 3)
            .with_workflows(HashSet::from([TeamId::from("wf")]));
        for team in ["wf", "t"] {
            pf.emit(&Event::RoundStarted {
                execution_id: "e".into(),
                team_id: team.into(),
                team_name: team.into(),
                round_number: 1,
                at: mixseek_core::time::now_utc(),
            })
            .await
            .expect("emit");
        }
        let read = |team: &str| -> serde_json::Value {
            serde_json::from_str(
                &std::fs::read_to_string(pf.path(&"e".into(), &team.into())).expect("file"),
            )
            .expect("json")
        };
        assert_eq!(read("wf")["current_agent"], serde_json::Value::Null);
        assert_eq!(read("t")["current_agent"], "leader");
    }

    #[tokio::test]
    async fn files_carry_usage_best_score_and_the_execution() {
        use mixseek_core::{LlmCallRecord, MemberSubmissionsRecord, RoundRecord, ScoreDetails};
        let dir = tempfile::tempdir().expect("tmp");
        let pf = ProgressFiles::new(dir.path().to_path_buf(), 2).with_config(
            PathBuf::from("/ws/orch.toml"),
            Some(json!({"orchestrator › max_rounds": 2})),
        );
        let at = mixseek_core::time::now_utc();
        pf.emit(&Event::ExecutionStarted {
            execution_id: "e".into(),
            user_prompt: "the task".into(),
            teams: Vec::new(),
            config_hash: "h".into(),
            max_rounds: 2,
            at,
        })
        .await
        .expect("emit");
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 5,
            requests: 1,
            cost_usd: 0.25,
            ..Usage::default()
        };
        for _ in 0..2 {
            pf.emit(&Event::LlmCall(Box::new(LlmCallRecord {
                execution_id: Some("e".into()),
                team_id: Some("t".into()),
                round_number: Some(1),
                role: mixseek_core::Role::Leader,
                model: "mock:x".into(),
                usage,
                latency_ms: 1,
                attempts: 1,
                cache_hit: false,
                error: None,
                at,
            })))
            .await
            .expect("emit");
        }
        for (round, score) in [(1, 70.0), (2, 60.0)] {
            pf.emit(&Event::Evaluated(Box::new(RoundRecord {
                execution_id: "e".into(),
                team_id: "t".into(),
                team_name: "T".into(),
                round_number: round,
                prompt: String::new(),
                submission_content: String::new(),
                score_details: ScoreDetails {
                    overall_score: score,
                    metrics: Vec::new(),
                },
                round_started_at: at,
                round_ended_at: at,
                leader_messages: Vec::new(),
                member_submissions: MemberSubmissionsRecord {
                    execution_id: "e".into(),
                    team_id: "t".into(),
                    team_name: "T".into(),
                    round_number: round,
                    submissions: Vec::new(),
                },
                agent_usage: Usage::default(),
                evaluation_usage: Usage::default(),
                applied_injections: Vec::new(),
            })))
            .await
            .expect("emit");
        }
        let read = |p: PathBuf| -> serde_json::Value {
            serde_json::from_str(&std::fs::read_to_string(p).expect("file")).expect("json")
        };
        let team = read(pf.path(&"e".into(), &"t".into()));
        assert_eq!(team["best_score"], 70.0, "the best so far, not the last");
        assert_eq!(team["usage"]["input_tokens"], 20);
        assert_eq!(team["usage"]["requests"], 2);
        assert_eq!(team["usage"]["cost_usd"], 0.5);
        let exec = read(pf.execution_path(&"e".into()));
        assert_eq!(exec["status"], "running");
        assert_eq!(exec["pid"], std::process::id());
        assert_eq!(exec["user_prompt"], "the task");
        assert_eq!(exec["config"], "/ws/orch.toml");
        assert_eq!(exec["settings"]["orchestrator › max_rounds"], 2);
    }

    /// Plays one execution of teams `a` and `b` to its end on `pf` (team `b` writes no file:
    /// it never starts), next to another execution's file.
    async fn play_to_the_end(pf: &ProgressFiles) {
        let at = mixseek_core::time::now_utc();
        let team = |id: &str| TeamRef {
            team_id: id.into(),
            team_name: id.to_uppercase(),
        };
        pf.emit(&Event::ExecutionStarted {
            execution_id: "e".into(),
            user_prompt: "p".into(),
            teams: vec![team("a"), team("b")],
            config_hash: "h".into(),
            max_rounds: 1,
            at,
        })
        .await
        .expect("emit");
        pf.emit(&Event::RoundStarted {
            execution_id: "e".into(),
            team_id: "a".into(),
            team_name: "A".into(),
            round_number: 1,
            at,
        })
        .await
        .expect("emit");
        pf.emit(&Event::TeamFinished {
            execution_id: "e".into(),
            team_id: "a".into(),
            team_name: "A".into(),
            status: TeamStatusKind::Completed,
            best: None,
            exit_reason: None,
            rounds_completed: 1,
            error_message: None,
            usage: Default::default(),
            at,
        })
        .await
        .expect("emit");
        pf.emit(&Event::ExecutionFinished(Box::new(
            mixseek_core::ExecutionSummary {
                execution_id: "e".into(),
                user_prompt: "p".into(),
                team_results: vec![],
                best_team_id: None,
                best_score: None,
                total_execution_time_seconds: 1.0,
                failed_teams_info: vec![],
                created_at: at,
                status: mixseek_core::ExecutionStatus::Failed,
                usage: Default::default(),
                usage_by_role: Default::default(),
                stop_reason: None,
                stopped_team_ids: vec![],
            },
        )))
        .await
        .expect("emit");
    }

    fn names_in(dir: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn files_removed_at_end_go_when_the_execution_ends_and_are_kept_otherwise() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("other.x.progress.json"), "{}").expect("w");
        // An earlier process of a resumed execution left team b's file.
        std::fs::write(dir.path().join("e.b.progress.json"), "{}").expect("w");
        let pf = ProgressFiles::new(dir.path().to_path_buf(), 1).removed_at_end(true);
        play_to_the_end(&pf).await;
        assert_eq!(names_in(dir.path()), ["other.x.progress.json"]);

        // By default (`exec`) they stay, with the final state.
        let dir = tempfile::tempdir().expect("tmp");
        let pf = ProgressFiles::new(dir.path().to_path_buf(), 1);
        play_to_the_end(&pf).await;
        assert_eq!(
            names_in(dir.path()),
            ["e.a.progress.json", "e.execution.json"]
        );
        let exec: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(pf.execution_path(&"e".into())).expect("file"),
        )
        .expect("json");
        assert_eq!(exec["status"], "failed");
    }
}
