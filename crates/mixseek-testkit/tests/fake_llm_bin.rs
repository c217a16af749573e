//! The `mixseek-fake-llm` binary: prints its address, answers in the OpenAI format
//! (text, schema samples, tool calls), injects faults.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(args: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mixseek-fake-llm"))
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("address line");
    Server {
        child,
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
}
