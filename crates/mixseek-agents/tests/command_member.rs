//! `command` members: a program written by the test (a `sh` script), speaking JSON on
//! stdin/stdout.

mod common;

use common::{ctx, deps, messages, mock_registry, registry};
use mixseek_agents::{TeamAgents, build_member};
use mixseek_config::MemberSettings;
use mixseek_core::MemberStatus;
use mixseek_testkit::{FakeLlm, Reply, Wire};
use serde_json::json;
use std::path::Path;

/// The test agent, a POSIX `sh` script (nothing to install): it reads the JSON request on
/// stdin, picks fields out of it with `sed`, and answers by task.
const AGENT_SH: &str = r#"
req=$(cat)
field() { printf '%s' "$req" | sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p"; }
task=$(field task)
case "$task" in
  fail) echo "something broke" >&2; exit 3 ;;
  sleep) exec sleep 30 ;;
  garbage) echo "this is not json"; exit 0 ;;
  report-error) echo '{"content": "", "status": "error", "error_message": "no data for that"}'; exit 0 ;;
  warn) echo '{"content": "partial", "status": "warning", "error_message": "only half"}'; exit 0 ;;
esac
round=$(printf '%s' "$req" | sed -n 's/.*"round_number": *\([0-9]*\).*/\1/p')
content="$task | $(field execution_id) | $(field team_id) | $(field team_name) | $round | $(field domain_context) | $(field language) | $(field key) | $(basename "$(pwd)")"
printf '{"content": "%s", "status": "success", "usage": {"input_tokens": 7, "output_tokens": 3, "requests": 1}}\n' "$content"
"#;

fn write_agent(dir: &Path) {
    std::fs::write(dir.join("agent.sh"), AGENT_SH).expect("write agent");
}

fn member(timeout: Option<u64>) -> MemberSettings {
    let mut src = String::from(
        "name = \"py\"\ntype = \"command\"\ncommand = [\"sh\", \"agent.sh\"]\n[tool_settings.my_tool]\nkey = \"secret-sauce\"\n",
    );
    if let Some(t) = timeout {
        src = format!("timeout_seconds = {t}\n{src}");
    }
    toml::from_str(&src).expect("member")
}

fn agent_dir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("agentdir")
        .tempdir()
        .expect("tempdir");
    write_agent(dir.path());
    dir
}

#[tokio::test]
async fn the_program_gets_task_context_and_tool_settings_and_its_usage_counts() {
    let dir = agent_dir();
    let m = build_member(&member(None), &deps(mock_registry()), Some(dir.path())).expect("build");
    let out = m.execute("hello", &ctx()).await;
    assert_eq!(out.status, MemberStatus::Success, "{:?}", out.error_message);
    let cwd = dir
        .path()
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        out.content,
        format!(
            "hello | exec-42 | alpha | Alpha Team | 2 | Semiconductor industry | ja | secret-sauce | {cwd}"
        )
    );
    assert_eq!(
        (
            out.usage.input_tokens,
            out.usage.output_tokens,
            out.usage.requests
        ),
        (7, 3, 1)
    );
    assert_eq!(out.messages[0]["answer"]["status"], "success");
}

#[tokio::test]
async fn failures_become_error_outputs_with_the_reason() {
    let dir = agent_dir();
    let m = build_member(&member(None), &deps(mock_registry()), Some(dir.path())).expect("build");
    let c = ctx();

    let out = m.execute("fail", &c).await;
    assert_eq!(out.status, MemberStatus::Error);
    assert_eq!(
        out.error_message.as_deref(),
        Some("`sh` exited with status 3; stderr: something broke")
    );
    assert_eq!(out.content, "");

    let out = m.execute("garbage", &c).await;
    assert_eq!(out.status, MemberStatus::Error);
    assert!(
        out.error_message
            .as_deref()
            .is_some_and(|e| e.contains("did not print a JSON answer")),
        "{:?}",
        out.error_message
    );

    let out = m.execute("report-error", &c).await;
    assert_eq!(
        (out.status, out.error_message.as_deref()),
        (MemberStatus::Error, Some("no data for that"))
    );

    let out = m.execute("warn", &c).await;
    assert_eq!(
        (
            out.status,
            out.content.as_str(),
            out.error_message.as_deref()
        ),
        (MemberStatus::Warning, "partial", Some("only half"))
    );

    let out = m.execute("   ", &c).await;
    assert_eq!(
        out.error_message.as_deref(),
        Some(mixseek_agents::member::EMPTY_TASK)
    );

    let missing: MemberSettings =
        toml::from_str("name = \"x\"\ntype = \"command\"\ncommand = [\"/definitely/not/here\"]")
            .expect("m");
    let out = build_member(&missing, &deps(mock_registry()), None)
        .expect("build")
        .execute("t", &c)
        .await;
    assert!(
        out.error_message
            .as_deref()
            .is_some_and(|e| e.starts_with("cannot start `/definitely/not/here`")),
        "{:?}",
        out.error_message
    );
}

#[tokio::test]
async fn a_program_over_its_time_limit_is_killed() {
    let dir = agent_dir();
    let m =
        build_member(&member(Some(1)), &deps(mock_registry()), Some(dir.path())).expect("build");
    let started = std::time::Instant::now();
    let out = m.execute("sleep", &ctx()).await;
    assert_eq!(out.status, MemberStatus::Error);
    assert_eq!(
        out.error_message.as_deref(),
        Some("`sh` did not answer within 1 s and was killed")
    );
    assert!(started.elapsed().as_secs() < 10);
}

#[tokio::test]
async fn a_leader_delegates_to_a_command_member_in_its_file_folder() {
    let dir = agent_dir();
    let leader = FakeLlm::openai().await;
    leader.push(Reply::ToolCalls(vec![
        ("delegate_to_py".into(), json!({"task": "hello"})),
        ("delegate_to_py".into(), json!({"task": "fail"})),
    ]));
    leader.push(Reply::text("combined"));
    let reg = registry(&[("lead", &leader, Wire::OpenAi)]);
    let mut team = common::team(
        "[team]\nteam_id = \"alpha\"\nteam_name = \"Alpha Team\"\n[team.leader]\nmodel = \"lead:x\"\n",
    );
    team.members.push(member(None));
    let agents = TeamAgents::new(team, vec![Some(dir.path().to_path_buf())], deps(reg));
    let out = agents.run_round("p", &ctx()).await.expect("round");
    assert_eq!(out.submission, "combined");
    let statuses: Vec<MemberStatus> = out.member_submissions.iter().map(|s| s.status).collect();
    assert_eq!(statuses, [MemberStatus::Success, MemberStatus::Error]);
    assert_eq!(out.member_submissions[0].agent_type, "command");
    assert_eq!(out.member_usage().input_tokens, 7);
    let tool_results: Vec<String> = messages(&leader.requests()[1].body)
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect();
    assert!(
        tool_results[0].starts_with("hello | exec-42 | alpha"),
        "{}",
        tool_results[0]
    );
    assert!(
        tool_results[1].starts_with("Error: member `py` failed: `sh` exited with status 3"),
        "{}",
        tool_results[1]
    );
}
