//! Workflows in `mixseek exec`, end to end: listed like teams, told apart by `[workflow]`,
//! playing rounds on the shared leaderboard with `workflow_id` / `workflow_name` as team id
//! and name; function executors run real Python (`python3`); a failing or timed-out function
//! fails the workflow with the original's message and keeps its completed rounds; `--dry-run`
//! checks workflows in their own category.

use serde_json::Value;
use workspace_tests::{Sandbox, repo_root};

fn query(sb: &Sandbox, sql: &str) -> Vec<Vec<String>> {
    let conn = duckdb::Connection::open_with_flags(
        sb.workspace().join("mixseek.db"),
        duckdb::Config::default()
            .access_mode(duckdb::AccessMode::ReadOnly)
            .expect("read-only"),
    )
    .unwrap_or_else(|e| panic!("open the database: {e}"));
    let mut stmt = conn.prepare(sql).expect("prepare");
    let rows = stmt
        .query_map([], |r| {
            let mut v = Vec::new();
            let mut i = 0;
            while let Ok(x) = r.get::<_, Option<String>>(i) {
                v.push(x.unwrap_or_default());
                i += 1;
            }
            Ok(v)
        })
        .expect("query");
    rows.map(|r| r.expect("row")).collect()
}

#[test]
fn the_example_workflow_competes_with_a_team_and_is_stored_like_one() {
    let sb = Sandbox::new();
    let cfg = repo_root().join("configs/examples/workflow/orchestrator.toml");
    let out = sb
        .cmd()
        .args(["exec", "Write a haiku about autumn", "-c"])
        .arg(&cfg)
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Notes Workflow") && stdout.contains("Solo Team"),
        "{stdout}"
    );

    let rows = query(
        &sb,
        "SELECT team_id, team_name, CAST(round_number AS VARCHAR), submission_content, submission_format FROM leader_board WHERE team_id = 'notes' ORDER BY round_number",
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!((r[0].as_str(), r[1].as_str()), ("notes", "Notes Workflow"));
        assert_eq!(r[2], (i + 1).to_string());
        let text = &r[3];
        // final_output_format = "text", include_all_context = true
        assert!(
            text.starts_with("## research\n\n### facts\n\n[mock answer from mock:writer]"),
            "{text}"
        );
        assert!(
            text.contains("\n\n### angles\n\n[mock answer from mock:angles]"),
            "{text}"
        );
        assert!(
            text.contains("\n\n## compose\n\n### compose\n\nAnswer built from 2 notes:\n- facts: "),
            "{text}"
        );
        // The submission never contains the team prompt (the notes quote only its start).
        assert!(!text.contains("<submission_history>"), "{text}");
        assert_eq!(r[4], "md");
    }

    let record = query(
        &sb,
        "SELECT member_submissions_record, message_history FROM round_history WHERE team_id = 'notes' AND round_number = 1",
    );
    let subs: Value = serde_json::from_str(&record[0][0]).expect("record");
    let subs = subs["submissions"].as_array().expect("submissions");
    let summary: Vec<(&str, &str, &str)> = subs
        .iter()
        .map(|s| {
            (
                s["agent_name"].as_str().unwrap_or_default(),
                s["agent_type"].as_str().unwrap_or_default(),
                s["status"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("facts", "plain", "SUCCESS"),
            ("angles", "plain", "SUCCESS"),
            ("compose", "function", "SUCCESS")
        ]
    );
    assert!(subs[0]["usage"]["input_tokens"].as_u64().unwrap_or(0) > 0);
    assert_eq!(subs[2]["usage"]["input_tokens"], 0);
    assert!(
        subs[2].get("all_messages").is_none_or(Value::is_null),
        "{:?}",
        subs[2]
    );
    // The round's transcript: the agents' messages, step order × definition order.
    let messages: Value = serde_json::from_str(&record[0][1]).expect("messages");
    assert_eq!(messages.as_array().map(Vec::len), Some(4), "{messages}");

    // The execution lists the workflow as a team, with its name.
    let summary = query(&sb, "SELECT teams FROM execution_summary");
    assert!(summary[0][0].contains("\"notes\"") && summary[0][0].contains("Notes Workflow"));
}

/// A competition of one workflow (`wf.toml`, function `fn` in `steps.py`) and one team.
fn write_competition(sb: &Sandbox, function_code: &str, timeout: &str) -> std::path::PathBuf {
    sb.write("cfg/steps.py", function_code);
    sb.write(
        "cfg/wf.toml",
        &format!(
            "[workflow]\nworkflow_id = \"wf\"\nworkflow_name = \"WF\"\ndefault_model = \"mock:wf\"\n\
             [[workflow.steps]]\nid = \"draft\"\n[[workflow.steps.executors]]\nname = \"writer\"\ntype = \"plain\"\n\
             [[workflow.steps]]\nid = \"check\"\n[[workflow.steps.executors]]\nname = \"checker\"\ntype = \"function\"\n{timeout}\
             [workflow.steps.executors.plugin]\npath = \"steps.py\"\nfunction = \"fn\"\n"
        ),
    );
    sb.write(
        "cfg/team.toml",
        "[team]\nteam_id = \"t\"\nteam_name = \"Team t\"\n[team.leader]\nmodel = \"mock:leader\"\n",
    );
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\n",
    );
    sb.write("cfg/judgment.toml", "model = \"mock:judge-continue\"\n");
    sb.write(
        "cfg/orchestrator.toml",
        "[orchestrator]\ntimeout_per_team_seconds = 60\nmin_rounds = 2\nmax_rounds = 2\nevaluator_config = \"evaluator.toml\"\njudgment_config = \"judgment.toml\"\n\
         [[orchestrator.teams]]\nconfig = \"wf.toml\"\n[[orchestrator.teams]]\nconfig = \"team.toml\"\n",
    )
}

