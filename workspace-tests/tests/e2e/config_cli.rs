//! The foundation through the real binary: init, config show/validate, exec --dry-run.

use predicates_lite::*;
use workspace_tests::{Sandbox, repo_root, write_mock_competition};

mod predicates_lite {
    pub fn stdout(o: &std::process::Output) -> String {
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
    pub fn stderr(o: &std::process::Output) -> String {
        String::from_utf8_lossy(&o.stderr).into_owned()
    }
}

#[test]
fn version_prints_the_originals_format() {
    let sb = Sandbox::new();
    let out = sb.cmd().arg("--version").output().expect("run");
    assert!(out.status.success());
    assert_eq!(
        stdout(&out).trim(),
        format!("mixseek version {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn quickstart_dry_run_passes_from_the_repo() {
    let sb = Sandbox::new();
    let cfg = repo_root().join("configs/quickstart/orchestrator.toml");
    let out = sb
        .cmd()
        .args(["exec", "Write a haiku", "--dry-run", "-c"])
        .arg(&cfg)
        .output()
        .expect("run");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(text.contains("🔍 Preflight Check Results"), "{text}");
    assert!(text.contains("✅ All checks passed"), "{text}");
    assert!(text.contains("mock の認証情報を確認しました"), "{text}");
}

#[test]
fn every_example_config_passes_the_dry_run_with_its_key_set() {
    for example in ["openai", "anthropic", "gemini", "local"] {
        let sb = Sandbox::new();
        let cfg = repo_root().join(format!("configs/examples/{example}/orchestrator.toml"));
        let out = sb
            .cmd()
            .env("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")
            .env("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdefghij")
            .env("GOOGLE_API_KEY", "test-google-key-0123456789abcdefghij")
            .args([
                "exec",
                "Compare three caching strategies",
                "--dry-run",
                "-c",
            ])
            .arg(&cfg)
            .output()
            .expect("run");
        let text = stdout(&out);
        // The local example's server (Ollama's port) is asked whether it answers: without
        // one running, the dry run names it and fails.
        let no_server =
            example == "local" && std::net::TcpListener::bind("127.0.0.1:11434").is_ok();
        if no_server {
            assert_eq!(out.status.code(), Some(2), "{text}");
            assert!(
                text.contains("nothing is listening at http://localhost:11434/v1"),
                "{text}"
            );
            continue;
        }
        assert!(
            out.status.success(),
            "configs/examples/{example}: {text}\n{}",
            stderr(&out)
        );
        assert!(text.contains("✅ All checks passed"), "{example}: {text}");
    }
    // Without its key, the example names the variable to set.
    let sb = Sandbox::new();
    let out = sb
        .cmd()
        .args(["exec", "x", "--dry-run", "-c"])
        .arg(repo_root().join("configs/examples/anthropic/orchestrator.toml"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stdout(&out).contains("ANTHROPIC_API_KEY"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn init_writes_a_runnable_workspace_and_refuses_to_overwrite() {
    let sb = Sandbox::new();
    let out = sb.cmd().arg("init").output().expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Workspace initialized successfully at:"));
    assert!(
        sb.workspace()
            .join("configs/quickstart/orchestrator.toml")
            .is_file()
    );
    assert!(sb.workspace().join("logs").is_dir());

    let out = sb.cmd().arg("init").output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("already has these files") && err.contains("--force"),
        "{err}"
    );
    let out = sb.cmd().args(["init", "--force"]).output().expect("run");
    assert!(out.status.success());

    // The workspace-relative config path works.
    let out = sb
        .cmd()
        .args([
            "exec",
            "x",
            "--dry-run",
            "-c",
            "configs/quickstart/orchestrator.toml",
        ])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stdout(&out));
}

#[test]
fn misspelt_key_names_file_key_and_suggestion_in_text_and_json() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    let text = std::fs::read_to_string(&orch)
        .expect("read")
        .replace("max_rounds = 2", "max_round = 2");
    std::fs::write(&orch, text).expect("write");
    let out = sb
        .cmd()
        .args(["exec", "x", "--dry-run", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let t = stdout(&out);
    assert!(t.contains(&orch.display().to_string()), "{t}");
    assert!(
        t.contains("`orchestrator.max_round`: unknown key (did you mean `max_rounds`?)"),
        "{t}"
    );
    assert!(t.contains(":4:1:"), "line and column of the key: {t}");

    let out = sb
        .cmd()
        .args(["exec", "x", "--dry-run", "-f", "json", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let cats = v["categories"].as_array().expect("categories");
    let first = &cats[0]["checks"][0];
    assert_eq!(first["status"], "error");
    assert!(
        first["message"]
            .as_str()
            .unwrap_or_default()
            .contains("did you mean `max_rounds`?")
    );
}

#[test]
fn missing_credential_names_provider_and_variable() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    std::fs::write(
        sb.path().join("cfg/judgment.toml"),
        "model = \"anthropic:claude-haiku-4-5\"\n",
    )
    .expect("write");
    let out = sb
        .cmd()
        .args(["exec", "x", "--dry-run", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let t = stdout(&out);
    assert!(
        t.contains("anthropic の認証に失敗") && t.contains("ANTHROPIC_API_KEY"),
        "{t}"
    );

    let out = sb
        .cmd()
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .args(["exec", "x", "--dry-run", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stdout(&out));
}

#[test]
fn wrong_types_ranges_and_min_max_are_all_reported() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    let text = std::fs::read_to_string(&orch)
        .expect("read")
        .replace(
            "timeout_per_team_seconds = 60",
            "timeout_per_team_seconds = \"sixty\"\nmax_concurrent_teams = 500",
        )
        .replace("min_rounds = 1", "min_rounds = 3");
    std::fs::write(&orch, text).expect("write");
    let out = sb
        .cmd()
        .args(["config", "validate", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let t = stdout(&out);
    assert!(
        t.contains("`orchestrator.timeout_per_team_seconds`") && t.contains(":2:"),
        "type error with line: {t}"
    );
    assert!(
        t.contains("max_concurrent_teams") && t.contains("1..=100"),
        "{t}"
    );
    assert!(
        t.contains("min_rounds (3) must be <= max_rounds (2)"),
        "{t}"
    );
}

#[test]
fn duplicate_team_ids_and_unknown_providers_are_errors() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a", "b"]);
    std::fs::write(
        sb.path().join("cfg/team_b.toml"),
        "[team]\nteam_id = \"a\"\nteam_name = \"B\"\n[team.leader]\nmodel = \"opnai:gpt-4o\"\n",
    )
    .expect("write");
    let out = sb
        .cmd()
        .args(["exec", "x", "--dry-run", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let t = stdout(&out);
    assert!(t.contains("Duplicate team_id detected: 'a'"), "{t}");
    assert!(
        t.contains("unknown provider `opnai`") && t.contains("did you mean `openai`?"),
        "{t}"
    );
}

#[test]
fn missing_team_file_names_both_paths_tried() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    let text = std::fs::read_to_string(&orch)
        .expect("read")
        .replace("team_a.toml", "team_zz.toml");
    std::fs::write(&orch, text).expect("write");
    let out = sb
        .cmd()
        .args(["config", "validate", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let t = stdout(&out);
    assert!(
        t.contains(&sb.workspace().join("team_zz.toml").display().to_string()),
        "{t}"
    );
    assert!(
        t.contains(&sb.path().join("cfg/team_zz.toml").display().to_string()),
        "{t}"
    );
}

#[test]
fn env_overrides_are_applied_shown_and_typos_reported() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    let out = sb
        .cmd()
        .env("MIXSEEK_MAX_ROUNDS", "3")
        .args(["config", "show", "orchestrator.max_rounds", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    let t = stdout(&out);
    assert!(
        t.contains("orchestrator.max_rounds = 3") && t.contains("env MIXSEEK_MAX_ROUNDS"),
        "{t}"
    );

    // A misspelt variable is a warning with the variable meant; the configuration is valid.
    let out = sb
        .cmd()
        .env("MIXSEEK_MAX_ROUNDZ", "3")
        .args(["config", "validate", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let t = stdout(&out);
    assert!(
        t.contains("⚠️  `MIXSEEK_MAX_ROUNDZ`: unknown environment variable, ignored (did you mean `MIXSEEK_MAX_ROUNDS`?)"),
        "{t}"
    );
}

#[test]
fn config_show_has_sources_and_never_prints_secrets() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    let mut text = std::fs::read_to_string(&orch).expect("read");
    text.push_str("\n[providers.local]\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"LOCAL_KEY\"\n[providers.local.headers]\nAuthorization = \"Bearer very-secret-value\"\n");
    std::fs::write(&orch, text).expect("write");
    for fmt in ["text", "json"] {
        let out = sb
            .cmd()
            .env("LOCAL_KEY", "another-secret-value")
            .args(["config", "show", "-f", fmt, "-c"])
            .arg(&orch)
            .output()
            .expect("run");
        assert!(out.status.success(), "{}", stderr(&out));
        let t = stdout(&out);
        assert!(
            !t.contains("very-secret-value") && !t.contains("another-secret-value"),
            "{t}"
        );
        assert!(t.contains("[REDACTED]"), "{t}");
        if fmt == "text" {
            assert!(
                t.contains("orchestrator.max_rounds = 2") && t.contains("orchestrator.toml:4"),
                "{t}"
            );
            assert!(
                t.contains("orchestrator.max_concurrent_teams = 4    # default"),
                "{t}"
            );
        } else {
            let v: serde_json::Value = serde_json::from_str(&t).expect("json");
            assert_eq!(
                v["orchestrator"]["settings"]["orchestrator"]["max_rounds"],
                2
            );
            assert!(
                v["orchestrator"]["sources"]["orchestrator.max_rounds"]
                    .as_str()
                    .unwrap_or_default()
                    .ends_with(":4")
            );
        }
    }
}

#[test]
fn exec_without_config_is_a_usage_error() {
    let sb = Sandbox::new();
    let out = sb.cmd().args(["exec", "x"]).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--config"));
    // A valid config, so only clap's checks can fail these.
    let orch = write_mock_competition(&sb, &["a"]);
    let out = sb
        .cmd()
        .args(["exec", "x", "--dry-run", "--timeout", "0", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("invalid value '0' for '--timeout <TIMEOUT>'"),
        "{err}"
    );
    let out = sb
        .cmd()
        .args(["exec", "x", "--dry-run", "-f", "yaml", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("invalid value 'yaml'"), "{err}");
    assert!(err.contains("[possible values: text, json]"), "{err}");
    // The same config is valid without the bad flags.
    let out = sb
        .cmd()
        .args(["exec", "x", "--dry-run", "--timeout", "100", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stdout(&out));
}

#[test]
fn completions_are_generated() {
    let sb = Sandbox::new();
    let out = sb
        .cmd()
        .args(["completions", "bash"])
        .output()
        .expect("run");
    assert!(out.status.success());
    assert!(stdout(&out).contains("mixseek"));
}

/// Runs `exec --dry-run` on `orch` and returns (exit code, stdout).
fn dry_run(sb: &Sandbox, orch: &std::path::Path) -> (Option<i32>, String) {
    let out = sb
        .cmd()
        .args(["exec", "x", "--dry-run", "-c"])
        .arg(orch)
        .output()
        .expect("run");
    (out.status.code(), stdout(&out))
}

/// Runs `config validate` on `orch` and returns (exit code, stdout).
fn validate(sb: &Sandbox, orch: &std::path::Path) -> (Option<i32>, String) {
    let out = sb
        .cmd()
        .args(["config", "validate", "-c"])
        .arg(orch)
        .output()
        .expect("run");
    (out.status.code(), stdout(&out))
}

#[test]
fn weights_that_do_not_sum_to_one_fail_the_dry_run_and_validate() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\nweight = 0.5\n[[metrics]]\nname = \"Relevance\"\nweight = 0.3\n",
    );
    let (code, t) = dry_run(&sb, &orch);
    assert_eq!(code, Some(2), "{t}");
    assert!(
        t.contains("Metric weights must sum to 1.0, got: 0.8000. Current weights: Coverage=0.5, Relevance=0.3."),
        "{t}"
    );
    assert!(t.contains("evaluator.toml:2:3: `metrics`"), "{t}");
    let (code, t) = validate(&sb, &orch);
    assert_eq!(code, Some(2), "{t}");
    assert!(t.contains("Metric weights must sum to 1.0"), "{t}");

    // Either every metric has a weight or none does.
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\nweight = 0.5\n[[metrics]]\nname = \"Relevance\"\n",
    );
    let (code, t) = dry_run(&sb, &orch);
    assert_eq!(code, Some(2), "{t}");
    assert!(
        t.contains("重みが未指定: Relevance。重みが設定済み: Coverage。"),
        "{t}"
    );

    // 0.5 + 0.5005 is within the tolerance.
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\nweight = 0.5\n[[metrics]]\nname = \"Relevance\"\nweight = 0.5005\n",
    );
    let (code, t) = dry_run(&sb, &orch);
    assert_eq!(code, Some(0), "{t}");
}

#[test]
fn a_builtin_metric_named_twice_fails_the_dry_run_and_validate() {
    // `coverage` is the snake_case alias of `Coverage`: the evaluator's list of built-in
    // metrics knows it, and both commands ask the evaluator.
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\n[[metrics]]\nname = \"coverage\"\n",
    );
    for (code, t) in [dry_run(&sb, &orch), validate(&sb, &orch)] {
        assert_eq!(code, Some(2), "{t}");
        assert!(
            t.contains(
                "Duplicate metric names found: Coverage. Each metric must have a unique name."
            ),
            "{t}"
        );
        assert!(t.contains("evaluator.toml:2:3: `metrics`"), "{t}");
    }
    // The metric-name category still names each metric as the original does.
    let (_, t) = dry_run(&sb, &orch);
    assert!(
        t.contains("metric_coverage: ビルトインメトリクス 'Coverage'"),
        "{t}"
    );
    // Distinct names pass.
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\n[[metrics]]\nname = \"relevance\"\n",
    );
    let (code, t) = dry_run(&sb, &orch);
    assert_eq!(code, Some(0), "{t}");
}

#[test]
fn dot_dot_and_symlink_escapes_are_refused() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    let team = std::fs::read_to_string(sb.path().join("cfg/team_a.toml")).expect("read");
    sb.write("outside/team.toml", &team);
    std::fs::create_dir_all(sb.workspace()).expect("ws");
    let text = std::fs::read_to_string(&orch)
        .expect("read")
        .replace("team_a.toml", "../outside/team.toml");
    std::fs::write(&orch, text).expect("write");
    let (code, t) = dry_run(&sb, &orch);
    assert_eq!(code, Some(2), "{t}");
    assert!(
        t.contains("`orchestrator.teams[0].config`")
            && t.contains("`../outside/team.toml` escapes"),
        "{t}"
    );

    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(
            sb.path().join("outside/team.toml"),
            sb.path().join("cfg/link.toml"),
        )
        .expect("symlink");
        let text = std::fs::read_to_string(&orch)
            .expect("read")
            .replace("../outside/team.toml", "link.toml");
        std::fs::write(&orch, text).expect("write");
        let (code, t) = dry_run(&sb, &orch);
        assert_eq!(code, Some(2), "{t}");
        assert!(
            t.contains("`link.toml` escapes") && t.contains("a symlink"),
            "{t}"
        );
    }
}

#[test]
fn ranges_of_temperatures_weights_timeouts_and_blank_key_variables_are_reported() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    let mut text = std::fs::read_to_string(&orch).expect("read");
    text.push_str(
        "\n[providers.local]\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"  \"\n",
    );
    std::fs::write(&orch, text).expect("write");
    sb.write(
        "cfg/team_a.toml",
        "[team]\nteam_id = \"a\"\nteam_name = \"A\"\n[team.leader]\nmodel = \"mock:l\"\ntemperature = 2.5\ntimeout_seconds = 5\n[[team.members]]\nname = \"m\"\ntype = \"plain\"\nmodel = \"mock:m\"\ntemperature = -1.0\ntimeout_seconds = 0\n",
    );
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\ntimeout_seconds = 0\n[llm_default]\ntimeout_seconds = 4000\n[[metrics]]\nname = \"Coverage\"\nweight = 1.5\ntimeout_seconds = 0\n",
    );
    sb.write(
        "cfg/judgment.toml",
        "model = \"mock:judge\"\ntemperature = 3.0\ntimeout_seconds = 0\n",
    );
    let (code, t) = validate(&sb, &orch);
    assert_eq!(code, Some(2), "{t}");
    for expected in [
        "`team.leader.temperature`: 2.5 is out of range (allowed range: 0..=2)",
        "`team.leader.timeout_seconds`: 5 is out of range (allowed range: 10..=600)",
        "`team.members[0].temperature`: -1 is out of range (allowed range: 0..=2)",
        "`team.members[0].timeout_seconds`: 0 is out of range (allowed range: 1..=3600)",
        "`timeout_seconds`: 0 is out of range (allowed range: 1..=3600)",
        "`llm_default.timeout_seconds`: 4000 is out of range (allowed range: 1..=3600)",
        "`metrics[0].weight`: 1.5 is out of range (allowed range: 0..=1)",
        "`metrics[0].timeout_seconds`: 0 is out of range (allowed range: 1..=3600)",
        "`temperature`: 3 is out of range (allowed range: 0..=2)",
        "`providers.local.api_key_env`: api_key_env cannot be empty",
    ] {
        assert!(t.contains(expected), "missing {expected:?} in:\n{t}");
    }
    // The judgment's timeout is reported with its file and line.
    assert!(
        t.contains(&format!(
            "{}:3:1: `timeout_seconds`: 0 is out of range",
            sb.path().join("cfg/judgment.toml").display()
        )),
        "{t}"
    );
}

#[test]
fn an_unknown_metric_name_fails_the_dry_run_with_a_suggestion() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverag\"\n",
    );
    let (code, t) = dry_run(&sb, &orch);
    assert_eq!(code, Some(2), "{t}");
    assert!(
        t.contains("❌ metric_Coverag: メトリクス 'Coverag' が見つかりません")
            && t.contains("Did you mean 'Coverage'?"),
        "{t}"
    );
}

#[test]
fn an_unwritable_workspace_fails_the_dry_run() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    // The workspace path is a file: nothing can be created in it (even as root).
    std::fs::write(sb.workspace(), "not a directory").expect("write");
    let (code, t) = dry_run(&sb, &orch);
    assert_eq!(code, Some(2), "{t}");
    assert!(
        t.contains("❌ workspace_writable: ワークスペース '") && t.contains("に書き込みできません"),
        "{t}"
    );
}

#[test]
fn the_command_line_beats_the_environment() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    // An out-of-range value from the environment is replaced by the flag.
    let out = sb
        .cmd()
        .env("MIXSEEK_TIMEOUT_PER_TEAM_SECONDS", "5")
        .args(["exec", "x", "--dry-run", "--timeout", "100", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stdout(&out));
    // An out-of-range flag is reported as the flag, not as the file or the variable.
    let out = sb
        .cmd()
        .env("MIXSEEK_TIMEOUT_PER_TEAM_SECONDS", "100")
        .args(["exec", "x", "--dry-run", "--timeout", "5", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let t = stdout(&out);
    assert!(
        t.contains("`orchestrator.timeout_per_team_seconds`: 5 is out of range (set by the command-line flag --timeout)"),
        "{t}"
    );
    // Without the flag, the variable wins over the file (60) and is named.
    let out = sb
        .cmd()
        .env("MIXSEEK_TIMEOUT_PER_TEAM_SECONDS", "5")
        .args(["exec", "x", "--dry-run", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let t = stdout(&out);
    assert!(
        t.contains(
            "5 is out of range (set by environment variable MIXSEEK_TIMEOUT_PER_TEAM_SECONDS)"
        ),
        "{t}"
    );
}

fn show_key(
    sb: &Sandbox,
    orch: &std::path::Path,
    key: &str,
    env: &[(&str, &str)],
) -> (bool, String) {
    let mut c = sb.cmd();
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c
        .args(["config", "show", key, "-c"])
        .arg(orch)
        .output()
        .expect("run");
    (
        out.status.success(),
        format!("{}{}", stdout(&out), stderr(&out)),
    )
}

#[test]
fn nested_environment_variables_reach_their_keys() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    for (var, key, expected) in [
        (
            "MIXSEEK_TEAM__LEADER__MODEL",
            "team.leader.model",
            "\"mock:from-team-env\"",
        ),
        (
            "MIXSEEK_LEADER__TEMPERATURE",
            "team.leader.temperature",
            "0.25",
        ),
        (
            "MIXSEEK_EVALUATOR__TIMEOUT_SECONDS",
            "evaluator::timeout_seconds",
            "42",
        ),
        (
            "MIXSEEK_JUDGMENT__MAX_RETRIES",
            "judgment::max_retries",
            "7",
        ),
        (
            "MIXSEEK_PROVIDERS__OLLAMA__BASE_URL",
            "providers.ollama.base_url",
            "\"http://127.0.0.1:9/v1\"",
        ),
        ("MIXSEEK_CACHE__ENABLED", "cache.enabled", "true"),
        ("MIXSEEK_PRIVACY__MASK_PII", "privacy.mask_pii", "true"),
    ] {
        let value = expected.trim_matches('"');
        let (key, section) = match key.split_once("::") {
            Some((s, k)) => (k, Some(s)),
            None => (key, None),
        };
        let (ok, t) = show_key(&sb, &orch, key, &[(var, value)]);
        assert!(ok, "{var}: {t}");
        let line = t
            .lines()
            .find(|l| {
                l.contains(&format!("] {key} = "))
                    && section.is_none_or(|s| l.starts_with(&format!("[{s}]")))
            })
            .unwrap_or_else(|| panic!("{var}: no line for {key} in {t}"));
        assert!(
            line.contains(&format!("{key} = {expected}")) && line.contains(&format!("env {var}")),
            "{var}: {line}"
        );
    }
    // Hooks are indexed.
    let (ok, t) = show_key(
        &sb,
        &orch,
        "hooks[0].on",
        &[
            ("MIXSEEK_HOOKS__0__ON", "round_complete"),
            ("MIXSEEK_HOOKS__0__COMMAND", "[\"true\"]"),
        ],
    );
    assert!(ok && t.contains("hooks[0].on = \"round_complete\""), "{t}");
    // A misspelt nested variable is a warning naming the variable meant.
    for (var, meant) in [
        (
            "MIXSEEK_PROVIDERS__OLLAMA__BASE_URLL",
            "MIXSEEK_PROVIDERS__OLLAMA__BASE_URL",
        ),
        ("MIXSEEK_TEAM__LEADER__MODLE", "MIXSEEK_TEAM__LEADER__MODEL"),
    ] {
        let out = sb
            .cmd()
            .env(var, "mock:x")
            .args(["config", "validate", "-f", "json", "-c"])
            .arg(&orch)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(0), "{var}: {}", stdout(&out));
        let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
        assert_eq!(v["valid"], true);
        assert_eq!(v["warnings"][0]["key"], var, "{v}");
        assert_eq!(
            v["warnings"][0]["hint"],
            format!("did you mean `{meant}`?"),
            "{v}"
        );
    }
    // MIXSEEK_ORCHESTRATOR__<KEY> names the [orchestrator] table's keys.
    let (ok, t) = show_key(
        &sb,
        &orch,
        "orchestrator.max_rounds",
        &[("MIXSEEK_ORCHESTRATOR__MAX_ROUNDS", "3")],
    );
    assert!(
        ok && t.contains("orchestrator.max_rounds = 3")
            && t.contains("env MIXSEEK_ORCHESTRATOR__MAX_ROUNDS"),
        "{t}"
    );
}

#[test]
fn an_unknown_variable_is_a_warning_and_the_run_goes_on() {
    let sb = Sandbox::new();
    let cfg = repo_root().join("configs/quickstart/orchestrator.toml");
    // A real offline run: exit 0, the warnings (with the variable meant) on stderr.
    let out = sb
        .cmd()
        .env("MIXSEEK_QZ", "x")
        .env("MIXSEEK_MAX_ROUNDZ", "3")
        .args(["exec", "Write a haiku", "-c"])
        .arg(&cfg)
        .output()
        .expect("run");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "`MIXSEEK_QZ`: unknown environment variable, ignored (no mixseek setting has this name"
        ),
        "{err}"
    );
    assert!(
        err.contains("`MIXSEEK_MAX_ROUNDZ`: unknown environment variable, ignored (did you mean `MIXSEEK_MAX_ROUNDS`?)"),
        "{err}"
    );
    assert_eq!(err.matches("MIXSEEK_QZ").count(), 1, "{err}");
    // The dry run lists them in the preflight report, which passes.
    let out = sb
        .cmd()
        .env("MIXSEEK_QZ", "x")
        .env("MIXSEEK_ORCHESTRATOR__MAX_ROUNDZ", "3")
        .args(["exec", "x", "--dry-run", "-c"])
        .arg(&cfg)
        .output()
        .expect("run");
    let t = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains("📋 環境変数")
            && t.contains("⚠️ environment_variable: `MIXSEEK_ORCHESTRATOR__MAX_ROUNDZ`: unknown environment variable, ignored (did you mean `MIXSEEK_ORCHESTRATOR__MAX_ROUNDS`?)")
            && t.contains("⚠️ environment_variable: `MIXSEEK_QZ`")
            && t.contains("✅ All checks passed"),
        "{t}"
    );
    // A variable naming a setting with a bad value is still an error naming it.
    let out = sb
        .cmd()
        .env("MIXSEEK_ORCHESTRATOR__MAX_ROUNDS", "abc")
        .args(["exec", "x", "--dry-run", "-c"])
        .arg(&cfg)
        .output()
        .expect("run");
    let t = stdout(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(
        t.contains("`orchestrator.max_rounds`")
            && t.contains("(set by environment variable MIXSEEK_ORCHESTRATOR__MAX_ROUNDS)"),
        "{t}"
    );
}

#[test]
fn the_default_workspace_is_mixseek_workspace_in_the_current_directory() {
    let sb = Sandbox::new();
    let out = sb.bare_cmd().arg("init").output().expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    let ws = sb.path().join("mixseek-workspace");
    assert!(
        stdout(&out).contains(&ws.display().to_string()),
        "{}",
        stdout(&out)
    );
    assert!(ws.join("configs/quickstart/orchestrator.toml").is_file());
    let out = sb
        .bare_cmd()
        .args([
            "config",
            "show",
            "-c",
            "configs/quickstart/orchestrator.toml",
        ])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("default (./mixseek-workspace)"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn the_readme_quick_start_runs_verbatim_with_the_default_workspace() {
    let sb = Sandbox::new();
    sb.copy_from_repo("configs/quickstart");
    // README: cargo run -p mixseek-cli -- exec "Write a haiku about autumn" -c configs/quickstart/orchestrator.toml
    let out = sb
        .bare_cmd()
        .args([
            "exec",
            "Write a haiku about autumn",
            "-c",
            "configs/quickstart/orchestrator.toml",
        ])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("🏆 Leaderboard"), "{}", stdout(&out));
    let ws = sb.path().join("mixseek-workspace");
    assert!(ws.join("mixseek.db").is_file());
    assert!(ws.join("logs/mixseek.log").is_file());
}

#[test]
fn a_wrong_type_names_line_and_column() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    let text = std::fs::read_to_string(&orch)
        .expect("read")
        .replace("max_rounds = 2", "    max_rounds = \"two\"");
    std::fs::write(&orch, text).expect("write");
    let (code, t) = validate(&sb, &orch);
    assert_eq!(code, Some(2), "{t}");
    assert!(
        t.contains(&format!(
            "{}:4:5: `orchestrator.max_rounds`: invalid type: string \"two\", expected u32",
            orch.display()
        )),
        "{t}"
    );
}

#[test]
fn dry_run_json_parses_even_when_the_config_cannot_be_found() {
    let sb = Sandbox::new();
    let out = sb
        .cmd()
        .args(["exec", "x", "--dry-run", "-f", "json", "-c", "nope.toml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json on stdout");
    let first = &v["categories"][0]["checks"][0];
    assert_eq!(first["name"], "orchestrator_config");
    assert_eq!(first["status"], "error");
    assert_eq!(first["source_file"], "nope.toml");
    let message = first["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("configuration file not found: `nope.toml`")
            && message.contains(&sb.workspace().join("nope.toml").display().to_string()),
        "{message}"
    );
    let rest: Vec<&str> = v["categories"].as_array().expect("array")[1..]
        .iter()
        .map(|c| c["checks"][0]["status"].as_str().unwrap_or_default())
        .collect();
    assert!(rest.iter().all(|s| *s == "skipped"), "{rest:?}");
    // Text keeps the plain error on stderr.
    let out = sb
        .cmd()
        .args(["exec", "x", "--dry-run", "-c", "nope.toml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("configuration file not found"));
}

#[test]
fn typos_are_errors_in_every_file_kind_and_legacy_keys_are_warnings() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    let mut text = std::fs::read_to_string(&orch).expect("read").replace(
        "judgment_config = \"judgment.toml\"",
        "judgment_config = \"judgment.toml\"\nprompt_builder_config = \"pb.toml\"",
    );
    text.push_str("\n[cache]\nenabeld = true\n");
    std::fs::write(&orch, text).expect("write");
    sb.write(
        "cfg/team_a.toml",
        "[team]\nteam_id = \"a\"\nteam_nme = \"A\"\nteam_name = \"A\"\n[team.leader]\nmodle = \"mock:l\"\n[[team.members]]\nconfig = \"member.toml\"\n",
    );
    sb.write(
        "cfg/member.toml",
        "[agent]\nname = \"m\"\ntype = \"plain\"\nmodel = \"mock:m\"\ntempreature = 0.5\n",
    );
    sb.write(
        "cfg/evaluator.toml",
        "defualt_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\nwieght = 1.0\n",
    );
    sb.write(
        "cfg/judgment.toml",
        "model = \"mock:judge\"\njudge_on_last_round = false\n",
    );
    sb.write("cfg/pb.toml", "[prompt_builder]\nteam_user_promt = \"x\"\n");
    let (code, t) = dry_run(&sb, &orch);
    assert_eq!(code, Some(2), "{t}");
    for (file, line, key, suggestion) in [
        ("orchestrator.toml", 13, "cache.enabeld", "enabled"),
        ("team_a.toml", 3, "team.team_nme", "team_name"),
        ("team_a.toml", 6, "team.leader.modle", "model"),
        ("member.toml", 5, "agent.tempreature", "temperature"),
        ("evaluator.toml", 1, "defualt_model", "default_model"),
        ("evaluator.toml", 4, "metrics[0].wieght", "weight"),
        (
            "judgment.toml",
            2,
            "judge_on_last_round",
            "judge_on_final_round",
        ),
        (
            "pb.toml",
            2,
            "prompt_builder.team_user_promt",
            "team_user_prompt",
        ),
    ] {
        let expected = format!(
            "{}:{line}:1: `{key}`: unknown key (did you mean `{suggestion}`?)",
            sb.path().join("cfg").join(file).display()
        );
        assert!(t.contains(&expected), "missing {expected:?} in:\n{t}");
    }

    // The keys the original accepts without effect load, with a warning.
    let orch = write_mock_competition(&sb, &["a"]);
    let text = std::fs::read_to_string(&orch).expect("read").replace(
        "[orchestrator]\n",
        "[orchestrator]\nworkspace_path = \"/somewhere\"\n",
    );
    std::fs::write(&orch, text).expect("write");
    sb.write(
        "cfg/team_a.toml",
        "[team]\nteam_id = \"a\"\nteam_name = \"A\"\nenvironment = \"prod\"\n[team.leader]\nmodel = \"mock:l\"\n[[team.members]]\nname = \"m\"\ntype = \"plain\"\nmodel = \"mock:m\"\ncapabilities = [\"search\"]\nusage_limits = { requests = 3 }\n",
    );
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\nenvironment = \"dev\"\n[[metrics]]\nname = \"Coverage\"\n",
    );
    sb.write("cfg/judgment.toml", "model = \"mock:judge-continue\"\n");
    let (code, t) = dry_run(&sb, &orch);
    assert_eq!(code, Some(0), "{t}");
    for key in [
        "`orchestrator.workspace_path`: ignored key",
        "`team.environment`: ignored key",
        "`team.members[0].capabilities`: ignored key",
        "`team.members[0].usage_limits`: ignored key",
        "`environment`: ignored key",
    ] {
        assert!(t.contains(key), "missing {key:?} in:\n{t}");
    }
    assert!(t.contains("⚠️"), "{t}");
    assert!(t.contains("✅ All checks passed"), "{t}");
}

#[test]
fn config_show_masks_hyphenated_headers_unknown_headers_and_hook_urls() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    let mut text = std::fs::read_to_string(&orch).expect("read");
    text.push_str(concat!(
        "\n[providers.gw]\nbase_url = \"https://user:pw-secret@gw.example/v1?api_key=query-secret&region=eu\"\n",
        "[providers.gw.headers]\n\"x-api-key\" = \"hyphen-secret\"\n\"api-key\" = \"azure-secret\"\n",
        "\"X-Portkey-Virtual-Key\" = \"portkey-secret\"\n\"HTTP-Referer\" = \"https://example.org/app\"\n",
        "\n[[hooks]]\non = \"round_complete\"\nurl = \"https://hooks.slack.com/services/T000/B000/slack-secret\"\n",
    ));
    std::fs::write(&orch, text).expect("write");
    for fmt in ["text", "json"] {
        let out = sb
            .cmd()
            .args(["config", "show", "-f", fmt, "-c"])
            .arg(&orch)
            .output()
            .expect("run");
        assert!(out.status.success(), "{}", stderr(&out));
        let t = stdout(&out);
        for secret in [
            "pw-secret",
            "query-secret",
            "hyphen-secret",
            "azure-secret",
            "portkey-secret",
            "slack-secret",
            "T000",
        ] {
            assert!(!t.contains(secret), "{fmt}: {secret} printed:\n{t}");
        }
        assert!(t.contains("https://example.org/app"), "{t}");
        assert!(t.contains("region=eu"), "{t}");
        assert!(t.contains("https://hooks.slack.com/[REDACTED]"), "{t}");
    }
}

#[test]
fn init_writes_the_provider_examples_too() {
    let sb = Sandbox::new();
    let out = sb.cmd().arg("init").output().expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    for example in [
        "openai",
        "anthropic",
        "gemini",
        "local",
        "arena",
        "calibration",
    ] {
        let dir = sb.workspace().join("configs/examples").join(example);
        let repo = repo_root().join("configs/examples").join(example);
        for entry in std::fs::read_dir(&repo).expect("read_dir") {
            let entry = entry.expect("entry");
            assert_eq!(
                std::fs::read_to_string(dir.join(entry.file_name())).expect("copied"),
                std::fs::read_to_string(entry.path()).expect("repo"),
                "{example}/{:?}",
                entry.file_name()
            );
        }
    }
    assert!(sb.workspace().join("configs/examples/README.md").is_file());
    let out = sb
        .cmd()
        .env("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")
        .args([
            "exec",
            "x",
            "--dry-run",
            "-c",
            "configs/examples/openai/orchestrator.toml",
        ])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stdout(&out));
    // the arena example loads: the command gets past its file to the (still missing) database
    let out = sb
        .cmd()
        .args([
            "arena",
            "nosuch",
            "-c",
            "configs/examples/arena/arena.toml",
            "--dry-run",
        ])
        .output()
        .expect("run");
    let err = stderr(&out);
    assert!(
        err.contains("no database") && !err.contains("arena.toml"),
        "{err}"
    );
}

#[test]
fn logs_go_to_the_workspace_file_and_stderr_in_the_chosen_format_and_level() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    let ws = sb.path().join("new-ws");
    let log = ws.join("logs/mixseek.log");
    // A dry run on a workspace that does not exist yet: the preflight creates it, and the log
    // file is created and then appended to.
    for n in 1..=2 {
        let out = sb
            .bare_cmd()
            .args(["-w"])
            .arg(&ws)
            .args(["exec", "x", "--dry-run", "-c"])
            .arg(&orch)
            .output()
            .expect("run");
        assert!(out.status.success(), "{}", stdout(&out));
        let text = std::fs::read_to_string(&log).expect("log file");
        assert_eq!(
            text.matches("mixseek exec --dry-run finished (exit 0)")
                .count(),
            n,
            "{text}"
        );
        // The file-only line is not on stderr.
        assert!(!stderr(&out).contains("finished"), "{}", stderr(&out));
    }
    // --no-log-file writes nothing.
    let before = std::fs::read_to_string(&log).expect("log");
    let out = sb
        .bare_cmd()
        .args(["--no-log-file", "-w"])
        .arg(&ws)
        .args(["exec", "x", "--dry-run", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&log).expect("log"), before);

    // A real (offline) run logs on stderr: JSON lines with --log-format json.
    let run = |args: &[&str]| {
        let out = sb
            .bare_cmd()
            .args(["-w"])
            .arg(&ws)
            .args(args)
            .args(["exec", "x", "-c"])
            .arg(&orch)
            .output()
            .expect("run");
        assert!(out.status.success(), "{}", stderr(&out));
        stderr(&out)
    };
    let err = run(&["--log-format", "json", "--log-level", "debug"]);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty(), "no log lines on stderr");
    for l in &lines {
        let v: serde_json::Value =
            serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
        assert!(v["level"].is_string() && v["fields"].is_object(), "{l}");
    }
    assert!(
        lines.iter().any(|l| l.contains("\"level\":\"DEBUG\"")),
        "{err}"
    );
    // --log-level filters: nothing below WARN on stderr, nor in the file's new lines.
    let before = std::fs::read_to_string(&log).expect("log").len();
    let err = run(&["--log-level", "warning"]);
    assert!(!err.contains("DEBUG") && !err.contains(" INFO "), "{err}");
    let text = std::fs::read_to_string(&log).expect("log");
    let new_lines = &text[before..];
    assert!(!new_lines.is_empty());
    for l in new_lines.lines() {
        // The one INFO line is the file-only record of the command.
        assert!(
            !l.contains("DEBUG") && (!l.contains("INFO") || l.contains("mixseek exec finished")),
            "{l}"
        );
    }
}

#[test]
fn log_variables_are_the_defaults_of_their_flags() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["a"]);
    let ws = sb.path().join("log-ws");
    let log = ws.join("logs/mixseek.log");
    let run = |env: &[(&str, &str)], args: &[&str]| {
        let mut c = sb.bare_cmd();
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c
            .arg("-w")
            .arg(&ws)
            .args(args)
            .args(["exec", "x", "-c"])
            .arg(&orch)
            .output()
            .expect("run");
        (out.status.code(), stderr(&out))
    };
    // MIXSEEK_LOG_LEVEL: debug shows DEBUG lines, warning hides INFO; the flag wins.
    let (code, err) = run(&[("MIXSEEK_LOG_LEVEL", "debug")], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("DEBUG"), "{err}");
    let (code, err) = run(&[("MIXSEEK_LOG_LEVEL", "warning")], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("DEBUG") && !err.contains(" INFO "), "{err}");
    let (_, err) = run(
        &[("MIXSEEK_LOG_LEVEL", "debug")],
        &["--log-level", "warning"],
    );
    assert!(!err.contains("DEBUG"), "{err}");
    // MIXSEEK_LOG_FORMAT=json: JSON lines.
    let (code, err) = run(
        &[
            ("MIXSEEK_LOG_FORMAT", "json"),
            ("MIXSEEK_LOG_LEVEL", "debug"),
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty());
    for l in lines {
        assert!(serde_json::from_str::<serde_json::Value>(l).is_ok(), "{l}");
    }
    // MIXSEEK_LOG_CONSOLE=0: nothing logged on stderr, the file still gets the records.
    let before = std::fs::read_to_string(&log).expect("log").len();
    let (code, err) = run(
        &[("MIXSEEK_LOG_CONSOLE", "0"), ("MIXSEEK_LOG_LEVEL", "debug")],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err.trim(), "", "{err}");
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(text[before..].contains("DEBUG"), "{}", &text[before..]);
    // --no-log-console does the same.
    let (_, err) = run(&[("MIXSEEK_LOG_LEVEL", "debug")], &["--no-log-console"]);
    assert_eq!(err.trim(), "", "{err}");
    // MIXSEEK_LOG_FILE=0: the file is left as it was.
    let before = std::fs::read_to_string(&log).expect("log");
    let (code, err) = run(&[("MIXSEEK_LOG_FILE", "0")], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read_to_string(&log).expect("log"), before);
    let (_, _) = run(&[("MIXSEEK_LOG_FILE", "1")], &[]);
    assert_ne!(std::fs::read_to_string(&log).expect("log"), before);
    // A value a variable does not take stops the command, naming the variable.
    for (var, value) in [
        ("MIXSEEK_LOG_LEVEL", "loud"),
        ("MIXSEEK_LOG_FORMAT", "xml"),
        ("MIXSEEK_LOG_CONSOLE", "maybe"),
        ("MIXSEEK_LOG_FILE", "sometimes"),
        ("MIXSEEK_NO_PROGRESS", "please"),
    ] {
        let (code, err) = run(&[(var, value)], &[]);
        assert_eq!(code, Some(2), "{var}: {err}");
        assert!(
            err.contains(&format!(
                "invalid value \"{value}\" of the environment variable {var}"
            )),
            "{var}: {err}"
        );
    }
}

/// Runs `mixseek` under a pseudo-terminal (`script`), so that the live display is drawn;
/// returns everything written to the terminal.
fn run_in_terminal(sb: &Sandbox, env: &[(&str, &str)], args: &[&str]) -> String {
    let mut cmd = vec![workspace_tests::mixseek_bin().display().to_string()];
    cmd.push("--no-log-file".into());
    cmd.push("-w".into());
    cmd.push(sb.workspace().display().to_string());
    cmd.extend(args.iter().map(|a| a.to_string()));
    let quoted: Vec<String> = cmd
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect();
    let mut c = std::process::Command::new("script");
    for (k, _) in std::env::vars() {
        if k.starts_with("MIXSEEK_") {
            c.env_remove(k);
        }
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c
        .args(["-q", "-e", "-c", &quoted.join(" "), "/dev/null"])
        .current_dir(sb.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script (util-linux) runs the binary under a terminal");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether a team line of the live display was drawn (`round N/2`; the results on stdout
/// say `(Round N)`).
fn progress_drawn(terminal: &str) -> bool {
    (0..=2).any(|n| terminal.contains(&format!(" round {n}/2")))
}

#[test]
fn no_progress_turns_the_live_display_off() {
    let sb = Sandbox::new();
    let orch = write_mock_competition(&sb, &["alpha"]);
    let orch = orch.display().to_string();
    let args = ["exec", "x", "-c", orch.as_str()];
    let shown = run_in_terminal(&sb, &[], &args);
    assert!(progress_drawn(&shown), "{shown}");
    for value in ["1", "true"] {
        let hidden = run_in_terminal(&sb, &[("MIXSEEK_NO_PROGRESS", value)], &args);
        assert!(!progress_drawn(&hidden), "{hidden}");
        // The run itself is the same.
        assert!(hidden.contains("Team alpha"), "{hidden}");
    }
    let hidden = run_in_terminal(
        &sb,
        &[],
        &["--no-progress", "exec", "x", "-c", orch.as_str()],
    );
    assert!(!progress_drawn(&hidden), "{hidden}");
    // `0` leaves it on.
    let shown = run_in_terminal(&sb, &[("MIXSEEK_NO_PROGRESS", "0")], &args);
    assert!(progress_drawn(&shown), "{shown}");
}
