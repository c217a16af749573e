//! The round controller: one team's round loop.
//!
//! For each round: `RoundStarted` → the team prompt (the original user prompt, the documents
//! attached to it ([`RoundController::with_attachments`]), the round number, the team's
//! completed rounds and, from round 2, the ranking) → the leader with
//! fresh agents, bounded by `submission_timeout_seconds` → `SubmissionReady` (its commit runs
//! alongside the evaluation) → evaluation of the submission against the **original** user
//! prompt → `Evaluated(RoundRecord)` (its commit runs alongside the judgment call and is
//! awaited: the round counts, and the next round starts, only once the store committed it)
//! → the continuation rule ([`crate::continuation`]) → `Judged` (committed alongside the
//! next round's leader, which starts while the sinks see `Judged` and then that round's
//! `RoundStarted`; committed before `TeamFinished` when the team stops). When the team stops, its best round (highest score,
//! the later round on ties) is marked final and `TeamFinished` is emitted.
//!
//! `SubmissionReady` carries the unevaluated round (prompt, leader transcript, member
//! submissions) so a store can keep its `round_history` row even when the evaluation then
//! fails; the round counts as completed only once `Evaluated` is committed.
//!
//! A failure returns a [`TeamFailure`] with the completed rounds (and the unevaluated round,
//! when the evaluation or its commit failed) and emits nothing more: the
//! caller decides on retries (resuming with [`RoundController::run`] and the completed
//! rounds, never re-running one) and then reports the partial result with
//! [`RoundController::finish_failed`].

use crate::continuation::{from_judgment, from_judgment_error, stored_judgment, without_judgment};
use crate::error::RoundError;
use crate::judgment::JudgmentClient;
use crate::ports::{EvaluationRequest, NoRanking, RankingSource, SubmissionEvaluator};
use chrono::Utc;
use mixseek_agents::{RoundContext, UnitAgents};
use mixseek_config::OrchestratorSettings;
use mixseek_core::{
    Attachment, Decision, Event, EventSink, ExecutionId, ExitReason, LeaderboardEntry,
    MemberSubmissionsRecord, NullSink, Role, RoundRecord, RoundState, SinkError, SubmittedRound,
    TeamId, TeamStatusKind, Usage, UsageByRole, best_round,
};
use mixseek_prompt::{
    HistoryRound, PromptBuilder, PromptContext, Ranking, RankingEntry, TemplateKind,
};
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

/// The round settings of a team run.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundSettings {
    /// Rounds played before a judgment may stop the team (`min_rounds`).
    pub min_rounds: u32,
    /// The most rounds played (`max_rounds`).
    pub max_rounds: u32,
    /// Bound of one leader run (`submission_timeout_seconds`).
    pub submission_timeout: Option<Duration>,
    /// Bound of one judgment call (`judgment_timeout_seconds`).
    pub judgment_timeout: Option<Duration>,
}

impl Default for RoundSettings {
    fn default() -> Self {
        Self::new(&OrchestratorSettings::default())
    }
}

impl RoundSettings {
    /// From the orchestrator's round settings (`judge_on_final_round` and `on_error` come
    /// with the judgment client's settings).
    pub fn new(orchestrator: &OrchestratorSettings) -> Self {
        let secs = |s: u64| (s > 0).then(|| Duration::from_secs(s));
        Self {
            min_rounds: orchestrator.min_rounds,
            max_rounds: orchestrator.max_rounds,
            submission_timeout: secs(orchestrator.submission_timeout_seconds),
            judgment_timeout: secs(orchestrator.judgment_timeout_seconds),
        }
    }
}

/// A completed round and its continuation decision (`None` when the run stopped between the
/// round's evaluation and its decision). Its `state.message_history` is empty: the round's
/// transcript is its record's `leader_messages` (in the sink, and in `records`).
#[derive(Debug, Clone, PartialEq)]
pub struct CompletedRound {
    /// The round.
    pub state: RoundState,
    /// Its continuation decision.
    pub decision: Option<Decision>,
}

/// A team that finished normally.
#[derive(Debug, Clone, PartialEq)]
pub struct TeamResult {
    /// The execution.
    pub execution_id: ExecutionId,
    /// The team.
    pub team_id: TeamId,
    /// The team's display name.
    pub team_name: String,
    /// Every completed round (resumed ones included), in order.
    pub rounds: Vec<CompletedRound>,
    /// The rounds played by this run, as recorded (none for a controller built
    /// [`RoundController::without_records`]).
    pub records: Vec<RoundRecord>,
    /// The best round, marked final (`None` when no round was played).
    pub best: Option<LeaderboardEntry>,
    /// Why the team stopped.
    pub exit_reason: ExitReason,
    /// Usage of this run by role (leader, member, evaluator, judgment).
    pub usage: UsageByRole,
}