/// Runs `exec -f json` on `orch`, which must end with exit 1 (a unit failed); the summary.
fn exec_failing_one_unit(sb: &Sandbox, orch: &std::path::Path) -> Value {
    let out = sb
        .cmd()
        .args(["exec", "x", "-f", "json", "-c"])
        .arg(orch)
        .output()
        .expect("run");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(1), "{v:#}");
    v
}

#[test]
fn a_failing_function_fails_its_workflow_which_keeps_its_completed_rounds() {
    let sb = Sandbox::new();
    // Fails in round 2 only: the task-context JSON carries the round in the team prompt.
    let code = "import json\n\
                def fn(task):\n\
                \x20   t = json.loads(task)\n\
                \x20   assert list(t) == ['user_prompt', 'previous_steps']\n\
                \x20   assert list(t['previous_steps']) == ['draft']\n\
                \x20   if 'round_number: 2' in t['user_prompt']:\n\
                \x20       raise RuntimeError('no second round')\n\
                \x20   return 'checked'\n";
    let orch = write_competition(&sb, code, "");
    let v = exec_failing_one_unit(&sb, &orch);
    let failed = &v["failed_teams_info"][0];
    assert_eq!(failed["team_id"], "wf");
    assert_eq!(failed["team_name"], "WF");
    let msg = failed["error_message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("WorkflowStepFailedError: Workflow step 'check' failed at executor 'checker': no second round"),
        "{msg}"
    );
    // Its first round stays on the board and is its result (partial failure).
    let rows = query(
        &sb,
        "SELECT CAST(round_number AS VARCHAR), submission_content FROM leader_board WHERE team_id = 'wf'",
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0][0], "1");
    assert!(rows[0][1].starts_with("{\"steps\": {\"draft\": [{\"executor_name\": \"writer\", \"status\": \"SUCCESS\", \"content\": \"[mock answer"), "{}", rows[0][1]);
    assert!(rows[0][1].ends_with("\"check\": [{\"executor_name\": \"checker\", \"status\": \"SUCCESS\", \"content\": \"checked\", \"error_message\": null}]}}"), "{}", rows[0][1]);
    let results = v["team_results"].as_array().expect("results");
    let wf = results
        .iter()
        .find(|r| r["team_id"] == "wf")
        .expect("wf kept");
    assert_eq!(wf["exit_reason"], "partial_failure");
}

