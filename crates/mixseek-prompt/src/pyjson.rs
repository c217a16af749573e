//! JSON text exactly as Python's `json.dumps(value, ensure_ascii=False, indent=2)` writes it:
//! keys in insertion order, 2-space indent, `": "` and `,` separators, `{}` / `[]` when empty,
//! non-ASCII raw, floats as Python's `repr` (`80.0`, `1e-05`, `1e+16`).
//!
//! `serde_json::Value` cannot hold NaN or infinities: a non-finite score in a `ScoreDetails`
//! becomes `null` when it is converted to a `Value` (the original would print `NaN`).

use serde_json::{Number, Value};
use std::fmt::Write as _;

/// [`dumps_pretty_into`] into a new string (only the tests need it).
#[cfg(test)]
pub(crate) fn dumps_pretty(value: &Value) -> String {
    let mut out = String::with_capacity(256);
    dumps_pretty_into(&mut out, value);
    out
}

/// Pretty-prints `value` like Python's `json.dumps(value, ensure_ascii=False, indent=2)`,
/// appending to `out`.
pub(crate) fn dumps_pretty_into(out: &mut String, value: &Value) {
    write_value(out, value, 0);
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn write_value(out: &mut String, value: &Value, level: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push('\n');
                indent(out, level + 1);
                write_value(out, item, level + 1);
            }
            out.push('\n');
            indent(out, level);
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push('\n');
                indent(out, level + 1);
                write_string(out, k);
                out.push_str(": ");
                write_value(out, v, level + 1);
            }
            out.push('\n');
            indent(out, level);
            out.push('}');
        }
    }
}

fn write_number(out: &mut String, n: &Number) {
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else if let Some(f) = n.as_f64() {
        write_py_float(out, f);
    } else {
        out.push_str(&n.to_string());
    }
}

/// Python's `json` string escaping with `ensure_ascii=False`: `"` `\` and the C0 controls
/// (`\n`, `\r`, `\t`, `\b`, `\f` short, the rest `\u00XX` in lowercase hex); all else raw.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Python's `repr(float)`: the shortest round-trip digits (ties to even, as Python), positional
/// when the decimal exponent is in `-4..16`, otherwise `d[.ddd]e±XX` (at least two exponent
/// digits); a positional value always keeps a fractional part (`80.0`).
pub fn py_float_repr(x: f64) -> String {
    let mut out = String::with_capacity(24);
    write_py_float(&mut out, x);
    out
}

/// [`py_float_repr`] appending to `out`.
pub(crate) fn write_py_float(out: &mut String, x: f64) {
    let Some(n) = Number::from_f64(x) else {
        out.push_str(if x.is_nan() {
            "NaN"
        } else if x > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        });
        return;
    };
    // serde_json's float text (zmij): shortest digits with the same tie-breaking as Python,
    // positional in [1e-5, 1e16) with `.0` on integral values, else `de±x`.
    let start = out.len();
    let _ = write!(out, "{n}");
    let a = x.abs();
    if (a == 0.0 || (1e-4..1e16).contains(&a)) && !out[start..].contains('e') {
        return;
    }
    let text = out.split_off(start);
    let (negative, digits, decpt) = decompose(&text);
    if negative {
        out.push('-');
    }
    if !(-4 < decpt && decpt <= 16) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        let _ = write!(out, "e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    } else if decpt <= 0 {
        out.push_str("0.");
        for _ in 0..(-decpt) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let decpt = decpt as usize;
        if digits.len() <= decpt {
            out.push_str(&digits);
            for _ in digits.len()..decpt {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            out.push_str(&digits[..decpt]);
            out.push('.');
            out.push_str(&digits[decpt..]);
        }
    }
}

/// Splits a float text (`-1.5e-7`, `1e+16`, `0.00001`, `123.0`) into sign, significant digits
/// (no leading/trailing zeros, at least one digit) and `decpt` (value = 0.DIGITS × 10^decpt).
fn decompose(text: &str) -> (bool, String, i32) {
    let (negative, text) = match text.strip_prefix('-') {
        Some(t) => (true, t),
        None => (false, text),
    };
    let (mantissa, exp) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.trim_start_matches('+').parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all: String = format!("{int}{frac}");
    let leading = all.len() - all.trim_start_matches('0').len();
    let digits = all.trim_matches('0');
    if digits.is_empty() {
        return (negative, "0".into(), 1);
    }
    let decpt = int.len() as i32 - leading as i32 + exp;
    (negative, digits.to_string(), decpt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_like_python_repr() {
        let cases = [
            (80.0, "80.0"),
            (85.5, "85.5"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1e-5, "1e-05"),
            (1e-4, "0.0001"),
            (0.00012345, "0.00012345"),
            (1.5e-7, "1.5e-07"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1e15, "1000000000000000.0"),
            (123456789012345.6, "123456789012345.6"),
            (1234567890123456.8, "1234567890123456.8"),
            (0.1, "0.1"),
            (0.1 + 0.2, "0.30000000000000004"),
            // exact ties between two shortest candidates round to even, as Python does
            (1658206780088562.0 + 0.25, "1658206780088562.2"),
            (-1052730259603333.0 - 0.25, "-1052730259603333.2"),
            (1e22, "1e+22"),
            (123456789.0, "123456789.0"),
            (9.5e-5, "9.5e-05"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
            (-3.25, "-3.25"),
            (1e100, "1e+100"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (33.333333333333336, "33.333333333333336"),
            (100.0, "100.0"),
        ];
        for (x, want) in cases {
            assert_eq!(py_float_repr(x), want, "{x:?}");
        }
    }

    #[test]
    fn pretty_json_matches_python_layout() {
        let v = json!({
            "overall_score": 82.5,
            "metrics": [
                {"metric_name": "ClarityCoherence", "score": 85.0, "evaluator_comment": "明瞭"},
                {"metric_name": "Relevance", "score": 80, "evaluator_comment": "a\"b\\c\nd\te\u{1f}f\u{7f}"}
            ],
            "empty_obj": {},
            "empty_list": [],
            "flags": [true, false, null],
            "tiny": 1e-5
        });
        let want = "{\n  \"overall_score\": 82.5,\n  \"metrics\": [\n    {\n      \"metric_name\": \"ClarityCoherence\",\n      \"score\": 85.0,\n      \"evaluator_comment\": \"明瞭\"\n    },\n    {\n      \"metric_name\": \"Relevance\",\n      \"score\": 80,\n      \"evaluator_comment\": \"a\\\"b\\\\c\\nd\\te\\u001ff\u{7f}\"\n    }\n  ],\n  \"empty_obj\": {},\n  \"empty_list\": [],\n  \"flags\": [\n    true,\n    false,\n    null\n  ],\n  \"tiny\": 1e-05\n}";
        assert_eq!(dumps_pretty(&v), want);
        assert_eq!(dumps_pretty(&json!({})), "{}");
        assert_eq!(dumps_pretty(&json!("x")), "\"x\"");
    }

    #[test]
    fn key_order_is_insertion_order() {
        let v: Value = serde_json::from_str(r#"{"b": 1.0, "a": 2.0}"#).expect("json");
        assert_eq!(dumps_pretty(&v), "{\n  \"b\": 1.0,\n  \"a\": 2.0\n}");
    }
}
