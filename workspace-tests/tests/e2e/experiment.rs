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

/// The progress files (`.progress.json`, `.execution.json`) in the workspace's `logs/`.
fn progress_files(sb: &Sandbox) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(sb.workspace().join("logs"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".progress.json") || n.ends_with(".execution.json"))
        .collect();
    names.sort();
    names
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
    // Each execution removed its progress files once it ended: 20 executions of 2 teams
    // leave none of their 60 files.
    assert_eq!(progress_files(&sb), Vec::<String>::new());
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

    // A plain `exec` keeps its files, as the original does.
    let out = sb
        .cmd()
        .args([
            "exec",
            "Name a use of copper.",
            "-f",
            "json",
            "-c",
            "cfg/orchestrator.toml",
        ])
        .output()
        .expect("exec");
    let id = json_stdout(&out)["execution_id"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| panic!("an execution id: {}", describe(&out)));
    assert_eq!(
        progress_files(&sb),
        [
            format!("{id}.a.progress.json"),
            format!("{id}.b.progress.json"),
            format!("{id}.execution.json")
        ]
    );
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
    // The same report, except what was spent: an item the kill interrupted counts the LLM
    // calls its first process made before it was resumed (real spend), so its variant's
    // tokens can only be higher.
    let mut merged_report = report_json(&sb, &merged);
    let mut expected = expected;
    let spent = |r: &mut serde_json::Value| -> Vec<(u64, u64)> {
        let mut spent = Vec::new();
        for v in r["variants"].as_array_mut().expect("variants") {
            let o = v.as_object_mut().expect("variant");
            let tokens = |k: &str| o.get(k).and_then(|t| t.as_u64()).expect(k);
            spent.push((tokens("input_tokens"), tokens("output_tokens")));
            o.remove("input_tokens");
            o.remove("output_tokens");
        }
        spent
    };
    let (after_kill, single) = (spent(&mut merged_report), spent(&mut expected));
    assert_eq!(merged_report, expected);
    for ((ki, ko), (si, so)) in after_kill.iter().zip(&single) {
        assert!(ki >= si && ko >= so, "{after_kill:?} vs {single:?}");
    }
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

