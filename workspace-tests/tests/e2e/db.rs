//! Database files of the original MixSeek: read commands read them as they are and never
//! change them; `mixseek db status` says what the file is and what an upgrade would change;
//! `mixseek db upgrade` and `exec` upgrade it, saying so first and keeping a backup. (The
//! original tier, `tests/original.rs`, checks the same against the original's own code.)

use workspace_tests::{Sandbox, describe, write_mock_competition};

/// The original's schema as its code creates it (JSON columns as VARCHAR: the bundled DuckDB
/// has no json extension), with one finished two-team execution whose round transcripts are
/// in the framework's message format, as the original stores them.
const ORIGINAL: &str = r##"
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
INSERT INTO round_history (execution_id, team_id, team_name, round_number, message_history, member_submissions_record)
  VALUES ('4b0c2a6e-0000-4000-8000-000000000001', 'team-alpha', 'Team Alpha', 1,
    '[{"parts": [{"content": "<user_task>\nWrite a short report about DuckDB.\n</user_task>", "timestamp": "2026-11-27T09:59:22.947844Z", "part_kind": "user-prompt"}], "timestamp": "2026-11-27T09:59:22.948373Z", "instructions": "You lead.", "kind": "request", "run_id": "r1", "metadata": null}, {"parts": [{"tool_name": "delegate_to_analyst", "args": "{\"task\": \"analyse\"}", "tool_call_id": "call_1_0", "part_kind": "tool-call"}], "usage": {"input_tokens": 101, "output_tokens": 21, "details": {}}, "model_name": "gpt-4o-mini", "timestamp": "2026-11-27T09:59:23.009513Z", "kind": "response", "provider_name": "openai", "finish_reason": "tool_call", "state": "complete"}, {"parts": [{"tool_name": "delegate_to_analyst", "content": "analysis", "tool_call_id": "call_1_0", "timestamp": "2026-11-27T09:59:23.081826Z", "outcome": "success", "part_kind": "tool-return"}], "timestamp": "2026-11-27T09:59:23.082446Z", "instructions": "You lead.", "kind": "request"}, {"parts": [{"content": "# Final submission", "part_kind": "text"}], "usage": {"input_tokens": 150, "output_tokens": 30}, "model_name": "gpt-4o-mini", "timestamp": "2026-11-27T09:59:23.2Z", "kind": "response", "finish_reason": "stop"}]',
    '{"execution_id": "4b0c2a6e-0000-4000-8000-000000000001", "team_id": "team-alpha", "team_name": "Team Alpha", "round_number": 1, "submissions": [{"agent_name": "analyst", "agent_type": "plain", "content": "analysis", "status": "SUCCESS", "error_message": null, "usage": {"input_tokens": 0, "cache_write_tokens": 0, "cache_read_tokens": 0, "output_tokens": 0, "input_audio_tokens": 0, "cache_audio_read_tokens": 0, "output_audio_tokens": 0, "details": {}, "requests": 1, "tool_calls": 0}, "timestamp": "2026-11-27T09:59:23.081771Z", "execution_time_ms": 44.913000000000004, "all_messages": []}], "successful_submissions": [], "failed_submissions": [], "total_count": 1, "success_count": 1, "failure_count": 0, "total_usage": {"input_tokens": 0, "output_tokens": 0, "requests": 1}}'),
  ('4b0c2a6e-0000-4000-8000-000000000001', 'team-beta', 'Team Beta', 1, '[]', NULL);
INSERT INTO leader_board (execution_id, team_id, team_name, round_number, submission_content, score, score_details,
    final_submission, exit_reason, created_at, updated_at)
  VALUES ('4b0c2a6e-0000-4000-8000-000000000001', 'team-alpha', 'Team Alpha', 1, '# Final submission', 78.5,
          '{"overall_score": 78.5, "metrics": [{"metric_name": "Relevance", "score": 78.5, "evaluator_comment": "ok"}]}',
          TRUE, 'no_improvement_expected', '2026-11-27 09:59:24', '2026-11-27 09:59:25'),
         ('4b0c2a6e-0000-4000-8000-000000000001', 'team-beta', 'Team Beta', 1, 'beta', 60.0,
          '{"overall_score": 60.0, "metrics": []}', TRUE, 'no_improvement_expected', '2026-11-27 09:59:24', '2026-11-27 09:59:25');
