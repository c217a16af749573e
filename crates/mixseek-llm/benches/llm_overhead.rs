//! Calls per second and per-call overhead of the LLM layer, against the testkit's fake
//! OpenAI server at 0 ms latency (in process, on 127.0.0.1).
//!
//! Measures, sequentially (one call at a time) and with 32 concurrent callers:
//! * `raw reqwest`: the same POST with a bare reqwest client (the floor: HTTP + fake server);
//! * `ChatModel::chat`: through a registry model (limits, retry loop, parsing, pricing,
//!   observer/ledger);
//! * `mock:` through the trait (the pipeline without HTTP).
//!
//! Per-call overhead = mean time per call through the trait − the same for raw reqwest
//! (sequential: the added latency of one call; 32 concurrent: the added cost per call at
//! full load). The last lines compare with the targets of issue 3 (≥ 5,000 calls/s through
//! the trait with 32 concurrent callers, ≤ 200 µs overhead per call) and say PASS or MISS.
//! Run with `just bench`, or alone with
//! `cargo bench --workspace --profile dev --bench llm_overhead` (optionally `-- N` calls).
//! For manual load tests against a separate process (latency, failures), start the
//! testkit's `mixseek-fake-llm` binary and point `OPENAI_BASE_URL` at it.

use mixseek_config::ProviderSettings;
use mixseek_llm::{ChatModel, ChatRequest, Env, ModelRegistry, RegistryConfig};
use mixseek_testkit::{FakeLlm, Reply};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONCURRENCY: usize = 32;
/// Target of issue 3: calls per second through the trait (32 concurrent callers).
const TARGET_CALLS_PER_S: f64 = 5_000.0;
/// Target of issue 3: overhead of the trait over raw HTTP, per call.
const TARGET_OVERHEAD_US: f64 = 200.0;

/// One row: prints it and returns the time per call in µs and the calls per second.
fn report(name: &str, calls: usize, elapsed: Duration) -> (f64, f64) {
    let per_call_us = elapsed.as_secs_f64() * 1e6 / calls as f64;
    let per_s = calls as f64 / elapsed.as_secs_f64();
    let _ = writeln!(
        std::io::stdout(),
        "{name:<44} {calls:>7} calls  {per_s:>9.0} calls/s  {per_call_us:>8.1} µs/call"
    );
    (per_call_us, per_s)
}

fn verdict(ok: bool) -> &'static str {
    if ok { "PASS" } else { "MISS" }
}

async fn raw_sequential(
    client: &reqwest::Client,
    url: &str,
    body: &serde_json::Value,
    n: usize,
) -> Duration {
    let t = Instant::now();
    for _ in 0..n {
        let r = client
            .post(url)
            .bearer_auth("sk-bench")
            .json(body)
            .send()
            .await
            .expect("send");
        let _v: serde_json::Value = r.json().await.expect("json");
    }
    t.elapsed()
}

async fn trait_sequential(model: &Arc<dyn ChatModel>, req: &ChatRequest, n: usize) -> Duration {
    let t = Instant::now();
    for _ in 0..n {
        model.chat(req).await.expect("chat");
    }
    t.elapsed()
}

async fn raw_concurrent(
    client: &reqwest::Client,
    url: &str,
    body: &serde_json::Value,
    n: usize,
) -> Duration {
    let t = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..CONCURRENCY {
        let (client, url, body) = (client.clone(), url.to_string(), body.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..n / CONCURRENCY {
                let r = client
                    .post(&url)
                    .bearer_auth("sk-bench")
                    .json(&body)
                    .send()
                    .await
                    .expect("send");
                let _v: serde_json::Value = r.json().await.expect("json");
            }
        }));
    }
    for t in tasks {
        t.await.expect("join");
    }
    t.elapsed()
}

async fn trait_concurrent(model: &Arc<dyn ChatModel>, req: &ChatRequest, n: usize) -> Duration {
    let t = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..CONCURRENCY {
        let (model, req) = (model.clone(), req.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..n / CONCURRENCY {
                model.chat(&req).await.expect("chat");
            }
        }));
    }
    for t in tasks {
        t.await.expect("join");
    }
    t.elapsed()
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(4000);
    let n = n.max(CONCURRENCY);
    let fake = FakeLlm::openai().await;
    fake.set_default(Reply::text("ok"));
    let url = fake.base_url();
    let providers = [(
        "openai".to_string(),
        ProviderSettings {
            max_in_flight: 256,
            ..ProviderSettings::default()
        },
    )]
    .into_iter()
    .collect();
    let registry = ModelRegistry::new(RegistryConfig::new().with_providers(providers).with_env(
        Env::from_map([
            ("OPENAI_API_KEY", "sk-bench"),
            ("OPENAI_BASE_URL", url.as_str()),
        ]),
    ))
    .expect("registry");
    let model = registry.model("openai:gpt-4o").expect("model");
    let mock = registry.model("mock:bench").expect("mock");
    let req = ChatRequest::user("Say ok").with_system("You are terse.");
    let body = serde_json::json!({"model": "gpt-4o", "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say ok"}]});
    let client = reqwest::Client::new();
    let chat_url = format!("{url}/chat/completions");

    // Warm up connections and allocators.
    raw_sequential(&client, &chat_url, &body, 200).await;
    trait_sequential(&model, &req, 200).await;

    let _ = writeln!(
        std::io::stdout(),
        "mixseek-llm overhead benchmark ({n} calls per row, fake OpenAI server at 0 ms)"
    );
    let (raw, _) = report(
        "raw reqwest, sequential",
        n,
        raw_sequential(&client, &chat_url, &body, n).await,
    );
    let (via, via_per_s) = report(
        "ChatModel::chat, sequential",
        n,
        trait_sequential(&model, &req, n).await,
    );
    let (raw_c, _) = report(
        &format!("raw reqwest, {CONCURRENCY} concurrent"),
        n,
        raw_concurrent(&client, &chat_url, &body, n).await,
    );
    let (via_c, via_c_per_s) = report(
        &format!("ChatModel::chat, {CONCURRENCY} concurrent"),
        n,
        trait_concurrent(&model, &req, n).await,
    );
    let (mock_us, _) = report(
        "mock: through the trait, sequential",
        n,
        trait_sequential(&mock, &req, n).await,
    );
    report(
        &format!("mock: through the trait, {CONCURRENCY} concurrent"),
        n,
        trait_concurrent(&mock, &req, n).await,
    );
    let overhead = via - raw;
    let overhead_c = via_c - raw_c;
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "pipeline cost without HTTP (mock:): {mock_us:.1} µs/call"
    );
    let _ = writeln!(
        out,
        "sequential:       {via_per_s:>7.0} calls/s through the trait, overhead {overhead:>6.1} µs/call over raw HTTP  [overhead ≤ {TARGET_OVERHEAD_US:.0} µs: {}]",
        verdict(overhead <= TARGET_OVERHEAD_US)
    );
    let _ = writeln!(
        out,
        "{CONCURRENCY} concurrent:    {via_c_per_s:>7.0} calls/s through the trait, overhead {overhead_c:>6.1} µs/call over raw HTTP  [≥ {TARGET_CALLS_PER_S:.0} calls/s: {}; overhead ≤ {TARGET_OVERHEAD_US:.0} µs: {}]",
        verdict(via_c_per_s >= TARGET_CALLS_PER_S),
        verdict(overhead_c <= TARGET_OVERHEAD_US)
    );
    let ledger = registry.ledger().total();
    let _ = writeln!(
        std::io::stdout(),
        "ledger: {} requests booked",
        ledger.requests
    );
}
