//! The database schema, its version and the forward migrations.
//!
//! Version 1 is the original Python MixSeek's schema (four tables, no `schema_version` table);
//! version 2 is ours: the same table and column names, scores as `DOUBLE`, every timestamp a
//! `TIMESTAMPTZ` bound explicitly in UTC, usage columns, the rendered prompt, PII-masking
//! columns, `llm_calls` and `schema_version`. JSON payloads are stored as `VARCHAR` holding
//! JSON text: DuckDB's `JSON` type lives in its json extension, which the bundled build does
//! not include (and fetching it at run time would need the network); DuckDB's JSON functions
//! accept the text columns as they are.
//!
//! Version 3 dropped the UNIQUE (execution_id, team_id, round_number) constraints of
//! `round_history`, `leader_board` and `round_status` (the writer kept the keys unique itself,
//! for speed) and added `round_history.applied_injections` (JSON: the prompt-injection rules
//! applied per phase; NULL for rounds stored before).
//!
//! Version 4 adds `round_history.submission_content` and `submission_sha256`: the leader's
//! submission is kept with the round's transcript, so a round whose evaluation failed (a
//! `round_history` row without `leader_board` / `round_status` rows: not completed) still has
//! it. The upgrade copies them from `leader_board` for the rounds stored before.
//!
//! Version 5 declares the keys again, so the database enforces them whoever writes: `id` is
//! the PRIMARY KEY of `round_history`, `leader_board`, `round_status` and `llm_calls`, and the
//! three round tables have UNIQUE (execution_id, team_id, round_number), as in the original
//! (`execution_summary` keeps its PRIMARY KEY (execution_id)). The writer upserts through them
//! (`INSERT … ON CONFLICT (execution_id, team_id, round_number) DO UPDATE`, see `rounds.rs`).
//! The upgrade ([`rekey`]) rebuilds the four tables with their keys (DuckDB cannot add a
//! constraint to a table); a file holding several rows of one key keeps the newest (by
//! `updated_at`, then `created_at`, then the highest `id`), and rows sharing an `id` (or
//! without one) get new ids from the table's sequence; both are reported
//! ([`MigrationReport`]) and logged.
//!
//! Version 6 adds the pairwise-arena tables `arena_runs`, `arena_games` and `arena_ratings`
//! (see [`crate::arena`]; their DDL lives there). The upgrade from version 5 only creates
//! them: no existing table is rewritten.
//!
//! Version 7 adds the tables of theme analyses, `theme_analyses` and `comment_themes` (see
//! [`crate::themes`]); the upgrade from version 6 only creates them.
//!
//! Version 8 adds the experiment tables `experiments` and `experiment_items` and the
//! attachments of executions, `execution_attachments` (see [`crate::experiment`]); the
//! upgrade from version 7 only creates them.
//!
//! Version 9 adds the tables of arenas over an experiment's variants, `experiment_arenas` and
//! `experiment_arena_ratings` (see [`crate::experiment_arena`]); the upgrade from version 8
//! only creates them.
//!
//! A fresh file gets the latest schema directly. An older file is first copied next to itself
//! (`mixseek.db.v4.bak`, never overwriting an existing backup: `mixseek.db.v4.1.bak`, …; see
//! [`crate::backup`]), then upgraded in one transaction (so a failed upgrade leaves it
//! untouched); a newer file is refused, and so is a DuckDB file whose tables are not mixseek's
//! ([`StoreError::ForeignSchema`]): mixseek never adds its tables to another program's
//! database.

pub(crate) use crate::arena::ARENA_TABLES;
use crate::arena::{ARENA_DDL, ARENA_GAMES, ARENA_RATINGS, ARENA_RUNS};
use crate::error::{Result, StoreError};
pub(crate) use crate::experiment::EXPERIMENT_TABLES;
use crate::experiment::{EXECUTION_ATTACHMENTS, EXPERIMENT_DDL, EXPERIMENT_ITEMS, EXPERIMENTS};
pub(crate) use crate::experiment_arena::EXPERIMENT_ARENA_TABLES;
use crate::experiment_arena::{EXPERIMENT_ARENA_DDL, EXPERIMENT_ARENA_RATINGS, EXPERIMENT_ARENAS};
pub(crate) use crate::themes::THEME_TABLES;
use crate::themes::{COMMENT_THEMES, THEME_ANALYSES, THEME_DDL};
use duckdb::Connection;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The version-5 upgrade step that rebuilds the keyed tables (a part of the migration only).
mod rekey;

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = 9;

/// Our tables, in dependency-free creation order.
pub const TABLES: [&str; 16] = [
    "schema_version",
    "execution_summary",
    "round_history",
    "leader_board",
    "round_status",
    "llm_calls",
    "arena_runs",
    "arena_games",
    "arena_ratings",
    "theme_analyses",
    "comment_themes",
    "experiments",
    "experiment_items",
    "execution_attachments",
    "experiment_arenas",
    "experiment_arena_ratings",
];

/// Tables whose rows belong to one execution (exported, filtered by `execution_id`). The arena
/// tables are keyed by arena ([`ARENA_TABLES`]), the theme tables by analysis
/// ([`THEME_TABLES`]).
pub(crate) const EXECUTION_TABLES: [&str; 5] = [
    "execution_summary",
    "leader_board",
    "round_history",
    "round_status",
    "llm_calls",
];

/// Columns holding JSON text.
pub(crate) const JSON_COLUMNS: [&str; 18] = [
    "message_history",
    "member_submissions_record",
    "score_details",
    "team_results",
    "teams",
    "failed_teams_info",
    "usage_by_role",
    "usage",
    "judgment",
    "stage_usage",
    "applied_injections",
    "execution_ids",
    "judge_models",
    "settings",
    "rounds",
    "evidence",
    "definition",
    "task_metadata",
];

const SEQUENCES: &str = "
CREATE SEQUENCE IF NOT EXISTS round_history_id_seq;
CREATE SEQUENCE IF NOT EXISTS leader_board_id_seq;
CREATE SEQUENCE IF NOT EXISTS round_status_id_seq;
CREATE SEQUENCE IF NOT EXISTS execution_summary_id_seq;
CREATE SEQUENCE IF NOT EXISTS llm_calls_id_seq;
";

