//! Output formats shared by commands.

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TextOrJson {
    Text,
    Json,
}

/// Pretty JSON with 2-space indentation and non-ASCII kept.
pub fn to_json_pretty<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v)
        .unwrap_or_else(|e| format!("{{\"error\": \"cannot serialize output: {e}\"}}"))
}

/// Keys whose values are secrets in displays (`config show`): the original's list, except
/// token counts/limits and `*_env` (names of variables, not their values).
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    if k.ends_with("_env") || k.contains("tokens") {
        return false;
    }
    [
        "api_key",
        "apikey",
        "password",
        "secret",
        "credential",
        "private_key",
        "access_key",
        "authorization",
    ]
    .iter()
    .any(|s| k.contains(s))
        || k == "token"
        || k.ends_with("_token")
}

/// Replaces secret values with `[REDACTED]`, recursively.
pub fn mask_secrets(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if is_secret_key(k) && !val.is_null() {
                    *val = serde_json::Value::String("[REDACTED]".into());
                } else {
                    mask_secrets(val);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(mask_secrets),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_but_token_limits_and_env_names_are_not() {
        let mut v = serde_json::json!({
            "api_key": "sk-123", "max_tokens": 5, "api_key_env": "OPENAI_API_KEY",
            "headers": {"Authorization": "Bearer x"}, "auth_token": "t", "tokens_per_minute": 9
        });
        mask_secrets(&mut v);
        assert_eq!(v["api_key"], "[REDACTED]");
        assert_eq!(v["headers"]["Authorization"], "[REDACTED]");
        assert_eq!(v["auth_token"], "[REDACTED]");
        assert_eq!(v["max_tokens"], 5);
        assert_eq!(v["api_key_env"], "OPENAI_API_KEY");
        assert_eq!(v["tokens_per_minute"], 9);
    }
}
