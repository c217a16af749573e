//! The stored message format of agent conversations (`round_history.message_history` and each
//! member's `all_messages`): the message objects of the LLM framework the original MixSeek is
//! built on (pydantic-ai's `ModelMessage` JSON), so the original's own readers validate what we
//! write. A conversation is a list of messages:
//!
//! * `{"kind": "request", "parts": [...], "instructions"}` — what was sent: `user-prompt` and
//!   `tool-return` parts (each with a `timestamp`); the parts of one turn share one request, and
//!   every request carries the system prompt as its `instructions`, as the original's agents
//!   send and store it;
//! * `{"kind": "response", "parts": [...], "usage": {...}, "model_name", "provider_name",
//!   "timestamp", "finish_reason"}` — what the model answered: `text` and `tool-call` parts
//!   (`tool_name`, `args` as a JSON object, `tool_call_id`).
//!
//! What mixseek records beyond the framework's fields goes into keys the framework ignores:
//! the cost of a response and its requests without token counts in `usage`
//! (`cost_usd`, `requests_without_usage`), a failed tool call's `outcome: "failed"` (a field
//! of newer framework versions), a command member's program and whole answer in
//! `mixseek_command` and `mixseek_answer`.
//!
//! Rows written before (mixseek's own `{"role": ...}` entries) stay readable:
//! [`first_user_prompt`] understands both.

use crate::time::{format_utc, now_utc};
use crate::usage::Usage;
use serde_json::{Map, Value, json};

/// Builds one conversation in the framework's message format (see the module docs). Parts
/// added with [`user`](Self::user) and [`tool_return`](Self::tool_return) gather in one
/// request until the next [`response`](Self::response) (or [`finish`](Self::finish)); the
/// [`instructions`](Self::instructions) go with every request.
#[derive(Debug, Default, Clone)]
pub struct TranscriptBuilder {
    messages: Vec<Value>,
    request: Vec<Value>,
    instructions: Option<String>,
}

/// One tool call of a response: its id, the tool's name and the arguments.
#[derive(Debug, Clone, Copy)]
pub struct CallPart<'a> {
    /// The call's id (answered by a tool return with the same id).
    pub id: &'a str,
    /// The tool called.
    pub name: &'a str,
    /// The arguments (a JSON object when the model sent a valid one).
    pub arguments: &'a Value,
}

fn now() -> String {
    format_utc(&now_utc())
}

impl TranscriptBuilder {
    /// An empty conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// The system prompt: the `instructions` of every request from here on.
    pub fn instructions(&mut self, content: &str) -> &mut Self {
        self.instructions = Some(content.to_string());
        self
    }

    /// What the caller asked.
    pub fn user(&mut self, content: &str) -> &mut Self {
        self.request.push(json!({
            "content": content,
            "timestamp": now(),
            "part_kind": "user-prompt",
        }));
        self
    }

    /// The result of a tool call (`failed`: the tool failed or the call was invalid).
    pub fn tool_return(
        &mut self,
        call_id: &str,
        tool_name: &str,
        content: &str,
        failed: bool,
    ) -> &mut Self {
        self.request.push(json!({
            "tool_name": tool_name,
            "content": content,
            "tool_call_id": call_id,
            "metadata": null,
            "timestamp": now(),
            "outcome": if failed { "failed" } else { "success" },
            "part_kind": "tool-return",
        }));
        self
    }

    /// A model's answer: its text, the tool calls it asked for, the model (`provider:name`)
    /// and the call's usage.
    pub fn response(
        &mut self,
        text: Option<&str>,
        calls: &[CallPart<'_>],
        model: &str,
        usage: &Usage,
    ) -> &mut Self {
        let mut parts: Vec<Value> = Vec::with_capacity(calls.len() + 1);
        if let Some(text) = text.filter(|t| !t.is_empty()) {
            parts.push(json!({"content": text, "id": null, "part_kind": "text"}));
        }
        for c in calls {
            parts.push(json!({
                "tool_name": c.name,
                "args": c.arguments,
                "tool_call_id": c.id,
                "id": null,
                "part_kind": "tool-call",
            }));
        }
        let finish = if calls.is_empty() {
            "stop"
        } else {
            "tool_call"
        };
        self.push_response(parts, model, usage, finish, None);
        self
    }

    /// A command member's answer (no model): the program run, the content it answered, the
    /// whole JSON answer it printed (`mixseek_answer`) and the usage it reported.
    pub fn command_answer(
        &mut self,
        program: &str,
        content: &str,
        answer: &Value,
        usage: &Usage,
    ) -> &mut Self {
        let parts = vec![json!({"content": content, "id": null, "part_kind": "text"})];
        let mut extra = Map::new();
        extra.insert("mixseek_command".into(), json!(program));
        extra.insert("mixseek_answer".into(), answer.clone());
        self.push_response(parts, "command", usage, "stop", Some(extra));
        self
    }

    fn flush_request(&mut self) {
        if self.request.is_empty() {
            return;
        }
        let parts = std::mem::take(&mut self.request);
        self.messages.push(json!({
            "parts": parts,
            "timestamp": now(),
            "instructions": self.instructions,
            "kind": "request",
        }));
    }

    fn push_response(
        &mut self,
        parts: Vec<Value>,
        model: &str,
        usage: &Usage,
        finish_reason: &str,
        extra: Option<Map<String, Value>>,
    ) {
        self.flush_request();
        // `openai:gpt-4o` → provider `openai`, model `gpt-4o` (the framework's split)
        let (provider, name) = match model.split_once(':') {
            Some((p, n)) => (Value::from(p), n),
            None => (Value::Null, model),
        };
        let mut message = json!({
            "parts": parts,
            "usage": request_usage(usage),
            "model_name": name,
            "timestamp": now(),
            "kind": "response",
            "provider_name": provider,
            "provider_details": null,
            "provider_response_id": null,
            "finish_reason": finish_reason,
        });
        if let (Some(obj), Some(extra)) = (message.as_object_mut(), extra) {
            obj.extend(extra);
        }
        self.messages.push(message);
    }

    /// The conversation (a request still open is closed).
    pub fn finish(mut self) -> Vec<Value> {
        self.flush_request();
        self.messages
    }
}

/// A response's usage: the framework's `RequestUsage` fields, then mixseek's own.
fn request_usage(u: &Usage) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "cache_write_tokens": 0,
        "cache_read_tokens": u.cached_tokens,
        "output_tokens": u.output_tokens,
        "input_audio_tokens": 0,
        "cache_audio_read_tokens": 0,
        "output_audio_tokens": 0,
        "details": {},
        "cost_usd": u.cost_usd,
        "requests_without_usage": u.requests_without_usage,
    })
}

