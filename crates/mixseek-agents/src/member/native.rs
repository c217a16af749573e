//! `web_search` and `code_execution` members: one LLM call carrying the provider's native
//! tool ([`NativeTool`]: Anthropic's `web_search` / `code_execution` server tools, Gemini's
//! `google_search` / `code_execution`, OpenAI's and xAI's Responses-API `web_search` /
//! `code_interpreter` (xAI: `grok`, `xai`, `grok-responses`); the offline `mock:` provider answers with a labelled made-up text).
//! The member's answer is the model's final text, with the code it ran, the output and the
//! cited sources (the format is described on [`NativeTool`]).
//!
//! Web search options come from `[tool_settings.web_search]`: `max_uses` (an integer ≥ 1),
//! `allowed_domains` and `blocked_domains` (lists of domains, not both). The original's
//! `max_results` and `timeout` are informational and ignored, as there. A provider that
//! cannot honour a set option is refused.
//!
//! A provider without the tool (an OpenAI-compatible `[providers.<name>]` server: Chat
//! Completions has no native tools) is refused with an error naming it — never answered
//! with a made-up result. [`check`] decides for the built-in providers without any
//! configuration (preflight); for other provider names the `[providers.<name>]` kind
//! decides, which [`check_with_registry`] reads when the member is built.

use crate::error::AgentError;
use mixseek_config::{MemberSettings, MemberType};
use mixseek_llm::{ModelRegistry, NativeTool, WebSearchOptions, native_tool_support};

fn hint(agent_type: MemberType) -> &'static str {
    match agent_type {
        MemberType::WebSearch => {
            "use a model of openai, anthropic, google-gla, google-vertex, grok/grok-responses/xai (or mock: offline), an `anthropic`- or `gemini`-kind provider, type = \"web_fetch\" (the model fetches URLs itself), or a type = \"command\" member that calls a search API"
        }
        _ => {
            "use a model of openai, anthropic, google-gla, google-vertex, grok/grok-responses/xai (or mock: offline), an `anthropic`- or `gemini`-kind provider, or a type = \"command\" member that runs the code in a sandbox of your choice"
        }
    }
}

fn unsupported(member: &str, agent_type: MemberType, message: String) -> AgentError {
    AgentError::Unsupported {
        member: member.to_string(),
        message,
        hint: Some(hint(agent_type).to_string()),
    }
}

/// The native tool of a `web_search` / `code_execution` member, with the web search options
/// of its `[tool_settings.web_search]`.
pub(crate) fn tool_for(
    settings: &MemberSettings,
    agent_type: MemberType,
) -> Result<NativeTool, AgentError> {
    let member = settings.name.clone().unwrap_or_else(|| "member".into());
    if agent_type != MemberType::WebSearch {
        return Ok(NativeTool::CodeExecution);
    }
    let mut o = WebSearchOptions::default();
    let ts = settings.effective_tool_settings();
    let Some(ws) = ts.get("web_search") else {
        return Ok(NativeTool::WebSearch(o));
    };
    let bad = |key: &str, what: &str| AgentError::Unsupported {
        member: member.clone(),
        message: format!("tool_settings.web_search.{key} must be {what}"),
        hint: Some(format!(
            "e.g. [tool_settings.web_search] max_uses = 5, allowed_domains = [\"example.com\"]; got {key} = {}",
            ws.get(key).map(|v| v.to_string()).unwrap_or_default()
        )),
    };
    if let Some(v) = ws.get("max_uses") {
        let n = v
            .as_u64()
            .filter(|n| (1..=u64::from(u32::MAX)).contains(n))
            .ok_or_else(|| bad("max_uses", "an integer ≥ 1"))?;
        o.max_uses = u32::try_from(n).ok();
    }
    for (key, slot) in [
        ("allowed_domains", &mut o.allowed_domains),
        ("blocked_domains", &mut o.blocked_domains),
    ] {
        if let Some(v) = ws.get(key) {
            let list = v
                .as_array()
                .and_then(|a| {
                    a.iter()
                        .map(|d| {
                            d.as_str()
                                .map(str::trim)
                                .filter(|d| !d.is_empty())
                                .map(str::to_string)
                        })
                        .collect::<Option<Vec<String>>>()
                })
                .ok_or_else(|| bad(key, "a list of domain names"))?;
            *slot = list;
        }
    }
    if !o.allowed_domains.is_empty() && !o.blocked_domains.is_empty() {
        return Err(AgentError::Unsupported {
            member,
            message: "tool_settings.web_search: allowed_domains and blocked_domains are mutually exclusive. Use only one of them.".into(),
            hint: None,
        });
    }
    Ok(NativeTool::WebSearch(o))
}

