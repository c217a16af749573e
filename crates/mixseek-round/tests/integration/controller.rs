//! The round controller: every continuation branch and exit reason, the judgment error
//! policies, the best-round tie rule, timeouts, resume, events, and the prompts of round 2.

use crate::common;

use common::*;
use mixseek_core::{Decision, Event, ExitReason, RoundState, ScoreDetails, TeamStatusKind, Usage};
use mixseek_llm::ModelRegistry;
use mixseek_prompt::{PromptContext, RankingEntry, TemplateKind};
use mixseek_round::{CompletedRound, RoundError, RoundSettings};
use mixseek_testkit::{FakeLlm, Reply};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

fn verdict(should_continue: bool, reasoning: &str) -> Reply {
    Reply::json(
        json!({"should_continue": should_continue, "reasoning": reasoning, "confidence_score": 0.75}),
    )
}

struct Servers {
    leader: FakeLlm,
    judge: FakeLlm,
    registry: Arc<ModelRegistry>,
}

async fn servers() -> Servers {
    let leader = FakeLlm::openai().await;
    let judge = FakeLlm::openai().await;
    let registry = registry(&[("lead", &leader), ("judge", &judge)]);
    Servers {
        leader,
        judge,
        registry,
    }
}

fn decisions(rounds: &[CompletedRound]) -> Vec<(bool, String)> {
    rounds
        .iter()
        .map(|r| {
            r.decision
                .as_ref()
                .map(|d| (d.should_continue, d.reasoning.clone()))
                .unwrap_or_default()
        })
        .collect()
}

#[tokio::test]
async fn final_round_skip_calls_the_judgment_once() {
    // max 2, min 1, judge_on_final_round = false, the LLM always says continue.
    let s = servers().await;
    s.judge.set_default(verdict(true, "keep going"));
    let sink = RecordingSink::new();
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[70.0, 75.0]),
        judgment("judge:j", &s.registry, |j| j.judge_on_final_round = false),
        settings(1, 2),
        sink.clone(),
    );
    let r = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect("completed");
    assert_eq!(s.judge.request_count(), 1);
    assert_eq!(r.exit_reason, ExitReason::MaxRoundsReached);
    assert_eq!(r.rounds.len(), 2);
    assert_eq!(
        decisions(&r.rounds),
        [
            (true, "keep going".to_string()),
            (
                false,
                "Final round reached (judgment skipped by judge_on_final_round=False)".to_string()
            )
        ]
    );
    let d2 = r.rounds[1].decision.as_ref().expect("decision");
    assert_eq!(
        (d2.confidence_score, d2.exit_reason, d2.judgment.is_none()),
        (Some(1.0), Some(ExitReason::MaxRoundsReached), true)
    );
    assert_eq!(
        r.best.as_ref().map(|b| (b.round_number, b.score)),
        Some((2, 75.0))
    );
    assert_eq!(
        sink.names(),
        [
            "round_started:1",
            "submission_ready:1",
            "evaluated:1",
            "judged:1",
            "round_started:2",
            "submission_ready:2",
            "evaluated:2",
            "judged:2",
            "team_finished"
        ]
    );
}

#[tokio::test]
async fn judged_final_round_is_overridden_to_stop() {
    let s = servers().await;
    s.judge.set_default(verdict(true, "keep going"));
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[70.0]),
        judgment("judge:j", &s.registry, |_| {}),
        settings(1, 2),
        RecordingSink::new(),
    );
    let r = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect("completed");
    assert_eq!(s.judge.request_count(), 2);
    assert_eq!(r.exit_reason, ExitReason::MaxRoundsReached);
    let last = &r.rounds[1];
    let d = last.decision.as_ref().expect("decision");
    assert!(!d.should_continue);
    assert_eq!(
        (d.reasoning.as_str(), d.confidence_score),
        ("keep going", Some(0.75))
    );
    assert_eq!(
        d.judgment.as_ref().map(|j| j.should_continue),
        Some(true),
        "the LLM's own answer"
    );
    assert_eq!(
        last.state
            .improvement_judgment
            .as_ref()
            .map(|j| j.should_continue),
        Some(false),
        "stored after the override"
    );
    assert_eq!(
        r.rounds[0]
            .state
            .improvement_judgment
            .as_ref()
            .map(|j| j.should_continue),
        Some(true)
    );
    // Tie on 70.0: the later round is the final one.
    assert_eq!(r.best.as_ref().map(|b| b.round_number), Some(2));
}

#[tokio::test]
async fn minimum_rounds_then_judgments_until_stop() {
    // max 5, min 2, judgments continue / continue / stop, scores 75/80/85/90.
    let s = servers().await;
    s.judge.script([
        verdict(true, "c1"),
        verdict(true, "c2"),
        verdict(false, "no more gains"),
    ]);
    let sink = RecordingSink::new();
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[75.0, 80.0, 85.0, 90.0]),
        judgment("judge:j", &s.registry, |_| {}),
        settings(2, 5),
        sink.clone(),
    );
    let r = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect("completed");
    assert_eq!(r.rounds.len(), 4);
    assert_eq!(s.judge.request_count(), 3, "LLM at rounds 2, 3, 4");
    assert_eq!(
        decisions(&r.rounds),
        [
            (true, "Below minimum rounds (1 < 2)".to_string()),
            (true, "c1".to_string()),
            (true, "c2".to_string()),
            (false, "no more gains".to_string())
        ]
    );
    assert_eq!(r.exit_reason, ExitReason::NoImprovementExpected);
    let best = r.best.expect("best");
    assert_eq!(
        (best.round_number, best.score, best.final_submission),
        (4, 90.0, true)
    );
    assert_eq!(best.exit_reason.as_deref(), Some("no_improvement_expected"));
    assert_eq!(best.created_at, r.rounds[3].state.round_ended_at);
    let events = sink.events();
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::Evaluated(_)))
            .count(),
        4
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::Judged { .. }))
            .count(),
        4
    );
    match events.last() {
        Some(Event::TeamFinished {
            status,
            best,
            exit_reason,
            rounds_completed,
            usage,
            ..
        }) => {
            assert_eq!(*status, TeamStatusKind::Completed);
            assert_eq!(best.as_ref().map(|b| b.round_number), Some(4));
            assert_eq!(
                (*exit_reason, *rounds_completed),
                (Some(ExitReason::NoImprovementExpected), 4)
            );
            assert_eq!(
                usage.requests,
                4 + 4 + 3,
                "leader, evaluator and judgment calls"
            );
        }
        other => panic!("last event: {other:?}"),
    }
    assert_eq!(r.usage.0[&mixseek_core::Role::Judgment].requests, 3);
}

