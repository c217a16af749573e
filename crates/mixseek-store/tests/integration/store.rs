//! Writes and reads against a real DuckDB file: idempotent upserts, the ranking's tie rule,
//! 50 concurrent teams, decisions, final submissions, the execution row, LLM calls, PII.

use crate::common;

use common::*;
use mixseek_core::{Event, EventSink, ExitReason, LlmCallRecord, Role, TeamStatusKind, Usage};
use mixseek_core::{MaskingSpec, PiiMasker};
use mixseek_store::{LeaderboardScope, Store, StoreError};

#[tokio::test]
async fn upserts_are_idempotent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    let r = round(EXEC, "alpha", "Alpha", 1, 80.0, "first");
    for _ in 0..3 {
        writer
            .write(&Event::Evaluated(Box::new(r.clone())))
            .await
            .expect("write");
    }
    // the same key again with new content: updated in place, team_name kept
    let mut r2 = round(EXEC, "alpha", "Alpha renamed", 1, 82.5, "second");
    r2.round_ended_at = r.round_ended_at;
    writer
        .write(&Event::Evaluated(Box::new(r2)))
        .await
        .expect("rewrite");
    for table in ["leader_board", "round_history", "round_status"] {
        assert_eq!(store.count_rows(table).expect("count"), 1, "{table}");
    }
    let rounds = store.team_rounds(EXEC, "alpha").expect("rounds");
    assert_eq!(rounds.len(), 1);
    assert_eq!(rounds[0].state.submission_content, "second");
    assert_eq!(rounds[0].state.evaluation_score, 82.5);
    assert_eq!(
        rounds[0].team_name, "Alpha",
        "the first team name is kept, as in the original"
    );
    // a batch with the same key twice: the last one wins, still one row
    let batch = vec![
        Event::Evaluated(Box::new(round(EXEC, "beta", "Beta", 1, 10.0, "x"))),
        Event::Evaluated(Box::new(round(EXEC, "beta", "Beta", 1, 20.0, "y"))),
    ];
    writer.write_all(batch).await.expect("batch");
    let beta = store.team_rounds(EXEC, "beta").expect("beta");
    assert_eq!((beta.len(), beta[0].state.evaluation_score), (1, 20.0));
    assert_unique_keys(&store);
}

/// Rows of a key in each round table (exactly one after any sequence of writes).
fn rows_of(store: &Store, exec: &str, team: &str, n: u32) -> Vec<i64> {
    ["round_history", "leader_board", "round_status"]
        .iter()
        .map(|t| {
            store.select(
                &format!(
                    "SELECT count(*) FROM {t} WHERE execution_id = ? AND team_id = ? AND round_number = ?"
                ),
                duckdb::params![exec, team, n],
                |r| r.get(0),
            )
            .expect("count")[0]
        })
        .collect()
}

#[tokio::test]
async fn a_batch_mixing_stored_and_new_keys_updates_the_ones_and_inserts_the_others() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    let first = round(EXEC, "alpha", "Alpha", 1, 10.0, "v1");
    writer
        .write(&Event::Evaluated(Box::new(first.clone())))
        .await
        .expect("first");
    // the stored round is judged and marked final: a rewrite must keep that
    writer
        .write(&judged(&first, decision(false, "done", Some(0.9), None)))
        .await
        .expect("judged");
    writer
        .write(&team_finished(
            Some(&first),
            "alpha",
            "Alpha",
            EXEC,
            ExitReason::NoImprovementExpected,
            TeamStatusKind::Completed,
            None,
        ))
        .await
        .expect("finished");
    let batch = vec![
        // a new round of a stored execution and team
        Event::Evaluated(Box::new(round(EXEC, "alpha", "Alpha", 2, 20.0, "new"))),
        // the stored key, rewritten (new team name ignored, as before)
        Event::Evaluated(Box::new(round(EXEC, "alpha", "Renamed", 1, 15.0, "v2"))),
        // a new team and a new execution
        Event::Evaluated(Box::new(round(EXEC, "beta", "Beta", 1, 30.0, "b"))),
        Event::Evaluated(Box::new(round(EXEC2, "alpha", "Alpha", 1, 40.0, "other"))),
    ];
    writer.write_all(batch).await.expect("batch");
    for (exec, team, n) in [
        (EXEC, "alpha", 1),
        (EXEC, "alpha", 2),
        (EXEC, "beta", 1),
        (EXEC2, "alpha", 1),
    ] {
        assert_eq!(
            rows_of(&store, exec, team, n),
            vec![1, 1, 1],
            "{exec} {team} {n}"
        );
    }
    let alpha = store.team_rounds(EXEC, "alpha").expect("alpha");
    assert_eq!(alpha.len(), 2);
    assert_eq!(alpha[0].state.submission_content, "v2");
    assert_eq!(alpha[0].state.evaluation_score, 15.0);
    assert_eq!(alpha[0].team_name, "Alpha");
    assert_eq!(
        alpha[0].decision.should_continue,
        Some(false),
        "decision kept"
    );
    assert!(alpha[0].final_submission, "final flag kept");
    assert_eq!(alpha[1].state.submission_content, "new");
    assert_eq!(store.team_rounds(EXEC2, "alpha").expect("other").len(), 1);
}