/// A team run that failed: the error and everything completed before it.
#[derive(Debug, Clone)]
pub struct TeamFailure {
    /// What made the team fail.
    pub error: RoundError,
    /// Every round completed before the failure, in order.
    pub rounds: Vec<CompletedRound>,
    /// The rounds played by this run before the failure, as recorded.
    pub records: Vec<RoundRecord>,
    /// Usage of this run by role.
    pub usage: UsageByRole,
    /// The round whose leader answered but whose evaluation (or its commit) failed: its
    /// submission, transcript and member submissions. Not a completed round.
    pub unevaluated: Option<Box<SubmittedRound>>,
}

impl TeamFailure {
    /// Whether a retry may succeed (the error is transient).
    pub fn is_transient(&self) -> bool {
        self.error.is_transient()
    }
}

/// Checked before every new round; `Some(reason)` ends the team with its best round (budget
/// reached, interrupted).
pub type StopCheck = Arc<dyn Fn() -> Option<ExitReason> + Send + Sync>;

/// One team's round loop.
#[derive(Clone)]
pub struct RoundController {
    agents: UnitAgents,
    prompts: PromptBuilder,
    evaluator: Arc<dyn SubmissionEvaluator>,
    judgment: JudgmentClient,
    ranking: Arc<dyn RankingSource>,
    sink: Arc<dyn EventSink>,
    settings: RoundSettings,
    domain_context: Option<String>,
    language: Option<String>,
    /// The documents attached to the task: in every team, judgment and evaluator prompt.
    attachments: Arc<[Attachment]>,
    stop_check: Option<StopCheck>,
    /// Whether a run returns its rounds' records (see [`RoundController::without_records`]).
    keep_records: bool,
}

impl std::fmt::Debug for RoundController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoundController")
            .field("team_id", self.agents.team_id())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Mutable state of one run.
struct Run {
    rounds: Vec<CompletedRound>,
    records: Vec<RoundRecord>,
    usage: UsageByRole,
    /// The round being evaluated, until its record is committed.
    unevaluated: Option<Box<SubmittedRound>>,
    /// `rounds` as the prompts show them, built once for the two prompts that show the same
    /// rounds (the judgment after round N, the team prompt of round N+1).
    history: Option<Arc<[HistoryRound]>>,
}

impl Run {
    /// The submission history of the prompts: `rounds` in the prompts' shape.
    fn history(&mut self) -> Arc<[HistoryRound]> {
        // rounds are only appended (a round whose commit fails is removed, and the run ends),
        // so a history of the same length and last round is the rounds' own
        let current = self.history.as_ref().filter(|h| {
            h.len() == self.rounds.len()
                && h.last().map(|r| r.round_number)
                    == self.rounds.last().map(|r| r.state.round_number)
        });
        if let Some(h) = current {
            return h.clone();
        }
        let built: Arc<[HistoryRound]> = self
            .rounds
            .iter()
            .map(|r| HistoryRound::from(&r.state))
            .collect();
        self.history = Some(built.clone());
        built
    }

    fn fail(self, error: RoundError) -> TeamFailure {
        TeamFailure {
            error,
            rounds: self.rounds,
            records: self.records,
            usage: self.usage,
            unevaluated: self.unevaluated,
        }
    }
}

/// A round's decision, made but not committed yet (its `Judged` event).
struct PendingDecision {
    round: u32,
    event: Event,
}

impl PendingDecision {
    /// The decision was not stored: the round goes back to having none, so a resumed run
    /// decides it again.
    fn forget(self, run: &mut Run) {
        if let Some(r) = run
            .rounds
            .iter_mut()
            .find(|r| r.state.round_number == self.round)
        {
            r.decision = None;
            r.state.improvement_judgment = None;
        }
    }
}

