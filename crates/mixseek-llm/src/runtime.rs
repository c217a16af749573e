//! One provider at run time ([`ProviderRuntime`]: wire backend, limits, retry policy,
//! default timeout) and one model of it ([`ProviderModel`]: cache → limits → attempt →
//! retry with backoff → accounting).

use crate::backend::{Backend, RawResponse, estimate_tokens};
use crate::cache::ResponseCache;
use crate::env::Env;
use crate::error::{ErrorKind, LlmError};
use crate::limits::Limiter;
use crate::model::ChatModel;
use crate::pricing::PriceTable;
use crate::providers;
use crate::reach;
use crate::retry::{RetryPolicy, clamped_secs, describe_wait};
use crate::types::{ChatRequest, ChatResponse};
use mixseek_config::ProviderSettings;
use mixseek_core::ModelId;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// `at + d`, or a point about a century after `at` when that cannot be represented (a
/// call's time limit of `Duration::MAX` means no limit, not a panic).
fn after(at: Instant, d: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(100 * 365 * 86_400);
    at.checked_add(d.min(FAR)).unwrap_or(at)
}

/// A provider with its shared state.
pub(crate) struct ProviderRuntime {
    pub(crate) name: String,
    pub(crate) base_url: String,
    backend: Arc<dyn Backend>,
    limiter: Limiter,
    retry: RetryPolicy,
    timeout: Duration,
    /// Time limit of one attempt; `None`: half the call's time limit.
    attempt_timeout: Option<Duration>,
    /// Models already warned about for reporting no usage.
    no_usage_warned: Mutex<HashSet<String>>,
    /// Some attempt got an HTTP answer: a refused connection from now on is a server that
    /// went away, retried as any transport error (see `crate::reach`).
    reached: AtomicBool,
    /// Found down (refused connections since the start, past the grace): its calls fail at
    /// once until one gets an answer.
    down: AtomicBool,
}

impl ProviderRuntime {
    pub(crate) fn build(
        name: &str,
        settings: Option<&ProviderSettings>,
        env: &Env,
        http: &reqwest::Client,
    ) -> Result<Self, LlmError> {
        let defaults = ProviderSettings::default();
        let s = settings.unwrap_or(&defaults);
        let (backend, base_url) = providers::build_backend(name, s, env, http)?;
        Ok(Self {
            name: name.to_string(),
            base_url,
            backend,
            limiter: Limiter::from_settings(s),
            retry: RetryPolicy::from_settings(s),
            timeout: clamped_secs(s.timeout_seconds, 0.001, 86_400.0),
            attempt_timeout: s
                .attempt_timeout_seconds
                .map(|t| clamped_secs(t, 0.001, 86_400.0)),
            no_usage_warned: Mutex::new(HashSet::new()),
            reached: AtomicBool::new(false),
            down: AtomicBool::new(false),
        })
    }

    /// An attempt got an HTTP answer (any status): the server is there.
    fn mark_reached(&self) {
        self.reached.store(true, Ordering::Relaxed);
        self.down.store(false, Ordering::Relaxed);
    }

    /// What to do after `err`, an attempt of a call that started at `started`, when the
    /// provider has never answered in this run and refused the connection: wait a little
    /// and retry while the grace lasts and attempts remain (a server that is still
    /// starting), else `Err`: the error saying the server is down and what to do.
    /// `Ok(None)`: the usual retry policy applies.
    fn down_check(
        &self,
        err: &LlmError,
        started: Instant,
        attempts_left: bool,
    ) -> Result<Option<Duration>, LlmError> {
        if !err.connection_refused || self.reached.load(Ordering::Relaxed) {
            return Ok(None);
        }
        if attempts_left
            && !self.down.load(Ordering::Relaxed)
            && started.elapsed() < reach::DOWN_GRACE
        {
            return Ok(Some(reach::DOWN_RETRY_WAIT));
        }
        self.down.store(true, Ordering::Relaxed);
        let mut e = err.clone();
        e.message = reach::down_message(&self.name, &self.base_url);
        Err(e)
    }

    /// The time limit of one attempt of a call limited to `call_timeout`.
    fn attempt_timeout(&self, call_timeout: Duration) -> Duration {
        self.attempt_timeout.unwrap_or(call_timeout / 2)
    }

    fn warn_no_usage(&self, model: &str) {
        let mut g = match self.no_usage_warned.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if g.insert(model.to_string()) {
            tracing::warn!(provider = %self.name, model, "the provider reported no token usage; usage and cost of its calls are unknown");
        }
    }
}

/// A model of a provider.
pub(crate) struct ProviderModel {
    id: String,
    model: String,
    runtime: Arc<ProviderRuntime>,
    prices: Arc<PriceTable>,
    cache: Option<Arc<ResponseCache>>,
}

impl ProviderModel {
    pub(crate) fn new(
        id: ModelId,
        runtime: Arc<ProviderRuntime>,
        prices: Arc<PriceTable>,
        cache: Option<Arc<ResponseCache>>,
    ) -> Self {
        Self {
            id: id.to_string(),
            model: id.model,
            runtime,
            prices,
            cache,
        }
    }

