//! Reading the fields of a provider's answer defensively: every value a server sends may be
//! missing, `null` or of the wrong type; these helpers turn each case into `Ok(None)` or
//! an `Err` that says which field was wrong and what it held, and never panic.

use crate::types::TokenCounts;
use serde_json::{Value, json};

/// The most tokens one count of one answer may report: larger counts (or counts that are
/// not non-negative integers) are not believed, and the call's usage is recorded as
/// unknown.
pub(crate) const MAX_TOKEN_COUNT: u64 = 1_000_000_000_000;

/// The JSON type of `v` in words, for messages.
pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// `v[key]` as a list, required: `Err` names the field (`what`) when it is missing, `null`
/// or not a list.
pub(crate) fn list<'a>(v: &'a Value, key: &str, what: &str) -> Result<&'a [Value], String> {
    match v.get(key) {
        Some(Value::Array(a)) => Ok(a),
        None => Err(format!("the answer has no `{what}`")),
        Some(other) => Err(format!(
            "the answer's `{what}` is {}, not a list",
            kind_of(other)
        )),
    }
}

/// The answer's main list (`choices`, `content`, …), required: as [`list`], and `Err` also
/// names the format expected (a server of another kind, or a wrong base URL, answers
/// without it).
pub(crate) fn main_list<'a>(v: &'a Value, key: &str, format: &str) -> Result<&'a [Value], String> {
    list(v, key, key).map_err(|e| {
        format!("{e} ({format} format expected: check the provider's `kind` and `base_url`)")
    })
}

/// `v[key]` as a list when present: `Ok(None)` when missing or `null`.
pub(crate) fn opt_list<'a>(
    v: &'a Value,
    key: &str,
    what: &str,
) -> Result<Option<&'a [Value]>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        Some(other) => Err(format!("`{what}` is {}, not a list", kind_of(other))),
    }
}

/// `v[key]` as text when present: `Ok(None)` when missing or `null`.
pub(crate) fn opt_str<'a>(v: &'a Value, key: &str, what: &str) -> Result<Option<&'a str>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!("`{what}` is {}, not text", kind_of(other))),
    }
}

/// `v` as an object (a list item): `Err` names the item.
pub(crate) fn object<'a>(v: &'a Value, what: &str) -> Result<&'a Value, String> {
    if v.is_object() {
        Ok(v)
    } else {
        Err(format!("{what} is {}, not an object", kind_of(v)))
    }
}

/// A finish reason as text: a string as it is, anything else but `null` as its JSON text
/// (an unknown reason, never a panic).
pub(crate) fn reason(v: Option<&Value>) -> Option<String> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    }
}

/// Tool-call arguments sent as JSON text: the parsed value (an object for a well-formed
/// call, but any JSON value is kept), `{}` for blank text, and the text itself as a
/// string when it is not JSON — the caller (the leader) tells the model its arguments are
/// not an object.
pub(crate) fn arguments_from_text(s: &str) -> Value {
    if s.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_string()))
}

/// Tool-call arguments as a wire carries them (a JSON text, or a value): see
/// [`arguments_from_text`]; missing or `null`: `{}`.
pub(crate) fn arguments(v: Option<&Value>) -> Value {
    match v {
        None | Some(Value::Null) => json!({}),
        Some(Value::String(s)) => arguments_from_text(s),
        Some(other) => other.clone(),
    }
}

/// A token count of a usage object: `Ok(None)` when missing or `null`; `Err` (what it held)
/// when it is not a non-negative integer up to [`MAX_TOKEN_COUNT`] (an integral float
/// counts).
pub(crate) fn token_count(usage: &Value, key: &str) -> Result<Option<u64>, String> {
    let v = match usage.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => v,
    };
    let n = v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0 && f.fract() == 0.0 && *f <= 1e15)
            .map(|f| f as u64)
    });
    match n {
        Some(n) if n <= MAX_TOKEN_COUNT => Ok(Some(n)),
        _ => Err(format!("`{key}` is {v}")),
    }
}

