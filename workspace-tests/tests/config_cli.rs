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

    let out = sb
        .cmd()
        .env("MIXSEEK_MAX_ROUNDZ", "3")
        .args(["config", "validate", "-c"])
        .arg(&orch)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let t = stdout(&out);
    assert!(
        t.contains("MIXSEEK_MAX_ROUNDZ") && t.contains("did you mean `max_rounds`?"),
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
    let out = sb
        .cmd()
        .args(["exec", "x", "-c", "a.toml", "--timeout", "0"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let out = sb
        .cmd()
        .args(["exec", "x", "-c", "a.toml", "-f", "yaml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
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
