//! Timestamp serialization as the original prints it: ISO-8601, microseconds only when
//! non-zero, UTC written as `Z` in JSON output (pydantic's behaviour).

use chrono::{DateTime, SecondsFormat, Timelike, Utc};
use serde::{Deserialize, Deserializer, Serializer};

/// `2025-11-19T12:34:56.789012Z`, or `2025-11-19T12:34:56Z` when the microseconds are zero.
pub fn format_utc(t: &DateTime<Utc>) -> String {
    let micros = t.nanosecond() / 1_000;
    if micros == 0 {
        t.to_rfc3339_opts(SecondsFormat::Secs, true)
    } else {
        format!(
            "{}.{:06}Z",
            t.format("%Y-%m-%dT%H:%M:%S"),
            micros % 1_000_000
        )
    }
}

/// The current time truncated to microseconds (the precision everything downstream keeps).
pub fn now_utc() -> DateTime<Utc> {
    let now = Utc::now();
    let micros = now.timestamp_subsec_micros();
    now.with_nanosecond(micros * 1_000).unwrap_or(now)
}

/// Serde adapter for `DateTime<Utc>` fields.
pub mod utc {
    use super::*;

    /// Writes `t` as [`format_utc`] does.
    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_utc(t))
    }

    /// Reads an RFC 3339 timestamp.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let raw = String::deserialize(d)?;
        DateTime::parse_from_rfc3339(&raw)
            .map(|t| t.with_timezone(&Utc))
            .map_err(serde::de::Error::custom)
    }
}

/// Serde adapter for `Option<DateTime<Utc>>` fields.
pub mod utc_opt {
    use super::*;

    /// Writes `t` as [`format_utc`] does, or `null`.
    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&format_utc(t)),
            None => s.serialize_none(),
        }
    }

    /// Reads an RFC 3339 timestamp or `null`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        let raw = Option::<String>::deserialize(d)?;
        raw.map(|raw| {
            DateTime::parse_from_rfc3339(&raw)
                .map(|t| t.with_timezone(&Utc))
                .map_err(serde::de::Error::custom)
        })
        .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn whole_seconds_have_no_fraction() {
        let t = Utc
            .with_ymd_and_hms(2025, 11, 19, 12, 34, 56)
            .single()
            .expect("valid");
        assert_eq!(format_utc(&t), "2025-11-19T12:34:56Z");
    }

    #[test]
    fn microseconds_are_printed_with_six_digits() {
        let t = Utc
            .with_ymd_and_hms(2025, 11, 19, 12, 34, 56)
            .single()
            .expect("valid")
            .with_nanosecond(789_000_000)
            .expect("valid");
        assert_eq!(format_utc(&t), "2025-11-19T12:34:56.789000Z");
    }
}
