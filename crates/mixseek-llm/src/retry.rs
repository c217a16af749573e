//! Retry policy: which failures are transient, exponential backoff with jitter, and how
//! long the server asked us to wait (`Retry-After` in seconds or as an HTTP date,
//! `retry-after-ms`, OpenAI's `x-ratelimit-reset-*` and Anthropic's
//! `anthropic-ratelimit-*-reset` headers).
//!
//! Every value read from a header is untrusted: a value that is not a number, a date or a
//! duration (negative, NaN, infinite, empty, not ASCII) is ignored; a date in the past
//! asks for no wait; any hint is capped at [`MAX_SERVER_WAIT`]. A header sent several
//! times counts with its longest valid value.

use crate::error::ErrorKind;
use mixseek_config::ProviderSettings;
use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime};

/// The longest wait a server's hint can ask for: longer hints (`Retry-After: 1e30`, a date
/// in the year 9999) count as this. A call whose time limit leaves less than the wait
/// fails at once rather than sleeping.
pub const MAX_SERVER_WAIT: Duration = Duration::from_secs(3600);

/// `secs` seconds as a duration within `lo..=hi` (NaN: `lo`).
pub(crate) fn clamped_secs(secs: f64, lo: f64, hi: f64) -> Duration {
    let s = if secs.is_nan() {
        lo
    } else {
        secs.clamp(lo, hi)
    };
    Duration::try_from_secs_f64(s).unwrap_or(Duration::ZERO)
}

/// A server hint of `secs` seconds, capped at [`MAX_SERVER_WAIT`]; `None` when it is not
/// a finite, non-negative number.
fn hint_secs(secs: f64) -> Option<Duration> {
    (secs.is_finite() && secs >= 0.0)
        .then(|| clamped_secs(secs, 0.0, MAX_SERVER_WAIT.as_secs_f64()))
}

/// Attempts and backoff of one provider.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RetryPolicy {
    /// Attempts per call, the first included.
    pub(crate) max_attempts: u32,
    pub(crate) initial: Duration,
    pub(crate) max: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 6,
            initial: Duration::from_millis(500),
            max: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    pub(crate) fn from_settings(s: &ProviderSettings) -> Self {
        Self {
            max_attempts: s.max_attempts.max(1),
            initial: clamped_secs(s.backoff_initial_seconds, 0.0, 3600.0),
            max: clamped_secs(s.backoff_max_seconds, 0.0, 3600.0),
        }
    }

    /// The wait after the `failed`-th failed attempt (1-based): `base = initial *
    /// 2^(failed-1)`, plus a random jitter of up to half of it (so between `base` and
    /// `1.5 × base`: the first wait is at least `initial`), never more than `max`.
    pub(crate) fn backoff(&self, failed: u32) -> Duration {
        let exp = failed.saturating_sub(1).min(30);
        let base = self.initial.saturating_mul(1u32 << exp).min(self.max);
        base.saturating_add((base / 2).mul_f64(fastrand::f64()))
            .min(self.max)
    }

    /// The wait before the next attempt: the backoff, or the server's hint when it asks
    /// for longer (a hint is a floor: `Retry-After: 0` still backs off).
    pub(crate) fn wait(&self, failed: u32, hint: Option<Duration>) -> Duration {
        let backoff = self.backoff(failed);
        hint.map_or(backoff, |h| h.max(backoff))
    }
}

/// The error kind of an HTTP status that is not a success.
pub(crate) fn classify_status(status: u16) -> ErrorKind {
    match status {
        429 => ErrorKind::RateLimited,
        408 | 500 | 502 | 503 | 504 | 529 => ErrorKind::Server,
        _ => ErrorKind::Permanent,
    }
}

