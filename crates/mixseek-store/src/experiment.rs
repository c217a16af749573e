//! Experiments and attachments (schema version 8).
//!
//! * `experiments`: one row per experiment (`experiment_id` is its name), with the hash of what
//!   defines its items and the definition as JSON (variants with their overrides, the task
//!   file, repeats, the baseline, the report's seed and confidence).
//! * `experiment_items`: one row per (experiment, task, variant, repeat), keyed by them, naming
//!   the execution that plays it (UNIQUE: an execution plays one item). The item's state is
//!   its execution's (`execution_summary`), read through a join: an item whose execution has
//!   no summary row yet was never started.
//! * `execution_attachments`: the documents attached to an execution's task, keyed by
//!   (`execution_id`, `position`): name, media type, size, SHA-256 and the extracted text
//!   (masked like every stored text) — never the raw file.
//!
//! All three are written by the writer thread ([`crate::StoreWriter::write_experiment`],
//! [`crate::StoreWriter::write_experiment_item`], [`crate::StoreWriter::write_attachments`]);
//! like the arena tables they have no FOREIGN KEY (DuckDB's foreign keys block updates of the
//! referenced rows, and `execution_summary` is updated all through a run).

use crate::db::Store;
use crate::error::{Result, StoreError};
use crate::values::{TS, micros, query, u64_i64, u64_of};
use chrono::{DateTime, Utc};
use duckdb::{Connection, Row, params};
use mixseek_core::{Attachment, PiiMasker};
use serde::{Deserialize, Serialize};

/// The tables version 8 adds, in creation order.
pub(crate) const EXPERIMENT_TABLES: [&str; 3] =
    ["experiments", "experiment_items", "execution_attachments"];

pub(crate) const EXPERIMENTS: &str = "
CREATE TABLE experiments (
    experiment_id VARCHAR PRIMARY KEY,
    experiment_hash VARCHAR NOT NULL,
    definition VARCHAR NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
";

pub(crate) const EXPERIMENT_ITEMS: &str = "
CREATE TABLE experiment_items (
    experiment_id VARCHAR NOT NULL,
    task_id VARCHAR NOT NULL,
    variant VARCHAR NOT NULL,
    repeat_index INTEGER NOT NULL CHECK (repeat_index >= 0),
    execution_id VARCHAR NOT NULL UNIQUE,
    task_metadata VARCHAR NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (experiment_id, task_id, variant, repeat_index)
);
";

pub(crate) const EXECUTION_ATTACHMENTS: &str = "
CREATE TABLE execution_attachments (
    execution_id VARCHAR NOT NULL,
    position INTEGER NOT NULL CHECK (position >= 0),
    name VARCHAR NOT NULL,
    media_type VARCHAR NOT NULL,
    size_bytes BIGINT NOT NULL CHECK (size_bytes >= 0),
    sha256 VARCHAR NOT NULL,
    text VARCHAR NOT NULL,
    truncated BOOLEAN NOT NULL,
    PRIMARY KEY (execution_id, position)
);
";

/// The tables with their DDL, in creation order.
pub(crate) const EXPERIMENT_DDL: [(&str, &str); 3] = [
    ("experiments", EXPERIMENTS),
    ("experiment_items", EXPERIMENT_ITEMS),
    ("execution_attachments", EXECUTION_ATTACHMENTS),
];

/// An experiment as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentRecord {
    /// The experiment's name.
    pub experiment_id: String,
    /// The hash of what defines its items (a rerun with another definition is refused).
    pub experiment_hash: String,
    /// The definition (variants, task file, repeats, baseline, seed, confidence), as JSON.
    pub definition: serde_json::Value,
    /// When it was first recorded (set by the writer).
    #[serde(default)]
    pub created_at: Option<DateTime<Utc>>,
}

/// One item of an experiment: which execution plays (task, variant, repeat).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentItem {
    /// The experiment's name.
    pub experiment_id: String,
    /// The task's id in the task set.
    pub task_id: String,
    /// The variant's name.
    pub variant: String,
    /// The repeat, from 0.
    pub repeat_index: u32,
    /// The execution that plays it.
    pub execution_id: String,
    /// The task's free metadata (a JSON object).
    pub task_metadata: serde_json::Value,
}

/// An item with the state of its execution (`None` fields: the execution has no summary row
/// yet, so it never started).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ItemState {
    /// The item.
    #[serde(flatten)]
    pub item: ExperimentItem,
    /// The execution's status (`running`, `completed`, `partial_failure`, `failed`,
    /// `interrupted`), `None` when it never started.
    pub status: Option<String>,
    /// The best team's best score.
    pub best_score: Option<f64>,
    /// Input tokens of the execution's LLM calls.
    pub input_tokens: u64,
    /// Output tokens of the execution's LLM calls.
    pub output_tokens: u64,
    /// Cost in US dollars (0 when unpriced).
    pub cost_usd: f64,
    /// Run time in seconds.
    pub seconds: Option<f64>,
}

