//! The leader's and members' sampling parameters and time limits reach the wire, and every
//! round starts with fresh agents (no conversation or retry count carried over).

use crate::common;

use common::{agents, ctx, messages, registry};
use mixseek_agents::AgentError;
use mixseek_core::MemberStatus;
use mixseek_llm::ErrorKind;
use mixseek_testkit::{FakeLlm, Reply, Wire};
use serde_json::json;
use std::time::Duration;

const TEAM: &str = r#"
[team]
team_id = "alpha"
team_name = "Alpha Team"
[team.leader]
model = "lead:gpt-leader"
temperature = 0.3
max_tokens = 777
top_p = 0.9
seed = 42
stop_sequences = ["END-LEADER"]
[[team.members]]
name = "a"
type = "plain"
model = "mem:gpt-a"
temperature = 1.25
max_tokens = 321
top_p = 0.5
seed = -1
stop_sequences = ["END-A", "STOP"]
[[team.members]]
name = "bare"
type = "plain"
model = "mem:gpt-bare"
"#;

/// Guards a test against hanging forever if a time limit were not applied.
async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("the time limit was not applied: the call hung")
}

#[tokio::test]
async fn sampling_parameters_of_leader_and_members_are_sent() {
    let leader = FakeLlm::openai().await;
    let members = FakeLlm::openai().await;
    leader.push(Reply::ToolCalls(vec![
        ("delegate_to_a".into(), json!({"task": "t-a"})),
        ("delegate_to_bare".into(), json!({"task": "t-bare"})),
    ]));
    leader.push(Reply::text("done"));
    members.set_default(Reply::text("ok"));
    let reg = registry(&[
        ("lead", &leader, Wire::OpenAi),
        ("mem", &members, Wire::OpenAi),
    ]);
    let out = agents(TEAM, reg)
        .run_round("p", &ctx())
        .await
        .expect("round");
    assert_eq!(out.submission, "done");

    for (i, r) in leader.requests().iter().enumerate() {
        let b = &r.body;
        assert_eq!(b["temperature"], json!(0.3), "leader request {i}");
        assert_eq!(b["max_tokens"], json!(777), "leader request {i}");
        assert_eq!(b["top_p"], json!(0.9), "leader request {i}");
        assert_eq!(b["seed"], json!(42), "leader request {i}");
        assert_eq!(b["stop"], json!(["END-LEADER"]), "leader request {i}");
    }
    let reqs = members.requests();
    let a = reqs
        .iter()
        .find(|r| r.body["model"] == "gpt-a")
        .expect("a called");
    assert_eq!(a.body["temperature"], json!(1.25));
    assert_eq!(a.body["max_tokens"], json!(321));
    assert_eq!(a.body["top_p"], json!(0.5));
    // Seeds are opaque: a negative seed keeps its bits.
    assert_eq!(a.body["seed"], json!(u64::MAX));
    assert_eq!(a.body["stop"], json!(["END-A", "STOP"]));
    // A member without parameters sends none: the provider's defaults apply.
    let bare = reqs
        .iter()
        .find(|r| r.body["model"] == "gpt-bare")
        .expect("bare called");
    for key in ["temperature", "max_tokens", "top_p", "seed", "stop"] {
        assert!(bare.body.get(key).is_none(), "{key}: {}", bare.body);
    }
}

#[tokio::test]
async fn the_leader_request_timeout_is_timeout_seconds() {
    let leader = FakeLlm::openai().await;
    leader.set_default(Reply::hang());
    let reg = registry(&[("lead", &leader, Wire::OpenAi)]);
    let err = bounded(
        agents(
            "[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[team.leader]\nmodel = \"lead:x\"\ntimeout_seconds = 1\n",
            reg,
        )
        .run_round("p", &ctx()),
    )
    .await
    .expect_err("the leader call timed out");
    match &err {
        AgentError::Leader(e) => assert_eq!(e.kind(), ErrorKind::Timeout, "{e}"),
        other => panic!("expected a leader timeout, got {other}"),
    }
}

#[tokio::test]
async fn a_member_request_timeout_is_its_timeout_seconds() {
    let leader = FakeLlm::openai().await;
    let members = FakeLlm::openai().await;
    leader.push(Reply::tool_call("delegate_to_slow", json!({"task": "t"})));
    leader.push(Reply::text("done without it"));
    members.set_default(Reply::hang());
    let reg = registry(&[
        ("lead", &leader, Wire::OpenAi),
        ("mem", &members, Wire::OpenAi),
    ]);
    let out = bounded(
        agents(
            "[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[team.leader]\nmodel = \"lead:x\"\n[[team.members]]\nname = \"slow\"\ntype = \"plain\"\nmodel = \"mem:y\"\ntimeout_seconds = 1\n",
            reg,
        )
        .run_round("p", &ctx()),
    )
    .await
    .expect("a member timeout does not fail the round");
    let s = &out.member_submissions[0];
    assert_eq!(s.status, MemberStatus::Error);
    let e = s.error_message.clone().unwrap_or_default();
    assert!(e.contains("timeout error"), "{e}");
}

#[tokio::test]
async fn every_round_starts_with_fresh_agents() {
    let leader = FakeLlm::openai().await;
    let members = FakeLlm::openai().await;
    // Per round: one invalid call (blank task), then a valid one, then the answer. With
    // max_retries = 1, a retry count carried over from round 1 would fail round 2.
    for round in 1..=2 {
        leader.push(Reply::tool_call("delegate_to_a", json!({"task": " "})));
        leader.push(Reply::tool_call(
            "delegate_to_a",
            json!({"task": format!("task of round {round}")}),
        ));
        leader.push(Reply::text(format!("answer {round}")));
    }
    members.set_default(Reply::text("member says hi"));
    let reg = registry(&[
        ("lead", &leader, Wire::OpenAi),
        ("mem", &members, Wire::OpenAi),
    ]);
    let team = agents(
        "[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[team.leader]\nmodel = \"lead:x\"\nmax_retries = 1\n[[team.members]]\nname = \"a\"\ntype = \"plain\"\nmodel = \"mem:y\"\n",
        reg,
    );
    let first = team
        .run_round("prompt of round 1", &ctx())
        .await
        .expect("round 1");
    let second = team
        .run_round("prompt of round 2", &ctx())
        .await
        .expect("round 2: the invalid-call count started again");
    assert_eq!(
        (first.submission.as_str(), second.submission.as_str()),
        ("answer 1", "answer 2")
    );
    // Round 2's leader starts from its system prompt and round 2's prompt only.
    let reqs = leader.requests();
    assert_eq!(reqs.len(), 6);
    let opening: Vec<(String, String)> = messages(&reqs[3].body)
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("").to_string(),
                m["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(opening.len(), 2, "{opening:?}");
    assert_eq!(opening[0].0, "system");
    assert_eq!(
        opening[1],
        ("user".to_string(), "prompt of round 2".to_string())
    );
    // Members start afresh too: their request holds only the task.
    let member_reqs = members.requests();
    let last = messages(&member_reqs[1].body);
    let users: Vec<&str> = last
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(users, ["task of round 2"]);
    assert!(last.iter().all(|m| m["role"] != "assistant"));
    // Round 2's transcript does not contain round 1.
    assert!(
        second
            .messages
            .iter()
            .all(|m| !m.to_string().contains("prompt of round 1"))
    );
    assert_eq!(second.member_submissions.len(), 1);
}
