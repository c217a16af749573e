//! OpenTelemetry export, end to end: `mixseek exec --logfire-metadata` / `--logfire` sends one
//! trace to an OTLP/HTTP receiver (`OTEL_EXPORTER_OTLP_ENDPOINT`) whose span tree is
//! execution → team → round → LLM call / tool call / evaluation → metric → LLM call /
//! judgment → LLM call, with GenAI attributes; texts only in full mode, PII-masked there.

use mixseek_testkit::{OtlpReceiver, ReceivedSpan};
use std::collections::HashMap;
use workspace_tests::{Sandbox, write_mock_competition};

async fn run(sb: &Sandbox, orch: &std::path::Path, flag: &str, receiver: &OtlpReceiver) {
    let mut cmd = sb.cmd();
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-team-token=t0k")
        .env("OTEL_SERVICE_NAME", "mixseek-e2e")
        .args([
            flag,
            "exec",
            "Contact me at jane.doe@example.com about rivers",
            "-q",
            "-c",
        ])
        .arg(orch);
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("run"))
        .await
        .expect("join");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn by_id(spans: &[ReceivedSpan]) -> HashMap<&str, &ReceivedSpan> {
    spans.iter().map(|s| (s.span_id.as_str(), s)).collect()
}

/// The names from `s` up to the root.
fn ancestry<'a>(s: &'a ReceivedSpan, ids: &HashMap<&str, &'a ReceivedSpan>) -> Vec<&'a str> {
    let mut names = vec![s.name.as_str()];
    let mut cur = s;
    while let Some(p) = ids.get(cur.parent_span_id.as_str()) {
        names.push(p.name.as_str());
        cur = p;
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_exports_one_trace_with_the_span_tree_and_genai_attributes() {
    let receiver = OtlpReceiver::start().await;
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a", "b"]);
    run(&sb, &orch, "--logfire-metadata", &receiver).await;
    let spans = receiver.spans();
    assert!(!spans.is_empty(), "no span received");
    assert!(spans.iter().all(|s| s.service == "mixseek-e2e"));
    assert!(
        receiver
            .request_headers()
            .iter()
            .all(|h| h.iter().any(|(k, v)| k == "x-team-token" && v == "t0k"))
    );
    // One trace, one root: the execution.
    let traces: std::collections::BTreeSet<&str> =
        spans.iter().map(|s| s.trace_id.as_str()).collect();
    assert_eq!(traces.len(), 1, "{traces:?}");
    let roots: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .collect();
    assert_eq!(roots.len(), 1, "{roots:#?}");
    assert_eq!(roots[0].name, "execution");
    let ids = by_id(&spans);
    let teams: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.name == "team").collect();
    assert_eq!(teams.len(), 2);
    assert!(
        teams
            .iter()
            .all(|t| ancestry(t, &ids) == ["team", "execution"])
    );
    let rounds: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.name == "round").collect();
    assert!(rounds.len() >= 2);
    assert!(
        rounds
            .iter()
            .all(|r| ancestry(r, &ids) == ["round", "team", "execution"])
    );
    // The leader's calls, under the round; the member's under its tool call.
    let leader = spans
        .iter()
        .find(|s| s.name == "chat leader-a")
        .expect("a leader call");
    assert_eq!(ancestry(leader, &ids)[1..], ["round", "team", "execution"]);
    assert_eq!(leader.attributes["gen_ai.operation.name"], "chat");
    assert_eq!(leader.attributes["gen_ai.provider.name"], "mock");
    assert_eq!(leader.attributes["gen_ai.request.model"], "leader-a");
    assert!(
        leader.attributes["gen_ai.usage.input_tokens"]
            .as_i64()
            .unwrap_or(0)
            > 0
    );
    assert!(
        leader.attributes["gen_ai.usage.output_tokens"]
            .as_i64()
            .unwrap_or(0)
            > 0
    );
    let member = spans
        .iter()
        .find(|s| s.name == "chat helper")
        .expect("a member call");
    assert_eq!(
        ancestry(member, &ids),
        [
            "chat helper",
            "execute_tool helper",
            "round",
            "team",
            "execution"
        ]
    );
    let tool = ids[member.parent_span_id.as_str()];
    assert_eq!(tool.attributes["gen_ai.tool.name"], "helper");
    // The judges under evaluation → metric, the judgment under its span.
    let judge = spans
        .iter()
        .find(|s| s.name == "chat judge" && ancestry(s, &ids).contains(&"evaluation"))
        .expect("a judge call");
    assert_eq!(
        ancestry(judge, &ids),
        [
            "chat judge",
            "metric",
            "evaluation",
            "round",
            "team",
            "execution"
        ]
    );
    let judgment = spans
        .iter()
        .find(|s| s.name == "chat judge-continue")
        .expect("a judgment call");
    assert_eq!(
        ancestry(judgment, &ids)[1..],
        ["judgment", "round", "team", "execution"]
    );
    // Metadata only: no texts.
    assert!(
        spans
            .iter()
            .all(|s| !s.attributes.contains_key("gen_ai.input.messages")),
        "texts exported in metadata mode"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_mode_exports_texts_masked_by_privacy_settings() {
    let receiver = OtlpReceiver::start().await;
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    let text = std::fs::read_to_string(&orch).expect("read");
    std::fs::write(&orch, format!("{text}\n[privacy]\nmask_pii = true\n")).expect("write");
    run(&sb, &orch, "--logfire", &receiver).await;
    let spans = receiver.spans();
    let leaders: Vec<&ReceivedSpan> = spans.iter().filter(|s| s.name == "chat leader-a").collect();
    let leader = leaders.first().expect("a leader call");
    let input = leader.attributes["gen_ai.input.messages"]
        .as_str()
        .unwrap_or_default();
    assert!(input.contains("about rivers"), "{input}");
    assert!(!input.contains("jane.doe@example.com"), "{input}");
    // The first answer calls the member (a tool call), the last one is the submission.
    let first: serde_json::Value = serde_json::from_str(
        leader.attributes["gen_ai.output.messages"]
            .as_str()
            .unwrap_or("null"),
    )
    .expect("json");
    assert_eq!(first[0]["parts"][0]["type"], "tool_call", "{first}");
    assert_eq!(
        first[0]["parts"][0]["name"], "delegate_to_helper",
        "{first}"
    );
    let last = leaders.last().expect("a final call");
    assert!(
        last.attributes["gen_ai.output.messages"]
            .as_str()
            .is_some_and(|o| o.contains("mock answer")),
        "{:?}",
        last.attributes
    );
}

#[test]
fn the_three_flags_are_exclusive() {
    let sb = Sandbox::new();
    let out = sb
        .cmd()
        .args(["--logfire", "--logfire-metadata", "executions"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(
        "ERROR: Only one of --logfire, --logfire-metadata, or --logfire-http can be specified."
    ));
}

#[test]
fn an_unreachable_endpoint_is_one_warning_and_the_run_goes_on() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let out = sb
        .cmd()
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        )
        .args(["--logfire-metadata", "exec", "x", "-q", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr
            .matches("WARNING: cannot send spans to the OTLP endpoint")
            .count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("http://127.0.0.1:{port}/v1/traces")),
        "{stderr}"
    );
}