impl ItemState {
    /// Whether the item's execution ended (it is not played again): completed, partially
    /// failed or failed.
    pub fn finished(&self) -> bool {
        matches!(
            self.status.as_deref(),
            Some("completed" | "partial_failure" | "failed")
        )
    }
}

/// One write of this module, queued to the writer thread.
#[derive(Debug, Clone)]
pub(crate) enum Write {
    /// Records an experiment, or updates its hash and definition.
    Define(ExperimentRecord),
    /// Records an item, or points it at another execution.
    Item(ExperimentItem),
    /// An execution's attachments, masked.
    Attachments {
        execution_id: String,
        attachments: Vec<Attachment>,
    },
    /// An arena of the experiment's variants, validated and masked (`experiment_arena.rs`).
    Arena(Box<crate::experiment_arena::ExperimentArena>),
}

/// Checks an item before it is queued.
pub(crate) fn validate_item(item: &ExperimentItem) -> Result<()> {
    for (field, v) in [
        ("experiment_id", &item.experiment_id),
        ("task_id", &item.task_id),
        ("variant", &item.variant),
        ("execution_id", &item.execution_id),
    ] {
        if v.trim().is_empty() {
            return Err(StoreError::Invalid(format!(
                "experiment item: {field} is empty"
            )));
        }
    }
    if !item.task_metadata.is_object() {
        return Err(StoreError::Invalid(
            "experiment item: task_metadata must be a JSON object".into(),
        ));
    }
    if i32::try_from(item.repeat_index).is_err() {
        return Err(StoreError::Invalid(format!(
            "experiment item: repeat {} is out of range",
            item.repeat_index
        )));
    }
    Ok(())
}

/// The attachments as they are stored: their text masked with `masker`.
pub(crate) fn mask_attachments(list: &[Attachment], masker: &PiiMasker) -> Vec<Attachment> {
    list.iter()
        .map(|a| {
            let mut a = a.clone();
            if let std::borrow::Cow::Owned(m) = masker.mask(&a.text) {
                a.text = m;
            }
            a
        })
        .collect()
}

/// Writes one job (inside the writer's transaction).
pub(crate) fn insert(conn: &Connection, write: &Write, now: DateTime<Utc>) -> Result<()> {
    match write {
        Write::Arena(r) => crate::experiment_arena::insert(conn, r)?,
        Write::Define(r) => {
            let definition = serde_json::to_string(&r.definition)
                .map_err(|e| StoreError::Invalid(format!("experiment definition: {e}")))?;
            conn.execute(
                &format!(
                    "INSERT INTO experiments (experiment_id, experiment_hash, definition, created_at, updated_at)
                     VALUES (?, ?, ?, {TS}, {TS})
                     ON CONFLICT (experiment_id) DO UPDATE SET
                         experiment_hash = excluded.experiment_hash,
                         definition = excluded.definition,
                         updated_at = excluded.updated_at"
                ),
                params![
                    r.experiment_id,
                    r.experiment_hash,
                    definition,
                    micros(&now),
                    micros(&now)
                ],
            )
            .map_err(StoreError::db(format!(
                "writing experiment {}",
                r.experiment_id
            )))?;
        }
        Write::Item(i) => {
            let metadata = serde_json::to_string(&i.task_metadata)
                .map_err(|e| StoreError::Invalid(format!("task metadata: {e}")))?;
            let what = format!(
                "writing item ({}, {}, {}) of experiment {}",
                i.task_id, i.variant, i.repeat_index, i.experiment_id
            );
            let insert = || {
                conn.execute(
                    &format!(
                        "INSERT INTO experiment_items (experiment_id, task_id, variant, repeat_index,
                             execution_id, task_metadata, created_at)
                         VALUES (?, ?, ?, ?, ?, ?, {TS})
                         ON CONFLICT (experiment_id, task_id, variant, repeat_index) DO NOTHING"
                    ),
                    params![
                        i.experiment_id,
                        i.task_id,
                        i.variant,
                        i.repeat_index,
                        i.execution_id,
                        metadata,
                        micros(&now)
                    ],
                )
                .map_err(StoreError::db(what.clone()))
            };
            // A new item (nearly every write) is one insert checked against the key's index;
            // only an item already recorded costs more.
            if insert()? > 0 {
                return Ok(());
            }
            // Recorded already: by this execution (nothing to change), or by another one (a
            // failed item run again), which the item is pointed away from. The old execution
            // stays in the database, no longer part of the experiment.
            let replaced = conn
                .execute(
                    "DELETE FROM experiment_items WHERE experiment_id = ? AND task_id = ?
                         AND variant = ? AND repeat_index = ? AND execution_id <> ?",
                    params![
                        i.experiment_id,
                        i.task_id,
                        i.variant,
                        i.repeat_index,
                        i.execution_id
                    ],
                )
                .map_err(StoreError::db(what.clone()))?;
            if replaced > 0 {
                insert()?;
            }
        }
        Write::Attachments {
            execution_id,
            attachments,
        } => {
            for (position, a) in attachments.iter().enumerate() {
                let position = i32::try_from(position)
                    .map_err(|_| StoreError::Invalid("too many attachments".into()))?;
                conn.execute(
                    "INSERT INTO execution_attachments (execution_id, position, name, media_type,
                         size_bytes, sha256, text, truncated)
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    params![
                        execution_id,
                        position,
                        a.name,
                        a.media_type,
                        u64_i64(a.size_bytes),
                        a.sha256,
                        a.text,
                        a.truncated
                    ],
                )
                .map_err(StoreError::db(format!(
                    "writing attachment {} of execution {execution_id}",
                    a.name
                )))?;
            }
        }
    }
    Ok(())
}

