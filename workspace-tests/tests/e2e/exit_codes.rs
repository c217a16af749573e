//! Exit codes by kind of error, through the real binary: bad input (configuration, arguments,
//! an unknown execution, a file that is not a mixseek database) exits 2; a command the
//! environment stopped (a database locked by another process, a full disk, a provider that
//! cannot be reached, a bug) exits 1, with its cause chain and a hint, never as a usage
//! error. `mixseek exec` keeps the original's rule for a run whose every team failed: 2.
//! The disk-full and read-only cases in the middle of a run are in `disk_faults.rs`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Output;
use workspace_tests::{Sandbox, describe, write_mock_competition};

/// A workspace with one finished execution of the mock competition; returns the orchestrator
/// file and the execution id.
fn seeded(sb: &Sandbox) -> (PathBuf, String) {
    let cfg = write_mock_competition(sb, &["a"]);
    let out = sb
        .cmd()
        .args(["-q", "exec", "Write a haiku", "-f", "json", "-c"])
        .arg(&cfg)
        .output()
        .expect("run mixseek");
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json summary");
    let id = summary["execution_id"]
        .as_str()
        .expect("execution id")
        .to_string();
    (cfg, id)
}

/// One row of the table: what is set up, the command, the exit code and what stderr (or,
/// for a preflight report, stdout) must say.
struct Case {
    name: &'static str,
    code: i32,
    says: &'static [&'static str],
    run: fn(&Sandbox) -> Output,
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn run_with(sb: &Sandbox, args: Vec<OsString>) -> Output {
    sb.cmd().args(args).output().expect("run mixseek")
}

/// A DuckDB connection of this (test) process holding the workspace database read-write.
fn hold_database(sb: &Sandbox) -> duckdb::Connection {
    duckdb::Connection::open(sb.workspace().join("mixseek.db")).expect("hold the database")
}

