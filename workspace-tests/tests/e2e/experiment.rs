//! `mixseek experiment`: a whole experiment on `mock:` with its report; the same experiment as
//! three shard processes (one killed and rerun) merged into one file whose report is the
//! single-machine one; attachments; bad experiment files.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use workspace_tests::{Sandbox, describe, json_stdout};

/// A deterministic competition: two teams played one after the other (so the ranking a team
/// sees does not depend on timing) and templates without `current_datetime` (the mock's
/// answers follow the prompt's text).
fn write_config(sb: &Sandbox) {
    for t in ["a", "b"] {
        sb.write(
            &format!("cfg/team_{t}.toml"),
            &format!(
                "[team]\nteam_id = \"{t}\"\nteam_name = \"Team {t}\"\n[team.leader]\nmodel = \"mock:leader-{t}-15ms\"\n[[team.members]]\nname = \"helper\"\ntype = \"plain\"\nmodel = \"mock:helper\"\n"
            ),
        );
    }
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\n[[metrics]]\nname = \"Relevance\"\n",
    );
    sb.write("cfg/judgment.toml", "model = \"mock:judge-continue\"\n");
    sb.write(
        "cfg/orchestrator.toml",
        r#"[orchestrator]
timeout_per_team_seconds = 60
min_rounds = 1
max_rounds = 2
max_concurrent_teams = 1
evaluator_config = "evaluator.toml"
judgment_config = "judgment.toml"

[[orchestrator.teams]]
config = "team_a.toml"

[[orchestrator.teams]]
config = "team_b.toml"

[prompt_builder]
team_user_prompt = "Round {{ round_number }}: {{ user_prompt }}"
evaluator_user_prompt = "{{ user_prompt }}\n{{ submission }}"
judgment_user_prompt = "Round {{ round_number }}: {{ user_prompt }}"
"#,
    );
}

/// 2 variants x 5 tasks x 2 repeats.
fn write_experiment(sb: &Sandbox, concurrency: u32) -> PathBuf {
    write_config(sb);
    let mut tasks = String::new();
    for i in 1..=5 {
        tasks.push_str(&format!(
            "{{\"id\": \"t{i}\", \"prompt\": \"Task number {i}: name {i} uses of copper.\", \"topic\": \"metals\"}}\n"
        ));
    }
    sb.write("exp/tasks.jsonl", &tasks);
    sb.write(
        "exp/experiment.toml",
        &format!(
            r#"[experiment]
name = "copper"
tasks = "tasks.jsonl"
repeats = 2
max_concurrent_executions = {concurrency}

[[experiment.variants]]
name = "base"
config = "../cfg/orchestrator.toml"

[[experiment.variants]]
name = "other-leader"
config = "../cfg/orchestrator.toml"
overrides = {{ "team.leader.model" = "mock:other-15ms" }}
"#
        ),
    )
}

fn query_i64(db: &Path, sql: &str) -> i64 {
    let conn = duckdb::Connection::open_with_flags(
        db,
        duckdb::Config::default()
            .access_mode(duckdb::AccessMode::ReadOnly)
            .expect("config"),
    )
    .expect("open the database");
    conn.query_row(sql, [], |r| r.get(0)).expect(sql)
}

fn report_json(sb: &Sandbox, db: &Path) -> serde_json::Value {
    let out = sb
        .cmd()
        .args(["experiment", "report", "copper", "-f", "json", "--db"])
        .arg(db)
        .output()
        .expect("report");
    json_stdout(&out)
}

