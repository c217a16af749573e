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
        user.contains("# ユーザから指定されたタスク\nWrite about tokio\n"),
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

    sb.write("ws/native.toml", "[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[team.leader]\nmodel = \"mock:l\"\n[[team.members]]\nname = \"s\"\ntype = \"code_execution\"\nmodel = \"anthropic:claude-haiku-4-5\"\n");
    let out = sb
        .cmd()
        .args(["team", "x", "-c", "native.toml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Error: member `s`: type = \"code_execution\"")
            && stderr.contains("provider `anthropic`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Hint: use a type = \"command\" member"),
        "{stderr}"
    );

    let out = sb
        .cmd()
        .args(["team", "x", "-c", "missing.toml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}
