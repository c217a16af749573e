//! What each OpenAI-compatible endpoint has shown it supports for structured output,
//! remembered for the rest of the process: once a server rejected `json_schema` (or a
//! later mode of the chain), every later call to the same provider and base URL starts with
//! the mode that worked, whichever [`ModelRegistry`](crate::ModelRegistry) it comes from (the
//! standalone evaluator and round commands build their own registries).
//!
//! Modes are small integers ordered from the richest to the plainest (see
//! `providers::openai::StructuredMode`); a remembered mode only ever moves down the chain.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

fn store() -> &'static Mutex<HashMap<(String, String), u8>> {
    static STORE: OnceLock<Mutex<HashMap<(String, String), u8>>> = OnceLock::new();
    STORE.get_or_init(|| Mutex::new(HashMap::new()))
}

fn key(provider: &str, base_url: &str) -> (String, String) {
    (
        provider.to_string(),
        base_url.trim_end_matches('/').to_string(),
    )
}

/// The structured-output mode remembered for `provider` at `base_url` (0, the richest,
/// when nothing was learnt).
pub(crate) fn structured_mode(provider: &str, base_url: &str) -> u8 {
    let g = match store().lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    g.get(&key(provider, base_url)).copied().unwrap_or(0)
}

/// Remembers that `provider` at `base_url` needs `mode` or a plainer one.
pub(crate) fn downgrade_structured_mode(provider: &str, base_url: &str, mode: u8) {
    let mut g = match store().lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    let e = g.entry(key(provider, base_url)).or_insert(0);
    *e = (*e).max(mode);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_remembered_per_provider_and_base_url_and_only_move_down() {
        let url = "http://capability.test:1/v1";
        assert_eq!(structured_mode("cap-a", url), 0);
        downgrade_structured_mode("cap-a", url, 1);
        assert_eq!(structured_mode("cap-a", url), 1);
        assert_eq!(structured_mode("cap-a", "http://capability.test:1/v1/"), 1);
        downgrade_structured_mode("cap-a", url, 0);
        assert_eq!(structured_mode("cap-a", url), 1, "never back up the chain");
        downgrade_structured_mode("cap-a", url, 2);
        assert_eq!(structured_mode("cap-a", url), 2);
        assert_eq!(structured_mode("cap-b", url), 0, "another provider");
        assert_eq!(structured_mode("cap-a", "http://capability.test:2/v1"), 0);
    }
}