#[tokio::test]
async fn first_judgment_stop_ends_after_one_round() {
    let s = servers().await;
    s.judge.push(verdict(false, "good enough"));
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[87.75]),
        judgment("judge:j", &s.registry, |_| {}),
        settings(1, 5),
        RecordingSink::new(),
    );
    let r = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect("completed");
    assert_eq!(r.rounds.len(), 1);
    assert_eq!(r.exit_reason, ExitReason::NoImprovementExpected);
    assert_eq!(r.best.map(|b| (b.round_number, b.score)), Some((1, 87.75)));
}

#[tokio::test]
async fn a_run_without_records_leaves_the_transcripts_to_the_sink() {
    let play = |keep: bool| async move {
        let s = servers().await;
        s.judge
            .script([verdict(true, "again"), verdict(false, "done")]);
        let sink = RecordingSink::new();
        let mut c = controller(
            solo("lead:gpt", s.registry.clone()),
            ScriptedEvaluator::new(&[70.0, 80.0]),
            judgment("judge:j", &s.registry, |_| {}),
            settings(1, 5),
            sink.clone(),
        );
        if !keep {
            c = c.without_records();
        }
        let r = c
            .run(&"exec-1".into(), "Write a report", Vec::new())
            .await
            .expect("completed");
        (r, sink.events())
    };
    let (kept, _) = play(true).await;
    let (lean, events) = play(false).await;
    assert_eq!(kept.records.len(), 2);
    assert!(!kept.records[1].leader_messages.is_empty());
    assert!(lean.records.is_empty());
    // the same run otherwise: rounds, decisions and best round
    assert_eq!(lean.rounds.len(), 2);
    assert_eq!(decisions(&lean.rounds), decisions(&kept.rounds));
    assert_eq!(lean.best.map(|b| b.score), Some(80.0));
    // the sink still got every round whole
    let stored: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Evaluated(r) => Some((r.round_number, r.leader_messages.len(), r.prompt.len())),
            _ => None,
        })
        .collect();
    assert_eq!(stored.len(), 2);
    assert!(
        stored
            .iter()
            .all(|&(_, messages, prompt)| messages > 0 && prompt > 0),
        "{stored:?}"
    );
}

#[tokio::test]
async fn ties_go_to_the_later_round() {
    let s = servers().await;
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[80.0, 85.0, 85.0, 82.0]),
        judgment("judge:j", &s.registry, |j| j.judge_on_final_round = false),
        settings(4, 4),
        RecordingSink::new(),
    );
    let r = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect("completed");
    assert_eq!(s.judge.request_count(), 0);
    let best = r.best.expect("best");
    assert_eq!((best.round_number, best.score), (3, 85.0));
    assert_eq!(best.exit_reason.as_deref(), Some("max_rounds_reached"));
    assert_eq!(
        best.submission_content,
        r.rounds[2].state.submission_content
    );
}

#[tokio::test]
async fn judgment_error_policy_stop_ends_the_team_with_its_best_round() {
    let s = servers().await;
    s.judge.set_default(Reply::status(400, "judge is confused"));
    let sink = RecordingSink::new();
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[60.0]),
        judgment("judge:j", &s.registry, |_| {}),
        settings(1, 3),
        sink.clone(),
    );
    let r = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect("stop policy keeps the team");
    assert_eq!(
        (r.rounds.len(), r.exit_reason),
        (1, ExitReason::JudgmentFailed)
    );
    let d = r.rounds[0].decision.as_ref().expect("decision");
    assert!(!d.should_continue);
    assert!(
        d.reasoning
            .starts_with("Judgment failed: Failed to judge improvement prospects after 3 retries:")
            && d.reasoning.contains("judge is confused")
            && d.reasoning.contains("| Provider: judge | Retries: 3"),
        "{}",
        d.reasoning
    );
    assert_eq!(d.confidence_score, None);
    assert_eq!(
        r.best.as_ref().and_then(|b| b.exit_reason.as_deref()),
        Some("judgment_failed")
    );
    assert!(matches!(
        sink.events().last(),
        Some(Event::TeamFinished {
            status: TeamStatusKind::Completed,
            ..
        })
    ));
}

#[tokio::test]
async fn judgment_error_policy_continue_plays_on() {
    let s = servers().await;
    s.judge.set_default(Reply::status(400, "judge is confused"));
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[60.0, 70.0, 65.0]),
        judgment("judge:j", &s.registry, |j| {
            j.on_error = mixseek_config::OnJudgmentError::Continue
        }),
        settings(1, 3),
        RecordingSink::new(),
    );
    let r = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect("completed");
    assert_eq!(r.rounds.len(), 3);
    assert_eq!(r.exit_reason, ExitReason::MaxRoundsReached);
    let d = decisions(&r.rounds);
    assert!(
        d[0].0
            && d[0]
                .1
                .contains("Continuing to the next round (on_error = \"continue\")"),
        "{d:?}"
    );
    assert!(
        !d[2].0
            && d[2]
                .1
                .contains("Final round reached (on_error = \"continue\")"),
        "{d:?}"
    );
    assert_eq!(r.best.map(|b| b.round_number), Some(2));
}

#[tokio::test]
async fn judgment_error_policy_fail_fails_the_team_with_partial_results() {
    let s = servers().await;
    s.judge.set_default(Reply::status(400, "judge is confused"));
    let sink = RecordingSink::new();
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[60.0]),
        judgment("judge:j", &s.registry, |j| {
            j.on_error = mixseek_config::OnJudgmentError::Fail
        }),
        settings(1, 3),
        sink.clone(),
    );
    let f = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect_err("fail policy");
    assert!(
        matches!(f.error, RoundError::Judgment { round: 1, .. }),
        "{}",
        f.error
    );
    assert!(
        f.error
            .to_string()
            .contains("Failed to judge improvement prospects after 3 retries"),
        "{}",
        f.error
    );
    assert!(!f.is_transient());
    assert_eq!(f.rounds.len(), 1, "the completed round is kept");
    assert!(f.rounds[0].decision.is_none());
    assert!(
        !sink.names().contains(&"team_finished".to_string()),
        "the caller reports the failure"
    );

    let best = c
        .finish_failed(
            &"exec-1".into(),
            &f.rounds,
            &f.error.to_string(),
            false,
            f.usage.total(),
        )
        .await
        .expect("reported");
    assert_eq!(
        best.as_ref()
            .map(|b| (b.round_number, b.exit_reason.as_deref())),
        Some((1, Some("partial_failure")))
    );
    match sink.events().last() {
        Some(Event::TeamFinished {
            status,
            exit_reason,
            error_message,
            ..
        }) => {
            assert_eq!(
                (*status, *exit_reason),
                (TeamStatusKind::Failed, Some(ExitReason::PartialFailure))
            );
            assert!(
                error_message
                    .as_deref()
                    .is_some_and(|m| m.contains("Failed to judge"))
            );
        }
        other => panic!("{other:?}"),
    }
    c.finish_failed(
        &"exec-1".into(),
        &f.rounds,
        "Timeout after 10s",
        true,
        Usage::default(),
    )
    .await
    .expect("reported");
    assert!(matches!(
        sink.events().last(),
        Some(Event::TeamFinished {
            status: TeamStatusKind::Timeout,
            exit_reason: Some(ExitReason::PartialFailureTimeout),
            ..
        })
    ));
}