INSERT INTO round_status (execution_id, team_id, team_name, round_number, should_continue, reasoning, confidence_score,
    round_started_at, round_ended_at)
  VALUES ('4b0c2a6e-0000-4000-8000-000000000001', 'team-alpha', 'Team Alpha', 1, FALSE, 'good enough', 0.8,
          '2026-11-27 09:59:22', '2026-11-27 09:59:24');
INSERT INTO execution_summary (execution_id, user_prompt, status, team_results, total_teams, best_team_id, best_score,
    total_execution_time_seconds)
  VALUES ('4b0c2a6e-0000-4000-8000-000000000001', 'Write a short report about DuckDB.', 'completed', '[]', 2,
          'team-alpha', 78.5, 2.5);
"##;

const EXECUTION: &str = "4b0c2a6e-0000-4000-8000-000000000001";

/// A workspace holding the original's database; returns the file.
pub(crate) fn original_workspace(sb: &Sandbox) -> std::path::PathBuf {
    let ws = sb.workspace();
    std::fs::create_dir_all(&ws).expect("workspace");
    let db = ws.join("mixseek.db");
    let conn = duckdb::Connection::open(&db).expect("create");
    conn.execute_batch(ORIGINAL)
        .expect("the original's schema and rows");
    drop(conn);
    db
}

fn bytes(db: &std::path::Path) -> (Vec<u8>, Option<Vec<u8>>) {
    (
        std::fs::read(db).expect("file"),
        std::fs::read(db.with_file_name("mixseek.db.wal")).ok(),
    )
}

fn backups(ws: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(ws)
        .expect("workspace")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".bak"))
        .collect();
    names.sort();
    names
}