#[test]
fn task_metadata_is_stored_masked_for_a_variant_that_masks() {
    let sb = Sandbox::new();
    write_config(&sb);
    let orchestrator =
        std::fs::read_to_string(sb.path().join("cfg/orchestrator.toml")).expect("config");
    sb.write(
        "cfg/orchestrator_masked.toml",
        &format!("{orchestrator}\n[privacy]\nmask_pii = true\n"),
    );
    sb.write(
        "exp/tasks.jsonl",
        "{\"id\": \"t1\", \"prompt\": \"Name uses of copper.\", \"owner\": \"taro@example.com\", \"notes\": [\"ask hanako@example.com\"], \"topic\": \"metals\"}\n",
    );
    let file = sb.write(
        "exp/experiment.toml",
        r#"[experiment]
name = "private"
tasks = "tasks.jsonl"

[[experiment.variants]]
name = "plain"
config = "../cfg/orchestrator.toml"

[[experiment.variants]]
name = "masked"
config = "../cfg/orchestrator_masked.toml"
"#,
    );
    let out = sb
        .cmd()
        .args(["experiment", "run", "-f", "json"])
        .arg(&file)
        .output()
        .expect("run");
    assert_eq!(json_stdout(&out)["done"], 2);
    let db = sb.workspace().join("mixseek.db");
    let count = |sql: &str| query_i64(&db, sql);
    assert_eq!(
        count(
            "SELECT count(*) FROM experiment_items WHERE variant = 'masked' AND task_metadata NOT LIKE '%example.com%' AND task_metadata LIKE '%\"owner\":\"[メールアドレス]\"%' AND task_metadata LIKE '%\"ask [メールアドレス]\"%' AND task_metadata LIKE '%metals%'"
        ),
        1,
        "the masking variant's item: every address masked, the rest kept"
    );
    assert_eq!(
        count(
            "SELECT count(*) FROM experiment_items WHERE variant = 'plain' AND task_metadata LIKE '%taro@example.com%' AND task_metadata LIKE '%hanako@example.com%'"
        ),
        1,
        "the other variant stores the metadata as written"
    );
    // The report still reads both items.
    let out = sb
        .cmd()
        .args(["experiment", "report", "private", "-f", "json"])
        .output()
        .expect("report");
    assert_eq!(json_stdout(&out)["items"], 2);
    // The export carries the experiment tables, the metadata as stored.
    let dir = sb.path().join("export");
    let out = sb
        .cmd()
        .args(["export", "--all", "-f", "csv", "-o"])
        .arg(&dir)
        .output()
        .expect("export");
    assert!(out.status.success(), "{}", describe(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("experiments: 1, experiment_items: 2, execution_attachments: 0"),
        "{said}"
    );
    let items = std::fs::read_to_string(dir.join("experiment_items.csv")).expect("items");
    assert_eq!(items.matches("taro@example.com").count(), 1, "{items}");
    assert_eq!(items.matches("[メールアドレス]").count(), 2, "{items}");
}

#[test]
fn merging_a_shard_that_is_still_being_written_names_it_and_says_to_wait() {
    let sb = Sandbox::new();
    write_config(&sb);
    sb.write(
        "exp/tasks.jsonl",
        "{\"id\": \"t1\", \"prompt\": \"Name uses of copper.\"}\n{\"id\": \"t2\", \"prompt\": \"Name uses of tin.\"}\n",
    );
    let file = sb.write(
        "exp/experiment.toml",
        r#"[experiment]
name = "slowpoke"
tasks = "tasks.jsonl"

[[experiment.variants]]
name = "slow"
config = "../cfg/orchestrator.toml"
overrides = { "team.leader.model" = "mock:slow-3000ms" }
"#,
    );
    let mut running = spawn_shard(&sb, &file, "0/2", "slow");
    let shard = sb.workspace().join("shards/slowpoke-0-of-2.db");
    let until = Instant::now() + Duration::from_secs(60);
    while !shard.exists() {
        assert!(
            Instant::now() < until,
            "the shard file was never created: {}",
            stderr_of(&running)
        );
        assert!(
            running.child.try_wait().expect("try_wait").is_none(),
            "the shard ended early: {}",
            stderr_of(&running)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The file exists once DuckDB opened it, lock taken; the first leader call alone takes 3 s.
    std::thread::sleep(Duration::from_millis(300));
    let merged = sb.path().join("all.db");
    let out = sb
        .cmd()
        .args(["experiment", "merge", "-o"])
        .arg(&merged)
        .arg(&shard)
        .output()
        .expect("merge");
    assert!(
        running.child.try_wait().expect("try_wait").is_none(),
        "the shard was still running during the merge: {}",
        stderr_of(&running)
    );
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "Error: cannot merge {}: another process is writing it",
            shard.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr
            .contains("Hint: wait for the shard's `mixseek experiment run` to finish, then merge"),
        "{stderr}"
    );
    assert!(!merged.exists(), "nothing was merged");
    running.child.kill().expect("kill the shard");
    let _ = running.child.wait();
}

#[test]
fn an_arena_of_the_variants_rates_them_over_the_tasks_and_the_report_shows_it() {
    let sb = Sandbox::new();
    // the file says 1 at a time; the run's option says 3
    let file = write_experiment(&sb, 1);
    let out = sb
        .cmd()
        .args([
            "experiment",
            "run",
            "-f",
            "json",
            "--max-concurrent-executions",
            "3",
        ])
        .arg(&file)
        .output()
        .expect("run");
    let doc = json_stdout(&out);
    assert_eq!(
        (doc["done"].as_u64(), doc["failed"].as_u64()),
        (Some(20), Some(0)),
        "{doc}"
    );
    let db = sb.workspace().join("mixseek.db");
    sb.write(
        "cfg/arena.toml",
        "[arena]\njudge_model = \"mock:arena-judge\"\nbootstrap_rounds = 40\nseed = 3\n",
    );
    let arena = |extra: &[&str]| {
        let mut cmd = sb.cmd();
        cmd.args(["experiment", "arena", "copper", "-c", "cfg/arena.toml"]);
        cmd.args(extra);
        cmd.output().expect("arena")
    };

    // dry run: 5 tasks x 2 repeats, one pair of variants each, judged twice; nothing stored
    let dry = json_stdout(&arena(&["--dry-run", "-f", "json"]));
    assert_eq!(
        (
            dry["submissions"].as_u64(),
            dry["tasks"].as_u64(),
            dry["pairs"].as_u64(),
            dry["games"].as_u64(),
            dry["estimate"]["calls"].as_u64()
        ),
        (Some(20), Some(5), Some(10), Some(20), Some(20)),
        "{dry}"
    );
    assert_eq!(dry["left_out"]["unfinished"], 0);
    assert_eq!(dry["variants"][0]["submissions"], 10);
    let text = arena(&["--dry-run"]);
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains("20 submissions of 2 variants on 5 tasks, 10 pairs, 20 games"),
        "{stdout}"
    );
    assert!(stdout.contains("Nothing was sent."), "{stdout}");
    assert_eq!(query_i64(&db, "SELECT count(*) FROM arena_runs"), 0);

    // the arena: one rating per variant, with its interval over tasks
    let a = json_stdout(&arena(&["-f", "json"]));
    assert_eq!(
        (
            a["tasks"].as_u64(),
            a["submissions"].as_u64(),
            a["left_out"].as_u64(),
            a["games"].as_u64()
        ),
        (Some(5), Some(20), Some(0), Some(20)),
        "{a}"
    );
    assert_eq!(a["bootstrap_unit"], "task");
    assert_eq!(a["judges"], serde_json::json!(["mock:arena-judge"]));
    let ratings = a["ratings"].as_array().expect("ratings");
    let mut variants: Vec<&str> = ratings
        .iter()
        .filter_map(|r| r["variant"].as_str())
        .collect();
    variants.sort_unstable();
    assert_eq!(variants, ["base", "other-leader"]);
    for r in ratings {
        let (lo, hi) = (
            r["lower"].as_f64().expect("lower"),
            r["upper"].as_f64().expect("upper"),
        );
        assert!(lo <= hi && lo.is_finite() && hi.is_finite(), "{r}");
        assert!(r["rank"].as_u64().is_some_and(|k| k >= 1), "{r}");
        assert_eq!(r["submissions"], 10, "{r}");
        // 10 pairs x 2 games, each game counted by weight (a strong verdict counts 3)
        assert!(r["games"].as_f64().is_some_and(|g| g >= 20.0), "{r}");
    }
    let mean: f64 = ratings
        .iter()
        .filter_map(|r| r["rating"].as_f64())
        .sum::<f64>()
        / 2.0;
    assert!((mean - 1000.0).abs() < 1e-6, "{mean}");

    // stored: one arena run, its games between real executions of the experiment, variants
    // of one task and repeat, with the task's own prompt; no team ratings
    assert_eq!(query_i64(&db, "SELECT count(*) FROM arena_runs"), 1);
    assert_eq!(query_i64(&db, "SELECT count(*) FROM arena_games"), 20);
    assert_eq!(query_i64(&db, "SELECT count(*) FROM arena_ratings"), 0);
    assert_eq!(
        query_i64(
            &db,
            "SELECT count(*) FROM experiment_arenas WHERE experiment_id = 'copper' AND tasks = 5 AND submissions = 20 AND left_out = 0 AND bootstrap_unit = 'task'"
        ),
        1
    );
    assert_eq!(
        query_i64(&db, "SELECT count(*) FROM experiment_arena_ratings"),
        2
    );
    assert_eq!(
        query_i64(
            &db,
            "SELECT count(*) FROM arena_games g
             JOIN experiment_items a ON a.execution_id = g.a_execution_id
             JOIN experiment_items b ON b.execution_id = g.b_execution_id
             WHERE a.task_id = b.task_id AND a.repeat_index = b.repeat_index
                 AND a.variant <> b.variant AND g.verdict IS NOT NULL
                 AND EXISTS (SELECT 1 FROM leader_board l
                     WHERE l.execution_id = g.a_execution_id AND l.team_id = g.a_team_id)"
        ),
        20
    );
    // each pair twice, the positions swapped
    assert_eq!(
        query_i64(
            &db,
            "SELECT count(*) FROM arena_games g1 JOIN arena_games g2
                 ON g1.arena_id = g2.arena_id AND g1.pair_index = g2.pair_index
             WHERE g1.game = 1 AND g2.game = 2 AND g1.a_execution_id = g2.b_execution_id
                 AND g1.b_execution_id = g2.a_execution_id"
        ),
        10
    );

    // the report ends its variant sections with the arena, in every format
    let report = report_json(&sb, &db);
    let section = &report["arena"];
    assert_eq!(
        section["ratings"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    assert!(
        section["how_to_read"]
            .as_str()
            .is_some_and(|t| t.contains("bootstrap intervals over tasks")),
        "{section}"
    );
    let out = sb
        .cmd()
        .args(["experiment", "report", "copper"])
        .output()
        .expect("report");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Arena of the variants"), "{text}");
    assert!(
        text.contains("95% interval") && text.contains("W/L/T"),
        "{text}"
    );
    assert!(text.contains("judges: mock:arena-judge"), "{text}");
    // the mock judge's verdicts are made up: the report says so, as the arena did
    let note = "Note: judged by the offline mock: provider; these verdicts are made up.";
    assert!(text.contains(note), "{text}");
    assert_eq!(section["mock_judges"], true, "{section}");
    let html = sb.path().join("r.html");
    let out = sb
        .cmd()
        .args(["experiment", "report", "copper", "-f", "html", "-o"])
        .arg(&html)
        .output()
        .expect("report");
    assert!(out.status.success(), "{}", describe(&out));
    let page = std::fs::read_to_string(&html).expect("html");
    assert!(page.contains("<h2>Arena of the variants</h2>"), "{page}");
    assert!(page.contains(note), "{page}");
    // an execution's own view keeps its team arenas only
    let id = {
        let conn = duckdb::Connection::open_with_flags(
            &db,
            duckdb::Config::default()
                .access_mode(duckdb::AccessMode::ReadOnly)
                .expect("config"),
        )
        .expect("open");
        conn.query_row("SELECT min(execution_id) FROM experiment_items", [], |r| {
            r.get::<_, String>(0)
        })
        .expect("an execution")
    };
    let show = sb.cmd().args(["show", &id]).output().expect("show");
    assert!(show.status.success(), "{}", describe(&show));
    assert!(
        !String::from_utf8_lossy(&show.stdout).contains("Arena"),
        "{}",
        describe(&show)
    );

    // the arena's own table ends with the note once (it is the report's section)
    let out = arena(&[]);
    assert!(out.status.success(), "{}", describe(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches(note).count(), 1, "{stdout}");

    // bad input: an unknown experiment, an anchor that is no variant
    let out = sb
        .cmd()
        .args(["experiment", "arena", "coper", "-c", "cfg/arena.toml"])
        .output()
        .expect("arena");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean `copper`"));
    sb.write(
        "cfg/anchored.toml",
        "[arena]\njudge_model = \"mock:j\"\nanchor = \"bse\"\n",
    );
    let out = sb
        .cmd()
        .args([
            "experiment",
            "arena",
            "copper",
            "-c",
            "cfg/anchored.toml",
            "--dry-run",
        ])
        .output()
        .expect("arena");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("anchor `bse`") && err.contains("did you mean `base`"),
        "{err}"
    );

    // one variant only: nothing to compare, said with what was left out
    let solo = sb.write(
        "exp/solo.toml",
        "[experiment]\nname = \"solo\"\ntasks = \"tasks.jsonl\"\n\n[[experiment.variants]]\nname = \"base\"\nconfig = \"../cfg/orchestrator.toml\"\n",
    );
    let out = sb
        .cmd()
        .args(["experiment", "run", "-f", "json"])
        .arg(&solo)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", describe(&out));
    let out = sb
        .cmd()
        .args(["experiment", "arena", "solo", "--dry-run"])
        .output()
        .expect("arena");
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("1 variant(s) with an evaluated round (base)")
            && err.contains("needs at least 2")
            && err.contains("0 item(s) not finished"),
        "{err}"
    );

    // plan: the per-shard concurrency reaches every shard's run
    let out = sb
        .cmd()
        .args([
            "experiment",
            "plan",
            "--shards",
            "2",
            "--emit",
            "slurm",
            "--per-shard-concurrency",
            "4",
        ])
        .arg(&file)
        .output()
        .expect("plan");
    assert!(out.status.success(), "{}", describe(&out));
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(
        script.contains("--no-progress --max-concurrent-executions 4")
            && script.contains(
                "Each shard runs up to 4 executions at once, so the 2 shards run up to 8."
            ),
        "{script}"
    );
}