#[test]
fn a_timed_out_function_fails_its_step_and_is_stopped() {
    let sb = Sandbox::new();
    let marker = sb.path().join("function-still-ran");
    let code = format!(
        "import time\ndef fn(task):\n    time.sleep(3)\n    open({:?}, 'w').write('x')\n    return 'late'\n",
        marker.display().to_string()
    );
    let orch = write_competition(&sb, &code, "timeout_seconds = 1\n");
    let v = exec_failing_one_unit(&sb, &orch);
    let msg = v["failed_teams_info"][0]["error_message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        msg.contains(
            "Workflow step 'check' failed at executor 'checker': function timed out after 1s"
        ),
        "{msg}"
    );
    std::thread::sleep(std::time::Duration::from_secs(4));
    assert!(!marker.exists(), "the timed-out function kept running");
}

#[test]
fn a_function_that_cannot_be_loaded_fails_the_step_before_it_runs() {
    let sb = Sandbox::new();
    let orch = write_competition(&sb, "x = 1\n", "");
    let v = exec_failing_one_unit(&sb, &orch);
    let msg = v["failed_teams_info"][0]["error_message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        msg.contains(
            "Workflow step 'check' failed at executor 'checker': failed to build executable: Path '"
        ) && msg.ends_with("steps.py' has no attribute 'fn'"),
        "{msg}"
    );
}

