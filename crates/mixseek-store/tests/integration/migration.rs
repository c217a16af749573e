//! Schema creation and migration: a database of the original Python MixSeek is upgraded in
//! place (rows kept, types widened), our versions 2, 3 and 4 get their keys declared (rows,
//! ids and decisions kept; duplicates of a key dropped, the newest kept, and reported),
//! version 3 gains `round_history.submission_content` (copied from `leader_board`), version 5
//! gains the arena tables and nothing else changes, every
//! upgrade leaves a readable backup of the old file, a file of a newer mixseek is refused.

use crate::common;

use common::{raw, scalar};
use duckdb::Connection;
use mixseek_store::SCHEMA_VERSION;
use mixseek_store::{LeaderboardScope, Store, StoreError};
use std::path::Path;

/// The original's four tables, sequences and indexes (types as its code creates them; JSON
/// columns as VARCHAR since the bundled DuckDB has no json extension).
const ORIGINAL: &str = "
CREATE SEQUENCE round_history_id_seq; CREATE SEQUENCE leader_board_id_seq;
CREATE SEQUENCE execution_summary_id_seq; CREATE SEQUENCE round_status_id_seq;
CREATE TABLE round_history (id INTEGER PRIMARY KEY DEFAULT nextval('round_history_id_seq'),
  execution_id TEXT NOT NULL, team_id TEXT NOT NULL, team_name TEXT NOT NULL, round_number INTEGER NOT NULL,
  message_history VARCHAR, member_submissions_record VARCHAR, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  UNIQUE (execution_id, team_id, round_number));
CREATE TABLE leader_board (id INTEGER PRIMARY KEY DEFAULT nextval('leader_board_id_seq'),
  execution_id VARCHAR NOT NULL, team_id VARCHAR NOT NULL, team_name VARCHAR NOT NULL, round_number INTEGER NOT NULL,
  submission_content TEXT NOT NULL, submission_format VARCHAR NOT NULL DEFAULT 'md', score FLOAT NOT NULL,
  score_details VARCHAR NOT NULL, final_submission BOOLEAN NOT NULL DEFAULT FALSE, exit_reason VARCHAR,
  created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  UNIQUE (execution_id, team_id, round_number));
CREATE TABLE execution_summary (execution_id TEXT PRIMARY KEY, user_prompt TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('completed', 'partial_failure', 'failed')), team_results VARCHAR NOT NULL,
  total_teams INTEGER NOT NULL, best_team_id TEXT, best_score DOUBLE, total_execution_time_seconds DOUBLE NOT NULL,
  completed_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE round_status (id INTEGER PRIMARY KEY DEFAULT nextval('round_status_id_seq'),
  execution_id VARCHAR NOT NULL, team_id VARCHAR NOT NULL, team_name VARCHAR NOT NULL, round_number INTEGER NOT NULL,
  should_continue BOOLEAN, reasoning TEXT, confidence_score FLOAT, round_started_at TIMESTAMP, round_ended_at TIMESTAMP,
  created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  UNIQUE (execution_id, team_id, round_number));
CREATE INDEX idx_leader_board_score ON leader_board (score DESC, created_at ASC);
CREATE INDEX idx_round_history_execution ON round_history (execution_id, team_id, round_number);
CREATE INDEX idx_leader_board_execution ON leader_board (execution_id);
CREATE INDEX idx_execution_summary_status ON execution_summary (status, completed_at DESC);
CREATE INDEX idx_round_status_execution_team_round ON round_status (execution_id, team_id, round_number DESC);
CREATE INDEX idx_leader_board_execution_score ON leader_board (execution_id, score DESC, round_number DESC);
";

const ROWS: &str = "
INSERT INTO round_history (execution_id, team_id, team_name, round_number, message_history, member_submissions_record)
  VALUES ('e1', 'team-a', 'A', 1, '[]', '{\"submissions\": []}'), ('e1', 'team-a', 'A', 2, '[]', NULL),
         -- the original writes round_history before the evaluation: round 3's evaluation failed
         ('e1', 'team-a', 'A', 3, '[{\"kind\": \"response\"}]', '{\"submissions\": []}');
INSERT INTO leader_board (execution_id, team_id, team_name, round_number, submission_content, score, score_details,
    final_submission, exit_reason, created_at, updated_at)
  VALUES ('e1', 'team-a', 'A', 1, '一回目', 37.37, '{\"overall_score\": 37.37, \"metrics\": []}', FALSE, NULL,
          '2025-11-12 08:35:02', '2025-11-12 08:35:05'),
         ('e1', 'team-a', 'A', 2, '二回目', 85.0, '{\"overall_score\": 85.0, \"feedback\": \"Good work\"}', TRUE,
          'max_rounds_reached', '2025-11-12 08:36:02', '2025-11-12 08:36:05'),
         ('e0', 'team-b', 'B', 1, 'crashed run', 50.0, '{}', FALSE, NULL, '2025-11-10 08:00:00', '2025-11-10 08:00:00');
INSERT INTO round_status (execution_id, team_id, team_name, round_number, should_continue, reasoning, confidence_score,
    round_started_at, round_ended_at)
  VALUES ('e1', 'team-a', 'A', 1, TRUE, 'Below minimum rounds (1 < 2)', 1.0, '2025-11-12 08:34:00', '2025-11-12 08:35:00'),
         ('e1', 'team-a', 'A', 2, FALSE, 'Final round reached', 1.0, '2025-11-12 08:35:10', '2025-11-12 08:36:00');
INSERT INTO execution_summary (execution_id, user_prompt, status, team_results, total_teams, best_team_id, best_score,
    total_execution_time_seconds, completed_at, created_at)
  VALUES ('e1', '旧プロンプト', 'completed', '[]', 1, 'team-a', 85.0, 120.5, '2025-11-12 08:36:10', '2025-11-12 08:36:10');
";

fn column_type(store: &Store, table: &str, column: &str) -> String {
    scalar(
        store,
        &format!(
            "SELECT data_type FROM information_schema.columns
             WHERE table_name = '{table}' AND column_name = '{column}'"
        ),
    )
}