    fn timeout_error(&self, timeout: Duration, attempts: u32, last: Option<&LlmError>) -> LlmError {
        let mut msg = format!(
            "no answer within the call's time limit of {:.1} s",
            timeout.as_secs_f64()
        );
        if let Some(l) = last {
            msg.push_str(&format!(" (last error: {})", l.message));
        }
        LlmError::new(ErrorKind::Timeout, &self.runtime.name, &self.model, msg)
            .with_attempts(attempts)
    }

    fn respond(&self, raw: RawResponse, started: Instant, attempts: u32) -> ChatResponse {
        if raw.usage.is_none() {
            self.runtime.warn_no_usage(&self.model);
        }
        ChatResponse {
            text: raw.text,
            tool_calls: raw.tool_calls,
            usage: self.prices.usage(&self.id, raw.usage),
            finish_reason: raw.finish_reason,
            latency: started.elapsed(),
            attempts,
            model: self.id.clone(),
            cache_hit: false,
        }
    }
}

#[async_trait::async_trait]
impl ChatModel for ProviderModel {
    fn id(&self) -> &str {
        &self.id
    }

    fn default_timeout(&self) -> Option<Duration> {
        Some(self.runtime.timeout)
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let rt = &self.runtime;
        let timeout = request.timeout.unwrap_or(rt.timeout);
        let deadline = after(started, timeout);

        let cache_key = self
            .cache
            .as_ref()
            .map(|_| ResponseCache::key(&rt.name, &rt.base_url, &self.model, request));
        if let (Some(cache), Some(key)) = (&self.cache, &cache_key)
            && let Some(mut hit) = cache.get(key).await
        {
            hit.cache_hit = true;
            hit.attempts = 0;
            hit.usage = mixseek_core::Usage::default();
            hit.latency = started.elapsed();
            return Ok(hit);
        }

        let budgeted = u64::from(request.params.max_tokens.unwrap_or(0));
        // the estimate (a pass over every message) only matters to a tokens-per-minute limit
        let tokens = if rt.limiter.counts_tokens() {
            estimate_tokens(request) + budgeted
        } else {
            budgeted
        };
        let attempt_limit = rt.attempt_timeout(timeout);
        let attempts = AtomicU32::new(0);
        let mut last: Option<LlmError> = None;
        loop {
            let n = attempts.fetch_add(1, Ordering::Relaxed) + 1;
            if Instant::now() >= deadline {
                return Err(self.timeout_error(timeout, n - 1, last.as_ref()));
            }
            // Waiting for the limits counts against the call, not the attempt.
            let Ok(permit) = tokio::time::timeout_at(deadline, rt.limiter.acquire(tokens)).await
            else {
                return Err(self.timeout_error(timeout, n - 1, last.as_ref()));
            };
            let attempt_deadline = after(Instant::now(), attempt_limit).min(deadline);
            let outcome = tokio::time::timeout_at(
                attempt_deadline,
                rt.backend.send(&self.model, request, &attempts),
            )
            .await;
            drop(permit);
            let total = attempts.load(Ordering::Relaxed);
            let err = match outcome {
                Err(_) if attempt_deadline >= deadline => {
                    return Err(self.timeout_error(timeout, total, last.as_ref()));
                }
                Err(_) => LlmError::new(
                    ErrorKind::Timeout,
                    &rt.name,
                    &self.model,
                    format!(
                        "no answer within the attempt's time limit of {:.1} s",
                        attempt_limit.as_secs_f64()
                    ),
                )
                .with_attempts(total),
                Ok(Ok(raw)) => {
                    rt.mark_reached();
                    // Output tokens beyond what was reserved count against the budget too.
                    let output = raw.usage.as_ref().map_or_else(
                        || {
                            raw.text
                                .as_deref()
                                .map_or(0, |t| (t.len() as u64).div_ceil(4))
                        },
                        |u| u.output_tokens,
                    );
                    rt.limiter.charge(output.saturating_sub(budgeted));
                    let response = self.respond(raw, started, total);
                    if let (Some(cache), Some(key)) = (&self.cache, &cache_key) {
                        cache.put(key, &response).await;
                    }
                    return Ok(response);
                }
                Ok(Err(e)) => {
                    if e.status.is_some() {
                        rt.mark_reached();
                    }
                    e.with_attempts(total)
                }
            };
            let grace_wait = rt.down_check(&err, started, n < rt.retry.max_attempts)?;
            if grace_wait.is_none() && (!err.is_transient() || n >= rt.retry.max_attempts) {
                return Err(err);
            }
            let wait = grace_wait.unwrap_or_else(|| rt.retry.wait(n, err.retry_after));
            if wait >= deadline.saturating_duration_since(Instant::now()) {
                let mut e = err;
                let asked = match e.retry_after {
                    Some(hint) if hint >= wait => {
                        format!("the server asked to wait {}: ", describe_wait(hint))
                    }
                    _ => String::new(),
                };
                e.message = format!(
                    "{} ({asked}no time left to retry within the call's time limit of {:.1} s)",
                    e.message,
                    timeout.as_secs_f64()
                );
                return Err(e);
            }
            tracing::debug!(provider = %rt.name, model = %self.model, attempt = n, kind = %err.kind, wait_ms = wait.as_millis() as u64, error = %err.message, "transient LLM error, retrying");
            tokio::time::sleep(wait).await;
            last = Some(err);
        }
    }
}
