//! Token and cost accounting.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::ops::AddAssign;

/// Usage of one or many LLM calls. `cost_usd` covers the calls whose model has a price;
/// `unpriced_requests` counts those that had none, and `requests_without_usage` those whose
/// provider reported no token counts (so a 0 is never mistaken for "free").
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Input (prompt) tokens.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
    /// Input tokens served from the provider's prompt cache (part of `input_tokens`).
    #[serde(default)]
    pub cached_tokens: u64,
    /// LLM requests made.
    pub requests: u64,
    /// Cost of the priced requests, in US dollars.
    #[serde(default)]
    pub cost_usd: f64,
    /// Requests whose model has no price.
    #[serde(default)]
    pub unpriced_requests: u64,
    /// Requests whose provider reported no token counts.
    #[serde(default)]
    pub requests_without_usage: u64,
}

impl Usage {
    /// Input plus output tokens.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
    /// No request and no token.
    pub fn is_empty(&self) -> bool {
        self.requests == 0 && self.total_tokens() == 0
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, o: Self) {
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cached_tokens += o.cached_tokens;
        self.requests += o.requests;
        self.cost_usd += o.cost_usd;
        self.unpriced_requests += o.unpriced_requests;
        self.requests_without_usage += o.requests_without_usage;
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Usage>>(iter: I) -> Self {
        let mut total = Usage::default();
        for u in iter {
            total += u;
        }
        total
    }
}

/// Who made an LLM call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The team's leader agent.
    Leader,
    /// A member agent.
    Member,
    /// An evaluation metric's judge.
    Evaluator,
    /// The continuation judgment.
    Judgment,
    /// A call made outside a run (`mixseek llm`).
    Direct,
}

impl Role {
    /// The stored and printed name (`leader`, `member`, …).
    pub fn as_str(&self) -> &'static str {
        match self {
            Role::Leader => "leader",
            Role::Member => "member",
            Role::Evaluator => "evaluator",
            Role::Judgment => "judgment",
            Role::Direct => "direct",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Usage split by role (agents vs judges cost differently and are budgeted separately).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageByRole(pub BTreeMap<Role, Usage>);

impl UsageByRole {
    /// Adds `usage` to `role`'s.
    pub fn add(&mut self, role: Role, usage: Usage) {
        *self.0.entry(role).or_default() += usage;
    }
    /// All roles' usage, summed.
    pub fn total(&self) -> Usage {
        self.0.values().copied().sum()
    }
    /// Adds every role's usage of `other`.
    pub fn merge(&mut self, other: &UsageByRole) {
        for (role, u) in &other.0 {
            self.add(*role, *u);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_adds_up_by_role() {
        let mut by_role = UsageByRole::default();
        let u = Usage {
            input_tokens: 10,
            output_tokens: 5,
            requests: 1,
            cost_usd: 0.5,
            ..Usage::default()
        };
        by_role.add(Role::Leader, u);
        by_role.add(Role::Leader, u);
        by_role.add(Role::Judgment, u);
        assert_eq!(by_role.0[&Role::Leader].input_tokens, 20);
        let t = by_role.total();
        assert_eq!(t.requests, 3);
        assert_eq!(t.total_tokens(), 45);
        assert!((t.cost_usd - 1.5).abs() < 1e-12);
    }
}