/// (table, constraint type, columns) of the PRIMARY KEY and UNIQUE constraints, sorted.
fn keys(store: &Store) -> Vec<(String, String, String)> {
    store
        .select(
            "SELECT table_name, constraint_type, array_to_string(list_sort(constraint_column_names), ',')
             FROM duckdb_constraints() WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE')
             ORDER BY ALL",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("constraints")
}

/// What version 9 declares.
fn expected_keys() -> Vec<(String, String, String)> {
    let round = "execution_id,round_number,team_id";
    let mut keys = vec![
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
        ("arena_runs", "PRIMARY KEY", "arena_id"),
        ("execution_summary", "PRIMARY KEY", "execution_id"),
        ("leader_board", "PRIMARY KEY", "id"),
        ("leader_board", "UNIQUE", round),
        ("llm_calls", "PRIMARY KEY", "id"),
        ("round_history", "PRIMARY KEY", "id"),
        ("round_history", "UNIQUE", round),
        ("round_status", "PRIMARY KEY", "id"),
        ("round_status", "UNIQUE", round),
    ];
    keys.sort();
    keys.into_iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect()
}

fn versions(store: &Store) -> Vec<i64> {
    store
        .select(
            "SELECT version FROM schema_version ORDER BY version",
            [],
            |r| r.get(0),
        )
        .expect("versions")
}

fn strings(store: &Store, sql: &str) -> Vec<Option<String>> {
    store.select(sql, [], |r| r.get(0)).expect(sql)
}

#[test]
fn a_new_file_gets_the_current_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("mixseek.db")).expect("open");
    assert_eq!(versions(&store), vec![SCHEMA_VERSION]);
    assert_eq!(column_type(&store, "leader_board", "score"), "DOUBLE");
    assert_eq!(
        column_type(&store, "round_status", "round_ended_at"),
        "TIMESTAMP WITH TIME ZONE"
    );
    for t in mixseek_store::TABLES {
        assert_eq!(
            store.count_rows(t).expect("table exists"),
            u64::from(t == "schema_version"),
            "{t}"
        );
    }
    assert_eq!(keys(&store), expected_keys());
    assert_eq!(store.migration(), None, "nothing was upgraded");
    let files: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".bak"))
        .collect();
    assert!(files.is_empty(), "no backup of a new file: {files:?}");
}

#[test]
fn the_original_schema_is_upgraded_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    {
        let conn = Connection::open(&path).expect("create original");
        conn.execute_batch(ORIGINAL).expect("original schema");
        conn.execute_batch(ROWS).expect("original rows");
    }
    let store = Store::open(&path).expect("upgrade");
    assert_eq!(column_type(&store, "leader_board", "score"), "DOUBLE");
    assert_eq!(
        column_type(&store, "leader_board", "created_at"),
        "TIMESTAMP WITH TIME ZONE"
    );
    assert_eq!(
        column_type(&store, "round_status", "confidence_score"),
        "DOUBLE"
    );
    let old_indexes: i64 = scalar(
        &store,
        "SELECT count(*) FROM duckdb_indexes() WHERE index_name LIKE 'idx_%'",
    );
    assert_eq!(old_indexes, 0);
    assert_eq!(keys(&store), expected_keys());
    let report = store.migration().expect("upgraded");
    assert_eq!((report.from, report.to), (1, SCHEMA_VERSION));
    assert!(
        report.dropped.is_empty() && report.renumbered.is_empty(),
        "{report:?}"
    );
    // the original file, as it was, beside it
    let backup = dir.path().join("mixseek.db.v1.bak");
    assert_eq!(report.backup.as_deref(), Some(backup.as_path()));
    assert_original_backup(&backup);
    assert_eq!(store.count_rows("leader_board").expect("count"), 3);
    assert_eq!(store.count_rows("round_history").expect("count"), 3);
    // version 4 keeps the submission in round_history too: copied from leader_board
    let submissions = strings(
        &store,
        "SELECT submission_content FROM round_history ORDER BY round_number",
    );
    assert_eq!(
        submissions,
        vec![Some("一回目".to_string()), Some("二回目".to_string()), None]
    );
    // the round whose evaluation failed is not completed, and is listed as not evaluated
    let history = store.history("e1", None).expect("history");
    assert_eq!(
        history
            .iter()
            .map(|h| (h.round_number, h.evaluated))
            .collect::<Vec<_>>(),
        vec![(1, true), (2, true), (3, false)]
    );
    let failed = store
        .round_detail("e1", "team-a", 3)
        .expect("detail")
        .expect("shown");
    assert!(!failed.evaluated);
    assert_eq!(failed.leader_messages.len(), 1);
    assert_eq!(store.count_rows("llm_calls").expect("count"), 0);

    let rounds = store.team_rounds("e1", "team-a").expect("rounds");
    assert_eq!(rounds.len(), 2);
    // FLOAT 37.37 widened: the original had already lost the digits
    assert_eq!(rounds[0].state.evaluation_score, f64::from(37.37_f32));
    assert_eq!(
        rounds[0].decision.reasoning.as_deref(),
        Some("Below minimum rounds (1 < 2)")
    );
    assert!(rounds[1].final_submission);
    assert_eq!(
        rounds[1].state.round_ended_at.to_rfc3339(),
        "2025-11-12T08:36:00+00:00"
    );
    // an object that is not our score_details shape still reads
    let detail = store
        .round_detail("e1", "team-a", 2)
        .expect("detail")
        .expect("exists");
    assert_eq!(detail.score_details["feedback"], "Good work");
    // the summary row and a run that crashed before writing one
    let execs = store.executions(None).expect("executions");
    let statuses: Vec<(&str, &str)> = execs
        .iter()
        .map(|e| (e.execution_id.as_str(), e.status.as_str()))
        .collect();
    assert_eq!(statuses, vec![("e1", "completed"), ("e0", "incomplete")]);
    let (_, lb) = store
        .leaderboard(&LeaderboardScope::Execution("e1".into()))
        .expect("lb");
    assert_eq!(
        (lb[0].round_number, lb[0].exit_reason.as_deref()),
        (2, Some("max_rounds_reached"))
    );
    // new rows get fresh ids after the copied ones
    let max_id: i64 = scalar(&store, "SELECT max(id) FROM leader_board");
    assert!(max_id >= 3);
    drop(store);
    // reopening does nothing more
    let store = Store::open(&path).expect("reopen");
    assert_eq!(versions(&store), vec![SCHEMA_VERSION]);
    assert_eq!(store.migration(), None);
    assert!(!dir.path().join("mixseek.db.v5.bak").exists());
    assert!(!dir.path().join("mixseek.db.v1.1.bak").exists());
}

