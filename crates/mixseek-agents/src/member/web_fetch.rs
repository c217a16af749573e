//! `web_fetch` members: an LLM with a `fetch_url` tool that mixseek executes itself — a real
//! HTTP GET through [`crate::fetch`] (limits, private-address refusal, HTML to text). The
//! model may fetch up to `max_uses` pages per task, then answers. Invalid calls (no `url`, an
//! unknown tool) are tool errors the model can correct, up to the member's `max_retries`
//! (default 3) per tool; one more fails the task.

use crate::context::{AgentDeps, RoundContext};
use crate::error::AgentError;
use crate::fetch::{FetchSettings, fetch};
use crate::history::{answered, started};
use crate::member::llm::{LlmSetup, text_output};
use crate::member::{EMPTY_TASK, MemberAgent, MemberOutput};
use mixseek_config::MemberSettings;
use mixseek_core::Usage;
use mixseek_llm::{Message, ToolSpec};
use serde_json::json;

/// The tool's name.
pub(crate) const FETCH_TOOL: &str = "fetch_url";

/// The `fetch_url` tool as the model sees it.
pub(crate) fn fetch_tool() -> ToolSpec {
    ToolSpec {
        name: FETCH_TOOL.into(),
        description: "Fetch a web page with an HTTP GET and return its text (HTML is converted to text). Only http and https URLs.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"url": {"type": "string", "description": "The http(s) URL to fetch"}},
            "required": ["url"]
        }),
    }
}

/// The message asking for the final answer once the fetch budget is spent.
pub const FINAL_ANSWER_REQUEST: &str = "You have used all the fetches you may make for this task. Answer now with what you have, without calling any tool.";

/// A `web_fetch` member.
pub(crate) struct WebFetchMember {
    setup: LlmSetup,
    fetch: FetchSettings,
    /// Invalid tool calls (bad `fetch_url` arguments, unknown tools) allowed per tool before
    /// the task fails (the member's `max_retries`, default 3).
    max_retries: u32,
}

/// `max_retries` of a member when unset (the original's default).
pub(crate) const DEFAULT_MAX_RETRIES: u32 = 3;

impl WebFetchMember {
    pub(crate) fn new(settings: &MemberSettings, deps: &AgentDeps) -> Result<Self, AgentError> {
        Ok(Self {
            setup: LlmSetup::new(settings, deps)?,
            fetch: FetchSettings::from_member(settings),
            max_retries: settings.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
        })
    }

    /// Runs one `fetch_url` call; the result text (errors included) goes back to the model.
    /// `Err` is an invalid call (it counts against `max_retries`).
    async fn run_tool(&self, args: &serde_json::Value, uses: &mut u32) -> Result<String, String> {
        let Some(url) = args
            .get("url")
            .and_then(|u| u.as_str())
            .filter(|u| !u.trim().is_empty())
        else {
            return Err("Error: the `url` argument (a non-empty string) is required".into());
        };
        Ok(self.fetch_url(url, uses).await)
    }

    async fn fetch_url(&self, url: &str, uses: &mut u32) -> String {
        if *uses >= self.fetch.max_uses {
            return format!(
                "Error: fetch limit reached ({} fetches per task); answer with what you have",
                self.fetch.max_uses
            );
        }
        *uses += 1;
        match fetch(url, &self.fetch).await {
            Ok(page) => page.to_tool_result(),
            Err(e) => {
                tracing::info!(member = %self.setup.name, url, error = %e, "fetch_url failed");
                format!("Error: {e}")
            }
        }
    }
}

#[async_trait::async_trait]
impl MemberAgent for WebFetchMember {
    fn name(&self) -> &str {
        &self.setup.name
    }
    fn agent_type(&self) -> &str {
        "web_fetch"
    }

    async fn execute(&self, task: &str, ctx: &RoundContext) -> MemberOutput {
        if task.trim().is_empty() {
            return MemberOutput::error(EMPTY_TASK, Usage::default(), Vec::new());
        }
        let (system, user) = match self.setup.prompts(task, ctx) {
            Ok(p) => p,
            Err(e) => return MemberOutput::error(e.to_string(), Usage::default(), Vec::new()),
        };
        let mut history = started(system.as_deref(), &user);
        let mut messages = vec![Message::user(user)];
        let mut usage = Usage::default();
        let mut uses = 0u32;
        let mut invalid_calls: std::collections::HashMap<String, u32> =
            std::collections::HashMap::new();
        let mut final_requested = false;
        // One turn per allowed fetch, one to answer, one more after the final request.
        let turns = self.fetch.max_uses.saturating_add(2);
        for turn in 0..turns {
            let mut request = self.setup.request(system.clone(), messages.clone(), ctx);
            request.tools = vec![fetch_tool()];
            let resp = match self.setup.model.chat(&request).await {
                Ok(r) => r,
                Err(e) => return MemberOutput::error(e.to_string(), usage, history.finish()),
            };
            usage += resp.usage;
            let assistant =
                Message::assistant_tool_calls(resp.text.clone(), resp.tool_calls.clone());
            answered(
                &mut history,
                resp.text.as_deref(),
                &resp.tool_calls,
                &resp.model,
                &resp.usage,
            );
            if resp.tool_calls.is_empty() || turn + 1 == turns {
                return text_output(
                    resp.text.as_deref(),
                    &resp.finish_reason,
                    usage,
                    history.finish(),
                );
            }
            messages.push(assistant);
            for call in &resp.tool_calls {
                let result = if call.name == FETCH_TOOL {
                    self.run_tool(&call.arguments, &mut uses).await
                } else {
                    Err(format!(
                        "Error: unknown tool `{}`; the only tool is `{FETCH_TOOL}`",
                        call.name
                    ))
                };
                let failed = result.is_err();
                let result = match result {
                    Ok(text) => text,
                    Err(invalid) => {
                        let n = invalid_calls.entry(call.name.clone()).or_insert(0);
                        *n += 1;
                        if *n > self.max_retries {
                            return MemberOutput::error(
                                format!(
                                    "Tool '{}' exceeded max retries count of {}: {invalid}",
                                    call.name, self.max_retries
                                ),
                                usage,
                                history.finish(),
                            );
                        }
                        invalid
                    }
                };
                history.tool_return(&call.id, &call.name, &result, failed);
                messages.push(Message::tool_result(&call.id, &call.name, result));
            }
            if uses >= self.fetch.max_uses && !final_requested {
                final_requested = true;
                history.user(FINAL_ANSWER_REQUEST);
                messages.push(Message::user(FINAL_ANSWER_REQUEST));
            }
        }
        MemberOutput::error("the model gave no final answer", usage, history.finish())
    }
}
