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
//! Version 3 drops the UNIQUE (execution_id, team_id, round_number) constraints of
//! `round_history`, `leader_board` and `round_status`: the writer upserts those keys itself
//! (`rounds.rs`: one writer thread per process, one process per file), and the constraint's
//! index made every round write several times slower and kept DuckDB from writing bulk loads
//! straight to the file. The key is still unique as long as only mixseek writes these tables;
//! nothing in the database enforces it, and `INSERT … ON CONFLICT (execution_id, team_id,
//! round_number)` is refused (there is no such constraint any more). Version 3 also adds
//! `round_history.applied_injections` (JSON: the prompt-injection rules applied per phase;
//! NULL for rounds stored before). Other tables, columns and types are unchanged.
//!
//! Version 4 adds `round_history.submission_content` and `submission_sha256`: the leader's
//! submission is kept with the round's transcript, so a round whose evaluation failed (a
//! `round_history` row without `leader_board` / `round_status` rows: not completed) still has
//! it. The upgrade copies them from `leader_board` for the rounds stored before.
//!
//! A fresh file gets the latest schema directly; an older file is upgraded in one transaction
//! (so a failed upgrade leaves it untouched); a newer file is refused.

use crate::error::{Result, StoreError};
use duckdb::Connection;
use std::path::Path;

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = 4;

/// Our tables, in dependency-free creation order.
pub const TABLES: [&str; 6] = [
    "schema_version",
    "execution_summary",
    "round_history",
    "leader_board",
    "round_status",
    "llm_calls",
];

/// Tables whose rows belong to one execution (exported, filtered by `execution_id`).
pub const EXECUTION_TABLES: [&str; 5] = [
    "execution_summary",
    "leader_board",
    "round_history",
    "round_status",
    "llm_calls",
];

/// Columns holding JSON text.
pub const JSON_COLUMNS: [&str; 11] = [
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

/// The original's secondary indexes. DuckDB's ART indexes only help point lookups and each
/// one slows every write, so version 2 drops them. Lookups filter on `execution_id` (a scan
/// DuckDB narrows with its per-row-group min/max statistics); the writer keeps its own record
/// of the stored round keys (`rounds.rs`).
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
pub enum Found {
    /// No mixseek table at all.
    Empty,
    /// The original's tables without `schema_version`.
    Original,
    /// Our `schema_version` table says this.
    Version(i64),
}

fn table_exists(conn: &Connection, name: &str) -> Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'main' AND table_name = ?",
        [name],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .map_err(StoreError::db("reading the catalogue"))
}

fn column_exists(conn: &Connection, table: &str, column: &str) -> Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'main' AND table_name = ? AND column_name = ?",
        [table, column],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .map_err(StoreError::db("reading the catalogue"))
}

/// Detects the schema version of an open database.
pub fn detect(conn: &Connection) -> Result<Found> {
    if table_exists(conn, "schema_version")? {
        let v: Option<i64> = conn
            .query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))
            .map_err(StoreError::db("reading schema_version"))?;
        return Ok(Found::Version(v.unwrap_or(0)));
    }
    for t in [
        "leader_board",
        "round_history",
        "execution_summary",
        "round_status",
    ] {
        if table_exists(conn, t)? {
            return Ok(Found::Original);
        }
    }
    Ok(Found::Empty)
}

/// Refuses a file that is newer than this build (read-only opens check only this).
pub fn check_not_newer(conn: &Connection, path: &Path) -> Result<Found> {
    let found = detect(conn)?;
    if let Found::Version(v) = found
        && v > SCHEMA_VERSION
    {
        return Err(StoreError::SchemaTooNew {
            path: path.to_path_buf(),
            found: v,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(found)
}

/// Creates the schema, or upgrades an older one to [`SCHEMA_VERSION`].
pub fn migrate(conn: &Connection, path: &Path) -> Result<()> {
    let found = check_not_newer(conn, path)?;
    let from = match found {
        Found::Empty => 0,
        Found::Original => 1,
        Found::Version(v) => v,
    };
    if from == SCHEMA_VERSION {
        return Ok(());
    }
    let run = |sql: &str| -> Result<()> {
        conn.execute_batch(sql)
            .map_err(|source| StoreError::Migration {
                path: path.to_path_buf(),
                from,
                to: SCHEMA_VERSION,
                source,
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
                run(COPY_SUBMISSIONS)?;
                "upgraded from the original MixSeek schema"
            }
            2 => {
                drop_round_keys(&run)?;
                run(COPY_SUBMISSIONS)?;
                "upgraded from version 2 (round keys are upserted by the writer; round_history keeps the submission)"
            }
            3 => {
                run(ADD_SUBMISSIONS)?;
                run(COPY_SUBMISSIONS)?;
                "upgraded from version 3 (round_history keeps the submission)"
            }
            other => {
                return Err(StoreError::Open {
                    path: path.to_path_buf(),
                    message: format!("unknown schema version {other}"),
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
            if from > 0 {
                tracing::info!(path = %path.display(), from, to = SCHEMA_VERSION, "database schema upgraded");
            }
            Ok(())
        }
        Err(e) => {
            if let Err(rb) = conn.execute_batch("ROLLBACK") {
                tracing::debug!(error = %rb, "rollback after a failed migration");
            }
            Err(e)
        }
    }
}

fn create_latest(run: &dyn Fn(&str) -> Result<()>) -> Result<()> {
    run(SEQUENCES)?;
    run(SCHEMA_VERSION_TABLE)?;
    for ddl in [
        EXECUTION_SUMMARY,
        ROUND_HISTORY,
        LEADER_BOARD,
        ROUND_STATUS,
        LLM_CALLS,
    ] {
        run(ddl)?;
    }
    Ok(())
}

/// Version 3 → 4: the submission columns of `round_history`.
const ADD_SUBMISSIONS: &str = "
ALTER TABLE round_history ADD COLUMN submission_content VARCHAR;
ALTER TABLE round_history ADD COLUMN submission_sha256 VARCHAR;
";

/// Fills the submission columns of the rounds stored before version 4 from `leader_board`
/// (rounds without a `leader_board` row keep NULL).
const COPY_SUBMISSIONS: &str = "
UPDATE round_history AS h SET submission_content = l.submission_content,
    submission_sha256 = l.submission_sha256
FROM leader_board AS l
WHERE h.execution_id = l.execution_id AND h.team_id = l.team_id AND h.round_number = l.round_number
    AND h.submission_content IS NULL;
";

/// Version 2 → 3: rebuilds the three round tables without their UNIQUE constraint (DuckDB
/// cannot drop a constraint in place), keeping every row, its `id` and the sequences (new
/// rows continue above the old ids); `round_history` gains `applied_injections` (NULL).
fn drop_round_keys(run: &dyn Fn(&str) -> Result<()>) -> Result<()> {
    for (table, ddl) in [
        ("round_history", ROUND_HISTORY),
        ("leader_board", LEADER_BOARD),
        ("round_status", ROUND_STATUS),
    ] {
        let old = format!("{table}_v2");
        run(&format!("ALTER TABLE {table} RENAME TO {old}"))?;
        run(ddl)?;
        // Columns matched by name; a column version 2 lacks is NULL.
        run(&format!("INSERT INTO {table} BY NAME SELECT * FROM {old}"))?;
        run(&format!("DROP TABLE {old}"))?;
    }
    Ok(())
}

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
