//! `mixseek exec` end to end on the offline mock provider and a real DuckDB file.

use workspace_tests::{Sandbox, repo_root, write_mock_competition};

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn quickstart_competition_prints_results_and_leaderboard() {
    let sb = Sandbox::new();
    let cfg = repo_root().join("configs/quickstart/orchestrator.toml");
    let out = sb
        .cmd()
        .args(["exec", "Write a haiku about autumn", "-c"])
        .arg(&cfg)
        .output()
        .expect("run");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));
    // Without -q but with stderr not a terminal: no live progress display.
    let err = stderr(&out);
    assert!(
        !err.contains('\u{1b}') && !err.contains("round 1/3") && !err.contains('⠋'),
        "no progress-bar output on a non-terminal stderr:\n{err}"
    );
    assert!(text.starts_with("🚀 MixSeek Orchestrator\n"), "{text}");
    assert!(
        text.contains("📝 Task: Write a haiku about autumn"),
        "{text}"
    );
    for team in [
        "✅ Team alpha: Alpha Team",
        "✅ Team beta: Beta Team",
        "✅ Team gamma: Gamma Team",
    ] {
        assert!(text.contains(team), "{team} missing:\n{text}");
    }
    assert!(text.contains("🏆 Best Result (Team "), "{text}");
    assert!(
        text.contains("                      🏆 Leaderboard"),
        "{text}"
    );
    assert!(
        text.contains("Total Teams:      3\nCompleted Teams:  3\nFailed Teams:     0\n"),
        "{text}"
    );
    assert!(text.contains("💾 Results saved to DuckDB"), "{text}");
    assert!(sb.workspace().join("mixseek.db").is_file());
    let logs: Vec<_> = std::fs::read_dir(sb.workspace().join("logs"))
        .expect("logs")
        .flatten()
        .collect();
    assert!(
        logs.iter().any(|e| e
            .file_name()
            .to_string_lossy()
            .ends_with(".alpha.progress.json")),
        "progress files"
    );

    // The stored leaderboard agrees.
    let out = sb
        .cmd()
        .args(["leaderboard", "--latest", "-f", "json"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v.as_array().map(Vec::len), Some(3), "{v}");
}

#[test]
fn json_output_is_the_execution_summary() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a", "b"]);
    let out = sb
        .cmd()
        .args(["exec", "Name three colours", "-f", "json", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is only JSON");
    assert_eq!(v["user_prompt"], "Name three colours");
    assert_eq!(v["total_teams"], 2);
    assert_eq!(v["completed_teams"], 2);
    assert_eq!(v["failed_teams"], 0);
    assert_eq!(v["status"], "completed");
    assert!(v["best_team_id"].is_string());
    let results = v["team_results"].as_array().expect("results");
    assert_eq!(results[0]["team_id"], "a", "team-config order");
    assert_eq!(results[0]["id"], serde_json::Value::Null);
    assert_eq!(results[0]["final_submission"], true);
    assert!(
        results[0]["score_details"]["metrics"]
            .as_array()
            .is_some_and(|m| m.len() == 2)
    );
    assert!(
        v["usage"]["requests"].as_u64().unwrap_or(0) > 0,
        "usage is recorded: {}",
        v["usage"]
    );
    assert!(v["usage"]["input_tokens"].as_u64().unwrap_or(0) > 0);
}

#[test]
fn an_empty_prompt_is_a_usage_error() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    let out = sb
        .cmd()
        .args(["exec", "   ", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("user_prompt cannot be empty"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_missing_config_is_a_usage_error_with_the_original_wording() {
    let sb = Sandbox::new();
    let out = sb
        .cmd()
        .args(["exec", "Name three colours"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("Error: --config オプションは必須です"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_flag_values_are_usage_errors() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    for (args, expected) in [
        (&["-f", "yaml"][..], "invalid value 'yaml'"),
        (&["--max-cost-usd", "-1"][..], "give an amount > 0"),
        (&["--max-cost-usd", "NaN"][..], "give an amount > 0"),
        (&["--max-cost-usd", "0"][..], "give an amount > 0"),
        (&["--max-cost-usd", "cheap"][..], "is not a number"),
        (&["--max-tokens", "0"][..], "--max-tokens"),
        (&["--timeout", "0"][..], "--timeout"),
    ] {
        let out = sb
            .cmd()
            .args(["exec", "Name three colours", "-c"])
            .arg(&orch)
            .args(args)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(
            !sb.workspace().join("mixseek.db").exists(),
            "{args:?}: nothing ran"
        );
    }
}

#[test]
fn the_cache_flag_turns_the_response_cache_on() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    let cache = sb.workspace().join(".cache/llm");
    let out = sb
        .cmd()
        .args(["exec", "Name three colours", "-q", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!cache.exists(), "no cache unless asked for");
    let out = sb
        .cmd()
        .args(["exec", "Name three colours", "-q", "--cache", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let entries = walk(&cache);
    assert!(
        !entries.is_empty(),
        "--cache stores responses in {}",
        cache.display()
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn execution_id_names_the_new_execution_once() {
    let sb = Sandbox::new();
    let cfg = write_mock_competition(&sb, &["a"]);
    let id = "1b4e28ba-2fa1-41d2-883f-0016d3cca427";
    let run = |id: &str| {
        sb.cmd()
            .args([
                "exec",
                "Write a haiku",
                "-f",
                "json",
                "--execution-id",
                id,
                "-c",
            ])
            .arg(&cfg)
            .output()
            .expect("run")
    };
    let out = run(id);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["execution_id"], id);
    // the execution file names the process and the configuration
    let file = sb.workspace().join(format!("logs/{id}.execution.json"));
    let exec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("execution file"))
            .expect("json");
    assert_eq!(exec["status"], "completed");
    assert!(exec["settings"].as_object().is_some_and(|s| !s.is_empty()));
    // the same id again: refused, nothing overwritten
    let again = run(id);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("already exists"),
        "{}",
        stderr(&again)
    );
    assert!(stderr(&again).contains("--resume"), "{}", stderr(&again));
    // not a UUID: a usage error naming the flag
    let bad = run("../../etc");
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("is not a UUID"), "{}", stderr(&bad));
}