#[test]
fn read_commands_read_the_originals_file_and_never_change_it() {
    let sb = Sandbox::new();
    let db = original_workspace(&sb);
    let before = bytes(&db);
    let report = sb.path().join("report.html");
    let export = sb.path().join("export.json");
    let runs: Vec<(Vec<&str>, &str)> = vec![
        (vec!["executions"], "Write a short report about DuckDB."),
        (vec!["leaderboard"], "team-alpha"),
        (vec!["leaderboard", "--all"], "team-beta"),
        (vec!["history", "-e", EXECUTION], "78.50"),
        (vec!["show", EXECUTION], "Team Alpha"),
        // the leader's prompt comes from the original's message history, the members from its record
        (
            vec!["show", EXECUTION, "--team", "team-alpha", "--round", "1"],
            "│ analyst │ SUCCESS │",
        ),
        (
            vec![
                "show",
                EXECUTION,
                "--team",
                "team-alpha",
                "--round",
                "1",
                "-f",
                "json",
            ],
            "Write a short report about DuckDB.",
        ),
        (
            vec![
                "export",
                EXECUTION,
                "-f",
                "json",
                "-o",
                export.to_str().expect("utf-8"),
            ],
            "",
        ),
        (
            vec!["report", EXECUTION, "-o", report.to_str().expect("utf-8")],
            "",
        ),
        (vec!["db", "status"], "1 (the original MixSeek's)"),
    ];
    for (args, expected) in runs {
        let out = sb.cmd().args(&args).output().expect("run");
        assert!(out.status.success(), "{args:?}: {}", describe(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(expected),
            "{args:?}: {}",
            describe(&out)
        );
        assert!(
            bytes(&db) == before,
            "`mixseek {}` changed the file",
            args.join(" ")
        );
    }
    assert!(backups(&sb.workspace()).is_empty(), "a read made a backup");
    assert!(
        std::fs::read_to_string(&report).is_ok_and(|h| h.contains("# Final submission")),
        "the report has the original's submission"
    );
}

#[test]
fn db_status_says_what_an_upgrade_would_change_and_db_upgrade_does_it_once() {
    let sb = Sandbox::new();
    let db = original_workspace(&sb);
    let before = bytes(&db).0;
    let out = sb.cmd().args(["db", "status"]).output().expect("status");
    assert!(out.status.success(), "{}", describe(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    for expected in [
        "Schema version:  1 (the original MixSeek's)",
        "Written by:      the original MixSeek (mixseek-core)",
        "Executions:      1",
        "keeps the original's keys",
        "mixseek.db.v1.bak",
        "Run `mixseek db upgrade`",
    ] {
        assert!(text.contains(expected), "missing {expected:?}:\n{text}");
    }
    let json: serde_json::Value = serde_json::from_slice(
        &sb.cmd()
            .args(["db", "status", "-f", "json"])
            .output()
            .expect("json")
            .stdout,
    )
    .expect("JSON");
    assert_eq!(json["version"], 1);
    assert_eq!(json["origin"], "original");
    assert_eq!(json["upgrade"]["from"], 1);
    assert_eq!(json["upgrade"]["to"], mixseek_store::SCHEMA_VERSION);

    let out = sb.cmd().args(["db", "upgrade"]).output().expect("upgrade");
    assert!(out.status.success(), "{}", describe(&out));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    // announced before, on stderr, naming the backup; reported after
    assert!(
        stderr.contains("Upgrading") && stderr.contains("mixseek.db.v1.bak"),
        "{stderr}"
    );
    assert!(
        stdout.contains("Upgraded") && stdout.contains("from schema version 1"),
        "{stdout}"
    );
    assert_eq!(backups(&sb.workspace()), ["mixseek.db.v1.bak"]);
    assert!(std::fs::read(sb.workspace().join("mixseek.db.v1.bak")).expect("backup") == before);

    let out = sb.cmd().args(["db", "upgrade"]).output().expect("again");
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("nothing to upgrade"),
        "{}",
        describe(&out)
    );
    let out = sb
        .cmd()
        .args(["db", "status"])
        .output()
        .expect("status after");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("Upgrade:         not needed"), "{text}");
    assert!(
        text.contains("upgraded from the original MixSeek schema"),
        "{text}"
    );
    assert_eq!(backups(&sb.workspace()).len(), 1, "no second backup");
}

#[test]
fn exec_announces_the_upgrade_of_an_older_file_before_writing() {
    let sb = Sandbox::new();
    let db = original_workspace(&sb);
    let before = bytes(&db).0;
    let orch = write_mock_competition(&sb, &["a"]);
    let out = sb
        .cmd()
        .args(["exec", "a new task", "-q", "-c"])
        .arg(&orch)
        .output()
        .expect("exec");
    // -q keeps stderr to errors: the announcement is not a log line, it is always said
    assert!(out.status.success(), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("from schema version 1 (the original MixSeek's)")
            && stderr.contains("mixseek.db.v1.bak"),
        "{stderr}"
    );
    assert!(std::fs::read(sb.workspace().join("mixseek.db.v1.bak")).expect("backup") == before);
    // both executions are there
    let out = sb
        .cmd()
        .args(["executions", "-f", "json"])
        .output()
        .expect("executions");
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(rows.as_array().map(Vec::len), Some(2), "{rows}");
    // a current file is not announced
    let out = sb
        .cmd()
        .args(["exec", "again", "-q", "-c"])
        .arg(&orch)
        .output()
        .expect("exec");
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("Upgrading"),
        "{}",
        describe(&out)
    );
}

#[test]
fn db_status_of_a_workspace_without_a_database_says_how_to_make_one() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.workspace()).expect("workspace");
    let out = sb.cmd().args(["db", "status"]).output().expect("status");
    assert!(!out.status.success(), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mixseek.db") && stderr.contains("mixseek exec"),
        "{stderr}"
    );
    assert!(
        !sb.workspace().join("mixseek.db").exists(),
        "status created nothing"
    );
}