impl RoundController {
    /// A controller without a store (no ranking, events dropped) and without domain context.
    pub fn new(
        agents: impl Into<UnitAgents>,
        prompts: PromptBuilder,
        evaluator: Arc<dyn SubmissionEvaluator>,
        judgment: JudgmentClient,
        settings: RoundSettings,
    ) -> Self {
        Self {
            agents: agents.into(),
            prompts,
            evaluator,
            judgment,
            ranking: Arc::new(NoRanking),
            sink: Arc::new(NullSink),
            settings,
            domain_context: None,
            language: None,
            attachments: Arc::default(),
            stop_check: None,
            keep_records: true,
        }
    }
    /// Reads the ranking of other teams from `ranking` (default: none).
    pub fn with_ranking(mut self, ranking: Arc<dyn RankingSource>) -> Self {
        self.ranking = ranking;
        self
    }
    /// Sends the run's events to `sink` (default: nowhere).
    pub fn with_sink(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sink = sink;
        self
    }
    /// The orchestrator's domain context and language; a team's own values replace them.
    pub fn with_context(
        mut self,
        domain_context: Option<String>,
        language: Option<String>,
    ) -> Self {
        self.domain_context = domain_context;
        self.language = language;
        self
    }
    /// The documents attached to the task (default: none), shown with the user prompt in
    /// every round's team prompt, judgment prompt and evaluator prompt (the default templates
    /// show them in `<attachments>` after `<user_task>`; see `mixseek_prompt`). Takes a
    /// `Vec<Attachment>` or an already shared `Arc<[Attachment]>`.
    pub fn with_attachments(mut self, attachments: impl Into<Arc<[Attachment]>>) -> Self {
        self.attachments = attachments.into();
        self
    }
    /// Checks `check` before every new round.
    pub fn with_stop_check(mut self, check: StopCheck) -> Self {
        self.stop_check = Some(check);
        self
    }
    /// The run's `records` stay empty: each round's record (prompt, transcript, member
    /// submissions) is in the sink once committed, and not also kept until the team ends. An
    /// execution of many teams needs only their best rounds; `mixseek team` reports the
    /// records and keeps them.
    pub fn without_records(mut self) -> Self {
        self.keep_records = false;
        self
    }
    /// The round settings.
    pub fn settings(&self) -> &RoundSettings {
        &self.settings
    }
    /// The id of the team this controller plays.
    pub fn team_id(&self) -> &TeamId {
        self.agents.team_id()
    }
    /// The team's display name.
    pub fn team_name(&self) -> &str {
        self.agents.team_name()
    }

    fn context(
        &self,
        execution_id: &ExecutionId,
        user_prompt: &str,
        round_number: u32,
        history: Arc<[HistoryRound]>,
        ranking: Option<Ranking>,
    ) -> PromptContext {
        let unit = &self.agents;
        PromptContext {
            user_prompt: user_prompt.to_string(),
            round_number,
            team_id: unit.team_id().to_string(),
            team_name: unit.team_name().to_string(),
            execution_id: Some(execution_id.to_string()),
            ranking,
            domain_context: unit
                .domain_context()
                .map(str::to_string)
                .or_else(|| self.domain_context.clone()),
            language: unit
                .language()
                .map(str::to_string)
                .or_else(|| self.language.clone()),
            attachments: self.attachments.clone(),
            round_history: history,
            ..PromptContext::default()
        }
    }

    async fn ranking_for(
        &self,
        execution_id: &ExecutionId,
        round_number: u32,
    ) -> Result<Option<Ranking>, RoundError> {
        if round_number <= 1 {
            return Ok(None);
        }
        self.ranking
            .ranking(execution_id)
            .await
            .map_err(|e| RoundError::Ranking(e.0))
    }

    /// Progress events: a sink failure is logged, not fatal.
    async fn emit_progress(&self, event: Event) {
        self.emit_progress_ref(&event).await;
    }

    async fn emit_progress_ref(&self, event: &Event) {
        if let Err(e) = self.sink.emit(event).await {
            tracing::warn!(team_id = self.team_id().as_str(), error = %e, "an event sink failed on a progress event");
        }
    }

    /// Plays the team's rounds, continuing after `completed` (the rounds of an earlier run,
    /// with their decisions; empty for a fresh start). A completed round is never played
    /// again: a last round without a decision gets its decision first.
    pub async fn run(
        &self,
        execution_id: &ExecutionId,
        user_prompt: &str,
        completed: Vec<CompletedRound>,
    ) -> Result<TeamResult, TeamFailure> {
        let span = tracing::info_span!(
            "team",
            execution_id = execution_id.as_str(),
            team_id = %self.team_id(),
            max_rounds = self.settings.max_rounds,
            min_rounds = self.settings.min_rounds
        );
        self.run_rounds(execution_id, user_prompt, completed)
            .instrument(span)
            .await
    }