/// How long the server asked us to wait, from the response headers (see the module docs:
/// never more than [`MAX_SERVER_WAIT`]; invalid values are ignored).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    // Every value of a header sent several times, as text (values that are not visible
    // ASCII are skipped).
    let values = |name: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::trim)
            .collect::<Vec<_>>()
    };
    // The longest valid wait over every value of `name`.
    let longest = |name: &str, parse: &dyn Fn(&str) -> Option<Duration>| {
        values(name).into_iter().filter_map(parse).max()
    };
    if let Some(d) = longest("retry-after-ms", &|v| {
        v.parse::<f64>().ok().and_then(|ms| hint_secs(ms / 1000.0))
    }) {
        return Some(d);
    }
    if let Some(d) = longest("retry-after", &|v| match v.parse::<f64>() {
        Ok(secs) => hint_secs(secs),
        Err(_) => httpdate::parse_http_date(v).ok().map(|at| {
            at.duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO)
                .min(MAX_SERVER_WAIT)
        }),
    }) {
        return Some(d);
    }
    // Rate-limit reset headers count only for an exhausted budget.
    let exhausted = |name: &str| values(name).contains(&"0");
    let mut wait: Option<Duration> = None;
    for kind in ["requests", "tokens"] {
        if exhausted(&format!("x-ratelimit-remaining-{kind}"))
            && let Some(d) = longest(&format!("x-ratelimit-reset-{kind}"), &|v| {
                parse_go_duration(v).map(|d| d.min(MAX_SERVER_WAIT))
            })
        {
            wait = Some(wait.map_or(d, |w| w.max(d)));
        }
    }
    for kind in ["requests", "tokens", "input-tokens", "output-tokens"] {
        if exhausted(&format!("anthropic-ratelimit-{kind}-remaining"))
            && let Some(d) = longest(&format!("anthropic-ratelimit-{kind}-reset"), &|v| {
                let at = chrono::DateTime::parse_from_rfc3339(v).ok()?;
                let d = at
                    .with_timezone(&chrono::Utc)
                    .signed_duration_since(chrono::Utc::now())
                    .to_std()
                    .unwrap_or(Duration::ZERO);
                Some(d.min(MAX_SERVER_WAIT))
            })
        {
            wait = Some(wait.map_or(d, |w| w.max(d)));
        }
    }
    wait
}

/// Parses durations like `1s`, `6m0s`, `20ms`, `1.5s`, `1h2m` (OpenAI's reset headers); a
/// bare number is seconds. `None` for anything else (a sign, an unknown unit, NaN, an
/// infinite value); a duration too long to represent saturates at [`Duration::MAX`].
pub(crate) fn parse_go_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let mut total = 0.0f64;
    let mut num = String::new();
    let mut chars = s.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let value: f64 = num.parse().ok()?;
        num.clear();
        let unit = match c {
            'h' => 3600.0,
            'm' if chars.peek() == Some(&'s') => {
                chars.next();
                0.001
            }
            'm' => 60.0,
            's' => 1.0,
            _ => return None,
        };
        total += value * unit;
        any = true;
    }
    if !num.is_empty() {
        // A bare number: seconds.
        total += num.parse::<f64>().ok()?;
        any = true;
    }
    if !(any && total.is_finite() && total >= 0.0) {
        return None;
    }
    Some(Duration::try_from_secs_f64(total).unwrap_or(Duration::MAX))
}

