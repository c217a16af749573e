//! Merging database files: the shards of an experiment (`mixseek experiment merge SHARD.db…
//! -o ALL.db`) are separate DuckDB files, since DuckDB lets one process write a file; this
//! copies their executions into one file.
//!
//! Merging is idempotent. An execution is identified by its id (a UUID, the same in every
//! file); for each execution of an input:
//! * absent from the output: copied, every row of it (`execution_summary`, the round tables,
//!   `llm_calls`, `execution_attachments`); the rows' `id`s come from the output's sequences;
//! * present and finished in the output: left as it is (a finished execution never changes);
//! * present but unfinished in the output (a shard merged while it ran, or killed and rerun
//!   since): replaced by the input's copy when that one is finished or was updated later.
//!
//! Experiments are copied when absent; an experiment present with another definition (another
//! hash) is refused. An item (task × variant × repeat) keeps the execution the output has,
//! unless the input's execution for it is further along (finished where the output's is not,
//! or updated later): a shard rerun from scratch elsewhere played the item with a new
//! execution, and the item then points at the better one (the other stays stored, outside the
//! experiment). Arenas and theme analyses are copied when their id is absent; an arena of an
//! experiment's variants comes with its `experiment_arenas` and `experiment_arena_ratings`
//! rows, so merging it again adds nothing.
//!
//! Each input is merged in one transaction of the output's: a failure leaves the output as
//! it was before that input. Inputs must have this build's schema version (open an older one
//! once with `mixseek db upgrade`). This runs on the output's own connection, outside the
//! writer thread: the CLI merges with no run in the process.

use crate::db::Store;
use crate::error::{Result, StoreError};
use crate::schema::SCHEMA_VERSION;
use duckdb::Connection;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What merging one input did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MergedInput {
    /// The input file.
    pub path: PathBuf,
    /// Executions the output did not have.
    pub added: u64,
    /// Unfinished executions of the output replaced by the input's further copy.
    pub replaced: u64,
    /// Executions the output already had as far (left as they were).
    pub unchanged: u64,
    /// Experiment items added or pointed at the input's execution.
    pub items: u64,
    /// Experiments added.
    pub experiments: u64,
}

/// Executions whose rows belong to them, with the table's columns (the output's `id`
/// sequences number the copied rows: ids differ between files).
const EXECUTION_ROW_TABLES: [&str; 5] = [
    "round_history",
    "leader_board",
    "round_status",
    "llm_calls",
    "execution_attachments",
];

/// Tables keyed by their own id, copied when the id is absent: (table, key column, the
/// table holding the ids).
const KEYED_COPIES: [(&str, &str, &str); 7] = [
    ("arena_games", "arena_id", "arena_runs"),
    ("arena_ratings", "arena_id", "arena_runs"),
    ("experiment_arenas", "arena_id", "arena_runs"),
    ("experiment_arena_ratings", "arena_id", "arena_runs"),
    ("comment_themes", "analysis_id", "theme_analyses"),
    ("arena_runs", "arena_id", "arena_runs"),
    ("theme_analyses", "analysis_id", "theme_analyses"),
];

/// A status's progress: finished executions never change.
const FINISHED: &str = "('completed', 'partial_failure', 'failed')";

