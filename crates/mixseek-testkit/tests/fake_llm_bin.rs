//! The `mixseek-fake-llm` binary: prints its address, answers in the OpenAI format
//! (text, schema samples, tool calls), injects faults.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

struct Server {
    /// `None` once [`Server::interrupt`] took it.
    child: Option<Child>,
    url: String,
}

impl Server {
    /// Ctrl-C (SIGINT), then what the server printed on stderr as it stopped.
    fn interrupt(mut self) -> String {
        let child = self.child.take().expect("running");
        let sent = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
        let out = child.wait_with_output().expect("wait");
        assert!(out.status.success(), "{:?}", out.status);
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn start(args: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mixseek-fake-llm"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("address line");
    Server {
        child: Some(child),
        url: line.trim().to_string(),
    }
}

async fn post(url: &str, body: Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("{url}/chat/completions"))
        .json(&body)
        .send()
        .await
        .expect("send");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn prints_its_url_and_answers_text_schemas_and_tools() {
    let s = start(&[]);
    assert!(
        s.url.starts_with("http://127.0.0.1:") && s.url.ends_with("/v1"),
        "{}",
        s.url
    );
    let (status, v) = post(
        &s.url,
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(v["choices"][0]["message"]["content"], "fake answer 0");
    assert_eq!(v["usage"]["prompt_tokens"], 12);

    let schema = json!({"type": "object", "properties": {"score": {"type": "number", "minimum": 0, "maximum": 100}}, "required": ["score"]});
    let (_, v) = post(&s.url, json!({"model": "m", "messages": [], "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}})).await;
    let content: Value = serde_json::from_str(
        v["choices"][0]["message"]["content"]
            .as_str()
            .expect("text"),
    )
    .expect("json");
    assert_eq!(content, json!({"score": 50.0}));

    let tools = json!([{"type": "function", "function": {"name": "ask", "parameters": {"type": "object", "properties": {"task": {"type": "string"}}}}}]);
    let (_, v) = post(
        &s.url,
        json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": tools}),
    )
    .await;
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "ask"
    );
    let called = json!([{"role": "user", "content": "x"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "ask", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "r"}]);
    let (_, v) = post(
        &s.url,
        json!({"model": "m", "messages": called, "tools": tools}),
    )
    .await;
    assert!(
        v["choices"][0]["message"]["content"]
            .as_str()
            .is_some_and(|t| t.starts_with("fake answer"))
    );
}

/// A continuation judgment's schema, as the original's output tool and our `response_format`
/// carry it.
fn judgment_schema() -> Value {
    json!({"type": "object", "properties": {
        "should_continue": {"type": "boolean"},
        "reasoning": {"type": "string"},
        "confidence_score": {"type": "number", "minimum": 0, "maximum": 1}},
        "required": ["should_continue", "reasoning", "confidence_score"]})
}

fn structured(schema: Value) -> Value {
    json!({"model": "m", "messages": [{"role": "user", "content": "x"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}})
}

fn content_json(v: &Value) -> Value {
    serde_json::from_str(
        v["choices"][0]["message"]["content"]
            .as_str()
            .expect("text"),
    )
    .expect("json")
}

#[tokio::test]
async fn continue_answers_every_judgment_with_continue_and_the_count_is_printed_at_the_end() {
    // without the flag, the schema sample says stop
    let plain = start(&[]);
    let (_, v) = post(&plain.url, structured(judgment_schema())).await;
    assert_eq!(content_json(&v)["should_continue"], false);

    let s = start(&["--continue"]);
    let (_, v) = post(&s.url, structured(judgment_schema())).await;
    assert_eq!(content_json(&v)["should_continue"], true);
    // an output tool (the original's framework asks for structured output that way)
    let tools = json!([{"type": "function", "function": {"name": "final_result", "parameters": judgment_schema()}}]);
    let (_, v) = post(
        &s.url,
        json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": tools}),
    )
    .await;
    let call = &v["choices"][0]["message"]["tool_calls"][0]["function"];
    assert_eq!(call["name"], "final_result");
    let args: Value = serde_json::from_str(call["arguments"].as_str().expect("arguments"))
        .expect("json arguments");
    assert_eq!(args["should_continue"], true);
    // anything else is answered as without the flag
    let schema = json!({"type": "object", "properties": {"score": {"type": "number", "minimum": 0, "maximum": 100}}, "required": ["score"]});
    let (_, v) = post(&s.url, structured(schema)).await;
    assert_eq!(content_json(&v), json!({"score": 50.0}));

    assert_eq!(s.interrupt().trim(), "3 requests");
}

#[tokio::test]
async fn fault_rate_one_always_fails_with_503() {
    let s = start(&["--fault-rate", "1"]);
    let (status, v) = post(&s.url, json!({"model": "m", "messages": []})).await;
    assert_eq!(status, 503);
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("injected fault"))
    );
}

#[test]
fn bad_arguments_exit_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_mixseek-fake-llm"))
        .args(["--fault-rate", "2"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    // a flag that would do nothing on that wire is refused, not ignored
    let out = Command::new(env!("CARGO_BIN_EXE_mixseek-fake-llm"))
        .args(["--continue", "--wire", "gemini"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--continue"));
}