/// How a wait reads in a message: `12.5 s`, or the cap for a hint that reached it.
pub(crate) fn describe_wait(wait: Duration) -> String {
    if wait >= MAX_SERVER_WAIT {
        format!(
            "{} s or more (mixseek caps a server's hint at {} s)",
            MAX_SERVER_WAIT.as_secs(),
            MAX_SERVER_WAIT.as_secs()
        )
    } else {
        format!("{:.1} s", wait.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                HeaderName::from_bytes(k.as_bytes()).expect("name"),
                HeaderValue::from_str(v).expect("value"),
            );
        }
        h
    }

    #[test]
    fn statuses_are_classified() {
        for s in [408, 500, 502, 503, 504, 529] {
            assert_eq!(classify_status(s), ErrorKind::Server, "{s}");
        }
        assert_eq!(classify_status(429), ErrorKind::RateLimited);
        for s in [400, 401, 403, 404, 422, 501] {
            assert_eq!(classify_status(s), ErrorKind::Permanent, "{s}");
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_and_caps() {
        let p = RetryPolicy::default();
        for _ in 0..50 {
            let d1 = p.backoff(1);
            assert!(
                d1 >= Duration::from_millis(500) && d1 <= Duration::from_millis(750),
                "{d1:?}"
            );
            let d3 = p.backoff(3);
            assert!(
                d3 >= Duration::from_secs(2) && d3 <= Duration::from_secs(3),
                "{d3:?}"
            );
            let d6 = p.backoff(6);
            assert!(
                d6 >= Duration::from_secs(16) && d6 <= Duration::from_secs(24),
                "{d6:?}"
            );
            assert_eq!(p.backoff(20), Duration::from_secs(30));
        }
    }

    #[test]
    fn server_hints_are_a_floor_not_a_replacement() {
        let p = RetryPolicy::default();
        for _ in 0..50 {
            // `Retry-After: 0` (or a few ms) still backs off.
            assert!(p.wait(1, Some(Duration::ZERO)) >= Duration::from_millis(500));
            assert!(p.wait(2, Some(Duration::from_millis(5))) >= Duration::from_secs(1));
            // A longer hint wins over the backoff.
            assert_eq!(
                p.wait(1, Some(Duration::from_secs(7))),
                Duration::from_secs(7)
            );
            assert!(p.wait(1, None) >= Duration::from_millis(500));
        }
    }

    #[test]
    fn retry_after_seconds_date_ms_and_reset_headers() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")])),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "150")])),
            Some(Duration::from_millis(150))
        );
        let at = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
        let d = retry_after(&headers(&[("retry-after", &at)])).expect("date");
        assert!(
            d > Duration::from_secs(27) && d <= Duration::from_secs(30),
            "{d:?}"
        );
        assert_eq!(
            retry_after(&headers(&[
                ("x-ratelimit-remaining-requests", "0"),
                ("x-ratelimit-reset-requests", "1m30s")
            ])),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            retry_after(&headers(&[
                ("x-ratelimit-remaining-requests", "5"),
                ("x-ratelimit-reset-requests", "1s")
            ])),
            None
        );
        let reset = (chrono::Utc::now() + chrono::Duration::seconds(10)).to_rfc3339();
        let d = retry_after(&headers(&[
            ("anthropic-ratelimit-tokens-remaining", "0"),
            ("anthropic-ratelimit-tokens-reset", &reset),
        ]))
        .expect("anthropic");
        assert!(
            d > Duration::from_secs(8) && d <= Duration::from_secs(10),
            "{d:?}"
        );
        assert_eq!(retry_after(&headers(&[])), None);
    }

    /// Headers from raw byte values (several values of one name allowed).
    fn raw_headers(pairs: &[(&str, &[u8])]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).expect("name"),
                HeaderValue::from_bytes(v).expect("value"),
            );
        }
        h
    }

    #[test]
    fn absurd_numeric_hints_are_capped_or_ignored() {
        let capped = Some(MAX_SERVER_WAIT);
        for (value, expected) in [
            ("1e30", capped),
            ("1e308", capped),
            ("18446744073709551616", capped),
            ("99999999999999999999999999999999999999", capped),
            ("7200", capped),
            ("3600", capped),
            ("-1", None),
            ("-0.5", None),
            ("NaN", None),
            ("nan", None),
            ("inf", None),
            ("-inf", None),
            ("infinity", None),
            ("", None),
            ("   ", None),
            ("soon", None),
            ("1, 2", None),
            ("0x10", None),
        ] {
            assert_eq!(
                retry_after(&headers(&[("retry-after", value)])),
                expected,
                "retry-after: {value:?}"
            );
        }
        for (value, expected) in [
            ("1e30", capped),
            ("1e300", capped),
            ("3600001", capped),
            ("-5", None),
            ("NaN", None),
            ("inf", None),
            ("", None),
        ] {
            // An invalid `retry-after-ms` is ignored, so these fall through to nothing.
            assert_eq!(
                retry_after(&headers(&[("retry-after-ms", value)])),
                expected,
                "retry-after-ms: {value:?}"
            );
        }
        // An invalid `retry-after-ms` leaves the `retry-after` beside it in charge.
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "NaN"), ("retry-after", "3")])),
            Some(Duration::from_secs(3))
        );
    }

    #[test]
    fn dates_far_ahead_are_capped_and_past_dates_ask_for_no_wait() {
        assert_eq!(
            retry_after(&headers(&[(
                "retry-after",
                "Fri, 31 Dec 9999 23:59:59 GMT"
            )])),
            Some(MAX_SERVER_WAIT)
        );
        assert_eq!(
            retry_after(&headers(&[(
                "retry-after",
                "Thu, 01 Jan 1970 00:00:00 GMT"
            )])),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after(&headers(&[(
                "retry-after",
                "Wed, 99 Foo 2024 25:61:61 GMT"
            )])),
            None
        );
        for reset in [
            "9999-12-31T23:59:59Z",
            "9999-12-31T23:59:59+14:00",
            "3000-01-01T00:00:00.123456789Z",
        ] {
            assert_eq!(
                retry_after(&headers(&[
                    ("anthropic-ratelimit-requests-remaining", "0"),
                    ("anthropic-ratelimit-requests-reset", reset),
                ])),
                Some(MAX_SERVER_WAIT),
                "{reset}"
            );
        }
        assert_eq!(
            retry_after(&headers(&[
                ("anthropic-ratelimit-tokens-remaining", "0"),
                ("anthropic-ratelimit-tokens-reset", "1970-01-01T00:00:00Z"),
            ])),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after(&headers(&[
                ("anthropic-ratelimit-tokens-remaining", "0"),
                ("anthropic-ratelimit-tokens-reset", "not a date"),
            ])),
            None
        );
    }

    #[test]
    fn huge_go_durations_are_capped() {
        for reset in [
            "99999999999999999999h",
            "1e30s",
            "9999999999999999999999999999999999999999999999s",
            "5124095576030431h",
            "1.5h99999999999999999999m",
        ] {
            let got = retry_after(&headers(&[
                ("x-ratelimit-remaining-tokens", "0"),
                ("x-ratelimit-reset-tokens", reset),
            ]));
            assert!(
                got.is_none() || got == Some(MAX_SERVER_WAIT),
                "{reset}: {got:?}"
            );
        }
        assert_eq!(
            retry_after(&headers(&[
                ("x-ratelimit-remaining-tokens", "0"),
                ("x-ratelimit-reset-tokens", "99999999999999999999h"),
            ])),
            Some(MAX_SERVER_WAIT)
        );
        for bad in ["-1s", "1x", "s", "..s", "1.2.3s", "NaNs", "infh"] {
            assert_eq!(parse_go_duration(bad), None, "{bad}");
        }
        assert_eq!(
            parse_go_duration("99999999999999999999999999h"),
            Some(Duration::MAX)
        );
    }

    #[test]
    fn non_ascii_values_are_ignored_and_duplicates_take_the_longest_valid_value() {
        let h = raw_headers(&[
            ("retry-after", &b"\xff\xfe12"[..]),
            ("retry-after-ms", &b"\xe2\x80\x8b5"[..]),
        ]);
        assert_eq!(retry_after(&h), None);
        let h = raw_headers(&[
            ("retry-after", &b"2"[..]),
            ("retry-after", &b"nonsense"[..]),
            ("retry-after", &b"5"[..]),
            ("retry-after", &b"-3"[..]),
        ]);
        assert_eq!(retry_after(&h), Some(Duration::from_secs(5)));
        let h = raw_headers(&[("retry-after", &b"1"[..]), ("retry-after", &b"1e30"[..])]);
        assert_eq!(retry_after(&h), Some(MAX_SERVER_WAIT));
        // A budget reported twice, once exhausted.
        let h = raw_headers(&[
            ("x-ratelimit-remaining-requests", &b"7"[..]),
            ("x-ratelimit-remaining-requests", &b"0"[..]),
            ("x-ratelimit-reset-requests", &b"2s"[..]),
        ]);
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
    }

    #[test]
    fn waits_read_in_messages() {
        assert_eq!(describe_wait(Duration::from_millis(2500)), "2.5 s");
        assert!(describe_wait(MAX_SERVER_WAIT).contains("3600 s or more"));
    }

    #[test]
    fn settings_that_are_not_numbers_give_bounded_durations() {
        let s = ProviderSettings {
            backoff_initial_seconds: f64::NAN,
            backoff_max_seconds: f64::INFINITY,
            ..ProviderSettings::default()
        };
        let p = RetryPolicy::from_settings(&s);
        assert_eq!(
            (p.initial, p.max),
            (Duration::ZERO, Duration::from_secs(3600))
        );
        assert_eq!(clamped_secs(-1.0, 0.001, 10.0), Duration::from_millis(1));
    }

    const HINT_HEADERS: &[&str] = &[
        "retry-after",
        "retry-after-ms",
        "x-ratelimit-reset-requests",
        "x-ratelimit-reset-tokens",
        "anthropic-ratelimit-requests-reset",
        "anthropic-ratelimit-tokens-reset",
        "anthropic-ratelimit-input-tokens-reset",
        "anthropic-ratelimit-output-tokens-reset",
    ];

    proptest::proptest! {
        #[test]
        fn any_header_values_give_a_bounded_wait(
            values in proptest::collection::vec(
                (0..HINT_HEADERS.len(), proptest::collection::vec(proptest::num::u8::ANY, 0..40)),
                0..8,
            ),
            text in "\\PC{0,40}",
            exhausted in proptest::bool::ANY,
        ) {
            let mut h = HeaderMap::new();
            if exhausted {
                for name in [
                    "x-ratelimit-remaining-requests",
                    "x-ratelimit-remaining-tokens",
                    "anthropic-ratelimit-requests-remaining",
                    "anthropic-ratelimit-tokens-remaining",
                    "anthropic-ratelimit-input-tokens-remaining",
                    "anthropic-ratelimit-output-tokens-remaining",
                ] {
                    h.append(name, HeaderValue::from_static("0"));
                }
            }
            for (i, bytes) in &values {
                if let Ok(v) = HeaderValue::from_bytes(bytes) {
                    h.append(HINT_HEADERS[*i], v);
                }
                if let Ok(v) = HeaderValue::from_str(&text) {
                    h.append(HINT_HEADERS[*i], v);
                }
            }
            let wait = retry_after(&h);
            proptest::prop_assert!(wait.is_none_or(|w| w <= MAX_SERVER_WAIT), "{wait:?}");
            let _ = parse_go_duration(&text);
        }

        #[test]
        fn numeric_text_gives_a_bounded_wait(
            n in proptest::num::f64::ANY,
            name in 0..HINT_HEADERS.len(),
        ) {
            let mut h = HeaderMap::new();
            h.append("x-ratelimit-remaining-requests", HeaderValue::from_static("0"));
            h.append("x-ratelimit-remaining-tokens", HeaderValue::from_static("0"));
            for text in [n.to_string(), format!("{n:e}"), format!("{n}s"), format!("{n}ms")] {
                if let Ok(v) = HeaderValue::from_str(&text) {
                    h.append(HINT_HEADERS[name], v);
                }
            }
            let wait = retry_after(&h);
            proptest::prop_assert!(wait.is_none_or(|w| w <= MAX_SERVER_WAIT), "{wait:?}");
        }
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(parse_go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(parse_go_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_go_duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_go_duration("x"), None);
    }
}
