//! Members in `mixseek exec`, end to end: preflight refuses a member that cannot run (naming
//! the team, the member and what to do), and the members' real token counts land in DuckDB.

use mixseek_testkit::{FakeLlm, Reply, USAGE_INPUT, USAGE_OUTPUT};
use serde_json::Value;
use workspace_tests::{Sandbox, write_mock_competition};

#[test]
fn preflight_refuses_a_member_that_cannot_run() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    // The config layer accepts a non-empty command list; the agents' check finds the empty
    // program.
    sb.write(
        "cfg/team_a.toml",
        "[team]\nteam_id = \"a\"\nteam_name = \"Team a\"\n[team.leader]\nmodel = \"mock:leader\"\n[[team.members]]\nname = \"runner\"\ntype = \"command\"\ncommand = [\"  \", \"agent.py\"]\n",
    );
    for args in [&["--dry-run"][..], &[][..]] {
        let out = sb
            .cmd()
            .args(["exec", "x", "-c"])
            .arg(&orch)
            .args(args)
            .output()
            .expect("run");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stdout}");
        assert!(stdout.contains("📋 メンバー"), "{stdout}");
        assert!(
            stdout.contains(
                "❌ a_members: team `a`: member `runner`: type = \"command\" needs a command"
            ),
            "{stdout}"
        );
        assert!(
            stdout.contains("(hint: command = [\"python3\", \"agent.py\"])"),
            "{stdout}"
        );
        assert!(stdout.contains("❌ Preflight failed"), "{stdout}");
    }

    // A usable member passes, with the check listed.
    let orch = write_mock_competition(&sb, &["b"]);
    let out = sb
        .cmd()
        .args(["exec", "x", "--dry-run", "-f", "json", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let members = v["categories"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["category"] == "メンバー"))
        .expect("the members category");
    assert_eq!(members["checks"][0]["name"], "b_members");
    assert_eq!(members["checks"][0]["status"], "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn member_token_counts_are_stored_in_duckdb() {
    // The leader and its member talk to a fake OpenAI server: every answer reports
    // USAGE_INPUT / USAGE_OUTPUT tokens. Evaluation and judgment stay on `mock:`.
    let fake = FakeLlm::openai().await;
    fake.set_default(Reply::Auto);
    let sb = Sandbox::new();
    sb.write(
        "cfg/orchestrator.toml",
        &format!(
            "[orchestrator]\nmin_rounds = 1\nmax_rounds = 1\ntimeout_per_team_seconds = 60\nevaluator_config = \"evaluator.toml\"\njudgment_config = \"judgment.toml\"\n[[orchestrator.teams]]\nconfig = \"team.toml\"\n[providers.fake]\nkind = \"openai-compatible\"\nbase_url = \"{}\"\nmax_attempts = 1\n",
            fake.base_url()
        ),
    );
    sb.write(
        "cfg/team.toml",
        "[team]\nteam_id = \"t\"\nteam_name = \"Team t\"\n[team.leader]\nmodel = \"fake:gpt-leader\"\n[[team.members]]\nname = \"helper\"\ntype = \"plain\"\nmodel = \"fake:gpt-member\"\n",
    );
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\n",
    );
    sb.write("cfg/judgment.toml", "model = \"mock:judge-continue\"\n");
    let mut cmd = sb.cmd();
    cmd.args([
        "exec",
        "Summarise the news",
        "-c",
        "cfg/orchestrator.toml",
        "-f",
        "json",
        "-q",
    ]);
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("run"))
        .await
        .expect("join");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_slice(&out.stdout).expect("json summary");
    let id = summary["execution_id"].as_str().expect("execution id");
    // Leader, member, leader.
    assert_eq!(fake.request_count(), 3);

    let store = mixseek_store::Store::open_read_only(sb.workspace().join("mixseek.db"))
        .expect("open the database");
    let rounds = store.round_details(id).expect("rounds");
    assert_eq!(rounds.len(), 1);
    let record = rounds[0]
        .member_submissions
        .clone()
        .expect("member_submissions_record");
    assert_eq!(record["total_count"], 1);
    assert_eq!(record["success_count"], 1);
    let sub = &record["submissions"][0];
    assert_eq!(sub["agent_name"], "helper");
    assert_eq!(sub["status"], "SUCCESS");
    assert_eq!(sub["usage"]["input_tokens"], USAGE_INPUT);
    assert_eq!(sub["usage"]["output_tokens"], USAGE_OUTPUT);
    assert_eq!(sub["usage"]["requests"], 1);
    assert_eq!(record["total_usage"]["input_tokens"], USAGE_INPUT);
    // The round's agent usage counts the leader's two calls and the member's one.
    let agent = rounds[0].usage.agent;
    assert_eq!(
        (agent.input_tokens, agent.output_tokens, agent.requests),
        (3 * USAGE_INPUT, 3 * USAGE_OUTPUT, 3)
    );
}