#[test]
fn an_experiment_runs_every_item_once_reports_and_a_rerun_skips_them() {
    let sb = Sandbox::new();
    let file = write_experiment(&sb, 3);
    let dry = sb
        .cmd()
        .args(["experiment", "run", "--dry-run", "-f", "json"])
        .arg(&file)
        .output()
        .expect("dry run");
    let dry = json_stdout(&dry);
    assert_eq!(dry["items"], 20);
    assert!(
        dry["max_llm_calls"].as_u64().unwrap_or_default() > 20,
        "{dry}"
    );
    assert!(
        !sb.workspace().join("mixseek.db").exists(),
        "a dry run writes nothing"
    );

    let out = sb
        .cmd()
        .args(["experiment", "run", "-f", "json"])
        .arg(&file)
        .output()
        .expect("run");
    let doc = json_stdout(&out);
    assert_eq!(
        (doc["items"].as_u64(), doc["done"].as_u64()),
        (Some(20), Some(20)),
        "{doc}"
    );
    assert_eq!(doc["failed"], 0);
    let db = sb.workspace().join("mixseek.db");
    assert_eq!(query_i64(&db, "SELECT count(*) FROM experiment_items"), 20);
    assert_eq!(
        query_i64(
            &db,
            "SELECT count(*) FROM experiment_items i JOIN execution_summary e USING (execution_id) WHERE e.status = 'completed'"
        ),
        20
    );
    assert_eq!(
        query_i64(
            &db,
            "SELECT count(*) FROM experiment_items WHERE task_metadata LIKE '%metals%'"
        ),
        20,
        "the task's free metadata is kept"
    );
    let report = report_json(&sb, &db);
    assert_eq!(report["items"], 20);
    assert_eq!(report["variants"].as_array().map(Vec::len), Some(2));
    assert_eq!(report["variants"][0]["tasks_scored"], 5);
    let c = &report["comparisons"][0];
    assert_eq!(
        (c["variant"].as_str(), c["tasks"].as_u64()),
        (Some("other-leader"), Some(5))
    );
    let wtl = c["wins"].as_u64().unwrap_or(99)
        + c["ties"].as_u64().unwrap_or(99)
        + c["losses"].as_u64().unwrap_or(99);
    assert_eq!(wtl, 5, "{c}");
    assert_eq!(report["tasks"].as_array().map(Vec::len), Some(5));
    // Text and HTML render the same report.
    let table = sb
        .cmd()
        .args(["experiment", "report", "copper"])
        .output()
        .expect("table");
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("Paired against base") && text.contains("other-leader"),
        "{text}"
    );
    let html = sb.path().join("r.html");
    let out = sb
        .cmd()
        .args(["experiment", "report", "copper", "-f", "html", "-o"])
        .arg(&html)
        .output()
        .expect("html");
    assert!(out.status.success(), "{}", describe(&out));
    let page = std::fs::read_to_string(&html).expect("page");
    assert!(
        page.starts_with("<!DOCTYPE html>") && page.contains("Per task"),
        "{page}"
    );

    // A rerun finds every item finished: nothing runs again.
    let out = sb
        .cmd()
        .args(["experiment", "run", "-f", "json"])
        .arg(&file)
        .output()
        .expect("rerun");
    let doc = json_stdout(&out);
    assert_eq!(
        (doc["skipped"].as_u64(), doc["done"].as_u64()),
        (Some(20), Some(0)),
        "{doc}"
    );
    assert_eq!(query_i64(&db, "SELECT count(*) FROM execution_summary"), 20);
    assert_eq!(report_json(&sb, &db), report);
}

/// A shard process, killed if the test ends first.
struct Shard {
    child: Child,
    stderr: PathBuf,
}

impl Drop for Shard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_shard(sb: &Sandbox, file: &Path, shard: &str, tag: &str) -> Shard {
    let stderr = sb.path().join(format!("shard-{tag}.err"));
    let child = sb
        .process()
        .arg("-w")
        .arg(sb.workspace())
        .arg("--no-log-file")
        .args([
            "--log-level",
            "error",
            "experiment",
            "run",
            "--shard",
            shard,
        ])
        .arg(file)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).expect("stderr file"))
        .spawn()
        .expect("spawn a shard");
    Shard { child, stderr }
}

