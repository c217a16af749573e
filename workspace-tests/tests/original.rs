//! The original tier: database files shared with the original Python MixSeek, checked with the
//! original's own code — mixseek-core 0.1.0a22 from PyPI in a cached virtual environment
//! (`scripts/original`, run by `scripts/original-tests`, which `.ci/run` runs).
//!
//! * What our `exec` writes, the original reads: its `AggregationStore` readers (leaderboard,
//!   ranking, round history of every team and round, team statistics) and its pydantic models
//!   (the framework's `ModelMessagesTypeAdapter` on every message column, its
//!   `MemberSubmissionsRecord`) accept every row (`workspace-tests/original/check_db.py`), its
//!   ranking equals ours, and the keys validation drops are only the ones we add on purpose.
//! * What the original's `exec` writes (against the testkit's fake OpenAI server), our read
//!   commands read, and the file stays byte for byte as it was.
//! * A file `mixseek db upgrade` upgraded keeps a backup and the original's keys, and the
//!   original still appends to it and reads it; so do we.
//! * The default prompts `mixseek prompt render` prints are the ones the original's own prompt
//!   builder renders from the same inputs, byte for byte.
//!
//! The tests are `#[ignore]`d so the README's `cargo test --workspace` needs only the Rust
//! toolchain. Without `MIXSEEK_ORIGINAL_VENV` they fail: the tier never skips silently.

use mixseek_testkit::FakeLlm;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use workspace_tests::{Sandbox, repo_root};

/// The virtual environment holding mixseek-core.
fn venv() -> PathBuf {
    match std::env::var("MIXSEEK_ORIGINAL_VENV") {
        Ok(v) if !v.trim().is_empty() => PathBuf::from(v.trim()),
        _ => panic!(
            "MIXSEEK_ORIGINAL_VENV is not set: run this tier with scripts/original-tests (it \
             installs mixseek-core from PyPI into a cached virtual environment)"
        ),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn assert_ok(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} exited with {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// The keys we add to the original's JSON on purpose (documented in mixseek-core's transcript
/// and member modules); validation by the original's models drops them and nothing else.
const OUR_EXTRA_KEYS: [&str; 5] = [
    "cost_usd",
    "requests_without_usage",
    "unpriced_requests",
    "mixseek_command",
    "mixseek_answer",
];

/// Runs the original's readers and validators on `db` (a copy of it: its store writes on
/// open) and returns what they read. Fails on any error, and on any key validation dropped
/// that is not one of ours.
fn original_reads(db: &Path) -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("found.json");
    let out = Command::new(venv().join("bin/python"))
        .arg(repo_root().join("workspace-tests/original/check_db.py"))
        .arg(db)
        .args(["--quiet", "--roundtrip", "--json"])
        .arg(&json)
        .output()
        .expect("run check_db.py");
    assert_ok("check_db.py (the original's readers)", &out);
    let found: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("its JSON")).expect("JSON");
    let unexpected: Vec<&str> = found["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .filter_map(Value::as_str)
                .filter(|w| {
                    !OUR_EXTRA_KEYS
                        .iter()
                        .any(|k| w.contains(&format!(".{k}: key not known")))
                })
                .collect()
        })
        .unwrap_or_default();
    assert!(
        unexpected.is_empty(),
        "the original's models dropped or changed more than our own keys:\n{}",
        unexpected.join("\n")
    );
    found
}

/// The file and its write-ahead log, byte for byte.
fn bytes(db: &Path) -> (Vec<u8>, Option<Vec<u8>>) {
    let wal = db.with_file_name("mixseek.db.wal");
    (
        std::fs::read(db).expect("the database"),
        std::fs::read(wal).ok(),
    )
}

