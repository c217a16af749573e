//! Compact JSON text for the columns every round fills (`stage_usage`, `score_details`,
//! `member_submissions_record`, `message_history`), written by hand.
//!
//! Why not `serde_json::to_string`: the workspace builds everything except DuckDB at the dev
//! profile's opt-level 0, where serde's generic serializer (and its byte-by-byte escaping of
//! every key) costs tens of microseconds per round — more than the database work. These
//! writers produce the same document as serde (same keys in the same order, the same string
//! escaping, `null` for non-finite floats) with a fraction of the calls. Floats are printed
//! with Rust's shortest round-trip form, which can differ from serde's only in spelling
//! of very large or small ones (`1e16` for `1e+16`); the value read back is identical. The tests compare every writer
//! with serde on fully populated values, so a field added to one of these types fails them.

use chrono::{DateTime, Utc};
use mixseek_core::{
    MemberStatus, MemberSubmission, MemberSubmissionsRecord, MetricScore, ScoreDetails, Usage,
};
use serde_json::Value;
use std::fmt::Write as _;

use crate::model::RoundUsage;

/// Appends `s` as a JSON string literal (escaping as serde_json does).
pub(crate) fn push_str(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue;
        }
        // `i` is at an ASCII byte, so both slices fall on character boundaries.
        out.push_str(&s[start..i]);
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            other => {
                let _ = write!(out, "\\u{other:04x}");
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Powers of ten a float is tried with before falling back to the general formatting.
const POW10: [f64; 7] = [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6];
/// The same as integers.
const POW10_U64: [u64; 7] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000];

/// Appends a float (`null` when it is not finite, as serde_json writes it): the shortest
/// decimal that reads back as the same number.
fn push_f64(out: &mut String, v: f64) {
    if v == 0.0 && v.is_sign_positive() {
        // The most common value (zero costs); checked first, this path is the cheapest.
        out.push_str("0.0");
    } else if !v.is_finite() {
        out.push_str("null");
    } else if let Some((n, k)) = short_decimal(v) {
        push_decimal(out, v < 0.0, n, k);
    } else {
        // Debug keeps the `.0` of whole numbers and uses exponents for extreme ones, like
        // serde (which may pick another, equally short and exact, last digit).
        let _ = write!(out, "{v:?}");
    }
}

/// `(n, k)` with `|v| = n / 10^k` exactly as a double and `k` ≤ 6 as small as possible: the
/// shortest decimal of `|v|` when it has few digits (most scores, costs and timings).
fn short_decimal(v: f64) -> Option<(u64, usize)> {
    let a = v.abs();
    if a >= 1e9 || (v == 0.0 && v.is_sign_negative()) {
        return None;
    }
    for (k, p) in POW10.iter().enumerate() {
        let n = (a * p).round();
        // n / 10^k is exact arithmetic on exact operands, rounded once: the same double as
        // parsing the decimal digits of n with k of them after the point.
        if n / p == a {
            return Some((n as u64, k));
        }
    }
    None
}

/// Appends `n / 10^k` with exactly `k` digits after the point (`.0` when `k` is 0).
fn push_decimal(out: &mut String, negative: bool, n: u64, k: usize) {
    if negative {
        out.push('-');
    }
    let p = POW10_U64[k];
    push_u64(out, n / p);
    out.push('.');
    if k == 0 {
        out.push('0');
        return;
    }
    let mut digits = [b'0'; 20];
    let mut frac = n % p;
    for at in (0..k).rev() {
        digits[at] = b'0' + (frac % 10) as u8;
        frac /= 10;
    }
    out.push_str(std::str::from_utf8(&digits[..k]).unwrap_or_default());
}

/// Appends an unsigned integer (`write!` goes through the formatting machinery, several
/// times slower for the small numbers a round holds).
fn push_u64(out: &mut String, mut v: u64) {
    if v < 10 {
        // Zero counts are the most common numbers in a round's usage.
        out.push(char::from(b'0' + v as u8));
        return;
    }
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
}

/// Appends an optional string (`null` when absent).
fn push_opt_str(out: &mut String, v: Option<&str>) {
    match v {
        Some(s) => push_str(out, s),
        None => out.push_str("null"),
    }
}

