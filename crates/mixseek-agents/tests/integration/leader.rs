//! The leader's tool-calling loop against fake OpenAI-format servers and the `mock:` provider.

use crate::common;

use common::{agents, ctx, messages, mock_registry, registry, system_of};
use mixseek_agents::{AgentError, final_answer_request};
use mixseek_core::MemberStatus;
use mixseek_testkit::{FakeLlm, Hostile, Reply, USAGE_INPUT, USAGE_OUTPUT, Wire};
use serde_json::json;
use std::time::Duration;

const TWO_MEMBERS: &str = r#"
[team]
team_id = "alpha"
team_name = "Alpha Team"
max_concurrent_members = 3
[team.leader]
model = "lead:gpt-leader"
[[team.members]]
name = "a"
type = "plain"
model = "mem:gpt-a"
[[team.members]]
name = "b"
type = "plain"
model = "mem:gpt-b"
tool_name = "ask_b"
tool_description = "Ask B about anything"
system_instruction = "You are B."
"#;

fn calls(list: &[(&str, &str)]) -> Reply {
    Reply::ToolCalls(
        list.iter()
            .map(|(n, t)| (n.to_string(), json!({"task": t})))
            .collect(),
    )
}

#[tokio::test]
async fn tool_calls_of_one_turn_run_concurrently_and_come_back_in_order() {
    let leader = FakeLlm::openai().await;
    let members = FakeLlm::openai().await;
    leader.push(calls(&[
        ("delegate_to_a", "t1"),
        ("ask_b", "t2"),
        ("delegate_to_a", "t3"),
    ]));
    leader.push(Reply::text("the final report"));
    members.set_default(Reply::delayed(
        Duration::from_millis(800),
        Reply::text("member answer"),
    ));
    let reg = registry(&[
        ("lead", &leader, Wire::OpenAi),
        ("mem", &members, Wire::OpenAi),
    ]);
    let team = agents(TWO_MEMBERS, reg);

    let out = team
        .run_round("the team prompt", &ctx())
        .await
        .expect("round");

    assert_eq!(out.submission, "the final report");
    assert_eq!(
        members.max_concurrent(),
        3,
        "the three member calls were in flight together"
    );
    assert_eq!(out.tool_rounds, 1);
    assert!(!out.hit_tool_round_limit);
    let names: Vec<&str> = out
        .member_submissions
        .iter()
        .map(|s| s.agent_name.as_str())
        .collect();
    assert_eq!(names, ["a", "b", "a"]);
    for s in &out.member_submissions {
        assert_eq!(s.status, MemberStatus::Success);
        assert_eq!(s.content, "member answer");
        assert_eq!(
            (
                s.usage.input_tokens,
                s.usage.output_tokens,
                s.usage.requests
            ),
            (USAGE_INPUT, USAGE_OUTPUT, 1)
        );
        assert!(
            s.execution_time_ms.is_some_and(|ms| ms >= 800),
            "{:?}",
            s.execution_time_ms
        );
        assert!(s.all_messages.as_ref().is_some_and(|m| m.len() >= 2));
    }
    assert_eq!(out.member_usage().input_tokens, 3 * USAGE_INPUT);
    assert_eq!(out.leader_usage.requests, 2);

    // The leader saw the tools and then the results, answering each call id in order.
    let reqs = leader.requests();
    assert_eq!(reqs.len(), 2);
    let tools: Vec<&str> = reqs[0].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(tools, ["delegate_to_a", "ask_b"]);
    assert_eq!(
        reqs[0].body["tools"][1]["function"]["description"],
        "Ask B about anything"
    );
    assert_eq!(
        reqs[0].body["tools"][0]["function"]["parameters"]["required"],
        json!(["task"])
    );
    let second = messages(&reqs[1].body);
    let tool_msgs: Vec<(&str, &str)> = second
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or(""),
                m["content"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        tool_msgs,
        [
            ("call_0_0", "member answer"),
            ("call_0_1", "member answer"),
            ("call_0_2", "member answer")
        ]
    );

    // Members got their task as the user message and their instruction plus the injected
    // domain context and language as the system prompt.
    let member_reqs = members.requests();
    let b_req = member_reqs
        .iter()
        .find(|r| r.body["model"] == "gpt-b")
        .expect("b called");
    let b_system = system_of(&b_req.body);
    assert!(b_system.starts_with("You are B."), "{b_system}");
    assert!(
        b_system.contains("## Domain Context\nSemiconductor industry"),
        "{b_system}"
    );
    assert!(b_system.contains("Japanese"), "{b_system}");
    assert_eq!(
        messages(&b_req.body).last().map(|m| m["content"].clone()),
        Some(json!("t2"))
    );
    let a_system = system_of(
        &member_reqs
            .iter()
            .find(|r| r.body["model"] == "gpt-a")
            .expect("a")
            .body,
    );
    assert!(
        a_system.starts_with("あなたは親切で正確な情報を提供するアシスタントです。"),
        "plain default: {a_system}"
    );

    // The leader: the default instruction (as-is) plus the team-phase injections.
    let lead_system = system_of(&reqs[0].body);
    assert!(
        lead_system.starts_with("\nあなたは研究チームのリーダーエージェントです。"),
        "{lead_system}"
    );
    assert!(
        lead_system.contains("## Domain Context\nSemiconductor industry"),
        "{lead_system}"
    );
    assert_eq!(
        messages(&reqs[0].body).last().map(|m| m["content"].clone()),
        Some(json!("the team prompt"))
    );

    // History in the framework's message format: a request (the user prompt; the system
    // prompt in its `instructions`), a
    // response (the three tool calls), a request (three tool returns), the final response.
    let shape: Vec<(String, Vec<String>)> = out
        .messages
        .iter()
        .map(|m| {
            let kind = m["kind"].as_str().unwrap_or("?").to_string();
            let parts = m["parts"]
                .as_array()
                .map(|p| {
                    p.iter()
                        .map(|p| p["part_kind"].as_str().unwrap_or("?").to_string())
                        .collect()
                })
                .unwrap_or_default();
            (kind, parts)
        })
        .collect();
    let kinds = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        shape,
        [
            ("request".into(), kinds(&["user-prompt"])),
            (
                "response".into(),
                kinds(&["tool-call", "tool-call", "tool-call"])
            ),
            (
                "request".into(),
                kinds(&["tool-return", "tool-return", "tool-return"])
            ),
            ("response".into(), kinds(&["text"])),
        ]
    );
    assert_eq!(out.messages[1]["usage"]["input_tokens"], USAGE_INPUT);
}

