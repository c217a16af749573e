//! The orchestrator in process, on the offline `mock:` provider and a real DuckDB file:
//! budgets before a team starts, Ctrl-C before and during a run, and resuming.

use mixseek_config::{EnvVars, LoadedConfig, Overrides, Workspace};
use mixseek_core::{ExecutionStatus, ExecutionSummary};
use mixseek_orchestrator::{Orchestrator, RunOptions};
use std::path::Path;

/// Writes a competition of one-leader mock teams and loads it.
fn config(dir: &Path, teams: &[(&str, &str)], orchestrator: &str) -> LoadedConfig {
    let mut orch = format!(
        "[orchestrator]\nevaluator_config = \"evaluator.toml\"\njudgment_config = \"judgment.toml\"\n{orchestrator}\n"
    );
    for (id, model) in teams {
        orch.push_str(&format!(
            "\n[[orchestrator.teams]]\nconfig = \"team_{id}.toml\"\n"
        ));
        std::fs::write(
            dir.join(format!("team_{id}.toml")),
            format!(
                "[team]\nteam_id = \"{id}\"\nteam_name = \"Team {id}\"\n[team.leader]\nmodel = \"{model}\"\n"
            ),
        )
        .expect("write team");
    }
    std::fs::write(
        dir.join("evaluator.toml"),
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\n",
    )
    .expect("write evaluator");
    std::fs::write(
        dir.join("judgment.toml"),
        "model = \"mock:judge-continue\"\n",
    )
    .expect("write judgment");
    let path = dir.join("orchestrator.toml");
    std::fs::write(&path, orch).expect("write orchestrator");
    let ws = Workspace::at(dir.join("ws"));
    mixseek_config::load(
        &path,
        &ws,
        &EnvVars::from_pairs(Vec::<(String, String)>::new()),
        &Overrides::default(),
    )
    .into_config()
    .expect("a valid configuration")
}