    async fn run_rounds(
        &self,
        execution_id: &ExecutionId,
        user_prompt: &str,
        completed: Vec<CompletedRound>,
    ) -> Result<TeamResult, TeamFailure> {
        let mut completed = completed;
        completed.sort_by_key(|r| r.state.round_number);
        let mut run = Run {
            rounds: completed,
            records: Vec::new(),
            usage: UsageByRole::default(),
            unevaluated: None,
            history: None,
        };
        let pending = run
            .rounds
            .last()
            .map(|r| (r.state.round_number, r.decision.clone()));
        // a decision made but not committed yet: committed alongside the next round's leader
        let mut decided: Option<PendingDecision> = None;
        match pending {
            Some((_, Some(d))) if !d.should_continue => {
                let reason = d.exit_reason.unwrap_or(ExitReason::MaxRoundsReached);
                return self.finish(execution_id, run, reason).await;
            }
            Some((n, None)) => match self
                .decide(execution_id, user_prompt, n, &mut run, None)
                .await
            {
                Ok((Some(reason), judged)) => {
                    if let Err(e) = self.commit_decision(Some(judged), &mut run).await {
                        return Err(run.fail(e));
                    }
                    return self.finish(execution_id, run, reason).await;
                }
                Ok((None, judged)) => decided = Some(judged),
                Err(e) => return Err(run.fail(e)),
            },
            _ => {}
        }
        let start = run.rounds.last().map_or(1, |r| r.state.round_number + 1);
        for n in start..=self.settings.max_rounds {
            if let Some(reason) = self.stop_check.as_ref().and_then(|c| c()) {
                tracing::info!(team_id = self.team_id().as_str(), round = n, reason = %reason, "not starting another round");
                if let Err(e) = self.commit_decision(decided.take(), &mut run).await {
                    return Err(run.fail(e));
                }
                return self.finish(execution_id, run, reason).await;
            }
            let span = tracing::info_span!("round", round = n);
            let previous = decided.take();
            let played = async {
                let evaluated = self
                    .play(execution_id, user_prompt, n, &mut run, previous)
                    .await?;
                self.decide(execution_id, user_prompt, n, &mut run, Some(evaluated))
                    .await
            }
            .instrument(span)
            .await;
            match played {
                Ok((Some(reason), judged)) => {
                    if let Err(e) = self.commit_decision(Some(judged), &mut run).await {
                        return Err(run.fail(e));
                    }
                    return self.finish(execution_id, run, reason).await;
                }
                Ok((None, judged)) => decided = Some(judged),
                Err(e) => return Err(run.fail(e)),
            }
        }
        if let Err(e) = self.commit_decision(decided.take(), &mut run).await {
            return Err(run.fail(e));
        }
        self.finish(execution_id, run, ExitReason::MaxRoundsReached)
            .await
    }

