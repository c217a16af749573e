//! `command` members: a program written by the test (a `sh` script), speaking JSON on
//! stdin/stdout.

use crate::common;

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
    // the transcript: the task sent, the program's answer (with its whole JSON)
    assert_eq!(out.messages[0]["parts"][0]["part_kind"], "user-prompt");
    assert_eq!(out.messages[1]["mixseek_answer"]["status"], "success");
    assert_eq!(out.messages[1]["usage"]["input_tokens"], 7);
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
        Some("command member `py`: `sh agent.sh` exited with status 3; stderr: something broke")
    );
    assert_eq!(out.content, "");

    let out = m.execute("garbage", &c).await;
    assert_eq!(out.status, MemberStatus::Error);
    assert!(
        out.error_message
            .as_deref()
            .is_some_and(|e| e.starts_with(
                "command member `py`: `sh agent.sh` did not print a JSON answer {\"content\", \"status\", \"usage\"}: "
            ) && e.ends_with("; got: this is not json")),
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
        Some(mixseek_agents::EMPTY_TASK)
    );

    let missing: MemberSettings =
        toml::from_str("name = \"x\"\ntype = \"command\"\ncommand = [\"/definitely/not/here\"]")
            .expect("m");
    let out = build_member(&missing, &deps(mock_registry()), None)
        .expect("build")
        .execute("t", &c)
        .await;
    assert!(
        out.error_message.as_deref().is_some_and(|e| e
            .starts_with("command member `x`: cannot start `/definitely/not/here`: ")
            && e.ends_with("(/definitely/not/here does not exist)")),
        "{:?}",
        out.error_message
    );
}

#[tokio::test]
async fn a_program_over_its_time_limit_is_killed() {
    let dir = agent_dir();
    let m =
        build_member(&member(Some(1)), &deps(mock_registry()), Some(dir.path())).expect("build");
    let out = m.execute("sleep", &ctx()).await;
    assert_eq!(out.status, MemberStatus::Error);
    assert_eq!(
        out.error_message.as_deref(),
        Some(
            "command member `py`: `sh agent.sh` did not answer within 1 s and was killed with every process it started (timeout_seconds)"
        )
    );
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
        tool_results[1].starts_with(
            "Error: member `py` failed: command member `py`: `sh agent.sh` exited with status 3"
        ),
        "{}",
        tool_results[1]
    );
}

/// A member running `argv` in `dir`.
fn command_member(name: &str, argv: &[&str], timeout: Option<u64>) -> MemberSettings {
    let command: Vec<String> = argv.iter().map(|a| format!("{a:?}")).collect();
    let mut src = format!(
        "name = \"{name}\"\ntype = \"command\"\ncommand = [{}]\n",
        command.join(", ")
    );
    if let Some(t) = timeout {
        src.push_str(&format!("timeout_seconds = {t}\n"));
    }
    toml::from_str(&src).expect("member")
}

async fn run_script(script: &str, task: &str) -> mixseek_agents::MemberOutput {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("s.sh"), script).expect("write script");
    build_member(
        &command_member("m", &["sh", "s.sh"], None),
        &deps(mock_registry()),
        Some(dir.path()),
    )
    .expect("build")
    .execute(task, &ctx())
    .await
}

#[tokio::test]
async fn stdout_that_is_not_utf8_is_kept_with_replacements_and_a_warning() {
    // Latin-1 "é" (0xE9) in the content.
    let out = run_script(
        "cat > /dev/null\nprintf '{\"content\": \"caf\\351\", \"status\": \"success\"}\\n'\n",
        "t",
    )
    .await;
    assert_eq!(
        (out.status, out.content.as_str()),
        (MemberStatus::Warning, "caf\u{FFFD}")
    );
    assert_eq!(
        out.error_message.as_deref(),
        Some(
            "command member `m`: `sh s.sh` printed bytes that are not UTF-8 (the first at byte 16); they were replaced by U+FFFD"
        )
    );
    // The program's own warning is kept in front of the note.
    let out = run_script(
        "cat > /dev/null\nprintf '{\"content\": \"\\377\", \"status\": \"warning\", \"error_message\": \"partial\"}'\n",
        "t",
    )
    .await;
    assert_eq!(out.status, MemberStatus::Warning);
    assert!(
        out.error_message.as_deref().is_some_and(|e| e.starts_with(
            "partial; command member `m`: `sh s.sh` printed bytes that are not UTF-8"
        )),
        "{:?}",
        out.error_message
    );
}

