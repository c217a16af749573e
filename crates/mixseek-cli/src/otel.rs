//! OpenTelemetry export of mixseek's spans over OTLP/HTTP (JSON encoding), the counterpart of
//! the original's Logfire integration: `--logfire` (full: prompt and answer texts too),
//! `--logfire-metadata` (no texts), `--logfire-http` (full; HTTP bodies are not captured), or
//! `LOGFIRE_ENABLED=1` with `LOGFIRE_PRIVACY_MODE` (`full` / `metadata_only`, the default).
//! Off unless asked: the layer is not installed, so it costs nothing.
//!
//! Where spans go: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL), else
//! `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`, else `http://localhost:4318/v1/traces`;
//! `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`) are sent with each batch; `OTEL_SERVICE_NAME`
//! names the service (default `mixseek`). Only `http/json` is spoken.
//!
//! The layer turns every `mixseek*` span into an OTLP span (ids, parent, times, fields as
//! attributes; GenAI spans are named `{operation} {model or tool}`, `otel.name` renames any
//! span, `otel.status_code = "ERROR"` marks a failure), masks
//! string attributes as every log line is masked (`redact.rs`: API keys, and personal data
//! once a run's `[privacy] mask_pii` is on), and a thread posts the finished spans in
//! batches. [`shutdown`] sends what is left. Prompt and answer texts are on the spans only in
//! the full mode (`mixseek_llm::set_trace_texts`).

use serde_json::{Value, json};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tracing::span::{Attributes, Id, Record};
use tracing::{Subscriber, field::Field};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// What the spans carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Prompt and answer texts too (masked when `[privacy] mask_pii` is on).
    Full,
    /// Names, ids, models, token counts, timings; no texts.
    MetadataOnly,
}

/// The export settings from the flags and the environment; `None`: off.
pub(crate) fn resolve(
    logfire: bool,
    metadata: bool,
    http: bool,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Mode>, String> {
    match (logfire, metadata, http) {
        (false, false, false) => {}
        (true, false, false) | (false, false, true) => return Ok(Some(Mode::Full)),
        (false, true, false) => return Ok(Some(Mode::MetadataOnly)),
        _ => {
            return Err(
                "Only one of --logfire, --logfire-metadata, or --logfire-http can be specified."
                    .into(),
            );
        }
    }
    if env("LOGFIRE_ENABLED").as_deref() != Some("1") {
        return Ok(None);
    }
    Ok(Some(match env("LOGFIRE_PRIVACY_MODE").as_deref() {
        Some("full") => Mode::Full,
        _ => Mode::MetadataOnly,
    }))
}

/// Where and how the batches go.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    url: String,
    headers: Vec<(String, String)>,
    service: String,
}

impl Target {
    /// From the standard `OTEL_*` variables.
    pub(crate) fn from_env(env: impl Fn(&str) -> Option<String>) -> Self {
        let url = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| {
                let base = env("OTEL_EXPORTER_OTLP_ENDPOINT")
                    .filter(|u| !u.trim().is_empty())
                    .unwrap_or_else(|| "http://localhost:4318".into());
                format!("{}/v1/traces", base.trim_end_matches('/'))
            });
        let headers = env("OTEL_EXPORTER_OTLP_HEADERS")
            .unwrap_or_default()
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .filter(|(k, _)| !k.is_empty())
            .collect();
        if let Some(p) = env("OTEL_EXPORTER_OTLP_PROTOCOL").filter(|p| p != "http/json") {
            tracing::warn!(protocol = %p, "OTEL_EXPORTER_OTLP_PROTOCOL: mixseek sends http/json only");
        }
        Self {
            url,
            headers,
            service: env("OTEL_SERVICE_NAME").unwrap_or_else(|| "mixseek".into()),
        }
    }
}

/// The exporter's queue and its thread, for [`shutdown`].
static EXPORTER: OnceLock<Mutex<Option<Exporter>>> = OnceLock::new();

struct Exporter {
    tx: mpsc::Sender<Value>,
    thread: std::thread::JoinHandle<()>,
}

/// A span being recorded.
struct SpanData {
    trace_id: u128,
    span_id: u64,
    parent: Option<u64>,
    name: String,
    start: u128,
    attributes: Vec<(String, Value)>,
    error: bool,
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(now_nanos());
    h.finish().max(1)
}

/// The tracing layer.
pub(crate) struct OtelLayer;

/// Collects a span's fields as OTLP attribute values.
struct Fields<'a>(&'a mut SpanData);