fn wait(shard: &mut Shard) -> i32 {
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(s) = shard.child.try_wait().expect("try_wait") {
            return s.code().unwrap_or(-1);
        }
        assert!(Instant::now() < until, "a shard did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stderr_of(shard: &Shard) -> String {
    let mut s = String::new();
    if let Ok(mut f) = std::fs::File::open(&shard.stderr) {
        let _ = f.read_to_string(&mut s);
    }
    s
}

#[test]
fn three_shards_one_killed_and_rerun_merge_into_the_single_machine_report() {
    // The single-machine run.
    let single = Sandbox::new();
    let file = write_experiment(&single, 2);
    let out = single
        .cmd()
        .args(["experiment", "run", "-f", "json"])
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(json_stdout(&out)["done"], 20);
    let expected = report_json(&single, &single.workspace().join("mixseek.db"));

    // Three shards at once; shard 1 is killed once it has finished an item.
    let sb = Sandbox::new();
    let file = write_experiment(&sb, 2);
    let mut shards: Vec<Shard> = (0..3)
        .map(|i| spawn_shard(&sb, &file, &format!("{i}/3"), &i.to_string()))
        .collect();
    let until = Instant::now() + Duration::from_secs(60);
    while !stderr_of(&shards[1]).contains("done 1") {
        assert!(
            Instant::now() < until,
            "shard 1 made no progress: {}",
            stderr_of(&shards[1])
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    shards[1].child.kill().expect("kill shard 1");
    let _ = shards[1].child.wait();
    assert_eq!(wait(&mut shards[0]), 0, "{}", stderr_of(&shards[0]));
    assert_eq!(wait(&mut shards[2]), 0, "{}", stderr_of(&shards[2]));
    let dir = sb.workspace().join("shards");
    let shard1 = dir.join("copper-1-of-3.db");
    let finished_before = query_i64(
        &shard1,
        "SELECT count(*) FROM execution_summary WHERE status = 'completed'",
    );
    assert!(finished_before < 7, "shard 1 was killed before its end");
    // Rerun: finished items are skipped, the rest resumed or started.
    let mut rerun = spawn_shard(&sb, &file, "1/3", "1-rerun");
    assert_eq!(wait(&mut rerun), 0, "{}", stderr_of(&rerun));
    let err = stderr_of(&rerun);
    assert!(err.contains(&format!("skipped {finished_before}")), "{err}");

    let inputs: Vec<PathBuf> = (0..3)
        .map(|i| dir.join(format!("copper-{i}-of-3.db")))
        .collect();
    let merged = sb.path().join("all.db");
    for _ in 0..2 {
        // Merging twice changes nothing.
        let out = sb
            .cmd()
            .args(["experiment", "merge", "-o"])
            .arg(&merged)
            .args(&inputs)
            .output()
            .expect("merge");
        assert!(out.status.success(), "{}", describe(&out));
    }
    assert_eq!(
        query_i64(&merged, "SELECT count(*) FROM execution_summary"),
        20
    );
    assert_eq!(
        query_i64(
            &merged,
            "SELECT count(DISTINCT execution_id) FROM experiment_items"
        ),
        20
    );
    assert_eq!(
        query_i64(
            &merged,
            "SELECT count(*) FROM (SELECT execution_id, team_id, round_number FROM leader_board GROUP BY ALL HAVING count(*) > 1)"
        ),
        0,
        "no round twice"
    );
    assert_eq!(report_json(&sb, &merged), expected);
}

#[test]
fn shard_arguments_and_bad_experiment_files_are_clear_errors() {
    let sb = Sandbox::new();
    let file = write_experiment(&sb, 1);
    let out = sb
        .cmd()
        .args(["experiment", "run", "--shard", "3/3"])
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not below the count"));
    let out = sb
        .cmd()
        .args(["experiment", "run", "--dry-run", "--shard", "auto/4"])
        .arg(&file)
        .env("JOB_COMPLETION_INDEX", "2")
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("shard 2/4: 5"));

    // A misspelt key, an unknown override and a bad task line, each with its file and line.
    sb.write(
        "exp/bad_tasks.jsonl",
        "{\"id\": \"t1\", \"prompt\": \"ok\"}\n{\"id\": \"t2\"}\n",
    );
    let bad = sb.write(
        "exp/bad.toml",
        "[experiment]\nname = \"bad\"\ntasks = \"bad_tasks.jsonl\"\nrepeat = 2\n\n[[experiment.variants]]\nname = \"v\"\nconfig = \"../cfg/orchestrator.toml\"\noverrides = { \"leader.temprature\" = 0.5 }\n",
    );
    let out = sb
        .cmd()
        .args(["experiment", "run", "--dry-run"])
        .arg(&bad)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml:4") && err.contains("repeats"),
        "{err}"
    );
    assert!(
        err.contains("bad.toml:9") && err.contains("leader.temperature"),
        "{err}"
    );
    assert!(
        err.contains("bad_tasks.jsonl:2") && err.contains("prompt"),
        "{err}"
    );

    // A report of an unknown experiment names the known ones.
    let out = sb
        .cmd()
        .args(["experiment", "run", "-f", "json"])
        .arg(&file)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", describe(&out));
    let out = sb
        .cmd()
        .args(["experiment", "report", "coper"])
        .output()
        .expect("report");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean `copper`"));

    // Merging a file into itself, or a missing shard, is refused.
    let db = sb.workspace().join("mixseek.db");
    let out = sb
        .cmd()
        .args(["experiment", "merge", "-o"])
        .arg(&db)
        .arg(&db)
        .output()
        .expect("merge");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("it is the output file"));
}