/// Merges `inputs` into the database at `output` (created when missing), one input after the
/// other. See the module docs for the rules.
pub fn merge(output: &Path, inputs: &[PathBuf]) -> Result<Vec<MergedInput>> {
    let out_key = std::fs::canonicalize(output).ok();
    for input in inputs {
        if !input.is_file() {
            return Err(if input.exists() {
                StoreError::NotAFile {
                    path: input.clone(),
                }
            } else {
                StoreError::NotFound {
                    path: input.clone(),
                }
            });
        }
        if out_key.is_some() && std::fs::canonicalize(input).ok() == out_key {
            return Err(StoreError::Merge {
                path: input.clone(),
                problem: "it is the output file".into(),
                hint: "name the output with -o as a file other than the inputs".into(),
            });
        }
        let version = Store::schema_version_of(input).map_err(|e| match e {
            StoreError::Locked { .. } => StoreError::Merge {
                path: input.clone(),
                problem: "another process is writing it".into(),
                hint: "wait for the shard's `mixseek experiment run` to finish, then merge".into(),
            },
            StoreError::NotADatabase { detail, .. } => StoreError::Merge {
                path: input.clone(),
                problem: format!("it is not a mixseek database ({detail})"),
                hint: "give the files that `mixseek experiment run --shard I/N` wrote (by \
                       default WORKSPACE/shards/NAME-I-of-N.db)"
                    .into(),
            },
            other => other,
        })?;
        match version {
            Some(v) if v == SCHEMA_VERSION => {}
            found => {
                return Err(StoreError::Merge {
                    path: input.clone(),
                    problem: format!(
                        "it has schema version {}, this mixseek writes version {SCHEMA_VERSION}",
                        found.unwrap_or_default()
                    ),
                    hint: "shards must be written by the same mixseek version as the merge: \
                           upgrade the file first (open its workspace once with `mixseek db \
                           upgrade`), or merge with the mixseek that wrote it"
                        .into(),
                });
            }
        }
    }
    let store = Store::open(output)?;
    // Each input comes as whole tables in one transaction: its rows go to row groups of their
    // own at the checkpoints, instead of being merged again and again with the rows already
    // stored (what DuckDB's vacuum does; see `Store::defer_vacuum`).
    if let Err(e) = store.defer_vacuum() {
        tracing::debug!(error = %e, "merging without deferring the vacuum");
    }
    // One thread: a merge is one statement after the other, and a second DuckDB thread only
    // spun waiting for tasks (16 × 1,000 executions: 12.4 s with two threads, 10.8 s with one).
    store.limit_threads(1)?;
    let conn = store.connection()?;
    // DuckDB's blocks from memory it keeps: each block the copy reads or writes is freed and
    // allocated again, and the allocator returned the freed pages to the system in between, so
    // every reuse faulted fresh pages in (a third of the merge's time, docs/benchmarks.md).
    conn.execute_batch(&format!(
        "SET block_allocator_memory = '{MERGE_BLOCK_MEMORY}'"
    ))
    .map_err(StoreError::db("setting the merge's block memory"))?;
    let mut done = Vec::new();
    for input in inputs {
        done.push(merge_one(&conn, input)?);
    }
    Ok(done)
}

/// The memory DuckDB's block allocator keeps for the merge's blocks: touched as needed and
/// not given back while the output is open (the merge closes it at its end).
const MERGE_BLOCK_MEMORY: &str = "1GB";

/// A file path as a SQL string literal.
fn literal(path: &Path) -> String {
    format!("'{}'", path.to_string_lossy().replace('\'', "''"))
}

/// The columns of `table` in the output, in order, without `id` (renumbered on copy).
fn columns(conn: &Connection, table: &str) -> Result<String> {
    let mut stmt = conn
        .prepare(
            "SELECT column_name FROM information_schema.columns
             WHERE table_catalog = current_database() AND table_schema = 'main'
                 AND table_name = ? AND column_name <> 'id'
             ORDER BY ordinal_position",
        )
        .map_err(StoreError::db("reading the columns to merge"))?;
    let names = stmt
        .query_map([table], |r| r.get::<_, String>(0))
        .map_err(StoreError::db("reading the columns to merge"))?
        .collect::<duckdb::Result<Vec<_>>>()
        .map_err(StoreError::db("reading the columns to merge"))?;
    Ok(names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", "))
}

fn count(conn: &Connection, sql: &str, what: &str) -> Result<u64> {
    conn.query_row(sql, [], |r| r.get::<_, i64>(0))
        .map(|n| u64::try_from(n).unwrap_or_default())
        .map_err(StoreError::db(what.to_string()))
}