/// `backup` is the original's file as [`ORIGINAL`] and [`ROWS`] made it, readable by DuckDB.
fn assert_original_backup(backup: &Path) {
    let config = duckdb::Config::default()
        .access_mode(duckdb::AccessMode::ReadOnly)
        .expect("config");
    let conn = Connection::open_with_flags(backup, config).expect("the backup opens");
    let (tables, rows, score_type): (i64, i64, String) = conn
        .query_row(
            "SELECT (SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'),
                    (SELECT count(*) FROM leader_board),
                    (SELECT data_type FROM information_schema.columns
                     WHERE table_name = 'leader_board' AND column_name = 'score')",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("the original's tables");
    assert_eq!((tables, rows, score_type.as_str()), (0, 3, "FLOAT"));
}

/// The file's bytes (and its write-ahead log's, when there is one).
fn file_bytes(path: &Path) -> (Vec<u8>, Option<Vec<u8>>) {
    let wal = path.with_file_name(format!(
        "{}.wal",
        path.file_name()
            .and_then(|f| f.to_str())
            .unwrap_or_default()
    ));
    (
        std::fs::read(path).expect("the file"),
        std::fs::read(wal).ok(),
    )
}

#[test]
fn a_read_only_open_reads_an_old_file_without_changing_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    {
        let conn = Connection::open(&path).expect("create original");
        conn.execute_batch(ORIGINAL).expect("original schema");
        conn.execute_batch(ROWS).expect("original rows");
    }
    let before = file_bytes(&path);
    {
        let store = Store::open_read_only(&path).expect("open");
        assert!(store.is_read_only());
        assert_eq!(store.ranking("e1").expect("ranking")[0].max_score, 85.0);
        let copy = store.read_copy().expect("read from an upgraded copy");
        assert_eq!(
            (copy.from, copy.to, copy.backup.as_ref()),
            (1, SCHEMA_VERSION, None)
        );
        let detail = store
            .round_detail("e1", "team-a", 3)
            .expect("detail")
            .expect("the round without evaluation reads");
        assert!(!detail.evaluated);
        assert_eq!(
            store.executions(None).expect("executions").len(),
            2,
            "the original's finished run and its crashed one (rounds without a summary)"
        );
    }
    assert!(
        file_bytes(&path) == before,
        "the file is byte for byte as it was"
    );
    let backups: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".bak"))
        .collect();
    assert!(backups.is_empty(), "no backup for a read: {backups:?}");
    // the original's catalogue, untouched: no schema_version, FLOAT scores, its keys
    let conn = raw(&path);
    let version_tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .expect("catalogue");
    assert_eq!(version_tables, 0);
    assert_eq!(unique_constraints(&conn), 3);
}