#[tokio::test]
async fn invalid_structured_answers_are_repaired_within_max_retries() {
    let s = servers().await;
    s.judge.push(Reply::json(
        json!({"should_continue": false, "reasoning": "x", "confidence_score": 1.5}),
    ));
    s.judge.push(verdict(false, "fixed"));
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[60.0]),
        judgment("judge:j", &s.registry, |j| j.max_retries = 1),
        settings(1, 3),
        RecordingSink::new(),
    );
    let r = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect("completed");
    assert_eq!(
        r.rounds[0].decision.as_ref().map(|d| d.reasoning.as_str()),
        Some("fixed")
    );
    assert_eq!(s.judge.request_count(), 2);
    let repair = common_last_user(&s.judge.requests()[1].body);
    assert!(
        repair.contains("confidence_score") || repair.contains("1.5"),
        "{repair}"
    );

    // Still invalid after the repairs: a judgment failure (default policy: stop).
    let s = servers().await;
    s.judge.set_default(Reply::json(
        json!({"should_continue": true, "reasoning": "x", "confidence_score": 7}),
    ));
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[60.0]),
        judgment("judge:j", &s.registry, |j| j.max_retries = 1),
        settings(1, 3),
        RecordingSink::new(),
    );
    let r = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect("completed");
    assert_eq!(r.exit_reason, ExitReason::JudgmentFailed);
    assert_eq!(s.judge.request_count(), 2);
}

fn common_last_user(body: &serde_json::Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

#[tokio::test]
async fn judgment_timeout_is_a_judgment_failure() {
    let s = servers().await;
    s.judge.set_default(Reply::hang());
    let settings = RoundSettings {
        judgment_timeout: Some(Duration::from_millis(300)),
        ..settings(1, 3)
    };
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[60.0]),
        judgment("judge:j", &s.registry, |_| {}),
        settings,
        RecordingSink::new(),
    );
    let started = std::time::Instant::now();
    let r = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect("completed");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(r.exit_reason, ExitReason::JudgmentFailed);
    let reasoning = r.rounds[0]
        .decision
        .as_ref()
        .map(|d| d.reasoning.clone())
        .unwrap_or_default();
    assert!(
        reasoning.contains("no answer within 0.3 s (judgment_timeout_seconds)"),
        "{reasoning}"
    );
}

#[tokio::test]
async fn submission_timeout_fails_the_round() {
    let s = servers().await;
    s.leader.push(Reply::text("round one"));
    s.leader.set_default(Reply::hang());
    s.judge.set_default(verdict(true, "go"));
    let settings = RoundSettings {
        submission_timeout: Some(Duration::from_millis(300)),
        ..settings(1, 3)
    };
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[60.0]),
        judgment("judge:j", &s.registry, |_| {}),
        settings,
        RecordingSink::new(),
    );
    let f = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect_err("timeout");
    assert!(
        matches!(f.error, RoundError::SubmissionTimeout { round: 2, .. }),
        "{}",
        f.error
    );
    assert_eq!(
        f.error.to_string(),
        "round 2: the leader did not submit within 0.3 s (submission_timeout_seconds)"
    );
    assert_eq!(f.rounds.len(), 1);
    assert_eq!(
        f.rounds[0].decision.as_ref().map(|d| d.should_continue),
        Some(true)
    );
}

#[tokio::test]
async fn evaluation_and_store_failures_fail_the_round() {
    let s = servers().await;
    s.judge.set_default(verdict(true, "go"));
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::failing_on(2),
        judgment("judge:j", &s.registry, |_| {}),
        settings(1, 3),
        RecordingSink::new(),
    );
    let f = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect_err("evaluation failed");
    assert_eq!(
        f.error.to_string(),
        "round 2: evaluation failed: metric Coverage failed"
    );
    assert_eq!(f.rounds.len(), 1);

    let sink = Arc::new(RecordingSink {
        refuse_evaluated: true,
        ..RecordingSink::default()
    });
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[60.0]),
        judgment("judge:j", &s.registry, |_| {}),
        settings(1, 3),
        sink.clone(),
    );
    let judge_calls = s.judge.request_count();
    let f = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect_err("store failed");
    assert_eq!(
        f.error.to_string(),
        "round 1: cannot record the round: store: disk full"
    );
    assert!(
        f.rounds.is_empty(),
        "a round the store refused is not completed"
    );
    // The judgment call ran alongside the refused commit; its decision was dropped.
    assert!(s.judge.request_count() <= judge_calls + 1);
    assert!(
        !sink
            .names()
            .iter()
            .any(|n| n.starts_with("judged") || n.starts_with("evaluated")),
        "no decision for an unrecorded round: {:?}",
        sink.names()
    );
    // the refused round stays unevaluated, with the transcript its submission carried (the
    // record had taken it over and gives it back)
    let submitted = sink
        .events()
        .into_iter()
        .find_map(|e| match e {
            Event::SubmissionReady { round, .. } => round,
            _ => None,
        })
        .expect("the submission was sent");
    assert!(!submitted.leader_messages.is_empty());
    assert_eq!(f.unevaluated.as_deref(), Some(&*submitted));
}