const SCHEMA_VERSION_TABLE: &str = "
CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    description VARCHAR NOT NULL
);
";

const EXECUTION_SUMMARY: &str = "
CREATE TABLE execution_summary (
    execution_id VARCHAR PRIMARY KEY,
    user_prompt VARCHAR NOT NULL,
    status VARCHAR NOT NULL CHECK (status IN ('running', 'completed', 'partial_failure', 'failed', 'interrupted')),
    team_results VARCHAR NOT NULL DEFAULT '[]',
    total_teams INTEGER NOT NULL,
    best_team_id VARCHAR,
    best_score DOUBLE,
    total_execution_time_seconds DOUBLE,
    completed_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    teams VARCHAR NOT NULL DEFAULT '[]',
    config_hash VARCHAR,
    max_rounds INTEGER,
    failed_teams_info VARCHAR NOT NULL DEFAULT '[]',
    input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    cost_usd DOUBLE NOT NULL DEFAULT 0,
    usage VARCHAR,
    usage_by_role VARCHAR,
    stop_reason VARCHAR,
    prompt_sha256 VARCHAR,
    pii_masked BOOLEAN NOT NULL DEFAULT FALSE
);
";

const ROUND_HISTORY: &str = "
CREATE TABLE round_history (
    id INTEGER DEFAULT nextval('round_history_id_seq'),
    execution_id VARCHAR NOT NULL,
    team_id VARCHAR NOT NULL,
    team_name VARCHAR NOT NULL,
    round_number INTEGER NOT NULL,
    message_history VARCHAR,
    member_submissions_record VARCHAR,
    prompt VARCHAR,
    prompt_sha256 VARCHAR,
    pii_masked BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    applied_injections VARCHAR,
    submission_content VARCHAR,
    submission_sha256 VARCHAR
);
";

const LEADER_BOARD: &str = "
CREATE TABLE leader_board (
    id INTEGER DEFAULT nextval('leader_board_id_seq'),
    execution_id VARCHAR NOT NULL,
    team_id VARCHAR NOT NULL,
    team_name VARCHAR NOT NULL,
    round_number INTEGER NOT NULL,
    submission_content VARCHAR NOT NULL,
    submission_format VARCHAR NOT NULL DEFAULT 'md',
    score DOUBLE NOT NULL,
    score_details VARCHAR NOT NULL,
    final_submission BOOLEAN NOT NULL DEFAULT FALSE,
    exit_reason VARCHAR,
    created_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    submission_sha256 VARCHAR,
    pii_masked BOOLEAN NOT NULL DEFAULT FALSE
);
";

const ROUND_STATUS: &str = "
CREATE TABLE round_status (
    id INTEGER DEFAULT nextval('round_status_id_seq'),
    execution_id VARCHAR NOT NULL,
    team_id VARCHAR NOT NULL,
    team_name VARCHAR NOT NULL,
    round_number INTEGER NOT NULL,
    should_continue BOOLEAN,
    reasoning VARCHAR,
    confidence_score DOUBLE,
    round_started_at TIMESTAMPTZ,
    round_ended_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    judgment VARCHAR,
    exit_reason VARCHAR,
    input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    cached_tokens BIGINT NOT NULL DEFAULT 0,
    requests BIGINT NOT NULL DEFAULT 0,
    cost_usd DOUBLE NOT NULL DEFAULT 0,
    stage_usage VARCHAR
);
";

const LLM_CALLS: &str = "
CREATE TABLE llm_calls (
    id BIGINT DEFAULT nextval('llm_calls_id_seq'),
    execution_id VARCHAR,
    team_id VARCHAR,
    round_number INTEGER,
    role VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cached_tokens BIGINT NOT NULL,
    requests BIGINT NOT NULL,
    cost_usd DOUBLE NOT NULL,
    priced BOOLEAN NOT NULL,
    latency_ms BIGINT NOT NULL,
    attempts INTEGER NOT NULL,
    cache_hit BOOLEAN NOT NULL,
    error VARCHAR,
    called_at TIMESTAMPTZ NOT NULL
);
";

/// What version 5 declares on the round tables …
const ROUND_KEYS: &str = "PRIMARY KEY (id), UNIQUE (execution_id, team_id, round_number)";
/// … and on `llm_calls`.
const ID_KEY: &str = "PRIMARY KEY (id)";

/// A table that version 5 gives keys (rebuilt with them by the upgrade, see [`rekey`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TableKeys {
    pub name: &'static str,
    /// The table as version 4 had it (no keys).
    pub ddl: &'static str,
    /// The constraints appended to it.
    pub keys: &'static str,
    /// The sequence its `id` comes from.
    pub sequence: &'static str,
    /// The UNIQUE key beside `id`, if any.
    pub unique: Option<&'static str>,
    /// Which of several rows is the newest (an `ORDER BY` list, newest first).
    pub newest: &'static str,
}

impl TableKeys {
    /// `CREATE TABLE` with the keys.
    pub(crate) fn keyed_ddl(&self) -> String {
        let body = self.ddl.trim_end().trim_end_matches(';').trim_end();
        let body = body.strip_suffix(')').unwrap_or(body).trim_end();
        format!("{body},\n    {}\n);", self.keys)
    }
}

/// The round tables' "newest first" order.
const NEWEST_ROUND: &str =
    "updated_at DESC NULLS LAST, created_at DESC NULLS LAST, id DESC NULLS LAST";