#[tokio::test]
async fn a_key_twice_in_one_batch_keeps_the_last_whether_stored_or_new() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    writer
        .write(&Event::Evaluated(Box::new(round(
            EXEC, "alpha", "Alpha", 1, 1.0, "stored",
        ))))
        .await
        .expect("stored");
    let batch = vec![
        Event::Evaluated(Box::new(round(EXEC, "alpha", "Alpha", 1, 2.0, "first"))),
        Event::Evaluated(Box::new(round(EXEC, "gamma", "Gamma", 1, 5.0, "g1"))),
        Event::Evaluated(Box::new(round(EXEC, "alpha", "Alpha", 1, 3.0, "last"))),
        Event::Evaluated(Box::new(round(EXEC, "gamma", "Gamma", 1, 6.0, "g2"))),
        Event::Evaluated(Box::new(round(EXEC, "gamma", "Gamma", 1, 7.0, "g3"))),
    ];
    writer.write_all(batch).await.expect("batch");
    assert_eq!(rows_of(&store, EXEC, "alpha", 1), vec![1, 1, 1]);
    assert_eq!(rows_of(&store, EXEC, "gamma", 1), vec![1, 1, 1]);
    let alpha = store.team_rounds(EXEC, "alpha").expect("alpha");
    assert_eq!(
        (
            alpha[0].state.submission_content.as_str(),
            alpha[0].state.evaluation_score
        ),
        ("last", 3.0)
    );
    let gamma = store.team_rounds(EXEC, "gamma").expect("gamma");
    assert_eq!(
        (
            gamma[0].state.submission_content.as_str(),
            gamma[0].state.evaluation_score
        ),
        ("g3", 7.0)
    );
}

#[tokio::test]
async fn a_batch_over_many_executions_still_upserts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    // more executions than the writer lists as a filter: the key join covers the whole table
    let execs: Vec<String> = (0..300).map(|i| format!("exec-{i:04}")).collect();
    let batch = |submission: &str| -> Vec<Event> {
        execs
            .iter()
            .map(|e| Event::Evaluated(Box::new(round(e, "alpha", "Alpha", 1, 1.0, submission))))
            .collect()
    };
    writer.write_all(batch("one")).await.expect("first");
    writer.write_all(batch("two")).await.expect("again");
    assert_eq!(store.count_rows("leader_board").expect("count"), 300);
    assert_eq!(store.count_rows("round_status").expect("count"), 300);
    let last = store.team_rounds(&execs[299], "alpha").expect("rounds");
    assert_eq!(last[0].state.submission_content, "two");
    assert_unique_keys(&store);
}

