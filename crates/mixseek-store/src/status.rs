//! What `mixseek db status` shows about a database file: its schema version, who wrote it
//! (the original MixSeek or mixseek), and what an upgrade would change — found by upgrading
//! the in-memory copy a read-only open reads (see `db.rs`), so the answer is the upgrade's
//! own, not a prediction. Nothing here writes the file.

use crate::db::Store;
use crate::error::Result;
use crate::schema::{self, Found, SCHEMA_VERSION};
use duckdb::{AccessMode, Config, Connection};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Who created the file's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DbOrigin {
    /// A DuckDB file without any mixseek table (mixseek creates them at the first run).
    Empty,
    /// The original Python MixSeek (mixseek-core): its four tables, no `schema_version`.
    Original,
    /// mixseek (this program): a `schema_version` table (the file may have been the
    /// original's before: see [`DbStatus::history`]).
    Mixseek,
}

impl DbOrigin {
    /// How `db status` names it.
    pub fn describe(&self) -> &'static str {
        match self {
            DbOrigin::Empty => "an empty DuckDB database (no mixseek tables yet)",
            DbOrigin::Original => "the original MixSeek (mixseek-core)",
            DbOrigin::Mixseek => "mixseek",
        }
    }
}

/// One row of the file's `schema_version` table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VersionEntry {
    /// The version written.
    pub version: i64,
    /// When (UTC, RFC 3339).
    pub applied_at: String,
    /// What happened (`created`, `upgraded from the original MixSeek schema`, …).
    pub description: String,
}

/// What upgrading the file would do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UpgradePlan {
    /// The version it would be upgraded from …
    pub from: i64,
    /// … and to ([`SCHEMA_VERSION`]).
    pub to: i64,
    /// Where the copy of the file would be made before the upgrade.
    pub backup: PathBuf,
    /// The changes to the tables, one sentence each.
    pub changes: Vec<String>,
}

/// A database file's state (see [`Store::status`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DbStatus {
    /// The file.
    pub path: PathBuf,
    /// Its schema version: 1 for the original's, 0 for a file without mixseek tables.
    pub version: i64,
    /// Who created its tables.
    pub origin: DbOrigin,
    /// The version this build writes.
    pub latest: i64,
    /// Executions stored (finished or not).
    pub executions: usize,
    /// The rows of its `schema_version` table, oldest first (none for the original's file).
    pub history: Vec<VersionEntry>,
    /// What an upgrade would change; `None` when the file is at the latest version.
    pub upgrade: Option<UpgradePlan>,
}

/// The changes an upgrade from `from` makes, one sentence each (kept beside the migration
/// steps of `schema.rs`, which they describe).
fn changes(from: i64) -> Vec<String> {
    let keys = "PRIMARY KEY (id) and UNIQUE (execution_id, team_id, round_number) on \
                round_history, leader_board and round_status; PRIMARY KEY (id) on llm_calls";
    let arenas = "adds the tables arena_runs, arena_games and arena_ratings (pairwise arena \
                  results) and theme_analyses and comment_themes (themes of judge comments)";
    let themes = "adds the tables theme_analyses and comment_themes (themes of judge comments)";
    let experiments = "adds the tables experiments and experiment_items (experiments over task \
                       sets), execution_attachments (the text of attached documents) and \
                       experiment_arenas and experiment_arena_ratings (arenas of an \
                       experiment's variants)";
    let experiment_arenas = "adds the tables experiment_arenas and experiment_arena_ratings \
                             (arenas of an experiment's variants)";
    let mut out: Vec<String> = Vec::new();
    match from {
        0 => out.push("creates mixseek's tables".into()),
        1 => {
            out.push(
                "rebuilds the original's four tables with mixseek's column types, keeping every \
                 row: scores DOUBLE (were FLOAT), timestamps TIMESTAMPTZ read as UTC (were \
                 naive), JSON columns as text"
                    .into(),
            );
            out.push(format!(
                "keeps the original's keys: {keys}; PRIMARY KEY (execution_id) on execution_summary"
            ));
            out.push(
                "adds mixseek's columns (tokens, cost, prompts, judgments, PII-masking flags) \
                 and the tables schema_version and llm_calls; execution_summary.status also \
                 accepts `running` and `interrupted`"
                    .into(),
            );
            out.push(
                "drops the original's six secondary indexes (idx_leader_board_score, …); the \
                 original creates them again when it opens the file"
                    .into(),
            );
            out.push(arenas.into());
            out.push(experiments.into());
        }
        8 => out.push(format!("{experiment_arenas}; no other table is rewritten")),
        _ => {
            if from < 3 {
                out.push("adds round_history.applied_injections".into());
            }
            if from < 4 {
                out.push(
                    "adds round_history.submission_content and submission_sha256, copied from \
                     leader_board"
                        .into(),
                );
            }
            if from < 5 {
                out.push(format!("declares the keys: {keys}"));
            }
            match from {
                5 => out.push(format!("{arenas}; no other table is rewritten")),
                6 => out.push(format!("{themes}; no other table is rewritten")),
                7 => {}
                _ => out.push(arenas.into()),
            }
            if from == 7 {
                out.push(format!("{experiments}; no other table is rewritten"));
            } else {
                out.push(experiments.into());
            }
        }
    }
    out
}