    /// Plays round `n` and records it.
    async fn play(
        &self,
        execution_id: &ExecutionId,
        user_prompt: &str,
        n: u32,
        run: &mut Run,
        pending: Option<PendingDecision>,
    ) -> Result<Event, RoundError> {
        let team_id = self.team_id().clone();
        let team_name = self.team_name().to_string();
        let started_at = Utc::now();
        let prepared = match self.ranking_for(execution_id, n).await {
            Ok(ranking) => {
                let ctx = self.context(execution_id, user_prompt, n, run.history(), ranking);
                self.prompts
                    .render_with_injections(TemplateKind::Team, &ctx)
                    .map(|rendered| (ctx, rendered))
                    .map_err(|e| RoundError::Prompt {
                        round: n,
                        source: Box::new(e),
                    })
            }
            Err(e) => Err(e),
        };
        let (ctx, rendered) = match prepared {
            Ok(p) => p,
            Err(e) => {
                self.announce(execution_id, n, pending, run).await?;
                return Err(e);
            }
        };
        let prompt = rendered.prompt;
        let (domain_context, language) = (ctx.domain_context.clone(), ctx.language.clone());
        let round_ctx = RoundContext::new(ctx).with_cache_volatile(rendered.volatile);
        let leader_run = async {
            let leader_run = self.agents.run_round(&prompt, &round_ctx);
            match self.settings.submission_timeout {
                Some(t) => tokio::time::timeout(t, leader_run).await.map_err(|_| {
                    RoundError::SubmissionTimeout {
                        round: n,
                        seconds: t.as_secs_f64(),
                    }
                })?,
                None => leader_run.await,
            }
            .map_err(|source| RoundError::Agents { round: n, source })
        };
        // The previous round's decision is committed (and this round announced) while the
        // leader works: the sinks still see `Judged`, then `RoundStarted`, then the rest.
        let (announced, outcome) = match pending {
            Some(p) => {
                let announce = self.announce_after(execution_id, n, &p);
                let (announced, outcome) = tokio::join!(announce, leader_run);
                if announced.is_err() {
                    p.forget(run);
                }
                (announced, outcome)
            }
            None => {
                self.announce_round(execution_id, n).await;
                (Ok(()), leader_run.await)
            }
        };
        announced?;
        let mut outcome = outcome?;
        run.usage.add(Role::Leader, outcome.leader_usage);
        run.usage.add(Role::Member, outcome.member_usage());
        let agent_usage = outcome.agent_usage();
        let submitted_at = Utc::now();
        let submitted = Box::new(SubmittedRound {
            execution_id: execution_id.into(),
            team_id: team_id.clone(),
            team_name: team_name.clone(),
            round_number: n,
            prompt: prompt.clone(),
            submission_content: outcome.submission.clone(),
            round_started_at: started_at,
            submitted_at,
            // the transcript moves to the submission, and from it to the record (see below):
            // it is the largest value of a round, and copying it cost ≈ 1 % of a run's CPU
            leader_messages: std::mem::take(&mut outcome.messages),
            member_submissions: MemberSubmissionsRecord {
                execution_id: execution_id.into(),
                team_id: team_id.clone(),
                team_name: team_name.clone(),
                round_number: n,
                submissions: std::mem::take(&mut outcome.member_submissions),
            },
            agent_usage,
        });
        let submission_ready = Event::SubmissionReady {
            execution_id: execution_id.into(),
            team_id: team_id.clone(),
            team_name: team_name.clone(),
            round_number: n,
            submission_chars: outcome.submission.chars().count(),
            usage: agent_usage,
            at: submitted_at,
            round: Some(submitted),
        };
        let request = EvaluationRequest {
            user_query: user_prompt.to_string(),
            submission: outcome.submission.clone(),
            execution_id: execution_id.into(),
            team_id: team_id.clone(),
            team_name: team_name.clone(),
            round_number: n,
            domain_context,
            language,
            attachments: self.attachments.clone(),
        };
        // The unevaluated round is stored while the evaluation runs (its commit is off the
        // round's critical path; the sink receives it before `Evaluated`, which is emitted
        // only once both are done).
        let ((), evaluation) = tokio::join!(
            self.emit_progress_ref(&submission_ready),
            self.evaluator
                .evaluate(&request)
                .instrument(tracing::info_span!("evaluation", round = n))
        );
        // the unevaluated round until its evaluation is committed (the event's own copy)
        if let Event::SubmissionReady { round, .. } = submission_ready {
            run.unevaluated = round;
        }
        let evaluation =
            evaluation.map_err(|source| RoundError::Evaluation { round: n, source })?;
        run.usage.add(Role::Evaluator, evaluation.usage);
        let ended_at = Utc::now();
        // the record takes the transcript from the unevaluated round; `commit` gives it back
        // if the record cannot be stored
        let (leader_messages, member_submissions) = run
            .unevaluated
            .as_deref_mut()
            .map(|u| {
                (
                    std::mem::take(&mut u.leader_messages),
                    std::mem::take(&mut u.member_submissions.submissions),
                )
            })
            .unwrap_or_default();
        let record = RoundRecord {
            execution_id: execution_id.into(),
            team_id: team_id.clone(),
            team_name: team_name.clone(),
            round_number: n,
            prompt,
            submission_content: outcome.submission.clone(),
            score_details: evaluation.score_details.clone(),
            round_started_at: started_at,
            round_ended_at: ended_at,
            leader_messages,
            member_submissions: MemberSubmissionsRecord {
                execution_id: execution_id.into(),
                team_id,
                team_name,
                round_number: n,
                submissions: member_submissions,
            },
            agent_usage,
            evaluation_usage: evaluation.usage,
            applied_injections: self.prompts.take_applied(
                execution_id.as_str(),
                self.team_id().as_str(),
                n,
            ),
        };
        // the record goes to `run.records` once its commit succeeded (see `commit`)
        let evaluated = Event::Evaluated(Box::new(record));
        run.rounds.push(CompletedRound {
            state: RoundState {
                round_number: n,
                submission_content: outcome.submission,
                evaluation_score: evaluation.score_details.overall_score,
                score_details: evaluation.score_details,
                improvement_judgment: None,
                round_started_at: started_at,
                round_ended_at: ended_at,
                // the transcript is the record's (`leader_messages`): not copied here
                message_history: Vec::new(),
            },
            decision: None,
        });
        Ok(evaluated)
    }

    async fn announce_round(&self, execution_id: &ExecutionId, n: u32) {
        self.emit_progress(Event::RoundStarted {
            execution_id: execution_id.into(),
            team_id: self.team_id().into(),
            team_name: self.team_name().into(),
            round_number: n,
            at: Utc::now(),
        })
        .await;
    }

    /// Commits the previous round's decision, then announces round `n`.
    async fn announce_after(
        &self,
        execution_id: &ExecutionId,
        n: u32,
        pending: &PendingDecision,
    ) -> Result<(), RoundError> {
        self.sink
            .emit(&pending.event)
            .await
            .map_err(|e| RoundError::Sink {
                round: pending.round,
                source: e,
            })?;
        self.announce_round(execution_id, n).await;
        Ok(())
    }