#[tokio::test]
async fn max_concurrent_members_bounds_parallel_calls() {
    let leader = FakeLlm::openai().await;
    let members = FakeLlm::openai().await;
    leader.push(calls(&[
        ("delegate_to_a", "t1"),
        ("ask_b", "t2"),
        ("delegate_to_a", "t3"),
    ]));
    leader.push(Reply::text("done"));
    members.set_default(Reply::delayed(
        Duration::from_millis(600),
        Reply::text("ok"),
    ));
    let reg = registry(&[
        ("lead", &leader, Wire::OpenAi),
        ("mem", &members, Wire::OpenAi),
    ]);
    let team = agents(
        &TWO_MEMBERS.replace("max_concurrent_members = 3", "max_concurrent_members = 2"),
        reg,
    );
    let out = team.run_round("p", &ctx()).await.expect("round");
    assert_eq!(out.member_submissions.len(), 3);
    assert_eq!(members.max_concurrent(), 2);
}

#[tokio::test]
async fn a_failing_member_is_a_tool_error_and_an_error_submission_not_a_failed_round() {
    let leader = FakeLlm::openai().await;
    let members = FakeLlm::openai().await;
    leader.push(calls(&[("delegate_to_a", "will fail"), ("ask_b", "works")]));
    leader.push(Reply::text("answer despite a failure"));
    // Calls run concurrently: member `a` uses a model on a server that always refuses.
    members.set_default(Reply::text("fine"));
    let broken = FakeLlm::openai().await;
    broken.set_default(Reply::status(400, "model overloaded with nonsense"));
    let reg = registry(&[
        ("lead", &leader, Wire::OpenAi),
        ("mem", &members, Wire::OpenAi),
        ("broken", &broken, Wire::OpenAi),
    ]);
    let toml_src = TWO_MEMBERS.replace("model = \"mem:gpt-a\"", "model = \"broken:gpt-a\"");
    let out = agents(&toml_src, reg)
        .run_round("p", &ctx())
        .await
        .expect("the round survives");

    assert_eq!(out.submission, "answer despite a failure");
    let a = &out.member_submissions[0];
    assert_eq!(
        (a.agent_name.as_str(), a.status),
        ("a", MemberStatus::Error)
    );
    assert_eq!(a.content, "");
    let err = a.error_message.clone().unwrap_or_default();
    assert!(
        err.contains("HTTP 400") && err.contains("model overloaded with nonsense"),
        "{err}"
    );
    assert_eq!(out.member_submissions[1].status, MemberStatus::Success);

    let second = messages(&leader.requests()[1].body);
    let results: Vec<String> = second
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect();
    assert!(
        results[0].starts_with("Error: member `a` failed:"),
        "{}",
        results[0]
    );
    assert_eq!(results[1], "fine");
}

