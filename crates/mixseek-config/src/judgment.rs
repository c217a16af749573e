//! Judgment TOML (flat file): the LLM that decides whether a team plays another round.

use crate::choice::OnJudgmentError;
use crate::issues::Issues;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A judgment TOML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct JudgmentSettings {
    /// Judgment model (`provider:model`).
    pub model: String,
    /// Sampling temperature (0.0..=2.0).
    pub temperature: f64,
    /// Output token limit (> 0).
    pub max_tokens: Option<u64>,
    /// Structured-output repair attempts.
    pub max_retries: u32,
    /// Per-request timeout in seconds (1..=3600).
    pub timeout_seconds: u64,
    /// Stop sequences (passed to the model; the original dropped them).
    pub stop_sequences: Option<Vec<String>>,
    /// Nucleus sampling (0.0..=1.0).
    pub top_p: Option<f64>,
    /// Sampling seed.
    pub seed: Option<i64>,
    /// System instruction; unset or `""` ⇒ the built-in judgment instruction.
    pub system_instruction: Option<String>,
    /// `false` ⇒ no judgment call on the last round (the team stops there).
    pub judge_on_final_round: bool,
    /// When the judgment call fails: `stop` (end the team with its best round, the reason
    /// recorded), `continue` (play the next round) or `fail` (fail the team, the original's
    /// behaviour).
    pub on_error: OnJudgmentError,
    /// Models tried in order when the primary model keeps failing.
    pub fallback_models: Vec<String>,
    /// Request settings passed through to the model as they are (the original's
    /// `model_settings`; e.g. `presence_penalty`, `openai_reasoning_effort`, `extra_body`). `temperature` and
    /// `timeout_seconds` are always set, so those keys here have no effect.
    pub model_settings: Option<serde_json::Map<String, serde_json::Value>>,
    /// As `model_settings`, for Google models only (ignored, with a warning, for any other
    /// model); wins over `model_settings`.
    pub google_model_settings: Option<serde_json::Map<String, serde_json::Value>>,
}

impl Default for JudgmentSettings {
    fn default() -> Self {
        Self {
            model: "google-gla:gemini-flash-lite-latest".into(),
            temperature: 0.0,
            max_tokens: None,
            max_retries: 3,
            timeout_seconds: 60,
            stop_sequences: None,
            top_p: None,
            seed: None,
            system_instruction: None,
            judge_on_final_round: true,
            on_error: OnJudgmentError::Stop,
            fallback_models: Vec::new(),
            model_settings: None,
            google_model_settings: None,
        }
    }
}

impl JudgmentSettings {
    /// Adds this section's range and consistency problems to `issues`, keys under `prefix`.
    pub fn validate(&self, prefix: &str, issues: &mut Issues) {
        issues.non_blank(prefix, "model", &self.model);
        issues.range_f64(prefix, "temperature", self.temperature, 0.0, 2.0);
        issues.opt_range_f64(prefix, "top_p", self.top_p, 0.0, 1.0);
        if self.max_tokens == Some(0) {
            issues.error(prefix, "max_tokens", "must be > 0");
        }
        issues.range_i64(
            prefix,
            "timeout_seconds",
            i64::try_from(self.timeout_seconds).unwrap_or(i64::MAX),
            1,
            3600,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let d = JudgmentSettings::default();
        assert_eq!(
            (d.model.as_str(), d.max_retries, d.timeout_seconds),
            ("google-gla:gemini-flash-lite-latest", 3, 60)
        );
        assert!(d.judge_on_final_round);
        assert_eq!(d.on_error, OnJudgmentError::Stop);
    }
}
