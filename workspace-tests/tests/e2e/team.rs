//! `mixseek team` end to end: the real binary runs one team through its rounds, offline with
//! the `mock:` provider and against a fake OpenAI server, and reports bad input clearly.

use mixseek_testkit::{FakeLlm, Reply};
use serde_json::Value;
use workspace_tests::Sandbox;

const EVALUATOR: &str = "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\n";

fn offline_workspace(sb: &Sandbox, judgment_model: &str) {
    sb.write("ws/configs/evaluator.toml", EVALUATOR);
    sb.write(
        "ws/configs/judgment.toml",
        &format!("model = \"{judgment_model}\"\n"),
    );
    sb.write(
        "ws/team.toml",
        "[team]\nteam_id = \"alpha\"\nteam_name = \"Alpha Team\"\n[team.leader]\nmodel = \"mock:leader\"\n[[team.members]]\nconfig = \"agents/helper.toml\"\n",
    );
    sb.write(
        "ws/agents/helper.toml",
        "[agent]\nname = \"helper\"\ntype = \"plain\"\nmodel = \"mock:helper\"\n",
    );
}

#[test]
fn runs_a_mock_team_through_its_rounds_and_prints_the_final_submission() {
    let sb = Sandbox::new();
    offline_workspace(&sb, "mock:judge-continue");
    let out = sb
        .cmd()
        .args([
            "team",
            "Explain async Rust",
            "-c",
            "team.toml",
            "--max-rounds",
            "2",
            "--min-rounds",
            "1",
        ])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Team: Alpha Team (alpha)"), "{stdout}");
    assert!(
        stdout.contains("Round 1: score ") && stdout.contains("Round 2: score "),
        "{stdout}"
    );
    assert!(stdout.contains("Member Agents: 1/1 succeeded"), "{stdout}");
    assert!(
        stdout.contains("Exit reason: max_rounds_reached"),
        "{stdout}"
    );
    assert!(stdout.contains("=== Final Submission (round "), "{stdout}");
    assert!(
        stdout.contains("[mock answer from mock:leader]"),
        "{stdout}"
    );

    let out = sb
        .cmd()
        .args([
            "team",
            "Explain async Rust",
            "-c",
            "team.toml",
            "--max-rounds",
            "3",
            "--min-rounds",
            "1",
            "-f",
            "json",
        ])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json on stdout");
    assert_eq!(v["team_id"], "alpha");
    assert_eq!(v["status"], "completed");
    assert_eq!(v["rounds"].as_array().map(Vec::len), Some(3));
    assert_eq!(v["rounds"][0]["decision"]["should_continue"], true);
    assert_eq!(v["rounds"][0]["member_submissions"]["success_count"], 1);
    assert!(
        v["rounds"][0]["member_submissions"]["submissions"][0]["usage"]["input_tokens"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );
    assert_eq!(v["best"]["final_submission"], true);
    assert_eq!(v["best"]["exit_reason"], "max_rounds_reached");
}

#[test]
fn web_search_and_code_execution_members_run_offline_on_mock() {
    let sb = Sandbox::new();
    offline_workspace(&sb, "mock:judge-stop");
    sb.write(
        "ws/native.toml",
        "[team]\nteam_id = \"n\"\nteam_name = \"Native\"\n[team.leader]\nmodel = \"mock:leader\"\n[[team.members]]\nname = \"searcher\"\ntype = \"web_search\"\nmodel = \"mock:searcher\"\n[team.members.tool_settings.web_search]\nmax_uses = 2\n[[team.members]]\nname = \"coder\"\ntype = \"code_execution\"\nmodel = \"mock:coder\"\n",
    );
    let out = sb
        .cmd()
        .args([
            "team",
            "Compare async runtimes",
            "-c",
            "native.toml",
            "--max-rounds",
            "1",
            "-f",
            "json",
        ])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json on stdout");
    let subs = v["rounds"][0]["member_submissions"]["submissions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let content = |name: &str| {
        subs.iter()
            .find(|s| s["agent_name"] == name)
            .and_then(|s| s["content"].as_str())
            .unwrap_or("")
            .to_string()
    };
    let searcher = content("searcher");
    assert!(
        searcher.contains("[mock web_search: offline, nothing was searched; no sources]"),
        "{searcher}"
    );
    let coder = content("coder");
    assert!(
        coder.contains("[mock code_execution: offline, no code was run]"),
        "{coder}"
    );
    assert_eq!(v["rounds"][0]["member_submissions"]["success_count"], 2);
}

#[test]
fn the_judgment_can_stop_the_team_early() {
    let sb = Sandbox::new();
    offline_workspace(&sb, "mock:judge-stop");
    let out = sb
        .cmd()
        .args([
            "team",
            "Explain async Rust",
            "-c",
            "team.toml",
            "--max-rounds",
            "4",
            "--min-rounds",
            "1",
            "-f",
            "json",
        ])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["rounds"].as_array().map(Vec::len), Some(1));
    assert_eq!(v["exit_reason"], "no_improvement_expected");
}

