//! [`OtlpReceiver`]: an OpenTelemetry collector's OTLP/HTTP traces endpoint (`POST
//! /v1/traces`, JSON encoding) on 127.0.0.1 that keeps every span it receives.

use crate::server::{HttpResponse, HttpServer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One received span, flattened.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedSpan {
    /// 32 hex digits.
    pub trace_id: String,
    /// 16 hex digits.
    pub span_id: String,
    /// 16 hex digits, empty for a root span.
    pub parent_span_id: String,
    /// The span's name.
    pub name: String,
    /// Attributes, each value as JSON (`intValue`s as numbers).
    pub attributes: BTreeMap<String, Value>,
    /// `status.code` (0 unset, 1 ok, 2 error).
    pub status_code: i64,
    /// The `service.name` of its resource.
    pub service: String,
}

/// The headers of one export request.
type Headers = Vec<(String, String)>;

/// A fake OTLP/HTTP receiver.
pub struct OtlpReceiver {
    server: HttpServer,
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
    headers: Arc<Mutex<Vec<Headers>>>,
}

fn value_of(v: &Value) -> Value {
    if let Some(s) = v.get("stringValue") {
        return s.clone();
    }
    if let Some(i) = v.get("intValue") {
        return match i {
            Value::String(s) => s.parse::<i64>().map(Value::from).unwrap_or(Value::Null),
            other => other.clone(),
        };
    }
    v.get("doubleValue")
        .or_else(|| v.get("boolValue"))
        .cloned()
        .unwrap_or(Value::Null)
}

fn flatten(body: &Value, out: &mut Vec<ReceivedSpan>) {
    for rs in body["resourceSpans"].as_array().into_iter().flatten() {
        let service = rs["resource"]["attributes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["key"] == "service.name")
            .and_then(|a| a["value"]["stringValue"].as_str())
            .unwrap_or_default()
            .to_string();
        for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
            for s in ss["spans"].as_array().into_iter().flatten() {
                let text = |k: &str| s[k].as_str().unwrap_or_default().to_string();
                out.push(ReceivedSpan {
                    trace_id: text("traceId"),
                    span_id: text("spanId"),
                    parent_span_id: text("parentSpanId"),
                    name: text("name"),
                    attributes: s["attributes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|a| {
                            Some((a["key"].as_str()?.to_string(), value_of(&a["value"])))
                        })
                        .collect(),
                    status_code: s["status"]["code"].as_i64().unwrap_or(0),
                    service: service.clone(),
                });
            }
        }
    }
}

impl OtlpReceiver {
    /// Starts the receiver on a free port.
    pub async fn start() -> Self {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let headers = Arc::new(Mutex::new(Vec::new()));
        let (s, h) = (spans.clone(), headers.clone());
        let server = HttpServer::start(0, move |req| {
            let (s, h) = (s.clone(), h.clone());
            async move {
                if req.method != "POST" || req.path != "/v1/traces" {
                    return HttpResponse::text(404, "not found");
                }
                let body = req.json();
                if body.is_null() {
                    return HttpResponse::text(400, "not JSON");
                }
                if let Ok(mut spans) = s.lock() {
                    flatten(&body, &mut spans);
                }
                if let Ok(mut hs) = h.lock() {
                    hs.push(req.headers.clone());
                }
                HttpResponse::json(200, &serde_json::json!({}))
            }
        })
        .await
        .expect("start the OTLP receiver");
        Self {
            server,
            spans,
            headers,
        }
    }

    /// The base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub fn endpoint(&self) -> String {
        self.server.uri()
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.spans.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The headers of every export request received so far.
    pub fn request_headers(&self) -> Vec<Headers> {
        self.headers.lock().map(|h| h.clone()).unwrap_or_default()
    }
}
