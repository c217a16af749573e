//! Message histories as JSON (what `round_history` stores): the llm layer's messages, a
//! leading `{"role": "system"}` entry, and the usage of each model answer.

use mixseek_core::Usage;
use mixseek_llm::Message;
use serde_json::{Value, json};

/// A `{"role": "system", "content": ...}` entry.
pub(crate) fn system_json(system: &str) -> Value {
    json!({"role": "system", "content": system})
}

/// One message as JSON (`{"role": "user" | "assistant" | "tool", ...}`).
pub(crate) fn message_json(message: &Message) -> Value {
    serde_json::to_value(message).unwrap_or(Value::Null)
}

/// An assistant answer with its model and usage.
pub(crate) fn answer_json(message: &Message, model: &str, usage: &Usage) -> Value {
    let mut v = message_json(message);
    if let Some(obj) = v.as_object_mut() {
        obj.insert("model".into(), json!(model));
        obj.insert(
            "usage".into(),
            serde_json::to_value(usage).unwrap_or(Value::Null),
        );
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_carry_model_and_usage() {
        let u = Usage {
            input_tokens: 3,
            output_tokens: 2,
            requests: 1,
            ..Usage::default()
        };
        let v = answer_json(&Message::assistant("hi"), "mock:x", &u);
        assert_eq!(v["role"], "assistant");
        assert_eq!(v["content"], "hi");
        assert_eq!(v["model"], "mock:x");
        assert_eq!(v["usage"]["input_tokens"], 3);
        assert_eq!(message_json(&Message::user("q"))["role"], "user");
        assert_eq!(system_json("s")["role"], "system");
    }
}
