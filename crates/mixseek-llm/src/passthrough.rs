//! `model_settings` / `google_model_settings`: request settings a configuration passes through
//! without mixseek validating them (the original's pass-through, 0.1.0a16+).
//!
//! * [`merged_model_settings`] merges a call site's two tables: `model_settings`, then
//!   `google_model_settings` over it for a Google model (`google-gla:`, `google-vertex:`; for
//!   any other model it is ignored with the original's warning).
//! * [`apply_model_settings`] puts the merged settings into a call's parameters: the generic
//!   keys that are parameters (`temperature`, `max_tokens`, `top_p`, `seed`,
//!   `stop_sequences`, `timeout`) fill only what the call site's own fields left unset (those
//!   win, as in the original); everything else goes to [`GenerationParams::extra`].
//! * Each wire format maps `extra` onto its request ([`openai_chat`], [`responses`],
//!   [`anthropic`], [`gemini`]) — the generic keys it supports, the keys of its own prefix
//!   (`openai_`, `anthropic_`, `google_`), `extra_body` (merged into the body) and
//!   `extra_headers` ([`with_headers`]). A key a wire does not know is not sent, as the
//!   original's model classes ignore it; a key no wire knows is reported once, when merged.

use crate::types::GenerationParams;
use serde_json::{Map, Value, json};
use std::time::Duration;

/// The keys every wire reads (when it supports them), besides the parameter keys.
const GENERIC: &[&str] = &[
    "parallel_tool_calls",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "extra_headers",
    "extra_body",
];
/// The keys that are call parameters.
const PARAMS: &[&str] = &[
    "temperature",
    "max_tokens",
    "top_p",
    "seed",
    "stop_sequences",
    "timeout",
];
const PREFIXES: &[&str] = &["openai_", "anthropic_", "google_"];

/// The provider family of a model id's prefix, as the original's warning names it.
fn provider_of(model_id: &str) -> &'static str {
    match model_id.split_once(':').map(|(p, _)| p) {
        Some("google-gla") => "google_ai",
        Some("google-vertex") => "vertex_ai",
        Some("openai") => "openai",
        Some("anthropic") => "anthropic",
        Some("grok") => "grok",
        Some("grok-responses") => "grok_responses",
        _ => "unknown",
    }
}

/// One call site's pass-through settings: `model_settings`, then `google_model_settings` over
/// it when `model_id` is a Google model (ignored with a warning otherwise). Keys no wire reads
/// are reported (a warning), and still passed on.
pub fn merged_model_settings(
    model_id: &str,
    model_settings: Option<&Map<String, Value>>,
    google_model_settings: Option<&Map<String, Value>>,
) -> Map<String, Value> {
    let mut merged = model_settings.cloned().unwrap_or_default();
    if let Some(g) = google_model_settings.filter(|g| !g.is_empty()) {
        let provider = provider_of(model_id);
        if matches!(provider, "google_ai" | "vertex_ai") {
            merged.extend(g.iter().map(|(k, v)| (k.clone(), v.clone())));
        } else {
            tracing::warn!(
                model_id,
                provider,
                "google_model_settings is set but model is not a Google model; ignoring"
            );
        }
    }
    for key in merged.keys() {
        let known = PARAMS.contains(&key.as_str())
            || GENERIC.contains(&key.as_str())
            || PREFIXES.iter().any(|p| key.starts_with(p));
        if !known {
            tracing::warn!(model_id, key = %key, "model_settings key that no provider reads: it is not sent (keys: temperature, max_tokens, top_p, seed, stop_sequences, timeout, parallel_tool_calls, presence_penalty, frequency_penalty, logit_bias, extra_headers, extra_body, openai_*, anthropic_*, google_*)");
        }
    }
    merged
}

