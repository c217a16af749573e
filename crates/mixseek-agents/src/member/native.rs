//! `web_search` and `code_execution` members: they rely on a provider-native tool (OpenAI's
//! web search, Anthropic's `web_search` / `code_execution` server tools, Gemini's
//! `google_search` / `code_execution`). mixseek's LLM layer sends function tools only, so
//! these types are refused with an error naming the provider — never answered with a
//! made-up result. Use `web_fetch` (real HTTP fetches) or a `command` member calling a
//! search API or a sandbox instead.

use crate::error::AgentError;

/// Providers whose APIs have the native tool of `agent_type`.
fn native_providers(agent_type: &str) -> &'static [&'static str] {
    match agent_type {
        "web_search" => &[
            "openai",
            "anthropic",
            "google-gla",
            "google-vertex",
            "grok",
            "grok-responses",
            "xai",
        ],
        "code_execution" => &["openai", "anthropic", "google-gla", "google-vertex"],
        _ => &[],
    }
}

fn tool_label(agent_type: &str) -> &'static str {
    match agent_type {
        "web_search" => "web search",
        _ => "code execution",
    }
}

fn hint(agent_type: &str) -> &'static str {
    match agent_type {
        "web_search" => {
            "use type = \"web_fetch\" (the model fetches URLs itself) or a type = \"command\" member that calls a search API"
        }
        _ => "use a type = \"command\" member that runs the code in a sandbox of your choice",
    }
}

/// The error of a native-tool member with model `model` (`provider:model`).
pub fn check(member: &str, agent_type: &str, model: &str) -> Result<(), AgentError> {
    let provider = model.split_once(':').map_or(model, |(p, _)| p).trim();
    let label = tool_label(agent_type);
    let message = if native_providers(agent_type).contains(&provider) {
        format!(
            "type = \"{agent_type}\" needs the provider's native {label} tool; provider `{provider}` has one, but mixseek's LLM layer cannot send provider-native tools yet (model `{model}`)"
        )
    } else {
        format!(
            "type = \"{agent_type}\" needs the provider's native {label} tool, and provider `{provider}` has none (model `{model}`; OpenAI, Anthropic and Gemini have one)"
        )
    };
    Err(AgentError::Unsupported {
        member: member.to_string(),
        message,
        hint: Some(hint(agent_type).to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_provider_and_never_pretend() {
        let e = check("searcher", "web_search", "anthropic:claude-haiku-4-5").expect_err("refused");
        let text = e.to_string();
        assert!(
            text.starts_with("member `searcher`: type = \"web_search\""),
            "{text}"
        );
        assert!(text.contains("provider `anthropic` has one"), "{text}");
        assert!(e.hint().is_some_and(|h| h.contains("web_fetch")));

        let e = check("coder", "code_execution", "mock:x").expect_err("refused");
        assert!(e.to_string().contains("provider `mock` has none"), "{e}");
        let e = check("coder", "code_execution", "openai:gpt-4o").expect_err("refused");
        assert!(e.to_string().contains("provider `openai` has one"), "{e}");
    }
}
