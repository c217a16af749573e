//! One request outside a run, as `mixseek llm MODEL "prompt"` sends it: plain, or structured
//! when a schema is given (with validation and repair), through a registry model (so
//! retries, fallbacks, limits and accounting apply). Returns everything the command prints.

use crate::cache::CacheStats;
use crate::error::LlmError;
use crate::registry::ModelRegistry;
use crate::structured::{StructuredOptions, generate_json};
use crate::types::{CallerTag, ChatRequest, FinishReason, GenerationParams, ToolCall};
use mixseek_core::{Role, Usage};
use serde::Serialize;
use std::time::{Duration, Instant};

/// What to send.
#[derive(Debug, Clone, Default)]
pub struct DirectRequest {
    /// `provider:model`.
    pub model: String,
    /// The user message.
    pub prompt: String,
    /// The system prompt.
    pub system: Option<String>,
    /// `(name, JSON schema)`: ask for a structured answer.
    pub schema: Option<(String, serde_json::Value)>,
    /// Models tried in order when `model` fails.
    pub fallbacks: Vec<String>,
    /// Sampling parameters.
    pub params: GenerationParams,
    /// Time limit of each call (retries included).
    pub timeout: Option<Duration>,
    /// Repair rounds for a structured answer (default 2).
    pub max_repairs: Option<u32>,
}

/// What came back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DirectOutcome {
    /// The model asked.
    pub model: String,
    /// The model that answered (differs after a fallback).
    pub answered_by: String,
    /// True when the answer comes from the offline `mock:` provider (made up).
    pub mock: bool,
    /// The text answer (for a structured request: the accepted raw JSON).
    pub text: Option<String>,
    /// The validated object of a structured request.
    pub value: Option<serde_json::Value>,
    /// The tool calls the model asked for.
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// Usage of every call made (repairs included).
    pub usage: Usage,
    /// HTTP attempts over all calls.
    pub attempts: u32,
    /// Repair rounds of a structured answer (0: the first answer was valid).
    pub repairs: u32,
    /// Wall time of the whole call, repairs included.
    pub latency_ms: u64,
    /// The (last) answer came from the response cache.
    pub cache_hit: bool,
    /// Hits and misses of the response cache during this call (`None`: cache off).
    pub cache: Option<CacheStats>,
}

/// Sends `req` through `registry`.
pub async fn run_direct(
    registry: &ModelRegistry,
    req: &DirectRequest,
) -> Result<DirectOutcome, LlmError> {
    let model = registry.model_with_fallbacks(&req.model, &req.fallbacks)?;
    let mut request =
        ChatRequest::user(req.prompt.clone()).with_caller(CallerTag::role(Role::Direct));
    request.system = req.system.clone();
    request.params = req.params.clone();
    request.timeout = req.timeout;
    let started = Instant::now();
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    match &req.schema {
        Some((name, schema)) => {
            let options = StructuredOptions {
                max_repairs: req.max_repairs.unwrap_or(2),
                check: None,
            };
            let out = generate_json(model.as_ref(), request, name, schema.clone(), options).await?;
            Ok(DirectOutcome {
                model: req.model.clone(),
                answered_by: out.response.model.clone(),
                mock: out.response.model.starts_with("mock:"),
                text: Some(out.raw),
                value: Some(out.value),
                tool_calls: Vec::new(),
                finish_reason: out.response.finish_reason,
                usage: out.usage,
                attempts: out.attempts,
                repairs: out.repairs,
                latency_ms: ms(started.elapsed()),
                cache_hit: out.response.cache_hit,
                cache: cache_stats(registry),
            })
        }
        None => {
            let r = model.chat(&request).await?;
            Ok(DirectOutcome {
                model: req.model.clone(),
                answered_by: r.model.clone(),
                mock: r.model.starts_with("mock:"),
                text: r.text,
                value: None,
                tool_calls: r.tool_calls,
                finish_reason: r.finish_reason,
                usage: r.usage,
                attempts: r.attempts,
                repairs: 0,
                latency_ms: ms(started.elapsed()),
                cache_hit: r.cache_hit,
                cache: cache_stats(registry),
            })
        }
    }
}

fn cache_stats(registry: &ModelRegistry) -> Option<CacheStats> {
    registry.cache_enabled().then(|| registry.cache_stats())
}

