//! What every [`PromptBuilder`](crate::PromptBuilder) remembers of the injection rules it
//! applied during a run: per (execution, team, round), the rule names of each phase and side,
//! so the round controller can store them with the round
//! ([`mixseek_core::RoundRecord::applied_injections`]) and every application is logged with
//! the execution, team, round, phase and side.

use crate::context::PromptContext;
use mixseek_config::{InjectionPhase, InjectionSide};
use mixseek_core::AppliedInjection;
use std::collections::HashMap;
use std::sync::Mutex;

type Key = (String, String, u32);

/// Rule names by (execution id, team id, round number). Shared by the clones of a builder.
#[derive(Debug, Default)]
pub(crate) struct InjectionLog {
    rounds: Mutex<HashMap<Key, Vec<AppliedInjection>>>,
}

fn phase_rank(phase: &str) -> usize {
    InjectionPhase::ALL
        .iter()
        .position(|p| p.as_str() == phase)
        .unwrap_or(usize::MAX)
}

impl InjectionLog {
    /// Logs `rules` (non-empty) applied to a `phase` / `side` prompt of `ctx` (debug level:
    /// every member and metric repeats them; the round record keeps them) and, for a run
    /// context (execution id, team id and round number set), remembers them for
    /// [`take`](Self::take).
    pub(crate) fn record(
        &self,
        phase: InjectionPhase,
        side: InjectionSide,
        ctx: &PromptContext,
        rules: &[String],
    ) {
        let execution_id = ctx.execution_id.as_deref().unwrap_or("");
        let run = !execution_id.is_empty() && !ctx.team_id.is_empty() && ctx.round_number >= 1;
        if run {
            let key = (
                execution_id.to_string(),
                ctx.team_id.clone(),
                ctx.round_number,
            );
            let mut rounds = self.rounds.lock().unwrap_or_else(|e| e.into_inner());
            let entries = rounds.entry(key).or_default();
            let entry = match entries
                .iter()
                .position(|e| e.phase == phase.as_str() && e.side == side.as_str())
            {
                Some(i) => &mut entries[i],
                None => {
                    entries.push(AppliedInjection {
                        phase: phase.as_str().to_string(),
                        side: side.as_str().to_string(),
                        rules: Vec::new(),
                    });
                    let last = entries.len() - 1;
                    &mut entries[last]
                }
            };
            for r in rules {
                if !entry.rules.contains(r) {
                    entry.rules.push(r.clone());
                }
            }
        }
        tracing::debug!(
            execution_id,
            team_id = %ctx.team_id,
            round = ctx.round_number,
            phase = phase.as_str(),
            side = side.as_str(),
            rules = ?rules,
            "injection rules applied"
        );
    }

    /// The rules applied so far in round `round` of `team_id` in `execution_id`, ordered by
    /// phase (team, member, evaluator, judgment) then side (system, user), and forgets them
    /// together with anything left from that team's earlier rounds.
    pub(crate) fn take(
        &self,
        execution_id: &str,
        team_id: &str,
        round: u32,
    ) -> Vec<AppliedInjection> {
        let mut rounds = self.rounds.lock().unwrap_or_else(|e| e.into_inner());
        rounds.retain(|(e, t, r), _| !(e == execution_id && t == team_id && *r < round));
        let mut list = rounds
            .remove(&(execution_id.to_string(), team_id.to_string(), round))
            .unwrap_or_default();
        list.sort_by_key(|e| (phase_rank(&e.phase), e.side != "system"));
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(round: u32) -> PromptContext {
        PromptContext {
            execution_id: Some("e1".into()),
            team_id: "t1".into(),
            round_number: round,
            ..Default::default()
        }
    }

    #[test]
    fn rules_are_merged_per_phase_and_side_and_taken_once() {
        let log = InjectionLog::default();
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        log.record(
            InjectionPhase::Evaluator,
            InjectionSide::System,
            &ctx(1),
            &names(&["domain_context"]),
        );
        log.record(
            InjectionPhase::Member,
            InjectionSide::System,
            &ctx(1),
            &names(&["language_preference"]),
        );
        log.record(
            InjectionPhase::Member,
            InjectionSide::System,
            &ctx(1),
            &names(&["language_preference", "domain_context"]),
        );
        log.record(
            InjectionPhase::Team,
            InjectionSide::User,
            &ctx(1),
            &names(&["prompt_suffix"]),
        );
        log.record(
            InjectionPhase::Team,
            InjectionSide::System,
            &ctx(1),
            &names(&["domain_context"]),
        );
        // A judgment after the round's record, and a standalone evaluation: not kept past
        // the next round / not kept at all.
        log.record(
            InjectionPhase::Judgment,
            InjectionSide::System,
            &ctx(1),
            &names(&["x"]),
        );
        log.record(
            InjectionPhase::Evaluator,
            InjectionSide::System,
            &PromptContext::default(),
            &names(&["y"]),
        );
        let taken = log.take("e1", "t1", 1);
        let shape: Vec<(&str, &str, Vec<&str>)> = taken
            .iter()
            .map(|a| {
                (
                    a.phase.as_str(),
                    a.side.as_str(),
                    a.rules.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                ("team", "system", vec!["domain_context"]),
                ("team", "user", vec!["prompt_suffix"]),
                (
                    "member",
                    "system",
                    vec!["language_preference", "domain_context"]
                ),
                ("evaluator", "system", vec!["domain_context"]),
                ("judgment", "system", vec!["x"]),
            ]
        );
        assert!(log.take("e1", "t1", 1).is_empty());
        log.record(
            InjectionPhase::Judgment,
            InjectionSide::System,
            &ctx(2),
            &names(&["x"]),
        );
        assert!(log.take("e1", "t1", 3).is_empty());
        assert!(log.rounds.lock().map(|r| r.is_empty()).unwrap_or(false));
    }
}
