//! `current_datetime`: an injectable clock, the time zone (settings, `TZ`, UTC), and the
//! original's ISO-8601 format (microseconds only when non-zero, `+00:00` never `Z`).

use crate::error::{PromptError, TimeZoneSource};
use chrono::{DateTime, Timelike, Utc};
use chrono_tz::Tz;
use std::fmt;
use std::sync::Arc;

/// Where the builder gets "now" from. Tests and `mixseek prompt render --now` fix it.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current instant.
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock stopped at one instant.
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub DateTime<Utc>);

impl Clock for FixedClock {
    fn now(&self) -> DateTime<Utc> {
        self.0
    }
}

/// A shared clock handle.
pub type SharedClock = Arc<dyn Clock>;

/// Formats `now` in `tz` as the original does: `YYYY-MM-DDTHH:MM:SS[.ffffff]±HH:MM`, the
/// fraction (6 digits, truncated) only when the microsecond is non-zero.
pub fn format_current_datetime(now: DateTime<Utc>, tz: Tz) -> String {
    let local = now.with_timezone(&tz);
    let micros = local.nanosecond() / 1_000 % 1_000_000;
    if micros == 0 {
        local.format("%Y-%m-%dT%H:%M:%S%:z").to_string()
    } else {
        format!(
            "{}.{micros:06}{}",
            local.format("%Y-%m-%dT%H:%M:%S"),
            local.format("%:z")
        )
    }
}

/// Parses a zone name from `origin`; anything that is not an IANA name (case-sensitive, no
/// POSIX strings, no paths, not empty) is `Invalid timezone in {origin}: {value}. …`.
pub fn parse_time_zone(value: &str, origin: TimeZoneSource) -> Result<Tz, PromptError> {
    mixseek_config::parse_time_zone(value).ok_or_else(|| PromptError::InvalidTimeZone {
        origin,
        value: value.to_string(),
    })
}

/// The zone of `current_datetime`: `configured` (`[prompt_builder] timezone`), else `env_tz`
/// (the value of `TZ`, when set — even empty, which is an error as for any unusable value),
/// else UTC.
pub fn resolve_time_zone(
    configured: Option<&str>,
    env_tz: Option<&str>,
) -> Result<Tz, PromptError> {
    match (configured, env_tz) {
        (Some(name), _) => parse_time_zone(name, TimeZoneSource::Settings),
        (None, Some(name)) => parse_time_zone(name, TimeZoneSource::Env),
        (None, None) => Ok(Tz::UTC),
    }
}

/// The value of the `TZ` environment variable, if set (non-UTF-8 values are passed on
/// lossily so they fail with the standard message).
pub fn env_tz() -> Option<String> {
    std::env::var_os("TZ").map(|v| v.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32, nanos: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s)
            .single()
            .expect("valid")
            .with_nanosecond(nanos)
            .expect("valid")
    }

    #[test]
    fn reference_examples() {
        let t = at(2025, 11, 19, 12, 34, 56, 789_012_000);
        assert_eq!(
            format_current_datetime(t, Tz::UTC),
            "2025-11-19T12:34:56.789012+00:00"
        );
        assert_eq!(
            format_current_datetime(t, Tz::Asia__Tokyo),
            "2025-11-19T21:34:56.789012+09:00"
        );
        let t = at(2025, 11, 25, 5, 30, 0, 0);
        assert_eq!(
            format_current_datetime(t, Tz::America__New_York),
            "2025-11-25T00:30:00-05:00"
        );
        let t = at(2025, 11, 25, 5, 30, 0, 0);
        assert_eq!(
            format_current_datetime(t, Tz::Asia__Tokyo),
            "2025-11-25T14:30:00+09:00"
        );
    }

    #[test]
    fn sub_microseconds_are_truncated_and_zero_micros_dropped() {
        assert_eq!(
            format_current_datetime(at(2025, 1, 2, 3, 4, 5, 999), Tz::UTC),
            "2025-01-02T03:04:05+00:00"
        );
        assert_eq!(
            format_current_datetime(at(2025, 1, 2, 3, 4, 5, 1_999), Tz::UTC),
            "2025-01-02T03:04:05.000001+00:00"
        );
        assert_eq!(
            format_current_datetime(at(2025, 1, 2, 3, 4, 5, 999_999_999), Tz::UTC),
            "2025-01-02T03:04:05.999999+00:00"
        );
        // summer time in New York
        assert_eq!(
            format_current_datetime(at(2025, 7, 1, 12, 0, 0, 500_000_000), Tz::America__New_York),
            "2025-07-01T08:00:00.500000-04:00"
        );
    }

    #[test]
    fn zone_resolution_and_errors() {
        assert_eq!(resolve_time_zone(None, None), Ok(Tz::UTC));
        assert_eq!(
            resolve_time_zone(None, Some("Asia/Tokyo")),
            Ok(Tz::Asia__Tokyo)
        );
        assert_eq!(
            resolve_time_zone(Some("UTC"), Some("Asia/Tokyo")),
            Ok(Tz::UTC)
        );
        let t = at(2025, 1, 1, 0, 0, 0, 0);
        for (name, offset) in [
            ("UTC", "+00:00"),
            ("GMT", "+00:00"),
            ("Etc/GMT-9", "+09:00"),
        ] {
            let tz = resolve_time_zone(None, Some(name)).expect(name);
            assert!(format_current_datetime(t, tz).ends_with(offset), "{name}");
        }
        for bad in [
            "Invalid/Timezone",
            "JST-9",
            ":Asia/Tokyo",
            "asia/tokyo",
            "",
            "/etc/localtime",
        ] {
            let err = resolve_time_zone(None, Some(bad)).expect_err(bad);
            assert_eq!(
                err.to_string(),
                format!(
                    "Invalid timezone in TZ environment variable: {bad}. Valid examples: 'UTC', 'Asia/Tokyo', 'America/New_York'"
                )
            );
        }
        let err = resolve_time_zone(Some("Mars/Olympus"), None).expect_err("bad");
        assert!(err.to_string().starts_with(
            "Invalid timezone in [prompt_builder] timezone: Mars/Olympus. Valid examples:"
        ));
    }
}
