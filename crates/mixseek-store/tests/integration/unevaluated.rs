//! Rounds whose leader answered but whose evaluation failed: `SubmissionReady` with its
//! `SubmittedRound` keeps the `round_history` row (submission, leader transcript, member
//! submissions with their usage), and nothing else. Such a round is never completed: not in
//! the ranking, the leaderboards, resume's completed rounds or the best round; the history and
//! `show` list it as `not evaluated`. Its later evaluation overwrites the row (one row per key).

use crate::common;

use common::*;
use mixseek_core::{Event, ExitReason, LlmCallRecord, Role, TeamStatusKind};
use mixseek_core::{MaskingSpec, PiiMasker};
use mixseek_store::report::{self, Format};
use mixseek_store::{LeaderboardScope, Store};

/// The stored `round_history` row of a key: (submission_content, message_history,
/// member_submissions_record, prompt, applied_injections).
type HistoryColumns = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn history_row(store: &Store, team: &str, n: u32) -> HistoryColumns {
    let mut rows = store
        .select(
            "SELECT submission_content, message_history, member_submissions_record, prompt, applied_injections
             FROM round_history WHERE execution_id = ? AND team_id = ? AND round_number = ?",
            duckdb::params![EXEC, team, n],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .expect("round_history");
    assert_eq!(rows.len(), 1, "one round_history row");
    rows.remove(0)
}

/// Rows of the team's round 1 in round_history, leader_board, round_status.
fn rows_of_team(store: &Store, team: &str) -> Vec<i64> {
    rows_of(store, team, 1)
}

/// Rows of the key in round_history, leader_board, round_status.
fn rows_of(store: &Store, team: &str, n: u32) -> Vec<i64> {
    ["round_history", "leader_board", "round_status"]
        .iter()
        .map(|t| {
            store.select(
                &format!(
                    "SELECT count(*) FROM {t} WHERE execution_id = ? AND team_id = ? AND round_number = ?"
                ),
                duckdb::params![EXEC, team, n],
                |r| r.get(0),
            )
            .expect("count")[0]
        })
        .collect()
}

/// A round of team alpha whose leader answered `submission` with one member output.
fn alpha(n: u32, submission: &str, member: &str) -> mixseek_core::RoundRecord {
    let mut r = round(EXEC, "alpha", "Alpha", n, 70.0, submission);
    r.member_submissions.submissions[0].content = member.into();
    r.leader_messages = vec![serde_json::json!({"role": "assistant", "content": submission})];
    r
}

#[tokio::test]
async fn an_unevaluated_round_keeps_its_round_history_row_only_and_is_never_completed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    writer
        .write(&started(
            EXEC,
            &[("alpha", "Alpha"), ("beta", "Beta")],
            t(0),
        ))
        .await
        .expect("start");
    // beta has an evaluated round, alpha only a submission whose evaluation failed
    let b1 = round(EXEC, "beta", "Beta", 1, 40.0, "beta");
    writer
        .write(&Event::Evaluated(Box::new(b1.clone())))
        .await
        .expect("beta");
    let a1 = alpha(1, "alpha's draft", "member output 1");
    writer.write(&submitted(&a1)).await.expect("submitted");

    assert_eq!(rows_of(&store, "alpha", 1), vec![1, 0, 0]);
    let (submission, messages, members, prompt, injections) = history_row(&store, "alpha", 1);
    assert_eq!(submission.as_deref(), Some("alpha's draft"));
    let messages: serde_json::Value =
        serde_json::from_str(messages.as_deref().unwrap_or("")).expect("json");
    assert_eq!(messages[0]["content"], "alpha's draft");
    let members: serde_json::Value =
        serde_json::from_str(members.as_deref().unwrap_or("")).expect("json");
    assert_eq!(members["submissions"][0]["content"], "member output 1");
    assert_eq!(members["submissions"][0]["usage"]["input_tokens"], 50);
    assert_eq!(members["total_usage"]["output_tokens"], 100);
    assert_eq!(prompt.as_deref(), Some("ラウンド 1 のプロンプト"));
    assert_eq!(injections, None, "not known before the evaluation");

    // never completed
    let ranking = store.ranking(EXEC).expect("ranking");
    assert_eq!(
        ranking
            .iter()
            .map(|r| r.team_id.as_str())
            .collect::<Vec<_>>(),
        vec!["beta"]
    );
    assert!(store.team_rounds(EXEC, "alpha").expect("rounds").is_empty());
    let completed = store.completed_rounds(EXEC).expect("completed");
    assert_eq!(completed.len(), 1, "resume plays alpha's round 1 again");
    let (_, lb) = store
        .leaderboard(&LeaderboardScope::Execution(EXEC.into()))
        .expect("leaderboard");
    assert_eq!(
        lb.iter().map(|r| r.team_id.as_str()).collect::<Vec<_>>(),
        vec!["beta"]
    );
    let (_, all) = store.leaderboard(&LeaderboardScope::All).expect("all");
    assert!(all.iter().all(|r| r.team_id != "alpha"));
    assert_eq!(store.executions(None).expect("executions")[0].rounds, 1);
    let overview = store.execution_overview(EXEC).expect("overview");
    let team = overview
        .teams
        .iter()
        .find(|t| t.team_id == "alpha")
        .expect("alpha is configured");
    assert_eq!(
        (team.rounds, team.unevaluated_rounds, team.best_round),
        (0, 1, None)
    );
    // a best round can never be marked on it: finishing the team with it is refused by
    // nothing, but its final flag only goes to a leader_board row
    writer
        .write(&team_finished(
            None,
            "alpha",
            "Alpha",
            EXEC,
            ExitReason::PartialFailure,
            TeamStatusKind::Failed,
            Some("evaluation failed"),
        ))
        .await
        .expect("finished");
    assert_eq!(rows_of(&store, "alpha", 1), vec![1, 0, 0]);

    // listed as not evaluated
    let history = store.history(EXEC, None).expect("history");
    let rows: Vec<(&str, u32, bool, Option<f64>)> = history
        .iter()
        .map(|h| (h.team_id.as_str(), h.round_number, h.evaluated, h.score))
        .collect();
    assert_eq!(
        rows,
        vec![("alpha", 1, false, None), ("beta", 1, true, Some(40.0))]
    );
    let detail = store
        .round_detail(EXEC, "alpha", 1)
        .expect("detail")
        .expect("shown");
    assert!(!detail.evaluated);
    assert_eq!(detail.score, None);
    assert_eq!(detail.submission_content, "alpha's draft");
    assert_eq!(
        detail
            .member_submissions
            .as_ref()
            .map(|m| m["submissions"][0]["content"].clone()),
        Some(serde_json::json!("member output 1"))
    );
    let text = report::show_round(&detail, Format::Table).expect("render");
    assert!(text.contains("not evaluated"), "{text}");
    assert!(!text.contains("0.00"), "no score is made up: {text}");
    let table = report::history(&history, EXEC, None, Format::Table).expect("render");
    assert!(table.contains("not evaluated"), "{table}");
    assert_unique_keys(&store);
}