#[tokio::test]
async fn ranking_orders_by_best_score_then_team_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    let rows = [
        ("zeta", 1, 70.0),
        ("zeta", 2, 91.0),
        ("alpha", 1, 91.0),
        ("mid", 1, 50.0),
        ("beta", 1, 91.0),
        ("beta", 2, 60.0),
        ("beta", 3, 65.0),
    ];
    for (team, n, score) in rows {
        writer
            .write(&Event::Evaluated(Box::new(round(
                EXEC,
                team,
                &team.to_uppercase(),
                n,
                score,
                "s",
            ))))
            .await
            .expect("write");
    }
    // another execution must not leak in
    writer
        .write(&Event::Evaluated(Box::new(round(
            EXEC2, "mid", "MID", 1, 99.0, "s",
        ))))
        .await
        .expect("write");
    let ranking = store.ranking(EXEC).expect("ranking");
    let got: Vec<(&str, f64, u32)> = ranking
        .iter()
        .map(|r| (r.team_id.as_str(), r.max_score, r.total_rounds))
        .collect();
    assert_eq!(
        got,
        vec![
            ("alpha", 91.0, 1),
            ("beta", 91.0, 3),
            ("zeta", 91.0, 2),
            ("mid", 50.0, 1)
        ]
    );
    assert_eq!(ranking[1].team_name, "BETA");
    assert!(
        store
            .ranking("no-such-execution")
            .expect("empty")
            .is_empty()
    );
    let async_ranking = store.ranking_async(EXEC).await.expect("async");
    assert_eq!(async_ranking, ranking);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_teams_times_five_rounds_concurrently_give_exactly_250_rounds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    let mut tasks = Vec::new();
    for team in 0..50 {
        let writer = writer.clone();
        let reader = store.clone();
        tasks.push(tokio::spawn(async move {
            let team_id = format!("team-{team:03}");
            for n in 1..=5u32 {
                let r = round(
                    EXEC,
                    &team_id,
                    "T",
                    n,
                    f64::from(team) + f64::from(n) / 10.0,
                    "answer",
                );
                writer
                    .emit(&Event::Evaluated(Box::new(r.clone())))
                    .await
                    .expect("emit");
                writer
                    .emit(&judged(&r, decision(n < 5, "r", Some(0.5), None)))
                    .await
                    .expect("judged");
                // what the round controller does next: read its history; the round must be there
                let mine = reader
                    .team_rounds_async(EXEC, &team_id)
                    .await
                    .expect("read");
                assert_eq!(
                    mine.len(),
                    n as usize,
                    "{team_id} sees its committed rounds"
                );
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    for table in ["leader_board", "round_history", "round_status"] {
        assert_eq!(store.count_rows(table).expect("count"), 250, "{table}");
    }
    assert_unique_keys(&store);
    let ranking = store.ranking(EXEC).expect("ranking");
    assert_eq!(ranking.len(), 50);
    assert!(ranking.iter().all(|r| r.total_rounds == 5));
    assert_eq!(ranking[0].team_id, "team-049");
    let judged_rounds = store.completed_rounds(EXEC).expect("rounds");
    assert!(
        judged_rounds
            .iter()
            .all(|r| r.decision.should_continue.is_some())
    );
}

#[tokio::test]
async fn decisions_final_submissions_and_the_execution_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    populate(&writer).await;

    let alpha = store.team_rounds(EXEC, "alpha").expect("alpha");
    assert_eq!(alpha.len(), 3);
    let finals: Vec<u32> = alpha
        .iter()
        .filter(|r| r.final_submission)
        .map(|r| r.state.round_number)
        .collect();
    assert_eq!(finals, vec![2]);
    assert_eq!(alpha[1].decision.should_continue, Some(true));
    assert_eq!(
        alpha[1].decision.reasoning.as_deref(),
        Some("まだ改善の余地がある")
    );
    assert_eq!(
        alpha[1]
            .state
            .improvement_judgment
            .as_ref()
            .map(|j| j.confidence_score),
        Some(0.7)
    );
    assert_eq!(
        alpha[2].decision.exit_reason.as_deref(),
        Some("max_rounds_reached")
    );
    assert!(
        alpha[2].state.improvement_judgment.is_none(),
        "no judgment LLM call in round 3"
    );
    // usage: agent + evaluation + judgment
    let total = alpha[0].usage.total();
    assert_eq!((total.input_tokens, total.output_tokens), (1600, 650));
    assert_eq!(alpha[0].state.score_details.metrics.len(), 2);

    let state = store.execution_state(EXEC).expect("state").expect("exists");
    assert_eq!(state.status, "partial_failure");
    assert_eq!(state.config_hash.as_deref(), Some("sha256:abc123"));
    assert_eq!(state.teams.len(), 3);
    assert_eq!(state.created_at, t(0));
    assert_eq!(state.completed_at, Some(fixed_clock()));

    let summary = store
        .execution_summary(EXEC)
        .expect("summary")
        .expect("finished");
    assert_eq!(
        summary.best_team_id.as_ref().map(|id| id.as_str()),
        Some("alpha")
    );
    assert_eq!(summary.team_results.len(), 3);
    assert_eq!(
        summary.failed_teams_info[0].error_message,
        "Timeout after 600s"
    );
    assert_eq!(summary.partial_team_ids(), vec!["gamma".to_string()]);
    assert!(summary.stopped_team_ids.is_empty(), "every team finished");

    let detail = store
        .round_detail(EXEC, "beta", 1)
        .expect("detail")
        .expect("exists");
    assert_eq!(
        detail.submission_content,
        "<script>alert('x')</script> & more"
    );
    assert_eq!(detail.prompt.as_deref(), Some("ラウンド 1 のプロンプト"));
    assert_eq!(
        detail.metrics()[1],
        mixseek_store::MetricLine {
            metric_name: "Coverage".to_string(),
            score: Some(65.0),
            evaluator_comment: "網羅性は十分".to_string(),
            error: None,
            minimized: false,
        }
    );
    assert_eq!(
        detail
            .member_submissions
            .as_ref()
            .and_then(|m| m["success_count"].as_u64()),
        Some(1)
    );
    assert_eq!(detail.leader_messages.len(), 1);
    assert!(!detail.pii_masked);
    assert_eq!(
        detail.submission_sha256, None,
        "hashes are kept only when masking"
    );
    assert_eq!(store.count_rows("llm_calls").expect("calls"), 1);

    // the leaderboards
    let (exec, lb) = store
        .leaderboard(&LeaderboardScope::Latest)
        .expect("latest");
    assert_eq!(exec.as_deref(), Some(EXEC));
    let order: Vec<(&str, f64, u32)> = lb
        .iter()
        .map(|r| (r.team_id.as_str(), r.score, r.round_number))
        .collect();
    assert_eq!(
        order,
        vec![("alpha", 87.5, 2), ("beta", 87.5, 2), ("gamma", 55.0, 1)]
    );
    let (_, all) = store.leaderboard(&LeaderboardScope::All).expect("all");
    assert_eq!(
        (
            all[0].team_id.as_str(),
            all[0].score,
            all[0].execution_id.as_str()
        ),
        ("alpha", 90.0, EXEC2)
    );
    assert_eq!(all[0].total_rounds, 4);
    let (_, by_prefix) = store
        .leaderboard(&LeaderboardScope::Execution("9a7d".into()))
        .expect("prefix");
    assert_eq!(by_prefix.len(), 1);
    assert!(matches!(
        store.resolve_execution("zz"),
        Err(StoreError::ExecutionNotFound(_))
    ));

    let execs = store.executions(None).expect("executions");
    assert_eq!(
        execs
            .iter()
            .map(|e| e.execution_id.as_str())
            .collect::<Vec<_>>(),
        vec![EXEC, EXEC2]
    );
    assert_eq!(execs[0].rounds, 6);
    let overview = store.execution_overview(EXEC).expect("overview");
    let gamma = overview
        .teams
        .iter()
        .find(|t| t.team_id == "gamma")
        .expect("gamma");
    assert_eq!(gamma.error_message.as_deref(), Some("Timeout after 600s"));
    assert_eq!(gamma.exit_reason.as_deref(), Some("partial_failure"));
}

#[tokio::test]
async fn resume_restarts_the_execution_row_and_refinishing_moves_the_final_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    populate(&writer).await;
    writer
        .write(&started(EXEC, &[("alpha", "Alpha Team")], t(5000)))
        .await
        .expect("restart");
    let state = store.execution_state(EXEC).expect("state").expect("exists");
    assert_eq!(state.status, "running");
    assert_eq!(state.created_at, t(0), "the original start time is kept");
    assert_eq!(state.completed_at, None);
    let a3 = round(EXEC, "alpha", "Alpha Team", 3, 85.25, "x");
    writer
        .write(&team_finished(
            Some(&a3),
            "alpha",
            "Alpha Team",
            EXEC,
            ExitReason::MaxRoundsReached,
            TeamStatusKind::Completed,
            None,
        ))
        .await
        .expect("refinish");
    let finals: Vec<u32> = store
        .team_rounds(EXEC, "alpha")
        .expect("rounds")
        .iter()
        .filter(|r| r.final_submission)
        .map(|r| r.state.round_number)
        .collect();
    assert_eq!(finals, vec![3]);
}

#[tokio::test]
async fn invalid_events_fail_fast_and_do_not_block_others() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    let r = round(EXEC, "alpha", "Alpha", 1, 80.0, "s");
    writer
        .write(&Event::Evaluated(Box::new(r.clone())))
        .await
        .expect("round");
    let bad = judged(&r, decision(true, "x", Some(1.5), None));
    let err = writer.write(&bad).await.expect_err("invalid confidence");
    assert!(
        err.to_string()
            .contains("confidence_score must be between 0.0 and 1.0, got 1.5"),
        "{err}"
    );
    let orphan = judged(
        &round(EXEC, "ghost", "Ghost", 1, 1.0, "s"),
        decision(true, "x", None, None),
    );
    assert!(
        writer.write(&orphan).await.is_err(),
        "a decision for a round that is not stored"
    );
    // in one batch: the bad events fail, the good ones are written
    let good = round(EXEC, "beta", "Beta", 1, 10.0, "ok");
    let res = writer
        .write_all(vec![bad, Event::Evaluated(Box::new(good))])
        .await;
    assert!(res.is_err());
    assert_eq!(store.team_rounds(EXEC, "beta").expect("beta").len(), 1);
    let mut nan = round(EXEC, "nan", "NaN", 1, 1.0, "s");
    nan.score_details.overall_score = f64::NAN;
    assert!(
        writer
            .write(&Event::Evaluated(Box::new(nan)))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn pii_is_masked_in_stored_text_with_the_hash_of_the_original() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("mixseek.db")).expect("open");
    let masker = PiiMasker::new(&MaskingSpec {
        mask_pii: true,
        ..MaskingSpec::default()
    })
    .expect("masker");
    let writer = store
        .writer_with_clock(masker, fixed_clock)
        .expect("writer");
    let original = "担当: yamada@example.jp / 090-1234-5678 まで連絡ください";
    let mut r = round(EXEC, "alpha", "Alpha", 1, 80.0, original);
    r.prompt = format!("前回の回答: {original}");
    r.member_submissions.submissions[0].content = "顧客の IP は 203.0.113.7".into();
    writer
        .write(&Event::Evaluated(Box::new(r)))
        .await
        .expect("write");
    let d = store
        .round_detail(EXEC, "alpha", 1)
        .expect("read")
        .expect("exists");
    assert_eq!(
        d.submission_content,
        "担当: [メールアドレス] / [電話番号] まで連絡ください"
    );
    assert_eq!(
        d.prompt.as_deref(),
        Some("前回の回答: 担当: [メールアドレス] / [電話番号] まで連絡ください")
    );
    assert_eq!(
        d.submission_sha256.as_deref(),
        Some(mixseek_core::sha256_hex(original).as_str())
    );
    assert!(d.pii_masked);
    let member = d
        .member_submissions
        .as_ref()
        .map(|m| m["submissions"][0]["content"].clone());
    assert_eq!(member, Some(serde_json::json!("顧客の IP は [IPアドレス]")));
    // nothing of the original is anywhere in the file's tables
    let hits: i64 = scalar(
        &store,
        "SELECT (SELECT count(*) FROM leader_board WHERE submission_content LIKE '%yamada%')
              + (SELECT count(*) FROM round_history WHERE prompt LIKE '%yamada%' OR member_submissions_record LIKE '%203.0.113.7%')",
    );
    assert_eq!(hits, 0);
}

#[tokio::test]
async fn reads_in_another_handle_see_committed_rounds_while_writing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    let reader = Store::open_read_only(store.path()).expect("same-process read-only handle");
    for n in 1..=3 {
        writer
            .write(&Event::Evaluated(Box::new(round(
                EXEC, "alpha", "A", n, 1.0, "s",
            ))))
            .await
            .expect("write");
        assert_eq!(
            reader.team_rounds(EXEC, "alpha").expect("read").len(),
            n as usize
        );
    }
}

