//! The leader agent: a tool-calling loop in which members are tools.
//!
//! Each member is a tool (`tool_name`, default `delegate_to_<name>`) with one string argument
//! `task`. Per turn the leader may call any number of tools; the calls of one turn run
//! concurrently, at most `max_concurrent_members` at a time, and their results go back in
//! call order. The loop ends with the leader's first answer without tool calls, or after
//! `max_tool_rounds` tool-calling turns — then the leader is asked once more for its final
//! answer, with no tools offered and the conversation written out as text (its text is the
//! submission even if it still calls tools; no text at all fails the run with a clear
//! error). A member failure goes back to the leader as a tool error and is recorded as an
//! `ERROR` submission; it never fails the round. A blank `task`, missing arguments,
//! arguments that are not a JSON object (e.g. invalid JSON) or an unknown tool are tool
//! errors too, each telling the model what was wrong; a tool called invalidly more than
//! `max_retries` times fails the run (as the original's tool retry limit).

use crate::context::{AgentDeps, RoundContext};
use crate::error::AgentError;
use crate::history::{answered, started};
use crate::member::{MemberAgent, MemberOutput};
use chrono::Utc;
use mixseek_core::TranscriptBuilder;
use mixseek_core::{MemberStatus, MemberSubmission, Role, Usage};
use mixseek_llm::{ChatModel, ChatRequest, GenerationParams, Message, ToolCall, ToolSpec};
use mixseek_prompt::InjectionPhase;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tracing::Instrument;

/// The message that asks for the final answer once `max_tool_rounds` is reached.
pub fn final_answer_request(max_tool_rounds: u32) -> String {
    format!(
        "You have reached the limit of {max_tool_rounds} tool-calling rounds. Do not call any more tools: give your final answer now, using the results you have."
    )
}

/// The tool error of a blank task (the original's text).
pub(crate) const EMPTY_TASK_TOOL_ERROR: &str = "Task cannot be empty";

/// A member offered to the leader as a tool.
#[derive(Clone)]
pub(crate) struct MemberTool {
    pub spec: ToolSpec,
    pub agent: Arc<dyn MemberAgent>,
}

impl MemberTool {
    /// The tool of `agent` named `name` with `description` and one `task` argument.
    pub(crate) fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        agent: Arc<dyn MemberAgent>,
    ) -> Self {
        Self {
            spec: task_tool(name.into(), description.into()),
            agent,
        }
    }
}

/// A delegation tool: `{"task": string}`.
pub(crate) fn task_tool(name: String, description: String) -> ToolSpec {
    ToolSpec {
        name,
        description,
        parameters: serde_json::json!({
            "type": "object",
            "properties": {"task": {"type": "string", "description": "The task to delegate to this member agent"}},
            "required": ["task"]
        }),
    }
}

/// How the leader is configured for one round.
#[derive(Clone)]
pub(crate) struct LeaderConfig {
    pub model: Arc<dyn ChatModel>,
    /// The instruction and system prompt, before the team-phase injection rules.
    pub instruction: String,
    pub params: GenerationParams,
    /// Per-request time limit (`timeout_seconds`).
    pub request_timeout: Option<Duration>,
    pub max_tool_rounds: u32,
    /// Member tool calls running at the same time, at most.
    pub max_concurrent_members: usize,
    /// Invalid calls of one tool allowed before the run fails.
    pub max_retries: u32,
}

/// What one leader run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaderOutcome {
    /// The leader's final text: the team's submission.
    pub submission: String,
    /// The leader's message history in the stored format (requests with the system prompt,
    /// the user prompt and tool returns; responses with text, tool calls and usage).
    pub messages: Vec<serde_json::Value>,
    /// One entry per member tool call, in call order.
    pub member_submissions: Vec<MemberSubmission>,
    /// Usage of the leader's own calls.
    pub leader_usage: Usage,
    /// Tool-calling turns made.
    pub tool_rounds: u32,
    /// The run reached `max_tool_rounds` and the final answer was asked for.
    pub hit_tool_round_limit: bool,
}

impl LeaderOutcome {
    /// Usage of the member calls.
    pub fn member_usage(&self) -> Usage {
        self.member_submissions.iter().map(|s| s.usage).sum()
    }
    /// Usage of the leader and its members.
    pub fn agent_usage(&self) -> Usage {
        let mut u = self.leader_usage;
        u += self.member_usage();
        u
    }
}

/// A leader with its member tools, fresh for one round.
pub(crate) struct Leader {
    config: LeaderConfig,
    tools: Vec<MemberTool>,
    deps: AgentDeps,
}