impl Fields<'_> {
    fn put(&mut self, field: &Field, value: Value) {
        let key = field.name();
        match key {
            "otel.name" => {
                if let Value::String(s) = value {
                    self.0.name = s;
                }
            }
            "otel.status_code" => self.0.error = value == "ERROR",
            _ => {
                let attrs = &mut self.0.attributes;
                match attrs.iter_mut().find(|(k, _)| k == key) {
                    Some(slot) => slot.1 = value,
                    None => attrs.push((key.to_string(), value)),
                }
            }
        }
    }
}

impl tracing::field::Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, json!(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, json!(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, json!(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, json!(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, json!(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, json!(format!("{value:?}")));
    }
}

impl<S> Layer<S> for OtelLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let parent = span.parent().and_then(|p| {
            p.extensions()
                .get::<SpanData>()
                .map(|d| (d.trace_id, d.span_id))
        });
        let mut data = SpanData {
            trace_id: parent.map_or_else(
                || (u128::from(random_u64()) << 64) | u128::from(random_u64()),
                |p| p.0,
            ),
            span_id: random_u64(),
            parent: parent.map(|p| p.1),
            name: span.name().to_string(),
            start: now_nanos(),
            attributes: Vec::new(),
            error: false,
        };
        attrs.record(&mut Fields(&mut data));
        span.extensions_mut().insert(data);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(data) = span.extensions_mut().get_mut::<SpanData>()
        {
            values.record(&mut Fields(data));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(data) = span.extensions_mut().remove::<SpanData>() else {
            return;
        };
        if let Some(Ok(e)) = EXPORTER.get().map(|e| e.lock())
            && let Some(exporter) = e.as_ref()
        {
            let _ = exporter.tx.send(to_otlp(data, now_nanos()));
        }
    }
}

/// One OTLP attribute value (int64 as a string, as the JSON encoding wants).
fn any_value(v: &Value) -> Value {
    match v {
        Value::Bool(b) => json!({"boolValue": b}),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"intValue": n.to_string()}),
        Value::Number(n) => json!({"doubleValue": n.as_f64()}),
        // API keys, and personal data once a run's `[privacy]` is on, as in every log line.
        Value::String(s) => json!({"stringValue": crate::redact::text(s).to_string()}),
        other => json!({"stringValue": other.to_string()}),
    }
}

/// The GenAI conventions' span name, `{operation} {model or tool}` (`chat gpt-4o`,
/// `execute_tool helper`), for a span that carries those attributes; else its own name.
/// Built here, when exporting, so that a run without an exporter never formats it.
fn genai_name(d: &SpanData) -> Option<String> {
    let attr = |k: &str| {
        d.attributes
            .iter()
            .find(|(key, _)| key == k)
            .and_then(|(_, v)| v.as_str())
    };
    let op = attr("gen_ai.operation.name")?;
    let target = attr("gen_ai.request.model").or_else(|| attr("gen_ai.tool.name"))?;
    Some(format!("{op} {target}"))
}

fn to_otlp(d: SpanData, end: u128) -> Value {
    let name = genai_name(&d).unwrap_or_else(|| d.name.clone());
    let attributes: Vec<Value> = d
        .attributes
        .iter()
        .map(|(k, v)| json!({"key": k, "value": any_value(v)}))
        .collect();
    json!({
        "traceId": format!("{:032x}", d.trace_id),
        "spanId": format!("{:016x}", d.span_id),
        "parentSpanId": d.parent.map(|p| format!("{p:016x}")).unwrap_or_default(),
        "name": name,
        "kind": 1,
        "startTimeUnixNano": d.start.to_string(),
        "endTimeUnixNano": end.to_string(),
        "attributes": attributes,
        "status": {"code": if d.error { 2 } else { 0 }},
    })
}

/// Posts `spans` as one OTLP/HTTP JSON request.
fn post(
    client: &reqwest::Client,
    rt: &tokio::runtime::Runtime,
    target: &Target,
    spans: Vec<Value>,
) {
    let body = json!({"resourceSpans": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": target.service}},
            {"key": "service.version", "value": {"stringValue": env!("CARGO_PKG_VERSION")}},
        ]},
        "scopeSpans": [{"scope": {"name": "mixseek", "version": env!("CARGO_PKG_VERSION")}, "spans": spans}],
    }]});
    let mut req = client.post(&target.url).json(&body);
    for (k, v) in &target.headers {
        req = req.header(k.as_str(), v.as_str());
    }
    // The request is built inside the runtime: reqwest arms its timer as it starts.
    match rt.block_on(async move { req.timeout(Duration::from_secs(10)).send().await }) {
        Ok(r) if r.status().is_success() => {}
        Ok(r) => eprintln_once(&format!(
            "the OTLP endpoint {} answered {} to a batch of spans",
            target.url,
            r.status()
        )),
        Err(e) => eprintln_once(&format!(
            "cannot send spans to the OTLP endpoint {}: {}",
            target.url,
            e.without_url()
        )),
    }
}

