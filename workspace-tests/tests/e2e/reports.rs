//! End-to-end: the report commands of the `mixseek` binary against a workspace database.

use assert_cmd::Command;
use mixseek_store::Store;
use std::path::{Path, PathBuf};

const EXEC: &str = "5c0ffee0-0000-4000-8000-000000000001";

/// A finished execution with two teams (rows written with SQL, as a run would leave them):
/// alpha's round 2 has a metric that failed and was skipped; beta's round 2 was submitted but
/// never evaluated (a `round_history` row only).
fn seed(workspace: &Path) {
    let path = workspace.join("mixseek.db");
    // the schema, then rows written with SQL straight into the closed file
    drop(Store::open(&path).expect("open"));
    let conn = duckdb::Connection::open(&path).expect("open the file");
    let sql = format!(
        "INSERT INTO execution_summary (execution_id, user_prompt, status, team_results, total_teams, best_team_id,
             best_score, total_execution_time_seconds, completed_at, created_at, teams, config_hash, max_rounds)
         VALUES ('{EXEC}', '比較レポートを書いて', 'completed', '[]', 2, 'alpha', 88.0, 12.5,
             TIMESTAMPTZ '2025-11-19 12:10:00+00', TIMESTAMPTZ '2025-11-19 12:00:00+00',
             '[{{\"team_id\": \"alpha\", \"team_name\": \"Alpha\"}}, {{\"team_id\": \"beta\", \"team_name\": \"Beta\"}}]',
             'h', 2);
         INSERT INTO leader_board (execution_id, team_id, team_name, round_number, submission_content, score,
             score_details, final_submission, exit_reason)
         VALUES ('{EXEC}', 'alpha', 'Alpha', 1, 'first', 70.0, '{{\"overall_score\": 70.0, \"metrics\": []}}', FALSE, NULL),
                ('{EXEC}', 'alpha', 'Alpha', 2, 'second <script>alert(1)</script>', 88.0,
                 '{{\"overall_score\": 88.0, \"metrics\": [{{\"metric_name\": \"Coverage\", \"score\": 88.0, \"evaluator_comment\": \"good\"}},
                    {{\"metric_name\": \"backtest\", \"score\": 0.0, \"evaluator_comment\": \"command metric failed | Metric: backtest\",
                      \"status\": \"failed\", \"weight\": 0.0,
                      \"error\": {{\"metric_name\": \"backtest\", \"kind\": \"exit\", \"message\": \"command metric backtest exited with status 3: no data\"}}}}]}}',
                 TRUE, 'max_rounds_reached'),
                ('{EXEC}', 'beta', 'Beta', 1, 'beta answer', 75.5, '{{\"overall_score\": 75.5, \"metrics\": []}}', TRUE,
                 'no_improvement_expected');
         INSERT INTO round_status (execution_id, team_id, team_name, round_number, should_continue, reasoning,
             confidence_score, round_started_at, round_ended_at)
         VALUES ('{EXEC}', 'alpha', 'Alpha', 1, TRUE, 'Below minimum rounds (1 < 2)', 1.0,
                 TIMESTAMPTZ '2025-11-19 12:00:01+00', TIMESTAMPTZ '2025-11-19 12:01:00+00'),
                ('{EXEC}', 'alpha', 'Alpha', 2, FALSE, 'Final round reached', 1.0,
                 TIMESTAMPTZ '2025-11-19 12:01:01+00', TIMESTAMPTZ '2025-11-19 12:02:00+00'),
                ('{EXEC}', 'beta', 'Beta', 1, FALSE, 'good enough', 0.8,
                 TIMESTAMPTZ '2025-11-19 12:00:01+00', TIMESTAMPTZ '2025-11-19 12:01:30+00');
         -- beta's round 2: the leader answered, the evaluation failed (round_history only)
         INSERT INTO round_history (execution_id, team_id, team_name, round_number, message_history,
             member_submissions_record, prompt, submission_content)
         VALUES ('{EXEC}', 'beta', 'Beta', 2, '[]',
                 '{{\"submissions\": [{{\"agent_name\": \"scout\", \"status\": \"SUCCESS\", \"content\": \"scouted facts\",
                    \"usage\": {{\"input_tokens\": 12, \"output_tokens\": 30}}}}]}}',
                 'round 2 prompt', 'beta draft, never evaluated');"
    );
    conn.execute_batch(&sql).expect("seed");
}

fn mixseek(workspace: &Path) -> Command {
    let mut cmd = Command::new(workspace_tests::mixseek_bin());
    cmd.env("MIXSEEK_WORKSPACE", workspace)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1");
    cmd
}

fn stdout(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn without_a_database_the_commands_say_how_to_create_one() {
    let ws = tempfile::tempdir().expect("tempdir");
    for args in [
        vec!["leaderboard"],
        vec!["executions"],
        vec!["history"],
        vec!["show", "abc"],
        vec!["report", "abc"],
        vec!["export", "abc", "--format", "json", "-o", "out.json"],
    ] {
        let out = mixseek(ws.path()).args(&args).output().expect("run");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no database at"), "{args:?}: {err}");
        assert!(err.contains("mixseek exec"), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
    assert!(
        !ws.path().join("mixseek.db").exists(),
        "read commands must not create the database"
    );
}

#[test]
fn every_report_command_in_every_format() {
    let ws = tempfile::tempdir().expect("tempdir");
    seed(ws.path());
    for fmt in ["table", "json", "csv", "markdown"] {
        let lb = stdout(mixseek(ws.path()).args(["leaderboard", "-f", fmt]));
        let ex = stdout(mixseek(ws.path()).args(["executions", "-f", fmt]));
        let hi = stdout(mixseek(ws.path()).args(["history", "--team", "alpha", "-f", fmt]));
        let sh = stdout(mixseek(ws.path()).args(["show", &EXEC[..8], "-f", fmt]));
        let rd = stdout(mixseek(ws.path()).args([
            "show",
            &EXEC[..8],
            "--team",
            "alpha",
            "--round",
            "2",
            "-f",
            fmt,
        ]));
        let unevaluated = stdout(mixseek(ws.path()).args([
            "show",
            &EXEC[..8],
            "--team",
            "beta",
            "--round",
            "2",
            "-f",
            fmt,
        ]));
        let beta = stdout(mixseek(ws.path()).args(["show", EXEC, "--team", "beta", "-f", fmt]));
        insta::assert_snapshot!(format!("cli_show_unevaluated_round_{fmt}"), unevaluated);
        insta::assert_snapshot!(format!("cli_show_team_with_unevaluated_{fmt}"), beta);
        insta::assert_snapshot!(format!("cli_leaderboard_{fmt}"), lb);
        insta::assert_snapshot!(format!("cli_executions_{fmt}"), ex);
        insta::assert_snapshot!(format!("cli_history_{fmt}"), hi);
        insta::assert_snapshot!(format!("cli_show_{fmt}"), sh);
        insta::assert_snapshot!(format!("cli_show_round_{fmt}"), rd);
    }
    let json: serde_json::Value = serde_json::from_str(&stdout(mixseek(ws.path()).args([
        "leaderboard",
        "--execution",
        EXEC,
        "-f",
        "json",
    ])))
    .expect("json");
    assert_eq!(json[0]["team_id"], "alpha");
    assert_eq!(json[1]["score"], 75.5);
    let all = stdout(mixseek(ws.path()).args(["leaderboard", "--all"]));
    assert!(all.contains("across all executions"));
}

#[test]
fn bad_ids_and_formats_are_usage_errors() {
    let ws = tempfile::tempdir().expect("tempdir");
    seed(ws.path());
    let out = mixseek(ws.path())
        .args(["show", "nope"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no execution matches `nope`"));
    let out = mixseek(ws.path())
        .args(["leaderboard", "-f", "xml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let out = mixseek(ws.path())
        .args(["show", EXEC, "--team", "alpha", "--round", "9"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no round 9 of team `alpha`"));
}

#[test]
fn export_and_html_report_write_files() {
    let ws = tempfile::tempdir().expect("tempdir");
    seed(ws.path());
    let out_dir = tempfile::tempdir().expect("out");
    let json_path = out_dir.path().join("export.json");
    stdout(
        mixseek(ws.path())
            .args(["export", EXEC, "--format", "json", "-o"])
            .arg(&json_path),
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).expect("read")).expect("json");
    assert_eq!(
        doc["tables"]["leader_board"].as_array().map(Vec::len),
        Some(3)
    );
    for fmt in ["csv", "parquet"] {
        let dir = out_dir.path().join(fmt);
        stdout(
            mixseek(ws.path())
                .args(["export", "--all", "--format", fmt, "-o"])
                .arg(&dir),
        );
        assert!(dir.join(format!("leader_board.{fmt}")).exists(), "{fmt}");
    }
    let html_path = out_dir.path().join("report.html");
    stdout(
        mixseek(ws.path())
            .args(["report", EXEC, "-o"])
            .arg(&html_path),
    );
    let page = std::fs::read_to_string(&html_path).expect("html");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!page.contains("<script>"));
}

#[test]
fn a_run_with_mask_pii_stores_masked_text_only() {
    let sb = workspace_tests::Sandbox::new();
    let orch = workspace_tests::write_mock_competition(&sb, &["a"]);
    let mut toml = std::fs::read_to_string(&orch).expect("orchestrator.toml");
    toml.push_str("\n[privacy]\nmask_pii = true\n");
    std::fs::write(&orch, toml).expect("write");
    let out = sb
        .cmd()
        .args([
            "exec",
            "taro.yamada@example.com / 090-1234-5678 宛てに返信文を書いて",
            "-q",
            "-c",
        ])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::open_read_only(sb.workspace().join("mixseek.db")).expect("database");
    let count = |sql: &str| -> i64 { store.select(sql, [], |r| r.get(0)).expect(sql)[0] };
    // the original appears nowhere …
    let leaks = count(
        "SELECT (SELECT count(*) FROM execution_summary WHERE user_prompt LIKE '%taro.yamada%' OR user_prompt LIKE '%1234-5678%')
              + (SELECT count(*) FROM round_history WHERE prompt LIKE '%taro.yamada%'
                     OR message_history LIKE '%taro.yamada%' OR member_submissions_record LIKE '%taro.yamada%')
              + (SELECT count(*) FROM leader_board WHERE submission_content LIKE '%taro.yamada%')",
    );
    assert_eq!(leaks, 0, "unmasked PII in the database");
    // … the masked text and the hash of the original are there
    assert_eq!(
        count(
            "SELECT count(*) FROM execution_summary WHERE user_prompt LIKE '[メールアドレス] / [電話番号] %' AND pii_masked AND prompt_sha256 IS NOT NULL"
        ),
        1
    );
    let rounds = count("SELECT count(*) FROM round_history");
    assert!(rounds >= 1);
    assert_eq!(
        count(
            "SELECT count(*) FROM round_history WHERE pii_masked AND prompt_sha256 IS NOT NULL
                 AND coalesce(prompt, message_history) LIKE '%[メールアドレス]%'"
        ),
        rounds,
        "every round's prompt quotes the task, masked (the prompt column is NULL when the prompt is \
         the transcript's user message)"
    );
}

/// A competition of one team `t` (leader `mock:leader-t`, member `helper` on `mock:helper`)
/// playing 2 rounds, whose evaluator has a `command` metric `backtest` that fails (exit 3,
/// `no data for round 2` on stderr) in round 2 and scores 80 in round 1.
fn competition_failing_in_round_2(sb: &workspace_tests::Sandbox, evaluator: &str) -> PathBuf {
    let orch = workspace_tests::write_mock_competition(sb, &["t"]);
    let script = "if grep -Eq '\"round_number\": ?2[,}]'; then echo 'no data for round 2' >&2; exit 3; fi; \
                  echo '{\"score\": 80, \"evaluator_comment\": \"backtest ok\"}'";
    sb.write(
        "cfg/evaluator.toml",
        &format!(
            "default_model = \"mock:judge\"\n{evaluator}\n\n[[metrics]]\nname = \"backtest\"\ntype = \"command\"\ncommand = [\"sh\", \"-c\", {}]\n",
            serde_json::Value::String(script.into())
        ),
    );
    orch
}

/// Runs `mixseek exec` on `orch` (JSON summary on stdout); returns the exit code and summary.
fn exec_json(sb: &workspace_tests::Sandbox, orch: &Path) -> (Option<i32>, serde_json::Value) {
    let out = sb
        .cmd()
        .args(["exec", "Write a backtest report", "-q", "-f", "json", "-c"])
        .arg(orch)
        .output()
        .expect("run");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON summary ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), summary)
}

fn sandbox_stdout(sb: &workspace_tests::Sandbox, args: &[&str]) -> String {
    let out = sb.cmd().args(args).output().expect("run");
    assert!(
        out.status.success(),
        "{args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn a_round_whose_evaluation_fails_keeps_its_submission_but_is_never_ranked() {
    let sb = workspace_tests::Sandbox::new();
    let orch = competition_failing_in_round_2(&sb, "");
    let (code, summary) = exec_json(&sb, &orch);
    // round 1 is the team's result; the failed evaluation of round 2 fails the team
    assert_eq!(code, Some(1), "{summary}");
    assert_eq!(summary["status"], "partial_failure", "{summary}");
    let id = summary["execution_id"].as_str().expect("execution id");
    assert!(
        summary["failed_teams_info"][0]["error_message"]
            .as_str()
            .is_some_and(|m| m.contains("no data for round 2")),
        "{summary}"
    );

    // the database: round 2 has its round_history row (submission, leader transcript, member
    // submissions with their usage) and no leader_board / round_status row
    let store = Store::open_read_only(sb.workspace().join("mixseek.db")).expect("database");
    {
        let rows = |table: &str| -> Vec<i64> {
            store
                .select(
                    &format!(
                        "SELECT round_number FROM {table} WHERE execution_id = ? ORDER BY round_number"
                    ),
                    [id],
                    |r| r.get(0),
                )
                .expect("rows")
        };
        assert_eq!(rows("round_history"), vec![1, 2]);
        assert_eq!(rows("leader_board"), vec![1]);
        assert_eq!(rows("round_status"), vec![1]);
        let (submission, messages, members): (Option<String>, String, String) = store
            .select(
                "SELECT submission_content, message_history, member_submissions_record FROM round_history
                 WHERE execution_id = ? AND round_number = 2",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .expect("round 2")
            .remove(0);
        let submission = submission.expect("the submission is kept");
        assert!(submission.contains("mock answer"), "{submission}");
        let messages: serde_json::Value = serde_json::from_str(&messages).expect("json");
        assert!(
            messages.as_array().is_some_and(|m| m.len() >= 3),
            "the leader's transcript: {messages}"
        );
        let members: serde_json::Value = serde_json::from_str(&members).expect("json");
        assert_eq!(members["round_number"], 2);
        assert_eq!(members["submissions"][0]["agent_name"], "helper");
        assert_eq!(members["submissions"][0]["status"], "SUCCESS");
        assert!(
            members["submissions"][0]["usage"]["input_tokens"].as_u64() > Some(0),
            "{members}"
        );
        assert!(members["total_usage"]["output_tokens"].as_u64() > Some(0));
    }
    assert_eq!(store.completed_rounds(id).expect("completed").len(), 1);
    drop(store);

    // the leaderboard lists round 1 only
    let lb: serde_json::Value = serde_json::from_str(&sandbox_stdout(
        &sb,
        &["leaderboard", "--execution", id, "-f", "json"],
    ))
    .expect("json");
    assert_eq!(lb.as_array().map(Vec::len), Some(1), "{lb}");
    assert_eq!(
        (&lb[0]["round_number"], &lb[0]["total_rounds"]),
        (&serde_json::json!(1), &serde_json::json!(1)),
        "{lb}"
    );
    // history and show list round 2 as not evaluated
    let history: serde_json::Value = serde_json::from_str(&sandbox_stdout(
        &sb,
        &["history", "--execution", id, "-f", "json"],
    ))
    .expect("json");
    let rounds: Vec<(u64, bool, bool)> = history
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["round_number"].as_u64().unwrap_or(0),
                r["evaluated"] == true,
                r["score"].is_null(),
            )
        })
        .collect();
    assert_eq!(rounds, vec![(1, true, false), (2, false, true)]);
    let table = sandbox_stdout(&sb, &["history", "--execution", id]);
    assert!(table.contains("not evaluated"), "{table}");
    let shown = sandbox_stdout(&sb, &["show", id, "--team", "t", "--round", "2"]);
    assert!(shown.contains("not evaluated"), "{shown}");
    assert!(shown.contains("mock answer"), "the submission: {shown}");
    assert!(shown.contains("helper"), "the member: {shown}");
    let overview = sandbox_stdout(&sb, &["show", id]);
    assert!(overview.contains("1 (+1 not evaluated)"), "{overview}");
}

#[test]
fn a_skipped_metric_shows_as_failed_with_its_error_not_as_a_zero() {
    let sb = workspace_tests::Sandbox::new();
    let orch = competition_failing_in_round_2(
        &sb,
        "on_metric_error = \"skip\"\n[[metrics]]\nname = \"Coverage\"",
    );
    let (code, summary) = exec_json(&sb, &orch);
    assert_eq!(code, Some(0), "{summary}");
    let id = summary["execution_id"].as_str().expect("execution id");
    let table = sandbox_stdout(&sb, &["show", id, "--team", "t", "--round", "2"]);
    let backtest = table
        .lines()
        .find(|l| l.contains("backtest"))
        .unwrap_or_else(|| panic!("no backtest line in:\n{table}"));
    assert!(backtest.contains("│ failed │"), "{backtest}");
    assert!(backtest.contains("command metric 'backtest'"), "{backtest}");
    assert!(!backtest.contains("0.00"), "{backtest}");
    // the table clips long comments; Markdown has the whole error
    let md = sandbox_stdout(
        &sb,
        &["show", id, "--team", "t", "--round", "2", "-f", "markdown"],
    );
    let backtest = md
        .lines()
        .find(|l| l.starts_with("| backtest |"))
        .unwrap_or_else(|| panic!("no backtest line in:\n{md}"));
    assert!(backtest.contains("| failed |"), "{backtest}");
    assert!(
        backtest.contains("exited with status 3: no data for round 2"),
        "{backtest}"
    );
    // round 1's backtest scored
    let round1 = sandbox_stdout(&sb, &["show", id, "--team", "t", "--round", "1"]);
    assert!(
        round1
            .lines()
            .any(|l| l.contains("backtest") && l.contains("80.00")),
        "{round1}"
    );
    let csv = sandbox_stdout(
        &sb,
        &["show", id, "--team", "t", "--round", "2", "-f", "csv"],
    );
    let line = csv
        .lines()
        .find(|l| l.contains(",backtest,"))
        .unwrap_or_else(|| panic!("{csv}"));
    assert!(
        line.contains(",backtest,,failed,"),
        "empty score, status failed: {line}"
    );
    let page = sandbox_stdout(&sb, &["report", id, "-o", "-"]);
    assert!(
        page.contains("<tr class=\"failed\"><td>backtest</td><td class=\"num\">failed</td>"),
        "the HTML report"
    );
}

#[test]
fn show_and_the_html_report_give_each_jurys_agreement_and_flag_a_low_one() {
    let sb = workspace_tests::Sandbox::new();
    let cfg = workspace_tests::write_mock_competition(&sb, &["a", "b", "c"]);
    // a jury of two mock judges (their made-up scores differ: a hash of the model name) and a
    // metric sampled three times
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\njudges = [\"mock:judge-one\", \"mock:judge-two\"]\n[[metrics]]\nname = \"Relevance\"\nsamples = 3\n",
    );
    let out = sb
        .cmd()
        .args(["exec", "Write a haiku", "-f", "json", "-c"])
        .arg(&cfg)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", workspace_tests::describe(&out));
    let id =
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("json")["execution_id"]
            .as_str()
            .expect("id")
            .to_string();
    let out = sb
        .cmd()
        .args(["show", &id, "-f", "json"])
        .output()
        .expect("run");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let agreement = doc["agreement"].as_array().expect("agreement");
    let names: Vec<(&str, &str)> = agreement
        .iter()
        .map(|m| {
            (
                m["metric_name"].as_str().unwrap_or(""),
                m["raters"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(names, [("Coverage", "judges"), ("Relevance", "samples")]);
    for m in agreement {
        assert!(m["units"].as_u64().is_some_and(|u| u >= 3), "{m}");
        assert!(
            m["alpha"].is_null() || m["alpha"].as_f64().is_some_and(|a| a <= 1.0),
            "{m}"
        );
        assert!(m["level"].is_string(), "{m}");
    }
    let table = sb.cmd().args(["show", &id]).output().expect("run");
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("Jury agreement") && text.contains("Krippendorff"),
        "{text}"
    );
    let html = sb.path().join("r.html");
    let out = sb
        .cmd()
        .args(["report", &id, "-o"])
        .arg(&html)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", workspace_tests::describe(&out));
    let page = std::fs::read_to_string(&html).expect("html");
    assert!(
        page.contains("<h2>Jury agreement</h2>"),
        "no agreement section"
    );
}