#[test]
fn dry_run_checks_workflows_in_their_own_category() {
    let sb = Sandbox::new();
    let orch = write_competition(&sb, "def fn(t):\n    return t\n", "");
    sb.write(
        "cfg/both.toml",
        "[team]\nteam_id = \"b\"\n[workflow]\nworkflow_id = \"b\"\n",
    );
    sb.write("cfg/neither.toml", "[agent]\nname = \"x\"\n");
    sb.write(
        "cfg/bad_wf.toml",
        "[workflow]\nworkflow_id = \"bad\"\nworkflow_name = \"Bad\"\ndefault_modle = \"mock:x\"\n[[workflow.steps]]\nid = \"s\"\n[[workflow.steps.executors]]\nname = \"bad name\"\ntype = \"plain\"\nmodel = \"mock:x\"\n",
    );
    let text = std::fs::read_to_string(&orch).expect("read");
    std::fs::write(
        &orch,
        format!("{text}[[orchestrator.teams]]\nconfig = \"both.toml\"\n[[orchestrator.teams]]\nconfig = \"neither.toml\"\n[[orchestrator.teams]]\nconfig = \"bad_wf.toml\"\n"),
    )
    .expect("write");
    let out = sb
        .cmd()
        .args(["exec", "x", "--dry-run", "-f", "json", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let cats: Vec<&str> = v["categories"]
        .as_array()
        .expect("categories")
        .iter()
        .filter_map(|c| c["category"].as_str())
        .collect();
    let at = |name: &str| cats.iter().position(|c| *c == name).unwrap_or(usize::MAX);
    assert_eq!(at("ワークフロー"), at("チーム") + 1, "{cats:?}");
    assert!(at("Evaluator") > at("ワークフロー"), "{cats:?}");
    let checks = |name: &str| -> Vec<(String, String, String)> {
        v["categories"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["category"] == name))
            .and_then(|c| c["checks"].as_array())
            .map(|a| {
                a.iter()
                    .map(|c| {
                        (
                            c["name"].as_str().unwrap_or_default().to_string(),
                            c["status"].as_str().unwrap_or_default().to_string(),
                            c["message"].as_str().unwrap_or_default().to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let teams = checks("チーム");
    let workflows = checks("ワークフロー");
    let find = |list: &[(String, String, String)], name: &str| {
        list.iter()
            .find(|c| c.0 == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} missing in {list:?}"))
    };
    // Named by their index in the orchestrator's list, shared by both categories.
    assert_eq!(find(&workflows, "workflow_0").1, "ok");
    assert_eq!(find(&teams, "team_1").1, "ok");
    let both = find(&teams, "team_2");
    assert!(
        both.1 == "error"
            && both
                .2
                .contains("Config both.toml contains both [team] and [workflow] sections"),
        "{both:?}"
    );
    let neither = find(&teams, "team_3");
    assert!(
        neither
            .2
            .contains("Config neither.toml contains neither [team] nor [workflow] sections"),
        "{neither:?}"
    );
    let bad = find(&workflows, "workflow_4");
    assert!(
        bad.1 == "error"
            && bad.2.starts_with("ワークフロー設定の読み込みに失敗:")
            && bad.2.contains("Executor 名 'bad name' が不正です。英数字・ハイフン・アンダースコア・ドットのみ使用可能"),
        "{bad:?}"
    );
    // An unknown key of [workflow] itself is a warning, as the original ignores it.
    let warn = find(&workflows, "workflow_4_warning");
    assert!(
        warn.1 == "warning"
            && warn.2.contains("default_modle")
            && warn.2.contains("did you mean `default_model`?"),
        "{warn:?}"
    );
}

#[test]
fn mixseek_team_refuses_a_workflow_file() {
    let sb = Sandbox::new();
    write_competition(&sb, "def fn(t):\n    return t\n", "");
    let out = sb
        .cmd()
        .args(["team", "x", "-c"])
        .arg(sb.path().join("cfg/wf.toml"))
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        err.contains("Invalid team config: missing 'team' section"),
        "{err}"
    );
}

#[test]
fn a_killed_workflow_run_resumes_after_its_completed_rounds() {
    let sb = Sandbox::new();
    let (hang, started) = (sb.path().join("hang"), sb.path().join("round3-started"));
    let code = format!(
        "import os, time\n\
         def fn(task):\n\
         \x20   if 'round_number: 3' in task and os.path.exists({hang:?}):\n\
         \x20       open({started:?}, 'w').write('x')\n\
         \x20       time.sleep(20)\n\
         \x20   return 'ok'\n",
        hang = hang.display().to_string(),
        started = started.display().to_string()
    );
    let orch = write_competition(&sb, &code, "");
    let text = std::fs::read_to_string(&orch).expect("read");
    std::fs::write(
        &orch,
        text.replace(
            "min_rounds = 2\nmax_rounds = 2",
            "min_rounds = 4\nmax_rounds = 4",
        ),
    )
    .expect("write");
    std::fs::write(&hang, "").expect("hang");
    let mut child = std::process::Command::new(workspace_tests::mixseek_bin())
        .env_remove("MIXSEEK_WORKSPACE")
        .arg("-w")
        .arg(sb.workspace())
        .args(["--no-log-file", "-q", "exec", "x", "-c"])
        .arg(&orch)
        .current_dir(sb.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "round 3 never started"
        );
        assert!(
            child.try_wait().expect("wait").is_none(),
            "mixseek exited early"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().expect("kill");
    let _ = child.wait();
    std::fs::remove_file(&hang).expect("unhang");
    let before = query(
        &sb,
        "SELECT CAST(round_number AS VARCHAR), CAST(created_at AS VARCHAR) FROM round_history WHERE team_id = 'wf' ORDER BY round_number",
    );
    assert_eq!(
        before.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(),
        ["1", "2"]
    );
    let id = query(&sb, "SELECT execution_id FROM execution_summary")[0][0].clone();
    let out = sb
        .cmd()
        .args(["exec", "--resume", &id, "-f", "json", "-q", "-c"])
        .arg(&orch)
        .output()
        .expect("resume");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(0), "{v:#}");
    assert_eq!(v["status"], "completed");
    let after = query(
        &sb,
        "SELECT CAST(round_number AS VARCHAR), CAST(created_at AS VARCHAR) FROM round_history WHERE team_id = 'wf' ORDER BY round_number",
    );
    assert_eq!(
        after.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(),
        ["1", "2", "3", "4"]
    );
    assert_eq!(
        &after[..2],
        &before[..],
        "the completed rounds are kept as they were"
    );
}