#[test]
fn a_newer_file_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    {
        drop(Store::open(&path).expect("create"));
        raw(&path)
            .execute_batch(
                "INSERT INTO schema_version (version, description) VALUES (99, 'from the future')",
            )
            .expect("bump");
    }
    for result in [Store::open(&path), Store::open_read_only(&path)] {
        let err = result.expect_err("refused");
        assert!(
            matches!(err, StoreError::SchemaTooNew { found: 99, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("mixseek.db"), "{err}");
        // both versions are named
        assert!(
            err.to_string().contains("version 99")
                && err.to_string().contains(&format!("up to {SCHEMA_VERSION}")),
            "{err}"
        );
        assert_eq!(err.class(), mixseek_store::ErrorClass::BadInput);
    }
    // nothing was touched
    assert!(!dir.path().join("mixseek.db.v99.bak").exists());
}

/// The three round tables as schema version 2 created them: with the UNIQUE key.
const V2_ROUND_TABLES: &str = "
DROP TABLE arena_runs; DROP TABLE arena_games; DROP TABLE arena_ratings;
DROP TABLE theme_analyses; DROP TABLE comment_themes;
DROP TABLE experiments; DROP TABLE experiment_items; DROP TABLE execution_attachments;
DROP TABLE experiment_arenas; DROP TABLE experiment_arena_ratings;
DROP TABLE round_history; DROP TABLE leader_board; DROP TABLE round_status;
CREATE TABLE round_history (
    id INTEGER DEFAULT nextval('round_history_id_seq'),
    execution_id VARCHAR NOT NULL, team_id VARCHAR NOT NULL, team_name VARCHAR NOT NULL,
    round_number INTEGER NOT NULL, message_history VARCHAR, member_submissions_record VARCHAR,
    prompt VARCHAR, prompt_sha256 VARCHAR, pii_masked BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    UNIQUE (execution_id, team_id, round_number));
CREATE TABLE leader_board (
    id INTEGER DEFAULT nextval('leader_board_id_seq'),
    execution_id VARCHAR NOT NULL, team_id VARCHAR NOT NULL, team_name VARCHAR NOT NULL,
    round_number INTEGER NOT NULL, submission_content VARCHAR NOT NULL,
    submission_format VARCHAR NOT NULL DEFAULT 'md', score DOUBLE NOT NULL, score_details VARCHAR NOT NULL,
    final_submission BOOLEAN NOT NULL DEFAULT FALSE, exit_reason VARCHAR,
    created_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    submission_sha256 VARCHAR, pii_masked BOOLEAN NOT NULL DEFAULT FALSE,
    UNIQUE (execution_id, team_id, round_number));
CREATE TABLE round_status (
    id INTEGER DEFAULT nextval('round_status_id_seq'),
    execution_id VARCHAR NOT NULL, team_id VARCHAR NOT NULL, team_name VARCHAR NOT NULL,
    round_number INTEGER NOT NULL, should_continue BOOLEAN, reasoning VARCHAR, confidence_score DOUBLE,
    round_started_at TIMESTAMPTZ, round_ended_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    judgment VARCHAR, exit_reason VARCHAR, input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0, cached_tokens BIGINT NOT NULL DEFAULT 0,
    requests BIGINT NOT NULL DEFAULT 0, cost_usd DOUBLE NOT NULL DEFAULT 0, stage_usage VARCHAR,
    UNIQUE (execution_id, team_id, round_number));
-- a file that has seen other rows before: its ids start well above 1
SELECT nextval('round_history_id_seq') FROM range(100);
SELECT nextval('leader_board_id_seq') FROM range(200);
SELECT nextval('round_status_id_seq') FROM range(300);
INSERT INTO round_history (execution_id, team_id, team_name, round_number, message_history, member_submissions_record)
  VALUES ('e2', 'team-a', 'A', 1, '[]', '{}'), ('e2', 'team-a', 'A', 2, '[]', '{}');
INSERT INTO leader_board (execution_id, team_id, team_name, round_number, submission_content, score, score_details,
    final_submission, exit_reason)
  VALUES ('e2', 'team-a', 'A', 1, 'first', 40.0, '{\"overall_score\": 40.0, \"metrics\": []}', FALSE, NULL),
         ('e2', 'team-a', 'A', 2, 'second', 60.0, '{\"overall_score\": 60.0, \"metrics\": []}', TRUE, 'max_rounds_reached');
INSERT INTO round_status (execution_id, team_id, team_name, round_number, should_continue, reasoning)
  VALUES ('e2', 'team-a', 'A', 1, TRUE, 'go on'), ('e2', 'team-a', 'A', 2, FALSE, 'stop');
UPDATE schema_version SET version = 2;
";

fn unique_constraints(conn: &Connection) -> i64 {
    conn.query_row(
        "SELECT count(*) FROM duckdb_constraints() WHERE constraint_type = 'UNIQUE'
         AND table_name IN ('round_history', 'leader_board', 'round_status')",
        [],
        |r| r.get(0),
    )
    .expect("constraints")
}

fn ids(store: &Store, table: &str) -> Vec<i64> {
    store
        .select(&format!("SELECT id FROM {table} ORDER BY id"), [], |r| {
            r.get(0)
        })
        .expect("ids")
}

#[tokio::test]
async fn version_2_gets_its_keys_back_and_keeps_its_rows_and_ids() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    drop(Store::open(&path).expect("create"));
    let ids_before: Vec<i64> = {
        let conn = raw(&path);
        conn.execute_batch(V2_ROUND_TABLES)
            .expect("version 2 tables");
        assert_eq!(unique_constraints(&conn), 3);
        let mut stmt = conn
            .prepare("SELECT id FROM leader_board ORDER BY id")
            .expect("ids");
        stmt.query_map([], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    };
    let store = Store::open(&path).expect("upgrade");
    assert_eq!(versions(&store), vec![2, SCHEMA_VERSION]);
    assert_eq!(keys(&store), expected_keys());
    assert_eq!(ids(&store, "leader_board"), ids_before);
    assert!(dir.path().join("mixseek.db.v2.bak").is_file());
    let rounds = store.team_rounds("e2", "team-a").expect("rounds");
    assert_eq!(rounds.len(), 2);
    assert_eq!(rounds[1].decision.reasoning.as_deref(), Some("stop"));
    assert!(rounds[1].final_submission);
    // writing works on the upgraded file, still one row per key
    let writer = store
        .writer(mixseek_core::PiiMasker::disabled())
        .expect("writer");
    let r = common::round("e2", "team-a", "A", 2, 70.0, "rewritten");
    for _ in 0..2 {
        writer
            .write(&mixseek_core::Event::Evaluated(Box::new(r.clone())))
            .await
            .expect("write");
    }
    assert_eq!(store.count_rows("leader_board").expect("count"), 2);
    let rounds = store.team_rounds("e2", "team-a").expect("rounds");
    assert_eq!(rounds[1].state.submission_content, "rewritten");
    assert!(
        rounds[1].final_submission,
        "the final flag survives the rewrite"
    );
    // a new key gets ids above every id the version-2 file had, in each table
    writer
        .write(&mixseek_core::Event::Evaluated(Box::new(common::round(
            "e2", "team-a", "A", 3, 75.0, "new",
        ))))
        .await
        .expect("new round");
    for (table, old_max) in [
        ("round_history", 102),
        ("leader_board", 202),
        ("round_status", 302),
    ] {
        let (old, new): (i64, i64) = store
            .select(
                &format!(
                    "SELECT max(id) FILTER (WHERE round_number < 3), max(id) FILTER (WHERE round_number = 3)
                     FROM {table}"
                ),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("ids")[0];
        assert_eq!(old, old_max, "{table}: the old ids are kept");
        assert!(new > old, "{table}: new id {new} continues above {old}");
    }
    // the columns version 4 adds: copied from leader_board for the old rounds
    assert_eq!(
        strings(
            &store,
            "SELECT submission_content FROM round_history ORDER BY round_number"
        ),
        ["first", "rewritten", "new"].map(|s| Some(s.to_string()))
    );
    // the column version 3 adds: NULL for the old rounds, the applied rules for new ones
    assert_eq!(
        strings(
            &store,
            "SELECT applied_injections FROM round_history ORDER BY round_number"
        ),
        vec![None, Some("[]".to_string()), Some("[]".to_string())],
        "round 2 was rewritten after the upgrade"
    );
    common::assert_unique_keys(&store);
}

/// Turns a new (latest) file back into a version-6 one: without the theme tables (also used
/// by `experiment_store.rs` for a shard of an older version).
pub(crate) fn downgrade_to_v6(path: &Path) {
    raw(path)
        .execute_batch(
            "DROP TABLE theme_analyses; DROP TABLE comment_themes;
DROP TABLE experiments; DROP TABLE experiment_items; DROP TABLE execution_attachments;
DROP TABLE experiment_arenas; DROP TABLE experiment_arena_ratings;
             UPDATE schema_version SET version = 6;",
        )
        .expect("version 6");
}

/// Turns a new (latest) file back into a version-5 one: without the arena and theme tables.
fn downgrade_to_v5(path: &Path) {
    raw(path)
        .execute_batch(
            "DROP TABLE arena_runs; DROP TABLE arena_games; DROP TABLE arena_ratings;
DROP TABLE theme_analyses; DROP TABLE comment_themes;
DROP TABLE experiments; DROP TABLE experiment_items; DROP TABLE execution_attachments;
DROP TABLE experiment_arenas; DROP TABLE experiment_arena_ratings;
             UPDATE schema_version SET version = 5;",
        )
        .expect("version 5");
}

/// Turns a new (latest) file back into a version-4 one: the four keyed tables rebuilt without
/// their PRIMARY KEY and UNIQUE constraints (from DuckDB's own DDL of them), version 4.
fn downgrade_to_v4(path: &Path) {
    downgrade_to_v5(path);
    let conn = raw(path);
    for table in ["round_history", "leader_board", "round_status", "llm_calls"] {
        let ddl: String = conn
            .query_row(
                "SELECT sql FROM duckdb_tables() WHERE table_name = ?",
                [table],
                |r| r.get(0),
            )
            .expect("ddl");
        let unkeyed = ddl
            .replace(", PRIMARY KEY(id)", "")
            .replace(", UNIQUE(execution_id, team_id, round_number)", "");
        assert!(
            !unkeyed.contains("PRIMARY KEY") && !unkeyed.contains("UNIQUE"),
            "{unkeyed}"
        );
        conn.execute_batch(&format!(
            "ALTER TABLE {table} RENAME TO {table}_keyed; {unkeyed}
             INSERT INTO {table} SELECT * FROM {table}_keyed; DROP TABLE {table}_keyed;"
        ))
        .expect("unkeyed table");
    }
    conn.execute_batch("UPDATE schema_version SET version = 4")
        .expect("version 4");
    assert_eq!(unique_constraints(&conn), 0);
}

#[tokio::test]
async fn version_3_gains_the_submission_columns_of_round_history_and_its_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    {
        let store = Store::open(&path).expect("create");
        let writer = store
            .writer(mixseek_core::PiiMasker::disabled())
            .expect("writer");
        let evaluated = common::round("e3", "team-a", "A", 1, 50.0, "evaluated");
        writer
            .write(&mixseek_core::Event::Evaluated(Box::new(evaluated)))
            .await
            .expect("evaluated");
        let unevaluated = common::round("e3", "team-a", "A", 2, 0.0, "unevaluated");
        writer
            .write(&common::submitted(&unevaluated))
            .await
            .expect("submitted");
    }
    // back to what version 3 had
    downgrade_to_v4(&path);
    raw(&path)
        .execute_batch(
            "ALTER TABLE round_history DROP COLUMN submission_content;
             ALTER TABLE round_history DROP COLUMN submission_sha256;
             UPDATE schema_version SET version = 3;",
        )
        .expect("version 3");
    // a report command reads it as it is (from an upgraded copy in memory) …
    {
        let before = file_bytes(&path);
        let reader = Store::open_read_only(&path).expect("read");
        assert_eq!(versions(&reader), vec![3, SCHEMA_VERSION]);
        assert_eq!(reader.team_rounds("e3", "team-a").expect("rounds").len(), 1);
        drop(reader);
        assert!(file_bytes(&path) == before, "reading changed the file");
        assert!(!dir.path().join("mixseek.db.v3.bak").exists());
    }
    // … and a command that writes upgrades it
    let store = Store::open(&path).expect("upgrade");
    assert_eq!(versions(&store), vec![3, SCHEMA_VERSION]);
    assert_eq!(keys(&store), expected_keys());
    assert_eq!(
        strings(
            &store,
            "SELECT submission_content FROM round_history ORDER BY round_number"
        ),
        vec![Some("evaluated".to_string()), None],
        "copied from leader_board where there is a row"
    );
    let detail = store
        .round_detail("e3", "team-a", 2)
        .expect("detail")
        .expect("the unevaluated round reads");
    assert!(!detail.evaluated);
    assert_eq!(detail.submission_content, "");
    assert_eq!(store.team_rounds("e3", "team-a").expect("rounds").len(), 1);
    // the version-3 file, as it was
    let backup = raw(&dir.path().join("mixseek.db.v3.bak"));
    let (version, columns): (i64, i64) = backup
        .query_row(
            "SELECT (SELECT max(version) FROM schema_version),
                    (SELECT count(*) FROM information_schema.columns
                     WHERE table_name = 'round_history' AND column_name = 'submission_content')",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("backup");
    assert_eq!((version, columns), (3, 0));
}

/// A digest of every row of the tables version 5 has, in key order.
fn digest(select: impl Fn(&str) -> String) -> Vec<(String, String)> {
    [
        ("execution_summary", "execution_id"),
        ("round_history", "id"),
        ("leader_board", "id"),
        ("round_status", "id"),
        ("llm_calls", "id"),
        ("schema_version", "version"),
    ]
    .into_iter()
    .map(|(table, key)| {
        let only_v5 = if table == "schema_version" {
            "WHERE version = 5"
        } else {
            ""
        };
        let sql = format!(
            "SELECT concat(count(*), ':', md5(string_agg(CAST(t AS VARCHAR), '|' ORDER BY t.{key})))
             FROM {table} t {only_v5}"
        );
        (table.to_string(), select(&sql))
    })
    .collect()
}

#[tokio::test]
async fn version_5_gains_the_arena_tables_and_keeps_everything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    {
        let (_store, writer) = common::open_with_writer(dir.path());
        common::populate(&writer).await;
    }
    downgrade_to_v5(&path);
    let before = {
        let conn = raw(&path);
        digest(|sql| conn.query_row(sql, [], |r| r.get(0)).expect(sql))
    };
    assert!(
        before.iter().all(|(_, d)| !d.starts_with("0:")),
        "{before:?}"
    );
    // what an upgrade would do, said without writing
    let status = Store::status(&path).expect("status");
    let plan = status.upgrade.expect("an upgrade is due");
    assert_eq!((plan.from, plan.to), (5, SCHEMA_VERSION));
    assert_eq!(plan.changes.len(), 2, "{:?}", plan.changes);
    assert!(
        plan.changes[0].contains("arena_runs") && plan.changes[0].contains("theme_analyses"),
        "{:?}",
        plan.changes
    );
    assert!(
        plan.changes[1].contains("experiment_items"),
        "{:?}",
        plan.changes
    );
    // a report command reads it as it is: no arena yet
    {
        let bytes = file_bytes(&path);
        let reader = Store::open_read_only(&path).expect("read");
        assert_eq!(versions(&reader), vec![5, SCHEMA_VERSION]);
        assert!(reader.arenas(common::EXEC).expect("arenas").is_empty());
        assert!(reader.latest_arena(common::EXEC).expect("latest").is_none());
        let overview = reader.execution_overview(common::EXEC).expect("overview");
        assert!(overview.arena.is_none());
        drop(reader);
        assert!(file_bytes(&path) == bytes, "reading changed the file");
        assert!(!dir.path().join("mixseek.db.v5.bak").exists());
    }
    // a command that writes upgrades it: a backup first, then the three tables, nothing else
    let store = Store::open(&path).expect("upgrade");
    let report = store.migration().expect("upgraded");
    assert_eq!((report.from, report.to), (5, SCHEMA_VERSION));
    assert!(report.dropped.is_empty() && report.renumbered.is_empty());
    let backup = dir.path().join("mixseek.db.v5.bak");
    assert_eq!(report.backup.as_deref(), Some(backup.as_path()));
    assert_eq!(versions(&store), vec![5, SCHEMA_VERSION]);
    assert_eq!(
        strings(
            &store,
            &format!("SELECT description FROM schema_version WHERE version = {SCHEMA_VERSION}")
        ),
        vec![Some(
            "upgraded from version 5 (arena, theme and experiment tables added)".to_string()
        )]
    );
    assert_eq!(keys(&store), expected_keys());
    for t in [
        "arena_runs",
        "arena_games",
        "arena_ratings",
        "theme_analyses",
        "comment_themes",
    ] {
        assert_eq!(store.count_rows(t).expect("the table exists"), 0, "{t}");
    }
    let after = digest(|sql| {
        store
            .select(sql, [], |r| r.get::<_, String>(0))
            .expect(sql)
            .remove(0)
    });
    assert_eq!(after, before, "every row kept as it was");
    assert_eq!(
        store
            .team_rounds(common::EXEC, "alpha")
            .expect("rounds")
            .len(),
        3
    );
    // the version-5 file, as it was
    let conn = raw(&backup);
    let (version, arena_tables): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT max(version) FROM schema_version),
                    (SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'arena%')",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("backup");
    assert_eq!((version, arena_tables), (5, 0));
    assert_eq!(
        digest(|sql| conn.query_row(sql, [], |r| r.get(0)).expect(sql)),
        before
    );
    drop(conn);
    drop(store);
    // reopening does nothing more
    let store = Store::open(&path).expect("reopen");
    assert_eq!(store.migration(), None);
    assert_eq!(versions(&store), vec![5, SCHEMA_VERSION]);
}