/// The exporter's own failures: one warning on stderr per process, never fatal.
fn eprintln_once(message: &str) {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("WARNING: {message}");
        }
    });
}

/// Installs the exporter thread; returns the layer to add to the subscriber.
pub(crate) fn install(mode: Mode, target: Target) -> Option<OtelLayer> {
    tracing::debug!(?mode, url = %target.url, "exporting spans over OTLP");
    let (tx, rx) = mpsc::channel::<Value>();
    let thread = std::thread::Builder::new()
        .name("mixseek-otlp".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            let client = reqwest::Client::new();
            let mut batch = Vec::new();
            loop {
                match rx.recv_timeout(Duration::from_millis(500)) {
                    Ok(span) => {
                        batch.push(span);
                        if batch.len() >= 512 {
                            post(&client, &rt, &target, std::mem::take(&mut batch));
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if !batch.is_empty() {
                            post(&client, &rt, &target, std::mem::take(&mut batch));
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        if !batch.is_empty() {
                            post(&client, &rt, &target, std::mem::take(&mut batch));
                        }
                        return;
                    }
                }
            }
        })
        .ok()?;
    let _ = EXPORTER.set(Mutex::new(Some(Exporter { tx, thread })));
    Some(OtelLayer)
}

/// Sends the spans not sent yet and stops the exporter (at most a few seconds).
pub(crate) fn shutdown() {
    let Some(Ok(mut guard)) = EXPORTER.get().map(|e| e.lock()) else {
        return;
    };
    if let Some(Exporter { tx, thread }) = guard.take() {
        drop(tx);
        let _ = thread.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_variables() {
        let none = |_: &str| None;
        assert_eq!(resolve(false, false, false, none), Ok(None));
        assert_eq!(resolve(true, false, false, none), Ok(Some(Mode::Full)));
        assert_eq!(
            resolve(false, true, false, none),
            Ok(Some(Mode::MetadataOnly))
        );
        assert_eq!(resolve(false, false, true, none), Ok(Some(Mode::Full)));
        assert!(resolve(true, true, false, none).is_err_and(|e| e
            == "Only one of --logfire, --logfire-metadata, or --logfire-http can be specified."));
        let enabled = |k: &str| (k == "LOGFIRE_ENABLED").then(|| "1".to_string());
        assert_eq!(
            resolve(false, false, false, enabled),
            Ok(Some(Mode::MetadataOnly))
        );
        let full = |k: &str| match k {
            "LOGFIRE_ENABLED" => Some("1".to_string()),
            "LOGFIRE_PRIVACY_MODE" => Some("full".to_string()),
            _ => None,
        };
        assert_eq!(resolve(false, false, false, full), Ok(Some(Mode::Full)));
    }

    #[test]
    fn endpoints_from_the_standard_variables() {
        let t = Target::from_env(|k| match k {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://collector:4318/".into()),
            "OTEL_EXPORTER_OTLP_HEADERS" => Some("a=1, b = two".into()),
            _ => None,
        });
        assert_eq!(t.url, "http://collector:4318/v1/traces");
        assert_eq!(
            t.headers,
            vec![("a".into(), "1".into()), ("b".into(), "two".into())]
        );
        assert_eq!(t.service, "mixseek");
        let t = Target::from_env(|k| {
            (k == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").then(|| "http://x/traces".into())
        });
        assert_eq!(t.url, "http://x/traces");
    }

    #[test]
    fn spans_in_otlp_json() {
        let d = SpanData {
            trace_id: 1,
            span_id: 2,
            parent: Some(3),
            name: "llm_call".into(),
            start: 10,
            attributes: vec![
                ("gen_ai.operation.name".into(), json!("chat")),
                ("gen_ai.request.model".into(), json!("gpt")),
                ("gen_ai.usage.input_tokens".into(), json!(12)),
                ("gen_ai.request.temperature".into(), json!(0.5)),
                ("ok".into(), json!(true)),
            ],
            error: true,
        };
        let v = to_otlp(d, 20);
        assert_eq!(v["traceId"], "00000000000000000000000000000001");
        assert_eq!(v["parentSpanId"], "0000000000000003");
        assert_eq!(v["name"], "chat gpt");
        assert_eq!(v["attributes"][2]["value"], json!({"intValue": "12"}));
        assert_eq!(v["attributes"][3]["value"], json!({"doubleValue": 0.5}));
        assert_eq!(v["status"]["code"], 2);
        assert_eq!(v["endTimeUnixNano"], "20");
    }
}
