//! Schema creation and migration: a database of the original Python MixSeek is upgraded in
//! place (rows kept, types widened), one of our version 2 loses its UNIQUE round keys (rows,
//! ids and decisions kept), version 3 gains `round_history.submission_content` (copied from
//! `leader_board`), a file of a newer mixseek is refused.

mod common;

use duckdb::Connection;
use mixseek_store::schema::SCHEMA_VERSION;
use mixseek_store::{LeaderboardScope, Store, StoreError};

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

fn column_type(conn: &Connection, table: &str, column: &str) -> String {
    conn.query_row(
        "SELECT data_type FROM information_schema.columns WHERE table_name = ? AND column_name = ?",
        [table, column],
        |r| r.get(0),
    )
    .expect("column exists")
}

#[test]
fn a_new_file_gets_the_current_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("mixseek.db")).expect("open");
    let conn = store.connection().expect("conn");
    let v: i64 = conn
        .query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))
        .expect("version");
    assert_eq!(v, SCHEMA_VERSION);
    assert_eq!(column_type(&conn, "leader_board", "score"), "DOUBLE");
    assert_eq!(
        column_type(&conn, "round_status", "round_ended_at"),
        "TIMESTAMP WITH TIME ZONE"
    );
    for t in mixseek_store::schema::TABLES {
        assert_eq!(
            store.count_rows(t).expect("table exists"),
            u64::from(t == "schema_version"),
            "{t}"
        );
    }
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
    let conn = store.connection().expect("conn");
    assert_eq!(column_type(&conn, "leader_board", "score"), "DOUBLE");
    assert_eq!(
        column_type(&conn, "leader_board", "created_at"),
        "TIMESTAMP WITH TIME ZONE"
    );
    assert_eq!(
        column_type(&conn, "round_status", "confidence_score"),
        "DOUBLE"
    );
    let old_indexes: i64 = conn
        .query_row(
            "SELECT count(*) FROM duckdb_indexes() WHERE index_name LIKE 'idx_%'",
            [],
            |r| r.get(0),
        )
        .expect("indexes");
    assert_eq!(old_indexes, 0);
    assert_eq!(store.count_rows("leader_board").expect("count"), 3);
    assert_eq!(store.count_rows("round_history").expect("count"), 3);
    // version 4 keeps the submission in round_history too: copied from leader_board
    let submissions: Vec<Option<String>> = conn
        .prepare("SELECT submission_content FROM round_history ORDER BY round_number")
        .expect("column")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
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
    let max_id: i64 = conn
        .query_row("SELECT max(id) FROM leader_board", [], |r| r.get(0))
        .expect("ids");
    assert!(max_id >= 3);
    drop((conn, store));
    // reopening does nothing more
    let store = Store::open(&path).expect("reopen");
    let versions: i64 = store
        .connection()
        .expect("c")
        .query_row("SELECT count(*) FROM schema_version", [], |r| r.get(0))
        .expect("v");
    assert_eq!(versions, 1);
}

#[test]
fn a_read_only_open_upgrades_an_old_file_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    {
        let conn = Connection::open(&path).expect("create original");
        conn.execute_batch(ORIGINAL).expect("original schema");
        conn.execute_batch(ROWS).expect("original rows");
    }
    let store = Store::open_read_only(&path).expect("open");
    assert_eq!(store.ranking("e1").expect("ranking")[0].max_score, 85.0);
}

#[test]
fn a_newer_file_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    {
        let store = Store::open(&path).expect("create");
        store
            .connection()
            .expect("conn")
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
    }
}

/// The three round tables as schema version 2 created them: with the UNIQUE key.
const V2_ROUND_TABLES: &str = "
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

#[tokio::test]
async fn version_2_loses_its_round_keys_and_keeps_its_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    let ids_before: Vec<i64> = {
        let store = Store::open(&path).expect("create");
        let conn = store.connection().expect("conn");
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
    let conn = store.connection().expect("conn");
    let versions: Vec<i64> = conn
        .prepare("SELECT version FROM schema_version ORDER BY version")
        .expect("versions")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(versions, vec![2, SCHEMA_VERSION]);
    assert_eq!(unique_constraints(&conn), 0);
    let ids_after: Vec<i64> = conn
        .prepare("SELECT id FROM leader_board ORDER BY id")
        .expect("ids")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(ids_after, ids_before);
    let rounds = store.team_rounds("e2", "team-a").expect("rounds");
    assert_eq!(rounds.len(), 2);
    assert_eq!(rounds[1].decision.reasoning.as_deref(), Some("stop"));
    assert!(rounds[1].final_submission);
    // writing works on the upgraded file, still one row per key
    let writer = store
        .writer(mixseek_store::PiiMasker::disabled())
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
        let (old, new): (i64, i64) = conn
            .query_row(
                &format!(
                    "SELECT max(id) FILTER (WHERE round_number < 3), max(id) FILTER (WHERE round_number = 3)
                     FROM {table}"
                ),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("ids");
        assert_eq!(old, old_max, "{table}: the old ids are kept");
        assert!(new > old, "{table}: new id {new} continues above {old}");
    }
    // the columns version 4 adds: copied from leader_board for the old rounds
    let submissions: Vec<Option<String>> = conn
        .prepare("SELECT submission_content FROM round_history ORDER BY round_number")
        .expect("column")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(
        submissions,
        ["first", "rewritten", "new"].map(|s| Some(s.to_string()))
    );
    // the column version 3 adds: NULL for the old rounds, the applied rules for new ones
    let injections: Vec<Option<String>> = conn
        .prepare("SELECT applied_injections FROM round_history ORDER BY round_number")
        .expect("column")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(
        injections,
        vec![None, Some("[]".to_string()), Some("[]".to_string())],
        "round 2 was rewritten after the upgrade"
    );
    common::assert_unique_keys(&store);
}

#[tokio::test]
async fn version_3_gains_the_submission_columns_of_round_history() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    {
        let store = Store::open(&path).expect("create");
        let writer = store
            .writer(mixseek_store::PiiMasker::disabled())
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
        drop(writer);
        // back to what version 3 had
        store
            .connection()
            .expect("conn")
            .execute_batch(
                "ALTER TABLE round_history DROP COLUMN submission_content;
                 ALTER TABLE round_history DROP COLUMN submission_sha256;
                 UPDATE schema_version SET version = 3;",
            )
            .expect("version 3");
    }
    // a report command opens it read-only: upgraded first
    let store = Store::open_read_only(&path).expect("upgrade");
    let conn = store.connection().expect("conn");
    let versions: Vec<i64> = conn
        .prepare("SELECT version FROM schema_version ORDER BY version")
        .expect("versions")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(versions, vec![3, SCHEMA_VERSION]);
    let submissions: Vec<Option<String>> = conn
        .prepare("SELECT submission_content FROM round_history ORDER BY round_number")
        .expect("column")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(
        submissions,
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
}
