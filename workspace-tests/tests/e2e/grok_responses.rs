//! `grok-responses:` models end to end: `mixseek exec` with a team whose leader and
//! `web_search` member are xAI-through-the-Responses-API models, pointed at the fake OpenAI
//! server by `[providers.grok-responses] base_url`; the `--dry-run` credential check; and
//! `mixseek llm`.

use mixseek_testkit::{FakeLlm, RESPONSES_PATH, Reply, USAGE_INPUT, USAGE_OUTPUT};
use serde_json::{Value, json};
use workspace_tests::Sandbox;

const KEY: &str = "xai-e2e-0123456789abcdefghij";

/// Orchestrator, team (leader `grok-responses:grok-4`, one `web_search` member
/// `grok-responses:grok-4-1-fast` with the settings of the original's SNS researcher sample),
/// evaluator and judgment on `mock:`. Returns the orchestrator file.
fn competition(sb: &Sandbox, base_url: &str) -> std::path::PathBuf {
    sb.write(
        "cfg/team.toml",
        "[team]\nteam_id = \"x\"\nteam_name = \"SNS Research Team\"\n[team.leader]\nmodel = \"grok-responses:grok-4\"\n\
         [[team.members]]\nname = \"sns-searcher\"\ntool_name = \"search_sns_trends\"\ntype = \"web_search\"\nmodel = \"grok-responses:grok-4-1-fast\"\n\
         temperature = 0.5\nmax_tokens = 6144\ntop_p = 0.9\ntimeout_seconds = 120\n\
         [team.members.tool_settings.web_search]\nmax_results = 20\ntimeout = 60\n",
    );
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\n",
    );
    sb.write("cfg/judgment.toml", "model = \"mock:judge-continue\"\n");
    sb.write(
        "cfg/orchestrator.toml",
        &format!(
            "[orchestrator]\nmin_rounds = 1\nmax_rounds = 1\ntimeout_per_team_seconds = 60\nevaluator_config = \"evaluator.toml\"\njudgment_config = \"judgment.toml\"\n[[orchestrator.teams]]\nconfig = \"team.toml\"\n\
             [providers.grok-responses]\nbase_url = \"{base_url}\"\nmax_attempts = 3\nbackoff_initial_seconds = 0.01\nbackoff_max_seconds = 0.05\n"
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_runs_a_grok_responses_team_through_the_responses_api() {
    let fake = FakeLlm::openai().await;
    // Leader: delegate to the member (its function tool), which searches natively (after one
    // 429 with Retry-After), then the leader's final answer.
    fake.push(Reply::Auto);
    fake.push(Reply::rate_limited("0"));
    fake.push(Reply::web_search(
        "sns trends",
        &[("https://x.com/trends/1", "Trend on X")],
        "Rivers are trending.",
    ));
    fake.push(Reply::text("Final: rivers are trending."));
    let sb = Sandbox::new();
    let orch = competition(&sb, &fake.base_url());
    let mut cmd = sb.cmd();
    cmd.env("GROK_API_KEY", KEY)
        .args(["exec", "What is trending on X?", "-f", "json", "-q", "-c"])
        .arg(&orch);
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("run"))
        .await
        .expect("join");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY), "key leaked");

    let sent = fake.requests();
    assert_eq!(sent.len(), 4, "leader, member (429 + retry), leader");
    for s in &sent {
        assert_eq!(s.path, RESPONSES_PATH);
        assert_eq!(
            s.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        assert_eq!(s.body["store"], false);
    }
    // The leader's member is a function tool of the Responses API.
    let leader = &sent[0].body;
    assert_eq!(leader["model"], "grok-4");
    let tools = leader["tools"].as_array().expect("leader tools");
    assert!(
        tools
            .iter()
            .any(|t| t["type"] == "function" && t["name"] == "search_sns_trends"),
        "{tools:?}"
    );
    // The member: xAI's built-in web search, only temperature and max_tokens forwarded.
    let member = &sent[2].body;
    assert_eq!(sent[1].body, *member, "the retry resends the same body");
    assert_eq!(member["model"], "grok-4-1-fast");
    assert_eq!(member["tools"], json!([{"type": "web_search"}]));
    assert_eq!(member["temperature"], 0.5);
    assert_eq!(member["max_output_tokens"], 6144);
    assert!(member.get("top_p").is_none(), "{member}");
    // The leader's second call carries the member's answer as the function call's output.
    let input = sent[3].body["input"].as_array().expect("input");
    let output = input
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .expect("function_call_output");
    assert!(
        output["output"].as_str().is_some_and(
            |o| o.contains("Rivers are trending.") && o.contains("https://x.com/trends/1")
        ),
        "{output}"
    );

    let summary: Value = serde_json::from_str(&stdout).expect("json summary");
    let id = summary["execution_id"].as_str().expect("execution id");
    let store = mixseek_store::Store::open_read_only(sb.workspace().join("mixseek.db"))
        .expect("open the database");
    let rounds = store.round_details(id).expect("rounds");
    assert_eq!(rounds.len(), 1);
    assert!(
        rounds[0]
            .submission_content
            .contains("Final: rivers are trending."),
        "{}",
        rounds[0].submission_content
    );
    let record = rounds[0]
        .member_submissions
        .clone()
        .expect("member_submissions_record");
    let sub = &record["submissions"][0];
    assert_eq!(sub["agent_name"], "sns-searcher");
    assert_eq!(sub["status"], "SUCCESS");
    assert_eq!(sub["usage"]["input_tokens"], USAGE_INPUT);
    assert_eq!(sub["usage"]["output_tokens"], USAGE_OUTPUT);
    // Leader twice and the member once answered with usage.
    let agent = rounds[0].usage.agent;
    assert_eq!(
        (agent.input_tokens, agent.output_tokens),
        (3 * USAGE_INPUT, 3 * USAGE_OUTPUT)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_checks_the_grok_api_key() {
    // a server that answers: the dry run also asks local servers whether they do
    let fake = FakeLlm::openai().await;
    let sb = Sandbox::new();
    let orch = competition(&sb, &fake.base_url());
    let auth = |key: Option<&str>| {
        let mut cmd = sb.cmd();
        if let Some(k) = key {
            cmd.env("GROK_API_KEY", k);
        }
        let out = cmd
            .args(["exec", "x", "--dry-run", "-f", "json", "-c"])
            .arg(&orch)
            .output()
            .expect("run");
        let v: Value = serde_json::from_slice(&out.stdout).expect("json");
        let check = v["categories"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| c["checks"].as_array().cloned().unwrap_or_default())
            .find(|c| c["name"] == "auth_grok-responses")
            .unwrap_or_else(|| panic!("no auth_grok-responses check: {v}"));
        (out.status.code(), check)
    };
    let (code, check) = auth(None);
    assert_eq!(code, Some(2));
    assert_eq!(check["status"], "error");
    let message = check["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("GROK_API_KEY") && message.contains("grok-responses:grok-4"),
        "{message}"
    );
    let (code, check) = auth(Some(KEY));
    assert_eq!((code, check["status"].as_str()), (Some(0), Some("ok")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_answers_through_the_responses_api() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::text("grok says hi"));
    let sb = Sandbox::new();
    let cfg = sb.write(
        "orch.toml",
        &format!(
            "[orchestrator]\n\n[providers.grok-responses]\nbase_url = \"{}\"\n",
            fake.base_url()
        ),
    );
    let mut cmd = sb.cmd();
    cmd.env("XAI_API_KEY", KEY)
        .args(["llm", "grok-responses:grok-4", "hi", "-c"])
        .arg(&cfg);
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("run"))
        .await
        .expect("join");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("grok says hi"), "{stdout}");
    let sent = fake.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, RESPONSES_PATH);
    assert_eq!(sent[0].body["model"], "grok-4");
}