/// Puts `merged` (from [`merged_model_settings`]) into a call's `params` and `timeout`: the
/// parameter keys fill what is unset, the rest goes to `params.extra`. A parameter key of the
/// wrong type is ignored with a warning.
pub fn apply_model_settings(
    params: &mut GenerationParams,
    timeout: &mut Option<Duration>,
    merged: Map<String, Value>,
) {
    for (key, value) in merged {
        let bad = |what: &str| {
            tracing::warn!(key = %key, value = %value, "model_settings.{key} is not {what}; ignored");
        };
        match key.as_str() {
            "temperature" => match value.as_f64() {
                Some(t) => {
                    params.temperature.get_or_insert(t);
                }
                None => bad("a number"),
            },
            "top_p" => match value.as_f64() {
                Some(t) => {
                    params.top_p.get_or_insert(t);
                }
                None => bad("a number"),
            },
            "max_tokens" => match value.as_u64() {
                Some(m) => {
                    params
                        .max_tokens
                        .get_or_insert(u32::try_from(m).unwrap_or(u32::MAX));
                }
                None => bad("a positive integer"),
            },
            "seed" => match value.as_i64() {
                // Seeds are opaque: negative values keep their bits.
                Some(s) => {
                    params.seed.get_or_insert(s as u64);
                }
                None => bad("an integer"),
            },
            "stop_sequences" => match value.as_array().map(|a| {
                a.iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
            }) {
                Some(Some(stop)) => {
                    if params.stop.is_empty() {
                        params.stop = stop;
                    }
                }
                _ => bad("a list of strings"),
            },
            "timeout" => match value.as_f64().filter(|t| t.is_finite() && *t > 0.0) {
                Some(t) => {
                    timeout.get_or_insert(Duration::from_secs_f64(t.min(1e9)));
                }
                None => bad("a positive number of seconds"),
            },
            _ => {
                params.extra.insert(key, value);
            }
        }
    }
}

/// `extra_body`: its keys merged into the body (top level), last.
fn merge_extra_body(body: &mut Value, extra: &Map<String, Value>) {
    if let (Some(Value::Object(add)), Some(obj)) = (extra.get("extra_body"), body.as_object_mut()) {
        for (k, v) in add {
            obj.insert(k.clone(), v.clone());
        }
    }
}

/// The keys of `prefix` without it (`openai_user` → `user`).
fn prefixed<'a>(
    extra: &'a Map<String, Value>,
    prefix: &'a str,
) -> impl Iterator<Item = (&'a str, &'a Value)> + 'a {
    extra
        .iter()
        .filter_map(move |(k, v)| k.strip_prefix(prefix).map(|rest| (rest, v)))
}

/// OpenAI Chat Completions (`openai:`, `grok:` and OpenAI-compatible servers): the generic
/// keys as they are (`parallel_tool_calls` only with tools), `openai_<x>` as `<x>`.
pub(crate) fn openai_chat(body: &mut Value, extra: &Map<String, Value>, has_tools: bool) {
    if extra.is_empty() {
        return;
    }
    for key in ["presence_penalty", "frequency_penalty", "logit_bias"] {
        if let Some(v) = extra.get(key) {
            body[key] = v.clone();
        }
    }
    if has_tools && let Some(v) = extra.get("parallel_tool_calls") {
        body["parallel_tool_calls"] = v.clone();
    }
    for (k, v) in prefixed(extra, "openai_") {
        body[k] = v.clone();
    }
    merge_extra_body(body, extra);
}

/// OpenAI / xAI Responses: `parallel_tool_calls`; `openai_reasoning_effort` and
/// `openai_reasoning_summary` as `reasoning.effort` / `.summary`, `openai_text_verbosity` as
/// `text.verbosity`, other `openai_<x>` as `<x>`.
pub(crate) fn responses(body: &mut Value, extra: &Map<String, Value>) {
    if extra.is_empty() {
        return;
    }
    if let Some(v) = extra.get("parallel_tool_calls") {
        body["parallel_tool_calls"] = v.clone();
    }
    for (k, v) in prefixed(extra, "openai_") {
        match k {
            "reasoning_effort" => body["reasoning"]["effort"] = v.clone(),
            "reasoning_summary" => body["reasoning"]["summary"] = v.clone(),
            "text_verbosity" => body["text"]["verbosity"] = v.clone(),
            _ => body[k] = v.clone(),
        }
    }
    merge_extra_body(body, extra);
}

