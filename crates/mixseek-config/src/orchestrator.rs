//! `[orchestrator]`: the competition's teams, rounds, timeouts and limits.

use crate::choice::Environment;
use crate::issues::Issues;
use mixseek_core::HookEvent;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One `[[orchestrator.teams]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(default)]
pub struct TeamEntry {
    /// Path of the team TOML (relative: against the workspace, then this file's folder).
    pub config: String,
}

/// The `[orchestrator]` table of an orchestrator TOML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct OrchestratorSettings {
    /// Wall-clock limit in seconds for one team's whole multi-round run (10..=3600).
    /// `mixseek exec --timeout` overrides it.
    pub timeout_per_team_seconds: u64,
    /// Teams running at the same time (1..=100). Enforced (the original ignored it).
    pub max_concurrent_teams: u32,
    /// Re-runs of a team after a transient failure, resuming after its last completed round
    /// (0..=10).
    pub max_retries_per_team: u32,
    /// The competing teams; at least one.
    pub teams: Vec<TeamEntry>,
    /// Evaluator TOML; else `WORKSPACE/configs/evaluator.toml` if present, else built-in defaults.
    pub evaluator_config: Option<String>,
    /// Judgment TOML; else `WORKSPACE/configs/judgment.toml` if present, else defaults.
    pub judgment_config: Option<String>,
    /// Prompt-builder TOML; else a `[prompt_builder]` table in this file, else
    /// `WORKSPACE/configs/prompt_builder.toml`, else the shipped default templates.
    pub prompt_builder_config: Option<String>,
    /// Arena TOML (ours): when set, `exec` ends with a pairwise arena of the teams'
    /// submissions (`mixseek arena`), its ratings stored and printed after the leaderboard.
    pub arena_config: Option<String>,
    /// Upper bound of rounds per team (1..=10).
    pub max_rounds: u32,
    /// Rounds always run before the judgment is consulted (1..=max_rounds).
    pub min_rounds: u32,
    /// Time limit in seconds for one leader run (one round's submission); enforced.
    pub submission_timeout_seconds: u64,
    /// Time limit in seconds for one judgment call; enforced.
    pub judgment_timeout_seconds: u64,
    /// Context about the task's domain, carried into every prompt of every phase (team,
    /// member, evaluator, judgment). A team's own `domain_context` replaces it.
    pub domain_context: Option<String>,
    /// Preferred answer language (e.g. `"ja"`, `"en"`); added to every prompt.
    pub language: Option<String>,
    /// Stop starting new rounds once the execution's LLM cost reaches this many US dollars.
    pub max_cost_usd: Option<f64>,
    /// Stop starting new rounds once the execution has used this many tokens (input + output).
    pub max_total_tokens: Option<u64>,
    /// Informational: `dev`, `staging` or `prod`.
    pub environment: Environment,
}

impl Default for OrchestratorSettings {
    fn default() -> Self {
        Self {
            timeout_per_team_seconds: 300,
            max_concurrent_teams: 4,
            max_retries_per_team: 2,
            teams: Vec::new(),
            evaluator_config: None,
            judgment_config: None,
            prompt_builder_config: None,
            arena_config: None,
            max_rounds: 5,
            min_rounds: 2,
            submission_timeout_seconds: 300,
            judgment_timeout_seconds: 60,
            domain_context: None,
            language: None,
            max_cost_usd: None,
            max_total_tokens: None,
            environment: Environment::Dev,
        }
    }
}

impl OrchestratorSettings {
    /// Adds this section's range and consistency problems to `issues`, keys under `prefix`.
    pub fn validate(&self, prefix: &str, issues: &mut Issues) {
        issues.range_i64(
            prefix,
            "timeout_per_team_seconds",
            self.timeout_per_team_seconds as i64,
            10,
            3600,
        );
        issues.range_i64(
            prefix,
            "max_concurrent_teams",
            self.max_concurrent_teams as i64,
            1,
            100,
        );
        issues.range_i64(
            prefix,
            "max_retries_per_team",
            self.max_retries_per_team as i64,
            0,
            10,
        );
        issues.range_i64(prefix, "max_rounds", self.max_rounds as i64, 1, 10);
        issues.range_i64(prefix, "min_rounds", self.min_rounds as i64, 1, 10);
        if self.min_rounds > self.max_rounds {
            issues.error_hint(
                prefix,
                "min_rounds",
                format!(
                    "min_rounds ({}) must be <= max_rounds ({})",
                    self.min_rounds, self.max_rounds
                ),
                "lower min_rounds or raise max_rounds",
            );
        }
        if self.submission_timeout_seconds == 0 {
            issues.error_hint(
                prefix,
                "submission_timeout_seconds",
                "must be > 0",
                "allowed range: 1..",
            );
        }
        if self.judgment_timeout_seconds == 0 {
            issues.error_hint(
                prefix,
                "judgment_timeout_seconds",
                "must be > 0",
                "allowed range: 1..",
            );
        }
        if self.teams.is_empty() {
            issues.error_hint(
                prefix,
                "teams",
                "no teams defined (at least one is required)",
                "add a [[orchestrator.teams]] entry with config = \"path/to/team.toml\"",
            );
        }
        for (i, t) in self.teams.iter().enumerate() {
            if t.config.trim().is_empty() {
                issues.error(
                    prefix,
                    &format!("teams[{i}].config"),
                    "config cannot be empty",
                );
            }
        }
        if let Some(c) = self.max_cost_usd {
            if c.is_nan() || c <= 0.0 {
                issues.error_hint(
                    prefix,
                    "max_cost_usd",
                    format!("{c} must be > 0"),
                    "remove the key for no limit",
                );
            }
        }
        if self.max_total_tokens == Some(0) {
            issues.error_hint(
                prefix,
                "max_total_tokens",
                "must be > 0",
                "remove the key for no limit",
            );
        }
    }
}

/// `[[hooks]]`: commands or URLs notified of run events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct HookSettings {
    /// The event: `round_complete`, `team_complete` or `execution_complete`.
    #[schemars(with = "HookEvent")]
    pub on: Option<HookEvent>,
    /// A program and its arguments; it receives the event as JSON on stdin.
    pub command: Option<Vec<String>>,
    /// An http(s) URL the event is POSTed to as JSON.
    pub url: Option<String>,
    /// Time limit in seconds for one hook call.
    pub timeout_seconds: u64,
}

impl Default for HookSettings {
    fn default() -> Self {
        Self {
            on: None,
            command: None,
            url: None,
            timeout_seconds: 10,
        }
    }
}

impl HookSettings {
    /// Adds this section's range and consistency problems to `issues`, keys under `prefix`.
    pub fn validate(&self, prefix: &str, issues: &mut Issues) {
        if self.on.is_none() {
            issues.error_hint(
                prefix,
                "on",
                "a hook needs an event",
                format!("on = one of: {}", crate::choice::one_of(HookEvent::ALL)),
            );
        }
        match (&self.command, &self.url) {
            (None, None) => issues.error_hint(
                prefix,
                "command",
                "a hook needs `command` or `url`",
                "set one of them",
            ),
            (Some(_), Some(_)) => issues.error_hint(
                prefix,
                "url",
                "a hook takes `command` or `url`, not both",
                "split it into two hooks",
            ),
            (Some(c), None) if c.is_empty() => {
                issues.error(prefix, "command", "command cannot be empty")
            }
            (None, Some(u)) if !(u.starts_with("http://") || u.starts_with("https://")) => issues
                .error_hint(
                    prefix,
                    "url",
                    format!("`{u}` is not an http(s) URL"),
                    "use http:// or https://",
                ),
            _ => {}
        }
        if self.timeout_seconds == 0 || self.timeout_seconds > 600 {
            issues.range_i64(
                prefix,
                "timeout_seconds",
                self.timeout_seconds as i64,
                1,
                600,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_originals() {
        let d = OrchestratorSettings::default();
        assert_eq!(
            (
                d.timeout_per_team_seconds,
                d.max_concurrent_teams,
                d.max_retries_per_team
            ),
            (300, 4, 2)
        );
        assert_eq!((d.max_rounds, d.min_rounds), (5, 2));
        assert_eq!(
            (d.submission_timeout_seconds, d.judgment_timeout_seconds),
            (300, 60)
        );
    }

    #[test]
    fn min_above_max_and_ranges_are_reported_together() {
        let s = OrchestratorSettings {
            max_rounds: 2,
            min_rounds: 3,
            max_concurrent_teams: 0,
            teams: vec![TeamEntry {
                config: "t.toml".into(),
            }],
            ..Default::default()
        };
        let mut issues = Issues::default();
        s.validate("orchestrator", &mut issues);
        let text: Vec<String> = issues.items.iter().map(|i| i.to_string()).collect();
        assert_eq!(issues.len(), 2, "{text:#?}");
        assert!(
            text.iter()
                .any(|t| t.contains("min_rounds (3) must be <= max_rounds (2)"))
        );
        assert!(
            text.iter()
                .any(|t| t.contains("orchestrator.max_concurrent_teams") && t.contains("1..=100"))
        );
    }

    #[test]
    fn hooks_need_a_known_event_and_one_target() {
        let value: toml::Value =
            toml::from_str("[[hooks]]\non = \"round_completed\"\n").expect("toml");
        let mut issues = Issues::default();
        let file: Option<crate::OrchestratorFile> =
            crate::doc::deserialize_section(&value, "", &mut issues);
        let hook = file.and_then(|f| f.hooks.into_iter().next()).expect("hook");
        assert_eq!(hook.on, None);
        hook.validate("hooks[0]", &mut issues);
        let text: Vec<String> = issues.items.iter().map(|i| i.to_string()).collect();
        assert!(
            text.iter().any(|t| t.contains(
                "`hooks[0].on`: unknown value `round_completed` (did you mean `round_complete`? \
                 one of: round_complete, team_complete, execution_complete)"
            )),
            "{text:#?}"
        );
        assert!(
            text.iter().any(|t| t.contains("a hook needs an event")),
            "{text:#?}"
        );
        assert!(
            text.iter().any(|t| t.contains("needs `command` or `url`")),
            "{text:#?}"
        );
    }
}