impl DirectOutcome {
    /// The human-readable report: the answer (a structured value pretty-printed), then the
    /// model, attempts, usage and cost lines.
    pub fn render_text(&self, with_summary: bool) -> String {
        let mut out = String::new();
        match (&self.value, &self.text) {
            (Some(v), _) => out.push_str(&serde_json::to_string_pretty(v).unwrap_or_default()),
            (None, Some(t)) => out.push_str(t),
            (None, None) => {}
        }
        for t in &self.tool_calls {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!("tool call: {}({})", t.name, t.arguments));
        }
        if !with_summary {
            return out;
        }
        out.push_str("\n\n");
        let mut model = format!("model: {}", self.answered_by);
        if self.answered_by != self.model {
            model.push_str(&format!(" (fallback for {})", self.model));
        }
        if self.mock {
            model.push_str(" (offline mock provider: made-up answer)");
        }
        out.push_str(&model);
        out.push('\n');
        let mut line = format!("attempts: {}", self.attempts);
        if self.value.is_some() {
            line.push_str(&format!(", repairs: {}", self.repairs));
        }
        line.push_str(&format!(
            ", latency: {:.2} s",
            self.latency_ms as f64 / 1000.0
        ));
        if self.cache_hit {
            line.push_str(", from cache");
        }
        out.push_str(&line);
        out.push('\n');
        let u = &self.usage;
        let usage = if u.requests > 0 && u.requests_without_usage == u.requests {
            "usage: not reported by the provider".to_string()
        } else {
            format!(
                "usage: {} input + {} output tokens{}",
                u.input_tokens,
                u.output_tokens,
                if u.cached_tokens > 0 {
                    format!(" ({} cached)", u.cached_tokens)
                } else {
                    String::new()
                }
            )
        };
        out.push_str(&usage);
        let cost = if u.unpriced_requests > 0 {
            "cost: unknown (no price for this model)".to_string()
        } else {
            format!("cost: ${:.6}", u.cost_usd)
        };
        out.push_str(&format!(", {cost}"));
        if let Some(c) = &self.cache {
            out.push_str(&format!("\ncache: {}", c.summary()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::RegistryConfig;

    #[tokio::test]
    async fn direct_calls_to_the_mock_provider_report_text_and_summary() {
        let reg = ModelRegistry::new(RegistryConfig::new()).expect("registry");
        let req = DirectRequest {
            model: "mock:default".into(),
            prompt: "hello".into(),
            ..DirectRequest::default()
        };
        let out = run_direct(&reg, &req).await.expect("ok");
        assert!(out.mock && out.attempts == 1 && out.value.is_none());
        let text = out.render_text(true);
        assert!(text.contains("[mock answer"), "{text}");
        assert!(
            text.contains("model: mock:default (offline mock provider: made-up answer)"),
            "{text}"
        );
        assert!(text.contains("attempts: 1, latency:"), "{text}");
        assert!(text.contains("cost: $0.000000"), "{text}");
        assert!(!out.render_text(false).contains("attempts"));
        assert!(out.cache.is_none() && !text.contains("cache:"), "{text}");
    }

    #[tokio::test]
    async fn direct_calls_report_cache_hits_and_misses() {
        let dir = tempfile::tempdir().expect("tmp");
        let cache = mixseek_config::CacheSettings {
            enabled: true,
            ..Default::default()
        };
        let req = DirectRequest {
            model: "mock:default".into(),
            prompt: "hello".into(),
            ..DirectRequest::default()
        };
        let reg = ModelRegistry::new(
            RegistryConfig::new().with_cache(cache.clone(), Some(dir.path().to_path_buf())),
        )
        .expect("registry");
        let first = run_direct(&reg, &req).await.expect("ok");
        assert_eq!(
            first.cache,
            Some(CacheStats {
                hits: 0,
                misses: 1,
                writes: 1
            })
        );
        assert!(first.render_text(true).ends_with("\ncache: 0 hits, 1 miss"));
        // A new process (registry) over the same workspace answers from the cache.
        let reg = ModelRegistry::new(
            RegistryConfig::new().with_cache(cache, Some(dir.path().to_path_buf())),
        )
        .expect("registry");
        let second = run_direct(&reg, &req).await.expect("ok");
        assert!(second.cache_hit);
        assert_eq!(second.text, first.text);
        let text = second.render_text(true);
        assert!(text.contains(", from cache"), "{text}");
        assert!(text.ends_with("\ncache: 1 hit, 0 misses"), "{text}");
    }

    #[tokio::test]
    async fn direct_structured_calls_print_the_object() {
        let reg = ModelRegistry::new(RegistryConfig::new()).expect("registry");
        let schema = serde_json::json!({"type": "object", "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 100}}, "required": ["score"]});
        let req = DirectRequest {
            model: "mock:judge".into(),
            prompt: "rate".into(),
            schema: Some(("s".into(), schema)),
            ..DirectRequest::default()
        };
        let out = run_direct(&reg, &req).await.expect("ok");
        let score = out
            .value
            .as_ref()
            .and_then(|v| v["score"].as_i64())
            .expect("score");
        assert!((0..=100).contains(&score));
        let text = out.render_text(true);
        assert!(text.starts_with("{\n  \"score\": "), "{text}");
        assert!(text.contains("attempts: 1, repairs: 0"), "{text}");
    }
}