fn merge_one(conn: &Connection, input: &Path) -> Result<MergedInput> {
    conn.execute_batch(&format!("ATTACH {} AS shard (READ_ONLY)", literal(input)))
        .map_err(|e| {
            let message = e.to_string();
            if message.contains("lock") {
                StoreError::Merge {
                    path: input.to_path_buf(),
                    problem: "another process is writing it".into(),
                    hint: "wait for the shard's `mixseek experiment run` to finish, then merge"
                        .into(),
                }
            } else {
                StoreError::Open {
                    path: input.to_path_buf(),
                    message,
                    source: Some(e.into()),
                }
            }
        })?;
    let result = (|| {
        conn.execute_batch("BEGIN TRANSACTION")
            .map_err(StoreError::db("starting the merge"))?;
        match copy(conn, input) {
            Ok(r) => {
                conn.execute_batch("COMMIT")
                    .map_err(StoreError::db("committing the merge"))?;
                Ok(r)
            }
            Err(e) => {
                if let Err(rb) = conn.execute_batch("ROLLBACK") {
                    tracing::debug!(error = %rb, "rollback after a failed merge");
                }
                Err(e)
            }
        }
    })();
    if let Err(e) = conn.execute_batch("DETACH shard") {
        tracing::warn!(error = %e, path = %input.display(), "cannot detach a merged file");
    }
    result
}

/// The copy of one attached input (inside a transaction).
fn copy(conn: &Connection, input: &Path) -> Result<MergedInput> {
    let run = |sql: &str, what: &str| {
        conn.execute_batch(sql).map_err(StoreError::db(format!(
            "merging {}: {what}",
            input.display()
        )))
    };
    // Experiments defined otherwise cannot share a file.
    let mut stmt = conn
        .prepare(
            "SELECT s.experiment_id FROM shard.experiments s JOIN main.experiments m
             USING (experiment_id) WHERE s.experiment_hash <> m.experiment_hash",
        )
        .map_err(StoreError::db("comparing experiments"))?;
    let clashing = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(StoreError::db("comparing experiments"))?
        .collect::<duckdb::Result<Vec<_>>>()
        .map_err(StoreError::db("comparing experiments"))?;
    if let Some(name) = clashing.first() {
        return Err(StoreError::Merge {
            path: input.to_path_buf(),
            problem: format!(
                "its experiment `{name}` has another definition than the output's (another \
                 task set, variants or repeats)"
            ),
            hint: "merge only the shards of one run of the experiment; give a changed \
                   experiment another name"
                .into(),
        });
    }

    // Which executions to take from the input.
    run("DROP TABLE IF EXISTS temp.merge_pick", "the executions")?;
    run(
        &format!(
            "CREATE TEMP TABLE merge_pick AS
             SELECT s.execution_id, m.execution_id IS NOT NULL AS present
             FROM shard.execution_summary s
             LEFT JOIN main.execution_summary m USING (execution_id)
             WHERE m.execution_id IS NULL
                OR (m.status NOT IN {FINISHED}
                    AND (s.status IN {FINISHED} OR s.updated_at > m.updated_at))"
        ),
        "choosing the executions",
    )?;
    let picked = count(conn, "SELECT count(*) FROM merge_pick", "counting")?;
    let replaced = count(
        conn,
        "SELECT count(*) FROM merge_pick WHERE present",
        "counting",
    )?;
    let total = count(
        conn,
        "SELECT count(*) FROM shard.execution_summary",
        "counting",
    )?;
    if replaced > 0 {
        for table in EXECUTION_ROW_TABLES
            .iter()
            .chain(["execution_summary"].iter())
        {
            run(
                &format!(
                    "DELETE FROM main.{table} WHERE execution_id IN
                     (SELECT execution_id FROM merge_pick WHERE present)"
                ),
                table,
            )?;
        }
    }
    // When every execution of the input is taken (a new shard, the usual case) its rows are
    // taken whole, without a filter to evaluate on every row: an execution's rows all follow its
    // `execution_summary` row (`ExecutionStarted` writes it first).
    let only_picked = if picked == total && total > 0 {
        ""
    } else {
        "WHERE execution_id IN (SELECT execution_id FROM merge_pick)"
    };
    run(
        &format!(
            "INSERT INTO main.execution_summary SELECT * FROM shard.execution_summary {only_picked}"
        ),
        "execution_summary",
    )?;
    for table in EXECUTION_ROW_TABLES {
        let cols = columns(conn, table)?;
        run(
            &format!(
                "INSERT INTO main.{table} ({cols}) SELECT {cols} FROM shard.{table} {only_picked}"
            ),
            table,
        )?;
    }
    for (table, key, owner) in KEYED_COPIES {
        // The parent table last: its children are copied while their ids are still absent.
        run(
            &format!(
                "INSERT INTO main.{table} SELECT * FROM shard.{table}
                 WHERE {key} NOT IN (SELECT {key} FROM main.{owner})"
            ),
            table,
        )?;
    }
    let experiments = count(
        conn,
        "SELECT count(*) FROM shard.experiments WHERE experiment_id NOT IN
             (SELECT experiment_id FROM main.experiments)",
        "counting",
    )?;
    run(
        "INSERT INTO main.experiments SELECT * FROM shard.experiments
         WHERE experiment_id NOT IN (SELECT experiment_id FROM main.experiments)",
        "experiments",
    )?;
    let items = merge_items(conn, &run)?;
    run("DROP TABLE temp.merge_pick", "cleaning up")?;
    Ok(MergedInput {
        path: input.to_path_buf(),
        added: picked - replaced,
        replaced,
        unchanged: total.saturating_sub(picked),
        items,
        experiments,
    })
}

