//! Deterministic fixtures shared by the integration tests.
#![allow(dead_code)]

use chrono::{DateTime, TimeZone, Utc};
use mixseek_core::PiiMasker;
use mixseek_core::{
    Decision, Event, ExecutionStatus, ExecutionSummary, ExitReason, FailedTeamInfo, Judgment,
    LeaderboardEntry, LlmCallRecord, MemberStatus, MemberSubmission, MemberSubmissionsRecord,
    MetricScore, Role, RoundRecord, ScoreDetails, SubmittedRound, TeamRef, TeamStatusKind, Usage,
    UsageByRole,
};
use mixseek_store::{Store, StoreWriter};
use std::path::Path;

pub const EXEC: &str = "3f2b8c1e-0000-4000-8000-000000000001";
pub const EXEC2: &str = "9a7d6e5f-0000-4000-8000-000000000002";

/// 2025-11-19T12:00:00Z + `secs`.
pub fn t(secs: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 11, 19, 12, 0, 0)
        .single()
        .expect("valid")
        + chrono::Duration::seconds(secs)
}

pub fn fixed_clock() -> DateTime<Utc> {
    t(3600)
}

pub fn usage(input: u64, output: u64, cost: f64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        requests: 1,
        cost_usd: cost,
        ..Usage::default()
    }
}