/// The tables with keys, in creation order.
pub(crate) const KEYED_TABLES: [TableKeys; 4] = [
    TableKeys {
        name: "round_history",
        ddl: ROUND_HISTORY,
        keys: ROUND_KEYS,
        sequence: "round_history_id_seq",
        unique: Some("execution_id, team_id, round_number"),
        newest: NEWEST_ROUND,
    },
    TableKeys {
        name: "leader_board",
        ddl: LEADER_BOARD,
        keys: ROUND_KEYS,
        sequence: "leader_board_id_seq",
        unique: Some("execution_id, team_id, round_number"),
        newest: NEWEST_ROUND,
    },
    TableKeys {
        name: "round_status",
        ddl: ROUND_STATUS,
        keys: ROUND_KEYS,
        sequence: "round_status_id_seq",
        unique: Some("execution_id, team_id, round_number"),
        newest: NEWEST_ROUND,
    },
    TableKeys {
        name: "llm_calls",
        ddl: LLM_CALLS,
        keys: ID_KEY,
        sequence: "llm_calls_id_seq",
        unique: None,
        newest: "called_at DESC NULLS LAST, id DESC NULLS LAST",
    },
];

/// Every table of the latest schema with its DDL (unkeyed: the columns are what matters).
const TABLE_DDL: [(&str, &str); 16] = [
    ("schema_version", SCHEMA_VERSION_TABLE),
    ("execution_summary", EXECUTION_SUMMARY),
    ("round_history", ROUND_HISTORY),
    ("leader_board", LEADER_BOARD),
    ("round_status", ROUND_STATUS),
    ("llm_calls", LLM_CALLS),
    ARENA_DDL[0],
    ARENA_DDL[1],
    ARENA_DDL[2],
    THEME_DDL[0],
    THEME_DDL[1],
    EXPERIMENT_DDL[0],
    EXPERIMENT_DDL[1],
    EXPERIMENT_DDL[2],
    EXPERIMENT_ARENA_DDL[0],
    EXPERIMENT_ARENA_DDL[1],
];

/// The tables version 6 (the arena's), 7 (theme analyses), 8 (experiments, attachments) and 9
/// (experiment arenas) add: older versions do not have them.
fn table_added_after(version: i64, table: &str) -> bool {
    (version < 6 && ARENA_TABLES.contains(&table))
        || (version < 7 && THEME_TABLES.contains(&table))
        || (version < 8 && EXPERIMENT_TABLES.contains(&table))
        || (version < 9 && EXPERIMENT_ARENA_TABLES.contains(&table))
}

/// The columns of one of this module's `CREATE TABLE` statements, in order (the first word of
/// each line between the parentheses; constraint lines skipped).
pub(crate) fn ddl_columns(ddl: &str) -> Vec<&str> {
    let (Some(open), Some(close)) = (ddl.find('('), ddl.rfind(')')) else {
        return Vec::new();
    };
    ddl.get(open + 1..close)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|word| !matches!(*word, "PRIMARY" | "UNIQUE" | "CHECK" | "FOREIGN"))
        .collect()
}

/// The latest columns of one of our tables.
pub(crate) fn latest_columns(table: &str) -> Vec<&'static str> {
    TABLE_DDL
        .iter()
        .find(|(name, _)| *name == table)
        .map(|(_, ddl)| ddl_columns(ddl))
        .unwrap_or_default()
}

/// The original's secondary indexes. DuckDB's ART indexes only help point lookups and each
/// one slows every write, so version 2 drops them. Lookups filter on `execution_id` (a scan
/// DuckDB narrows with its per-row-group min/max statistics); the keys' own indexes (version
/// 5) serve the writer's upserts.
const V1_INDEXES: [&str; 6] = [
    "idx_leader_board_score",
    "idx_round_history_execution",
    "idx_leader_board_execution",
    "idx_execution_summary_status",
    "idx_round_status_execution_team_round",
    "idx_leader_board_execution_score",
];

/// What the file holds before migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// No mixseek table at all.
    Empty,
    /// The original's tables without `schema_version`.
    Original,
    /// Our `schema_version` table says this (0 when it holds no row).
    Version(i64),
}

/// What an upgrade did (see [`crate::Store::migration`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationReport {
    /// The schema version found (1: the original MixSeek's).
    pub from: i64,
    /// The version written ([`SCHEMA_VERSION`]).
    pub to: i64,
    /// The copy of the file as it was before the upgrade (none for a database that is not a
    /// file).
    pub backup: Option<PathBuf>,
    /// Rows dropped because another row of their key was newer.
    pub dropped: Vec<DroppedDuplicates>,
    /// Rows that got a new `id` (theirs was taken by another row, or NULL).
    pub renumbered: Vec<RenumberedIds>,
    /// Columns of our tables that mixseek does not know (added by hand) and that the rebuilt
    /// tables do not have any more (`table.column`; the backup keeps them).
    pub dropped_columns: Vec<String>,
}

/// Duplicates of a key found by the upgrade to version 5 in one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedDuplicates {
    /// The table (`round_history`, `leader_board` or `round_status`).
    pub table: String,
    /// The key's columns, e.g. `(execution_id, team_id, round_number)`.
    pub key: String,
    /// How many keys had more than one row …
    pub keys: u64,
    /// … and how many rows were dropped (the newest of each key is kept).
    pub rows: u64,
    /// A few of the duplicated keys (`execution_id/team_id/round_number`).
    pub examples: Vec<String>,
}

/// Rows of one table that got new ids in the upgrade to version 5.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenumberedIds {
    /// The table (`round_history`, `leader_board`, `round_status` or `llm_calls`).
    pub table: String,
    /// How many of its rows got a new `id` from the table's sequence.
    pub rows: u64,
}

pub(crate) fn table_exists(conn: &Connection, name: &str) -> Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM information_schema.tables WHERE table_catalog = current_database() AND table_schema = 'main' AND table_name = ?",
        [name],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .map_err(StoreError::db("reading the catalogue"))
}

fn column_exists(conn: &Connection, table: &str, column: &str) -> Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM information_schema.columns WHERE table_catalog = current_database() AND table_schema = 'main' AND table_name = ? AND column_name = ?",
        [table, column],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .map_err(StoreError::db("reading the catalogue"))
}