impl Store {
    /// The state of the database file at `path` ([`DbStatus`]), read without writing it: a
    /// missing file is [`StoreError::NotFound`](crate::StoreError::NotFound), and every error of
    /// [`Store::open_read_only`] applies.
    pub fn status(path: impl AsRef<Path>) -> Result<DbStatus> {
        let path = path.as_ref();
        let store = Store::open_read_only(path)?;
        let (version, upgrade) = match store.read_copy() {
            None => (SCHEMA_VERSION, None),
            Some(report) => {
                let mut changes = changes(report.from);
                for d in &report.dropped {
                    changes.push(format!(
                        "drops {} rows of {} that repeat a key {} ({} keys; the newest row of \
                         each is kept), e.g. {}",
                        d.rows,
                        d.table,
                        d.key,
                        d.keys,
                        d.examples.join(", ")
                    ));
                }
                for r in &report.renumbered {
                    changes.push(format!(
                        "gives {} rows of {} new ids (their id was taken by another row, or NULL)",
                        r.rows, r.table
                    ));
                }
                if !report.dropped_columns.is_empty() {
                    changes.push(format!(
                        "does not carry over columns mixseek does not know: {}",
                        report.dropped_columns.join(", ")
                    ));
                }
                let plan = UpgradePlan {
                    from: report.from,
                    to: report.to,
                    backup: crate::backup::next_backup_path(path, report.from),
                    changes,
                };
                (report.from, Some(plan))
            }
        };
        let origin = match version {
            0 => DbOrigin::Empty,
            1 => DbOrigin::Original,
            _ => DbOrigin::Mixseek,
        };
        // the copy of an older file has the simulated upgrade's row: only the file's own rows
        let history = if version >= 2 {
            store.select(
                "SELECT version, applied_at, description
                 FROM schema_version WHERE version <= ? ORDER BY applied_at, version",
                [version],
                |r| {
                    Ok(VersionEntry {
                        version: r.get(0)?,
                        applied_at: crate::read::ts(r, 1)?
                            .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
                            .unwrap_or_default(),
                        description: r.get(2)?,
                    })
                },
            )?
        } else {
            Vec::new()
        };
        let executions = store.executions(None)?.len();
        Ok(DbStatus {
            path: path.to_path_buf(),
            version,
            origin,
            latest: SCHEMA_VERSION,
            executions,
            history,
            upgrade,
        })
    }

    /// The schema version of the file at `path`, found cheaply (the catalogue only) and
    /// without writing: `None` when there is no file yet, 0 for a file without mixseek tables,
    /// 1 for the original's. For announcing an upgrade before a command that writes opens it.
    pub fn schema_version_of(path: impl AsRef<Path>) -> Result<Option<i64>> {
        let path = path.as_ref();
        if !path.is_file() {
            return Ok(None);
        }
        if let Some(open) = crate::db::already_open(path) {
            let version = match open.read_copy() {
                Some(report) => report.from,
                None => SCHEMA_VERSION,
            };
            return Ok(Some(version));
        }
        // A file another process is writing is `Locked` (the merge names such a shard).
        let wrap = |e: duckdb::Error| crate::db::open_error(path, e, false);
        let config = Config::default()
            .access_mode(AccessMode::ReadOnly)
            .map_err(wrap)?
            .enable_autoload_extension(false)
            .map_err(wrap)?;
        let conn = Connection::open_with_flags(path, config).map_err(wrap)?;
        Ok(Some(match schema::detect(&conn)? {
            Found::Empty => 0,
            Found::Original => 1,
            Found::Version(v) => v,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_older_version_has_its_changes() {
        for from in 0..SCHEMA_VERSION {
            assert!(!changes(from).is_empty(), "version {from}");
        }
        assert!(
            changes(1)
                .iter()
                .any(|c| c.contains("keeps the original's keys"))
        );
        assert!(changes(2).iter().any(|c| c.contains("applied_injections")));
        assert!(!changes(4).iter().any(|c| c.contains("submission_content")));
        assert_eq!(changes(5).len(), 2);
        assert!(changes(5)[0].contains("arena_runs"));
        assert!(changes(5)[1].contains("experiment_items"));
        assert_eq!(changes(7).len(), 1);
        assert!(changes(7)[0].contains("execution_attachments"));
        assert!(changes(7)[0].contains("no other table is rewritten"));
        assert!(changes(7)[0].contains("experiment_arena_ratings"));
        assert_eq!(changes(8).len(), 1);
        assert!(changes(8)[0].contains("experiment_arenas"));
        assert!(changes(8)[0].contains("no other table is rewritten"));
    }
}