    /// [`Self::announce_after`] on its own (when round `n` fails before its leader runs).
    async fn announce(
        &self,
        execution_id: &ExecutionId,
        n: u32,
        pending: Option<PendingDecision>,
        run: &mut Run,
    ) -> Result<(), RoundError> {
        match pending {
            Some(p) => {
                let r = self.announce_after(execution_id, n, &p).await;
                if r.is_err() {
                    p.forget(run);
                }
                r
            }
            None => {
                self.announce_round(execution_id, n).await;
                Ok(())
            }
        }
    }

    /// Commits a decision now (the team stops, or no further round follows).
    async fn commit_decision(
        &self,
        pending: Option<PendingDecision>,
        run: &mut Run,
    ) -> Result<(), RoundError> {
        let Some(p) = pending else { return Ok(()) };
        match self.sink.emit(&p.event).await {
            Ok(()) => Ok(()),
            Err(e) => {
                let round = p.round;
                p.forget(run);
                Err(RoundError::Sink { round, source: e })
            }
        }
    }

    /// Commits round `n` (`evaluated`, the last of `run.rounds`, played but not yet stored):
    /// its record joins `run.records`; on failure the round is taken back out of `run` (it
    /// stays the unevaluated round).
    async fn commit(&self, n: u32, run: &mut Run, evaluated: Event) -> Result<(), RoundError> {
        match self.sink.emit(&evaluated).await {
            Ok(()) => {
                run.unevaluated = None;
                if let Event::Evaluated(record) = evaluated
                    && self.keep_records
                {
                    run.records.push(*record);
                }
                if let Some(last) = run.rounds.last() {
                    tracing::info!(
                        team_id = self.team_id().as_str(),
                        round = n,
                        score = last.state.evaluation_score,
                        "round evaluated"
                    );
                }
                Ok(())
            }
            Err(e) => {
                run.rounds.pop();
                // the unevaluated round gets its transcript back from the record
                if let (Event::Evaluated(record), Some(u)) =
                    (evaluated, run.unevaluated.as_deref_mut())
                {
                    let record = *record;
                    u.leader_messages = record.leader_messages;
                    u.member_submissions.submissions = record.member_submissions.submissions;
                }
                Err(RoundError::Sink {
                    round: n,
                    source: e,
                })
            }
        }
    }

    /// The continuation decision after round `n` (the last of `run.rounds`): stored on the
    /// round, and its `Judged` event returned for the caller to commit (alongside the next
    /// round's leader, or before the team finishes). `Some(reason)` when the team stops.
    /// `evaluated` is the round's
    /// record when it is not committed yet: its commit runs alongside the judgment call, whose
    /// ranking already counts the round (as the board will once it is committed); a failed
    /// commit fails the round whatever the judgment said.
    async fn decide(
        &self,
        execution_id: &ExecutionId,
        user_prompt: &str,
        n: u32,
        run: &mut Run,
        evaluated: Option<Event>,
    ) -> Result<(Option<ExitReason>, PendingDecision), RoundError> {
        let s = &self.settings;
        let js = self.judgment.settings();
        let policy = js.on_error;
        let decision = match without_judgment(
            n,
            s.min_rounds,
            s.max_rounds,
            js.judge_on_final_round,
        ) {
            Some(d) => {
                if let Some(ev) = evaluated {
                    self.commit(n, run, ev).await?;
                }
                d
            }
            None => {
                let ranking = match self.ranking_for(execution_id, n).await {
                    Ok(r) => r.map(|r| {
                        if evaluated.is_some() {
                            with_own_rounds(
                                r,
                                self.team_id().as_str(),
                                self.team_name(),
                                &run.rounds,
                            )
                        } else {
                            r
                        }
                    }),
                    Err(e) => {
                        // the round itself is complete: it is stored before the team fails
                        if let Some(ev) = evaluated {
                            self.commit(n, run, ev).await?;
                        }
                        return Err(e);
                    }
                };
                let ctx = self.context(execution_id, user_prompt, n, run.history(), ranking);
                let judged = self
                    .judgment
                    .judge(&ctx, s.judgment_timeout)
                    .instrument(tracing::info_span!("judgment", round = n));
                let answer = match evaluated {
                    Some(ev) => {
                        let (committed, answer) = tokio::join!(self.commit(n, run, ev), judged);
                        committed?;
                        answer
                    }
                    None => judged.await,
                };
                match answer {
                    Ok(answer) => from_judgment(n, s.max_rounds, answer.judgment, answer.usage),
                    Err(e) if e.is_call_failure() => {
                        tracing::warn!(team_id = self.team_id().as_str(), round = n, error = %e, policy = policy.as_str(), "judgment failed");
                        from_judgment_error(n, s.max_rounds, e, policy)
                            .map_err(|source| RoundError::Judgment { round: n, source })?
                    }
                    Err(source) => return Err(RoundError::Judgment { round: n, source }),
                }
            }
        };
        run.usage.add(Role::Judgment, decision.usage);
        let judged = PendingDecision {
            round: n,
            event: Event::Judged {
                execution_id: execution_id.into(),
                team_id: self.team_id().into(),
                team_name: self.team_name().into(),
                round_number: n,
                decision: decision.clone(),
                at: Utc::now(),
            },
        };
        let stop = (!decision.should_continue).then(|| {
            decision
                .exit_reason
                .unwrap_or(ExitReason::NoImprovementExpected)
        });
        if let Some(last) = run.rounds.last_mut() {
            last.state.improvement_judgment = stored_judgment(&decision);
            last.decision = Some(decision);
        }
        Ok((stop, judged))
    }