/// Rows a version-4 file may hold since nothing enforced the keys: two rows of one key in each
/// round table (the second newer by `updated_at`; in round_status equal times, so the higher
/// id wins), a call without an id and two calls sharing one.
const V4_DUPLICATES: &str = "
INSERT INTO round_history (id, execution_id, team_id, team_name, round_number, message_history, created_at, updated_at)
  VALUES (10, 'e4', 'a', 'A', 1, '[\"old\"]', TIMESTAMPTZ '2025-01-01 00:00:00+00', TIMESTAMPTZ '2025-01-01 00:00:00+00'),
         (11, 'e4', 'a', 'A', 1, '[\"new\"]', TIMESTAMPTZ '2025-01-01 00:00:00+00', TIMESTAMPTZ '2025-01-02 00:00:00+00'),
         (12, 'e4', 'a', 'A', 2, '[\"only\"]', TIMESTAMPTZ '2025-01-01 00:00:00+00', TIMESTAMPTZ '2025-01-01 00:00:00+00');
INSERT INTO leader_board (id, execution_id, team_id, team_name, round_number, submission_content, score, score_details, updated_at)
  VALUES (20, 'e4', 'a', 'A', 1, 'newer', 90.0, '{}', TIMESTAMPTZ '2025-01-03 00:00:00+00'),
         (21, 'e4', 'a', 'A', 1, 'older', 10.0, '{}', TIMESTAMPTZ '2025-01-01 00:00:00+00'),
         (22, 'e4', 'a', 'A', 1, 'oldest', 5.0, '{}', TIMESTAMPTZ '2024-01-01 00:00:00+00');