/// The columns of a table, in order.
pub(crate) fn table_columns(conn: &Connection, table: &str) -> Result<Vec<String>> {
    let mut stmt = conn
        .prepare(
            "SELECT column_name FROM information_schema.columns
             WHERE table_catalog = current_database() AND table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
        )
        .map_err(StoreError::db("reading the catalogue"))?;
    let rows = stmt
        .query_map([table], |r| r.get::<_, String>(0))
        .map_err(StoreError::db("reading the catalogue"))?;
    rows.collect::<duckdb::Result<Vec<String>>>()
        .map_err(StoreError::db("reading the catalogue"))
}

/// Detects the schema version of an open database.
pub(crate) fn detect(conn: &Connection) -> Result<Found> {
    detect_in(conn, &catalogue(conn)?)
}

/// The schema version of a database whose tables are `tables` (its [`catalogue`]).
fn detect_in(conn: &Connection, tables: &Catalogue) -> Result<Found> {
    if tables.contains_key("schema_version") {
        let v: Option<i64> = conn
            .query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))
            .map_err(StoreError::db("reading schema_version"))?;
        return Ok(Found::Version(v.unwrap_or(0)));
    }
    let original = [
        "leader_board",
        "round_history",
        "execution_summary",
        "round_status",
    ];
    if original.iter().any(|t| tables.contains_key(*t)) {
        return Ok(Found::Original);
    }
    Ok(Found::Empty)
}

/// Detects the schema version of an open database and checks its tables, reading the catalogue
/// once for both: a file newer than this build is refused ([`StoreError::SchemaTooNew`]), and
/// so is another program's ([`check_shape`]).
pub(crate) fn check(conn: &Connection, path: &Path) -> Result<Found> {
    let tables = catalogue(conn)?;
    let found = detect_in(conn, &tables)?;
    if let Found::Version(v) = found
        && v > SCHEMA_VERSION
    {
        return Err(StoreError::SchemaTooNew {
            path: path.to_path_buf(),
            found: v,
            supported: SCHEMA_VERSION,
        });
    }
    check_shape(conn, path, found, &tables)?;
    Ok(found)
}

/// The columns each table of the original must have for the upgrade (the ones our tables
/// require and the original always wrote).
const ORIGINAL_REQUIRED: [(&str, &[&str]); 4] = [
    (
        "execution_summary",
        &["execution_id", "user_prompt", "status", "total_teams"],
    ),
    (
        "round_history",
        &["execution_id", "team_id", "team_name", "round_number"],
    ),
    (
        "leader_board",
        &[
            "execution_id",
            "team_id",
            "team_name",
            "round_number",
            "submission_content",
            "score",
            "score_details",
        ],
    ),
    (
        "round_status",
        &["execution_id", "team_id", "team_name", "round_number"],
    ),
];

/// Columns of `round_history` that versions before 4 (`submission_*`) and 3
/// (`applied_injections`) do not have.
fn added_after(version: i64, table: &str, column: &str) -> bool {
    table == "round_history"
        && match column {
            "applied_injections" => version < 3,
            "submission_content" | "submission_sha256" => version < 4,
            _ => false,
        }
}

/// The tables (and views) of the main schema, each with its columns in order.
type Catalogue = HashMap<String, Vec<String>>;

/// Every table (and view) of the main schema and its columns, read with one query (from
/// `duckdb_columns()`, which `information_schema.columns` selects from: the view costs DuckDB
/// a few milliseconds to create and plan in each new process).
fn catalogue(conn: &Connection) -> Result<Catalogue> {
    let mut stmt = conn
        .prepare(
            "SELECT table_name, column_name FROM duckdb_columns()
             WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
             ORDER BY table_name, column_index",
        )
        .map_err(StoreError::db("reading the catalogue"))?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .map_err(StoreError::db("reading the catalogue"))?;
    let mut tables: HashMap<String, Vec<String>> = HashMap::new();
    for row in rows {
        let (table, column) = row.map_err(StoreError::db("reading the catalogue"))?;
        tables.entry(table).or_default().push(column);
    }
    Ok(tables)
}

/// How many PRIMARY KEY and UNIQUE constraints each table has.
fn key_counts(conn: &Connection) -> Result<HashMap<String, i64>> {
    let mut stmt = conn
        .prepare(
            "SELECT table_name, count(*) FROM duckdb_constraints()
             WHERE database_name = current_database() AND schema_name = 'main'
                 AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')
             GROUP BY table_name",
        )
        .map_err(StoreError::db("reading the catalogue"))?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .map_err(StoreError::db("reading the catalogue"))?;
    rows.collect::<duckdb::Result<HashMap<String, i64>>>()
        .map_err(StoreError::db("reading the catalogue"))
}