/// Rows of each round table.
fn table_rows(store: &Store) -> Vec<u64> {
    ["round_history", "leader_board", "round_status"]
        .iter()
        .map(|t| store.count_rows(t).expect("count"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_tasks_writing_the_same_keys_at_once_leave_one_row_per_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("mixseek.db")).expect("open");
    let mut tasks = Vec::new();
    for task in 0..32u32 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            // every task takes its own handle (the same writer thread) and writes the same
            // 4 teams × 5 rounds, one at a time and in batches
            let writer = store
                .writer_with_clock(PiiMasker::disabled(), fixed_clock)
                .expect("writer");
            for n in 1..=5u32 {
                let team = format!("team-{}", (task + n) % 4);
                let r = round(EXEC, &team, "T", n, f64::from(task), "one");
                writer
                    .emit(&Event::Evaluated(Box::new(r)))
                    .await
                    .expect("emit");
            }
            let batch: Vec<Event> = (0..4)
                .flat_map(|team| {
                    (1..=5u32).map(move |n| {
                        Event::Evaluated(Box::new(round(
                            EXEC,
                            &format!("team-{team}"),
                            "T",
                            n,
                            f64::from(task),
                            "batch",
                        )))
                    })
                })
                .collect();
            writer.write_all(batch).await.expect("batch");
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    assert_eq!(table_rows(&store), vec![20, 20, 20]);
    assert_unique_keys(&store);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_new_writer_waits_until_the_previous_thread_has_committed() {
    use std::future::Future;
    use std::task::{Context, Waker};
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("mixseek.db")).expect("open");
    let keys = |generation: u32| -> Vec<Event> {
        (0..50u32)
            .flat_map(|team| {
                // new keys in every generation: both threads would insert them
                (1..=20u32).map(move |n| {
                    Event::Evaluated(Box::new(round(
                        EXEC,
                        &format!("team-{team:02}"),
                        "T",
                        generation * 20 + n,
                        f64::from(generation),
                        &format!("generation {generation}"),
                    )))
                })
            })
            .collect()
    };
    for generation in 0..20u32 {
        let writer = store.writer(PiiMasker::disabled()).expect("writer");
        // queue 1,000 rounds and walk away: the thread still has them to commit when the last
        // handle goes (dropped on another thread, while this one asks for a new writer)
        {
            let mut write = std::pin::pin!(writer.write_all(keys(generation)));
            let _ = write.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        }
        let dropper = std::thread::spawn(move || drop(writer));
        let next = store.writer(PiiMasker::disabled()).expect("next writer");
        next.write_all(keys(generation))
            .await
            .expect("rewrite the same keys");
        drop(next);
        dropper.join().expect("dropper");
    }
    assert_eq!(table_rows(&store), vec![20_000, 20_000, 20_000]);
    assert_unique_keys(&store);
    let rounds = store.team_rounds(EXEC, "team-07").expect("rounds");
    assert_eq!(rounds.len(), 400);
    assert_eq!(rounds[399].state.submission_content, "generation 19");
}

#[tokio::test]
async fn each_writer_handle_masks_with_its_own_masker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("mixseek.db")).expect("open");
    // a run without masking holds the writer …
    let plain = store
        .writer_with_clock(PiiMasker::disabled(), fixed_clock)
        .expect("plain writer");
    // … when a run with `[privacy] mask_pii = true` starts in the same process
    let masking = PiiMasker::new(&MaskingSpec {
        mask_pii: true,
        ..MaskingSpec::default()
    })
    .expect("masker");
    let masked = store
        .writer_with_clock(masking, fixed_clock)
        .expect("masked writer");
    let secret = "連絡先 hanako@example.com";
    let mut start = started(EXEC, &[("alpha", "Alpha")], t(0));
    if let Event::ExecutionStarted { user_prompt, .. } = &mut start {
        *user_prompt = secret.into();
    }
    masked.write(&start).await.expect("start");
    masked
        .write(&Event::Evaluated(Box::new(round(
            EXEC, "alpha", "Alpha", 1, 50.0, secret,
        ))))
        .await
        .expect("masked round");
    masked
        .write(&Event::LlmCall(Box::new(LlmCallRecord {
            execution_id: Some(EXEC.into()),
            team_id: Some("alpha".into()),
            round_number: Some(1),
            role: Role::Leader,
            model: "openai:gpt-4o".into(),
            usage: Usage::default(),
            latency_ms: 5,
            attempts: 3,
            cache_hit: false,
            error: Some(format!("HTTP 400: cannot process `{secret}`")),
            at: t(10),
        })))
        .await
        .expect("llm call");
    masked.flush().await.expect("flush");
    plain
        .write(&Event::Evaluated(Box::new(round(
            EXEC2, "alpha", "Alpha", 1, 50.0, secret,
        ))))
        .await
        .expect("plain round");

    let d = store
        .round_detail(EXEC, "alpha", 1)
        .expect("read")
        .expect("round");
    assert_eq!(d.submission_content, "連絡先 [メールアドレス]");
    assert!(d.pii_masked);
    let state = store.execution_state(EXEC).expect("state").expect("row");
    assert_eq!(state.user_prompt, "連絡先 [メールアドレス]");
    let error: String = scalar(&store, "SELECT error FROM llm_calls");
    assert_eq!(error, "HTTP 400: cannot process `連絡先 [メールアドレス]`");
    // the unmasked run's handle still writes what it was given
    let other = store
        .round_detail(EXEC2, "alpha", 1)
        .expect("read")
        .expect("round");
    assert_eq!(other.submission_content, secret);
    assert!(!other.pii_masked);
}