/// The counts of a usage object, from the keys of its input and output counts, extra
/// input and output counts (added, e.g. Gemini's tool-prompt and thinking tokens) and its
/// cached count (a JSON pointer). `Ok(None)` (usage unknown) when there is no usage object
/// or when it has neither main count; `Err` says which count is not a plausible token count
/// (the call's usage is then recorded as unknown, never as 0, and the caller logs why: see
/// [`split_usage`]).
pub(crate) fn usage(
    usage: Option<&Value>,
    input: &str,
    output: &str,
    extra_input: &[&str],
    extra_output: &[&str],
    cached: &str,
) -> Result<Option<TokenCounts>, String> {
    let Some(u) = usage.filter(|u| u.is_object()) else {
        return Ok(None);
    };
    let read = || -> Result<Option<TokenCounts>, String> {
        let (i, o) = (token_count(u, input)?, token_count(u, output)?);
        if i.is_none() && o.is_none() {
            return Ok(None);
        }
        let mut input_tokens = i.unwrap_or(0);
        for k in extra_input {
            input_tokens = input_tokens.saturating_add(token_count(u, k)?.unwrap_or(0));
        }
        let mut output_tokens = o.unwrap_or(0);
        for k in extra_output {
            output_tokens = output_tokens.saturating_add(token_count(u, k)?.unwrap_or(0));
        }
        let cached_tokens = match u.pointer(cached) {
            None | Some(Value::Null) => 0,
            Some(c) => token_count(&json!({ "cached": c }), "cached")
                .map_err(|_| format!("`{}` is {c}", cached.trim_start_matches('/')))?
                .unwrap_or(0),
        };
        Ok(Some(TokenCounts {
            input_tokens,
            output_tokens,
            cached_tokens,
        }))
    };
    read().map_err(|why| {
        format!(
            "the provider reported token usage that is not a plausible token count ({why}): {u}"
        )
    })
}

/// The counts [`usage`] read, and why there are none when they were not plausible: what a
/// wire's parser puts in its [`RawResponse`](crate::backend::RawResponse).
pub(crate) fn split_usage(
    usage: Result<Option<TokenCounts>, String>,
) -> (Option<TokenCounts>, Option<String>) {
    match usage {
        Ok(counts) => (counts, None),
        Err(problem) => (None, Some(problem)),
    }
}

/// Arbitrary JSON for the property tests of the wires' parsers: keys and strings are
/// drawn mostly from the wires' own vocabulary, so that the values reach deep into them.
#[cfg(test)]
pub(crate) mod arbitrary {
    use proptest::prelude::*;
    use serde_json::{Map, Value};