const CASES: &[Case] = &[
    // ── bad input: 2 ──
    Case {
        name: "an unknown key in the configuration",
        code: 2,
        says: &["max_roundz", "Preflight failed"],
        run: |sb| {
            let cfg = write_mock_competition(sb, &["a"]);
            let text = std::fs::read_to_string(&cfg).expect("read");
            std::fs::write(
                &cfg,
                text.replace("max_rounds = 2", "max_rounds = 2\nmax_roundz = 3"),
            )
            .expect("write");
            let mut args = os(&["exec", "task", "-c"]);
            args.push(cfg.into_os_string());
            run_with(sb, args)
        },
    },
    Case {
        name: "a configuration file that does not exist",
        code: 2,
        says: &["not found", "nope.toml", "Hint:"],
        run: |sb| run_with(sb, os(&["team", "task", "-c", "nope.toml"])),
    },
    Case {
        name: "a bad argument",
        code: 2,
        says: &["xml"],
        run: |sb| run_with(sb, os(&["executions", "-f", "xml"])),
    },
    Case {
        name: "an unknown execution id (report)",
        code: 2,
        says: &["no execution matches `nope`", "Hint:"],
        run: |sb| {
            seeded(sb);
            run_with(sb, os(&["show", "nope"]))
        },
    },
    Case {
        name: "an unknown execution id (resume)",
        code: 2,
        says: &["no execution matches `nope`", "Hint:"],
        run: |sb| {
            let (cfg, _) = seeded(sb);
            let mut args = os(&["exec", "--resume", "nope", "-c"]);
            args.push(cfg.into_os_string());
            run_with(sb, args)
        },
    },
    Case {
        name: "a file that is not a database as mixseek.db (report)",
        code: 2,
        says: &["is not a mixseek database", "Hint:"],
        run: |sb| {
            std::fs::create_dir_all(sb.workspace()).expect("mkdir");
            std::fs::write(
                sb.workspace().join("mixseek.db"),
                "these are my notes, not a database\n".repeat(200),
            )
            .expect("write");
            run_with(sb, os(&["leaderboard"]))
        },
    },
    Case {
        name: "a file that is not a database as mixseek.db (exec)",
        code: 2,
        says: &["is not a mixseek database", "Hint:"],
        run: |sb| {
            let cfg = write_mock_competition(sb, &["a"]);
            std::fs::create_dir_all(sb.workspace()).expect("mkdir");
            std::fs::write(
                sb.workspace().join("mixseek.db"),
                "these are my notes, not a database\n".repeat(200),
            )
            .expect("write");
            let mut args = os(&["exec", "task", "-c"]);
            args.push(cfg.into_os_string());
            run_with(sb, args)
        },
    },
    // ── the environment stopped the command: 1 ──
    Case {
        name: "a database locked by another process (exec)",
        code: 1,
        says: &[
            "is in use by another process",
            "Hint: only one process can write",
        ],
        run: |sb| {
            let (cfg, _) = seeded(sb);
            let _held = hold_database(sb);
            let mut args = os(&["exec", "task", "-c"]);
            args.push(cfg.into_os_string());
            run_with(sb, args)
        },
    },
    Case {
        name: "a database locked by another process (report)",
        code: 1,
        says: &["is in use by another process", "Hint:"],
        run: |sb| {
            seeded(sb);
            let _held = hold_database(sb);
            run_with(sb, os(&["leaderboard"]))
        },
    },
    Case {
        name: "a full disk under a report's output",
        code: 1,
        says: &["No space left on device"],
        run: |sb| {
            let (_, id) = seeded(sb);
            run_with(sb, os(&["report", &id, "-o", "/dev/full"]))
        },
    },
    Case {
        name: "a full disk under an export's output",
        code: 1,
        says: &["No space left on device"],
        run: |sb| {
            let (_, id) = seeded(sb);
            run_with(sb, os(&["export", &id, "-f", "json", "-o", "/dev/full"]))
        },
    },
    Case {
        name: "a provider that cannot be reached",
        code: 1,
        says: &["transport", "Hint: is the server running"],
        run: |sb| {
            let cfg = sb.write(
                "cfg/llm.toml",
                "[orchestrator]\n\n[providers.dead]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmax_attempts = 1\n",
            );
            let mut args = os(&["llm", "dead:model", "hi", "-c"]);
            args.push(cfg.into_os_string());
            run_with(sb, args)
        },
    },
    Case {
        name: "a bug (a panic on the main thread)",
        code: 1,
        says: &["Error: internal error (a bug in mixseek, please report it)"],
        run: |sb| {
            sb.cmd()
                .env("MIXSEEK_TEST_PANIC", "main")
                .env_remove("RUST_BACKTRACE")
                .arg("executions")
                .output()
                .expect("run mixseek")
        },
    },
    // ── the original's rule for a run whose every team failed: 2 ──
    Case {
        name: "every team failing at run time",
        code: 2,
        says: &["\"status\": \"failed\"", "503"],
        run: |sb| {
            let cfg = write_mock_competition(sb, &["a", "b"]);
            let text = std::fs::read_to_string(&cfg).expect("read");
            let text = text.replace("max_rounds = 2", "max_rounds = 2\nmax_retries_per_team = 0")
                + "\n[providers.mock]\nmax_attempts = 1\n";
            std::fs::write(&cfg, text).expect("write");
            for t in ["a", "b"] {
                let team = sb.path().join(format!("cfg/team_{t}.toml"));
                let text = std::fs::read_to_string(&team).expect("read");
                std::fs::write(
                    &team,
                    text.replace(&format!("mock:leader-{t}"), "mock:leader-fail-100pct"),
                )
                .expect("write");
            }
            let mut args = os(&["-q", "exec", "task", "-f", "json", "-c"]);
            args.push(cfg.into_os_string());
            run_with(sb, args)
        },
    },
];