#[tokio::test]
async fn max_tool_rounds_ends_the_loop_and_asks_for_the_final_answer() {
    let leader = FakeLlm::openai().await;
    let members = FakeLlm::openai().await;
    leader.script([
        calls(&[("delegate_to_a", "1")]),
        calls(&[("delegate_to_a", "2")]),
    ]);
    leader.push(Reply::text("final after the limit"));
    members.set_default(Reply::text("ok"));
    let reg = registry(&[
        ("lead", &leader, Wire::OpenAi),
        ("mem", &members, Wire::OpenAi),
    ]);
    let toml_src = TWO_MEMBERS.replace(
        "max_concurrent_members = 3",
        "max_concurrent_members = 3\nmax_tool_rounds = 2",
    );
    let out = agents(&toml_src, reg)
        .run_round("p", &ctx())
        .await
        .expect("round");

    assert_eq!(out.submission, "final after the limit");
    assert!(out.hit_tool_round_limit);
    assert_eq!(out.tool_rounds, 2);
    assert_eq!(out.member_submissions.len(), 2);
    let reqs = leader.requests();
    assert_eq!(
        reqs.len(),
        3,
        "two tool turns, then the final-answer request"
    );
    let last = messages(&reqs[2].body);
    assert_eq!(
        last.last()
            .map(|m| (m["role"].clone(), m["content"].clone())),
        Some((json!("user"), json!(final_answer_request(2))))
    );
    assert!(
        messages(&reqs[1].body)
            .iter()
            .all(|m| m["content"] != json!(final_answer_request(2)))
    );

    // The final-answer request offers no tools and writes the tool turns out as text (a
    // provider may refuse tool-call turns without tool definitions).
    assert!(reqs[1].body.get("tools").is_some());
    assert!(reqs[2].body.get("tools").is_none(), "{}", reqs[2].body);
    assert!(
        last.iter()
            .all(|m| m["role"] != "tool" && m.get("tool_calls").is_none()),
        "{last:?}"
    );
    let texts: Vec<(String, String)> = last
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("").to_string(),
                m["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        texts[1..],
        [
            ("user".to_string(), "p".to_string()),
            (
                "assistant".to_string(),
                "[called `delegate_to_a` with task: 1]".to_string()
            ),
            (
                "user".to_string(),
                "[result of `delegate_to_a`]\nok".to_string()
            ),
            (
                "assistant".to_string(),
                "[called `delegate_to_a` with task: 2]".to_string()
            ),
            (
                "user".to_string(),
                "[result of `delegate_to_a`]\nok".to_string()
            ),
            ("user".to_string(), final_answer_request(2)),
        ]
    );
    // The recorded transcript keeps the real tool turns.
    assert!(out.messages.iter().any(|m| {
        m["parts"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["part_kind"] == "tool-return"))
    }));

    // A leader that still only calls tools after the limit gives no answer: the run fails
    // with an error saying what happened and what to do, and those tools are not run.
    let stubborn = FakeLlm::openai().await;
    stubborn.set_default(calls(&[("delegate_to_a", "again")]));
    let members2 = FakeLlm::openai().await;
    let reg = registry(&[
        ("lead", &stubborn, Wire::OpenAi),
        ("mem", &members2, Wire::OpenAi),
    ]);
    let err = agents(&toml_src, reg)
        .run_round("p", &ctx())
        .await
        .expect_err("no answer");
    assert!(matches!(err, AgentError::NoAnswer(_)), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("max_tool_rounds (2)")
            && text.contains("`delegate_to_a`")
            && text.contains("raise max_tool_rounds"),
        "{text}"
    );
    assert_eq!((stubborn.request_count(), members2.request_count()), (3, 2));

    // Text alongside tool calls in the final answer: the text is the submission.
    let chatty = FakeLlm::openai().await;
    chatty.script([
        calls(&[("delegate_to_a", "1")]),
        calls(&[("delegate_to_a", "2")]),
    ]);
    chatty.push(Reply::Body {
        status: 200,
        body: json!({
            "id": "x", "object": "chat.completion", "model": "gpt-leader",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "the answer anyway",
                "tool_calls": [{"id": "c9", "type": "function", "function": {"name": "delegate_to_a", "arguments": "{\"task\":\"more\"}"}}]
            }}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
        })
        .to_string(),
    });
    let members3 = FakeLlm::openai().await;
    members3.set_default(Reply::text("ok"));
    let reg = registry(&[
        ("lead", &chatty, Wire::OpenAi),
        ("mem", &members3, Wire::OpenAi),
    ]);
    let out = agents(&toml_src, reg)
        .run_round("p", &ctx())
        .await
        .expect("text taken");
    assert_eq!(out.submission, "the answer anyway");
    assert!(out.hit_tool_round_limit);
    assert_eq!(members3.request_count(), 2, "the late call is not run");
}

