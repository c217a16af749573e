//! Compiled JSON-schema validators, shared by every structured call of the process. A run asks
//! for a handful of schemas (the evaluator's, the judgment's, a team's output) thousands of
//! times; compiling one costs more than checking an answer against it (3.6 % of a typical
//! run's CPU before this cache; docs/benchmarks.md).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// More distinct schemas than a run uses: past it the cache starts over (bounded memory for
/// a long-lived process that sees many ad-hoc schemas).
const MAX_SCHEMAS: usize = 64;

type Cache = Mutex<HashMap<String, Arc<jsonschema::Validator>>>;

/// The validator of `schema`, compiled once per distinct schema text.
pub(crate) fn validator(
    schema: &serde_json::Value,
) -> Result<Arc<jsonschema::Validator>, jsonschema::ValidationError<'static>> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Cache::default);
    let key = schema.to_string();
    let lock = || {
        cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    if let Some(v) = lock().get(&key) {
        return Ok(v.clone());
    }
    // compiled outside the lock: two callers may both compile a new schema once
    let compiled = Arc::new(jsonschema::validator_for(schema)?);
    let mut map = lock();
    if map.len() >= MAX_SCHEMAS {
        map.clear();
    }
    map.insert(key, compiled.clone());
    Ok(compiled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_compilation_per_schema_and_the_right_one() {
        let a = json!({"type": "object", "required": ["x"]});
        let b = json!({"type": "object", "required": ["y"]});
        let (va, va2, vb) = (
            validator(&a).expect("a"),
            validator(&a).expect("a again"),
            validator(&b).expect("b"),
        );
        assert!(Arc::ptr_eq(&va, &va2));
        assert!(va.is_valid(&json!({"x": 1})) && !va.is_valid(&json!({"y": 1})));
        assert!(vb.is_valid(&json!({"y": 1})) && !vb.is_valid(&json!({"x": 1})));
        assert!(validator(&json!({"type": 12})).is_err());
    }
}