#[tokio::test(flavor = "multi_thread")]
async fn talks_to_a_real_provider_endpoint() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::text("A report about tokio."));
    let sb = Sandbox::new();
    sb.write("ws/configs/evaluator.toml", EVALUATOR);
    sb.write("ws/configs/judgment.toml", "model = \"mock:judge-stop\"\n");
    sb.write("ws/team.toml", "[team]\nteam_id = \"beta\"\nteam_name = \"Beta\"\n[team.leader]\nmodel = \"openai:gpt-fake\"\n");
    let mut cmd = sb.cmd();
    cmd.env("OPENAI_API_KEY", "sk-test-key")
        .env("OPENAI_BASE_URL", fake.base_url());
    cmd.args([
        "team",
        "Write about tokio",
        "-c",
        "team.toml",
        "--max-rounds",
        "1",
    ]);
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("run"))
        .await
        .expect("join");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("A report about tokio."), "{stdout}");
    assert!(
        stdout.contains("Exit reason: max_rounds_reached"),
        "{stdout}"
    );
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 1);
    let user = reqs[0].body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    assert!(
        user.contains("<user_task>\nWrite about tokio\n</user_task>"),
        "{user}"
    );
    assert!(
        !stdout.contains("sk-test-key")
            && !String::from_utf8_lossy(&out.stderr).contains("sk-test-key")
    );
}