#[tokio::test]
async fn the_later_evaluation_overwrites_the_row_and_wins() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    writer
        .write(&started(EXEC, &[("alpha", "Alpha")], t(0)))
        .await
        .expect("start");
    // submitted twice (a retried round), then evaluated
    writer
        .write(&submitted(&alpha(1, "first try", "m1")))
        .await
        .expect("first");
    writer
        .write(&submitted(&alpha(1, "second try", "m2")))
        .await
        .expect("second");
    assert_eq!(rows_of(&store, "alpha", 1), vec![1, 0, 0]);
    assert_eq!(
        history_row(&store, "alpha", 1).0.as_deref(),
        Some("second try")
    );
    let mut evaluated = alpha(1, "evaluated answer", "m3");
    evaluated.applied_injections = vec![mixseek_core::AppliedInjection {
        phase: "team".into(),
        side: "system".into(),
        rules: vec!["language_preference".into()],
    }];
    writer
        .write(&Event::Evaluated(Box::new(evaluated.clone())))
        .await
        .expect("evaluated");
    assert_eq!(rows_of(&store, "alpha", 1), vec![1, 1, 1]);
    let (submission, messages, members, _, injections) = history_row(&store, "alpha", 1);
    assert_eq!(submission.as_deref(), Some("evaluated answer"));
    assert!(
        messages
            .as_deref()
            .unwrap_or("")
            .contains("evaluated answer"),
        "{messages:?}"
    );
    assert!(
        members.as_deref().unwrap_or("").contains("m3"),
        "{members:?}"
    );
    assert!(
        injections
            .as_deref()
            .unwrap_or("")
            .contains("language_preference")
    );
    let rounds = store.team_rounds(EXEC, "alpha").expect("rounds");
    assert_eq!(rounds.len(), 1);
    assert_eq!(rounds[0].state.submission_content, "evaluated answer");
    let detail = store
        .round_detail(EXEC, "alpha", 1)
        .expect("detail")
        .expect("exists");
    assert!(detail.evaluated);
    assert_eq!(detail.score, Some(70.0));

    // a stray submission for an evaluated round does not make it unevaluated again
    writer
        .write(&submitted(&alpha(1, "late draft", "m4")))
        .await
        .expect("late");
    assert_eq!(rows_of(&store, "alpha", 1), vec![1, 1, 1]);
    assert_eq!(
        history_row(&store, "alpha", 1).0.as_deref(),
        Some("evaluated answer")
    );
    assert_eq!(
        store.team_rounds(EXEC, "alpha").expect("rounds")[0]
            .state
            .submission_content,
        "evaluated answer"
    );
    assert_unique_keys(&store);
}

