//! `mixseek … | head -1`: a command whose reader closes its standard output stops quietly
//! (exit 0, nothing on stderr), whichever command it is and however it prints, instead of
//! panicking with "failed printing to stdout: Broken pipe".

use std::process::Stdio;
use workspace_tests::{Sandbox, describe, finished_mock_run};

/// Runs `args` with stdout a pipe whose read end is closed before the command prints.
fn with_closed_stdout(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let mut child = sb
        .process()
        .arg("-w")
        .arg(sb.workspace())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mixseek");
    // The command needs milliseconds to start and read the database: its first write finds
    // the pipe without a reader.
    drop(child.stdout.take());
    child.wait_with_output().expect("wait for mixseek")
}

#[test]
fn every_command_ends_quietly_when_its_output_is_closed() {
    let sb = Sandbox::new();
    let id = finished_mock_run(&sb, &["a", "b"]);
    let log = sb.workspace().join("logs/mixseek.log");
    let commands: &[&[&str]] = &[
        &["executions"],
        &["leaderboard"],
        &["leaderboard", "--all", "-f", "json"],
        &["history"],
        &["show", &id],
        &["report", &id, "-o", "-"],
        &["experiment", "list"],
        &["db", "status"],
        &["config", "show", "-c", "cfg/orchestrator.toml"],
        &["completions", "bash"],
        &["--help"],
    ];
    for args in commands {
        let out = with_closed_stdout(&sb, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked")
                && !stderr.contains("Broken pipe")
                && !stderr.contains("internal error"),
            "{args:?}: {}",
            describe(&out)
        );
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", describe(&out));
    }
    // The audit log says why the commands stopped (so the pipe was closed before they wrote).
    let text = std::fs::read_to_string(&log).expect("the log file");
    for name in ["executions", "leaderboard", "show", "report", "completions"] {
        assert!(
            text.contains(&format!(
                "mixseek {name} stopped: its output was closed by the reader (exit 0)"
            )),
            "{name}: {text}"
        );
    }
    assert!(!text.contains("internal error"), "{text}");
}