/// One valid call waiting to run.
struct PendingCall {
    index: usize,
    task: String,
    agent: Arc<dyn MemberAgent>,
}

impl Leader {
    pub(crate) fn new(config: LeaderConfig, tools: Vec<MemberTool>, deps: AgentDeps) -> Self {
        Self {
            config,
            tools,
            deps,
        }
    }

    fn request(
        &self,
        system: &Option<String>,
        messages: &[Message],
        ctx: &RoundContext,
    ) -> ChatRequest {
        ChatRequest {
            system: system.clone(),
            messages: messages.to_vec(),
            tools: self.tools.iter().map(|t| t.spec.clone()).collect(),
            params: self.config.params.clone(),
            timeout: self.config.request_timeout,
            caller: ctx.caller(Role::Leader),
            cache_volatile: ctx.cache_volatile.clone(),
            ..ChatRequest::default()
        }
    }

    async fn chat(
        &self,
        request: &ChatRequest,
        usage: &mut Usage,
        history: &mut TranscriptBuilder,
    ) -> Result<(Message, Vec<ToolCall>), AgentError> {
        let resp = self
            .config
            .model
            .chat(request)
            .await
            .map_err(|e| AgentError::Leader(Box::new(e)))?;
        *usage += resp.usage;
        let assistant = Message::assistant_tool_calls(resp.text.clone(), resp.tool_calls.clone());
        answered(
            history,
            resp.text.as_deref(),
            &resp.tool_calls,
            &resp.model,
            &resp.usage,
        );
        Ok((assistant, resp.tool_calls))
    }

    /// Runs the leader on `prompt` (the rendered team prompt) in the round `ctx`.
    pub(crate) async fn run(
        &self,
        prompt: &str,
        ctx: &RoundContext,
    ) -> Result<LeaderOutcome, AgentError> {
        let system =
            self.deps
                .system_prompt(InjectionPhase::Team, &self.config.instruction, ctx)?;
        let mut history = started(system.as_deref(), prompt);
        let mut messages = vec![Message::user(prompt)];
        let mut usage = Usage::default();
        let mut submissions: Vec<MemberSubmission> = Vec::new();
        let mut invalid_calls: HashMap<String, u32> = HashMap::new();
        let mut tool_rounds = 0u32;
        while tool_rounds < self.config.max_tool_rounds {
            let request = self.request(&system, &messages, ctx);
            let (assistant, calls) = self.chat(&request, &mut usage, &mut history).await?;
            if calls.is_empty() {
                return finish(
                    &assistant,
                    history.finish(),
                    submissions,
                    usage,
                    tool_rounds,
                    false,
                );
            }
            tool_rounds += 1;
            messages.push(assistant);
            let results = self
                .run_calls(&calls, ctx, &mut submissions, &mut invalid_calls)
                .await?;
            for (call, (content, failed)) in calls.iter().zip(results) {
                history.tool_return(&call.id, &call.name, &content, failed);
                messages.push(if failed {
                    Message::tool_error(&call.id, &call.name, content)
                } else {
                    Message::tool_result(&call.id, &call.name, content)
                });
            }
        }
        tracing::info!(
            team_id = ctx.team_id(),
            round = ctx.round_number(),
            max_tool_rounds = self.config.max_tool_rounds,
            "the leader reached max_tool_rounds; asking for its final answer"
        );
        let ask = final_answer_request(self.config.max_tool_rounds);
        history.user(&ask);
        messages.push(Message::user(ask));
        let request = self.final_request(&system, &messages, ctx);
        let (assistant, calls) = self.chat(&request, &mut usage, &mut history).await?;
        if !calls.is_empty() {
            tracing::warn!(
                team_id = ctx.team_id(),
                round = ctx.round_number(),
                calls = calls.len(),
                "the leader called tools in answer to the final-answer request; they are not run"
            );
        }
        finish_final(
            &assistant,
            &calls,
            history.finish(),
            submissions,
            usage,
            tool_rounds,
            self.config.max_tool_rounds,
        )
    }

    /// The final-answer request: no tools are offered, and the conversation goes as text
    /// (tool calls and their results written out): a provider may refuse tool-call turns in
    /// a request that defines no tools, and without tools the model cannot call one again.
    fn final_request(
        &self,
        system: &Option<String>,
        messages: &[Message],
        ctx: &RoundContext,
    ) -> ChatRequest {
        let mut request = self.request(system, &as_text_conversation(messages), ctx);
        request.tools = Vec::new();
        request
    }

