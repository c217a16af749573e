//! Smoke tests of the built `mixseek` binary.
//!
//! Besides checking the binary's basics, this file makes `cargo test --workspace` build
//! `target/debug/mixseek` (cargo builds a package's binaries only for its own integration
//! tests); the end-to-end suites in `workspace-tests/` drive that binary.

use std::process::Command;

fn mixseek() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mixseek"));
    c.env_remove("MIXSEEK_WORKSPACE");
    c
}

#[test]
fn version_is_printed_in_the_originals_format() {
    let out = mixseek().arg("--version").output().expect("run mixseek");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.trim(),
        format!("mixseek version {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn an_unknown_command_is_a_usage_error_with_exit_2() {
    let out = mixseek().arg("exce").output().expect("run mixseek");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("exec"), "suggests the nearest command: {err}");
}