INSERT INTO round_status (id, execution_id, team_id, team_name, round_number, reasoning, created_at, updated_at)
  VALUES (30, 'e4', 'a', 'A', 1, 'lower id', TIMESTAMPTZ '2025-01-01 00:00:00+00', TIMESTAMPTZ '2025-01-01 00:00:00+00'),
         (31, 'e4', 'a', 'A', 1, 'higher id', TIMESTAMPTZ '2025-01-01 00:00:00+00', TIMESTAMPTZ '2025-01-01 00:00:00+00');
INSERT INTO llm_calls (id, execution_id, role, model, input_tokens, output_tokens, cached_tokens, requests,
    cost_usd, priced, latency_ms, attempts, cache_hit, called_at)
  VALUES (NULL, 'e4', 'leader', 'm', 1, 0, 0, 1, 0, TRUE, 5, 1, FALSE, TIMESTAMPTZ '2025-01-01 00:00:00+00'),
         (40, 'e4', 'leader', 'm', 2, 0, 0, 1, 0, TRUE, 5, 1, FALSE, TIMESTAMPTZ '2025-01-01 00:00:00+00'),
         (40, 'e4', 'leader', 'm', 3, 0, 0, 1, 0, TRUE, 5, 1, FALSE, TIMESTAMPTZ '2025-01-02 00:00:00+00'),
         (1000, 'e4', 'leader', 'm', 4, 0, 0, 1, 0, TRUE, 5, 1, FALSE, TIMESTAMPTZ '2025-01-01 00:00:00+00');