pub fn round(
    exec: &str,
    team: &str,
    name: &str,
    n: u32,
    score: f64,
    submission: &str,
) -> RoundRecord {
    let start = t(i64::from(n) * 100);
    RoundRecord {
        execution_id: exec.into(),
        team_id: team.into(),
        team_name: name.into(),
        round_number: n,
        prompt: format!("ラウンド {n} のプロンプト"),
        submission_content: submission.into(),
        score_details: ScoreDetails {
            overall_score: score,
            metrics: vec![
                MetricScore::new("ClarityCoherence", score, format!("明確さ: {score:.1}")),
                MetricScore::new("Coverage", score - 5.0, "網羅性は十分"),
            ],
        },
        round_started_at: start,
        round_ended_at: start + chrono::Duration::seconds(42),
        leader_messages: vec![
            serde_json::json!({"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "hi"}]}),
        ],
        member_submissions: MemberSubmissionsRecord {
            execution_id: exec.into(),
            team_id: team.into(),
            team_name: name.into(),
            round_number: n,
            submissions: vec![MemberSubmission {
                agent_name: "web-search".into(),
                agent_type: "plain".into(),
                content: "検索結果: 3 件".into(),
                status: MemberStatus::Success,
                error_message: None,
                usage: usage(50, 100, 0.0),
                timestamp: start,
                execution_time_ms: Some(2500),
                all_messages: None,
            }],
        },
        agent_usage: usage(1000, 500, 0.01),
        evaluation_usage: usage(400, 100, 0.002),
        applied_injections: Vec::new(),
    }
}

/// The `SubmissionReady` event of a round, carrying its unevaluated part (what the controller
/// emits before the evaluation).
pub fn submitted(r: &RoundRecord) -> Event {
    Event::SubmissionReady {
        execution_id: r.execution_id.clone(),
        team_id: r.team_id.clone(),
        team_name: r.team_name.clone(),
        round_number: r.round_number,
        submission_chars: r.submission_content.chars().count(),
        usage: r.agent_usage,
        at: r.round_started_at + chrono::Duration::seconds(30),
        round: Some(Box::new(SubmittedRound {
            execution_id: r.execution_id.clone(),
            team_id: r.team_id.clone(),
            team_name: r.team_name.clone(),
            round_number: r.round_number,
            prompt: r.prompt.clone(),
            submission_content: r.submission_content.clone(),
            round_started_at: r.round_started_at,
            submitted_at: r.round_started_at + chrono::Duration::seconds(30),
            leader_messages: r.leader_messages.clone(),
            member_submissions: r.member_submissions.clone(),
            agent_usage: r.agent_usage,
        })),
    }
}

/// A metric that failed and was skipped (`on_metric_error = "skip"`), as the evaluator
/// stores it: score 0.0, the failure as the comment, `"status": "failed"` and the error.
pub fn failed_metric(name: &str, kind: &str, message: &str) -> MetricScore {
    let mut m = MetricScore::new(name, 0.0, format!("{message} | Metric: {name}"));
    m.extra.insert("status".into(), serde_json::json!("failed"));
    m.extra.insert("weight".into(), serde_json::json!(0.0));
    m.extra.insert(
        "error".into(),
        serde_json::json!({"metric_name": name, "kind": kind, "message": message}),
    );
    m
}

pub fn decision(
    cont: bool,
    reasoning: &str,
    confidence: Option<f64>,
    exit: Option<ExitReason>,
) -> Decision {
    Decision {
        should_continue: cont,
        reasoning: reasoning.into(),
        confidence_score: confidence,
        judgment: confidence.map(|c| Judgment {
            should_continue: cont,
            reasoning: reasoning.into(),
            confidence_score: c,
        }),
        exit_reason: exit,
        usage: usage(200, 50, 0.001),
    }
}

pub fn judged(r: &RoundRecord, d: Decision) -> Event {
    Event::Judged {
        execution_id: r.execution_id.clone(),
        team_id: r.team_id.clone(),
        team_name: r.team_name.clone(),
        round_number: r.round_number,
        decision: d,
        at: r.round_ended_at,
    }
}

pub fn entry(r: &RoundRecord, exit: ExitReason) -> LeaderboardEntry {
    LeaderboardEntry {
        id: None,
        execution_id: r.execution_id.clone(),
        team_id: r.team_id.clone(),
        team_name: r.team_name.clone(),
        round_number: r.round_number,
        submission_content: r.submission_content.clone(),
        submission_format: "md".into(),
        score: r.score_details.overall_score,
        score_details: r.score_details.clone(),
        final_submission: true,
        exit_reason: Some(exit.as_str().into()),
        created_at: r.round_ended_at,
        updated_at: r.round_ended_at,
    }
}

pub fn team_finished(
    best: Option<&RoundRecord>,
    team: &str,
    name: &str,
    exec: &str,
    exit: ExitReason,
    status: TeamStatusKind,
    error: Option<&str>,
) -> Event {
    Event::TeamFinished {
        execution_id: exec.into(),
        team_id: team.into(),
        team_name: name.into(),
        status,
        best: best.map(|b| Box::new(entry(b, exit))),
        exit_reason: Some(exit),
        rounds_completed: best.map(|b| b.round_number).unwrap_or(0),
        error_message: error.map(str::to_string),
        usage: Usage::default(),
        at: t(1000),
    }
}

pub fn started(exec: &str, teams: &[(&str, &str)], at: DateTime<Utc>) -> Event {
    Event::ExecutionStarted {
        execution_id: exec.into(),
        user_prompt: "日本の少子化対策について提言してください".into(),
        teams: teams
            .iter()
            .map(|(id, name)| TeamRef {
                team_id: (*id).into(),
                team_name: (*name).into(),
            })
            .collect(),
        config_hash: "sha256:abc123".into(),
        max_rounds: 3,
        at,
    }
}

pub fn open_with_writer(dir: &Path) -> (Store, StoreWriter) {
    let store = Store::open(dir.join("mixseek.db")).expect("open");
    let writer = store
        .writer_with_clock(PiiMasker::disabled(), fixed_clock)
        .expect("writer");
    (store, writer)
}

/// A finished execution: alpha (3 rounds, best 87.5 in round 2; in round 3 the Coverage
/// metric failed and was skipped), beta (2 rounds, a `<script>` submission, stopped by the
/// judge), gamma (failed after 1 round, partial: its round 2 was submitted but its evaluation
/// timed out, so round 2 has a `round_history` row only), plus a second, earlier execution
/// where alpha scored 90.
pub async fn populate(writer: &StoreWriter) {
    let teams = [
        ("alpha", "Alpha Team"),
        ("beta", "ベータ"),
        ("gamma", "Gamma"),
    ];
    writer
        .write(&started(EXEC2, &teams[..2], t(-86_400)))
        .await
        .expect("start 2");
    let old = round(EXEC2, "alpha", "Alpha Team", 1, 90.0, "old but strong");
    writer
        .write(&Event::Evaluated(Box::new(old.clone())))
        .await
        .expect("old round");
    writer
        .write(&judged(
            &old,
            decision(
                false,
                "十分",
                Some(0.9),
                Some(ExitReason::NoImprovementExpected),
            ),
        ))
        .await
        .expect("j");
    writer
        .write(&team_finished(
            Some(&old),
            "alpha",
            "Alpha Team",
            EXEC2,
            ExitReason::NoImprovementExpected,
            TeamStatusKind::Completed,
            None,
        ))
        .await
        .expect("fin");

    writer
        .write(&started(EXEC, &teams, t(0)))
        .await
        .expect("start");
    let a1 = round(
        EXEC,
        "alpha",
        "Alpha Team",
        1,
        80.0,
        "# 提言\n少子化対策の第一案",
    );
    let a2 = round(
        EXEC,
        "alpha",
        "Alpha Team",
        2,
        87.5,
        "# 提言\n改善された第二案",
    );
    let mut a3 = round(EXEC, "alpha", "Alpha Team", 3, 85.25, "# 提言\n第三案");
    a3.score_details.metrics[1] =
        failed_metric("Coverage", "timeout", "the judge did not answer within 60s");
    let b1 = round(
        EXEC,
        "beta",
        "ベータ",
        1,
        70.0,
        "<script>alert('x')</script> & more",
    );
    let b2 = round(EXEC, "beta", "ベータ", 2, 87.5, "Beta's \"final\" answer");
    let g1 = round(EXEC, "gamma", "Gamma", 1, 55.0, "partial result");
    for (r, d) in [
        (
            &a1,
            decision(true, "Below minimum rounds (1 < 2)", Some(1.0), None),
        ),
        (
            &b1,
            decision(true, "Below minimum rounds (1 < 2)", Some(1.0), None),
        ),
        (
            &g1,
            decision(true, "Below minimum rounds (1 < 2)", Some(1.0), None),
        ),
        (&a2, decision(true, "まだ改善の余地がある", Some(0.7), None)),
        (
            &b2,
            decision(
                false,
                "No further improvement expected",
                Some(0.8),
                Some(ExitReason::NoImprovementExpected),
            ),
        ),
        (
            &a3,
            decision(
                false,
                "Final round reached",
                None,
                Some(ExitReason::MaxRoundsReached),
            ),
        ),
    ] {
        writer
            .write(&Event::Evaluated(Box::new(r.clone())))
            .await
            .expect("evaluated");
        writer.write(&judged(r, d)).await.expect("judged");
    }
    writer
        .write(&Event::LlmCall(Box::new(LlmCallRecord {
            execution_id: Some(EXEC.into()),
            team_id: Some("alpha".into()),
            round_number: Some(1),
            role: Role::Leader,
            model: "mock:echo".into(),
            usage: usage(1000, 500, 0.01),
            latency_ms: 12,
            attempts: 1,
            cache_hit: false,
            error: None,
            at: t(110),
        })))
        .await
        .expect("llm call");
    writer
        .write(&team_finished(
            Some(&a2),
            "alpha",
            "Alpha Team",
            EXEC,
            ExitReason::MaxRoundsReached,
            TeamStatusKind::Completed,
            None,
        ))
        .await
        .expect("fin a");
    writer
        .write(&team_finished(
            Some(&b2),
            "beta",
            "ベータ",
            EXEC,
            ExitReason::NoImprovementExpected,
            TeamStatusKind::Completed,
            None,
        ))
        .await
        .expect("fin b");
    // gamma's round 2: the leader answered, the evaluation never finished
    let mut g2 = round(EXEC, "gamma", "Gamma", 2, 0.0, "gamma's second try");
    g2.member_submissions.submissions[0].content = "二回目の検索結果".into();
    writer
        .write(&submitted(&g2))
        .await
        .expect("gamma 2 submitted");
    writer
        .write(&team_finished(
            Some(&g1),
            "gamma",
            "Gamma",
            EXEC,
            ExitReason::PartialFailure,
            TeamStatusKind::Failed,
            Some("Timeout after 600s"),
        ))
        .await
        .expect("fin g");
    let results = vec![
        entry(&a2, ExitReason::MaxRoundsReached),
        entry(&b2, ExitReason::NoImprovementExpected),
        entry(&g1, ExitReason::PartialFailure),
    ];
    let failed = vec![FailedTeamInfo {
        team_id: "gamma".into(),
        team_name: "Gamma".into(),
        error_message: "Timeout after 600s".into(),
    }];
    let mut by_role = UsageByRole::default();
    by_role.add(Role::Leader, usage(6000, 3000, 0.06));
    let summary = ExecutionSummary {
        execution_id: EXEC.into(),
        user_prompt: "日本の少子化対策について提言してください".into(),
        best_team_id: Some("alpha".into()),
        best_score: Some(87.5),
        status: ExecutionStatus::PartialFailure,
        team_results: results,
        total_execution_time_seconds: 754.25,
        failed_teams_info: failed,
        created_at: t(0),
        usage: by_role.total(),
        usage_by_role: by_role,
        stop_reason: None,
        stopped_team_ids: Vec::new(),
    };
    writer
        .write(&Event::ExecutionFinished(Box::new(summary)))
        .await
        .expect("finished");
    writer.flush().await.expect("flush");
}

/// Every round key has at most one row in each round table (the database enforces it since
/// schema version 5; checked anyway).
pub fn assert_unique_keys(store: &Store) {
    for table in ["round_history", "leader_board", "round_status"] {
        let duplicated: i64 = scalar(
            store,
            &format!(
                "SELECT count(*) FROM (SELECT 1 FROM {table}
                 GROUP BY execution_id, team_id, round_number HAVING count(*) > 1)"
            ),
        );
        assert_eq!(duplicated, 0, "keys with more than one row in {table}");
    }
}

/// The one value of a query (through `Store::select`, read-only).
pub fn scalar<T: duckdb::types::FromSql>(store: &Store, sql: &str) -> T {
    store
        .select(sql, [], |r| r.get::<_, T>(0))
        .expect(sql)
        .into_iter()
        .next()
        .expect("one row")
}

/// The file opened with DuckDB directly, to build old or hostile files. Only once every
/// `Store` handle of the file is dropped: one process must not hold two DuckDB instances of a
/// file.
pub fn raw(path: &Path) -> duckdb::Connection {
    duckdb::Connection::open(path).expect("open the file with DuckDB")
}

/// The test harness's name of test `name` in module `module` (give it `module_path!()`): the
/// module path without the test executable's crate, so that one test of this executable can be
/// run again in a child process (`--exact`), whatever module its file is.
pub fn test_path(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, within)) => format!("{within}::{name}"),
        None => name.to_string(),
    }
}