const ITEM_COLUMNS: &str = "i.experiment_id, i.task_id, i.variant, i.repeat_index, i.execution_id,
    i.task_metadata, e.status, e.best_score, e.input_tokens, e.output_tokens, e.cost_usd,
    e.total_execution_time_seconds";

fn item_of(r: &Row<'_>) -> duckdb::Result<ItemState> {
    let metadata: String = r.get(5)?;
    let repeat: i64 = r.get(3)?;
    Ok(ItemState {
        item: ExperimentItem {
            experiment_id: r.get(0)?,
            task_id: r.get(1)?,
            variant: r.get(2)?,
            repeat_index: u32::try_from(repeat).unwrap_or_default(),
            execution_id: r.get(4)?,
            task_metadata: serde_json::from_str(&metadata)
                .unwrap_or_else(|_| serde_json::json!({})),
        },
        status: r.get(6)?,
        best_score: r.get(7)?,
        input_tokens: u64_of(r.get::<_, Option<i64>>(8)?.unwrap_or_default()),
        output_tokens: u64_of(r.get::<_, Option<i64>>(9)?.unwrap_or_default()),
        cost_usd: r.get::<_, Option<f64>>(10)?.unwrap_or_default(),
        seconds: r.get(11)?,
    })
}

/// A listed experiment, with counts of its items by state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentListing {
    /// The experiment's name.
    pub experiment_id: String,
    /// When it was first recorded.
    pub created_at: Option<DateTime<Utc>>,
    /// Its items.
    pub items: u64,
    /// Items whose execution ended.
    pub finished: u64,
}

impl Store {
    /// A connection to read the experiment tables with, or `None` on a database without them
    /// (a schema older than version 8: the reads then find no experiment).
    fn experiment_connection(&self) -> Result<Option<Connection>> {
        let conn = self.connection()?;
        Ok(crate::schema::table_exists(&conn, "experiments")?.then_some(conn))
    }