fn rounds_of(config: &LoadedConfig, summary: &ExecutionSummary, team: &str) -> Vec<u32> {
    let store = mixseek_store::Store::open(config.workspace.db_path()).expect("open");
    let mut r: Vec<u32> = store
        .team_rounds(summary.execution_id.as_str(), team)
        .expect("rounds")
        .iter()
        .map(|r| r.state.round_number)
        .collect();
    r.sort_unstable();
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_whose_turn_comes_after_the_budget_is_spent_is_not_started() {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(
        dir.path(),
        &[("a", "mock:leader-a"), ("b", "mock:leader-b")],
        "min_rounds = 2\nmax_rounds = 2\nmax_concurrent_teams = 1\ntimeout_per_team_seconds = 60",
    );
    let mut opts = RunOptions::new("Name three rivers");
    opts.max_tokens = Some(1);
    let summary = Orchestrator::new(cfg.clone()).run(opts).await.expect("run");
    assert_eq!(summary.status, ExecutionStatus::Completed, "{summary:?}");
    assert_eq!(summary.exit_code(), 0);
    assert_eq!(summary.stopped_team_ids, vec!["b".to_string()]);
    assert!(summary.failed_teams_info.is_empty(), "{summary:?}");
    assert_eq!(summary.total_teams(), 2);
    assert!(
        summary
            .stop_reason
            .as_deref()
            .is_some_and(|r| r.contains("token budget")),
        "{summary:?}"
    );
    let a = &summary.team_results[0];
    assert_eq!(
        (a.team_id.as_str(), a.round_number, a.exit_reason.as_deref()),
        ("a", 1, Some("budget_exceeded"))
    );
    assert_eq!(rounds_of(&cfg, &summary, "a"), vec![1]);
    assert!(rounds_of(&cfg, &summary, "b").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupted_teams_are_counted_and_continued_on_resume() {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(
        dir.path(),
        &[("a", "mock:leader-a"), ("b", "mock:leader-b")],
        "min_rounds = 2\nmax_rounds = 2\ntimeout_per_team_seconds = 60",
    );
    // Cancelled before it starts: no team runs, every team is interrupted.
    let opts = RunOptions::new("Name three rivers");
    opts.cancel.cancel();
    let first = Orchestrator::new(cfg.clone()).run(opts).await.expect("run");
    assert_eq!(first.status, ExecutionStatus::Interrupted);
    assert_eq!(
        first.stopped_team_ids,
        vec!["a".to_string(), "b".to_string()]
    );
    assert_eq!(
        (
            first.total_teams(),
            first.completed_teams(),
            first.failed_teams()
        ),
        (2, 0, 0)
    );
    assert!(
        first
            .stop_reason
            .as_deref()
            .is_some_and(|r| r.contains("--resume")),
        "{first:?}"
    );

    // Resuming runs every team from the start, with the stored task.
    let mut opts = RunOptions::new("");
    opts.resume = Some(first.execution_id.to_string());
    let resumed = Orchestrator::new(cfg.clone())
        .run(opts)
        .await
        .expect("resume");
    assert_eq!(resumed.execution_id, first.execution_id);
    assert_eq!(resumed.user_prompt, "Name three rivers");
    assert_eq!(resumed.status, ExecutionStatus::Completed, "{resumed:?}");
    assert!(resumed.stopped_team_ids.is_empty());
    assert_eq!(rounds_of(&cfg, &resumed, "a"), vec![1, 2]);
    assert_eq!(rounds_of(&cfg, &resumed, "b"), vec![1, 2]);
    assert!(resumed.usage.requests > 0);

    // Finished: refused.
    let mut opts = RunOptions::new("");
    opts.resume = Some(first.execution_id.to_string());
    let err = Orchestrator::new(cfg)
        .run(opts)
        .await
        .expect_err("already finished");
    assert!(err.to_string().contains("already finished"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_summary_adds_the_earlier_usage_and_time() {
    let dir = tempfile::tempdir().expect("tmp");
    // Team a finishes quickly; team b's leader is slow enough to be interrupted in round 1.
    let cfg = config(
        dir.path(),
        &[("a", "mock:leader-a"), ("b", "mock:leader-b-3s")],
        "min_rounds = 2\nmax_rounds = 2\ntimeout_per_team_seconds = 60",
    );
    let opts = RunOptions::new("Name three rivers");
    let cancel = opts.cancel.clone();
    let run = tokio::spawn({
        let cfg = cfg.clone();
        async move { Orchestrator::new(cfg).run(opts).await }
    });
    // Wait for team a's result to be stored (its progress file says completed).
    let logs = cfg.workspace.logs_dir();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let done = std::fs::read_dir(&logs)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .ends_with(".a.progress.json")
            })
            .any(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains("\"completed\"")));
        if done {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "team a never finished"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    cancel.cancel();
    let first = run.await.expect("join").expect("run");
    assert_eq!(first.status, ExecutionStatus::Interrupted);
    assert_eq!(first.stopped_team_ids, vec!["b".to_string()]);
    assert_eq!(first.completed_teams(), 1, "team a's result is kept");
    assert!(first.usage.requests > 0);

    let mut opts = RunOptions::new("");
    opts.resume = Some(first.execution_id.to_string());
    let resumed = Orchestrator::new(cfg.clone())
        .run(opts)
        .await
        .expect("resume");
    assert_eq!(resumed.status, ExecutionStatus::Completed, "{resumed:?}");
    assert_eq!(resumed.completed_teams(), 2);
    assert_eq!(
        rounds_of(&cfg, &resumed, "a"),
        vec![1, 2],
        "team a not re-run"
    );
    assert!(
        resumed.usage.requests > first.usage.requests,
        "the earlier calls are counted: {} then {}",
        first.usage.requests,
        resumed.usage.requests
    );
    assert!(
        resumed.total_execution_time_seconds > first.total_execution_time_seconds,
        "the earlier time is counted"
    );
    let leader_a_calls = 2; // team a's two rounds, in the first process only
    assert!(
        resumed.usage_by_role.0[&mixseek_core::Role::Leader].requests >= leader_a_calls + 2,
        "{:?}",
        resumed.usage_by_role
    );
}

/// A progress display with a bug: it panics when team `b` starts its second round. The display
/// is called inside the team's task, so this is a panic inside one team (fault injection).
struct PanickingDisplay;

#[async_trait::async_trait]
impl mixseek_core::EventSink for PanickingDisplay {
    async fn emit(&self, event: &mixseek_core::Event) -> Result<(), mixseek_core::SinkError> {
        if let mixseek_core::Event::RoundStarted {
            team_id,
            round_number: 2,
            ..
        } = event
            && team_id == "b"
        {
            panic!("injected fault in team b, round 2");
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_one_team_fails_that_team_only_and_keeps_its_completed_rounds() {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(
        dir.path(),
        &[
            ("a", "mock:leader-a"),
            ("b", "mock:leader-b"),
            ("c", "mock:leader-c"),
        ],
        "min_rounds = 3\nmax_rounds = 3\nmax_concurrent_teams = 3\ntimeout_per_team_seconds = 60",
    );
    let mut opts = RunOptions::new("Name three rivers");
    opts.display = Some(std::sync::Arc::new(PanickingDisplay));
    let summary = Orchestrator::new(cfg.clone())
        .run(opts)
        .await
        .expect("the run goes on");

    assert_eq!(
        summary.status,
        ExecutionStatus::PartialFailure,
        "{summary:?}"
    );
    assert_eq!(summary.exit_code(), 1);
    assert_eq!(summary.failed_teams_info.len(), 1, "{summary:?}");
    let failure = &summary.failed_teams_info[0];
    assert_eq!(failure.team_id, "b");
    let m = &failure.error_message;
    assert!(m.starts_with("internal error (a bug in mixseek"), "{m}");
    assert!(m.contains("injected fault in team b, round 2"), "{m}");
    assert!(
        m.contains("tests/engine.rs:"),
        "the message says where: {m}"
    );
    // The other teams played all their rounds; b keeps its first round as its result.
    assert_eq!(rounds_of(&cfg, &summary, "a"), vec![1, 2, 3]);
    assert_eq!(rounds_of(&cfg, &summary, "c"), vec![1, 2, 3]);
    assert_eq!(rounds_of(&cfg, &summary, "b"), vec![1]);
    let b = summary
        .team_results
        .iter()
        .find(|r| r.team_id == "b")
        .expect("b's completed round is a result");
    assert_eq!(b.round_number, 1);
    assert_eq!(b.exit_reason.as_deref(), Some("partial_failure"));
}
