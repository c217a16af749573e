//! Budgets: once the execution's cost or token total reaches a limit, no new team and no new
//! round starts, and the run ends cleanly with what it has. Fed by the engine's LLM-call
//! observer as each call completes (and, on resume, with what earlier processes spent).

use mixseek_core::Usage;
use std::sync::Mutex;

#[derive(Debug, Default)]
pub(crate) struct Budget {
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    used: Mutex<Usage>,
}

impl Budget {
    pub(crate) fn new(max_cost_usd: Option<f64>, max_tokens: Option<u64>) -> Self {
        Self {
            max_cost_usd,
            max_tokens,
            used: Mutex::new(Usage::default()),
        }
    }

    /// Starts from usage already spent (resume).
    pub(crate) fn add(&self, u: Usage) {
        match self.used.lock() {
            Ok(mut g) => *g += u,
            Err(p) => *p.into_inner() += u,
        }
    }

    pub(crate) fn used(&self) -> Usage {
        match self.used.lock() {
            Ok(g) => *g,
            Err(p) => *p.into_inner(),
        }
    }

    /// Why no new round may start, if a limit is reached.
    pub(crate) fn exceeded(&self) -> Option<String> {
        let u = self.used();
        if let Some(max) = self.max_cost_usd {
            if u.cost_usd >= max {
                return Some(format!(
                    "cost budget reached: ${:.4} spent of ${max:.4} (--max-cost-usd / max_cost_usd)",
                    u.cost_usd
                ));
            }
        }
        if let Some(max) = self.max_tokens {
            if u.total_tokens() >= max {
                return Some(format!(
                    "token budget reached: {} tokens used of {max} (--max-tokens / max_total_tokens)",
                    u.total_tokens()
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        let b = Budget::new(Some(1.0), Some(100));
        assert!(b.exceeded().is_none());
        b.add(Usage {
            input_tokens: 60,
            output_tokens: 50,
            requests: 1,
            ..Usage::default()
        });
        assert!(b.exceeded().is_some_and(|r| r.contains("token budget")));
        let b = Budget::new(Some(0.5), None);
        b.add(Usage {
            cost_usd: 0.6,
            ..Usage::default()
        });
        assert!(b.exceeded().is_some_and(|r| r.contains("cost budget")));
    }
}