#[tokio::test]
async fn blank_tasks_and_unknown_tools_are_tool_errors_until_max_retries() {
    let leader = FakeLlm::openai().await;
    let members = FakeLlm::openai().await;
    leader.push(Reply::ToolCalls(vec![
        ("delegate_to_a".into(), json!({"task": "  "})),
        ("no_such_tool".into(), json!({"task": "x"})),
    ]));
    leader.push(Reply::text("ok then"));
    let reg = registry(&[
        ("lead", &leader, Wire::OpenAi),
        ("mem", &members, Wire::OpenAi),
    ]);
    let out = agents(TWO_MEMBERS, reg.clone())
        .run_round("p", &ctx())
        .await
        .expect("round");
    assert_eq!(out.submission, "ok then");
    assert!(out.member_submissions.is_empty());
    assert_eq!(members.request_count(), 0);
    let second = messages(&leader.requests()[1].body);
    let results: Vec<&str> = second
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(results[0], "Error: Task cannot be empty");
    assert!(
        results[1].starts_with(
            "Error: unknown tool `no_such_tool`. Available tools: delegate_to_a, ask_b"
        ),
        "{}",
        results[1]
    );

    // The same invalid call more than max_retries (1) times fails the run.
    let leader2 = FakeLlm::openai().await;
    leader2.set_default(Reply::ToolCalls(vec![(
        "delegate_to_a".into(),
        json!({"task": ""}),
    )]));
    let reg2 = registry(&[
        ("lead", &leader2, Wire::OpenAi),
        ("mem", &members, Wire::OpenAi),
    ]);
    let toml_src = TWO_MEMBERS.replace(
        "model = \"lead:gpt-leader\"",
        "model = \"lead:gpt-leader\"\nmax_retries = 1",
    );
    let err = agents(&toml_src, reg2)
        .run_round("p", &ctx())
        .await
        .expect_err("too many invalid calls");
    assert!(
        matches!(err, AgentError::ToolRetries { ref tool, max_retries: 1, .. } if tool == "delegate_to_a"),
        "{err}"
    );
    assert_eq!(leader2.request_count(), 2);
}