    /// Validates and runs the calls of one turn; returns one tool result per call, in order,
    /// with whether it is an error (an invalid call or a failed member).
    async fn run_calls(
        &self,
        calls: &[ToolCall],
        ctx: &RoundContext,
        submissions: &mut Vec<MemberSubmission>,
        invalid_calls: &mut HashMap<String, u32>,
    ) -> Result<Vec<(String, bool)>, AgentError> {
        let mut results: Vec<Option<(String, bool)>> = vec![None; calls.len()];
        let mut pending = Vec::new();
        for (index, call) in calls.iter().enumerate() {
            let invalid = match self.tools.iter().find(|t| t.spec.name == call.name) {
                None => Some(format!(
                    "Error: unknown tool `{}`. Available tools: {}",
                    call.name,
                    self.tools
                        .iter()
                        .map(|t| t.spec.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                Some(_) if !call.arguments.is_object() => Some(format!(
                    "Error: the arguments of `{}` are not a JSON object: {}. Call it with {{\"task\": \"<the task>\"}}",
                    call.name,
                    shown_arguments(&call.arguments)
                )),
                Some(tool) => match call.arguments.get("task").and_then(|t| t.as_str()) {
                    None => Some("Error: the `task` argument (a string) is required".to_string()),
                    Some(t) if t.trim().is_empty() => {
                        Some(format!("Error: {EMPTY_TASK_TOOL_ERROR}"))
                    }
                    Some(t) => {
                        pending.push(PendingCall {
                            index,
                            task: t.to_string(),
                            agent: tool.agent.clone(),
                        });
                        None
                    }
                },
            };
            if let Some(err) = invalid {
                let n = invalid_calls.entry(call.name.clone()).or_insert(0);
                *n += 1;
                if *n > self.config.max_retries {
                    return Err(AgentError::ToolRetries {
                        tool: call.name.clone(),
                        max_retries: self.config.max_retries,
                        last_error: err,
                    });
                }
                results[index] = Some((err, true));
            }
        }
        let semaphore = Arc::new(Semaphore::new(self.config.max_concurrent_members.max(1)));
        let mut set = tokio::task::JoinSet::new();
        let mut names: HashMap<usize, (String, String)> = HashMap::new();
        for p in pending {
            names.insert(
                p.index,
                (p.agent.name().to_string(), p.agent.agent_type().to_string()),
            );
            let semaphore = semaphore.clone();
            let ctx = ctx.clone();
            let span = tracing::info_span!(
                "execute_tool",
                "gen_ai.operation.name" = "execute_tool",
                "gen_ai.tool.name" = p.agent.name(),
                member_type = p.agent.agent_type()
            );
            set.spawn(async move {
                let _permit = semaphore.acquire_owned().await;
                let timestamp = Utc::now();
                let started = Instant::now();
                let output = p.agent.execute(&p.task, &ctx).instrument(span).await;
                let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                (p.index, timestamp, elapsed, output)
            });
        }
        let mut done: Vec<MemberSubmission> = Vec::new();
        let mut order: Vec<usize> = Vec::new();
        while let Some(joined) = set.join_next().await {
            let (index, timestamp, elapsed, output) = match joined {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(error = %e, "a member task panicked");
                    continue;
                }
            };
            let (name, agent_type) = names.remove(&index).unwrap_or_default();
            results[index] = Some((
                tool_result_text(&name, &output),
                output.status == MemberStatus::Error,
            ));
            log_member(&name, &output, elapsed);
            order.push(index);
            done.push(submission(name, agent_type, output, timestamp, elapsed));
        }
        // Panicked tasks: an ERROR submission and a tool error each.
        for (index, (name, agent_type)) in names {
            let output =
                MemberOutput::error("the member task panicked", Usage::default(), Vec::new());
            results[index] = Some((tool_result_text(&name, &output), true));
            order.push(index);
            done.push(submission(name, agent_type, output, Utc::now(), 0));
        }
        let mut indexed: Vec<(usize, MemberSubmission)> = order.into_iter().zip(done).collect();
        indexed.sort_by_key(|(i, _)| *i);
        submissions.extend(indexed.into_iter().map(|(_, s)| s));
        Ok(results.into_iter().map(Option::unwrap_or_default).collect())
    }
}

/// Arguments that are not an object, as the model is shown them: the text it sent (the LLM
/// layer keeps arguments that are not JSON as their text), else the JSON; at most 200
/// characters.
fn shown_arguments(arguments: &serde_json::Value) -> String {
    let (what, text) = match arguments {
        serde_json::Value::String(s) => ("", s.clone()),
        other => ("JSON ", other.to_string()),
    };
    let cut: String = text.chars().take(200).collect();
    let ellipsis = if cut.len() < text.len() { "…" } else { "" };
    format!("got {what}`{cut}{ellipsis}`")
}

fn log_member(name: &str, output: &MemberOutput, elapsed_ms: u64) {
    match output.status {
        MemberStatus::Error => tracing::warn!(
            member = name,
            execution_time_ms = elapsed_ms,
            error = output.error_message.as_deref().unwrap_or(""),
            "member failed; the leader gets a tool error"
        ),
        _ => {
            tracing::debug!(member = name, execution_time_ms = elapsed_ms, status = ?output.status, "member finished")
        }
    }
}

/// What the leader reads for a member's output.
fn tool_result_text(name: &str, output: &MemberOutput) -> String {
    match output.status {
        MemberStatus::Error => format!(
            "Error: member `{name}` failed: {}",
            output.error_message.as_deref().unwrap_or("unknown error")
        ),
        MemberStatus::Warning => match &output.error_message {
            Some(w) => format!("{}\n\n[warning: {w}]", output.content),
            None => output.content.clone(),
        },
        MemberStatus::Success => output.content.clone(),
    }
}

fn submission(
    agent_name: String,
    agent_type: String,
    output: MemberOutput,
    timestamp: chrono::DateTime<Utc>,
    elapsed_ms: u64,
) -> MemberSubmission {
    MemberSubmission {
        agent_name,
        agent_type,
        content: output.content,
        status: output.status,
        error_message: output.error_message,
        usage: output.usage,
        timestamp,
        execution_time_ms: Some(elapsed_ms),
        all_messages: Some(output.messages),
    }
}

/// The conversation with tool calls and tool results written out as text: an assistant turn
/// lists the calls it made after its text, a tool result becomes a user turn naming the tool.
pub(crate) fn as_text_conversation(messages: &[Message]) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        match m {
            Message::User { .. } => out.push(m.clone()),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut parts: Vec<String> = content
                    .iter()
                    .filter(|c| !c.trim().is_empty())
                    .cloned()
                    .collect();
                for call in tool_calls {
                    let task = call
                        .arguments
                        .get("task")
                        .and_then(|t| t.as_str())
                        .map_or_else(|| call.arguments.to_string(), str::to_string);
                    parts.push(format!("[called `{}` with task: {task}]", call.name));
                }
                if !parts.is_empty() {
                    out.push(Message::assistant(parts.join("\n")));
                }
            }
            Message::Tool { name, content, .. } => {
                out.push(Message::user(format!("[result of `{name}`]\n{content}")));
            }
        }
    }
    out
}