    async fn finish(
        &self,
        execution_id: &ExecutionId,
        run: Run,
        exit_reason: ExitReason,
    ) -> Result<TeamResult, TeamFailure> {
        let best = best_entry(
            execution_id,
            self.team_id(),
            self.team_name(),
            &run.rounds,
            exit_reason,
        );
        let event = Event::TeamFinished {
            execution_id: execution_id.into(),
            team_id: self.team_id().into(),
            team_name: self.team_name().into(),
            status: TeamStatusKind::Completed,
            best: best.clone().map(Box::new),
            exit_reason: Some(exit_reason),
            rounds_completed: rounds_completed(&run.rounds),
            error_message: None,
            usage: run.usage.total(),
            at: Utc::now(),
        };
        if let Err(e) = self.sink.emit(&event).await {
            let round = run.rounds.last().map_or(0, |r| r.state.round_number);
            return Err(run.fail(RoundError::Sink { round, source: e }));
        }
        tracing::info!(
            team_id = self.team_id().as_str(),
            exit_reason = %exit_reason,
            best_round = best.as_ref().map(|b| b.round_number),
            best_score = best.as_ref().map(|b| b.score),
            "team finished"
        );
        Ok(TeamResult {
            execution_id: execution_id.into(),
            team_id: self.team_id().into(),
            team_name: self.team_name().into(),
            rounds: run.rounds,
            records: run.records,
            best,
            exit_reason,
            usage: run.usage,
        })
    }

    /// Reports a failed team (after the caller's retries): its best completed round is
    /// marked final with exit reason `partial_failure` (`partial_failure_timeout` when
    /// `timed_out`) and `TeamFinished` is emitted with status `failed` / `timeout`. Returns
    /// the best round, if any round completed.
    pub async fn finish_failed(
        &self,
        execution_id: &ExecutionId,
        rounds: &[CompletedRound],
        error_message: &str,
        timed_out: bool,
        usage: Usage,
    ) -> Result<Option<LeaderboardEntry>, SinkError> {
        let reason = if timed_out {
            ExitReason::PartialFailureTimeout
        } else {
            ExitReason::PartialFailure
        };
        let best = best_entry(
            execution_id,
            self.team_id(),
            self.team_name(),
            rounds,
            reason,
        );
        self.sink
            .emit(&Event::TeamFinished {
                execution_id: execution_id.into(),
                team_id: self.team_id().into(),
                team_name: self.team_name().into(),
                status: if timed_out {
                    TeamStatusKind::Timeout
                } else {
                    TeamStatusKind::Failed
                },
                best: best.clone().map(Box::new),
                exit_reason: best.as_ref().map(|_| reason),
                rounds_completed: rounds_completed(rounds),
                error_message: Some(error_message.to_string()),
                usage,
                at: Utc::now(),
            })
            .await?;
        Ok(best)
    }
}

fn rounds_completed(rounds: &[CompletedRound]) -> u32 {
    u32::try_from(rounds.len()).unwrap_or(u32::MAX)
}

/// The best round (highest score, the later round on ties) as the final leaderboard entry.
pub fn best_entry(
    execution_id: &ExecutionId,
    team_id: &TeamId,
    team_name: &str,
    rounds: &[CompletedRound],
    exit_reason: ExitReason,
) -> Option<LeaderboardEntry> {
    best_round(rounds.iter().map(|r| &r.state)).map(|b| LeaderboardEntry {
        id: None,
        execution_id: execution_id.into(),
        team_id: team_id.into(),
        team_name: team_name.into(),
        round_number: b.round_number,
        submission_content: b.submission_content.clone(),
        submission_format: "md".into(),
        score: b.evaluation_score,
        score_details: b.score_details.clone(),
        final_submission: true,
        exit_reason: Some(exit_reason.as_str().to_string()),
        created_at: b.round_ended_at,
        updated_at: Utc::now(),
    })
}