/// The peak resident memory of this test process (Linux), in bytes.
#[cfg(target_os = "linux")]
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .expect("VmHWM")
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn huge_output_is_capped_not_buffered() {
    let before = peak_rss();
    // 200 MB on stdout: stopped at the cap.
    let out = run_script("cat > /dev/null\nyes 0123456789 | head -c 200000000\n", "t").await;
    assert_eq!(out.status, MemberStatus::Error);
    assert_eq!(
        out.error_message.as_deref(),
        Some(
            format!(
                "command member `m`: `sh s.sh` printed more than {} MiB on stdout and was stopped; a command member prints one JSON answer {{\"content\", \"status\", \"usage\"}} (send logs to stderr)",
                mixseek_agents::MAX_STDOUT / (1024 * 1024)
            )
            .as_str()
        )
    );
    // 200 MB on stderr: only its end is kept, the answer is fine.
    let out = run_script(
        "cat > /dev/null\nyes 'a log line' | head -c 200000000 >&2\necho '{\"content\": \"ok\"}'\n",
        "t",
    )
    .await;
    assert_eq!(
        (out.status, out.content.as_str()),
        (MemberStatus::Success, "ok")
    );
    let grown = peak_rss().saturating_sub(before);
    assert!(
        grown < 100 * 1024 * 1024,
        "400 MB of output grew the peak memory by {grown} bytes"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_program_killed_by_a_signal_names_the_signal() {
    let out = run_script("echo 'dying' >&2\nkill -KILL $$\n", "t").await;
    assert_eq!(out.status, MemberStatus::Error);
    assert_eq!(
        out.error_message.as_deref(),
        Some("command member `m`: `sh s.sh` was killed by signal 9 (SIGKILL); stderr: dying")
    );
}

#[tokio::test]
async fn a_program_that_closes_stdin_unread_still_answers() {
    // Our write of a 4 MB task hits a closed pipe.
    let out = run_script(
        "exec 0<&-\necho '{\"content\": \"did not listen\"}'\n",
        &"x".repeat(4 * 1024 * 1024),
    )
    .await;
    assert_eq!(
        (out.status, out.content.as_str(), out.error_message),
        (MemberStatus::Success, "did not listen", None)
    );
}

#[cfg(unix)]
#[tokio::test]
async fn programs_that_cannot_run_say_why() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("plain.sh"), "echo '{\"content\": \"x\"}'\n").expect("write");
    std::fs::write(dir.path().join("shebang.sh"), "#!/no/such/interpreter\n").expect("write");
    std::fs::set_permissions(
        dir.path().join("shebang.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    let run = |argv: &'static [&'static str]| {
        let dir = dir.path().to_path_buf();
        async move {
            build_member(
                &command_member("m", argv, None),
                &deps(mock_registry()),
                Some(&dir),
            )
            .expect("build")
            .execute("t", &ctx())
            .await
            .error_message
            .unwrap_or_default()
        }
    };
    let e = run(&["./plain.sh"]).await;
    assert!(
        e.starts_with("command member `m`: cannot start `./plain.sh`: ")
            && e.contains(
                "plain.sh is not executable: `chmod +x` it or run it through its interpreter"
            ),
        "{e}"
    );
    let e = run(&["./shebang.sh"]).await;
    assert!(
        e.contains("shebang.sh exists, so the interpreter on its `#!` line was not found"),
        "{e}"
    );
    let e = run(&["no-such-agent-on-path"]).await;
    assert!(e.contains("`no-such-agent-on-path` is not on PATH"), "{e}");
}

/// True while process `pid` exists and is not a zombie.
#[cfg(target_os = "linux")]
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X'),
        Err(_) => false,
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_timeout_kills_every_process_the_program_started() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("spawner.sh"),
        "sleep 300 &\necho $! > sleep.pid\nwait\n",
    )
    .expect("write");
    let out = build_member(
        &command_member("m", &["sh", "spawner.sh"], Some(1)),
        &deps(mock_registry()),
        Some(dir.path()),
    )
    .expect("build")
    .execute("t", &ctx())
    .await;
    assert_eq!(out.status, MemberStatus::Error);
    let pid: u32 = std::fs::read_to_string(dir.path().join("sleep.pid"))
        .expect("the script recorded its child")
        .trim()
        .parse()
        .expect("a pid");
    // SIGKILL is immediate; the loop only waits for the kernel to finish the exit.
    for _ in 0..200 {
        if !running(pid) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        !running(pid),
        "the grandchild sleep {pid} outlived the timeout"
    );
}
