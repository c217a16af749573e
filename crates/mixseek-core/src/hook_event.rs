//! [`HookEvent`]: the run events hooks subscribe to (`[[hooks]] on = ...`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The run event a hook is notified of (`on` of a `[[hooks]]` entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    /// A team's round was judged.
    RoundComplete,
    /// A team finished.
    TeamComplete,
    /// The whole execution finished.
    ExecutionComplete,
}

impl HookEvent {
    /// Every event, in the order the documentation lists them.
    pub const ALL: &'static [HookEvent] = &[
        HookEvent::RoundComplete,
        HookEvent::TeamComplete,
        HookEvent::ExecutionComplete,
    ];

    /// The event's name as written in a configuration file.
    pub fn as_str(&self) -> &'static str {
        match self {
            HookEvent::RoundComplete => "round_complete",
            HookEvent::TeamComplete => "team_complete",
            HookEvent::ExecutionComplete => "execution_complete",
        }
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_serde_names() {
        for e in HookEvent::ALL {
            assert_eq!(
                serde_json::to_value(e).ok(),
                Some(serde_json::Value::from(e.as_str()))
            );
        }
    }
}
