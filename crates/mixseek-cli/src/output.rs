//! Output formats shared by commands.

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TextOrJson {
    Text,
    Json,
}

/// Pretty JSON with 2-space indentation and non-ASCII kept.
pub(crate) fn to_json_pretty<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v)
        .unwrap_or_else(|e| format!("{{\"error\": \"cannot serialize output: {e}\"}}"))
}

/// Keys whose values are secrets in displays (`config show`): the original's list, except
/// token counts/limits and `*_env` (names of variables, not their values). `-` counts as `_`,
/// so header names such as `x-api-key`, `api-key` (Azure) and `x-goog-api-key` match.
pub(crate) fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace('-', "_");
    if k.ends_with("_env") || k.contains("tokens") {
        return false;
    }
    [
        "api_key",
        "apikey",
        "password",
        "passwd",
        "secret",
        "credential",
        "private_key",
        "access_key",
        "authorization",
        "cookie",
        "signature",
    ]
    .iter()
    .any(|s| k.contains(s))
        || k == "token"
        || k.ends_with("_token")
        || k.starts_with("token_")
        || k == "auth"
        || k == "key"
        || k.ends_with("_key")
        || k == "sig"
}

/// HTTP headers of `[providers.<name>.headers]` that are shown as they are; every other
/// header value is masked (gateway headers often carry keys under arbitrary names).
pub(crate) const SAFE_HEADERS: &[&str] = &[
    "http-referer",
    "referer",
    "x-title",
    "user-agent",
    "accept",
    "accept-language",
    "content-type",
    "anthropic-version",
    "anthropic-beta",
    "openai-organization",
    "openai-project",
];

const REDACTED: &str = "[REDACTED]";

/// Replaces secret values with `[REDACTED]`, recursively: values of secret-looking keys,
/// every header of `providers.<name>.headers` outside [`SAFE_HEADERS`], the path and query
/// of hook URLs (webhook URLs such as Slack's carry their token in the path), and in any
/// other URL the password of `user:password@` and the values of secret-looking query
/// parameters.
pub(crate) fn mask_secrets(v: &mut serde_json::Value) {
    mask_at(v, &mut Vec::new());
}

fn mask_at(v: &mut serde_json::Value, path: &mut Vec<String>) {
    let n = path.len();
    let in_headers = n >= 3 && path[n - 1] == "headers" && path[n - 3] == "providers";
    let hook_url = n >= 2 && path[n - 2] == "hooks" && path[n - 1] == "url";
    match v {
        serde_json::Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if val.is_null() {
                    continue;
                }
                let header_secret =
                    in_headers && !SAFE_HEADERS.contains(&k.to_ascii_lowercase().as_str());
                if is_secret_key(k) || header_secret {
                    *val = serde_json::Value::String(REDACTED.into());
                } else {
                    path.push(k.clone());
                    mask_at(val, path);
                    path.pop();
                }
            }
        }
        serde_json::Value::Array(items) => {
            for item in items.iter_mut() {
                // Array items keep their parent's name, so `hooks[0].url` is `hooks` › `url`.
                mask_at(item, path);
            }
        }
        serde_json::Value::String(s) if s.contains("://") => {
            *s = if hook_url {
                mask_url_path(s)
            } else {
                mask_url(s)
            };
        }
        _ => {}
    }
}

/// Splits `scheme://authority/rest` into its three parts (rest keeps its leading `/`, `?`
/// or `#`).
fn split_url(url: &str) -> Option<(&str, &str, &str)> {
    let (scheme, after) = url.split_once("://")?;
    let end = after.find(['/', '?', '#']).unwrap_or(after.len());
    Some((scheme, &after[..end], &after[end..]))
}

fn mask_authority(authority: &str) -> String {
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:{REDACTED}@{host}"),
            None => format!("{REDACTED}@{host}"),
        },
        None => authority.to_string(),
    }
}

/// A URL with its password and secret-looking query values masked.
pub(crate) fn mask_url(url: &str) -> String {
    let Some((scheme, authority, rest)) = split_url(url) else {
        return url.to_string();
    };
    let (before_query, query_and_fragment) = match rest.find('?') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, ""),
    };
    let mut out = format!("{scheme}://{}{before_query}", mask_authority(authority));
    if rest.contains('?') {
        let (query, fragment) = match query_and_fragment.split_once('#') {
            Some((q, f)) => (q, Some(f)),
            None => (query_and_fragment, None),
        };
        let params: Vec<String> = query
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((name, _)) if is_secret_key(name) || name.eq_ignore_ascii_case("code") => {
                    format!("{name}={REDACTED}")
                }
                _ => p.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
        if let Some(f) = fragment {
            out.push('#');
            out.push_str(f);
        }
    }
    out
}

/// A hook URL: scheme and host only; its path and query (where webhook tokens live) masked.
pub(crate) fn mask_url_path(url: &str) -> String {
    match split_url(url) {
        Some((scheme, authority, rest)) => {
            let tail = if rest.is_empty() || rest == "/" {
                rest.to_string()
            } else {
                format!("/{REDACTED}")
            };
            format!("{scheme}://{}{tail}", mask_authority(authority))
        }
        None => REDACTED.to_string(),
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

    #[test]
    fn hyphenated_and_unknown_headers_are_masked_but_safe_ones_are_not() {
        let mut v = serde_json::json!({"providers": {"gw": {"headers": {
            "x-api-key": "k1", "api-key": "k2", "x-goog-api-key": "k3",
            "X-Portkey-Config": "k4", "HTTP-Referer": "https://example.org", "X-Title": "demo"
        }, "base_url": "https://gw.example/v1"}}});
        mask_secrets(&mut v);
        let h = &v["providers"]["gw"]["headers"];
        for k in ["x-api-key", "api-key", "x-goog-api-key", "X-Portkey-Config"] {
            assert_eq!(h[k], "[REDACTED]", "{k}");
        }
        assert_eq!(h["HTTP-Referer"], "https://example.org");
        assert_eq!(h["X-Title"], "demo");
        assert_eq!(v["providers"]["gw"]["base_url"], "https://gw.example/v1");
        // Outside headers, hyphenated key names are recognised too.
        assert!(is_secret_key("x-api-key") && is_secret_key("Api-Key"));
        assert!(!is_secret_key("max_tokens") && !is_secret_key("api_key_env"));
    }

    #[test]
    fn urls_lose_passwords_secret_query_values_and_hook_paths() {
        assert_eq!(
            mask_url("https://user:pw@h.example:8080/v1?api_key=abc&model=x&token=t#f"),
            "https://user:[REDACTED]@h.example:8080/v1?api_key=[REDACTED]&model=x&token=[REDACTED]#f"
        );
        assert_eq!(
            mask_url("http://localhost:11434/v1"),
            "http://localhost:11434/v1"
        );
        let mut v = serde_json::json!({"hooks": [
            {"on": "round_complete", "url": "https://hooks.slack.com/services/T0/B0/XXXXSECRET"},
            {"on": "team_complete", "url": "https://example.org"}
        ]});
        mask_secrets(&mut v);
        assert_eq!(v["hooks"][0]["url"], "https://hooks.slack.com/[REDACTED]");
        assert_eq!(v["hooks"][1]["url"], "https://example.org");
        assert_eq!(v["hooks"][0]["on"], "round_complete");
    }
}