/// The outcome of the answer to the final-answer request: its text, even when the model
/// also (uselessly) called tools; a clear error when it gave no text.
fn finish_final(
    assistant: &Message,
    calls: &[ToolCall],
    messages: Vec<serde_json::Value>,
    member_submissions: Vec<MemberSubmission>,
    leader_usage: Usage,
    tool_rounds: u32,
    max_tool_rounds: u32,
) -> Result<LeaderOutcome, AgentError> {
    let has_text =
        matches!(assistant, Message::Assistant { content: Some(c), .. } if !c.trim().is_empty());
    if !has_text && !calls.is_empty() {
        let names: Vec<String> = calls.iter().map(|c| format!("`{}`", c.name)).collect();
        return Err(AgentError::NoAnswer(format!(
            "asked for its final answer after max_tool_rounds ({max_tool_rounds}) tool-calling turns, with no tools offered, it still only called {} and gave no text; raise max_tool_rounds in [team] or tell the leader (system_instruction) to answer once it has the member results",
            names.join(", ")
        )));
    }
    finish(
        assistant,
        messages,
        member_submissions,
        leader_usage,
        tool_rounds,
        true,
    )
}

fn finish(
    assistant: &Message,
    messages: Vec<serde_json::Value>,
    member_submissions: Vec<MemberSubmission>,
    leader_usage: Usage,
    tool_rounds: u32,
    hit_tool_round_limit: bool,
) -> Result<LeaderOutcome, AgentError> {
    let text = match assistant {
        Message::Assistant { content, .. } => content.clone().unwrap_or_default(),
        _ => String::new(),
    };
    if text.trim().is_empty() {
        let why = if hit_tool_round_limit {
            "its answer to the final-answer request (after max_tool_rounds) had no text".to_string()
        } else {
            "its answer had no text".to_string()
        };
        return Err(AgentError::NoAnswer(why));
    }
    Ok(LeaderOutcome {
        submission: text,
        messages,
        member_submissions,
        leader_usage,
        tool_rounds,
        hit_tool_round_limit,
    })
}
