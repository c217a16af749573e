//! Where API keys and endpoint overrides (`OPENAI_BASE_URL`) are read from: the process
//! environment, or a fixed map (tests, embedding) so nothing has to mutate the process
//! environment.

use std::collections::BTreeMap;

/// A source of environment variables.
#[derive(Clone, Default)]
pub struct Env {
    /// `None`: the process environment. `Some`: only this map.
    map: Option<BTreeMap<String, String>>,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Values may be secrets: show names only.
        match &self.map {
            None => f.write_str("Env(process)"),
            Some(m) => f
                .debug_tuple("Env")
                .field(&m.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

impl Env {
    /// The process environment.
    pub fn process() -> Self {
        Self { map: None }
    }
    /// Only the given variables.
    pub fn from_map<K: Into<String>, V: Into<String>>(
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Self {
            map: Some(
                vars.into_iter()
                    .map(|(k, v)| (k.into(), v.into()))
                    .collect(),
            ),
        }
    }
    /// The value of `name`; unset and blank values are `None`.
    pub fn get(&self, name: &str) -> Option<String> {
        let v = match &self.map {
            None => std::env::var(name).ok(),
            Some(m) => m.get(name).cloned(),
        }?;
        if v.trim().is_empty() { None } else { Some(v) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_env_hides_values_and_skips_blank() {
        let e = Env::from_map([("A", "secret"), ("B", "  ")]);
        assert_eq!(e.get("A").as_deref(), Some("secret"));
        assert_eq!(e.get("B"), None);
        assert_eq!(e.get("C"), None);
        assert!(!format!("{e:?}").contains("secret"));
    }
}