";

/// Collects the `warn!` events emitted on this thread while `f` runs (message and fields as
/// text). The subscriber is the process-wide default, installed once, routing each event to a
/// per-thread buffer (a scoped subscriber is not reliable with parallel tests: `tracing`
/// caches a callsite's interest from whichever thread reaches it first).
fn capture_warnings<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    use std::cell::RefCell;
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Level, Metadata, Subscriber};

    thread_local! {
        static SINK: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
    }
    struct Collect;
    struct Fields(String);
    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.push_str(&format!("{}={:?} ", field.name(), value));
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.push_str(&format!("{}={} ", field.name(), value));
        }
    }
    impl Subscriber for Collect {
        fn enabled(&self, m: &Metadata<'_>) -> bool {
            *m.level() <= Level::WARN
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, e: &Event<'_>) {
            let mut v = Fields(String::new());
            e.record(&mut v);
            SINK.with(|s| {
                if let Some(out) = s.borrow_mut().as_mut() {
                    out.push(v.0);
                }
            });
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        // Fails only if another global default exists, which this test binary never sets.
        let _ = tracing::subscriber::set_global_default(Collect);
    });
    SINK.with(|s| *s.borrow_mut() = Some(Vec::new()));
    let r = f();
    let out = SINK.with(|s| s.borrow_mut().take()).unwrap_or_default();
    (r, out)
}

#[test]
fn version_4_duplicates_keep_the_newest_row_and_are_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    drop(Store::open(&path).expect("create"));
    downgrade_to_v4(&path);
    raw(&path).execute_batch(V4_DUPLICATES).expect("duplicates");
    // a column added by hand
    raw(&path)
        .execute_batch("ALTER TABLE round_status ADD COLUMN my_note VARCHAR")
        .expect("column");
    // an earlier backup of version 4 exists: it is not overwritten
    std::fs::write(dir.path().join("mixseek.db.v4.bak"), b"an older backup").expect("backup");

    let (store, warnings) = capture_warnings(|| Store::open(&path).expect("upgrade"));
    assert_eq!(keys(&store), expected_keys());
    let report = store.migration().expect("upgraded").clone();
    assert_eq!((report.from, report.to), (4, SCHEMA_VERSION));
    let dropped: Vec<(&str, &str, u64, u64)> = report
        .dropped
        .iter()
        .map(|d| (d.table.as_str(), d.key.as_str(), d.keys, d.rows))
        .collect();
    let key = "(execution_id, team_id, round_number)";
    assert_eq!(
        dropped,
        vec![
            ("round_history", key, 1, 1),
            ("leader_board", key, 1, 2),
            ("round_status", key, 1, 1),
        ]
    );
    assert_eq!(report.dropped[0].examples, vec!["e4/a/1".to_string()]);
    let renumbered: Vec<(&str, u64)> = report
        .renumbered
        .iter()
        .map(|r| (r.table.as_str(), r.rows))
        .collect();
    assert_eq!(
        renumbered,
        vec![("llm_calls", 2)],
        "the NULL id and the second 40"
    );
    assert_eq!(
        report.dropped_columns,
        vec!["round_status.my_note".to_string()]
    );
    // the newest of each key is kept
    assert_eq!(
        strings(
            &store,
            "SELECT message_history FROM round_history ORDER BY round_number"
        ),
        vec![
            Some("[\"new\"]".to_string()),
            Some("[\"only\"]".to_string())
        ]
    );
    assert_eq!(
        strings(&store, "SELECT submission_content FROM leader_board"),
        vec![Some("newer".to_string())]
    );
    assert_eq!(
        strings(&store, "SELECT reasoning FROM round_status"),
        vec![Some("higher id".to_string())]
    );
    // every call is kept; the newer of the two 40s keeps its id, the others get new ones
    // above every id the table had
    let calls: Vec<(i64, i64)> = store
        .select(
            "SELECT input_tokens, id FROM llm_calls ORDER BY input_tokens",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("calls");
    assert_eq!(calls.len(), 4);
    assert_eq!((calls[2], calls[3]), ((3, 40), (4, 1000)));
    assert!(calls[0].1 > 1000 && calls[1].1 > 1000, "{calls:?}");
    assert_ne!(calls[0].1, calls[1].1);
    // the log names the table, the key and the count
    for (table, rows) in [
        ("round_history", 1),
        ("leader_board", 2),
        ("round_status", 1),
    ] {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(&format!("table={table}"))
                    && w.contains(key)
                    && w.contains(&format!("rows={rows}"))),
            "{table}: {warnings:#?}"
        );
    }
    // the backup: next to the file, the older one untouched, a readable version-4 copy
    let backup = dir.path().join("mixseek.db.v4.1.bak");
    assert_eq!(report.backup.as_deref(), Some(backup.as_path()));
    assert!(
        warnings.iter().any(|w| w.contains("mixseek.db.v4.1.bak")),
        "{warnings:#?}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("mixseek.db.v4.bak")).expect("older backup"),
        b"an older backup"
    );
    let copy = raw(&backup);
    let (version, history_rows, keyed): (i64, i64, i64) = copy
        .query_row(
            "SELECT (SELECT max(version) FROM schema_version), (SELECT count(*) FROM round_history),
                    (SELECT count(*) FROM duckdb_constraints() WHERE constraint_type = 'UNIQUE')",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("backup");
    assert_eq!(
        (version, history_rows, keyed),
        (4, 3, 0),
        "the file as it was"
    );
}

