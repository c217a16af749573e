//! mixseek-agents owns the agents of a team: the leader (a tool-calling loop in which every
//! member is a tool taking one `task` string; the calls of one turn run concurrently, bounded
//! by `max_concurrent_members`; the loop ends with the final text or at `max_tool_rounds`) and
//! the member types — `plain` (one LLM call), `web_fetch` (an LLM with a real `fetch_url`
//! tool: HTTP GET, HTML to text, size and time limits, private addresses refused),
//! `command` (an external program speaking JSON on stdin/stdout), `web_search` /
//! `code_execution` (one LLM call carrying the provider's native tool; refused, naming the
//! provider, where the provider has none). A workflow (`workflow/`) plays a round with fixed
//! steps instead of a leader: agent and command executors are these members, function
//! executors run the user's Python in a subprocess. Member failures become `ERROR` submissions (with real token counts
//! and timing) and tool errors for the leader; they never fail the round.
//!
//! # Use
//!
//! ```no_run
//! # async fn demo(team: mixseek_config::LoadedTeam) -> Result<(), mixseek_agents::AgentError> {
//! use mixseek_agents::{AgentDeps, RoundContext, TeamAgents};
//! use mixseek_prompt::{PromptBuilder, PromptBuilderSettings, PromptContext};
//! use std::sync::Arc;
//!
//! let registry = Arc::new(mixseek_llm::ModelRegistry::with_defaults().expect("registry"));
//! let prompts = PromptBuilder::new(&PromptBuilderSettings::default()).expect("templates");
//! let agents = TeamAgents::from_loaded(&team, AgentDeps::new(registry, prompts));
//! let ctx = RoundContext::new(PromptContext {
//!     user_prompt: "Summarise the news".into(),
//!     round_number: 1,
//!     team_id: team.settings.team_id.to_string(),
//!     team_name: team.settings.team_name.clone(),
//!     execution_id: Some("exec-1".into()),
//!     ..Default::default()
//! });
//! let outcome = agents.run_round("the rendered team prompt", &ctx).await?; // fresh agents
//! println!("{} ({} member calls)", outcome.submission, outcome.member_submissions.len());
//! # Ok(()) }
//! ```
//!
//! Preflight: [`check_team`] / [`check_member`] report unsupported types without building.

#![warn(missing_docs, unreachable_pub)]

mod context;
mod error;
mod fetch;
mod history;
mod instructions;
mod leader;
mod member;
mod params;
mod standalone;
mod team;
mod unit;
mod workflow;

pub use context::{AgentDeps, RoundContext};
pub use error::AgentError;
pub use fetch::{FetchError, FetchSettings, FetchedPage, fetch};
pub use leader::LeaderOutcome;
pub use leader::final_answer_request;
pub use member::command::MAX_STDOUT;
pub use member::web_fetch::FINAL_ANSWER_REQUEST;
pub use member::{
    EMPTY_TASK, MemberAgent, MemberOutput, build_member, check_member, check_member_with_registry,
};
pub use standalone::{
    BUNDLED_AGENTS, MemberRun, MemberRunError, MemberRunOptions, MemberSource, run_member,
};
pub use team::{TeamAgents, check_team};
pub use unit::UnitAgents;
pub use workflow::WorkflowAgents;