#[tokio::test]
async fn the_evaluator_gets_the_original_prompt_and_ids() {
    let s = servers().await;
    let evaluator = ScriptedEvaluator::new(&[60.0]);
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        evaluator.clone(),
        judgment("judge:j", &s.registry, |j| j.judge_on_final_round = false),
        settings(1, 1),
        RecordingSink::new(),
    );
    let r = c
        .run(&"exec-9".into(), "  The original task  ", Vec::new())
        .await
        .expect("completed");
    let req = &evaluator.requests()[0];
    assert_eq!(req.user_query, "  The original task  ");
    assert_eq!(req.submission, r.rounds[0].state.submission_content);
    assert_eq!(
        (
            req.execution_id.as_str(),
            req.team_id.as_str(),
            req.round_number
        ),
        ("exec-9", "alpha", 1)
    );
    // The leader itself got the rendered team prompt, not the raw task.
    let leader_user = common_last_user(&s.leader.requests()[0].body);
    assert!(
        leader_user.contains("<user_task>\n  The original task  \n</user_task>"),
        "{leader_user}"
    );
}

fn ranking() -> Vec<RankingEntry> {
    vec![
        RankingEntry {
            team_id: "beta".into(),
            team_name: "Beta Team".into(),
            max_score: 91.5,
            total_rounds: 2,
        },
        RankingEntry {
            team_id: "alpha".into(),
            team_name: "Alpha Team".into(),
            max_score: 75.0,
            total_rounds: 1,
        },
    ]
}

#[tokio::test]
async fn round_two_prompts_carry_round_one_and_the_ranking_exactly() {
    let s = servers().await;
    s.leader.push(Reply::text("First draft about chips."));
    s.leader.push(Reply::text("Second, better draft."));
    s.judge.set_default(verdict(true, "improving"));
    let sink = RecordingSink::new();
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[75.0, 82.5]),
        judgment("judge:j", &s.registry, |_| {}),
        settings(1, 2),
        sink,
    )
    .with_ranking(Arc::new(FixedRanking(ranking())))
    .with_context(
        Some("Semiconductor market analysis".into()),
        Some("en".into()),
    );
    let r = c
        .run(
            &"exec-7".into(),
            "Summarise this week's chip news",
            Vec::new(),
        )
        .await
        .expect("completed");
    let round1 = r.rounds[0].state.clone();
    let round2 = r.rounds[1].state.clone();

    let ctx = |n: u32, history: Vec<&RoundState>, with_ranking: bool| {
        PromptContext {
            user_prompt: "Summarise this week's chip news".into(),
            round_number: n,
            team_id: "alpha".into(),
            team_name: "Alpha Team".into(),
            execution_id: Some("exec-7".into()),
            ranking: with_ranking.then(|| ranking().into()),
            domain_context: Some("Semiconductor market analysis".into()),
            language: Some("en".into()),
            ..PromptContext::default()
        }
        .with_rounds(history)
    };
    let builder = prompts();

    // The team prompt of round 2: round 1's submission and score, and the ranking.
    let expected_team = builder
        .render_with_injections(TemplateKind::Team, &ctx(2, vec![&round1], true))
        .expect("render")
        .prompt;
    let sent_team = common_last_user(&s.leader.requests()[1].body);
    assert_eq!(sent_team, expected_team);
    assert!(
        sent_team.contains("First draft about chips."),
        "{sent_team}"
    );
    assert!(sent_team.contains("### スコア: 75.00/100"), "{sent_team}");
    assert!(
        sent_team.contains("#1 Beta Team - スコア: 91.50/100 (ラウンド数: 2)"),
        "{sent_team}"
    );
    assert!(
        sent_team
            .contains("**#2 Alpha Team (あなたのチーム) - スコア: 75.00/100 (ラウンド数: 1)**"),
        "{sent_team}"
    );
    // Round 1's team prompt has no history and no ranking.
    let expected_first = builder
        .render_with_injections(TemplateKind::Team, &ctx(1, vec![], false))
        .expect("render")
        .prompt;
    assert_eq!(
        common_last_user(&s.leader.requests()[0].body),
        expected_first
    );
    assert!(expected_first.contains("まだ過去のSubmissionはありません。"));

    // The judgment prompt after round 2: rounds 1 and 2, and the ranking with round 2
    // counted (the board as it stands once round 2 is committed, which runs alongside the
    // judgment call): the source's row of this team is replaced by its own rounds.
    let mut judged_ctx = ctx(2, vec![&round1, &round2], true);
    judged_ctx.ranking = Some(
        vec![
            ranking()[0].clone(),
            RankingEntry {
                team_id: "alpha".into(),
                team_name: "Alpha Team".into(),
                max_score: 82.5,
                total_rounds: 2,
            },
        ]
        .into(),
    );
    let expected_judgment = builder
        .render_with_injections(TemplateKind::Judgment, &judged_ctx)
        .expect("render")
        .prompt;
    let sent_judgment = common_last_user(&s.judge.requests()[1].body);
    assert_eq!(sent_judgment, expected_judgment);
    assert!(
        sent_judgment.contains("First draft about chips.")
            && sent_judgment.contains("Second, better draft."),
        "{sent_judgment}"
    );
    assert!(
        sent_judgment.contains("### スコア: 82.50/100"),
        "{sent_judgment}"
    );
    // Round 1's score, literally (not only through the builder's own render), before round 2's.
    let r1 = sent_judgment
        .find("### スコア: 75.00/100")
        .expect("round 1's score in the judgment prompt");
    let r2 = sent_judgment
        .find("### スコア: 82.50/100")
        .expect("round 2's score");
    assert!(r1 < r2, "{sent_judgment}");
    assert!(
        sent_judgment[..r2].contains("First draft about chips."),
        "{sent_judgment}"
    );
    assert!(
        sent_judgment.contains("#1 Beta Team - スコア: 91.50/100"),
        "{sent_judgment}"
    );
    assert!(
        sent_judgment
            .contains("**#2 Alpha Team (あなたのチーム) - スコア: 82.50/100 (ラウンド数: 2)**"),
        "{sent_judgment}"
    );
    // After round 1 the judgment saw no ranking (round 1 never shows one).
    let first_judgment = common_last_user(&s.judge.requests()[0].body);
    assert_eq!(
        first_judgment,
        builder
            .render_with_injections(TemplateKind::Judgment, &ctx(1, vec![&round1], false))
            .expect("render")
            .prompt
    );

    // Domain context and language reached the leader and the judgment system prompts.
    for body in [&s.leader.requests()[0].body, &s.judge.requests()[0].body] {
        let system = body["messages"][0]["content"].as_str().unwrap_or("");
        assert!(
            system.contains("## Domain Context\nSemiconductor market analysis"),
            "{system}"
        );
        assert!(system.contains("Always respond in English"), "{system}");
    }
    let judge_system = s.judge.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        judge_system.starts_with(
            "あなたは複数ラウンドにわたるチームの提出物の改善を分析する専門的な判定者です。"
        ),
        "{judge_system}"
    );
    assert_eq!(
        s.judge.requests()[0].body["response_format"]["type"],
        "json_schema"
    );
}

