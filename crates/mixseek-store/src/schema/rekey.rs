//! The upgrade to schema version 5: `round_history`, `leader_board`, `round_status` and
//! `llm_calls` are rebuilt with their keys (DuckDB cannot add a PRIMARY KEY or UNIQUE
//! constraint to an existing table), inside the caller's migration transaction.
//!
//! Per table: the old table is renamed, the table created again with its keys, the rows copied
//! (the columns both have; a column added by hand is not carried over and is reported), and the
//! old table dropped. Before version 5 nothing in the database kept a key unique, so a file
//! may hold several rows of one (execution_id, team_id, round_number): the newest is kept (see
//! [`TableKeys::newest`]) and the others dropped; rows whose `id` another kept row has, or
//! NULL, get new ids from the table's sequence. Both are counted in the [`MigrationReport`].
//! The sequence is first moved past the highest id in the table, so no new row can collide
//! with an old id. Rows are copied in `id` order, which keeps the writer's `id >= lowest`
//! filters narrow (see `rounds.rs`).

use super::{
    DroppedDuplicates, KEYED_TABLES, MigrationReport, RenumberedIds, TableKeys, latest_columns,
    table_columns,
};
use crate::error::{Result, StoreError};
use duckdb::Connection;

/// How many duplicated keys a report names.
const EXAMPLES: usize = 5;

/// Rebuilds the four tables with their keys (see the module docs).
pub(crate) fn add_keys(
    conn: &Connection,
    run: &dyn Fn(&str) -> Result<()>,
    from: i64,
    report: &mut MigrationReport,
) -> Result<()> {
    for table in KEYED_TABLES {
        rebuild(conn, run, &table, from, report)?;
    }
    Ok(())
}

fn query_i64(conn: &Connection, sql: &str, what: &str) -> Result<i64> {
    conn.query_row(sql, [], |r| r.get::<_, Option<i64>>(0))
        .map(Option::unwrap_or_default)
        .map_err(StoreError::db(what.to_string()))
}

fn rebuild(
    conn: &Connection,
    run: &dyn Fn(&str) -> Result<()>,
    table: &TableKeys,
    from: i64,
    report: &mut MigrationReport,
) -> Result<()> {
    let name = table.name;
    let old = format!("{name}_before_v5");
    let ours = latest_columns(name);
    let have = table_columns(conn, name)?;
    // the columns both versions have, in the new table's order
    let columns: Vec<&str> = ours
        .iter()
        .copied()
        .filter(|c| have.iter().any(|h| h == c))
        .collect();
    report.dropped_columns.extend(
        have.iter()
            .filter(|h| !ours.contains(&h.as_str()))
            .map(|h| format!("{name}.{h}")),
    );
    run(&format!("ALTER TABLE {name} RENAME TO {old}"))?;
    advance_sequence(conn, run, table.sequence, &old)?;
    run(&table.keyed_ddl())?;

    let total = query_i64(
        conn,
        &format!("SELECT count(*) FROM {old}"),
        "counting the rows to upgrade",
    )?;
    // the rows kept: the newest of each key
    let kept = match table.unique {
        Some(key) => {
            let (keys, rows) = duplicates(conn, &old, key)?;
            if rows > 0 {
                report.dropped.push(DroppedDuplicates {
                    table: name.to_string(),
                    key: format!("({key})"),
                    keys,
                    rows,
                    examples: examples(conn, &old, key)?,
                });
                format!(
                    "(SELECT * FROM {old} QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY {newest}) = 1)",
                    newest = table.newest
                )
            } else {
                old.clone()
            }
        }
        None => old.clone(),
    };
    let renumber = query_i64(
        conn,
        &format!("SELECT count(*) - count(DISTINCT id) FROM {kept}"),
        "counting the ids to upgrade",
    )?;
    let list = columns.join(", ");
    if kept == old && renumber == 0 {
        // the usual case: every key once, every id once (the order is kept as it is)
        run(&format!(
            "INSERT INTO {name} ({list}) SELECT {list} FROM {old}"
        ))?;
    } else {
        if renumber > 0 {
            report.renumbered.push(RenumberedIds {
                table: name.to_string(),
                rows: u64::try_from(renumber).unwrap_or_default(),
            });
        }
        // a NULL id, or one another kept row has (the newest keeps it), gets a new one
        let values: Vec<String> = columns
            .iter()
            .map(|c| match *c {
                "id" => format!(
                    "CASE WHEN id IS NULL OR mixseek_id_rank > 1 THEN nextval('{}') ELSE id END AS id",
                    table.sequence
                ),
                other => other.to_string(),
            })
            .collect();
        run(&format!(
            "INSERT INTO {name} ({list})
             SELECT {list} FROM (
                 SELECT {values} FROM (
                     SELECT *, row_number() OVER (PARTITION BY id ORDER BY {newest}) AS mixseek_id_rank
                     FROM {kept}
                 )
             ) ORDER BY id",
            values = values.join(", "),
            newest = table.newest
        ))?;
    }
    run(&format!("DROP TABLE {old}"))?;
    let copied = query_i64(
        conn,
        &format!("SELECT count(*) FROM {name}"),
        "counting the upgraded rows",
    )?;
    tracing::debug!(
        table = name,
        from,
        total,
        copied,
        "table rebuilt with its keys"
    );
    Ok(())
}