#[tokio::test]
async fn hostile_tool_calls_reach_the_leader_as_tool_errors_on_every_wire() {
    for wire in [Wire::OpenAi, Wire::Anthropic, Wire::Gemini] {
        let leader = FakeLlm::start(wire).await;
        let members = FakeLlm::openai().await;
        // A call with invalid JSON arguments, one with arguments that are JSON but not an
        // object, one of a tool never offered; then the model answers.
        leader.script([
            Reply::Hostile(Hostile::InvalidArguments),
            Reply::Hostile(Hostile::NonObjectArguments),
            Reply::Hostile(Hostile::UnknownTool),
            Reply::text("the answer after all"),
        ]);
        let reg = registry(&[("lead", &leader, wire), ("mem", &members, Wire::OpenAi)]);
        let out = agents(TWO_MEMBERS, reg)
            .run_round("p", &ctx())
            .await
            .unwrap_or_else(|e| panic!("{wire:?}: {e}"));
        assert_eq!(out.submission, "the answer after all", "{wire:?}");
        assert_eq!(members.request_count(), 0, "{wire:?}: no member ran");
        let reqs = leader.requests();
        assert_eq!(reqs.len(), 4, "{wire:?}");
        // Each tool error is in the next request, for the model to read.
        let sent = |i: usize| reqs[i].body.to_string();
        assert!(
            sent(1).contains("the arguments of `delegate_to_a` are not a JSON object")
                && sent(1).contains(r#"got `{\"task\": `"#),
            "{wire:?}: {}",
            sent(1)
        );
        assert!(
            sent(2).contains("the arguments of `delegate_to_a` are not a JSON object"),
            "{wire:?}: {}",
            sent(2)
        );
        assert!(
            sent(3).contains("unknown tool `no_such_tool`. Available tools: delegate_to_a, ask_b"),
            "{wire:?}: {}",
            sent(3)
        );
    }
}

#[tokio::test]
async fn invalid_json_arguments_beyond_max_retries_fail_the_run_with_a_clear_error() {
    let leader = FakeLlm::openai().await;
    let members = FakeLlm::openai().await;
    leader.set_default(Reply::Hostile(Hostile::InvalidArguments));
    let reg = registry(&[
        ("lead", &leader, Wire::OpenAi),
        ("mem", &members, Wire::OpenAi),
    ]);
    let toml_src = TWO_MEMBERS.replace(
        "model = \"lead:gpt-leader\"",
        "model = \"lead:gpt-leader\"\nmax_retries = 2",
    );
    let err = agents(&toml_src, reg)
        .run_round("p", &ctx())
        .await
        .expect_err("the model never sends valid arguments");
    let AgentError::ToolRetries {
        ref tool,
        max_retries,
        ref last_error,
    } = err
    else {
        panic!("{err}");
    };
    assert_eq!((tool.as_str(), max_retries), ("delegate_to_a", 2));
    assert!(last_error.contains("not a JSON object"), "{last_error}");
    assert!(
        err.to_string()
            .contains("Tool 'delegate_to_a' exceeded max retries count of 2"),
        "{err}"
    );
    assert_eq!(
        leader.request_count(),
        3,
        "two tool errors, then the run fails"
    );
    assert_eq!(members.request_count(), 0);
}

#[tokio::test]
async fn a_leader_failure_fails_the_run() {
    let leader = FakeLlm::openai().await;
    leader.push(Reply::status(401, "bad key"));
    let reg = registry(&[("lead", &leader, Wire::OpenAi)]);
    let err = agents(
        "[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[team.leader]\nmodel = \"lead:x\"\n",
        reg,
    )
    .run_round("p", &ctx())
    .await
    .expect_err("leader failed");
    assert!(matches!(err, AgentError::Leader(_)), "{err}");
    assert!(!err.is_transient());
}

#[tokio::test]
async fn a_solo_leader_answers_alone_and_empty_system_instruction_sends_none() {
    let leader = FakeLlm::openai().await;
    leader.push(Reply::text("solo"));
    let reg = registry(&[("lead", &leader, Wire::OpenAi)]);
    let mut c = ctx();
    c.prompt.domain_context = None;
    c.prompt.language = None;
    let out = agents("[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[team.leader]\nmodel = \"lead:x\"\nsystem_instruction = \"\"\n", reg)
        .run_round("p", &c)
        .await
        .expect("solo");
    assert_eq!(out.submission, "solo");
    let body = &leader.requests()[0].body;
    assert!(body.get("tools").is_none());
    assert_eq!(system_of(body), "");
}

#[tokio::test]
async fn mock_provider_team_delegates_to_every_member_once() {
    let toml_src = r#"
[team]
team_id = "m"
team_name = "Mock Team"
[team.leader]
model = "mock:leader"
[[team.members]]
name = "analyst"
type = "plain"
model = "mock:analyst"
[[team.members]]
name = "writer"
type = "plain"
model = "mock:writer"
"#;
    let out = agents(toml_src, mock_registry())
        .run_round("Explain tokio", &ctx())
        .await
        .expect("mock round");
    let names: Vec<&str> = out
        .member_submissions
        .iter()
        .map(|s| s.agent_name.as_str())
        .collect();
    assert_eq!(names, ["analyst", "writer"]);
    assert!(
        out.member_submissions
            .iter()
            .all(|s| s.status == MemberStatus::Success && s.usage.input_tokens > 0)
    );
    assert!(
        out.submission.contains("[mock answer from mock:leader]"),
        "{}",
        out.submission
    );
    assert!(
        out.submission.contains("delegate_to_analyst"),
        "{}",
        out.submission
    );
}

#[tokio::test]
async fn unusable_member_types_fail_the_round_at_build_time() {
    // A configured OpenAI-compatible server has no native web search: the round fails when
    // the member is built, before any request.
    let fake = FakeLlm::openai().await;
    let toml_src = "[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[team.leader]\nmodel = \"mock:l\"\n[[team.members]]\nname = \"s\"\ntype = \"web_search\"\nmodel = \"local:llama3\"\n";
    let err = agents(toml_src, registry(&[("local", &fake, Wire::OpenAi)]))
        .run_round("p", &ctx())
        .await
        .expect_err("refused");
    assert!(
        err.to_string().starts_with(
            "member `s`: type = \"web_search\" cannot use model `local:llama3`: provider `local` speaks the OpenAI-compatible Chat Completions API"
        ),
        "{err}"
    );
    assert!(
        err.hint().is_some_and(|h| h.contains("web_fetch")),
        "{err:?}"
    );
    assert_eq!(fake.request_count(), 0);
    // Preflight without the providers table cannot know `local`'s kind: decided at build.
    assert!(mixseek_agents::check_team(&common::team(toml_src)).is_empty());
    // A built-in provider that cannot honour the options is refused by preflight already.
    let gemini = "[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[team.leader]\nmodel = \"mock:l\"\n[[team.members]]\nname = \"s\"\ntype = \"web_search\"\nmodel = \"google-gla:gemini-2.5-flash\"\n[team.members.tool_settings.web_search]\nallowed_domains = [\"a.example\"]\n";
    let errs = mixseek_agents::check_team(&common::team(gemini));
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].to_string().contains("provider `google-gla`"),
        "{}",
        errs[0]
    );
    let err = agents(gemini, mock_registry())
        .run_round("p", &ctx())
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("allowed_domains"), "{err}");
}

