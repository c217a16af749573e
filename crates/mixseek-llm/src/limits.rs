//! Per-provider limits: a semaphore for requests in flight and GCRA limiters for requests
//! and tokens per minute. A caller reserves its slot and sleeps until it comes, so waiting
//! callers are served in order. Written here rather than with `governor`: the two limits
//! need only a few lines each, and reservation keeps token budgets larger than one burst
//! simple.

use mixseek_config::ProviderSettings;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// A generic cell rate algorithm limiter: `per_minute` units per minute, bursts up to
/// `per_minute`.
#[derive(Debug)]
pub(crate) struct Gcra {
    /// Time one unit "costs".
    interval: Duration,
    /// Burst tolerance (a minute's worth).
    tolerance: Duration,
    burst: u64,
    tat: Mutex<Option<Instant>>,
}

impl Gcra {
    pub(crate) fn per_minute(per_minute: u32) -> Self {
        let per_minute = per_minute.max(1);
        let interval = Duration::from_secs(60) / per_minute;
        Self {
            interval,
            tolerance: Duration::from_secs(60),
            burst: u64::from(per_minute),
            tat: Mutex::new(None),
        }
    }

    /// Reserves `units` and returns when they may be used (`Instant::now()` or later).
    pub(crate) fn reserve(&self, units: u64) -> Instant {
        let units = units.clamp(1, self.burst);
        let now = Instant::now();
        let mut tat = match self.tat.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let start = tat.map_or(now, |t| t.max(now));
        let cost = self
            .interval
            .saturating_mul(u32::try_from(units).unwrap_or(u32::MAX));
        let new_tat = start + cost;
        *tat = Some(new_tat);
        let allow_at = new_tat.checked_sub(self.tolerance).unwrap_or(now);
        allow_at.max(now)
    }

    /// Waits until `units` may be used.
    pub(crate) async fn until_ready(&self, units: u64) {
        let at = self.reserve(units);
        if at > Instant::now() {
            tokio::time::sleep_until(at).await;
        }
    }
}

/// The limits of one provider.
#[derive(Debug)]
pub(crate) struct Limiter {
    in_flight: Arc<Semaphore>,
    rpm: Option<Gcra>,
    tpm: Option<Gcra>,
}

impl Limiter {
    pub(crate) fn from_settings(s: &ProviderSettings) -> Self {
        Self {
            in_flight: Arc::new(Semaphore::new(
                usize::try_from(s.max_in_flight.max(1)).unwrap_or(64),
            )),
            rpm: s.requests_per_minute.map(Gcra::per_minute),
            tpm: s.tokens_per_minute.map(Gcra::per_minute),
        }
    }

    /// Whether a tokens-per-minute limit is set (the tokens given to [`Limiter::acquire`]
    /// count only then).
    pub(crate) fn counts_tokens(&self) -> bool {
        self.tpm.is_some()
    }

    /// Waits for the rate limits, then for a free in-flight slot (held until the permit is
    /// dropped). `tokens` is the estimated token count of the request.
    pub(crate) async fn acquire(&self, tokens: u64) -> Option<OwnedSemaphorePermit> {
        if let Some(r) = &self.rpm {
            r.until_ready(1).await;
        }
        if let Some(t) = &self.tpm {
            t.until_ready(tokens).await;
        }
        self.in_flight.clone().acquire_owned().await.ok()
    }

    /// Books `tokens` more against the tokens-per-minute budget without waiting: the
    /// output tokens an answer used beyond what was reserved for it before sending. Later
    /// callers wait for them.
    pub(crate) fn charge(&self, tokens: u64) {
        if let Some(t) = &self.tpm
            && tokens > 0
        {
            t.reserve(tokens);
        }
    }

    /// Free in-flight slots right now (only the tests look).
    #[cfg(test)]
    pub(crate) fn available(&self) -> usize {
        self.in_flight.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn gcra_allows_a_burst_then_spaces_requests() {
        let g = Gcra::per_minute(60); // one per second, burst 60
        let t0 = Instant::now();
        for _ in 0..60 {
            assert_eq!(g.reserve(1), t0);
        }
        let next = g.reserve(1);
        assert_eq!(next - t0, Duration::from_secs(1));
        let after = g.reserve(1);
        assert_eq!(after - t0, Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn token_budget_waits_for_large_requests() {
        let g = Gcra::per_minute(1000);
        let t0 = Instant::now();
        assert_eq!(g.reserve(1000), t0);
        // 500 more tokens: half a minute later.
        assert_eq!(g.reserve(500) - t0, Duration::from_secs(30));
    }

    #[tokio::test(start_paused = true)]
    async fn requests_per_minute_limit_makes_callers_wait() {
        let s = ProviderSettings {
            requests_per_minute: Some(60),
            ..ProviderSettings::default()
        };
        let l = Limiter::from_settings(&s);
        for _ in 0..60 {
            drop(l.acquire(1).await);
        }
        let t0 = Instant::now();
        let early = tokio::time::timeout(Duration::from_millis(500), l.acquire(1)).await;
        assert!(early.is_err(), "the 61st request in a minute must wait");
        drop(l.acquire(1).await);
        // Two more slots were reserved (the timed-out one and this one): ~2 s after t0.
        assert!(Instant::now() - t0 >= Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn tokens_per_minute_from_settings_make_a_large_request_wait() {
        let s = ProviderSettings {
            tokens_per_minute: Some(1000),
            ..ProviderSettings::default()
        };
        let l = Limiter::from_settings(&s);
        let t0 = Instant::now();
        drop(l.acquire(1000).await);
        assert_eq!(Instant::now(), t0, "a minute's budget is available at once");
        // 500 more tokens: they free up half a minute later.
        let early = tokio::time::timeout(Duration::from_secs(29), l.acquire(500)).await;
        assert!(
            early.is_err(),
            "the budget is spent: a large request must wait"
        );
        let l2 = Limiter::from_settings(&s);
        drop(l2.acquire(1000).await);
        let t1 = Instant::now();
        drop(l2.acquire(500).await);
        assert_eq!(Instant::now() - t1, Duration::from_secs(30));
    }

    #[tokio::test(start_paused = true)]
    async fn output_tokens_charged_after_an_answer_count_against_the_budget() {
        let s = ProviderSettings {
            tokens_per_minute: Some(1000),
            ..ProviderSettings::default()
        };
        let l = Limiter::from_settings(&s);
        let t0 = Instant::now();
        drop(l.acquire(100).await);
        // The answer used 900 output tokens nobody reserved.
        l.charge(900);
        drop(l.acquire(500).await);
        assert_eq!(Instant::now() - t0, Duration::from_secs(30));
        // Without a tokens-per-minute limit, charging is a no-op.
        let free = Limiter::from_settings(&ProviderSettings::default());
        free.charge(1_000_000);
        let t1 = Instant::now();
        drop(free.acquire(1_000_000).await);
        assert_eq!(Instant::now(), t1);
    }

    #[tokio::test]
    async fn in_flight_permits_are_bounded() {
        let s = ProviderSettings {
            max_in_flight: 2,
            ..ProviderSettings::default()
        };
        let l = Limiter::from_settings(&s);
        let a = l.acquire(1).await;
        let _b = l.acquire(1).await;
        assert_eq!(l.available(), 0);
        let third = tokio::time::timeout(Duration::from_millis(20), l.acquire(1)).await;
        assert!(third.is_err(), "a third request must wait");
        drop(a);
        assert!(
            tokio::time::timeout(Duration::from_millis(200), l.acquire(1))
                .await
                .is_ok()
        );
    }
}
