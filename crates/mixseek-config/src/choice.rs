//! Settings whose value is one of a fixed set of words (policies, kinds, events): each an
//! enum defined once here, deserialized straight from TOML with the exact words the files
//! accept, and used as is by the crates that act on it (nothing re-parses a string).
//!
//! An unknown word is reported by the loader (`crate::doc::deserialize_section`) with the
//! file, the key, the line, the closest valid word ("did you mean `continue`?") and the list
//! of valid words, read from the enum's JSON schema. `as_str` / `Display` give the word as
//! written in the file, for messages.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// `a, b, c`: the words of `all`, for "one of: ..." hints.
pub(crate) fn one_of<T: fmt::Display>(all: &[T]) -> String {
    all.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Implements `ALL`, `as_str` and `Display` for a unit-only enum whose serde names are the
/// given words (a test checks that they agree with serde's).
macro_rules! words {
    ($ty:ident { $($variant:ident => $word:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value, in the order the documentation lists them.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The word as written in a configuration file.
            pub fn as_str(&self) -> &'static str {
                match self {
                    $($ty::$variant => $word),+
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// What a failed judgment call means for the team (`on_error` of the judgment settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnJudgmentError {
    /// End the team with its best round, the reason recorded (exit reason `judgment_failed`).
    #[default]
    Stop,
    /// Play the next round (unless the maximum is reached).
    Continue,
    /// Fail the team, as the original does.
    Fail,
}
words!(OnJudgmentError { Stop => "stop", Continue => "continue", Fail => "fail" });

/// What a failing metric does to the evaluation (`on_metric_error` of the evaluator).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnMetricError {
    /// The evaluation fails (the original's behaviour).
    #[default]
    Fail,
    /// The metric is left out: the other metrics' weights are renormalised and the failure
    /// recorded.
    Skip,
}
words!(OnMetricError { Fail => "fail", Skip => "skip" });

/// How a metric scores a submission (`type` of a `[[metrics]]` entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MetricType {
    /// An LLM judge.
    #[default]
    Llm,
    /// An external program.
    Command,
}
words!(MetricType { Llm => "llm", Command => "command" });

/// How the scores of a metric's samples and jury votes are combined (`aggregate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Aggregate {
    /// The middle score (the mean of the two middle ones for an even count). Robust to one
    /// outlying answer.
    #[default]
    Median,
    /// The arithmetic mean.
    Mean,
}
words!(Aggregate { Median => "median", Mean => "mean" });

/// Which way a metric's scores point (`direction` of a `[[metrics]]` entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Higher is better (every LLM judge, and the original's only direction).
    #[default]
    Maximize,
    /// Lower is better (an error rate, a latency, a loss).
    Minimize,
}
words!(Direction { Maximize => "maximize", Minimize => "minimize" });

/// How the arena's judge gives its verdict (`verdict_format` of `[arena]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerdictFormat {
    /// A JSON object `{reasoning, verdict}` through the provider's structured output.
    #[default]
    Structured,
    /// Free text ending with a `[[A>B]]`-style label (for servers without structured output).
    Text,
}
words!(VerdictFormat { Structured => "structured", Text => "text" });

/// Which submission of a team competes in the arena (`submission` of `[arena]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArenaSubmission {
    /// Its best-scored round (the leaderboard's).
    #[default]
    Best,
    /// Its last evaluated round.
    Last,
}
words!(ArenaSubmission { Best => "best", Last => "last" });

/// The deployment an orchestrator file describes (`environment`; informational).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Environment {
    /// Development.
    #[default]
    Dev,
    /// Staging.
    Staging,
    /// Production.
    Prod,
}
words!(Environment { Dev => "dev", Staging => "staging", Prod => "prod" });

/// What a member agent is (`type` of a member; legacy alias `agent_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemberType {
    /// An LLM with no tools.
    Plain,
    /// An LLM with the provider's native web search.
    WebSearch,
    /// An LLM that fetches URLs itself.
    WebFetch,
    /// An LLM with the provider's native code execution.
    CodeExecution,
    /// An external program.
    Command,
    /// The original's Python plugins: accepted by the loader so that validation can say they
    /// are not supported (use `command`).
    Custom,
}
words!(MemberType {
    Plain => "plain",
    WebSearch => "web_search",
    WebFetch => "web_fetch",
    CodeExecution => "code_execution",
    Command => "command",
    Custom => "custom",
});

impl MemberType {
    /// The types served by a provider-native tool (`web_search`, `code_execution`).
    pub fn is_native_tool(&self) -> bool {
        matches!(self, MemberType::WebSearch | MemberType::CodeExecution)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mixseek_core::HookEvent;
    use serde::de::DeserializeOwned;

    /// `as_str` is serde's word, and serde reads it back: the two spellings cannot drift.
    fn agree<T: Serialize + DeserializeOwned + PartialEq + fmt::Debug + Copy>(
        all: &[T],
        word: fn(&T) -> &'static str,
    ) {
        for v in all {
            assert_eq!(
                serde_json::to_value(v).ok(),
                Some(serde_json::Value::from(word(v)))
            );
            let back: T = serde_json::from_value(serde_json::Value::from(word(v))).expect("word");
            assert_eq!(back, *v);
        }
    }

    #[test]
    fn words_are_serde_names() {
        agree(OnJudgmentError::ALL, OnJudgmentError::as_str);
        agree(OnMetricError::ALL, OnMetricError::as_str);
        agree(MetricType::ALL, MetricType::as_str);
        agree(Aggregate::ALL, Aggregate::as_str);
        agree(Direction::ALL, Direction::as_str);
        agree(VerdictFormat::ALL, VerdictFormat::as_str);
        agree(ArenaSubmission::ALL, ArenaSubmission::as_str);
        agree(Environment::ALL, Environment::as_str);
        agree(HookEvent::ALL, HookEvent::as_str);
        agree(MemberType::ALL, MemberType::as_str);
    }

    #[test]
    fn defaults_and_display() {
        assert_eq!(OnJudgmentError::default().to_string(), "stop");
        assert_eq!(OnMetricError::default().to_string(), "fail");
        assert_eq!(MetricType::default(), MetricType::Llm);
        assert_eq!(Aggregate::default(), Aggregate::Median);
        assert_eq!(Environment::default(), Environment::Dev);
        assert_eq!(HookEvent::TeamComplete.to_string(), "team_complete");
    }

    #[test]
    fn words_are_exact() {
        // The accepted words are exactly the old ones: no case folding, no trimming.
        assert!(serde_json::from_value::<OnJudgmentError>("FAIL".into()).is_err());
        assert!(serde_json::from_value::<OnJudgmentError>(" stop".into()).is_err());
        assert!(serde_json::from_value::<OnMetricError>("ignore".into()).is_err());
    }
}