/// Checks that the file's tables are the ones mixseek wrote in the version `found` says (so
/// the upgrade, and then every read and write, can rely on them): a DuckDB file of another
/// program, or one whose mixseek tables lack columns (or, at the latest version, keys), is
/// refused ([`StoreError::ForeignSchema`]) rather than written into.
/// `tables` is the file's [`catalogue`].
fn check_shape(conn: &Connection, path: &Path, found: Found, tables: &Catalogue) -> Result<()> {
    let foreign = |problem: String| StoreError::ForeignSchema {
        path: path.to_path_buf(),
        problem,
    };
    let missing_columns = |table: &str, required: &mut dyn Iterator<Item = &str>| -> Result<()> {
        let have = tables.get(table).map(Vec::as_slice).unwrap_or_default();
        let missing: Vec<&str> = required.filter(|c| !have.iter().any(|h| h == c)).collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(foreign(format!(
            "its `{table}` table has other columns than mixseek's (missing: {})",
            missing.join(", ")
        )))
    };
    match found {
        Found::Empty => {
            let mut names: Vec<String> = tables.keys().cloned().collect();
            names.sort_unstable();
            if !names.is_empty() {
                return Err(foreign(format!(
                    "it holds tables of its own ({}) and none of mixseek's",
                    list(&names)
                )));
            }
        }
        Found::Original => {
            for (table, required) in ORIGINAL_REQUIRED {
                if tables.contains_key(table) {
                    missing_columns(table, &mut required.iter().copied())?;
                }
            }
        }
        Found::Version(v) if v < 2 => {
            return Err(foreign(format!(
                "its schema_version table says version {v}, which no mixseek writes"
            )));
        }
        Found::Version(v) => {
            for (table, ddl) in TABLE_DDL {
                if table_added_after(v, table) {
                    continue;
                }
                if !tables.contains_key(table) {
                    return Err(foreign(format!("it has no `{table}` table")));
                }
                let mut required = ddl_columns(ddl)
                    .into_iter()
                    .filter(|c| !added_after(v, table, c));
                missing_columns(table, &mut required)?;
            }
            if v >= 5 {
                // the writer relies on them (its plain inserts are checked by them)
                let keys = key_counts(conn)?;
                for table in KEYED_TABLES {
                    let expected = if table.unique.is_some() { 2 } else { 1 };
                    if keys.get(table.name).copied().unwrap_or_default() < expected {
                        return Err(foreign(format!(
                            "its `{}` table lacks the keys mixseek declares ({}); restore a \
                             backup of the file or let mixseek create a new one",
                            table.name, table.keys
                        )));
                    }
                }
                let arena = ARENA_TABLES.iter().filter(|_| v >= 6);
                let later = THEME_TABLES.iter().filter(|_| v >= 7);
                let experiments = EXPERIMENT_TABLES.iter().filter(|_| v >= 8);
                let experiment_arenas = EXPERIMENT_ARENA_TABLES.iter().filter(|_| v >= 9);
                for table in arena
                    .chain(later)
                    .chain(experiments)
                    .chain(experiment_arenas)
                {
                    if keys.get(*table).copied().unwrap_or_default() < 1 {
                        return Err(foreign(format!(
                            "its `{table}` table lacks the PRIMARY KEY mixseek declares; \
                             restore a backup of the file or let mixseek create a new one"
                        )));
                    }
                }
            }
        }
    }
    Ok(())
}

/// At most a few names of a list, for a message.
fn list(names: &[String]) -> String {
    let mut shown = names.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > 5 {
        shown.push_str(&format!(", … ({} in all)", names.len()));
    }
    shown
}

/// Creates the schema, or upgrades an older one to [`SCHEMA_VERSION`] (copying the file to a
/// backup first, see the module docs). Returns what an upgrade did (`None` when there was
/// nothing to upgrade: a new file, or one at the latest version).
pub(crate) fn migrate(conn: &Connection, path: &Path) -> Result<Option<MigrationReport>> {
    let report = upgrade(conn, path, true)?;
    if report.from == 0 || report.from == SCHEMA_VERSION {
        return Ok(None);
    }
    log_upgrade(path, &report);
    Ok(Some(report))
}

/// Upgrades the in-memory copy of the file at `path` (see `db.rs`): the same steps as
/// [`migrate`], without a backup (the file is not touched) and without the log lines of an
/// upgrade. The report says what an upgrade of the file would do.
pub(crate) fn migrate_copy(conn: &Connection, path: &Path) -> Result<MigrationReport> {
    upgrade(conn, path, false)
}

/// The steps of [`migrate`]; `backup` copies the file first. `from` of the report is the
/// version found (0: no tables; equal to `to`: nothing done).
fn upgrade(conn: &Connection, path: &Path, backup: bool) -> Result<MigrationReport> {
    let found = check(conn, path)?;
    let from = match found {
        Found::Empty => 0,
        Found::Original => 1,
        Found::Version(v) => v,
    };
    let mut report = MigrationReport {
        from,
        to: SCHEMA_VERSION,
        backup: None,
        dropped: Vec::new(),
        renumbered: Vec::new(),
        dropped_columns: Vec::new(),
    };
    if from == SCHEMA_VERSION {
        return Ok(report);
    }
    if backup && from > 0 {
        report.backup = crate::backup::backup_before_upgrade(conn, path, from)?;
    }
    let run = |sql: &str| -> Result<()> {
        conn.execute_batch(sql)
            .map_err(|source| StoreError::Migration {
                path: path.to_path_buf(),
                from,
                to: SCHEMA_VERSION,
                source: source.into(),
            })
    };
    run("BEGIN TRANSACTION")?;
    let result = (|| -> Result<()> {
        let description = match from {
            0 => {
                create_latest(&run)?;
                "created"
            }
            1 => {
                upgrade_from_original(conn, &run)?;
                rekey::add_keys(conn, &run, from, &mut report)?;
                run(COPY_SUBMISSIONS)?;
                create_arena_tables(&run)?;
                create_theme_tables(&run)?;
                create_experiment_tables(&run)?;
                create_experiment_arena_tables(&run)?;
                "upgraded from the original MixSeek schema"
            }
            2..=4 => {
                run(SEQUENCES)?;
                rekey::add_keys(conn, &run, from, &mut report)?;
                if from < 4 {
                    run(COPY_SUBMISSIONS)?;
                }
                create_arena_tables(&run)?;
                create_theme_tables(&run)?;
                create_experiment_tables(&run)?;
                create_experiment_arena_tables(&run)?;
                match from {
                    2 => {
                        "upgraded from version 2 (keys declared; round_history keeps the submission)"
                    }
                    3 => {
                        "upgraded from version 3 (keys declared; round_history keeps the submission)"
                    }
                    _ => "upgraded from version 4 (keys declared)",
                }
            }
            5 => {
                create_arena_tables(&run)?;
                create_theme_tables(&run)?;
                create_experiment_tables(&run)?;
                create_experiment_arena_tables(&run)?;
                "upgraded from version 5 (arena, theme and experiment tables added)"
            }
            6 => {
                create_theme_tables(&run)?;
                create_experiment_tables(&run)?;
                create_experiment_arena_tables(&run)?;
                "upgraded from version 6 (theme and experiment tables added)"
            }
            7 => {
                create_experiment_tables(&run)?;
                create_experiment_arena_tables(&run)?;
                "upgraded from version 7 (experiment and attachment tables added)"
            }
            8 => {
                create_experiment_arena_tables(&run)?;
                "upgraded from version 8 (experiment arena tables added)"
            }
            other => {
                return Err(StoreError::ForeignSchema {
                    path: path.to_path_buf(),
                    problem: format!("unknown schema version {other}"),
                });
            }
        };
        run(&format!(
            "INSERT INTO schema_version (version, description) VALUES ({SCHEMA_VERSION}, '{description}')"
        ))
    })();
    match result {
        Ok(()) => {
            run("COMMIT")?;
            Ok(report)
        }
        Err(e) => {
            if let Err(rb) = conn.execute_batch("ROLLBACK") {
                tracing::debug!(error = %rb, "rollback after a failed migration");
            }
            Err(e)
        }
    }
}

