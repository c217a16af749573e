//! Retry policy: which failures are transient, exponential backoff with jitter, and how
//! long the server asked us to wait (`Retry-After` in seconds or as an HTTP date,
//! `retry-after-ms`, OpenAI's `x-ratelimit-reset-*` and Anthropic's
//! `anthropic-ratelimit-*-reset` headers).

use crate::error::ErrorKind;
use mixseek_config::providers::ProviderSettings;
use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime};

/// Attempts and backoff of one provider.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    pub initial: Duration,
    pub max: Duration,
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
    pub fn from_settings(s: &ProviderSettings) -> Self {
        Self {
            max_attempts: s.max_attempts.max(1),
            initial: Duration::from_secs_f64(s.backoff_initial_seconds.clamp(0.0, 3600.0)),
            max: Duration::from_secs_f64(s.backoff_max_seconds.clamp(0.0, 3600.0)),
        }
    }

    /// The wait after the `failed`-th failed attempt (1-based): `base = initial *
    /// 2^(failed-1)`, plus a random jitter of up to half of it (so between `base` and
    /// `1.5 × base`: the first wait is at least `initial`), never more than `max`.
    pub fn backoff(&self, failed: u32) -> Duration {
        let exp = failed.saturating_sub(1).min(30);
        let base = self.initial.saturating_mul(1u32 << exp).min(self.max);
        (base + (base / 2).mul_f64(fastrand::f64())).min(self.max)
    }

    /// The wait before the next attempt: the backoff, or the server's hint when it asks
    /// for longer (a hint is a floor: `Retry-After: 0` still backs off).
    pub fn wait(&self, failed: u32, hint: Option<Duration>) -> Duration {
        let backoff = self.backoff(failed);
        hint.map_or(backoff, |h| h.max(backoff))
    }
}

/// The error kind of an HTTP status that is not a success.
pub fn classify_status(status: u16) -> ErrorKind {
    match status {
        429 => ErrorKind::RateLimited,
        408 | 500 | 502 | 503 | 504 | 529 => ErrorKind::Server,
        _ => ErrorKind::Permanent,
    }
}

/// How long the server asked us to wait, from the response headers.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    if let Some(v) = get("retry-after") {
        if let Ok(secs) = v.parse::<f64>() {
            if secs.is_finite() && secs >= 0.0 {
                return Some(Duration::from_secs_f64(secs.min(86_400.0)));
            }
        } else if let Ok(at) = httpdate::parse_http_date(v) {
            return Some(
                at.duration_since(SystemTime::now())
                    .unwrap_or(Duration::ZERO),
            );
        }
    }
    // Rate-limit reset headers count only for an exhausted budget.
    let mut wait: Option<Duration> = None;
    for kind in ["requests", "tokens"] {
        if get(&format!("x-ratelimit-remaining-{kind}")) == Some("0")
            && let Some(d) = get(&format!("x-ratelimit-reset-{kind}")).and_then(parse_go_duration)
        {
            wait = Some(wait.map_or(d, |w| w.max(d)));
        }
    }
    for kind in ["requests", "tokens", "input-tokens", "output-tokens"] {
        if get(&format!("anthropic-ratelimit-{kind}-remaining")) == Some("0")
            && let Some(at) = get(&format!("anthropic-ratelimit-{kind}-reset"))
            && let Ok(at) = chrono::DateTime::parse_from_rfc3339(at)
        {
            let d = (at.with_timezone(&chrono::Utc) - chrono::Utc::now())
                .to_std()
                .unwrap_or(Duration::ZERO);
            wait = Some(wait.map_or(d, |w| w.max(d)));
        }
    }
    wait
}

/// Parses durations like `1s`, `6m0s`, `20ms`, `1.5s`, `1h2m` (OpenAI's reset headers).
pub fn parse_go_duration(s: &str) -> Option<Duration> {
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
    (any && total.is_finite() && total >= 0.0).then(|| Duration::from_secs_f64(total))
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

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(parse_go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(parse_go_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_go_duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_go_duration("x"), None);
    }
}