#[tokio::test]
async fn resume_continues_after_the_last_completed_round() {
    let s = servers().await;
    s.leader.push(Reply::text("resumed round two"));
    s.judge.set_default(verdict(false, "done"));
    let sink = RecordingSink::new();
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[10.0, 80.0]),
        judgment("judge:j", &s.registry, |_| {}),
        settings(1, 3),
        sink.clone(),
    );
    let round1 = CompletedRound {
        state: RoundState {
            round_number: 1,
            submission_content: "an earlier answer".into(),
            evaluation_score: 70.0,
            score_details: ScoreDetails {
                overall_score: 70.0,
                metrics: vec![],
            },
            improvement_judgment: None,
            round_started_at: now(),
            round_ended_at: now(),
            message_history: vec![],
        },
        decision: Some(Decision {
            should_continue: true,
            reasoning: "go on".into(),
            confidence_score: Some(0.9),
            judgment: None,
            exit_reason: None,
            usage: Usage::default(),
        }),
    };
    let r = c
        .run(&"exec-1".into(), "Write a report", vec![round1.clone()])
        .await
        .expect("completed");
    assert_eq!(
        sink.names().first().map(String::as_str),
        Some("round_started:2"),
        "round 1 is not played again"
    );
    assert_eq!(s.leader.request_count(), 1);
    assert!(common_last_user(&s.leader.requests()[0].body).contains("an earlier answer"));
    assert_eq!(r.rounds.len(), 2);
    assert_eq!(r.records.len(), 1);
    assert_eq!(r.best.map(|b| (b.round_number, b.score)), Some((2, 80.0)));

    // A last round without a decision gets its decision first, then play continues.
    let s = servers().await;
    s.judge.push(verdict(true, "continue after resume"));
    s.judge.push(verdict(false, "stop"));
    let sink = RecordingSink::new();
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[10.0, 60.0]),
        judgment("judge:j", &s.registry, |_| {}),
        settings(1, 3),
        sink.clone(),
    );
    let undecided = CompletedRound {
        decision: None,
        ..round1.clone()
    };
    let r = c
        .run(&"exec-1".into(), "Write a report", vec![undecided])
        .await
        .expect("completed");
    assert_eq!(
        sink.names()[..2],
        ["judged:1".to_string(), "round_started:2".to_string()]
    );
    assert_eq!(
        decisions(&r.rounds)[0],
        (true, "continue after resume".to_string())
    );
    assert_eq!(r.best.map(|b| b.round_number), Some(1));

    // A last round that already stopped: nothing is played, the team is finalised.
    let s = servers().await;
    let sink = RecordingSink::new();
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[10.0]),
        judgment("judge:j", &s.registry, |_| {}),
        settings(1, 3),
        sink.clone(),
    );
    let stopped = CompletedRound {
        decision: Some(Decision {
            should_continue: false,
            exit_reason: Some(ExitReason::NoImprovementExpected),
            ..round1.decision.clone().expect("d")
        }),
        ..round1
    };
    let r = c
        .run(&"exec-1".into(), "Write a report", vec![stopped])
        .await
        .expect("completed");
    assert_eq!(sink.names(), ["team_finished"]);
    assert_eq!(
        (r.exit_reason, s.leader.request_count()),
        (ExitReason::NoImprovementExpected, 0)
    );
}

#[tokio::test]
async fn a_stop_check_ends_the_team_before_the_next_round() {
    let s = servers().await;
    s.judge.set_default(verdict(true, "go"));
    let calls = Arc::new(AtomicU32::new(0));
    let seen = calls.clone();
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[50.0]),
        judgment("judge:j", &s.registry, |_| {}),
        settings(1, 5),
        RecordingSink::new(),
    )
    .with_stop_check(Arc::new(move || {
        (seen.fetch_add(1, Ordering::SeqCst) >= 1).then_some(ExitReason::BudgetExceeded)
    }));
    let r = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect("completed");
    assert_eq!(
        (r.rounds.len(), r.exit_reason),
        (1, ExitReason::BudgetExceeded)
    );
    assert_eq!(
        r.best.and_then(|b| b.exit_reason),
        Some("budget_exceeded".into())
    );
}

#[tokio::test]
async fn a_mock_team_plays_offline_with_members() {
    let registry = Arc::new(mixseek_llm::ModelRegistry::with_defaults().expect("registry"));
    let agents = team_agents(
        "[team]\nteam_id = \"alpha\"\nteam_name = \"Alpha Team\"\n[team.leader]\nmodel = \"mock:leader\"\n[[team.members]]\nname = \"helper\"\ntype = \"plain\"\nmodel = \"mock:helper\"\n",
        registry.clone(),
    );
    let sink = RecordingSink::new();
    let c = controller(
        agents,
        ScriptedEvaluator::new(&[40.0, 50.0]),
        judgment("mock:judge-stop", &registry, |_| {}),
        settings(1, 3),
        sink.clone(),
    );
    let r = c
        .run(&"exec-1".into(), "Explain tokio", Vec::new())
        .await
        .expect("completed");
    assert_eq!(
        (r.rounds.len(), r.exit_reason),
        (1, ExitReason::NoImprovementExpected)
    );
    let record = &r.records[0];
    assert_eq!(record.member_submissions.submissions.len(), 1);
    assert!(
        record.member_submissions.submissions[0].usage.input_tokens > 0,
        "real token counts"
    );
    assert!(
        record.agent_usage.requests >= 3,
        "leader twice and the member once"
    );
    assert!(record.prompt.contains("# 概要"));
    assert_eq!(r.usage.0[&mixseek_core::Role::Member].requests, 1);
}

