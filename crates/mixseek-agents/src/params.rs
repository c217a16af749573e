//! Sampling parameters and time limits from agent settings.

use mixseek_llm::GenerationParams;
use std::time::Duration;

/// The parameters of an agent's calls: only the values that are set.
pub(crate) fn generation_params(
    temperature: Option<f64>,
    max_tokens: Option<u64>,
    top_p: Option<f64>,
    seed: Option<i64>,
    stop: Option<&[String]>,
) -> GenerationParams {
    GenerationParams {
        temperature,
        max_tokens: max_tokens.map(|t| u32::try_from(t).unwrap_or(u32::MAX)),
        top_p,
        // Seeds are opaque: negative values keep their bits.
        seed: seed.map(|s| s as u64),
        stop: stop.map(<[String]>::to_vec).unwrap_or_default(),
        extra: serde_json::Map::new(),
    }
}

/// `params` and `timeout` with an agent's `model_settings` / `google_model_settings` (merged
/// for `model_id`): the agent's own fields win, the tables fill the rest.
pub(crate) fn with_model_settings(
    mut params: GenerationParams,
    mut timeout: Option<Duration>,
    model_id: &str,
    model_settings: Option<&serde_json::Map<String, serde_json::Value>>,
    google_model_settings: Option<&serde_json::Map<String, serde_json::Value>>,
) -> (GenerationParams, Option<Duration>) {
    if model_settings.is_some() || google_model_settings.is_some() {
        let merged =
            mixseek_llm::merged_model_settings(model_id, model_settings, google_model_settings);
        mixseek_llm::apply_model_settings(&mut params, &mut timeout, merged);
    }
    (params, timeout)
}

/// A per-request time limit in seconds (`0` or unset: the provider's default).
pub(crate) fn request_timeout(seconds: Option<u64>) -> Option<Duration> {
    seconds.filter(|s| *s > 0).map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_set_values_are_passed() {
        let p = generation_params(
            Some(0.2),
            Some(10),
            None,
            Some(-1),
            Some(&["END".to_string()]),
        );
        assert_eq!(p.temperature, Some(0.2));
        assert_eq!(p.max_tokens, Some(10));
        assert_eq!(p.top_p, None);
        assert_eq!(p.seed, Some(u64::MAX));
        assert_eq!(p.stop, vec!["END".to_string()]);
        assert_eq!(
            generation_params(None, None, None, None, None),
            GenerationParams::default()
        );
        assert_eq!(request_timeout(Some(0)), None);
        assert_eq!(request_timeout(Some(5)), Some(Duration::from_secs(5)));
    }
}