/// The original's configuration for a two-team, up-to-two-round run, every model `openai:`
/// (pointed at the fake server by OPENAI_BASE_URL); our loader reads the same files.
fn original_configs(ws: &Path) -> PathBuf {
    let write = |rel: &str, content: &str| {
        let p = ws.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, content).expect("write");
        p
    };
    write(
        "configs/evaluator.toml",
        "default_model = \"openai:gpt-4o-mini\"\nmax_retries = 1\n\n[[metrics]]\nname = \"ClarityCoherence\"\nweight = 0.5\n\n[[metrics]]\nname = \"Relevance\"\nweight = 0.5\n",
    );
    write(
        "configs/judgment.toml",
        "model = \"openai:gpt-4o-mini\"\ntemperature = 0.0\nmax_retries = 1\ntimeout_seconds = 30\n",
    );
    write(
        "configs/agents/team_alpha.toml",
        "[team]\nteam_id = \"team-alpha\"\nteam_name = \"Team Alpha\"\n\n[team.leader]\nmodel = \"openai:gpt-4o-mini\"\nsystem_instruction = \"You are the leader. Delegate to members, then write the final submission.\"\n\n\
         [[team.members]]\nname = \"analyst\"\ntype = \"plain\"\ntool_name = \"delegate_to_analyst\"\ntool_description = \"Analyse the task.\"\nmodel = \"openai:gpt-4o-mini\"\nsystem_instruction = \"You are an analyst.\"\n\n\
         [[team.members]]\nname = \"writer\"\ntype = \"plain\"\ntool_name = \"delegate_to_writer\"\ntool_description = \"Write text.\"\nmodel = \"openai:gpt-4o-mini\"\nsystem_instruction = \"You are a writer.\"\n",
    );
    write(
        "configs/agents/team_beta.toml",
        "[team]\nteam_id = \"team-beta\"\nteam_name = \"Team Beta\"\n\n[team.leader]\nmodel = \"openai:gpt-4o-mini\"\n\n\
         [[team.members]]\nname = \"solo\"\ntype = \"plain\"\ntool_name = \"delegate_to_solo\"\ntool_description = \"Do the whole task.\"\nmodel = \"openai:gpt-4o-mini\"\nsystem_instruction = \"You are a generalist.\"\n",
    );
    write(
        "configs/orchestrator.toml",
        "[orchestrator]\ntimeout_per_team_seconds = 120\nmin_rounds = 1\nmax_rounds = 2\nsubmission_timeout_seconds = 60\njudgment_timeout_seconds = 30\n\
         evaluator_config = \"configs/evaluator.toml\"\njudgment_config = \"configs/judgment.toml\"\n\n\
         [[orchestrator.teams]]\nconfig = \"configs/agents/team_alpha.toml\"\n\n[[orchestrator.teams]]\nconfig = \"configs/agents/team_beta.toml\"\n",
    )
}

/// Runs the original's `mixseek exec` in `ws` against the fake server at `base_url`.
async fn original_exec(ws: &Path, base_url: &str, prompt: &str) -> Output {
    let orch = original_configs(ws);
    let mut cmd = Command::new(venv().join("bin/mixseek"));
    for (k, _) in std::env::vars() {
        if k.starts_with("MIXSEEK_") || k.ends_with("_API_KEY") || k == "PYTEST_CURRENT_TEST" {
            cmd.env_remove(k);
        }
    }
    cmd.env("OPENAI_API_KEY", "sk-original-tier-0123456789")
        .env("OPENAI_BASE_URL", base_url)
        .env("MIXSEEK_WORKSPACE", ws)
        .args(["exec", prompt, "-c"])
        .arg(&orch)
        .arg("-w")
        .arg(ws)
        .arg("--no-log-file");
    tokio::task::spawn_blocking(move || cmd.output().expect("run the original's exec"))
        .await
        .expect("join")
}

/// Runs our binary in the sandbox (blocking, off the runtime that serves the fake).
async fn ours(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = sb.cmd();
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    tokio::task::spawn_blocking(move || cmd.output().expect("run mixseek"))
        .await
        .expect("join")
}

fn json_of(what: &str, out: &Output) -> Value {
    assert_ok(what, out);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what}: not JSON ({e}):\n{}", text(&out.stdout)))
}