/// Appends any JSON value (object keys in their stored order, as serde writes them).
pub(crate) fn push_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                push_u64(out, u);
            } else if let Some(i) = n.as_i64() {
                let _ = write!(out, "{i}");
            } else {
                push_f64(out, n.as_f64().unwrap_or(f64::NAN));
            }
        }
        Value::String(s) => push_str(out, s),
        Value::Array(items) => push_values(out, items),
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_str(out, k);
                out.push(':');
                push_value(out, v);
            }
            out.push('}');
        }
    }
}

/// Appends a JSON array of values (the leader's message history).
pub(crate) fn push_values(out: &mut String, items: &[Value]) {
    out.push('[');
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_value(out, v);
    }
    out.push(']');
}

/// A JSON value as text.
pub(crate) fn value(v: &Value) -> String {
    let mut out = String::with_capacity(64);
    push_value(&mut out, v);
    out
}

/// Appends a [`Usage`] object (its fields in declaration order).
fn push_usage(out: &mut String, u: &Usage) {
    out.push_str("{\"input_tokens\":");
    push_u64(out, u.input_tokens);
    out.push_str(",\"output_tokens\":");
    push_u64(out, u.output_tokens);
    out.push_str(",\"cached_tokens\":");
    push_u64(out, u.cached_tokens);
    out.push_str(",\"requests\":");
    push_u64(out, u.requests);
    out.push_str(",\"cost_usd\":");
    push_f64(out, u.cost_usd);
    out.push_str(",\"unpriced_requests\":");
    push_u64(out, u.unpriced_requests);
    out.push_str(",\"requests_without_usage\":");
    push_u64(out, u.requests_without_usage);
    out.push('}');
}

/// Appends `round_status.stage_usage`: `{"agent":…,"evaluation":…,"judgment":…}`.
pub(crate) fn push_round_usage(out: &mut String, u: &RoundUsage) {
    out.push_str("{\"agent\":");
    push_usage(out, &u.agent);
    out.push_str(",\"evaluation\":");
    push_usage(out, &u.evaluation);
    out.push_str(",\"judgment\":");
    push_usage(out, &u.judgment);
    out.push('}');
}

/// `round_status.stage_usage` as text.
pub(crate) fn round_usage(u: &RoundUsage) -> String {
    let mut out = String::with_capacity(480);
    push_round_usage(&mut out, u);
    out
}

/// Appends one metric: the original's three fields, then `extra` flattened after them.
fn push_metric(out: &mut String, m: &MetricScore) {
    out.push_str("{\"metric_name\":");
    push_str(out, &m.metric_name);
    out.push_str(",\"score\":");
    push_f64(out, m.score);
    out.push_str(",\"evaluator_comment\":");
    push_str(out, &m.evaluator_comment);
    for (k, v) in &m.extra {
        out.push(',');
        push_str(out, k);
        out.push(':');
        push_value(out, v);
    }
    out.push('}');
}

/// Appends `leader_board.score_details`: `{"overall_score":…,"metrics":[…]}`.
pub(crate) fn push_score_details(out: &mut String, d: &ScoreDetails) {
    out.push_str("{\"overall_score\":");
    push_f64(out, d.overall_score);
    out.push_str(",\"metrics\":[");
    for (i, m) in d.metrics.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_metric(out, m);
    }
    out.push_str("]}");
}

/// The status as serde spells it (`rename_all = "UPPERCASE"`).
fn status_name(s: MemberStatus) -> &'static str {
    match s {
        MemberStatus::Success => "SUCCESS",
        MemberStatus::Error => "ERROR",
        MemberStatus::Warning => "WARNING",
    }
}

/// Appends a timestamp as `mixseek_core::time::utc` serializes it.
fn push_time(out: &mut String, t: &DateTime<Utc>) {
    push_str(out, &mixseek_core::time::format_utc(t));
}

/// Appends one member submission (fields in declaration order; `all_messages` only when set).
fn push_submission(out: &mut String, s: &MemberSubmission) {
    out.push_str("{\"agent_name\":");
    push_str(out, &s.agent_name);
    out.push_str(",\"agent_type\":");
    push_str(out, &s.agent_type);
    out.push_str(",\"content\":");
    push_str(out, &s.content);
    out.push_str(",\"status\":");
    push_str(out, status_name(s.status));
    out.push_str(",\"error_message\":");
    push_opt_str(out, s.error_message.as_deref());
    out.push_str(",\"usage\":");
    push_usage(out, &s.usage);
    out.push_str(",\"timestamp\":");
    push_time(out, &s.timestamp);
    out.push_str(",\"execution_time_ms\":");
    match s.execution_time_ms {
        Some(ms) => push_u64(out, ms),
        None => out.push_str("null"),
    }
    if let Some(messages) = &s.all_messages {
        out.push_str(",\"all_messages\":");
        push_values(out, messages);
    }
    out.push('}');
}