/// Logs an upgrade: what was dropped or renumbered (a warning each), and where the previous
/// file is.
fn log_upgrade(path: &Path, report: &MigrationReport) {
    let backup = report
        .backup
        .as_ref()
        .map(|b| b.display().to_string())
        .unwrap_or_else(|| "none".to_string());
    for d in &report.dropped {
        tracing::warn!(
            path = %path.display(),
            table = d.table,
            key = d.key,
            keys = d.keys,
            rows = d.rows,
            examples = d.examples.join(", "),
            backup,
            "the upgrade found several rows of one key in {} and kept the newest of each: {} rows \
             dropped ({} keys); the previous file is kept at {backup}",
            d.table,
            d.rows,
            d.keys
        );
    }
    for r in &report.renumbered {
        tracing::warn!(
            path = %path.display(),
            table = r.table,
            rows = r.rows,
            backup,
            "{} rows of {} had an id another row had (or none) and got new ids",
            r.rows,
            r.table
        );
    }
    if !report.dropped_columns.is_empty() {
        tracing::warn!(
            path = %path.display(),
            columns = report.dropped_columns.join(", "),
            backup,
            "columns mixseek does not know were not carried over by the upgrade; the previous \
             file is kept at {backup}"
        );
    }
    tracing::info!(
        path = %path.display(),
        from = report.from,
        to = report.to,
        backup,
        "database schema upgraded; the previous file is kept at {backup}"
    );
}

fn create_latest(run: &dyn Fn(&str) -> Result<()>) -> Result<()> {
    run(SEQUENCES)?;
    run(SCHEMA_VERSION_TABLE)?;
    run(EXECUTION_SUMMARY)?;
    for table in KEYED_TABLES {
        run(&table.keyed_ddl())?;
    }
    create_arena_tables(run)?;
    create_theme_tables(run)?;
    create_experiment_tables(run)?;
    create_experiment_arena_tables(run)
}

/// The tables version 6 adds (created only: no other table is touched).
fn create_arena_tables(run: &dyn Fn(&str) -> Result<()>) -> Result<()> {
    run(ARENA_RUNS)?;
    run(ARENA_GAMES)?;
    run(ARENA_RATINGS)
}

/// The tables version 7 adds (created only: no other table is touched).
fn create_theme_tables(run: &dyn Fn(&str) -> Result<()>) -> Result<()> {
    run(THEME_ANALYSES)?;
    run(COMMENT_THEMES)
}

/// The tables version 8 adds (created only: no other table is touched).
fn create_experiment_tables(run: &dyn Fn(&str) -> Result<()>) -> Result<()> {
    run(EXPERIMENTS)?;
    run(EXPERIMENT_ITEMS)?;
    run(EXECUTION_ATTACHMENTS)
}

/// The tables version 9 adds (created only: no other table is touched).
fn create_experiment_arena_tables(run: &dyn Fn(&str) -> Result<()>) -> Result<()> {
    run(EXPERIMENT_ARENAS)?;
    run(EXPERIMENT_ARENA_RATINGS)
}

/// Fills the submission columns of the rounds stored before version 4 from `leader_board`
/// (rounds without a `leader_board` row keep NULL).
const COPY_SUBMISSIONS: &str = "
UPDATE round_history AS h SET submission_content = l.submission_content,
    submission_sha256 = l.submission_sha256
FROM leader_board AS l
WHERE h.execution_id = l.execution_id AND h.team_id = l.team_id AND h.round_number = l.round_number
    AND h.submission_content IS NULL;
";