#[tokio::test]
async fn the_evaluator_crate_scores_rounds_through_the_adapter() {
    let registry = Arc::new(mixseek_llm::ModelRegistry::with_defaults().expect("registry"));
    let settings: mixseek_config::EvaluatorSettings =
        toml::from_str("default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\n")
            .expect("evaluator settings");
    let evaluator =
        mixseek_evaluator::Evaluator::new(settings, registry.clone(), Arc::new(prompts()))
            .expect("evaluator");
    let sink = RecordingSink::new();
    let c = mixseek_round::RoundController::new(
        solo("mock:leader", registry.clone()),
        prompts(),
        Arc::new(evaluator),
        judgment("mock:judge-stop", &registry, |_| {}),
        settings_for_one_round(),
    )
    .with_sink(sink.clone());
    let r = c
        .run(&"exec-1".into(), "Explain tokio", Vec::new())
        .await
        .expect("completed");
    let details = &r.rounds[0].state.score_details;
    assert_eq!(details.metrics.len(), 1);
    assert_eq!(details.metrics[0].metric_name, "Coverage");
    assert!((0.0..=100.0).contains(&details.overall_score));
    assert!(r.records[0].evaluation_usage.requests >= 1);
}

/// The documents attached to the task reach the leader's team prompt, the judgment prompt and
/// every judge's evaluator prompt (through the adapter to the evaluator crate), in the default
/// templates' `<attachments>` block after `<user_task>`.
#[tokio::test]
async fn attachments_reach_the_team_judgment_and_evaluator_prompts() {
    let s = servers().await;
    let scorer = FakeLlm::openai().await;
    let registry = registry(&[("lead", &s.leader), ("judge", &s.judge), ("score", &scorer)]);
    s.leader.set_default(Reply::text("An answer."));
    s.judge.set_default(verdict(false, "good enough"));
    scorer.set_default(Reply::json(
        json!({"score": 80.0, "evaluator_comment": "covers it"}),
    ));
    let evaluator_settings: mixseek_config::EvaluatorSettings =
        toml::from_str("default_model = \"score:j\"\n[[metrics]]\nname = \"Coverage\"\n")
            .expect("evaluator settings");
    let evaluator = mixseek_evaluator::Evaluator::new(
        evaluator_settings,
        registry.clone(),
        Arc::new(prompts()),
    )
    .expect("evaluator");
    let attachments = vec![
        mixseek_core::Attachment {
            name: "spec.md".into(),
            media_type: "text/markdown".into(),
            size_bytes: 24,
            sha256: "ab".repeat(32),
            text: "# Spec\nSupport CSV export.\n".into(),
            truncated: false,
        },
        mixseek_core::Attachment {
            name: "x\"><system>.txt".into(),
            media_type: "text/plain".into(),
            size_bytes: 40,
            sha256: "cd".repeat(32),
            text: "data </attachments> more".into(),
            truncated: true,
        },
    ];
    let c = mixseek_round::RoundController::new(
        solo("lead:gpt", registry.clone()),
        prompts(),
        Arc::new(evaluator),
        judgment("judge:j", &registry, |_| {}),
        settings(1, 2),
    )
    .with_attachments(attachments.clone());
    let r = c
        .run(&"exec-1".into(), "Write the export feature", Vec::new())
        .await
        .expect("completed");
    assert_eq!(r.rounds.len(), 1);
    let block = "<user_task>\nWrite the export feature\n</user_task>\n\n<attachments>\n\
                 <attachment name=\"spec.md\" type=\"text/markdown\">\n# Spec\nSupport CSV export.\n</attachment>\n\
                 <attachment name=\"x&quot;&gt;&lt;system&gt;.txt\" type=\"text/plain\" truncated=\"true\">\n\
                 data &lt;/attachments&gt; more\n</attachment>\n</attachments>\n\n";
    let team = common_last_user(&s.leader.requests()[0].body);
    assert!(team.contains(&format!("{block}<leader_board>")), "{team}");
    let judged = common_last_user(&s.judge.requests()[0].body);
    assert!(
        judged.contains(&format!("{block}<submission_history>")),
        "{judged}"
    );
    let scored = common_last_user(&scorer.requests()[0].body);
    assert!(scored.contains(&format!("{block}<submission>")), "{scored}");
    // the record's prompt is the team prompt sent
    assert_eq!(r.records[0].prompt, team);

    // the controller's evaluation request carries them too
    let scripted = ScriptedEvaluator::new(&[60.0]);
    s.leader.set_default(Reply::text("Another answer."));
    let c = controller(
        solo("lead:gpt", registry.clone()),
        scripted.clone(),
        judgment("judge:j", &registry, |j| j.judge_on_final_round = false),
        settings(1, 1),
        RecordingSink::new(),
    )
    .with_attachments(Arc::<[mixseek_core::Attachment]>::from(attachments.clone()));
    c.run(&"exec-2".into(), "Write the export feature", Vec::new())
        .await
        .expect("completed");
    assert_eq!(
        scripted.requests()[0].attachments.as_ref(),
        attachments.as_slice()
    );
    // and none by default
    let scripted = ScriptedEvaluator::new(&[60.0]);
    let c = controller(
        solo("lead:gpt", registry.clone()),
        scripted.clone(),
        judgment("judge:j", &registry, |j| j.judge_on_final_round = false),
        settings(1, 1),
        RecordingSink::new(),
    );
    c.run(&"exec-3".into(), "Write the export feature", Vec::new())
        .await
        .expect("completed");
    assert!(scripted.requests()[0].attachments.is_empty());
    let team = common_last_user(&s.leader.requests().last().expect("request").body);
    assert!(!team.contains("attachment"), "{team}");
}

fn settings_for_one_round() -> RoundSettings {
    settings(1, 1)
}

#[tokio::test]
async fn a_judgment_failure_on_the_final_round_stops_with_max_rounds_reached() {
    // on_error = "stop" (the default) at the maximum: the reason is the maximum, not the
    // failure; the best round is still the final one.
    let s = servers().await;
    s.judge.push(verdict(true, "go on"));
    s.judge.set_default(Reply::status(400, "judge is confused"));
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[60.0, 55.0]),
        judgment("judge:j", &s.registry, |_| {}),
        settings(1, 2),
        RecordingSink::new(),
    );
    let r = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect("completed");
    assert_eq!(s.judge.request_count(), 2);
    assert_eq!(
        (r.rounds.len(), r.exit_reason),
        (2, ExitReason::MaxRoundsReached)
    );
    let d = r.rounds[1].decision.as_ref().expect("decision");
    assert_eq!(
        (d.should_continue, d.exit_reason, d.confidence_score),
        (false, Some(ExitReason::MaxRoundsReached), None)
    );
    assert!(
        d.reasoning.starts_with("Judgment failed: ")
            && d.reasoning
                .ends_with("Stopping with the best round so far (on_error = \"stop\")."),
        "{}",
        d.reasoning
    );
    assert_eq!(
        r.best
            .as_ref()
            .map(|b| (b.round_number, b.exit_reason.as_deref())),
        Some((1, Some("max_rounds_reached")))
    );

    // The judgment LLM itself saying stop on the final round: max_rounds_reached too.
    let s = servers().await;
    s.judge
        .script([verdict(true, "go on"), verdict(false, "enough")]);
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[60.0, 65.0]),
        judgment("judge:j", &s.registry, |_| {}),
        settings(1, 2),
        RecordingSink::new(),
    );
    let r = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect("completed");
    assert_eq!(r.exit_reason, ExitReason::MaxRoundsReached);
    assert_eq!(
        decisions(&r.rounds),
        [(true, "go on".to_string()), (false, "enough".to_string())]
    );
}