#[test]
fn bad_input_is_a_clear_usage_error() {
    let sb = Sandbox::new();
    sb.write("ws/team.toml", "[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[[team.members]]\nname = \"m\"\ntype = \"plian\"\nmodel = \"mock:x\"\n");
    let out = sb
        .cmd()
        .args(["team", "x", "-c", "team.toml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("did you mean `plain`?"), "{stderr}");
    assert!(out.stdout.is_empty());

    // xAI's web search gets no domain filters from mixseek: refused before running.
    sb.write("ws/native.toml", "[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[team.leader]\nmodel = \"mock:l\"\n[[team.members]]\nname = \"s\"\ntype = \"web_search\"\nmodel = \"grok:grok-4\"\n[team.members.tool_settings.web_search]\nallowed_domains = [\"x.com\"]\n");
    let out = sb
        .cmd()
        .args(["team", "x", "-c", "native.toml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Error: member `s`: type = \"web_search\" cannot use model `grok:grok-4`")
            && stderr.contains("provider `grok`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Hint: use a model of openai, anthropic, google-gla"),
        "{stderr}"
    );

    let out = sb
        .cmd()
        .args(["team", "x", "-c", "missing.toml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn every_member_call_failing_exits_2_after_the_report() {
    let sb = Sandbox::new();
    sb.write("ws/configs/evaluator.toml", EVALUATOR);
    sb.write("ws/configs/judgment.toml", "model = \"mock:judge-stop\"\n");
    // A `command` member whose program always fails (`sh` is everywhere).
    sb.write(
        "ws/team.toml",
        "[team]\nteam_id = \"alpha\"\nteam_name = \"Alpha Team\"\n[team.leader]\nmodel = \"mock:leader\"\n[[team.members]]\nname = \"broken\"\ntype = \"command\"\ncommand = [\"sh\", \"-c\", \"echo no luck >&2; exit 4\"]\n",
    );
    let out = sb
        .cmd()
        .args([
            "team",
            "Explain async Rust",
            "-c",
            "team.toml",
            "--max-rounds",
            "1",
        ])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    // The report is printed first, with the member's failure.
    assert!(stdout.contains("Member Agents: 0/1 succeeded"), "{stdout}");
    assert!(
        stdout.contains("✗ broken (ERROR): command member `broken`: `sh -c \"echo no luck >&2; exit 4\"` exited with status 4; stderr: no luck"),
        "{stdout}"
    );
    assert!(
        stderr.contains("Error: All member agents failed. No successful submissions."),
        "{stderr}"
    );
    assert!(
        stderr.contains("Hint: each member's error is in the report above"),
        "{stderr}"
    );

    // One member succeeding is enough for exit 0.
    sb.write(
        "ws/team.toml",
        "[team]\nteam_id = \"alpha\"\nteam_name = \"Alpha Team\"\n[team.leader]\nmodel = \"mock:leader\"\n[[team.members]]\nname = \"broken\"\ntype = \"command\"\ncommand = [\"sh\", \"-c\", \"exit 4\"]\n[[team.members]]\nname = \"helper\"\ntype = \"plain\"\nmodel = \"mock:helper\"\n",
    );
    let out = sb
        .cmd()
        .args([
            "team",
            "Explain async Rust",
            "-c",
            "team.toml",
            "--max-rounds",
            "1",
        ])
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn attachments_reach_the_team_prompt_and_a_bad_file_is_named() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::text("Copper rose 12% in March."));
    let sb = Sandbox::new();
    sb.write("ws/configs/evaluator.toml", EVALUATOR);
    sb.write("ws/configs/judgment.toml", "model = \"mock:judge-stop\"\n");
    sb.write("ws/team.toml", "[team]\nteam_id = \"beta\"\nteam_name = \"Beta\"\n[team.leader]\nmodel = \"openai:gpt-fake\"\n");
    let note = sb.write(
        "note.md",
        "# Findings\r\nThe copper price rose 12% in March.   \n",
    );
    let mut cmd = sb.cmd();
    cmd.env("OPENAI_API_KEY", "sk-test-key")
        .env("OPENAI_BASE_URL", fake.base_url())
        .args([
            "team",
            "Summarise the note",
            "-c",
            "team.toml",
            "--max-rounds",
            "1",
            "-f",
            "json",
            "--attach",
        ])
        .arg(&note);
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("run"))
        .await
        .expect("join");
    assert!(out.status.success(), "{}", workspace_tests::describe(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json on stdout");
    assert_eq!(v["status"], "completed");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 1);
    let user = reqs[0].body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    assert!(
        user.contains(
            "<user_task>\nSummarise the note\n</user_task>\n\n<attachments>\n<attachment name=\"note.md\" type=\"text/markdown\">\n# Findings\nThe copper price rose 12% in March.\n</attachment>\n</attachments>"
        ),
        "{user}"
    );

    // A missing, unsupported or too large file is bad input naming it; nothing runs.
    let bin = sb.write("data.bin", "\u{0}\u{1}");
    let big = sb.path().join("big.txt");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(20 * 1024 * 1024 + 1))
        .expect("a sparse file over the limit");
    for (file, says) in [
        (bin, "is not supported"),
        (sb.path().join("missing.pdf"), "no such file"),
        (big, "over the limit of 20 MiB"),
    ] {
        let out = sb
            .cmd()
            .env("OPENAI_API_KEY", "sk-test-key")
            .env("OPENAI_BASE_URL", fake.base_url())
            .args(["team", "x", "-c", "team.toml", "--attach"])
            .arg(&file)
            .output()
            .expect("run");
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}",
            workspace_tests::describe(&out)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("Error: attachment {}", file.display()))
                && stderr.contains(says)
                && stderr.contains("Hint: "),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
    }
    assert_eq!(fake.requests().len(), 1, "no other call was made");
}