#[tokio::test]
async fn bulk_writes_and_new_writer_threads_keep_one_row_per_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    writer
        .write(&started(EXEC, &[("alpha", "Alpha")], t(0)))
        .await
        .expect("start");
    // one batch: submissions and evaluations interleaved, in the order a run emits them
    let r1 = alpha(1, "one", "m1");
    let r2 = alpha(2, "two", "m2");
    let r3 = alpha(3, "three (unevaluated)", "m3");
    writer
        .write_all(vec![
            submitted(&r1),
            Event::Evaluated(Box::new(r1.clone())),
            submitted(&r2),
            Event::Evaluated(Box::new(r2.clone())),
            submitted(&r3),
            // a stray submission after its round's evaluation in the same batch
            submitted(&alpha(2, "stray", "m")),
        ])
        .await
        .expect("batch");
    assert_eq!(rows_of(&store, "alpha", 1), vec![1, 1, 1]);
    assert_eq!(rows_of(&store, "alpha", 2), vec![1, 1, 1]);
    assert_eq!(rows_of(&store, "alpha", 3), vec![1, 0, 0]);
    assert_eq!(history_row(&store, "alpha", 2).0.as_deref(), Some("two"));
    // a new writer thread (it reads the stored keys from the tables) evaluates round 3
    drop(writer);
    let writer = store
        .writer_with_clock(PiiMasker::disabled(), fixed_clock)
        .expect("new writer");
    let mut r3 = alpha(3, "three", "m3 again");
    r3.score_details.overall_score = 90.0;
    writer
        .write(&Event::Evaluated(Box::new(r3)))
        .await
        .expect("evaluated");
    assert_eq!(rows_of(&store, "alpha", 3), vec![1, 1, 1]);
    assert_eq!(history_row(&store, "alpha", 3).0.as_deref(), Some("three"));
    // and a submission of a new round through a third thread
    drop(writer);
    let writer = store
        .writer_with_clock(PiiMasker::disabled(), fixed_clock)
        .expect("third writer");
    writer
        .write(&submitted(&alpha(4, "four", "m4")))
        .await
        .expect("four");
    writer
        .write(&submitted(&alpha(4, "four again", "m4")))
        .await
        .expect("four again");
    assert_eq!(rows_of(&store, "alpha", 4), vec![1, 0, 0]);
    assert_eq!(
        history_row(&store, "alpha", 4).0.as_deref(),
        Some("four again")
    );
    assert_eq!(store.ranking(EXEC).expect("ranking")[0].total_rounds, 3);
    assert_unique_keys(&store);
}