/// (keys with more than one row, rows beyond the first of each) of `table`.
fn duplicates(conn: &Connection, table: &str, key: &str) -> Result<(u64, u64)> {
    conn.query_row(
        &format!(
            "SELECT count(*), coalesce(sum(n - 1), 0) FROM (
                 SELECT count(*) AS n FROM {table} GROUP BY {key} HAVING count(*) > 1
             )"
        ),
        [],
        |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
    )
    .map(|(keys, rows)| {
        (
            u64::try_from(keys).unwrap_or_default(),
            u64::try_from(rows).unwrap_or_default(),
        )
    })
    .map_err(StoreError::db("looking for duplicated keys"))
}

/// A few duplicated keys of `table`, as `a/b/c`.
fn examples(conn: &Connection, table: &str, key: &str) -> Result<Vec<String>> {
    let mut stmt = conn
        .prepare(&format!(
            "SELECT concat_ws('/', {key}) FROM {table} GROUP BY {key} HAVING count(*) > 1
             ORDER BY ALL LIMIT {EXAMPLES}"
        ))
        .map_err(StoreError::db("looking for duplicated keys"))?;
    let rows = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(StoreError::db("looking for duplicated keys"))?;
    rows.collect::<duckdb::Result<Vec<String>>>()
        .map_err(StoreError::db("looking for duplicated keys"))
}

/// Moves `sequence` past the highest id of `table`: the ids a file got from its sequence are
/// below its next value, but a row inserted by hand with an explicit id may not be, and a new
/// row must not collide with it now that `id` is a PRIMARY KEY.
fn advance_sequence(
    conn: &Connection,
    run: &dyn Fn(&str) -> Result<()>,
    sequence: &str,
    table: &str,
) -> Result<()> {
    run(&format!("CREATE SEQUENCE IF NOT EXISTS {sequence}"))?;
    let max_id = query_i64(
        conn,
        &format!("SELECT max(id) FROM {table}"),
        "reading the highest id",
    )?;
    // the next value the sequence hands out
    let next = query_i64(
        conn,
        &format!(
            "SELECT coalesce(last_value + increment_by, start_value) FROM duckdb_sequences()
             WHERE schema_name = 'main' AND sequence_name = '{sequence}'"
        ),
        "reading the sequence",
    )?;
    if max_id < next {
        return Ok(());
    }
    let gap = max_id.saturating_sub(next).saturating_add(1);
    run(&format!(
        "SELECT max(nextval('{sequence}')) FROM range({gap})"
    ))
}
