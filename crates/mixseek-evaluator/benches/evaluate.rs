//! Evaluation latency against a fake OpenAI server on 127.0.0.1 (`cargo bench --workspace
//! --profile dev --bench evaluate`; the dev profile reuses the test build):
//!
//! 1. 4 LLM-judge metrics, every judge answer delayed 100 ms, all metrics concurrent
//!    (the default): one evaluation should take about one latency, not four;
//! 2. the same with `max_concurrent_metrics = 1` (sequential, as the original), for contrast;
//! 3. 4 metrics at zero latency: the evaluator's own overhead per evaluation.

use mixseek_config::ProviderSettings;
use mixseek_config::{EvaluatorSettings, MetricSettings};
use mixseek_evaluator::{EvaluationRequest, Evaluator};
use mixseek_llm::{Env, ModelRegistry, RegistryConfig};
use mixseek_prompt::{PromptBuilder, PromptBuilderSettings};
use mixseek_testkit::{FakeLlm, Reply};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

const LATENCY: Duration = Duration::from_millis(100);

fn settings(max_concurrent: Option<u32>) -> EvaluatorSettings {
    let metrics = ["ClarityCoherence", "Coverage", "Relevance", "Novelty"]
        .iter()
        .map(|n| MetricSettings {
            name: n.to_string(),
            weight: Some(0.25),
            system_instruction: (*n == "Novelty")
                .then(|| "Rate the novelty of the submission.".to_string()),
            ..Default::default()
        })
        .collect();
    EvaluatorSettings {
        default_model: "openai:judge".into(),
        metrics,
        max_concurrent_metrics: max_concurrent,
        ..Default::default()
    }
}

fn evaluator(fake: &FakeLlm, max_concurrent: Option<u32>) -> Evaluator {
    let mut providers = BTreeMap::new();
    providers.insert(
        "openai".to_string(),
        ProviderSettings {
            max_attempts: 1,
            ..ProviderSettings::default()
        },
    );
    let url = fake.base_url();
    let env = Env::from_map([
        ("OPENAI_API_KEY", "sk-bench-0123456789abcdef"),
        ("OPENAI_BASE_URL", url.as_str()),
    ]);
    let registry = ModelRegistry::new(
        RegistryConfig::new()
            .with_providers(providers)
            .with_env(env),
    )
    .expect("registry");
    let prompts = PromptBuilder::with_zone(&PromptBuilderSettings::default(), chrono_tz::Tz::UTC)
        .expect("prompt builder");
    Evaluator::new(
        settings(max_concurrent),
        Arc::new(registry),
        Arc::new(prompts),
    )
    .expect("evaluator")
}

struct Stats {
    mean: Duration,
    min: Duration,
    max: Duration,
}

async fn measure(ev: &Evaluator, iterations: u32) -> Stats {
    let request = EvaluationRequest {
        team_id: Some("bench".into()),
        ..EvaluationRequest::new(
            "Explain the borrow checker.",
            "It checks references at compile time.",
        )
    };
    // Warm-up: connections, schema compilation.
    ev.evaluate(&request).await.expect("warm-up evaluation");
    let mut times = Vec::with_capacity(iterations as usize);
    for _ in 0..iterations {
        let start = Instant::now();
        let out = ev.evaluate(&request).await.expect("evaluation");
        times.push(start.elapsed());
        assert_eq!(out.score_details.metrics.len(), 4);
    }
    let total: Duration = times.iter().sum();
    Stats {
        mean: total / iterations,
        min: times.iter().copied().min().unwrap_or_default(),
        max: times.iter().copied().max().unwrap_or_default(),
    }
}

fn report(label: &str, s: &Stats, latency: Option<Duration>) {
    let ratio = latency
        .map(|l| {
            format!(
                "  = {:.2} × judge latency",
                s.mean.as_secs_f64() / l.as_secs_f64()
            )
        })
        .unwrap_or_default();
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "{label:<58} mean {:>8.2} ms  min {:>8.2} ms  max {:>8.2} ms{ratio}",
        s.mean.as_secs_f64() * 1e3,
        s.min.as_secs_f64() * 1e3,
        s.max.as_secs_f64() * 1e3
    );
}

#[tokio::main]
async fn main() {
    let slow = FakeLlm::openai().await;
    slow.set_default(Reply::delayed(LATENCY, Reply::Auto));
    let concurrent = measure(&evaluator(&slow, None), 20).await;
    report(
        "4 metrics, 100 ms judges, concurrent (default)",
        &concurrent,
        Some(LATENCY),
    );
    assert!(
        slow.max_concurrent() >= 4,
        "the 4 metrics should be in flight together"
    );
    // About one latency, not four: fail loudly when the metrics stop overlapping.
    assert!(
        concurrent.mean < LATENCY * 2,
        "4 concurrent metrics took {:?} per evaluation: more than 2 judge latencies",
        concurrent.mean
    );
    let sequential = measure(&evaluator(&slow, Some(1)), 5).await;
    report(
        "4 metrics, 100 ms judges, max_concurrent_metrics = 1",
        &sequential,
        Some(LATENCY),
    );
    assert!(
        sequential.mean >= LATENCY * 4,
        "sequential metrics cannot beat 4 latencies"
    );

    let fast = FakeLlm::openai().await;
    let overhead = measure(&evaluator(&fast, None), 200).await;
    report(
        "4 metrics, zero-latency fake server (overhead)",
        &overhead,
        None,
    );
}