#[tokio::test]
async fn applied_injections_are_stored_and_shown_with_the_round() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    let mut r = round(EXEC, "alpha", "Alpha", 1, 80.0, "s");
    r.applied_injections = vec![
        mixseek_core::AppliedInjection {
            phase: "team".into(),
            side: "system".into(),
            rules: vec!["language_preference".into(), "domain_context".into()],
        },
        mixseek_core::AppliedInjection {
            phase: "evaluator".into(),
            side: "user".into(),
            rules: vec!["rubric".into()],
        },
    ];
    writer
        .write(&Event::Evaluated(Box::new(r.clone())))
        .await
        .expect("write");
    let stored: String = scalar(&store, "SELECT applied_injections FROM round_history");
    let parsed: serde_json::Value = serde_json::from_str(&stored).expect("json");
    assert_eq!(parsed[0]["rules"][1], "domain_context");
    let d = store
        .round_detail(EXEC, "alpha", 1)
        .expect("read")
        .expect("round");
    assert_eq!(d.applied_injections, r.applied_injections);
    let table =
        mixseek_store::report::show_round(&d, mixseek_store::report::Format::Table).expect("table");
    assert!(
        table.contains("team system: language_preference, domain_context; evaluator user: rubric"),
        "{table}"
    );
    let json =
        mixseek_store::report::show_round(&d, mixseek_store::report::Format::Json).expect("json");
    assert!(json.contains("\"applied_injections\""), "{json}");
}