#[tokio::test]
async fn an_unevaluated_round_is_masked_and_encoded_exactly_like_an_evaluated_one() {
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
    let secret = "担当: yamada@example.jp / 090-1234-5678";
    let same = |team: &str| {
        let mut r = round(EXEC, team, "T", 1, 60.0, secret);
        r.prompt = format!("前回: {secret}");
        r.member_submissions.submissions[0].content = "IP 203.0.113.7".into();
        r.leader_messages = vec![serde_json::json!({"role": "assistant", "content": secret})];
        r
    };
    writer
        .write(&Event::Evaluated(Box::new(same("evaluated"))))
        .await
        .expect("evaluated");
    writer
        .write(&submitted(&same("unevaluated")))
        .await
        .expect("submitted");
    let columns = "message_history, member_submissions_record, prompt, prompt_sha256, pii_masked,
        submission_content, submission_sha256";
    type Row = (
        String,
        String,
        String,
        Option<String>,
        bool,
        String,
        Option<String>,
    );
    let read = |team: &str| -> Row {
        store
            .select(
                &format!("SELECT {columns} FROM round_history WHERE team_id = ?"),
                [team],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                    ))
                },
            )
            .expect("row")
            .remove(0)
    };
    let (evaluated, mut unevaluated) = (read("evaluated"), read("unevaluated"));
    // the member record names its team: the one difference
    unevaluated.1 = unevaluated
        .1
        .replace("\"team_id\":\"unevaluated\"", "\"team_id\":\"evaluated\"");
    assert_eq!(unevaluated, evaluated);
    assert_eq!(unevaluated.5, "担当: [メールアドレス] / [電話番号]");
    assert_eq!(
        unevaluated.6.as_deref(),
        Some(mixseek_core::sha256_hex(secret).as_str())
    );
    assert!(unevaluated.4, "pii_masked");
    // its evaluation (same transcript, so written without it) keeps the masked row as stored
    writer
        .write(&Event::Evaluated(Box::new(same("unevaluated"))))
        .await
        .expect("evaluated later");
    let mut now_evaluated = read("unevaluated");
    now_evaluated.1 = now_evaluated
        .1
        .replace("\"team_id\":\"unevaluated\"", "\"team_id\":\"evaluated\"");
    assert_eq!(now_evaluated, evaluated);
    assert_eq!(rows_of_team(&store, "unevaluated"), vec![1, 1, 1]);
    let hits: i64 = scalar(
        &store,
        "SELECT count(*) FROM round_history
         WHERE message_history LIKE '%yamada%' OR member_submissions_record LIKE '%203.0.113.7%'
            OR prompt LIKE '%yamada%' OR submission_content LIKE '%yamada%'",
    );
    assert_eq!(hits, 0);
}

#[tokio::test]
async fn the_usage_of_an_unevaluated_round_comes_from_its_llm_calls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    writer
        .write(&started(EXEC, &[("alpha", "Alpha")], t(0)))
        .await
        .expect("start");
    writer
        .write(&submitted(&alpha(1, "draft", "m")))
        .await
        .expect("submitted");
    let call = |role: Role, input: u64, error: Option<&str>| {
        Event::LlmCall(Box::new(LlmCallRecord {
            execution_id: Some(EXEC.into()),
            team_id: Some("alpha".into()),
            round_number: Some(1),
            role,
            model: "openai:gpt-4o".into(),
            usage: usage(input, 10, 0.001),
            latency_ms: 5,
            attempts: 1,
            cache_hit: false,
            error: error.map(str::to_string),
            at: t(50),
        }))
    };
    writer
        .write_all(vec![
            call(Role::Leader, 100, None),
            call(Role::Member, 200, None),
            call(Role::Evaluator, 300, Some("HTTP 400")),
        ])
        .await
        .expect("calls");
    writer.flush().await.expect("flush");
    let detail = store
        .round_detail(EXEC, "alpha", 1)
        .expect("detail")
        .expect("exists");
    assert_eq!(
        (
            detail.usage.agent.input_tokens,
            detail.usage.evaluation.input_tokens,
            detail.usage.judgment.input_tokens
        ),
        (300, 300, 0)
    );
    let history = store.history(EXEC, Some("alpha")).expect("history");
    assert_eq!(
        (history[0].input_tokens, history[0].output_tokens),
        (600, 30)
    );
}

#[tokio::test]
async fn a_submission_without_its_round_is_ignored_and_a_bad_one_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    let mut event = submitted(&alpha(1, "x", "m"));
    if let Event::SubmissionReady { round, .. } = &mut event {
        *round = None;
    }
    writer.write(&event).await.expect("ignored");
    writer.write_all(vec![event]).await.expect("ignored");
    assert_eq!(store.count_rows("round_history").expect("count"), 0);
    let mut bad = submitted(&alpha(1, "x", "m"));
    if let Event::SubmissionReady {
        round: Some(r),
        round_number,
        ..
    } = &mut bad
    {
        r.round_number = 0;
        *round_number = 0;
    }
    let err = writer.write(&bad).await.expect_err("round 0");
    assert!(
        err.to_string().contains("round_number must be between 1"),
        "{err}"
    );
    assert_eq!(store.count_rows("round_history").expect("count"), 0);
}