/// The first thing the user (the caller) said in a stored conversation: the first
/// `user-prompt` part of the framework's format, or the first `{"role": "user"}` entry of the
/// format mixseek stored before.
pub fn first_user_prompt(messages: &[Value]) -> Option<&str> {
    messages.iter().find_map(|m| {
        if m.get("role").and_then(Value::as_str) == Some("user") {
            return m.get("content").and_then(Value::as_str);
        }
        if m.get("kind").and_then(Value::as_str) != Some("request") {
            return None;
        }
        m.get("parts")?
            .as_array()?
            .iter()
            .find(|p| p.get("part_kind").and_then(Value::as_str) == Some("user-prompt"))
            .and_then(|p| p.get("content"))
            .and_then(Value::as_str)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_group_into_requests_and_responses() {
        let usage = Usage {
            input_tokens: 50,
            output_tokens: 20,
            cached_tokens: 3,
            requests: 1,
            cost_usd: 0.25,
            ..Usage::default()
        };
        let args = json!({"task": "analyse"});
        let mut t = TranscriptBuilder::new();
        t.instructions("You lead.").user("Write a haiku");
        t.response(
            Some("Delegating."),
            &[CallPart {
                id: "call_1",
                name: "delegate_to_analyst",
                arguments: &args,
            }],
            "openai:gpt-4o-mini",
            &usage,
        );
        t.tool_return("call_1", "delegate_to_analyst", "analysis", false)
            .tool_return("call_2", "delegate_to_writer", "Error: unknown tool", true);
        t.response(Some("Final"), &[], "mock:leader", &Usage::default());
        let m = t.finish();
        assert_eq!(m.len(), 4);
        let kinds: Vec<&str> = m.iter().map(|x| x["kind"].as_str().unwrap_or("")).collect();
        assert_eq!(kinds, ["request", "response", "request", "response"]);
        let parts = |i: usize| -> Vec<&str> {
            m[i]["parts"]
                .as_array()
                .map(|p| {
                    p.iter()
                        .map(|p| p["part_kind"].as_str().unwrap_or(""))
                        .collect()
                })
                .unwrap_or_default()
        };
        assert_eq!(parts(0), ["user-prompt"]);
        assert_eq!(m[0]["instructions"], "You lead.");
        assert_eq!(
            m[2]["instructions"], "You lead.",
            "every request carries them"
        );
        assert_eq!(parts(1), ["text", "tool-call"]);
        assert_eq!(parts(2), ["tool-return", "tool-return"]);
        assert_eq!(m[1]["parts"][1]["args"], args);
        assert_eq!(m[1]["finish_reason"], "tool_call");
        assert_eq!(m[1]["provider_name"], "openai");
        assert_eq!(m[1]["model_name"], "gpt-4o-mini");
        assert_eq!(m[1]["usage"]["cache_read_tokens"], 3);
        assert_eq!(m[1]["usage"]["cost_usd"], 0.25);
        assert_eq!(m[2]["parts"][1]["outcome"], "failed");
        assert_eq!(m[3]["finish_reason"], "stop");
        assert_eq!(first_user_prompt(&m), Some("Write a haiku"));
    }

    #[test]
    fn the_earlier_format_still_gives_its_prompt() {
        let old = vec![
            json!({"role": "system", "content": "s"}),
            json!({"role": "user", "content": "the prompt"}),
        ];
        assert_eq!(first_user_prompt(&old), Some("the prompt"));
        assert_eq!(
            first_user_prompt(&[json!({"kind": "response", "parts": []})]),
            None
        );
    }

    #[test]
    fn a_command_answer_names_its_program() {
        let mut t = TranscriptBuilder::new();
        let answer = json!({"content": "out", "status": "success"});
        t.user("task")
            .command_answer("./tool.sh", "out", &answer, &Usage::default());
        let m = t.finish();
        assert_eq!(m[1]["mixseek_command"], "./tool.sh");
        assert_eq!(m[1]["parts"][0]["content"], "out");
        assert_eq!(m[1]["mixseek_answer"], answer);
        assert_eq!(m[1]["provider_name"], Value::Null);
    }
}
