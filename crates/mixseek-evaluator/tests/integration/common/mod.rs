//! A fake OpenAI server that answers by metric: each request goes to the first route whose key
//! occurs in its system prompt (or its model), so concurrent metrics get their own scripted
//! answers whatever order they arrive in. It records every request and the largest number
//! of requests in flight at once.

#![allow(dead_code)]

use mixseek_config::ProviderSettings;
use mixseek_config::{EvaluatorSettings, MetricSettings};
use mixseek_evaluator::Evaluator;
use mixseek_llm::{Env, ModelRegistry, RegistryConfig};
use mixseek_prompt::{FixedClock, PromptBuilder, PromptBuilderSettings};
use mixseek_testkit::{HttpResponse, HttpServer, Reply, Wire, respond};
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const OPENAI_KEY: &str = "sk-test-0123456789abcdefghijkl";
pub const ANTHROPIC_KEY: &str = "sk-ant-test-0123456789abcdef";

#[derive(Default)]
struct State {
    routes: Mutex<Vec<(String, VecDeque<Reply>, Reply)>>,
    requests: Mutex<Vec<Value>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    counter: AtomicUsize,
}

struct Guard<'a>(&'a AtomicUsize);
impl Drop for Guard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The routed fake server.
pub struct Routed {
    server: HttpServer,
    state: Arc<State>,
}

pub fn system_of(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "system"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

pub fn score(s: f64) -> Reply {
    Reply::json(json!({"score": s, "evaluator_comment": format!("comment for {s}")}))
}

impl Routed {
    pub async fn start() -> Self {
        let state = Arc::new(State::default());
        let s = state.clone();
        let server = HttpServer::start(0, move |req| {
            let s = s.clone();
            async move {
                let now = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                s.max_in_flight.fetch_max(now, Ordering::SeqCst);
                let _g = Guard(&s.in_flight);
                let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
                s.requests.lock().expect("lock").push(body.clone());
                let system = system_of(&body);
                let model = body["model"].as_str().unwrap_or_default().to_string();
                let reply = {
                    let mut routes = s.routes.lock().expect("lock");
                    routes
                        .iter_mut()
                        .find(|(key, _, _)| system.contains(key.as_str()) || model == *key)
                        .map(|(_, queue, default)| queue.pop_front().unwrap_or_else(|| default.clone()))
                };
                let Some(reply) = reply else {
                    return HttpResponse::json(404, &json!({"error": {"message": format!("no route for system prompt {system:?}")}}));
                };
                let n = s.counter.fetch_add(1, Ordering::SeqCst);
                respond(Wire::OpenAi, reply, &body, n, true).await
            }
        })
        .await
        .expect("server");
        Self { server, state }
    }

    /// Requests whose system prompt contains `key` (or whose model is `key`) get `replies` in
    /// order, then `default`.
    pub fn route(&self, key: &str, replies: Vec<Reply>, default: Reply) -> &Self {
        self.state
            .routes
            .lock()
            .expect("lock")
            .push((key.to_string(), replies.into(), default));
        self
    }

    /// Every request gets `reply`.
    pub fn always(&self, key: &str, reply: Reply) -> &Self {
        self.route(key, vec![], reply)
    }

    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.uri())
    }

    pub fn requests(&self) -> Vec<Value> {
        self.state.requests.lock().expect("lock").clone()
    }

    /// Requests whose system prompt contains `key`.
    pub fn requests_for(&self, key: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|b| system_of(b).contains(key))
            .collect()
    }

    pub fn max_concurrent(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }
}

/// Millisecond backoff so retry paths stay fast.
pub fn fast() -> ProviderSettings {
    ProviderSettings {
        backoff_initial_seconds: 0.001,
        backoff_max_seconds: 0.01,
        timeout_seconds: 20.0,
        max_attempts: 1,
        ..ProviderSettings::default()
    }
}

/// A registry whose `openai` provider is `server` (and `anthropic`, when given, another fake).
pub fn registry(openai: &str, anthropic: Option<&str>) -> Arc<ModelRegistry> {
    let mut providers = BTreeMap::new();
    providers.insert("openai".to_string(), fast());
    let mut env = vec![
        ("OPENAI_API_KEY".to_string(), OPENAI_KEY.to_string()),
        ("OPENAI_BASE_URL".to_string(), openai.to_string()),
    ];
    if let Some(url) = anthropic {
        providers.insert(
            "anthropic".to_string(),
            ProviderSettings {
                base_url: Some(url.to_string()),
                ..fast()
            },
        );
        env.push(("ANTHROPIC_API_KEY".to_string(), ANTHROPIC_KEY.to_string()));
    }
    Arc::new(
        ModelRegistry::new(
            RegistryConfig::new()
                .with_providers(providers)
                .with_env(Env::from_map(env)),
        )
        .expect("registry"),
    )
}

/// A prompt builder with the default templates, UTC and a fixed clock.
pub fn prompts() -> Arc<PromptBuilder> {
    prompts_with(&PromptBuilderSettings::default())
}

pub fn prompts_with(settings: &PromptBuilderSettings) -> Arc<PromptBuilder> {
    let clock = FixedClock("2025-11-25T05:30:00Z".parse().expect("time"));
    Arc::new(
        PromptBuilder::with_zone(settings, chrono_tz::Tz::UTC)
            .expect("builder")
            .with_clock(Arc::new(clock)),
    )
}

/// A custom LLM metric whose instruction is `metric:{name}` (so the server can route it).
pub fn custom(name: &str, weight: Option<f64>) -> MetricSettings {
    MetricSettings {
        name: name.into(),
        weight,
        system_instruction: Some(format!("metric:{name}")),
        ..Default::default()
    }
}

pub fn settings(metrics: Vec<MetricSettings>) -> EvaluatorSettings {
    EvaluatorSettings {
        default_model: "openai:judge".into(),
        metrics,
        ..Default::default()
    }
}

pub fn evaluator(server: &Routed, s: EvaluatorSettings) -> Evaluator {
    Evaluator::new(s, registry(&server.base_url(), None), prompts()).expect("evaluator")
}

/// Guards a test against hanging forever (not a timing assertion).
pub async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("the evaluation did not finish")
}