/// Rebuilds the original's tables with our types, keeping every row (naive timestamps are
/// taken as UTC; `created_at` of the original was local time, which cannot be recovered).
fn upgrade_from_original(conn: &Connection, run: &dyn Fn(&str) -> Result<()>) -> Result<()> {
    for idx in V1_INDEXES {
        run(&format!("DROP INDEX IF EXISTS {idx}"))?;
    }
    run(SEQUENCES)?;
    run(SCHEMA_VERSION_TABLE)?;
    struct Rebuild {
        table: &'static str,
        ddl: &'static str,
        /// (new column, expression over the old table, the old column it needs)
        columns: &'static [(&'static str, &'static str, &'static str)],
    }
    let rebuilds = [
        Rebuild {
            table: "execution_summary",
            ddl: EXECUTION_SUMMARY,
            columns: &[
                ("execution_id", "execution_id", "execution_id"),
                ("user_prompt", "user_prompt", "user_prompt"),
                ("status", "status", "status"),
                (
                    "team_results",
                    "CAST(team_results AS VARCHAR)",
                    "team_results",
                ),
                ("total_teams", "total_teams", "total_teams"),
                ("best_team_id", "best_team_id", "best_team_id"),
                ("best_score", "best_score", "best_score"),
                (
                    "total_execution_time_seconds",
                    "total_execution_time_seconds",
                    "total_execution_time_seconds",
                ),
                (
                    "completed_at",
                    "CAST(completed_at AS TIMESTAMPTZ)",
                    "completed_at",
                ),
                (
                    "created_at",
                    "CAST(coalesce(created_at, now()) AS TIMESTAMPTZ)",
                    "created_at",
                ),
                (
                    "updated_at",
                    "CAST(coalesce(created_at, now()) AS TIMESTAMPTZ)",
                    "created_at",
                ),
            ],
        },
        Rebuild {
            table: "round_history",
            ddl: ROUND_HISTORY,
            columns: &[
                ("id", "id", "id"),
                ("execution_id", "execution_id", "execution_id"),
                ("team_id", "team_id", "team_id"),
                ("team_name", "team_name", "team_name"),
                ("round_number", "round_number", "round_number"),
                (
                    "message_history",
                    "CAST(message_history AS VARCHAR)",
                    "message_history",
                ),
                (
                    "member_submissions_record",
                    "CAST(member_submissions_record AS VARCHAR)",
                    "member_submissions_record",
                ),
                (
                    "created_at",
                    "CAST(coalesce(created_at, now()) AS TIMESTAMPTZ)",
                    "created_at",
                ),
                (
                    "updated_at",
                    "CAST(coalesce(created_at, now()) AS TIMESTAMPTZ)",
                    "created_at",
                ),
            ],
        },
        Rebuild {
            table: "leader_board",
            ddl: LEADER_BOARD,
            columns: &[
                ("id", "id", "id"),
                ("execution_id", "execution_id", "execution_id"),
                ("team_id", "team_id", "team_id"),
                ("team_name", "team_name", "team_name"),
                ("round_number", "round_number", "round_number"),
                (
                    "submission_content",
                    "submission_content",
                    "submission_content",
                ),
                (
                    "submission_format",
                    "submission_format",
                    "submission_format",
                ),
                ("score", "CAST(score AS DOUBLE)", "score"),
                (
                    "score_details",
                    "CAST(score_details AS VARCHAR)",
                    "score_details",
                ),
                ("final_submission", "final_submission", "final_submission"),
                ("exit_reason", "exit_reason", "exit_reason"),
                (
                    "created_at",
                    "CAST(created_at AS TIMESTAMPTZ)",
                    "created_at",
                ),
                (
                    "updated_at",
                    "CAST(updated_at AS TIMESTAMPTZ)",
                    "updated_at",
                ),
            ],
        },
        Rebuild {
            table: "round_status",
            ddl: ROUND_STATUS,
            columns: &[
                ("id", "id", "id"),
                ("execution_id", "execution_id", "execution_id"),
                ("team_id", "team_id", "team_id"),
                ("team_name", "team_name", "team_name"),
                ("round_number", "round_number", "round_number"),
                ("should_continue", "should_continue", "should_continue"),
                ("reasoning", "reasoning", "reasoning"),
                (
                    "confidence_score",
                    "CAST(confidence_score AS DOUBLE)",
                    "confidence_score",
                ),
                (
                    "round_started_at",
                    "CAST(round_started_at AS TIMESTAMPTZ)",
                    "round_started_at",
                ),
                (
                    "round_ended_at",
                    "CAST(round_ended_at AS TIMESTAMPTZ)",
                    "round_ended_at",
                ),
                (
                    "created_at",
                    "CAST(created_at AS TIMESTAMPTZ)",
                    "created_at",
                ),
                (
                    "updated_at",
                    "CAST(updated_at AS TIMESTAMPTZ)",
                    "updated_at",
                ),
            ],
        },
    ];
    for rb in rebuilds {
        if !table_exists(conn, rb.table)? {
            run(rb.ddl)?;
            continue;
        }
        let old = format!("{}_v1", rb.table);
        run(&format!("ALTER TABLE {} RENAME TO {old}", rb.table))?;
        run(rb.ddl)?;
        // Columns a minimal original table lacks are left to their defaults.
        let mut names = Vec::new();
        let mut exprs = Vec::new();
        for (name, expr, needs) in rb.columns {
            if column_exists(conn, &old, needs)? {
                names.push(*name);
                exprs.push(*expr);
            }
        }
        run(&format!(
            "INSERT INTO {} ({}) SELECT {} FROM {old}",
            rb.table,
            names.join(", "),
            exprs.join(", ")
        ))?;
        run(&format!("DROP TABLE {old}"))?;
    }
    // The original's sequences exist already and are ahead of the copied ids.
    run(LLM_CALLS)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (table, constraint type, columns) of our tables' constraints, sorted.
    pub(crate) fn constraints(conn: &Connection) -> Vec<(String, String, String)> {
        let mut stmt = conn
            .prepare(
                "SELECT table_name, constraint_type, array_to_string(list_sort(constraint_column_names), ',')
                 FROM duckdb_constraints()
                 WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE')
                 ORDER BY ALL",
            )
            .expect("constraints");
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("query")
            .collect::<duckdb::Result<_>>()
            .expect("rows")
    }

    /// What version 9 declares.
    pub(crate) fn expected_keys() -> Vec<(String, String, String)> {
        let mut keys = vec![
            ("execution_summary", "PRIMARY KEY", "execution_id"),
            ("experiment_arenas", "PRIMARY KEY", "arena_id"),
            (
                "experiment_arena_ratings",
                "PRIMARY KEY",
                "arena_id,variant",
            ),
            ("experiments", "PRIMARY KEY", "experiment_id"),
            (
                "experiment_items",
                "PRIMARY KEY",
                "experiment_id,repeat_index,task_id,variant",
            ),
            ("experiment_items", "UNIQUE", "execution_id"),
            (
                "execution_attachments",
                "PRIMARY KEY",
                "execution_id,position",
            ),
            ("theme_analyses", "PRIMARY KEY", "analysis_id"),
            ("comment_themes", "PRIMARY KEY", "analysis_id,theme_index"),
            ("arena_runs", "PRIMARY KEY", "arena_id"),
            (
                "arena_games",
                "PRIMARY KEY",
                "arena_id,game,judge,pair_index",
            ),
            (
                "arena_ratings",
                "PRIMARY KEY",
                "arena_id,execution_id,team_id",
            ),
        ];
        for t in ["leader_board", "llm_calls", "round_history", "round_status"] {
            keys.push((t, "PRIMARY KEY", "id"));
            if t != "llm_calls" {
                keys.push((t, "UNIQUE", "execution_id,round_number,team_id"));
            }
        }
        let mut keys: Vec<(String, String, String)> = keys
            .into_iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
            .collect();
        keys.sort();
        keys
    }

    #[test]
    fn a_fresh_database_declares_every_key() {
        let conn = Connection::open_in_memory().expect("db");
        migrate(&conn, Path::new(":memory:")).expect("migrate");
        assert_eq!(constraints(&conn), expected_keys());
    }

    #[test]
    fn the_database_refuses_a_second_row_of_a_key() {
        let conn = Connection::open_in_memory().expect("db");
        migrate(&conn, Path::new(":memory:")).expect("migrate");
        conn.execute_batch(
            "INSERT INTO round_history (execution_id, team_id, team_name, round_number)
             VALUES ('e', 't', 'T', 1)",
        )
        .expect("first row");
        let err = conn
            .execute_batch(
                "INSERT INTO round_history (execution_id, team_id, team_name, round_number)
                 VALUES ('e', 't', 'T', 1)",
            )
            .expect_err("a second row of the key");
        assert!(err.to_string().contains("Constraint Error"), "{err}");
        let err = conn
            .execute_batch(
                "INSERT INTO llm_calls (id, role, model, input_tokens, output_tokens, cached_tokens,
                     requests, cost_usd, priced, latency_ms, attempts, cache_hit, called_at)
                 VALUES (7, 'leader', 'm', 0, 0, 0, 0, 0, TRUE, 0, 1, FALSE, now()),
                        (7, 'leader', 'm', 0, 0, 0, 0, 0, TRUE, 0, 1, FALSE, now())",
            )
            .expect_err("two calls with one id");
        assert!(err.to_string().contains("Constraint Error"), "{err}");
        // the original's upsert works again
        conn.execute_batch(
            "INSERT INTO round_history (execution_id, team_id, team_name, round_number, prompt)
             VALUES ('e', 't', 'T', 1, 'again')
             ON CONFLICT (execution_id, team_id, round_number) DO UPDATE SET prompt = excluded.prompt",
        )
        .expect("upsert");
        let (n, prompt): (i64, String) = conn
            .query_row(
                "SELECT count(*), any_value(prompt) FROM round_history",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("row");
        assert_eq!((n, prompt.as_str()), (1, "again"));
    }

    #[test]
    fn the_columns_read_from_the_ddl_are_the_catalogues() {
        let conn = Connection::open_in_memory().expect("db");
        migrate(&conn, Path::new(":memory:")).expect("migrate");
        for (table, ddl) in TABLE_DDL {
            assert_eq!(
                ddl_columns(ddl),
                table_columns(&conn, table).expect("columns"),
                "{table}"
            );
        }
        for t in KEYED_TABLES {
            assert_eq!(
                ddl_columns(&t.keyed_ddl()),
                ddl_columns(t.ddl),
                "{}",
                t.name
            );
        }
    }

    #[test]
    fn another_programs_database_is_not_written_into() {
        let conn = Connection::open_in_memory().expect("db");
        conn.execute_batch("CREATE TABLE sales (id INTEGER, amount DOUBLE)")
            .expect("foreign table");
        let err = migrate(&conn, Path::new("x.db")).expect_err("foreign");
        assert!(matches!(err, StoreError::ForeignSchema { .. }), "{err}");
        assert!(err.to_string().contains("sales"), "{err}");
        assert_eq!(err.class(), crate::ErrorClass::BadInput);
        assert!(!table_exists(&conn, "leader_board").expect("catalogue"));

        // a round_history table of other columns is not the original's
        let conn = Connection::open_in_memory().expect("db");
        conn.execute_batch("CREATE TABLE round_history (id INTEGER, body VARCHAR)")
            .expect("foreign table");
        let err = migrate(&conn, Path::new("x.db")).expect_err("foreign");
        assert!(
            err.to_string().contains("round_history") && err.to_string().contains("team_id"),
            "{err}"
        );

        // one of our tables missing in a file that says it is ours
        let conn = Connection::open_in_memory().expect("db");
        migrate(&conn, Path::new("x.db")).expect("migrate");
        conn.execute_batch("DROP TABLE llm_calls").expect("drop");
        let err = check(&conn, Path::new("x.db")).expect_err("damaged");
        assert!(err.to_string().contains("llm_calls"), "{err}");

        // a table of the latest version rebuilt without its keys
        let conn = Connection::open_in_memory().expect("db");
        migrate(&conn, Path::new("x.db")).expect("migrate");
        conn.execute_batch(
            "CREATE TABLE lb AS SELECT * FROM leader_board; DROP TABLE leader_board;
             ALTER TABLE lb RENAME TO leader_board;",
        )
        .expect("rebuilt without keys");
        let err = migrate(&conn, Path::new("x.db")).expect_err("keys lost");
        assert!(
            err.to_string().contains("leader_board") && err.to_string().contains("keys"),
            "{err}"
        );
    }

    #[test]
    fn fresh_database_gets_the_latest_schema() {
        let conn = Connection::open_in_memory().expect("db");
        migrate(&conn, Path::new(":memory:")).expect("migrate");
        assert_eq!(
            detect(&conn).expect("detect"),
            Found::Version(SCHEMA_VERSION)
        );
        for t in TABLES {
            assert!(table_exists(&conn, t).expect("catalogue"), "{t}");
        }
        // idempotent
        migrate(&conn, Path::new(":memory:")).expect("again");
        let n: i64 = conn
            .query_row("SELECT count(*) FROM schema_version", [], |r| r.get(0))
            .expect("count");
        assert_eq!(n, 1);
    }

    #[test]
    fn newer_schema_is_refused() {
        let conn = Connection::open_in_memory().expect("db");
        migrate(&conn, Path::new("x.db")).expect("migrate");
        conn.execute_batch(
            "INSERT INTO schema_version (version, description) VALUES (99, 'future')",
        )
        .expect("insert");
        let err = migrate(&conn, Path::new("x.db")).expect_err("refused");
        assert!(
            matches!(
                err,
                StoreError::SchemaTooNew {
                    found: 99,
                    supported: SCHEMA_VERSION,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("upgrade mixseek"), "{err}");
    }
}