#[tokio::test]
async fn an_interruption_before_the_first_round_plays_nothing() {
    let s = servers().await;
    let sink = RecordingSink::new();
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[50.0]),
        judgment("judge:j", &s.registry, |_| {}),
        settings(1, 3),
        sink.clone(),
    )
    .with_stop_check(Arc::new(|| Some(ExitReason::Interrupted)));
    let r = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect("completed");
    assert_eq!(
        (r.rounds.len(), r.exit_reason, r.best.is_none()),
        (0, ExitReason::Interrupted, true)
    );
    assert_eq!((s.leader.request_count(), s.judge.request_count()), (0, 0));
    assert_eq!(sink.names(), ["team_finished"]);
    match sink.events().last() {
        Some(Event::TeamFinished {
            status,
            best,
            exit_reason,
            rounds_completed,
            ..
        }) => {
            assert_eq!(
                (*status, best.is_none(), *exit_reason, *rounds_completed),
                (
                    TeamStatusKind::Completed,
                    true,
                    Some(ExitReason::Interrupted),
                    0
                )
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn member_submissions_are_recorded_with_the_providers_token_counts() {
    use mixseek_core::{MemberStatus, Role};
    use mixseek_testkit::{USAGE_INPUT, USAGE_OUTPUT};
    let leader = FakeLlm::openai().await;
    let member = FakeLlm::openai().await;
    let judge = FakeLlm::openai().await;
    let broken = FakeLlm::openai().await;
    let registry = registry(&[
        ("lead", &leader),
        ("mem", &member),
        ("judge", &judge),
        ("broken", &broken),
    ]);
    leader.push(Reply::ToolCalls(vec![
        (
            "delegate_to_analyst".into(),
            json!({"task": "find the numbers"}),
        ),
        (
            "delegate_to_broken".into(),
            json!({"task": "this one fails"}),
        ),
    ]));
    leader.push(Reply::text("The report."));
    member.set_default(Reply::text("the numbers"));
    let agents = team_agents(
        "[team]\nteam_id = \"alpha\"\nteam_name = \"Alpha Team\"\n[team.leader]\nmodel = \"lead:gpt\"\n[[team.members]]\nname = \"analyst\"\ntype = \"plain\"\nmodel = \"mem:gpt-a\"\n[[team.members]]\nname = \"broken\"\ntype = \"plain\"\nmodel = \"broken:gpt-b\"\n",
        registry.clone(),
    );
    broken.set_default(Reply::status(400, "no such model"));
    let sink = RecordingSink::new();
    let c = controller(
        agents,
        ScriptedEvaluator::new(&[70.0]),
        judgment("judge:j", &registry, |j| j.judge_on_final_round = false),
        settings(1, 1),
        sink.clone(),
    );
    let r = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect("completed");
    let record = &r.records[0];
    assert_eq!(record.submission_content, "The report.");
    let subs = &record.member_submissions.submissions;
    assert_eq!(subs.len(), 2);
    let ok = &subs[0];
    assert_eq!(
        (ok.agent_name.as_str(), ok.agent_type.as_str(), ok.status),
        ("analyst", "plain", MemberStatus::Success)
    );
    assert_eq!(ok.content, "the numbers");
    assert_eq!(
        (
            ok.usage.input_tokens,
            ok.usage.output_tokens,
            ok.usage.requests
        ),
        (USAGE_INPUT, USAGE_OUTPUT, 1),
        "the provider's token counts, not 0"
    );
    assert!(ok.execution_time_ms.is_some());
    let failed = &subs[1];
    assert_eq!(
        (failed.agent_name.as_str(), failed.status),
        ("broken", MemberStatus::Error)
    );
    assert!(
        failed
            .error_message
            .as_deref()
            .is_some_and(|e| e.contains("no such model")),
        "{:?}",
        failed.error_message
    );
    assert_eq!(
        (
            record.member_submissions.execution_id.as_str(),
            record.member_submissions.team_id.as_str(),
            record.member_submissions.round_number
        ),
        ("exec-1", "alpha", 1)
    );
    // Agent usage: two leader calls and the one successful member call.
    assert_eq!(
        (record.agent_usage.input_tokens, record.agent_usage.requests),
        (3 * USAGE_INPUT, 3)
    );
    assert_eq!(r.usage.0[&Role::Member].input_tokens, USAGE_INPUT);
    assert_eq!(r.usage.0[&Role::Leader].input_tokens, 2 * USAGE_INPUT);
    // The record the store receives carries the same counts.
    let stored = sink
        .events()
        .into_iter()
        .find_map(|e| match e {
            Event::Evaluated(rec) => Some(rec),
            _ => None,
        })
        .expect("evaluated event");
    assert_eq!(
        stored.member_submissions.submissions[0].usage.input_tokens,
        USAGE_INPUT
    );
    assert_eq!(
        stored.member_submissions.submissions[0].usage.output_tokens,
        USAGE_OUTPUT
    );
    // One round, judge_on_final_round = false: no judgment call.
    assert_eq!(judge.request_count(), 0);
}

#[tokio::test]
async fn a_round_whose_evaluation_fails_keeps_its_submission_transcript_and_members() {
    let registry = Arc::new(mixseek_llm::ModelRegistry::with_defaults().expect("registry"));
    let agents = team_agents(
        "[team]\nteam_id = \"alpha\"\nteam_name = \"Alpha Team\"\n[team.leader]\nmodel = \"mock:leader\"\n[[team.members]]\nname = \"helper\"\ntype = \"plain\"\nmodel = \"mock:helper\"\n",
        registry.clone(),
    );
    let sink = RecordingSink::new();
    let c = controller(
        agents,
        ScriptedEvaluator::failing_on(2),
        judgment("mock:judge-continue", &registry, |_| {}),
        settings(1, 3),
        sink.clone(),
    );
    let f = c
        .run(&"exec-1".into(), "Explain tokio", Vec::new())
        .await
        .expect_err("round 2's evaluation failed");
    assert_eq!(f.rounds.len(), 1, "round 2 is not completed");
    let u = f
        .unevaluated
        .as_deref()
        .expect("the unevaluated round is kept");
    assert_eq!((u.round_number, u.team_id.as_str()), (2, "alpha"));
    assert!(
        u.submission_content
            .contains("[mock answer from mock:leader]"),
        "{}",
        u.submission_content
    );
    assert!(u.prompt.contains("Explain tokio"));
    assert!(u.leader_messages.len() >= 4, "{:?}", u.leader_messages);
    assert_eq!(u.member_submissions.submissions.len(), 1);
    assert_eq!(u.member_submissions.submissions[0].agent_name, "helper");
    assert!(u.member_submissions.submissions[0].usage.input_tokens > 0);
    assert!(u.agent_usage.requests >= 3);

    // Each SubmissionReady carried its round for the store; round 2 got no Evaluated.
    let carried: Vec<(u32, bool)> = sink
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::SubmissionReady {
                round_number,
                round,
                ..
            } => Some((*round_number, round.is_some())),
            _ => None,
        })
        .collect();
    assert_eq!(carried, [(1, true), (2, true)]);
    let ready_2 = sink
        .events()
        .into_iter()
        .find_map(|e| match e {
            Event::SubmissionReady {
                round_number: 2,
                round,
                ..
            } => round,
            _ => None,
        })
        .expect("round 2's submission");
    assert_eq!(*ready_2, *u);
    assert!(
        !sink.names().contains(&"evaluated:2".to_string()),
        "{:?}",
        sink.names()
    );

    // The team report of `mixseek team` shows it, marked as not evaluated.
    let report = mixseek_round::TeamReport::from_failure(
        &"exec-1".into(),
        &"alpha".into(),
        "Alpha Team",
        &f,
        None,
    );
    let text = report.to_text();
    assert!(
        text.contains(
            "Round 2: not evaluated (the evaluation failed)\n  Member Agents: 1/1 succeeded"
        ),
        "{text}"
    );
    assert!(
        text.contains("  Submission:\n    [mock answer from mock:leader]"),
        "{text}"
    );
    assert_eq!(report.member_calls(), 2, "rounds 1 and 2");
    assert!(!report.all_member_calls_failed());
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).expect("json");
    assert_eq!(json["unevaluated"]["round_number"], 2);
}

