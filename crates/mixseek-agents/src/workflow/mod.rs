//! [`WorkflowAgents`]: a workflow's round — its steps one after another, the executors of a
//! step at the same time, each given the same task-context JSON; the round's submission built
//! from their outputs (`text.rs`). Agent and command executors are the member
//! implementations of team mode; function executors run the user's Python (`function.rs`).
//!
//! A step fails (and with it the round) when an executor cannot be built — before anything
//! of the step runs — or when a function executor ends `ERROR`; an agent's `ERROR` is an
//! output like any other, which later steps see.

mod function;
mod text;

use crate::context::{AgentDeps, RoundContext};
use crate::error::AgentError;
use crate::leader::LeaderOutcome;
use crate::member::{MemberAgent, build_member};
use function::{FunctionExecutor, FunctionResult, LoadedFunction};
use mixseek_config::{ExecutorType, LoadedWorkflow, WorkflowSettings, WorkflowStep};
use mixseek_core::{MemberStatus, MemberSubmission, Usage};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use text::{StepOutput, StepOutputs};
use tracing::Instrument;

/// A workflow ready to play rounds.
#[derive(Debug, Clone)]
pub struct WorkflowAgents {
    settings: WorkflowSettings,
    /// The workflow file's folder: the working directory of command executors.
    dir: Option<PathBuf>,
    deps: AgentDeps,
}

/// One executor of a step, built.
enum Built {
    Agent(Arc<dyn MemberAgent>),
    Function(Box<LoadedFunction>),
}

/// What one executor did.
struct Ran {
    output: StepOutput,
    submission: MemberSubmission,
    messages: Vec<serde_json::Value>,
}

impl WorkflowAgents {
    /// A workflow as loaded by `mixseek_config::load_workflow`.
    pub fn from_loaded(workflow: &LoadedWorkflow, deps: AgentDeps) -> Self {
        Self {
            settings: workflow.settings.clone(),
            dir: workflow.file.parent().map(std::path::Path::to_path_buf),
            deps,
        }
    }

    /// The workflow's settings.
    pub fn settings(&self) -> &WorkflowSettings {
        &self.settings
    }

    /// Plays one round on `prompt` (the rendered team prompt): every step, then the
    /// submission. The outcome has no leader usage; its member submissions are one per
    /// executor per step.
    pub async fn run_round(
        &self,
        prompt: &str,
        ctx: &RoundContext,
    ) -> Result<LeaderOutcome, AgentError> {
        let s = &self.settings;
        let span = tracing::info_span!(
            "workflow.engine.run",
            workflow_id = s.workflow_id.as_str(),
            workflow_name = %s.workflow_name,
            round_number = ctx.round_number(),
            step_count = s.steps.len()
        );
        async {
            let mut done: Vec<StepOutputs> = Vec::with_capacity(s.steps.len());
            let mut submissions = Vec::new();
            let mut messages = Vec::new();
            for step in &s.steps {
                let input = text::task_context(prompt, &done, s.include_all_context);
                let ran = self.run_step(step, &input, ctx).await?;
                let mut outputs = Vec::with_capacity(ran.len());
                for r in ran {
                    outputs.push(r.output);
                    submissions.push(r.submission);
                    messages.extend(r.messages);
                }
                done.push((step.id.clone(), outputs));
            }
            Ok(LeaderOutcome {
                submission: text::submission(&done, s.include_all_context, s.final_output_format),
                messages,
                member_submissions: submissions,
                leader_usage: Usage::default(),
                tool_rounds: 0,
                hit_tool_round_limit: false,
            })
        }
        .instrument(span)
        .await
    }

    /// Builds every executor of `step` (in definition order; the first failure fails the
    /// step before anything runs), runs them all on `input`, and fails the step for the first
    /// function that ended `ERROR`.
    async fn run_step(
        &self,
        step: &WorkflowStep,
        input: &str,
        ctx: &RoundContext,
    ) -> Result<Vec<Ran>, AgentError> {
        let built = self.build_step(step).await?;
        let mut set = tokio::task::JoinSet::new();
        let input: Arc<str> = Arc::from(input);
        for (i, (e, b)) in step.executors.iter().zip(built).enumerate() {
            let (name, kind, input, ctx) =
                (e.name.clone(), e.executor_type, input.clone(), ctx.clone());
            let span = tracing::info_span!(
                "execute_tool",
                "gen_ai.operation.name" = "execute_tool",
                "gen_ai.tool.name" = name.as_str(),
                step = step.id.as_str()
            );
            set.spawn(
                async move { (i, run_one(name, kind, b, &input, &ctx).await) }.instrument(span),
            );
        }
        let mut slots: Vec<Option<Ran>> = step.executors.iter().map(|_| None).collect();
        while let Some(joined) = set.join_next().await {
            match joined {
                Ok((i, r)) => {
                    if let Some(slot) = slots.get_mut(i) {
                        *slot = Some(r);
                    }
                }
                Err(e) => tracing::error!(error = %e, "a workflow executor's task panicked"),
            }
        }
        // A panicked executor is an ERROR output.
        let ran: Vec<Ran> = step
            .executors
            .iter()
            .zip(slots)
            .map(|(e, r)| r.unwrap_or_else(|| panicked(&e.name, e.executor_type)))
            .collect();
        let ended = mixseek_core::time::now_utc();
        let mut ran = ran;
        for r in &mut ran {
            r.submission.timestamp = ended;
        }
        for (e, r) in step.executors.iter().zip(&ran) {
            if e.executor_type == Some(ExecutorType::Function)
                && r.output.status == MemberStatus::Error
            {
                return Err(AgentError::WorkflowStep {
                    step: step.id.clone(),
                    executor: e.name.clone(),
                    message: r.output.error_message.clone().unwrap_or_default(),
                });
            }
        }
        Ok(ran)
    }