#[test]
fn a_failed_upgrade_leaves_the_file_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    drop(Store::open(&path).expect("create"));
    downgrade_to_v4(&path);
    // a row the keyed table refuses (a NULL key column), which version 4 let in
    raw(&path)
        .execute_batch(
            "ALTER TABLE round_status ALTER COLUMN team_name DROP NOT NULL;
             INSERT INTO round_status (id, execution_id, team_id, team_name, round_number)
             VALUES (1, 'e', 't', NULL, 1);",
        )
        .expect("a row version 5 refuses");
    let err = Store::open(&path).expect_err("the upgrade fails");
    assert!(
        matches!(err, StoreError::Migration { from: 4, .. }),
        "{err}"
    );
    let conn = raw(&path);
    let (version, keyed, rows): (i64, i64, i64) = conn
        .query_row(
            "SELECT (SELECT max(version) FROM schema_version),
                    (SELECT count(*) FROM duckdb_constraints() WHERE constraint_type = 'UNIQUE'),
                    (SELECT count(*) FROM round_status)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("file");
    assert_eq!((version, keyed, rows), (4, 0, 1), "untouched");
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM information_schema.tables WHERE table_name LIKE '%before_v5'",
            [],
            |r| r.get(0),
        )
        .expect("tables");
    assert_eq!(tables, 0);
}

#[tokio::test]
async fn version_6_gains_the_theme_tables_and_keeps_its_arenas() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    {
        let (_store, writer) = common::open_with_writer(dir.path());
        common::populate(&writer).await;
    }
    downgrade_to_v6(&path);
    let before = {
        let conn = raw(&path);
        digest(|sql| conn.query_row(sql, [], |r| r.get(0)).expect(sql))
    };
    // a report command reads it as it is: no analysis yet, nothing written
    {
        let bytes = file_bytes(&path);
        let reader = Store::open_read_only(&path).expect("read");
        assert!(
            reader
                .theme_analyses(common::EXEC)
                .expect("analyses")
                .is_empty()
        );
        assert!(
            reader
                .execution_overview(common::EXEC)
                .expect("overview")
                .themes
                .is_none()
        );
        drop(reader);
        assert!(file_bytes(&path) == bytes, "reading changed the file");
    }
    let store = Store::open(&path).expect("upgrade");
    let report = store.migration().expect("upgraded");
    assert_eq!((report.from, report.to), (6, SCHEMA_VERSION));
    assert!(dir.path().join("mixseek.db.v6.bak").exists());
    assert_eq!(
        strings(
            &store,
            &format!("SELECT description FROM schema_version WHERE version = {SCHEMA_VERSION}")
        ),
        vec![Some(
            "upgraded from version 6 (theme and experiment tables added)".to_string()
        )]
    );
    assert_eq!(keys(&store), expected_keys());
    for t in ["theme_analyses", "comment_themes"] {
        assert_eq!(store.count_rows(t).expect("the table exists"), 0, "{t}");
    }
    let after = digest(|sql| {
        store
            .select(sql, [], |r| r.get::<_, String>(0))
            .expect(sql)
            .remove(0)
    });
    assert_eq!(after.len(), before.len());
    for ((table, a), (_, b)) in after.iter().zip(&before) {
        if table != "schema_version" {
            assert_eq!(a, b, "{table}: every row kept as it was");
        }
    }
}

/// Turns a new (latest) file back into a version-8 one: without the experiment arena tables.
pub(crate) fn downgrade_to_v8(path: &Path) {
    raw(path)
        .execute_batch(
            "DROP TABLE experiment_arenas; DROP TABLE experiment_arena_ratings;
             UPDATE schema_version SET version = 8;",
        )
        .expect("version 8");
}

#[tokio::test]
async fn version_8_gains_the_experiment_arena_tables_and_keeps_everything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    {
        let (_store, writer) = common::open_with_writer(dir.path());
        common::populate(&writer).await;
    }
    downgrade_to_v8(&path);
    let before = {
        let conn = raw(&path);
        digest(|sql| conn.query_row(sql, [], |r| r.get(0)).expect(sql))
    };
    // what an upgrade would do, said without writing
    let plan = Store::status(&path)
        .expect("status")
        .upgrade
        .expect("an upgrade is due");
    assert_eq!((plan.from, plan.to), (8, SCHEMA_VERSION));
    assert_eq!(plan.changes.len(), 1, "{:?}", plan.changes);
    assert!(
        plan.changes[0].contains("experiment_arena_ratings")
            && plan.changes[0].contains("no other table is rewritten"),
        "{:?}",
        plan.changes
    );
    // a report command reads it as it is: no experiment arena, nothing written
    {
        let bytes = file_bytes(&path);
        let reader = Store::open_read_only(&path).expect("read");
        assert!(
            reader
                .latest_experiment_arena("copper")
                .expect("read")
                .is_none()
        );
        drop(reader);
        assert!(file_bytes(&path) == bytes, "reading changed the file");
    }
    let store = Store::open(&path).expect("upgrade");
    let report = store.migration().expect("upgraded");
    assert_eq!((report.from, report.to), (8, SCHEMA_VERSION));
    assert!(report.dropped.is_empty() && report.renumbered.is_empty());
    assert!(dir.path().join("mixseek.db.v8.bak").exists());
    assert_eq!(versions(&store), vec![8, SCHEMA_VERSION]);
    assert_eq!(
        strings(
            &store,
            &format!("SELECT description FROM schema_version WHERE version = {SCHEMA_VERSION}")
        ),
        vec![Some(
            "upgraded from version 8 (experiment arena tables added)".to_string()
        )]
    );
    assert_eq!(keys(&store), expected_keys());
    for t in ["experiment_arenas", "experiment_arena_ratings"] {
        assert_eq!(store.count_rows(t).expect("the table exists"), 0, "{t}");
    }
    let after = digest(|sql| {
        store
            .select(sql, [], |r| r.get::<_, String>(0))
            .expect(sql)
            .remove(0)
    });
    assert_eq!(after.len(), before.len());
    for ((table, a), (_, b)) in after.iter().zip(&before) {
        if table != "schema_version" {
            assert_eq!(a, b, "{table}: every row kept as it was");
        }
    }
    drop(store);
    // reopening does nothing more
    let store = Store::open(&path).expect("reopen");
    assert_eq!(store.migration(), None);
}
