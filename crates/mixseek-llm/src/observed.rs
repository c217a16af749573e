//! Wrappers around provider models: [`FallbackModel`] (try the next model when one fails)
//! and [`ObservedModel`] (report one call record per call to the observers).

use crate::error::LlmError;
use crate::model::ChatModel;
use crate::registry::Observers;
use crate::types::{ChatRequest, ChatResponse};
use mixseek_core::{LlmCallRecord, Usage};
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

/// Tries each model in order; the first success wins. Attempts add up over all models.
pub(crate) struct FallbackModel {
    id: String,
    chain: Vec<Arc<dyn ChatModel>>,
}

impl FallbackModel {
    pub fn new(id: String, chain: Vec<Arc<dyn ChatModel>>) -> Self {
        Self { id, chain }
    }
}

#[async_trait::async_trait]
impl ChatModel for FallbackModel {
    fn id(&self) -> &str {
        &self.id
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut attempts = 0u32;
        let mut last: Option<LlmError> = None;
        for (i, model) in self.chain.iter().enumerate() {
            match model.chat(request).await {
                Ok(mut r) => {
                    r.attempts += attempts;
                    if i > 0 {
                        tracing::info!(requested = %self.id, answered = %r.model, "answered by a fallback model");
                    }
                    return Ok(r);
                }
                Err(e) => {
                    attempts += e.attempts;
                    if let Some(next) = self.chain.get(i + 1) {
                        tracing::warn!(model = model.id(), next = next.id(), error = %e, "model failed, trying the next fallback model");
                    }
                    last = Some(e);
                }
            }
        }
        let err = last.unwrap_or_else(|| {
            LlmError::config("", format!("no model configured for `{}`", self.id))
        });
        Err(err.with_attempts(attempts))
    }
}

/// Reports every call to the registry's observers.
pub(crate) struct ObservedModel {
    inner: Arc<dyn ChatModel>,
    observers: Arc<Observers>,
}

impl ObservedModel {
    pub fn new(inner: Arc<dyn ChatModel>, observers: Arc<Observers>) -> Self {
        Self { inner, observers }
    }
}

#[async_trait::async_trait]
impl ChatModel for ObservedModel {
    fn id(&self) -> &str {
        self.inner.id()
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let c = &request.caller;
        let span = tracing::info_span!(
            "llm_call",
            model = self.inner.id(),
            role = %c.role,
            team = c.team_id.as_deref().unwrap_or(""),
            round = c.round_number.unwrap_or(0),
        );
        let result = self.inner.chat(request).instrument(span).await;
        let (usage, attempts, cache_hit, error, latency) = match &result {
            Ok(r) => (r.usage, r.attempts, r.cache_hit, None, r.latency),
            Err(e) => (
                Usage::default(),
                e.attempts,
                false,
                Some(e.to_string()),
                started.elapsed(),
            ),
        };
        let record = LlmCallRecord {
            execution_id: c.execution_id.clone(),
            team_id: c.team_id.clone(),
            round_number: c.round_number,
            role: c.role,
            model: self.inner.id().to_string(),
            usage,
            latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
            attempts,
            cache_hit,
            error,
            at: chrono::Utc::now(),
        };
        match &record.error {
            None => tracing::debug!(
                model = %record.model,
                role = %record.role,
                latency_ms = record.latency_ms,
                attempts = record.attempts,
                input_tokens = record.usage.input_tokens,
                output_tokens = record.usage.output_tokens,
                cache_hit = record.cache_hit,
                "llm call done"
            ),
            Some(e) => {
                tracing::warn!(model = %record.model, role = %record.role, attempts = record.attempts, error = %e, "llm call failed")
            }
        }
        self.observers.notify(&record);
        result
    }
}
