//! Call observation: every `chat` call through a registry model produces one
//! [`LlmCallRecord`]; [`CallObserver`]s receive it (the orchestrator turns it into an
//! `Event::LlmCall`), and the built-in [`UsageLedger`] sums usage per caller.

use mixseek_core::{LlmCallRecord, Role, Usage, UsageByRole};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Receives one record per LLM call (success or failure). Called synchronously on the
/// calling task right after the call ends: keep it cheap (push to a channel for slow work).
pub trait CallObserver: Send + Sync {
    /// Receives the record of one finished call.
    fn on_call(&self, record: &LlmCallRecord);
}

/// The key the ledger books usage under.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LedgerKey {
    /// [`CallerTag::execution_id`](crate::CallerTag::execution_id).
    pub execution_id: Option<String>,
    /// [`CallerTag::team_id`](crate::CallerTag::team_id).
    pub team_id: Option<String>,
    /// [`CallerTag::round_number`](crate::CallerTag::round_number).
    pub round_number: Option<u32>,
    /// [`CallerTag::role`](crate::CallerTag::role).
    pub role: Role,
}

/// What the ledger holds for one key.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LedgerEntry {
    /// Usage of the successful calls.
    pub usage: Usage,
    /// Calls made.
    pub calls: u64,
    /// Calls that ended in an error.
    pub failed_calls: u64,
    /// HTTP attempts over all calls (retries and fallbacks included).
    pub attempts: u64,
    /// Calls answered from the response cache.
    pub cache_hits: u64,
}

/// Usage accumulator keyed by caller (execution, team, round, role). Thread-safe.
#[derive(Debug, Default)]
pub struct UsageLedger {
    entries: Mutex<BTreeMap<LedgerKey, LedgerEntry>>,
}

impl UsageLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    fn snapshot(&self) -> BTreeMap<LedgerKey, LedgerEntry> {
        match self.entries.lock() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Every key with its entry.
    pub fn entries(&self) -> Vec<(LedgerKey, LedgerEntry)> {
        self.snapshot().into_iter().collect()
    }

    /// Total usage of every call booked.
    pub fn total(&self) -> Usage {
        self.snapshot().values().map(|e| e.usage).sum()
    }

    /// Usage by role of the calls matching the filter (`None` matches anything).
    pub fn usage_by_role(
        &self,
        execution_id: Option<&str>,
        team_id: Option<&str>,
        round_number: Option<u32>,
    ) -> UsageByRole {
        let mut out = UsageByRole::default();
        for (k, e) in self.snapshot() {
            if execution_id.is_some_and(|x| k.execution_id.as_deref() != Some(x))
                || team_id.is_some_and(|x| k.team_id.as_deref() != Some(x))
                || round_number.is_some_and(|x| k.round_number != Some(x))
            {
                continue;
            }
            out.add(k.role, e.usage);
        }
        out
    }

    /// The summed entry of the calls matching the filter.
    pub fn entry(
        &self,
        execution_id: Option<&str>,
        team_id: Option<&str>,
        round_number: Option<u32>,
        role: Option<Role>,
    ) -> LedgerEntry {
        let mut out = LedgerEntry::default();
        for (k, e) in self.snapshot() {
            if execution_id.is_some_and(|x| k.execution_id.as_deref() != Some(x))
                || team_id.is_some_and(|x| k.team_id.as_deref() != Some(x))
                || round_number.is_some_and(|x| k.round_number != Some(x))
                || role.is_some_and(|r| k.role != r)
            {
                continue;
            }
            out.usage += e.usage;
            out.calls += e.calls;
            out.failed_calls += e.failed_calls;
            out.attempts += e.attempts;
            out.cache_hits += e.cache_hits;
        }
        out
    }
}

impl CallObserver for UsageLedger {
    fn on_call(&self, record: &LlmCallRecord) {
        let key = LedgerKey {
            execution_id: record.execution_id.clone(),
            team_id: record.team_id.clone(),
            round_number: record.round_number,
            role: record.role,
        };
        let mut guard = match self.entries.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let e = guard.entry(key).or_default();
        e.usage += record.usage;
        e.calls += 1;
        e.attempts += u64::from(record.attempts);
        if record.error.is_some() {
            e.failed_calls += 1;
        }
        if record.cache_hit {
            e.cache_hits += 1;
        }
    }
}

/// The observers of a registry: its ledger plus the configured ones.
pub(crate) struct Observers {
    pub(crate) ledger: Arc<UsageLedger>,
    pub(crate) extra: Vec<Arc<dyn CallObserver>>,
}

impl Observers {
    pub(crate) fn notify(&self, record: &LlmCallRecord) {
        self.ledger.on_call(record);
        for o in &self.extra {
            o.on_call(record);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(team: &str, round: u32, role: Role, tokens: u64, error: bool) -> LlmCallRecord {
        LlmCallRecord {
            execution_id: Some("e1".into()),
            team_id: Some(team.into()),
            round_number: Some(round),
            role,
            model: "mock:x".into(),
            usage: if error {
                Usage::default()
            } else {
                Usage {
                    input_tokens: tokens,
                    output_tokens: 1,
                    requests: 1,
                    ..Usage::default()
                }
            },
            latency_ms: 1,
            attempts: 2,
            cache_hit: false,
            error: error.then(|| "boom".to_string()),
            at: chrono::Utc::now(),
        }
    }

    #[test]
    fn ledger_books_by_caller_and_filters() {
        let l = UsageLedger::new();
        l.on_call(&record("a", 1, Role::Leader, 10, false));
        l.on_call(&record("a", 1, Role::Judgment, 5, false));
        l.on_call(&record("a", 2, Role::Leader, 7, false));
        l.on_call(&record("b", 1, Role::Leader, 100, false));
        l.on_call(&record("b", 1, Role::Leader, 0, true));
        assert_eq!(l.total().input_tokens, 122);
        let a1 = l.usage_by_role(Some("e1"), Some("a"), Some(1));
        assert_eq!(a1.0[&Role::Leader].input_tokens, 10);
        assert_eq!(a1.0[&Role::Judgment].input_tokens, 5);
        let b = l.entry(None, Some("b"), None, Some(Role::Leader));
        assert_eq!(
            (b.calls, b.failed_calls, b.attempts, b.usage.requests),
            (2, 1, 4, 1)
        );
        assert!(l.usage_by_role(Some("other"), None, None).0.is_empty());
    }
}