#[tokio::test]
async fn a_failed_member_reaches_anthropic_as_a_tool_result_with_is_error() {
    let leader = FakeLlm::anthropic().await;
    let members = FakeLlm::openai().await;
    let broken = FakeLlm::openai().await;
    leader.push(calls(&[("delegate_to_a", "will fail"), ("ask_b", "works")]));
    leader.push(Reply::text("done"));
    members.set_default(Reply::text("fine"));
    broken.set_default(Reply::status(400, "bad request"));
    let reg = registry(&[
        ("lead", &leader, Wire::Anthropic),
        ("mem", &members, Wire::OpenAi),
        ("broken", &broken, Wire::OpenAi),
    ]);
    let toml_src = TWO_MEMBERS.replace("model = \"mem:gpt-a\"", "model = \"broken:gpt-a\"");
    let out = agents(&toml_src, reg)
        .run_round("p", &ctx())
        .await
        .expect("round");
    assert_eq!(out.submission, "done");
    let body = &leader.requests()[1].body;
    let results: Vec<serde_json::Value> = body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .cloned()
        .collect();
    assert_eq!(results.len(), 2, "{body}");
    assert_eq!(results[0]["is_error"], json!(true), "{}", results[0]);
    assert!(
        results[0]["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("Error: member `a` failed:")),
        "{}",
        results[0]
    );
    assert!(results[1].get("is_error").is_none(), "{}", results[1]);
    assert_eq!(results[1]["content"], "fine");
    // The transcript records the flag too.
    assert!(
        out.messages.iter().any(|m| {
            m["parts"].as_array().is_some_and(|p| {
                p.iter()
                    .any(|p| p["part_kind"] == "tool-return" && p["outcome"] == "failed")
            })
        }),
        "{:?}",
        out.messages
    );
}