/// Appends the submissions with the given status (all of them when `None`) as an array.
fn push_submissions(out: &mut String, subs: &[MemberSubmission], only: Option<MemberStatus>) {
    out.push('[');
    let mut first = true;
    for s in subs.iter().filter(|s| only.is_none_or(|st| s.status == st)) {
        if !first {
            out.push(',');
        }
        first = false;
        push_submission(out, s);
    }
    out.push(']');
}

/// Appends `round_history.member_submissions_record`: what `MemberSubmissionsRecord::to_json` builds
/// (the fields, then the computed lists, counts and `total_usage`).
pub(crate) fn push_member_record(out: &mut String, r: &MemberSubmissionsRecord) {
    out.push_str("{\"execution_id\":");
    push_str(out, r.execution_id.as_str());
    out.push_str(",\"team_id\":");
    push_str(out, r.team_id.as_str());
    out.push_str(",\"team_name\":");
    push_str(out, &r.team_name);
    out.push_str(",\"round_number\":");
    push_u64(out, u64::from(r.round_number));
    out.push_str(",\"submissions\":");
    push_submissions(out, &r.submissions, None);
    out.push_str(",\"successful_submissions\":");
    push_submissions(out, &r.submissions, Some(MemberStatus::Success));
    out.push_str(",\"failed_submissions\":");
    push_submissions(out, &r.submissions, Some(MemberStatus::Error));
    out.push_str(",\"total_count\":");
    push_u64(out, r.total_count() as u64);
    out.push_str(",\"success_count\":");
    push_u64(out, r.success_count() as u64);
    out.push_str(",\"failure_count\":");
    push_u64(out, r.failure_count() as u64);
    out.push_str(",\"total_usage\":");
    push_usage(out, &r.total_usage());
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    fn usage(n: u64) -> Usage {
        Usage {
            input_tokens: n,
            output_tokens: n + 1,
            cached_tokens: n + 2,
            requests: n + 3,
            cost_usd: 0.000_123_4 * n as f64,
            unpriced_requests: n + 4,
            requests_without_usage: n + 5,
        }
    }

    fn submission(status: MemberStatus, all: bool) -> MemberSubmission {
        MemberSubmission {
            agent_name: "web \"search\"".into(),
            agent_type: "plain".into(),
            content: "結果\n\t\\ \u{1} \u{7f} 🎉".into(),
            status,
            error_message: (status == MemberStatus::Error).then(|| "boom".into()),
            usage: usage(7),
            timestamp: Utc
                .with_ymd_and_hms(2025, 11, 19, 12, 0, 0)
                .single()
                .expect("valid")
                + chrono::Duration::microseconds(if all { 123_456 } else { 0 }),
            execution_time_ms: all.then_some(2500),
            all_messages: all.then(|| vec![json!({"kind": "request", "n": -3, "x": 1.5e-9})]),
        }
    }

    /// Byte-equal to serde for the values a run produces, and equal as JSON in every case.
    fn text(write: impl FnOnce(&mut String)) -> String {
        let mut out = String::new();
        write(&mut out);
        out
    }

    fn assert_same(mine: &str, serde_text: &str) {
        let a: Value = serde_json::from_str(mine).expect("valid JSON");
        let b: Value = serde_json::from_str(serde_text).expect("serde JSON");
        assert_eq!(a, b, "\nmine:  {mine}\nserde: {serde_text}");
    }

    #[test]
    fn numbers_are_printed_like_serde() {
        for v in [0u64, 7, 10, 1234567890, u64::MAX] {
            let mut out = String::new();
            push_u64(&mut out, v);
            assert_eq!(out, v.to_string());
        }
        for v in [0.0, -0.0, 1.0, -3.0, 82.5, 0.01, 1e14, 1e15, 0.1 + 0.2] {
            let mut out = String::new();
            push_f64(&mut out, v);
            assert_eq!(out, serde_json::to_string(&v).expect("serde"), "{v}");
        }
        // Exponents are spelt differently (`1e16` vs `1e+16`); the value is the same.
        for v in [1e16, -2.5e-8, 1.7976931348623157e308, 5e-324] {
            let mut out = String::new();
            push_f64(&mut out, v);
            assert_eq!(
                serde_json::from_str::<f64>(&out).expect("parses"),
                v,
                "{out}"
            );
        }
        let mut out = String::new();
        push_f64(&mut out, f64::INFINITY);
        assert_eq!(out, "null");
    }

    #[test]
    fn floats_read_back_exactly_and_usually_match_serde() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in 0..20_000u32 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let v = match i % 4 {
                0 => (x >> 11) as f64 / (1u64 << 53) as f64,
                1 => f64::from((x >> 40) as u32 % 100_000) / 100.0,
                2 => f64::from_bits(x),
                _ => f64::from((x >> 33) as u32) * 1e-6 - 1000.0,
            };
            if !v.is_finite() {
                continue;
            }
            let mut out = String::new();
            push_f64(&mut out, v);
            assert_eq!(
                serde_json::from_str::<f64>(&out).expect("parses"),
                v,
                "{out}"
            );
            let theirs = serde_json::to_string(&v).expect("serde");
            // Elsewhere Rust and serde may spell it differently (`1e-5`, another last digit).
            if short_decimal(v).is_some() {
                assert_eq!(out, theirs);
            }
        }
    }

    #[test]
    fn strings_are_escaped_like_serde() {
        for s in [
            "",
            "plain",
            "q\"b\\s/",
            "\u{0}\u{1f}\u{8}\u{c}\n\r\t",
            "日本語 🎉 \u{7f}",
        ] {
            let mut out = String::new();
            push_str(&mut out, s);
            assert_eq!(out, serde_json::to_string(s).expect("serde"), "{s:?}");
        }
    }

    #[test]
    fn values_match_serde() {
        let v = json!([null, true, false, 0, -12, u64::MAX, 1.0, 0.1, 1e300, -2.5e-8,
            {"z": 1, "a": {"nested": ["x", "y\"z"]}, "é": []}]);
        let Value::Array(items) = &v else {
            unreachable!("an array literal")
        };
        assert_same(
            &text(|o| push_values(o, items)),
            &serde_json::to_string(&v).expect("serde"),
        );
        assert_eq!(
            value(&json!({"b": 1, "a": [1.5, "x"]})),
            r#"{"b":1,"a":[1.5,"x"]}"#
        );
    }

    #[test]
    fn usage_matches_serde() {
        let u = RoundUsage {
            agent: usage(1),
            evaluation: usage(1_000_000),
            judgment: Usage {
                cost_usd: f64::NAN,
                ..Usage::default()
            },
        };
        let mine = round_usage(&u);
        let serde_text = serde_json::to_string(&u).expect("serde");
        assert_same(&mine, &serde_text);
        let plain = RoundUsage {
            agent: usage(1000),
            ..RoundUsage::default()
        };
        assert_eq!(
            round_usage(&plain),
            serde_json::to_string(&plain).expect("serde")
        );
    }

    #[test]
    fn score_details_match_serde() {
        let mut m = MetricScore::new("Coverage", 71.25, "網羅性は \"十分\"");
        m.extra.insert("samples".into(), json!([70.0, 72.5]));
        m.extra.insert("error".into(), Value::Null);
        let d = ScoreDetails {
            overall_score: 83.5,
            metrics: vec![MetricScore::new("ClarityCoherence", 90.0, "clear"), m],
        };
        assert_eq!(
            text(|o| push_score_details(o, &d)),
            serde_json::to_string(&d).expect("serde")
        );
        let empty = ScoreDetails {
            overall_score: 0.0,
            metrics: Vec::new(),
        };
        assert_eq!(
            text(|o| push_score_details(o, &empty)),
            serde_json::to_string(&empty).expect("serde")
        );
    }

    #[test]
    fn member_record_matches_to_json() {
        let r = MemberSubmissionsRecord {
            execution_id: "e".into(),
            team_id: "t".into(),
            team_name: "Team \"T\"".into(),
            round_number: 3,
            submissions: vec![
                submission(MemberStatus::Success, true),
                submission(MemberStatus::Error, false),
                submission(MemberStatus::Warning, true),
            ],
        };
        let mine = text(|o| push_member_record(o, &r));
        let theirs = serde_json::to_string(&r.to_json()).expect("serde");
        assert_same(&mine, &theirs);
        let empty = MemberSubmissionsRecord {
            submissions: Vec::new(),
            ..r
        };
        assert_eq!(
            text(|o| push_member_record(o, &empty)),
            serde_json::to_string(&empty.to_json()).expect("serde")
        );
    }
}