/// The ranking `ranking` (best score first, then `team_id`) with the team's entry computed
/// from its own rounds `rounds` (what the board holds for the team once they are stored):
/// its best score, the number of rounds and its name. The shared ranking is copied only when
/// the team's entry differs from it.
fn with_own_rounds(
    mut ranking: Ranking,
    team_id: &str,
    team_name: &str,
    rounds: &[CompletedRound],
) -> Ranking {
    let own = (!rounds.is_empty()).then(|| RankingEntry {
        team_id: team_id.to_string(),
        team_name: team_name.to_string(),
        max_score: rounds
            .iter()
            .map(|r| r.state.evaluation_score)
            .fold(f64::NEG_INFINITY, f64::max),
        total_rounds: u32::try_from(rounds.len()).unwrap_or(u32::MAX),
    });
    let at = ranking.iter().position(|e| e.team_id == team_id);
    let unchanged = match (at, &own) {
        (Some(i), Some(own)) => {
            ranking[i] == *own
                && (i == 0 || RankingEntry::order(&ranking[i - 1], own).is_lt())
                && ranking
                    .get(i + 1)
                    .is_none_or(|next| RankingEntry::order(own, next).is_lt())
        }
        (None, None) => true,
        _ => false,
    };
    if unchanged {
        return ranking;
    }
    let entries = Arc::make_mut(&mut ranking);
    if let Some(i) = at {
        entries.remove(i);
    }
    if let Some(entry) = own {
        let at =
            entries.partition_point(|e| RankingEntry::order(e, &entry) == std::cmp::Ordering::Less);
        entries.insert(at, entry);
    }
    ranking
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(team: &str, score: f64, rounds: u32) -> RankingEntry {
        RankingEntry {
            team_id: team.into(),
            team_name: team.to_uppercase(),
            max_score: score,
            total_rounds: rounds,
        }
    }

    fn round(n: u32, score: f64) -> CompletedRound {
        CompletedRound {
            state: RoundState {
                round_number: n,
                submission_content: String::new(),
                evaluation_score: score,
                score_details: mixseek_core::ScoreDetails {
                    overall_score: score,
                    metrics: Vec::new(),
                },
                improvement_judgment: None,
                round_started_at: Utc::now(),
                round_ended_at: Utc::now(),
                message_history: Vec::new(),
            },
            decision: None,
        }
    }

    fn ids(r: &[RankingEntry]) -> Vec<(&str, f64, u32)> {
        r.iter()
            .map(|e| (e.team_id.as_str(), e.max_score, e.total_rounds))
            .collect()
    }

    #[test]
    fn own_rounds_replace_the_teams_entry_in_ranking_order() {
        let board: Ranking = Arc::new(vec![
            entry("a", 80.0, 1),
            entry("c", 60.0, 1),
            entry("b", 50.0, 1),
        ]);
        // b's second round (70) is not committed yet: b moves above c
        let r = with_own_rounds(board.clone(), "b", "B", &[round(1, 50.0), round(2, 70.0)]);
        assert_eq!(
            ids(&r),
            vec![("a", 80.0, 1), ("b", 70.0, 2), ("c", 60.0, 1)]
        );
        // a tie is broken by team_id, as the store orders it
        let r = with_own_rounds(board.clone(), "b", "B", &[round(1, 60.0)]);
        assert_eq!(
            ids(&r),
            vec![("a", 80.0, 1), ("b", 60.0, 1), ("c", 60.0, 1)]
        );
        // a team not on the board yet is added; one without rounds is left out
        let r = with_own_rounds(board.clone(), "d", "D", &[round(1, 90.0)]);
        assert_eq!(ids(&r)[0], ("d", 90.0, 1));
        assert_eq!(r[0].team_name, "D");
        let r = with_own_rounds(board.clone(), "a", "A", &[]);
        assert_eq!(ids(&r), vec![("c", 60.0, 1), ("b", 50.0, 1)]);
        // the board already holds the team's rounds: the shared ranking itself, not a copy
        let board: Ranking = Arc::new(vec![
            entry("a", 80.0, 1),
            entry("c", 60.0, 1),
            entry("b", 50.0, 1),
        ]);
        let r = with_own_rounds(board.clone(), "c", "C", &[round(1, 60.0)]);
        assert!(Arc::ptr_eq(&r, &board));
        // a different name is a change, as is a different place
        let r = with_own_rounds(board.clone(), "c", "C2", &[round(1, 60.0)]);
        assert!(!Arc::ptr_eq(&r, &board));
        assert_eq!(r[1].team_name, "C2");
    }
}