/// Anthropic Messages: `parallel_tool_calls = false` as `disable_parallel_tool_use` (with
/// tools), `anthropic_<x>` as `<x>` (`anthropic_thinking` → `thinking`, `anthropic_metadata`
/// → `metadata`, …).
pub(crate) fn anthropic(body: &mut Value, extra: &Map<String, Value>, has_tools: bool) {
    if extra.is_empty() {
        return;
    }
    if has_tools && extra.get("parallel_tool_calls") == Some(&Value::Bool(false)) {
        if body.get("tool_choice").is_none() {
            body["tool_choice"] = json!({"type": "auto"});
        }
        body["tool_choice"]["disable_parallel_tool_use"] = json!(true);
    }
    for (k, v) in prefixed(extra, "anthropic_") {
        body[k] = v.clone();
    }
    merge_extra_body(body, extra);
}

/// `snake_case` keys of a settings value as the Gemini REST API spells them (`camelCase`).
fn camel_keys(v: &Value) -> Value {
    match v {
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (camel(k), camel_keys(v))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(camel_keys).collect()),
        other => other.clone(),
    }
}

fn camel(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut upper = false;
    for c in s.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Gemini (`google-gla:` and `google-vertex:`): `presence_penalty` / `frequency_penalty` in
/// `generationConfig`; `google_thinking_config` → `generationConfig.thinkingConfig`,
/// `google_logprobs` → `generationConfig.responseLogprobs`, `google_top_logprobs` →
/// `generationConfig.logprobs`, `google_video_resolution` → `generationConfig.mediaResolution`,
/// `google_safety_settings` → `safetySettings`, `google_labels` → `labels`,
/// `google_cached_content` → `cachedContent`, other `google_<x>` → `<x>` (keys in camelCase).
pub(crate) fn gemini(body: &mut Value, extra: &Map<String, Value>) {
    if extra.is_empty() {
        return;
    }
    fn config(body: &mut Value, key: &str, v: &Value) {
        if !body["generationConfig"].is_object() {
            body["generationConfig"] = json!({});
        }
        body["generationConfig"][key] = camel_keys(v);
    }
    if let Some(v) = extra.get("presence_penalty") {
        config(body, "presencePenalty", v);
    }
    if let Some(v) = extra.get("frequency_penalty") {
        config(body, "frequencyPenalty", v);
    }
    for (k, v) in prefixed(extra, "google_") {
        match k {
            "thinking_config" => config(body, "thinkingConfig", v),
            "logprobs" => config(body, "responseLogprobs", v),
            "top_logprobs" => config(body, "logprobs", v),
            "video_resolution" => config(body, "mediaResolution", v),
            _ => body[camel(k)] = camel_keys(v),
        }
    }
    merge_extra_body(body, extra);
}

/// `extra_headers` (a table of strings) added to the request.
pub(crate) fn with_headers(
    mut builder: reqwest::RequestBuilder,
    extra: &Map<String, Value>,
) -> reqwest::RequestBuilder {
    if let Some(Value::Object(headers)) = extra.get("extra_headers") {
        for (k, v) in headers {
            match v.as_str() {
                Some(s) => builder = builder.header(k.as_str(), s),
                None => {
                    tracing::warn!(header = %k, "model_settings.extra_headers values are strings; this one is ignored")
                }
            }
        }
    }
    builder
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_merge_order_is_the_originals() {
        let ms = map(
            json!({"temperature": 0.1, "google_thinking_config": {"thinking_budget": 1}, "top_p": 0.5}),
        );
        let gs = map(json!({"google_thinking_config": {"thinking_budget": 0}, "temperature": 0.9}));
        let google =
            merged_model_settings("google-gla:gemini-flash-lite-latest", Some(&ms), Some(&gs));
        assert_eq!(google["temperature"], 0.9);
        // a nested value of the higher layer replaces the lower one wholesale
        assert_eq!(
            google["google_thinking_config"],
            json!({"thinking_budget": 0})
        );
        let other = merged_model_settings("anthropic:claude", Some(&ms), Some(&gs));
        assert_eq!(other, ms);
        // individual fields win; the rest fills what is unset
        let mut params = GenerationParams {
            temperature: Some(0.0),
            ..GenerationParams::default()
        };
        let mut timeout = None;
        let mut g = google;
        g.insert("timeout".into(), json!(12.5));
        g.insert("stop_sequences".into(), json!(["END"]));
        g.insert("presence_penalty".into(), json!(0.3));
        apply_model_settings(&mut params, &mut timeout, g);
        assert_eq!(params.temperature, Some(0.0));
        assert_eq!(params.top_p, Some(0.5));
        assert_eq!(params.stop, vec!["END".to_string()]);
        assert_eq!(timeout, Some(Duration::from_secs_f64(12.5)));
        assert_eq!(
            params.extra,
            map(json!({"google_thinking_config": {"thinking_budget": 0}, "presence_penalty": 0.3}))
        );
        let mut fixed = Some(Duration::from_secs(60));
        apply_model_settings(
            &mut GenerationParams::default(),
            &mut fixed,
            map(json!({"timeout": 5})),
        );
        assert_eq!(fixed, Some(Duration::from_secs(60)));
    }

    #[test]
    fn each_wire_sends_what_it_knows() {
        let extra = map(json!({
            "presence_penalty": 0.2,
            "parallel_tool_calls": false,
            "openai_reasoning_effort": "low",
            "anthropic_thinking": {"type": "enabled", "budget_tokens": 1024},
            "google_thinking_config": {"thinking_budget": 0, "include_thoughts": false},
            "google_safety_settings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_NONE"}],
            "extra_body": {"custom": 1}
        }));
        let mut chat = json!({"model": "m"});
        openai_chat(&mut chat, &extra, true);
        assert_eq!(
            chat,
            json!({"model": "m", "presence_penalty": 0.2, "parallel_tool_calls": false, "reasoning_effort": "low", "custom": 1})
        );
        let mut resp = json!({"model": "m"});
        responses(&mut resp, &extra);
        assert_eq!(resp["reasoning"], json!({"effort": "low"}));
        assert!(resp.get("presence_penalty").is_none());
        let mut an = json!({"model": "m"});
        anthropic(&mut an, &extra, true);
        assert_eq!(
            an["thinking"],
            json!({"type": "enabled", "budget_tokens": 1024})
        );
        assert_eq!(
            an["tool_choice"],
            json!({"type": "auto", "disable_parallel_tool_use": true})
        );
        assert!(an.get("presence_penalty").is_none() && an.get("reasoning_effort").is_none());
        let mut ge = json!({"contents": []});
        gemini(&mut ge, &extra);
        assert_eq!(
            ge["generationConfig"],
            json!({"presencePenalty": 0.2, "thinkingConfig": {"thinkingBudget": 0, "includeThoughts": false}})
        );
        assert_eq!(ge["safetySettings"][0]["threshold"], "BLOCK_NONE");
        assert_eq!(ge["custom"], 1);
        assert!(ge.get("reasoning_effort").is_none());
    }

    #[test]
    fn providers_are_named_as_the_original_names_them() {
        assert_eq!(provider_of("google-vertex:x"), "vertex_ai");
        assert_eq!(provider_of("grok-responses:x"), "grok_responses");
        assert_eq!(provider_of("ollama:x"), "unknown");
    }
}