#[tokio::test]
async fn decisions_written_together_keep_the_last_per_round_and_fail_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    let r1 = round(EXEC, "alpha", "Alpha", 1, 10.0, "a");
    let r2 = round(EXEC, "beta", "Beta", 1, 20.0, "b");
    writer
        .write_all(vec![
            Event::Evaluated(Box::new(r1.clone())),
            Event::Evaluated(Box::new(r2.clone())),
        ])
        .await
        .expect("rounds");
    writer
        .write_all(vec![
            judged(&r1, decision(true, "first", Some(0.2), None)),
            judged(&r2, decision(true, "beta goes on", Some(0.4), None)),
            judged(&r1, decision(false, "second", Some(0.9), None)),
        ])
        .await
        .expect("decisions");
    let alpha = store.team_rounds(EXEC, "alpha").expect("alpha");
    assert_eq!(alpha[0].decision.should_continue, Some(false));
    assert_eq!(alpha[0].decision.reasoning.as_deref(), Some("second"));
    // agent + evaluation + one judgment (not two)
    assert_eq!(alpha[0].usage.total().input_tokens, 1600);
    let beta = store.team_rounds(EXEC, "beta").expect("beta");
    assert_eq!(beta[0].decision.reasoning.as_deref(), Some("beta goes on"));
    // a decision for a round that is not stored fails, the others of the batch are written
    let ghost = round(EXEC, "ghost", "Ghost", 1, 1.0, "g");
    let res = writer
        .write_all(vec![
            judged(&ghost, decision(true, "x", None, None)),
            judged(&r2, decision(false, "beta stops", Some(0.8), None)),
        ])
        .await;
    assert!(res.is_err());
    let beta = store.team_rounds(EXEC, "beta").expect("beta");
    assert_eq!(beta[0].decision.reasoning.as_deref(), Some("beta stops"));
    assert_unique_keys(&store);
}

