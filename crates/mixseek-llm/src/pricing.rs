//! Cost accounting: the shipped default prices (USD per million tokens) and the
//! `[pricing."provider:model"]` overrides.

use crate::types::TokenCounts;
use mixseek_config::Price;
use mixseek_core::Usage;
use std::collections::BTreeMap;

/// Shipped defaults: `(model id, input, output, cached input)` in USD per million tokens.
/// Public list prices at the time of writing; override them in `[pricing]`.
const DEFAULTS: &[(&str, f64, f64, Option<f64>)] = &[
    ("openai:gpt-4o", 2.5, 10.0, Some(1.25)),
    ("openai:gpt-4o-mini", 0.15, 0.6, Some(0.075)),
    ("openai:gpt-4.1", 2.0, 8.0, Some(0.5)),
    ("openai:gpt-4.1-mini", 0.4, 1.6, Some(0.1)),
    ("openai:gpt-4.1-nano", 0.1, 0.4, Some(0.025)),
    ("openai:gpt-5", 1.25, 10.0, Some(0.125)),
    ("openai:gpt-5-mini", 0.25, 2.0, Some(0.025)),
    ("openai:gpt-5-nano", 0.05, 0.4, Some(0.005)),
    ("openai:o3", 2.0, 8.0, Some(0.5)),
    ("openai:o4-mini", 1.1, 4.4, Some(0.275)),
    ("anthropic:claude-opus-4-1", 15.0, 75.0, Some(1.5)),
    ("anthropic:claude-opus-4-0", 15.0, 75.0, Some(1.5)),
    ("anthropic:claude-sonnet-4-5", 3.0, 15.0, Some(0.3)),
    ("anthropic:claude-sonnet-4-0", 3.0, 15.0, Some(0.3)),
    ("anthropic:claude-3-7-sonnet-latest", 3.0, 15.0, Some(0.3)),
    ("anthropic:claude-3-5-haiku-latest", 0.8, 4.0, Some(0.08)),
    ("anthropic:claude-haiku-4-5", 1.0, 5.0, Some(0.1)),
    ("google-gla:gemini-2.5-pro", 1.25, 10.0, Some(0.31)),
    ("google-gla:gemini-2.5-flash", 0.3, 2.5, Some(0.075)),
    ("google-gla:gemini-2.5-flash-lite", 0.1, 0.4, Some(0.025)),
    ("google-gla:gemini-2.0-flash", 0.1, 0.4, Some(0.025)),
    ("grok:grok-4", 3.0, 15.0, Some(0.75)),
    ("grok:grok-3", 3.0, 15.0, Some(0.75)),
    ("grok:grok-3-mini", 0.3, 0.5, Some(0.075)),
];

/// Prices by `provider:model`. The `mock` provider is free; `xai:` and `grok-responses:` share
/// `grok:` prices (the same xAI models, only the API differs).
#[derive(Debug, Clone, Default)]
pub(crate) struct PriceTable {
    prices: BTreeMap<String, Price>,
}

impl PriceTable {
    /// The shipped defaults with `overrides` on top.
    pub(crate) fn with_overrides(overrides: &BTreeMap<String, Price>) -> Self {
        let mut prices: BTreeMap<String, Price> = DEFAULTS
            .iter()
            .map(|(id, i, o, c)| {
                (
                    id.to_string(),
                    Price {
                        input_per_million: *i,
                        output_per_million: *o,
                        cached_input_per_million: *c,
                    },
                )
            })
            .collect();
        for (k, v) in overrides {
            prices.insert(k.trim().to_string(), v.clone());
        }
        Self { prices }
    }

    /// The price of `id` (exact, then without a `-YYYY-MM-DD` date suffix; `xai:` and
    /// `grok-responses:` as `grok:`; `mock:` is free).
    pub(crate) fn get(&self, id: &str) -> Option<&Price> {
        static FREE: Price = Price {
            input_per_million: 0.0,
            output_per_million: 0.0,
            cached_input_per_million: None,
        };
        if let Some(p) = self.prices.get(id) {
            return Some(p);
        }
        // Gemini on Vertex AI is billed at the Gemini API's list prices: `google-vertex:` ids
        // without their own entry use `google-gla:`'s.
        if let Some(model) = id.strip_prefix("google-vertex:") {
            return self.get(&format!("google-gla:{model}"));
        }
        let (provider, model) = id.split_once(':')?;
        if provider == "mock" {
            return Some(&FREE);
        }
        let provider = if provider == "xai" || provider == "grok-responses" {
            "grok"
        } else {
            provider
        };
        let undated = strip_date_suffix(model);
        self.prices
            .get(&format!("{provider}:{model}"))
            .or_else(|| self.prices.get(&format!("{provider}:{undated}")))
    }