/// (team_id, max score, rounds) of a ranking, ours or the original's.
fn ranking_of(rows: &Value, score: &str) -> Vec<(String, f64, u64)> {
    rows.as_array()
        .expect("a list")
        .iter()
        .map(|r| {
            (
                r["team_id"].as_str().unwrap_or_default().to_string(),
                (r[score].as_f64().unwrap_or(f64::NAN) * 100.0).round() / 100.0,
                r["total_rounds"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the original tier: scripts/original-tests"]
async fn what_our_exec_writes_the_originals_readers_read() {
    let sb = Sandbox::new();
    // the quick-start competition (three teams, plain and search members) plus a team whose
    // member is a command (its transcript has no model)
    assert_ok("init", &ours(&sb, &["init"], &[]).await);
    let ws = sb.workspace();
    std::fs::write(
        ws.join("configs/quickstart/team_cmd.toml"),
        "[team]\nteam_id = \"cmd\"\nteam_name = \"Command Team\"\n[team.leader]\nmodel = \"mock:leader\"\n\
         [[team.members]]\nname = \"runner\"\ntype = \"command\"\n\
         command = [\"sh\", \"-c\", \"echo '{\\\"content\\\": \\\"computed\\\", \\\"status\\\": \\\"success\\\", \\\"usage\\\": {\\\"input_tokens\\\": 3, \\\"output_tokens\\\": 2}}'\"]\n",
    )
    .expect("command team");
    let orch = ws.join("configs/quickstart/orchestrator.toml");
    let mut orch_text = std::fs::read_to_string(&orch).expect("orchestrator");
    orch_text.push_str("\n[[orchestrator.teams]]\nconfig = \"team_cmd.toml\"\n");
    std::fs::write(&orch, orch_text).expect("add the team");
    let out = ours(
        &sb,
        &[
            "exec",
            "Write a haiku about autumn",
            "-q",
            "-f",
            "json",
            "-c",
            "configs/quickstart/orchestrator.toml",
        ],
        &[],
    )
    .await;
    let summary = json_of("mixseek exec", &out);
    let execution = summary["execution_id"]
        .as_str()
        .expect("execution id")
        .to_string();

    let db = ws.join("mixseek.db");
    let before = bytes(&db);
    let found = original_reads(&db);
    assert!(bytes(&db) == before, "the check works on a copy");

    // the original's ranking is ours
    let theirs = ranking_of(&found["rankings"][&execution], "max_score");
    let board = json_of(
        "mixseek leaderboard",
        &ours(&sb, &["leaderboard", "-e", &execution, "-f", "json"], &[]).await,
    );
    assert_eq!(theirs, ranking_of(&board, "score"));
    assert_eq!(theirs.len(), 4, "{theirs:?}");
    // every stored round came back through its loader, with its members and messages
    let history = json_of(
        "mixseek history",
        &ours(&sb, &["history", "-e", &execution, "-f", "json"], &[]).await,
    );
    let rounds = found["rounds"].as_array().expect("rounds");
    assert_eq!(rounds.len(), history.as_array().map(Vec::len).unwrap_or(0));
    for r in rounds {
        assert!(r["messages"].as_u64().unwrap_or(0) >= 2, "{r}");
        assert!(r["submissions"].as_u64().unwrap_or(0) >= 1, "{r}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the original tier: scripts/original-tests"]
async fn what_the_originals_exec_writes_we_read_without_changing_it() {
    let fake = FakeLlm::openai().await;
    let sb = Sandbox::new();
    let ws = sb.workspace();
    let out = original_exec(&ws, &fake.base_url(), "Write a short report about DuckDB.").await;
    assert_ok("the original's exec", &out);
    let db = ws.join("mixseek.db");
    let found = original_reads(&db);
    let (execution, theirs) = found["rankings"]
        .as_object()
        .and_then(|m| m.iter().next())
        .map(|(id, rows)| (id.clone(), ranking_of(rows, "max_score")))
        .expect("one execution");

    let before = bytes(&db);
    let export_dir = sb.path().join("export");
    let report = sb.path().join("report.html");
    let status = json_of(
        "db status",
        &ours(&sb, &["db", "status", "-f", "json"], &[]).await,
    );
    assert_eq!(
        (status["version"].as_i64(), status["origin"].as_str()),
        (Some(1), Some("original"))
    );
    let executions = json_of(
        "executions",
        &ours(&sb, &["executions", "-f", "json"], &[]).await,
    );
    assert_eq!(executions[0]["execution_id"], execution.as_str());
    assert_eq!(executions[0]["status"], "completed");
    let board = json_of(
        "leaderboard",
        &ours(&sb, &["leaderboard", "-e", &execution, "-f", "json"], &[]).await,
    );
    assert_eq!(ranking_of(&board, "score"), theirs);
    let history = json_of(
        "history",
        &ours(&sb, &["history", "-e", &execution, "-f", "json"], &[]).await,
    );
    assert_eq!(
        history.as_array().map(Vec::len),
        found["rounds"].as_array().map(Vec::len)
    );
    for args in [
        vec!["show", execution.as_str()],
        vec![
            "show",
            execution.as_str(),
            "--team",
            "team-alpha",
            "--round",
            "1",
            "-f",
            "json",
        ],
        vec!["leaderboard", "--all"],
        vec![
            "export",
            execution.as_str(),
            "--format",
            "json",
            "-o",
            export_dir.to_str().expect("utf-8"),
        ],
        vec![
            "report",
            execution.as_str(),
            "-o",
            report.to_str().expect("utf-8"),
        ],
    ] {
        let out = ours(&sb, &args, &[]).await;
        assert_ok(&args.join(" "), &out);
        assert!(
            bytes(&db) == before,
            "`mixseek {}` changed the file",
            args.join(" ")
        );
    }
    // the round's members and the leader's prompt come from the original's rows
    let round = json_of(
        "show round",
        &ours(
            &sb,
            &[
                "show",
                &execution,
                "--team",
                "team-alpha",
                "--round",
                "1",
                "-f",
                "json",
            ],
            &[],
        )
        .await,
    );
    let text = round.to_string();
    assert!(
        text.contains("analyst") && text.contains("Write a short report about DuckDB."),
        "{round}"
    );
    assert!(bytes(&db) == before, "reading changed the file");
    assert!(
        std::fs::read_dir(&ws)
            .expect("workspace")
            .filter_map(Result::ok)
            .all(|e| !e.file_name().to_string_lossy().ends_with(".bak")),
        "a read made a backup"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the original tier: scripts/original-tests"]
async fn a_file_we_upgrade_still_works_with_the_original() {
    let fake = FakeLlm::openai().await;
    let sb = Sandbox::new();
    let ws = sb.workspace();
    assert_ok(
        "the original's first exec",
        &original_exec(&ws, &fake.base_url(), "first").await,
    );
    let db = ws.join("mixseek.db");
    let original_bytes = bytes(&db).0;

    let out = ours(&sb, &["db", "upgrade"], &[]).await;
    assert_ok("db upgrade", &out);
    let backup = ws.join("mixseek.db.v1.bak");
    assert!(
        text(&out.stderr).contains(&backup.display().to_string())
            && text(&out.stdout).contains("Upgraded"),
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(std::fs::read(&backup).expect("the backup") == original_bytes);
    // the original's keys are declared in the upgraded file
    {
        let conn = duckdb::Connection::open(&db).expect("open");
        let mut stmt = conn
            .prepare(
                "SELECT table_name, constraint_type, array_to_string(list_sort(constraint_column_names), ',')
                 FROM duckdb_constraints() WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE') ORDER BY ALL",
            )
            .expect("constraints");
        let keys: Vec<(String, String, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        for table in ["round_history", "leader_board", "round_status"] {
            for (kind, cols) in [
                ("PRIMARY KEY", "id"),
                ("UNIQUE", "execution_id,round_number,team_id"),
            ] {
                assert!(
                    keys.iter()
                        .any(|k| k == &(table.into(), kind.into(), cols.into())),
                    "{table} lacks {kind} ({cols}): {keys:?}"
                );
            }
        }
        assert!(keys.contains(&(
            "execution_summary".into(),
            "PRIMARY KEY".into(),
            "execution_id".into()
        )));
    }
    let status = json_of(
        "db status",
        &ours(&sb, &["db", "status", "-f", "json"], &[]).await,
    );
    assert_eq!(
        status["version"].as_i64(),
        Some(mixseek_store::SCHEMA_VERSION)
    );
    assert!(status["upgrade"].is_null(), "{status}");

    // the original appends to the upgraded file and its readers read both runs
    assert_ok(
        "the original's exec on the upgraded file",
        &original_exec(&ws, &fake.base_url(), "second").await,
    );
    let found = original_reads(&db);
    assert_eq!(
        found["rankings"].as_object().map(|m| m.len()),
        Some(2),
        "{found}"
    );

    // and so do we: our exec appends a third run, our readers list all three
    let orch = ws.join("configs/orchestrator.toml");
    let out = ours(
        &sb,
        &["exec", "third", "-q", "-c", orch.to_str().expect("utf-8")],
        &[
            ("OPENAI_API_KEY", "sk-original-tier-0123456789"),
            ("OPENAI_BASE_URL", &fake.base_url()),
        ],
    )
    .await;
    assert_ok("our exec on the shared file", &out);
    let executions = json_of(
        "executions",
        &ours(&sb, &["executions", "-f", "json"], &[]).await,
    );
    let prompts: Vec<&str> = executions
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|e| e["user_prompt"].as_str())
        .collect();
    assert_eq!(prompts.len(), 3, "{executions}");
    for p in ["first", "second", "third"] {
        assert!(prompts.contains(&p), "{prompts:?}");
    }
    let found = original_reads(&db);
    assert_eq!(
        found["rankings"].as_object().map(|m| m.len()),
        Some(3),
        "{found}"
    );
}

/// The golden cases of `golden_tests.rs`, rendered by the original's `UserPromptBuilder`
/// (`workspace-tests/original/render_goldens.py`) and by `mixseek prompt render`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the original tier: scripts/original-tests"]
async fn the_default_prompts_are_the_ones_the_original_renders() {
    let sb = Sandbox::new();
    let theirs_file = sb.path().join("theirs.json");
    let out = Command::new(venv().join("bin/python"))
        .arg(repo_root().join("workspace-tests/original/render_goldens.py"))
        .arg(&theirs_file)
        .output()
        .expect("run render_goldens.py");
    assert_ok("render_goldens.py (the original's prompt builder)", &out);
    let theirs: Value =
        serde_json::from_str(&std::fs::read_to_string(&theirs_file).expect("renders"))
            .expect("JSON");
    let first = |score: f64| {
        serde_json::json!([{"round_number": 1, "submission_content": "First submission",
            "evaluation_score": score, "score_details": {}}])
    };
    let team = |id: &str, name: &str, score: f64| serde_json::json!({"team_id": id, "team_name": name, "max_score": score, "total_rounds": 1});
    let three = serde_json::json!([
        team("team-A", "Team Alpha", 95.0),
        team("team-B", "Team Beta", 85.0),
        team("team-C", "Team Gamma", 75.0)
    ]);
    let round = |prompt: &str, n: u32, history: Value, ranking: Value, id: &str| {
        serde_json::json!({"user_prompt": prompt, "round_number": n, "team_id": id, "team_name": "Alpha",
            "execution_id": "exec-1", "round_history": history, "ranking": ranking})
    };
    let cases: Vec<(&str, &str, Value)> = vec![
        (
            "a",
            "team",
            round(
                "データ分析タスク",
                1,
                serde_json::json!([]),
                Value::Null,
                "team1",
            ),
        ),
        (
            "b",
            "team",
            round("データ分析タスク", 2, first(75.5), Value::Null, "team1"),
        ),
        (
            "c",
            "team",
            round(
                "データ分析タスク",
                2,
                first(85.5),
                serde_json::json!([team("team1", "Alpha", 85.5), team("team2", "Beta", 80.0)]),
                "team1",
            ),
        ),
        (
            "d",
            "judgment",
            round(
                "Test task",
                2,
                serde_json::json!([{"round_number": 1, "submission_content": "Initial submission",
                    "evaluation_score": 75.5, "score_details": {"accuracy": 80.0, "completeness": 71.0}}]),
                Value::Null,
                "team1",
            ),
        ),
        (
            "e",
            "evaluator",
            serde_json::json!({"user_prompt": "What is Python?", "submission": "Python is a programming language..."}),
        ),
        (
            "h",
            "team",
            round("タスク", 2, first(75.5), three.clone(), "team-X"),
        ),
        (
            "i",
            "team",
            round("タスク", 2, first(75.5), serde_json::json!([]), "team1"),
        ),
        (
            "j",
            "team",
            round("タスク", 1, serde_json::json!([]), three.clone(), "team-A"),
        ),
        (
            "j_judgment",
            "judgment",
            round("タスク", 1, serde_json::json!([]), three, "team-A"),
        ),
    ];
    for (name, kind, ctx) in cases {
        let ctx_file = sb.write(&format!("ctx_{name}.json"), &ctx.to_string());
        let out = ours(
            &sb,
            &[
                "prompt",
                "render",
                "--kind",
                kind,
                "--context",
                ctx_file.to_str().expect("utf-8"),
                "--now",
                "2025-11-25T14:30:00+09:00",
                "--tz",
                "Asia/Tokyo",
            ],
            &[],
        )
        .await;
        assert_ok(&format!("prompt render ({name})"), &out);
        assert_eq!(
            text(&out.stdout),
            theirs[name].as_str().expect("a render"),
            "case {name}"
        );
    }
}