#[tokio::test]
async fn interleaved_submissions_evaluations_and_decisions_of_many_teams_commit_together() {
    // what concurrent teams queue: each team's submission, evaluation and decision in order,
    // the teams interleaved; the writer writes them kind by kind within one transaction
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    let teams: Vec<String> = (0..8).map(|t| format!("team-{t}")).collect();
    let refs: Vec<(&str, &str)> = teams.iter().map(|t| (t.as_str(), t.as_str())).collect();
    let mut events = vec![started(EXEC, &refs, t(0))];
    let record = |team: &str, n: u32| round(EXEC, team, team, n, f64::from(n) * 10.0, "answer");
    for n in 1..=2 {
        for (i, team) in teams.iter().enumerate() {
            let r = record(team, n);
            // odd teams run one step behind the even ones
            events.push(submitted(&r));
            if i % 2 == 0 {
                events.push(Event::Evaluated(Box::new(r.clone())));
                events.push(judged(&r, decision(n < 2, "go on", Some(0.5), None)));
            }
        }
        for (i, team) in teams.iter().enumerate() {
            if i % 2 == 1 {
                let r = record(team, n);
                events.push(Event::Evaluated(Box::new(r.clone())));
                events.push(judged(&r, decision(n < 2, "go on", Some(0.5), None)));
            }
        }
    }
    // team-0's round 3 is submitted, never evaluated
    events.push(submitted(&record("team-0", 3)));
    for team in &teams {
        events.push(team_finished(
            Some(&record(team, 2)),
            team,
            team,
            EXEC,
            ExitReason::MaxRoundsReached,
            TeamStatusKind::Completed,
            None,
        ));
    }
    writer.write_all(events).await.expect("batch");
    for team in &teams {
        let rounds = store.team_rounds(EXEC, team).expect("rounds");
        assert_eq!(rounds.len(), 2, "{team}");
        for r in &rounds {
            assert_eq!(
                r.decision.should_continue,
                Some(r.state.round_number < 2),
                "{team}"
            );
            assert_eq!(r.usage.judgment.input_tokens, 200, "the judgment's usage");
        }
        assert!(rounds[1].final_submission, "{team}");
    }
    assert_eq!(rows_of(&store, "team-0", 3), vec![1, 0, 0]);
    assert_eq!(store.count_rows("round_history").expect("count"), 17);
    assert_unique_keys(&store);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_teams_submitting_evaluating_and_judging_complete_every_round() {
    // each team as the round controller writes: SubmissionReady, Evaluated, Judged per round,
    // each awaited; the writer thread batches whatever the teams queued together
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, writer) = open_with_writer(dir.path());
    let teams: Vec<String> = (0..40).map(|t| format!("team-{t:02}")).collect();
    let refs: Vec<(&str, &str)> = teams.iter().map(|t| (t.as_str(), t.as_str())).collect();
    writer
        .write(&started(EXEC, &refs, t(0)))
        .await
        .expect("start");
    let mut tasks = Vec::new();
    for team in teams.clone() {
        let writer = writer.clone();
        tasks.push(tokio::spawn(async move {
            for n in 1..=3u32 {
                let r = round(EXEC, &team, &team, n, f64::from(n), "answer");
                writer.write(&submitted(&r)).await?;
                if team.ends_with('7') && n == 3 {
                    // this team's last evaluation fails
                    break;
                }
                writer.write(&Event::Evaluated(Box::new(r.clone()))).await?;
                writer
                    .write(&judged(&r, decision(n < 3, "next", Some(0.5), None)))
                    .await?;
            }
            Ok::<(), mixseek_store::StoreError>(())
        }));
    }
    for task in tasks {
        task.await.expect("join").expect("every write succeeds");
    }
    for team in &teams {
        let rounds = store.team_rounds(EXEC, team).expect("rounds");
        let expected = if team.ends_with('7') { 2 } else { 3 };
        assert_eq!(rounds.len(), expected, "{team}");
        assert!(rounds.iter().all(|r| r.decision.should_continue.is_some()));
    }
    assert_eq!(store.count_rows("round_history").expect("count"), 120);
    assert_eq!(store.count_rows("leader_board").expect("count"), 116);
    assert_unique_keys(&store);
}