#[test]
fn bad_input_exits_2_and_runtime_failures_exit_1() {
    let mut wrong = Vec::new();
    for case in CASES {
        let sb = Sandbox::new();
        let out = (case.run)(&sb);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let text = format!("{stdout}\n{stderr}");
        let mut problems = Vec::new();
        if out.status.code() != Some(case.code) {
            problems.push(format!(
                "exit {:?}, expected {}",
                out.status.code(),
                case.code
            ));
        }
        for s in case.says {
            if !text.contains(s) {
                problems.push(format!("does not say `{s}`"));
            }
        }
        // never a panic's text, a backtrace, or a runtime failure dressed as a usage error
        for s in [
            "panicked at",
            "stack backtrace",
            "RUST_BACKTRACE=1` environment",
        ] {
            if text.contains(s) {
                problems.push(format!("says `{s}`"));
            }
        }
        if case.code == 1 && stderr.contains("Usage:") {
            problems.push("printed as a usage error".into());
        }
        if !problems.is_empty() {
            wrong.push(format!(
                "{}: {}\n{}",
                case.name,
                problems.join("; "),
                describe(&out)
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n\n"));
}

/// A database held by another process: the message says so, with the holder's PID, and
/// the hint says what to do; both for a run and for a report, and nothing is written.
#[test]
fn a_database_locked_by_another_process_exits_1_with_a_hint() {
    let sb = Sandbox::new();
    let (cfg, id) = seeded(&sb);
    let held = hold_database(&sb);
    let pid = std::process::id().to_string();
    let out = sb
        .cmd()
        .args(["exec", "another task", "-c"])
        .arg(&cfg)
        .output()
        .expect("run mixseek");
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("exec:\n{err}");
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        err.contains("is in use by another process") && err.contains(&format!("(PID {pid})")),
        "{err}"
    );
    assert!(
        err.contains("Hint: only one process can write to a workspace database at a time"),
        "{err}"
    );
    let out = sb
        .cmd()
        .args(["leaderboard", "-e", &id])
        .output()
        .expect("run mixseek");
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("leaderboard:\n{err}");
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(err.contains("is in use by another process"), "{err}");
    assert!(
        err.contains("Hint: DuckDB does not let other processes read"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "{}", describe(&out));
    drop(held);
    // once released, the workspace has only the first execution
    let out = sb
        .cmd()
        .args(["executions", "-f", "json"])
        .output()
        .expect("run mixseek");
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(rows.as_array().map(Vec::len), Some(1), "{rows}");
}

/// A panic on the main thread (test-only fault injection, see the CLI's panic_hook.rs): one
/// line saying it is a bug, with the message and the location, and exit 1; Rust's own
/// output and backtrace only when RUST_BACKTRACE asks for them.
#[test]
fn a_panic_on_the_main_thread_is_reported_as_a_bug_and_exits_1() {
    let sb = Sandbox::new();
    let out = sb
        .cmd()
        .env("MIXSEEK_TEST_PANIC", "main")
        .env_remove("RUST_BACKTRACE")
        .arg("executions")
        .output()
        .expect("run mixseek");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let line = err
        .lines()
        .find(|l| l.starts_with("Error: "))
        .unwrap_or_else(|| panic!("no error line:\n{err}"));
    assert!(
        line.starts_with(
            "Error: internal error (a bug in mixseek, please report it): injected fault (MIXSEEK_TEST_PANIC=main) at crates/mixseek-cli/src/panic_hook.rs:"
        ),
        "{line}"
    );
    assert!(
        !err.contains("panicked at") && !err.contains("stack backtrace"),
        "{err}"
    );
    assert!(
        err.contains("RUST_BACKTRACE=1"),
        "the hint says how to get one: {err}"
    );

    let out = sb
        .cmd()
        .env("MIXSEEK_TEST_PANIC", "main")
        .env("RUST_BACKTRACE", "1")
        .arg("executions")
        .output()
        .expect("run mixseek");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        err.contains("panicked at") && err.contains("stack backtrace"),
        "{err}"
    );
    assert!(
        err.contains("Error: internal error (a bug in mixseek"),
        "{err}"
    );
}

/// A panic inside one team's task (test-only fault injection): the orchestrator's hook,
/// chained after the CLI's, records where it happened; that team fails with an internal
/// error keeping its round 1, the other team finishes, the run exits 1 (partial), and the
/// process is not ended by the CLI's hook.
#[test]
fn a_panic_in_one_team_fails_that_team_and_the_run_goes_on() {
    let sb = Sandbox::new();
    let cfg = write_mock_competition(&sb, &["a", "b"]);
    let out = sb
        .cmd()
        .env("MIXSEEK_TEST_PANIC", "team:a")
        .env_remove("RUST_BACKTRACE")
        .args(["-q", "exec", "Write a haiku", "-f", "json", "-c"])
        .arg(&cfg)
        .output()
        .expect("run mixseek");
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json summary");
    assert_eq!(summary["status"], "partial_failure", "{summary}");
    let failed = &summary["failed_teams_info"][0];
    assert_eq!(failed["team_id"], "a", "{summary}");
    let message = failed["error_message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("internal error (a bug in mixseek, please report it): team `a`'s task panicked at crates/mixseek-cli/src/panic_hook.rs:")
            && message.contains("injected fault in team a"),
        "{message}"
    );
    let results = summary["team_results"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let best_round = |team: &str| {
        results
            .iter()
            .find(|r| r["team_id"] == team)
            .map(|r| r["round_number"].clone())
    };
    assert_eq!(best_round("a"), Some(serde_json::json!(1)), "{summary}");
    assert!(best_round("b").is_some(), "{summary}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("Error: internal error") && !err.contains("' panicked at"),
        "no report of a main-thread panic, no Rust panic text: {err}"
    );
}
