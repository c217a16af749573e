//! Message histories as stored (`round_history.message_history`, each member's
//! `all_messages`): the llm layer's answers written into a [`TranscriptBuilder`], which keeps
//! the format of the LLM framework the original MixSeek stores (see `mixseek_core`'s
//! transcript module).

use mixseek_core::{CallPart, TranscriptBuilder, Usage};
use mixseek_llm::ToolCall;

/// A new conversation: the system prompt (when there is one, as the requests' instructions),
/// then the user's message.
pub(crate) fn started(system: Option<&str>, user: &str) -> TranscriptBuilder {
    let mut t = TranscriptBuilder::new();
    if let Some(s) = system {
        t.instructions(s);
    }
    t.user(user);
    t
}

/// A model's answer: its text, its tool calls, its model and usage.
pub(crate) fn answered(
    t: &mut TranscriptBuilder,
    text: Option<&str>,
    calls: &[ToolCall],
    model: &str,
    usage: &Usage,
) {
    let parts: Vec<CallPart<'_>> = calls
        .iter()
        .map(|c| CallPart {
            id: &c.id,
            name: &c.name,
            arguments: &c.arguments,
        })
        .collect();
    t.response(text, &parts, model, usage);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_carry_model_usage_and_calls() {
        let u = Usage {
            input_tokens: 3,
            output_tokens: 2,
            requests: 1,
            ..Usage::default()
        };
        let mut t = started(Some("s"), "q");
        let call = ToolCall::new("c1", "delegate", serde_json::json!({"task": "t"}));
        answered(&mut t, None, &[call], "mock:x", &u);
        let m = t.finish();
        assert_eq!(m[0]["instructions"], "s");
        assert_eq!(m[0]["parts"][0]["content"], "q");
        assert_eq!(m[1]["model_name"], "x");
        assert_eq!(m[1]["usage"]["input_tokens"], 3);
        assert_eq!(m[1]["parts"][0]["tool_name"], "delegate");
        assert_eq!(m[1]["parts"][0]["tool_call_id"], "c1");
    }
}