/// DuckDB's `memory_limit` as it prints it (`122.0 MiB`).
fn memory_limit(store: &Store) -> String {
    scalar(store, "SELECT current_setting('memory_limit')")
}

#[test]
fn a_live_run_caps_duckdbs_memory_and_bad_sizes_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = Store::open(dir.path().join("mixseek.db")).expect("open");
    let default = memory_limit(&store);
    store
        .limit_memory(mixseek_store::RUN_MEMORY_LIMIT)
        .expect("limit");
    let capped = memory_limit(&store);
    assert_ne!(capped, default);
    assert!(capped.contains("MiB"), "{capped}");
    for bad in ["", "1GB'; DROP TABLE leader_board; --", "lots"] {
        let e = store.limit_memory(bad).expect_err(bad);
        assert!(
            matches!(e, StoreError::Invalid(_) | StoreError::Db { .. }),
            "{bad}: {e}"
        );
    }
    assert_eq!(
        memory_limit(&store),
        capped,
        "a refused size changes nothing"
    );
}

#[test]
fn a_live_run_runs_duckdb_on_one_thread() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = Store::open(dir.path().join("mixseek.db")).expect("open");
    let threads = |store: &Store| -> i64 { scalar(store, "SELECT current_setting('threads')") };
    store.limit_threads(1).expect("limit");
    assert_eq!(threads(&store), 1, "every connection of the process");
    store.limit_threads(3).expect("limit");
    assert_eq!(threads(&store), 3);
    store.limit_threads(0).expect("zero means one");
    assert_eq!(threads(&store), 1);
}