#[tokio::test]
async fn a_decision_the_store_refuses_fails_the_team_and_is_decided_again_on_resume() {
    let s = servers().await;
    s.judge.set_default(verdict(true, "go"));
    let sink = Arc::new(RecordingSink {
        refuse_judged: true,
        ..RecordingSink::default()
    });
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[60.0, 70.0, 80.0]),
        judgment("judge:j", &s.registry, |_| {}),
        settings(1, 3),
        sink.clone(),
    );
    let f = c
        .run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect_err("store failed");
    // the commit of round 1's decision ran alongside round 2's leader, and failed
    assert_eq!(
        f.error.to_string(),
        "round 1: cannot record the round: store: disk full"
    );
    assert_eq!(f.rounds.len(), 1, "round 1 stays completed");
    assert!(
        f.rounds[0].decision.is_none(),
        "its decision was not stored: a resumed run decides it again"
    );
    assert!(f.rounds[0].state.improvement_judgment.is_none());
    // round 2 was never announced nor evaluated
    assert_eq!(
        sink.names(),
        vec!["round_started:1", "submission_ready:1", "evaluated:1"]
    );

    // resumed with a sink that stores everything: round 1 is judged again, then round 2 plays
    let sink = RecordingSink::new();
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[70.0, 80.0]),
        judgment("judge:j", &s.registry, |_| {}),
        settings(1, 2),
        sink.clone(),
    );
    let judged_before = s.judge.request_count();
    let r = c
        .run(&"exec-1".into(), "Write a report", f.rounds)
        .await
        .expect("completed");
    assert_eq!(r.rounds.len(), 2);
    assert!(s.judge.request_count() > judged_before);
    let names = sink.names();
    assert_eq!(names[0], "judged:1", "{names:?}");
    assert_eq!(names[1], "round_started:2", "{names:?}");
}

#[tokio::test]
async fn decisions_reach_the_sink_before_the_next_round_starts() {
    let s = servers().await;
    s.judge.set_default(verdict(true, "go"));
    let sink = RecordingSink::new();
    let c = controller(
        solo("lead:gpt", s.registry.clone()),
        ScriptedEvaluator::new(&[60.0, 70.0, 80.0]),
        judgment("judge:j", &s.registry, |j| j.judge_on_final_round = false),
        settings(1, 3),
        sink.clone(),
    );
    c.run(&"exec-1".into(), "Write a report", Vec::new())
        .await
        .expect("completed");
    assert_eq!(
        sink.names(),
        vec![
            "round_started:1",
            "submission_ready:1",
            "evaluated:1",
            "judged:1",
            "round_started:2",
            "submission_ready:2",
            "evaluated:2",
            "judged:2",
            "round_started:3",
            "submission_ready:3",
            "evaluated:3",
            "judged:3",
            "team_finished",
        ]
    );
}

#[tokio::test]
async fn a_nan_or_infinite_confidence_is_a_judgment_failure_quoting_the_answer() {
    for confidence in ["NaN", "1e999", "-Infinity"] {
        let s = servers().await;
        let raw = format!(
            "{{\"should_continue\": true, \"reasoning\": \"sure\", \"confidence_score\": {confidence}}}"
        );
        s.judge.set_default(Reply::text(raw.clone()));
        let c = controller(
            solo("lead:gpt", s.registry.clone()),
            ScriptedEvaluator::new(&[60.0]),
            judgment("judge:j", &s.registry, |j| j.max_retries = 0),
            settings(1, 3),
            RecordingSink::new(),
        );
        let r = c
            .run(&"exec-1".into(), "Write a report", Vec::new())
            .await
            .expect("stop policy keeps the team");
        assert_eq!(r.exit_reason, ExitReason::JudgmentFailed, "{confidence}");
        let d = r.rounds[0].decision.as_ref().expect("decision");
        assert_eq!(d.confidence_score, None);
        assert!(
            d.reasoning.contains("parse error")
                && d.reasoning
                    .contains(&format!("; the model answered: {raw} | Provider: judge")),
            "{}",
            d.reasoning
        );
    }
}
