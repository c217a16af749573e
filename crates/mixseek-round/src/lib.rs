//! mixseek-round owns one team's round loop and the judgment client.
//!
//! * [`RoundController`] plays a team's rounds: the team prompt (history + ranking) → the
//!   leader with fresh agents (bounded by `submission_timeout_seconds`) → evaluation of the
//!   submission against the original user prompt → the round recorded (`Event::Evaluated`,
//!   awaited) → the continuation rule (below `min_rounds` continue; on the
//!   final round with `judge_on_final_round = false` stop without a call; otherwise the
//!   judgment LLM, forced to stop at `max_rounds`) with the original's exit reasons and
//!   `round_status` texts. The best round (highest score, the later round on ties) is marked
//!   final. Every step emits a [`mixseek_core::Event`]. Runs resume after completed rounds.
//! * [`JudgmentClient`] asks the judgment LLM for `{should_continue, reasoning,
//!   confidence_score}` (structured output with repair); `on_error = stop | continue | fail`
//!   decides what a failed call means ([`mixseek_config::OnJudgmentError`]).
//! * The documents attached to the task ([`RoundController::with_attachments`]) reach every
//!   team, judgment and evaluator prompt ([`EvaluationRequest::attachments`]).
//! * The evaluator and the ranking come in through the [`SubmissionEvaluator`] and
//!   [`RankingSource`] traits; events go out through [`mixseek_core::EventSink`].
//! * [`TeamReport`] is what `mixseek team` prints.
//!
//! ```no_run
//! # async fn demo(
//! #     agents: mixseek_agents::TeamAgents,
//! #     prompts: mixseek_prompt::PromptBuilder,
//! #     evaluator: std::sync::Arc<dyn mixseek_round::SubmissionEvaluator>,
//! #     judgment: mixseek_round::JudgmentClient,
//! # ) {
//! use mixseek_core::ExecutionId;
//! use mixseek_round::{RoundController, RoundSettings, TeamReport};
//! let controller = RoundController::new(agents, prompts, evaluator, judgment, RoundSettings::default());
//! let execution = ExecutionId::from("exec-1");
//! match controller.run(&execution, "Summarise this week's chip news", Vec::new()).await {
//!     Ok(result) => println!("{}", TeamReport::from_result(&result).to_text()),
//!     Err(failure) => eprintln!("team failed: {}", failure.error),
//! }
//! # }
//! ```

#![warn(missing_docs, unreachable_pub)]

mod continuation;
mod controller;
mod dedent;
mod error;
mod evaluator;
mod judgment;
mod ports;
mod report;
mod standalone;

pub use controller::{
    CompletedRound, RoundController, RoundSettings, StopCheck, TeamFailure, TeamResult, best_entry,
};
pub use error::RoundError;
pub use judgment::{JudgmentClient, JudgmentError};
pub use ports::{
    EvaluateError, Evaluation, EvaluationRequest, RankingError, RankingSource, SubmissionEvaluator,
};
pub use report::{RoundReport, TeamReport, UnevaluatedRound};
pub use standalone::{StandaloneError, StandaloneOptions, StandaloneRun, run_team};
