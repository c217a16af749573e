//! Wrappers around provider models: [`FallbackModel`] (try the next model when one fails)
//! and [`ObservedModel`] (report one call record per call to the observers).

use crate::error::LlmError;
use crate::model::ChatModel;
use crate::observer::Observers;
use crate::types::{ChatRequest, ChatResponse, GenerationParams, Message};
use mixseek_core::{LlmCallRecord, Usage};
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

/// Tries each model in order; the first success wins. Attempts add up over all models.
/// The models share the call's time limit (the request's timeout, else the first model's
/// default): each fallback gets the time left, so a call never takes longer than its limit.
pub(crate) struct FallbackModel {
    id: String,
    chain: Vec<Arc<dyn ChatModel>>,
}

impl FallbackModel {
    pub(crate) fn new(id: String, chain: Vec<Arc<dyn ChatModel>>) -> Self {
        Self { id, chain }
    }
}

#[async_trait::async_trait]
impl ChatModel for FallbackModel {
    fn id(&self) -> &str {
        &self.id
    }

    fn default_timeout(&self) -> Option<std::time::Duration> {
        self.chain.first().and_then(|m| m.default_timeout())
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let limit = request.timeout.or_else(|| self.default_timeout());
        // A limit too long to represent (`Duration::MAX`) is no limit.
        let deadline = limit.and_then(|l| tokio::time::Instant::now().checked_add(l));
        let mut attempts = 0u32;
        let mut last: Option<LlmError> = None;
        for (i, model) in self.chain.iter().enumerate() {
            let outcome = match deadline {
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                    if left.is_zero() {
                        tracing::warn!(
                            model = model.id(),
                            "no time left in the call's time limit for the next fallback model"
                        );
                        break;
                    }
                    let mut r = request.clone();
                    r.timeout = Some(left);
                    model.chat(&r).await
                }
                None => model.chat(request).await,
            };
            match outcome {
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
    pub(crate) fn new(inner: Arc<dyn ChatModel>, observers: Arc<Observers>) -> Self {
        Self { inner, observers }
    }
}

/// Whether prompts and answers are recorded on the `llm_call` spans (for an exporter in its
/// full mode; off by default, and then nothing is serialized).
static TRACE_TEXTS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// One message in the GenAI conventions' shape: `role` and `parts` (text, tool calls).
fn genai_message(
    role: &str,
    text: Option<&str>,
    calls: &[crate::types::ToolCall],
) -> serde_json::Value {
    let mut parts: Vec<serde_json::Value> = text
        .into_iter()
        .map(|t| serde_json::json!({"type": "text", "content": t}))
        .collect();
    parts.extend(calls.iter().map(|c| {
        serde_json::json!({"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments})
    }));
    serde_json::json!({"role": role, "parts": parts})
}

/// Records prompts and answers on every `llm_call` span from now on (`mixseek --logfire`).
pub fn set_trace_texts(on: bool) {
    TRACE_TEXTS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Whether the `llm_call` spans carry the OpenTelemetry GenAI attributes (`gen_ai.*`, the
/// call's outcome). Off by default: a log line shows the span's model, role, team and round,
/// and formatting the other ten fields at every call would be a third of the spans' cost.
static GENAI_ATTRIBUTES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Puts the GenAI attributes on every `llm_call` span from now on (an exporter reads them:
/// `mixseek --logfire`).
pub fn set_genai_attributes(on: bool) {
    GENAI_ATTRIBUTES.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// The request's GenAI attributes on `span`.
fn record_request(span: &tracing::Span, provider: &str, model: &str, p: &GenerationParams) {
    span.record("gen_ai.operation.name", "chat");
    span.record("gen_ai.provider.name", provider);
    span.record("gen_ai.request.model", model);
    span.record("gen_ai.request.temperature", p.temperature);
    span.record("gen_ai.request.max_tokens", p.max_tokens);
}

/// The call's outcome on its span: token counts, the error kind, and, when texts are traced,
/// the messages in and out (the GenAI conventions' `role` / `parts` shape).
fn record_on_span(
    span: &tracing::Span,
    request: &ChatRequest,
    result: &Result<ChatResponse, LlmError>,
) {
    match result {
        Ok(r) => {
            span.record("gen_ai.usage.input_tokens", r.usage.input_tokens);
            span.record("gen_ai.usage.output_tokens", r.usage.output_tokens);
        }
        Err(e) => {
            span.record("error.type", e.kind.to_string());
            span.record("otel.status_code", "ERROR");
        }
    }
    if !TRACE_TEXTS.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let mut input = Vec::with_capacity(request.messages.len() + 1);
    if let Some(s) = &request.system {
        input.push(genai_message("system", Some(s), &[]));
    }
    for m in &request.messages {
        input.push(match m {
            Message::User { content } => genai_message("user", Some(content), &[]),
            Message::Assistant {
                content,
                tool_calls,
            } => genai_message("assistant", content.as_deref(), tool_calls),
            Message::Tool {
                call_id, content, ..
            } => serde_json::json!({"role": "tool", "parts": [
                {"type": "tool_call_response", "id": call_id, "response": content}
            ]}),
        });
    }
    span.record(
        "gen_ai.input.messages",
        serde_json::Value::Array(input).to_string(),
    );
    if let Ok(r) = result {
        let out = genai_message("assistant", r.text.as_deref(), &r.tool_calls);
        span.record("gen_ai.output.messages", format!("[{out}]"));
    }
}

#[async_trait::async_trait]
impl ChatModel for ObservedModel {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn default_timeout(&self) -> Option<std::time::Duration> {
        self.inner.default_timeout()
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let c = &request.caller;
        let id = self.inner.id();
        let (provider, model) = id.split_once(':').unwrap_or(("", id));
        let p = &request.params;
        // Attributes of the OpenTelemetry GenAI conventions (an exporter reads them; the log
        // shows them as the call's context).
        let span = tracing::info_span!(
            "llm_call",
            model = id,
            role = %c.role,
            team = c.team_id.as_deref().unwrap_or(""),
            round = c.round_number.unwrap_or(0),
            "gen_ai.operation.name" = tracing::field::Empty,
            "gen_ai.provider.name" = tracing::field::Empty,
            "gen_ai.request.model" = tracing::field::Empty,
            "gen_ai.request.temperature" = tracing::field::Empty,
            "gen_ai.request.max_tokens" = tracing::field::Empty,
            "gen_ai.usage.input_tokens" = tracing::field::Empty,
            "gen_ai.usage.output_tokens" = tracing::field::Empty,
            "gen_ai.input.messages" = tracing::field::Empty,
            "gen_ai.output.messages" = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
            "otel.status_code" = tracing::field::Empty,
        );
        let exported = GENAI_ATTRIBUTES.load(std::sync::atomic::Ordering::Relaxed);
        if exported {
            record_request(&span, provider, model, p);
        }
        let result = self.inner.chat(request).instrument(span.clone()).await;
        if exported {
            record_on_span(&span, request, &result);
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use std::sync::Mutex;
    use std::time::Duration;

    /// A model that records the time limit it was given, takes `takes` and fails or answers.
    struct Timed {
        id: String,
        takes: Duration,
        default: Option<Duration>,
        fail: bool,
        seen: Mutex<Vec<Option<Duration>>>,
    }

    impl Timed {
        fn new(id: &str, takes_ms: u64, default_ms: Option<u64>, fail: bool) -> Arc<Self> {
            Arc::new(Self {
                id: id.to_string(),
                takes: Duration::from_millis(takes_ms),
                default: default_ms.map(Duration::from_millis),
                fail,
                seen: Mutex::new(Vec::new()),
            })
        }
        fn seen(&self) -> Vec<Option<Duration>> {
            self.seen.lock().map(|g| g.clone()).unwrap_or_default()
        }
    }

    #[async_trait::async_trait]
    impl ChatModel for Timed {
        fn id(&self) -> &str {
            &self.id
        }
        fn default_timeout(&self) -> Option<Duration> {
            self.default
        }
        async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
            if let Ok(mut g) = self.seen.lock() {
                g.push(request.timeout);
            }
            tokio::time::sleep(self.takes).await;
            if self.fail {
                return Err(
                    LlmError::new(ErrorKind::Server, "p", &self.id, "down").with_attempts(2)
                );
            }
            Ok(ChatResponse {
                text: Some("ok".into()),
                tool_calls: Vec::new(),
                usage: Usage::default(),
                finish_reason: crate::types::FinishReason::Stop,
                latency: self.takes,
                attempts: 1,
                model: self.id.clone(),
                cache_hit: false,
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn each_fallback_gets_the_time_the_call_has_left() {
        let a = Timed::new("p:a", 600, Some(10_000), true);
        let b = Timed::new("p:b", 300, Some(10_000), true);
        let c = Timed::new("p:c", 10, Some(10_000), false);
        let chain: Vec<Arc<dyn ChatModel>> = vec![a.clone(), b.clone(), c.clone()];
        let m = FallbackModel::new("p:a".into(), chain);
        let req = ChatRequest::user("x").with_timeout(Duration::from_secs(1));
        let r = m.chat(&req).await.expect("the third answers");
        assert_eq!((r.model.as_str(), r.attempts), ("p:c", 5));
        assert_eq!(a.seen(), vec![Some(Duration::from_secs(1))]);
        assert_eq!(b.seen(), vec![Some(Duration::from_millis(400))]);
        assert_eq!(c.seen(), vec![Some(Duration::from_millis(100))]);
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_request_timeout_the_first_models_default_is_shared() {
        let a = Timed::new("p:a", 700, Some(1_000), true);
        let b = Timed::new("p:b", 10, Some(60_000), false);
        let chain: Vec<Arc<dyn ChatModel>> = vec![a.clone(), b.clone()];
        let m = FallbackModel::new("p:a".into(), chain);
        m.chat(&ChatRequest::user("x")).await.expect("answer");
        assert_eq!(a.seen(), vec![Some(Duration::from_secs(1))]);
        assert_eq!(b.seen(), vec![Some(Duration::from_millis(300))]);
    }

    #[tokio::test(start_paused = true)]
    async fn no_fallback_is_tried_once_the_time_is_up() {
        let a = Timed::new("p:a", 1_000, None, true);
        let b = Timed::new("p:b", 10, None, false);
        let chain: Vec<Arc<dyn ChatModel>> = vec![a.clone(), b.clone()];
        let m = FallbackModel::new("p:a".into(), chain);
        let err = m
            .chat(&ChatRequest::user("x").with_timeout(Duration::from_secs(1)))
            .await
            .expect_err("no time left");
        assert_eq!((err.model.as_str(), err.attempts), ("p:a", 2));
        assert!(b.seen().is_empty(), "the fallback must not be called");
    }

    /// The names of the fields the `llm_call` spans got, at creation and recorded later.
    #[derive(Clone, Default)]
    struct SpanFields(Arc<Mutex<Vec<String>>>);

    impl tracing::field::Visit for SpanFields {
        fn record_debug(&mut self, field: &tracing::field::Field, _: &dyn std::fmt::Debug) {
            if let Ok(mut names) = self.0.lock() {
                names.push(field.name().to_string());
            }
        }
    }

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for SpanFields {
        fn on_new_span(
            &self,
            attrs: &tracing::span::Attributes<'_>,
            _: &tracing::span::Id,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            if attrs.metadata().name() == "llm_call" {
                attrs.record(&mut self.clone());
            }
        }
        fn on_record(
            &self,
            _: &tracing::span::Id,
            values: &tracing::span::Record<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            values.record(&mut self.clone());
        }
    }

    #[tokio::test]
    async fn genai_attributes_go_on_the_span_only_for_an_exporter() {
        use tracing_subscriber::layer::SubscriberExt;
        let fields = SpanFields::default();
        let _guard =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(fields.clone()));
        let model = ObservedModel::new(
            Timed::new("mock:a", 0, None, false),
            Arc::new(Observers {
                ledger: Arc::default(),
                extra: Vec::new(),
            }),
        );
        let names = |f: &SpanFields| f.0.lock().map(|n| n.clone()).unwrap_or_default();
        model.chat(&ChatRequest::user("x")).await.expect("answer");
        let plain = names(&fields);
        assert!(plain.iter().any(|n| n == "model"), "{plain:?}");
        assert!(!plain.iter().any(|n| n.starts_with("gen_ai.")), "{plain:?}");

        set_genai_attributes(true);
        model.chat(&ChatRequest::user("x")).await.expect("answer");
        set_genai_attributes(false);
        let exported = names(&fields);
        for attr in [
            "gen_ai.operation.name",
            "gen_ai.provider.name",
            "gen_ai.request.model",
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.output_tokens",
        ] {
            assert!(exported.iter().any(|n| n == attr), "{attr}: {exported:?}");
        }
    }
}