    /// The experiment named `experiment_id`, if recorded.
    pub fn experiment(&self, experiment_id: &str) -> Result<Option<ExperimentRecord>> {
        let Some(conn) = self.experiment_connection()? else {
            return Ok(None);
        };
        let rows = query(
            &conn,
            "the experiment",
            "SELECT experiment_id, experiment_hash, definition, created_at FROM experiments
             WHERE experiment_id = ?",
            [experiment_id],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    crate::read::ts(r, 3)?,
                ))
            },
        )?;
        let Some((experiment_id, experiment_hash, definition, created_at)) =
            rows.into_iter().next()
        else {
            return Ok(None);
        };
        Ok(Some(ExperimentRecord {
            experiment_id,
            experiment_hash,
            definition: crate::values::decode_json(&definition, "experiments.definition")?,
            created_at,
        }))
    }

    /// Every experiment, newest first, with its item counts.
    pub fn experiments(&self) -> Result<Vec<ExperimentListing>> {
        let Some(conn) = self.experiment_connection()? else {
            return Ok(Vec::new());
        };
        query(
            &conn,
            "the experiments",
            "SELECT x.experiment_id, x.created_at, count(i.execution_id),
                 count(*) FILTER (WHERE e.status IN ('completed', 'partial_failure', 'failed'))
             FROM experiments x
             LEFT JOIN experiment_items i USING (experiment_id)
             LEFT JOIN execution_summary e ON e.execution_id = i.execution_id
             GROUP BY x.experiment_id, x.created_at
             ORDER BY x.created_at DESC, x.experiment_id",
            [],
            |r| {
                Ok(ExperimentListing {
                    experiment_id: r.get(0)?,
                    created_at: crate::read::ts(r, 1)?,
                    items: u64_of(r.get(2)?),
                    finished: u64_of(r.get(3)?),
                })
            },
        )
    }

    /// The items of an experiment with their executions' states, by task, variant and repeat.
    pub fn experiment_items(&self, experiment_id: &str) -> Result<Vec<ItemState>> {
        let Some(conn) = self.experiment_connection()? else {
            return Ok(Vec::new());
        };
        query(
            &conn,
            "the experiment's items",
            &format!(
                "SELECT {ITEM_COLUMNS} FROM experiment_items i
                 LEFT JOIN execution_summary e ON e.execution_id = i.execution_id
                 WHERE i.experiment_id = ?
                 ORDER BY i.task_id, i.variant, i.repeat_index"
            ),
            [experiment_id],
            item_of,
        )
    }

    /// The experiment item `execution_id` plays, if it plays one (an execution plays at most
    /// one: `execution_id` is UNIQUE). The web UI's results page links back to the experiment
    /// with it.
    pub fn experiment_item_of(&self, execution_id: &str) -> Result<Option<ExperimentItem>> {
        let Some(conn) = self.experiment_connection()? else {
            return Ok(None);
        };
        let rows = query(
            &conn,
            "the execution's experiment item",
            &format!(
                "SELECT {ITEM_COLUMNS} FROM experiment_items i
                 LEFT JOIN execution_summary e ON e.execution_id = i.execution_id
                 WHERE i.execution_id = ?"
            ),
            [execution_id],
            item_of,
        )?;
        Ok(rows.into_iter().next().map(|s| s.item))
    }

    /// The attachments stored for an execution, in order.
    pub fn attachments(&self, execution_id: &str) -> Result<Vec<Attachment>> {
        let Some(conn) = self.experiment_connection()? else {
            return Ok(Vec::new());
        };
        query(
            &conn,
            "the execution's attachments",
            "SELECT name, media_type, size_bytes, sha256, text, truncated
             FROM execution_attachments WHERE execution_id = ? ORDER BY position",
            [execution_id],
            |r| {
                Ok(Attachment {
                    name: r.get(0)?,
                    media_type: r.get(1)?,
                    size_bytes: u64_of(r.get(2)?),
                    sha256: r.get(3)?,
                    text: r.get(4)?,
                    truncated: r.get(5)?,
                })
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(task: &str, execution: &str, note: &str) -> Write {
        Write::Item(ExperimentItem {
            experiment_id: "copper".into(),
            task_id: task.into(),
            variant: "base".into(),
            repeat_index: 0,
            execution_id: execution.into(),
            task_metadata: serde_json::json!({ "note": note }),
        })
    }

    fn rows(conn: &Connection) -> Vec<(String, String, String)> {
        let mut stmt = conn
            .prepare(
                "SELECT task_id, execution_id, task_metadata FROM experiment_items ORDER BY ALL",
            )
            .expect("prepare");
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("query")
            .collect::<duckdb::Result<Vec<_>>>()
            .expect("rows")
    }

    #[test]
    fn an_item_is_inserted_kept_when_written_again_and_replaced_for_another_execution() {
        let conn = Connection::open_in_memory().expect("db");
        crate::schema::migrate(&conn, std::path::Path::new(":memory:")).expect("schema");
        let now = Utc::now();
        let write = |w: &Write| crate::writer::in_transaction(&conn, |c| insert(c, w, now));
        write(&item("t1", "e1", "first")).expect("new");
        write(&item("t2", "e2", "first")).expect("new");
        let row = |t: &str, e: &str, note: &str| {
            (
                t.to_string(),
                e.to_string(),
                format!("{{\"note\":\"{note}\"}}"),
            )
        };
        assert_eq!(
            rows(&conn),
            [row("t1", "e1", "first"), row("t2", "e2", "first")]
        );
        // the same execution again (a rerun that records it once more): kept as it was
        write(&item("t1", "e1", "second")).expect("again");
        assert_eq!(
            rows(&conn),
            [row("t1", "e1", "first"), row("t2", "e2", "first")]
        );
        // another execution (a failed item played again): the item points at it
        write(&item("t1", "e3", "retry")).expect("retry");
        assert_eq!(
            rows(&conn),
            [row("t1", "e3", "retry"), row("t2", "e2", "first")]
        );
        // an execution plays one item only
        let err = write(&item("t9", "e2", "x")).expect_err("e2 plays t2");
        assert!(err.is_duplicate_key(), "{err}");
        assert_eq!(rows(&conn).len(), 2);
    }
}
