//! Identifiers of executions and teams.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The id of one execution (`mixseek exec` run): a UUID v4 string, as the original.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ExecutionId(pub String);

impl ExecutionId {
    /// A fresh random (v4) execution id.
    pub fn new_v4() -> Self {
        Self(uuid::Uuid::new_v4().to_string())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ExecutionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ExecutionId {
    fn from(s: &str) -> Self {
        Self(s.to_string())
    }
}

impl From<String> for ExecutionId {
    fn from(s: String) -> Self {
        Self(s)
    }
}

/// The id of a team (`[team] team_id`), unique within an execution.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TeamId(pub String);

impl TeamId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TeamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for TeamId {
    fn from(s: &str) -> Self {
        Self(s.to_string())
    }
}

impl From<String> for TeamId {
    fn from(s: String) -> Self {
        Self(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execution_ids_are_uuid_v4_and_distinct() {
        let a = ExecutionId::new_v4();
        let b = ExecutionId::new_v4();
        assert_ne!(a, b);
        let parsed = uuid::Uuid::parse_str(a.as_str()).expect("uuid");
        assert_eq!(parsed.get_version_num(), 4);
    }

    #[test]
    fn ids_serialize_as_plain_strings() {
        let t = TeamId::from("alpha");
        assert_eq!(serde_json::to_string(&t).unwrap_or_default(), "\"alpha\"");
    }
}
