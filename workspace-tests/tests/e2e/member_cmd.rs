//! `mixseek member`, end to end: the original's bundled agents (against a fake Gemini server)
//! and member files, its four output formats, its time limit and its errors.

use mixseek_testkit::{FakeLlm, Reply, USAGE_INPUT, USAGE_OUTPUT};
use serde_json::Value;
use workspace_tests::Sandbox;

fn out_text(o: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundled_agent_runs_with_its_settings_and_the_overrides() {
    let gemini = FakeLlm::gemini().await;
    gemini.set_default(Reply::text("The answer."));
    let sb = Sandbox::new();
    let run = |args: &[&str]| {
        let mut cmd = sb.cmd();
        cmd.env("GOOGLE_API_KEY", "test-google-key-0123456789abcdefghij")
            .env("GOOGLE_GLA_BASE_URL", gemini.base_url())
            .args(["member", "What is 2+2?", "--agent", "plain"])
            .args(args);
        cmd
    };
    let mut structured = run(&[]);
    let out = tokio::task::spawn_blocking(move || structured.output().expect("run"))
        .await
        .expect("join");
    let (stdout, stderr) = out_text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("⚠️  Development/Testing only - Not for production use"),
        "{stderr}"
    );
    assert!(
        stdout.starts_with(&format!(
            "{}\nMEMBER AGENT EXECUTION RESULT\n",
            "=".repeat(60)
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("\nStatus: SUCCESS\nAgent: plain (plain)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("\nResponse:\n{}\nThe answer.\n", "-".repeat(40))),
        "{stdout}"
    );
    // The bundled plain.toml of 0.1.0a22: its model, temperature and max_tokens.
    let first = &gemini.requests()[0];
    assert!(
        first.path.contains("gemini-flash-lite-latest"),
        "{}",
        first.path
    );
    assert_eq!(first.body["generationConfig"]["temperature"], 0.7);
    assert_eq!(first.body["generationConfig"]["maxOutputTokens"], 2048);
    assert_eq!(
        first.body["systemInstruction"]["parts"][0]["text"],
        "あなたは親切で正確な情報を提供するアシスタントです。"
    );

    let mut json = run(&["-f", "json", "--max-tokens", "100", "--temperature", "0.2"]);
    let out = tokio::task::spawn_blocking(move || json.output().expect("run"))
        .await
        .expect("join");
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["status"], "success");
    assert_eq!(v["agent_name"], "plain");
    assert_eq!(v["content"], "The answer.");
    assert_eq!(v["usage_info"]["prompt_tokens"], USAGE_INPUT);
    assert_eq!(v["usage_info"]["completion_tokens"], USAGE_OUTPUT);
    assert_eq!(v["metadata"]["temperature"], 0.2);
    assert_eq!(v["metadata"]["max_tokens"], 100);
    assert!(
        v["all_messages"].as_array().is_some_and(|m| m.len() == 2),
        "{v}"
    );
    let last = gemini.requests().pop().expect("a request");
    assert_eq!(last.body["generationConfig"]["temperature"], 0.2);
    assert_eq!(last.body["generationConfig"]["maxOutputTokens"], 100);
}

#[test]
fn a_member_file_in_every_format_and_the_time_limit() {
    let sb = Sandbox::new();
    sb.write(
        "ws/configs/agents/helper.toml",
        "[agent]\nname = \"helper\"\ntype = \"plain\"\nmodel = \"mock:helper\"\n",
    );
    let run = |args: &[&str]| {
        sb.cmd()
            .args(["member", "Say hi"])
            .args(args)
            .output()
            .expect("run")
    };
    // -c relative: against the workspace.
    let text = run(&["-c", "configs/agents/helper.toml", "-f", "text"]);
    let (stdout, stderr) = out_text(&text);
    assert_eq!(text.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.starts_with("[mock answer from mock:helper]"),
        "{stdout}"
    );
    let csv = run(&["-c", "configs/agents/helper.toml", "-f", "csv"]);
    let (stdout, _) = out_text(&csv);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        "timestamp,agent_name,agent_type,status,execution_time_ms,content_length,error_code"
    );
    assert!(
        lines[1].contains(",helper,plain,success,") && lines[1].ends_with(','),
        "{stdout}"
    );
    // An unknown format: the original's error, then the structured output.
    let odd = run(&["-c", "configs/agents/helper.toml", "-f", "yaml"]);
    let (stdout, stderr) = out_text(&odd);
    assert_eq!(odd.status.code(), Some(0));
    assert!(
        stderr.contains(
            "Error: Unknown format 'yaml'. Available formats: structured, json, text, csv"
        ),
        "{stderr}"
    );
    assert!(stdout.contains("MEMBER AGENT EXECUTION RESULT"), "{stdout}");

    // The time limit: --timeout wins over the agent's own; a timeout is an error result.
    sb.write(
        "ws/configs/agents/slow.toml",
        "[agent]\nname = \"slow\"\ntype = \"command\"\ncommand = [\"sleep\", \"10\"]\ntimeout_seconds = 20\n",
    );
    let slow = run(&[
        "-c",
        "configs/agents/slow.toml",
        "--timeout",
        "1",
        "-f",
        "json",
    ]);
    assert_eq!(slow.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&slow.stdout).expect("json");
    assert_eq!(v["status"], "error");
    assert_eq!(v["error_message"], "Execution timeout after 1s");
}

#[test]
fn the_originals_errors() {
    let sb = Sandbox::new();
    let neither = sb.cmd().args(["member", "x"]).output().expect("run");
    let (_, stderr) = out_text(&neither);
    assert_eq!(neither.status.code(), Some(1));
    assert!(
        stderr.contains("Either --config or --agent must be specified"),
        "{stderr}"
    );
    let unknown = sb
        .cmd()
        .args(["member", "x", "--agent", "web-fetch"])
        .output()
        .expect("run");
    let (_, stderr) = out_text(&unknown);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        stderr.contains(
            "Unknown member agent 'web-fetch'. Available agents: code-exec, plain, web-search"
        ),
        "{stderr}"
    );
    let both = sb
        .cmd()
        .args(["member", "x", "--agent", "plain", "-c", "a.toml"])
        .output()
        .expect("run");
    assert_eq!(both.status.code(), Some(2));
    // A file without [agent], with a typo: the loader's errors, naming the file.
    sb.write("ws/bad.toml", "[agnet]\nname = \"x\"\n");
    let bad = sb
        .cmd()
        .args(["member", "x", "-c", "bad.toml"])
        .output()
        .expect("run");
    let (_, stderr) = out_text(&bad);
    assert_eq!(bad.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("bad.toml") && stderr.contains("agnet"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Invalid agent config: missing 'agent' section"),
        "{stderr}"
    );
}