    const KEYS: &[&str] = &[
        "choices",
        "message",
        "content",
        "tool_calls",
        "function",
        "name",
        "arguments",
        "id",
        "finish_reason",
        "usage",
        "prompt_tokens",
        "completion_tokens",
        "prompt_tokens_details",
        "cached_tokens",
        "type",
        "text",
        "input",
        "stop_reason",
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "citations",
        "url",
        "title",
        "stdout",
        "stderr",
        "return_code",
        "error_code",
        "server_tool_use",
        "candidates",
        "parts",
        "thought",
        "functionCall",
        "args",
        "executableCode",
        "code",
        "language",
        "codeExecutionResult",
        "outcome",
        "output",
        "finishReason",
        "usageMetadata",
        "promptTokenCount",
        "candidatesTokenCount",
        "thoughtsTokenCount",
        "toolUsePromptTokenCount",
        "cachedContentTokenCount",
        "groundingMetadata",
        "groundingChunks",
        "web",
        "uri",
        "promptFeedback",
        "blockReason",
        "thoughtSignature",
        "status",
        "incomplete_details",
        "reason",
        "error",
        "annotations",
        "refusal",
        "outputs",
        "logs",
        "call_id",
        "input_tokens_details",
        "command",
        "path",
        "file_text",
    ];
    const STRINGS: &[&str] = &[
        "text",
        "tool_use",
        "server_tool_use",
        "web_search_tool_result",
        "bash_code_execution_tool_result",
        "code_execution_tool_result",
        "text_editor_code_execution",
        "bash_code_execution",
        "code_execution",
        "web_search_tool_result_error",
        "message",
        "function_call",
        "output_text",
        "refusal",
        "code_interpreter_call",
        "logs",
        "image",
        "url_citation",
        "stop",
        "length",
        "tool_calls",
        "content_filter",
        "end_turn",
        "max_tokens",
        "pause_turn",
        "STOP",
        "MAX_TOKENS",
        "SAFETY",
        "completed",
        "incomplete",
        "failed",
        "max_output_tokens",
        "Verdict",
        "{\"task\": ",
        "\"s\"",
        "[1]",
        "{}",
        "",
        " ",
        "PYTHON",
        "a.py",
    ];

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(|f| {
                serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
            }),
            proptest::sample::select(STRINGS).prop_map(Value::from),
            "\\PC{0,8}".prop_map(Value::String),
        ]
    }

    /// Arbitrary JSON, up to 5 levels deep.
    pub(crate) fn json() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(5, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec(
                    (
                        prop_oneof![
                            4 => proptest::sample::select(KEYS).prop_map(str::to_string),
                            1 => "[a-z]{1,6}",
                        ],
                        inner
                    ),
                    0..6
                )
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
            ]
        })
    }

    /// Arbitrary bytes, often JSON-like.
    pub(crate) fn bytes() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..256),
            json().prop_map(|v| {
                let mut b = serde_json::to_vec(&v).unwrap_or_default();
                // Cut or corrupt it now and then.
                let n = b.len();
                if n > 2 && n % 3 == 0 {
                    b.truncate(n / 2);
                } else if n > 2 && n % 3 == 1 {
                    b[n / 2] = 0xff;
                }
                b
            }),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_of_the_wrong_type_are_errors_that_name_them() {
        let v = json!({"a": "x", "n": null, "l": [1], "o": {}});
        assert_eq!(list(&v, "l", "l").map(<[Value]>::len), Ok(1));
        assert_eq!(
            list(&v, "a", "choices"),
            Err("the answer's `choices` is a string, not a list".into())
        );
        assert_eq!(
            list(&v, "zz", "choices"),
            Err("the answer has no `choices`".into())
        );
        assert!(list(&v, "n", "x").is_err_and(|e| e.contains("null")));
        assert_eq!(opt_list(&v, "n", "n"), Ok(None));
        assert!(opt_list(&v, "o", "o").is_err_and(|e| e.contains("an object")));
        assert_eq!(
            main_list(&v, "zz", "Gemini generateContent"),
            Err("the answer has no `zz` (Gemini generateContent format expected: check the provider's `kind` and `base_url`)".into())
        );
        assert_eq!(opt_str(&v, "a", "a"), Ok(Some("x")));
        assert!(opt_str(&v, "l", "l").is_err_and(|e| e.contains("a list, not text")));
        assert_eq!(reason(Some(&json!(7))), Some("7".into()));
        assert_eq!(reason(Some(&Value::Null)), None);
        assert_eq!(arguments_from_text("{\"a\": "), json!("{\"a\": "));
        assert_eq!(arguments_from_text(" "), json!({}));
        assert_eq!(arguments_from_text("\"s\""), json!("s"));
        assert_eq!(arguments(Some(&json!([1]))), json!([1]));
    }

    #[test]
    fn token_counts_must_be_plausible() {
        let u = json!({"ok": 12, "float": 12.0, "neg": -1, "str": "12", "huge": u64::MAX,
            "big": 1e300, "frac": 1.5, "list": [1]});
        assert_eq!(token_count(&u, "ok"), Ok(Some(12)));
        assert_eq!(token_count(&u, "float"), Ok(Some(12)));
        assert_eq!(token_count(&u, "missing"), Ok(None));
        for bad in ["neg", "str", "huge", "big", "frac", "list"] {
            assert!(token_count(&u, bad).is_err(), "{bad}");
        }
        let counts = |v: Value| split_usage(usage(Some(&v), "i", "o", &["x"], &[], "/d/c")).0;
        assert_eq!(
            counts(json!({"i": 3, "o": 4, "x": 1, "d": {"c": 2}})),
            Some(TokenCounts {
                input_tokens: 4,
                output_tokens: 4,
                cached_tokens: 2
            })
        );
        assert_eq!(counts(json!({"i": 3, "o": "4"})), None, "unknown, not 0");
        let problem = usage(Some(&json!({"i": 3, "o": -4})), "i", "o", &[], &[], "/c");
        assert!(
            problem
                .as_ref()
                .is_err_and(|p| p.contains("`o` is -4") && p.contains(r#"{"i":3,"o":-4}"#)),
            "{problem:?}"
        );
        assert_eq!(usage(None, "i", "o", &[], &[], "/c"), Ok(None));
        assert_eq!(counts(json!({"i": 3, "o": 4, "x": -1})), None);
        assert_eq!(counts(json!({"i": 3, "o": 4, "d": {"c": "2"}})), None);
        assert_eq!(counts(json!({"x": 3})), None);
        assert_eq!(counts(json!("usage")), None);
        assert_eq!(
            counts(json!({"o": 4})).map(|c| c.input_tokens),
            Some(0),
            "a missing count beside a reported one is 0, as before"
        );
    }
}