fn refusal(member: &str, agent_type: MemberType, model: &str, why: &str) -> AgentError {
    unsupported(
        member,
        agent_type,
        format!("type = \"{agent_type}\" cannot use model `{model}`: {why}"),
    )
}

/// The preflight check of a native-tool member with model `model` (`provider:model`) and
/// its fallbacks: decided for the built-in providers; other provider names pass here and
/// are decided by [`check_with_registry`] when the member is built.
pub(crate) fn check(
    member: &str,
    agent_type: MemberType,
    model: &str,
    fallbacks: &[String],
    tool: &NativeTool,
) -> Result<(), AgentError> {
    for m in std::iter::once(model).chain(fallbacks.iter().map(String::as_str)) {
        let provider = mixseek_core::model_id::provider_of(m);
        if mixseek_core::model_id::builtin_provider(provider).is_some() {
            native_tool_support(provider, None, tool)
                .map_err(|why| refusal(member, agent_type, m, &why))?;
        }
    }
    Ok(())
}

/// The full check, with the registry's `[providers.<name>]` settings: the model and every
/// fallback must be able to run `tool`.
pub(crate) fn check_with_registry(
    member: &str,
    agent_type: MemberType,
    model: &str,
    fallbacks: &[String],
    tool: &NativeTool,
    registry: &ModelRegistry,
) -> Result<(), AgentError> {
    for m in std::iter::once(model).chain(fallbacks.iter().map(String::as_str)) {
        registry
            .native_tool_support(m, tool)
            .map_err(|why| refusal(member, agent_type, m, &why))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(toml_src: &str) -> MemberSettings {
        toml::from_str(toml_src).expect("toml")
    }

    #[test]
    fn built_in_providers_are_decided_and_others_deferred() {
        let ws = NativeTool::web_search();
        for model in [
            "anthropic:claude-haiku-4-5",
            "google-gla:gemini-2.5-flash",
            "openai:gpt-4.1",
            "grok:grok-4",
            "grok-responses:grok-4-1-fast",
            "mock:x",
            "local:llama",
        ] {
            assert!(
                check("s", MemberType::WebSearch, model, &[], &ws).is_ok(),
                "{model}"
            );
            assert!(
                check(
                    "c",
                    MemberType::CodeExecution,
                    model,
                    &[],
                    &NativeTool::CodeExecution
                )
                .is_ok(),
                "{model}"
            );
        }
        // A Gemini web search with a domain filter it cannot honour; named in a fallback.
        let filtered = NativeTool::WebSearch(WebSearchOptions {
            allowed_domains: vec!["a.example".into()],
            ..WebSearchOptions::default()
        });
        let e = check(
            "s",
            MemberType::WebSearch,
            "anthropic:claude",
            &["google-gla:gemini-2.5-flash".into()],
            &filtered,
        )
        .expect_err("gemini has no domain filter");
        let text = e.to_string();
        assert!(
            text.starts_with(
                "member `s`: type = \"web_search\" cannot use model `google-gla:gemini-2.5-flash`: provider `google-gla`"
            ),
            "{text}"
        );
        assert!(text.contains("allowed_domains"), "{text}");
        assert!(e.hint().is_some_and(|h| h.contains("web_fetch")));
    }

    #[test]
    fn web_search_options_are_read_and_checked() {
        let m = member(
            "name = \"s\"\ntype = \"web_search\"\n[tool_settings.web_search]\nmax_uses = 3\nblocked_domains = [\"spam.example\"]\nmax_results = 15\n",
        );
        assert_eq!(
            tool_for(&m, MemberType::WebSearch).expect("ok"),
            NativeTool::WebSearch(WebSearchOptions {
                max_uses: Some(3),
                allowed_domains: Vec::new(),
                blocked_domains: vec!["spam.example".into()],
            })
        );
        let e = tool_for(
            &member(
                "name = \"s\"\ntype = \"web_search\"\n[tool_settings.web_search]\nmax_uses = 0\n",
            ),
            MemberType::WebSearch,
        )
        .expect_err("0");
        assert!(
            e.to_string().contains("max_uses must be an integer ≥ 1"),
            "{e}"
        );
        let e = tool_for(
            &member(
                "name = \"s\"\ntype = \"web_search\"\n[tool_settings.web_search]\nallowed_domains = \"a.example\"\n",
            ),
            MemberType::WebSearch,
        )
        .expect_err("not a list");
        assert!(
            e.to_string().contains("allowed_domains must be a list"),
            "{e}"
        );
        assert_eq!(
            tool_for(
                &member("name = \"c\"\ntype = \"code_execution\""),
                MemberType::CodeExecution
            )
            .expect("ok"),
            NativeTool::CodeExecution
        );
    }
}
