//! How Rust values become the store's SQL values: timestamps as epoch microseconds, counts as
//! BIGINT, documents as JSON text (masked where they hold what users wrote). Shared by the
//! statements of `write.rs` and the round staging of `rounds.rs`.

use crate::error::{Result, StoreError};
use chrono::{DateTime, Utc};
use mixseek_core::PiiMasker;

/// SQL for a bound timestamp parameter: epoch microseconds (UTC) → `TIMESTAMPTZ`.
pub(crate) const TS: &str = "make_timestamp(CAST(? AS BIGINT))::TIMESTAMPTZ";

/// A time as epoch microseconds (UTC), the form [`TS`] binds.
pub(crate) fn micros(t: &DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

/// A count as DuckDB's BIGINT (saturating).
pub(crate) fn u64_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Serializes a document stored in a JSON column (`what` names it in the error).
pub(crate) fn json_text<T: serde::Serialize + ?Sized>(v: &T, what: &str) -> Result<String> {
    serde_json::to_string(v)
        .map_err(|e| StoreError::Invalid(format!("cannot serialize {what}: {e}")))
}

/// Masks a JSON document's strings and serializes it (true if anything was masked).
pub(crate) fn masked_json(masker: &PiiMasker, mut v: serde_json::Value) -> (String, bool) {
    let changed = masker.mask_json(&mut v);
    // (a `Value` always serializes: its map keys are strings)
    (v.to_string(), changed)
}