    /// The accounting view of one call: tokens, `requests = 1`, cost when priced.
    pub(crate) fn usage(&self, id: &str, counts: Option<TokenCounts>) -> Usage {
        let mut u = Usage {
            requests: 1,
            ..Usage::default()
        };
        let Some(c) = counts else {
            u.requests_without_usage = 1;
            u.unpriced_requests = u64::from(self.get(id).is_none());
            return u;
        };
        u.input_tokens = c.input_tokens;
        u.output_tokens = c.output_tokens;
        u.cached_tokens = c.cached_tokens;
        match self.get(id) {
            Some(p) => u.cost_usd = cost(p, c),
            None => u.unpriced_requests = 1,
        }
        u
    }
}

/// USD cost of the token counts at price `p` (cached input tokens are part of the input).
pub(crate) fn cost(p: &Price, c: TokenCounts) -> f64 {
    let cached = c.cached_tokens.min(c.input_tokens);
    let fresh = c.input_tokens - cached;
    let cached_price = p.cached_input_per_million.unwrap_or(p.input_per_million);
    (fresh as f64 * p.input_per_million
        + cached as f64 * cached_price
        + c.output_tokens as f64 * p.output_per_million)
        / 1.0e6
}

fn strip_date_suffix(model: &str) -> &str {
    // gpt-4o-2024-08-06 -> gpt-4o ; claude-sonnet-4-5-20250929 -> claude-sonnet-4-5
    let b = model.as_bytes();
    if b.len() > 11 && b[b.len() - 11] == b'-' {
        let tail = &model[model.len() - 10..];
        if tail.len() == 10
            && tail.as_bytes()[4] == b'-'
            && tail.as_bytes()[7] == b'-'
            && tail.chars().filter(char::is_ascii_digit).count() == 8
        {
            return &model[..model.len() - 11];
        }
    }
    if b.len() > 9
        && b[b.len() - 9] == b'-'
        && model[model.len() - 8..].chars().all(|c| c.is_ascii_digit())
    {
        return &model[..model.len() - 9];
    }
    model
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vertex_models_use_the_gemini_api_prices_unless_set() {
        let t = PriceTable::with_overrides(&BTreeMap::new());
        assert_eq!(
            t.get("google-vertex:gemini-2.5-flash"),
            t.get("google-gla:gemini-2.5-flash")
        );
        assert!(t.get("google-vertex:gemini-2.5-flash").is_some());
        let mut o = BTreeMap::new();
        o.insert(
            "google-vertex:gemini-2.5-flash".to_string(),
            Price {
                input_per_million: 9.0,
                ..Price::default()
            },
        );
        let t = PriceTable::with_overrides(&o);
        assert_eq!(
            t.get("google-vertex:gemini-2.5-flash")
                .map(|p| p.input_per_million),
            Some(9.0)
        );
    }

    #[test]
    fn costs_use_defaults_overrides_and_cached_rates() {
        let mut o = BTreeMap::new();
        o.insert(
            "ollama:llama3".to_string(),
            Price {
                input_per_million: 1.0,
                output_per_million: 2.0,
                cached_input_per_million: None,
            },
        );
        let t = PriceTable::with_overrides(&o);
        let c = TokenCounts {
            input_tokens: 1_000_000,
            output_tokens: 500_000,
            cached_tokens: 0,
        };
        assert!((t.usage("ollama:llama3", Some(c)).cost_usd - 2.0).abs() < 1e-9);
        // gpt-4o: 2.5 in, 10 out; half the input cached at 1.25.
        let c2 = TokenCounts {
            input_tokens: 1_000_000,
            output_tokens: 0,
            cached_tokens: 500_000,
        };
        assert!((t.usage("openai:gpt-4o-2024-08-06", Some(c2)).cost_usd - 1.875).abs() < 1e-9);
        assert!(t.get("anthropic:claude-sonnet-4-5-20250929").is_some());
        assert!(t.get("xai:grok-3").is_some());
        assert!(t.get("grok-responses:grok-4").is_some());
        assert_eq!(t.usage("mock:x", Some(c)).cost_usd, 0.0);
        assert_eq!(t.usage("mock:x", Some(c)).unpriced_requests, 0);
        let unknown = t.usage("vllm:qwen", Some(c));
        assert_eq!((unknown.unpriced_requests, unknown.cost_usd), (1, 0.0));
        let none = t.usage("openai:gpt-4o", None);
        assert_eq!(
            (
                none.requests,
                none.requests_without_usage,
                none.input_tokens
            ),
            (1, 1, 0)
        );
    }
}