/// `round_history`'s row groups after three batches of rounds, each followed by a checkpoint.
async fn row_groups_after_three_checkpoints(defer_vacuum: bool) -> i64 {
    let dir = tempfile::tempdir().expect("tmp");
    let store = Store::open(dir.path().join("mixseek.db")).expect("open");
    if defer_vacuum {
        store.defer_vacuum().expect("defer");
    }
    let writer = store
        .writer_with_clock(PiiMasker::disabled(), fixed_clock)
        .expect("writer");
    for batch in 0..3u32 {
        let events = (0..50u32)
            .map(|t| {
                let r = round(
                    EXEC,
                    &format!("team-{t:02}"),
                    "T",
                    batch + 1,
                    50.0,
                    "answer",
                );
                Event::Evaluated(Box::new(r))
            })
            .collect();
        writer.write_all(events).await.expect("rounds");
        store.checkpoint().expect("checkpoint");
    }
    scalar(
        &store,
        "SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('round_history')",
    )
}

#[tokio::test]
async fn a_live_run_defers_the_vacuum_so_checkpoints_do_not_rewrite_stored_rows() {
    // by default each checkpoint merges the new rows into the stored row group (rewriting it)
    assert_eq!(row_groups_after_three_checkpoints(false).await, 1);
    // deferred: each checkpoint writes its rows in a row group of their own
    assert_eq!(row_groups_after_three_checkpoints(true).await, 3);
}

#[tokio::test]
async fn checkpoints_that_merge_row_groups_keep_the_keys_enforced() {
    // the merges of `row_groups_after_three_checkpoints(false)` rebuild the keys' indexes
    // (DuckDB's `vacuum_rebuild_indexes`, see db.rs): they still hold afterwards
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("mixseek.db");
    {
        let (store, writer) = open_with_writer(dir.path());
        for batch in 0..3u32 {
            let events = (0..50u32)
                .map(|t| {
                    let r = round(EXEC, &format!("team-{t:02}"), "T", batch + 1, 50.0, "a");
                    Event::Evaluated(Box::new(r))
                })
                .collect();
            writer.write_all(events).await.expect("rounds");
            store.checkpoint().expect("checkpoint");
        }
        let groups: i64 = scalar(
            &store,
            "SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('round_history')",
        );
        assert_eq!(groups, 1, "merged");
        // written again: updated in place through the rebuilt index
        let again = (0..50u32)
            .map(|t| {
                let r = round(EXEC, &format!("team-{t:02}"), "T", 2, 60.0, "again");
                Event::Evaluated(Box::new(r))
            })
            .collect();
        writer.write_all(again).await.expect("rewrite");
        assert_eq!(store.count_rows("leader_board").expect("count"), 150);
        assert_unique_keys(&store);
    }
    let err = raw(&path)
        .execute_batch(&format!(
            "INSERT INTO leader_board (execution_id, team_id, team_name, round_number,
                 submission_content, score, score_details)
             VALUES ('{EXEC}', 'team-07', 'T', 3, 'duplicate', 1.0, '{{}}')"
        ))
        .expect_err("the key is enforced");
    assert!(err.to_string().contains("Duplicate key"), "{err}");
}

#[tokio::test]
async fn a_commit_that_runs_out_of_duckdbs_memory_cap_lifts_the_cap_and_is_stored() {
    let dir = tempfile::tempdir().expect("tmp");
    let (store, writer) = open_with_writer(dir.path());
    store.limit_memory("1MB").expect("limit");
    let capped = memory_limit(&store);
    writer
        .write(&started("e-big", &[("big", "Big")], t(0)))
        .await
        .expect("started");
    // rounds far larger than the cap (a 1,000-team ranking makes prompts of ≈ 100 kB)
    for n in 1..=3 {
        let mut r = round("e-big", "big", "Big", n, 50.0 + f64::from(n), "answer");
        r.prompt = format!("{n}: {}", "ranking row with some text\n".repeat(150_000));
        writer
            .write(&Event::Evaluated(Box::new(r)))
            .await
            .unwrap_or_else(|e| panic!("round {n} not stored: {e}"));
    }
    let rounds = store.team_rounds("e-big", "big").expect("rounds");
    assert_eq!(rounds.len(), 3);
    assert_ne!(memory_limit(&store), capped, "the cap was lifted");
}