/// The items of the input: added when the output has none for their key; pointed at the
/// input's execution when it is further along than the output's (see the module docs).
fn merge_items(conn: &Connection, run: &dyn Fn(&str, &str) -> Result<()>) -> Result<u64> {
    // How far an execution is: 2 finished, 1 started, 0 never started (no summary row).
    let progress = |alias: &str| {
        format!(
            "CASE WHEN {alias}.status IN {FINISHED} THEN 2 WHEN {alias}.status IS NULL THEN 0
             ELSE 1 END"
        )
    };
    run("DROP TABLE IF EXISTS temp.merge_items", "items")?;
    run(
        &format!(
            "CREATE TEMP TABLE merge_items AS
             SELECT s.* FROM shard.experiment_items s
             LEFT JOIN main.experiment_items m USING (experiment_id, task_id, variant, repeat_index)
             LEFT JOIN main.execution_summary em ON em.execution_id = m.execution_id
             LEFT JOIN main.execution_summary es ON es.execution_id = s.execution_id
             WHERE m.execution_id IS NULL
                OR (m.execution_id <> s.execution_id
                    AND ({ps} > {pm}
                         OR ({ps} = {pm} AND {ps} < 2 AND es.updated_at > em.updated_at)))",
            ps = progress("es"),
            pm = progress("em"),
        ),
        "choosing the items",
    )?;
    let n = count(conn, "SELECT count(*) FROM merge_items", "counting")?;
    if n > 0 {
        run(
            "DELETE FROM main.experiment_items m USING merge_items s
             WHERE m.experiment_id = s.experiment_id AND m.task_id = s.task_id
                 AND m.variant = s.variant AND m.repeat_index = s.repeat_index",
            "experiment_items",
        )?;
        run(
            "INSERT INTO main.experiment_items SELECT * FROM merge_items",
            "experiment_items",
        )?;
    }
    run("DROP TABLE temp.merge_items", "cleaning up")?;
    Ok(n)
}