#[test]
fn attachments_reach_the_prompts_and_only_their_text_is_stored() {
    let sb = Sandbox::new();
    workspace_tests::write_mock_competition(&sb, &["a"]);
    let note = sb.write(
        "note.md",
        "# Findings\nThe copper price rose 12% in March.\n",
    );
    let out = sb
        .cmd()
        .args(["exec", "Summarise the note", "-f", "json", "--attach"])
        .arg(&note)
        .arg("-c")
        .arg(sb.path().join("cfg/orchestrator.toml"))
        .output()
        .expect("exec");
    let id = json_stdout(&out)["execution_id"]
        .as_str()
        .expect("id")
        .to_string();
    let db = sb.workspace().join("mixseek.db");
    assert_eq!(
        query_i64(
            &db,
            &format!(
                "SELECT count(*) FROM execution_attachments WHERE execution_id = '{id}' AND name = 'note.md' AND media_type = 'text/markdown' AND text LIKE '%copper price rose%' AND length(sha256) = 64"
            )
        ),
        1
    );
    assert!(
        query_i64(
            &db,
            "SELECT count(*) FROM round_history WHERE message_history LIKE '%<attachments>%' AND message_history LIKE '%copper price rose%'"
        ) > 0,
        "the leader's prompt shows the attachment"
    );
    // An unsupported or missing file is an error naming it, before anything runs.
    let bin = sb.write("data.bin", "\u{0}\u{1}");
    for (file, says) in [
        (bin, "data.bin"),
        (sb.path().join("missing.pdf"), "missing.pdf"),
    ] {
        let out = sb
            .cmd()
            .args(["exec", "x", "--attach"])
            .arg(&file)
            .arg("-c")
            .arg(sb.path().join("cfg/orchestrator.toml"))
            .output()
            .expect("exec");
        assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{}",
            describe(&out)
        );
    }
    // The dry run reads them too.
    let out = sb
        .cmd()
        .args(["exec", "x", "--dry-run", "--attach"])
        .arg(sb.path().join("missing.pdf"))
        .arg("-c")
        .arg(sb.path().join("cfg/orchestrator.toml"))
        .output()
        .expect("exec");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
}
