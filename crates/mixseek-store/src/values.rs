//! How Rust values become the store's SQL values and back: timestamps as epoch microseconds,
//! counts as BIGINT, documents as JSON text (masked where they hold what users wrote). Shared
//! by the statements of `write.rs`, the round staging of `rounds.rs` and the reads (`read.rs`,
//! `arena.rs`, `themes.rs`), with the one helper that runs a read query.

use crate::error::{Result, StoreError};
use chrono::{DateTime, Utc};
use duckdb::{Connection, Row};
use mixseek_core::PiiMasker;

/// A stored INTEGER count as `u32` (negative as 0, too large as `u32::MAX`).
pub(crate) fn u32_of(v: i64) -> u32 {
    u32::try_from(v.max(0)).unwrap_or(u32::MAX)
}

/// A stored BIGINT count as `u64` (negative as 0).
pub(crate) fn u64_of(v: i64) -> u64 {
    u64::try_from(v.max(0)).unwrap_or(0)
}

/// The JSON text of a column as `T` (`what` names the column in the error).
pub(crate) fn decode_json<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| StoreError::decode(what, e))
}

/// Runs one read query on `conn`, each row through `f` (`what` names it in errors).
pub(crate) fn query<T>(
    conn: &Connection,
    what: &str,
    sql: &str,
    params: impl duckdb::Params,
    f: impl FnMut(&Row<'_>) -> duckdb::Result<T>,
) -> Result<Vec<T>> {
    let mut stmt = conn
        .prepare(sql)
        .map_err(StoreError::db(format!("preparing {what}")))?;
    let rows = stmt
        .query_map(params, f)
        .map_err(StoreError::db(format!("reading {what}")))?;
    rows.collect::<duckdb::Result<Vec<T>>>()
        .map_err(StoreError::db(format!("reading {what}")))
}

/// Runs one write statement that takes no parameters, planned once. A statement run through
/// `Connection::execute` is prepared, then planned a second time when it runs: DuckDB re-binds
/// every statement that inserts into or updates a table with a `current_timestamp` default
/// (all the round and execution tables) at each execution. A statement sent as text is planned
/// once (that second planning was 40 % of the writer's planning, 4.6 % of a run's CPU).
pub(crate) fn execute_once(conn: &Connection, sql: &str) -> duckdb::Result<()> {
    conn.execute_batch(sql)
}

/// `text` as an SQL string literal (`'…'`, its quotes doubled), for a statement sent as text
/// ([`execute_once`]); `None` when it holds a NUL character, which SQL text cannot carry.
pub(crate) fn sql_literal(text: &str) -> Option<String> {
    (!text.contains('\0')).then(|| format!("'{}'", text.replace('\'', "''")))
}

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