    async fn build_step(&self, step: &WorkflowStep) -> Result<Vec<Built>, AgentError> {
        let s = &self.settings;
        let fail = |name: &str, e: String| AgentError::WorkflowStep {
            step: step.id.clone(),
            executor: name.to_string(),
            message: format!("failed to build executable: {e}"),
        };
        // Functions load in their interpreters at the same time; agents build at once.
        let mut set = tokio::task::JoinSet::new();
        for (i, e) in step.executors.iter().enumerate() {
            if e.executor_type == Some(ExecutorType::Function) {
                let f = FunctionExecutor::new(e, s.python.as_deref(), self.dir.as_deref());
                set.spawn(async move { (i, f.load().await) });
            }
        }
        let mut slots: Vec<Option<Result<LoadedFunction, String>>> =
            step.executors.iter().map(|_| None).collect();
        while let Some(joined) = set.join_next().await {
            let (i, r) = joined.map_err(|e| fail("?", format!("the loading task failed: {e}")))?;
            if let Some(slot) = slots.get_mut(i) {
                *slot = Some(r);
            }
        }
        let mut loaded = slots.into_iter();
        let mut built = Vec::with_capacity(step.executors.len());
        for e in &step.executors {
            match loaded.next().flatten() {
                Some(Ok(f)) => built.push(Built::Function(Box::new(f))),
                Some(Err(msg)) => return Err(fail(&e.name, msg)),
                None => {
                    let member = e
                        .to_member(&s.default_model)
                        .ok_or_else(|| fail(&e.name, "the executor has no type".into()))?;
                    let agent = build_member(&member, &self.deps, self.dir.as_deref())
                        .map_err(|err| fail(&e.name, err.to_string()))?;
                    built.push(Built::Agent(agent));
                }
            }
        }
        Ok(built)
    }
}

/// The output of an executor whose task panicked (a bug).
fn panicked(name: &str, executor_type: Option<ExecutorType>) -> Ran {
    let message =
        "internal error (a bug in mixseek, please report it): the executor's task panicked";
    Ran {
        output: StepOutput {
            executor_name: name.to_string(),
            status: MemberStatus::Error,
            content: String::new(),
            error_message: Some(message.into()),
        },
        submission: MemberSubmission {
            agent_name: name.to_string(),
            agent_type: executor_type.map_or("function", |t| t.as_str()).to_string(),
            content: String::new(),
            status: MemberStatus::Error,
            error_message: Some(message.into()),
            usage: Usage::default(),
            timestamp: mixseek_core::time::now_utc(),
            execution_time_ms: Some(0),
            all_messages: None,
        },
        messages: Vec::new(),
    }
}

/// Runs one built executor on `input`. Never fails: an error is an `ERROR` output.
async fn run_one(
    name: String,
    executor_type: Option<ExecutorType>,
    built: Built,
    input: &str,
    ctx: &RoundContext,
) -> Ran {
    let started = Instant::now();
    let name = name.as_str();
    let kind = executor_type.map_or("function", |t| t.as_str()).to_string();
    let (output, usage, messages, elapsed) = match built {
        Built::Agent(agent) => {
            let o = agent.execute(input, ctx).await;
            let output = StepOutput {
                executor_name: name.to_string(),
                status: o.status,
                content: o.content,
                error_message: o.error_message,
            };
            (output, o.usage, o.messages, started.elapsed())
        }
        Built::Function(mut f) => {
            let span = tracing::info_span!("workflow.function", function_name = name);
            let (result, elapsed) = f.call(input).instrument(span).await;
            f.close().await;
            let output = match result {
                FunctionResult::Success(content) => StepOutput {
                    executor_name: name.to_string(),
                    status: MemberStatus::Success,
                    content,
                    error_message: None,
                },
                FunctionResult::Error(message) => StepOutput {
                    executor_name: name.to_string(),
                    status: MemberStatus::Error,
                    content: String::new(),
                    error_message: Some(message),
                },
            };
            (output, Usage::default(), Vec::new(), elapsed)
        }
    };
    let submission = MemberSubmission {
        agent_name: name.to_string(),
        agent_type: kind,
        content: output.content.clone(),
        status: output.status,
        error_message: output.error_message.clone(),
        usage,
        timestamp: mixseek_core::time::now_utc(),
        execution_time_ms: Some(elapsed.as_millis() as u64),
        all_messages: (!messages.is_empty()).then(|| messages.clone()),
    };
    Ran {
        output,
        submission,
        messages,
    }
}
