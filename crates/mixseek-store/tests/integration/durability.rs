//! A child process writing rounds is killed (SIGKILL) mid-run: every round it saw committed
//! is readable afterwards, and the file opens cleanly (WAL replay). Also: a second process
//! cannot write while the child holds the file, and the error names the file.

use crate::common;

use common::*;
use mixseek_core::Event;
use mixseek_store::{Store, StoreError};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const CHILD_ENV: &str = "MIXSEEK_STORE_DURABILITY_CHILD";

/// Not a test on its own: the body of the child process started by the test below.
#[tokio::test]
#[ignore = "helper: runs only as the child process of killed_writer_keeps_every_committed_round"]
async fn child_writer() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let store = Store::open(&path).expect("child open");
    let writer = store
        .writer_with_clock(mixseek_core::PiiMasker::disabled(), fixed_clock)
        .expect("writer");
    for n in 1..=100_000u32 {
        let team = format!("team-{:02}", n % 7);
        let r = round(
            EXEC,
            &team,
            "T",
            n,
            f64::from(n % 100),
            "a submission that is long enough to matter",
        );
        writer
            .write(&Event::Evaluated(Box::new(r)))
            .await
            .expect("write");
        // only now is the round committed
        println!("committed {team} {n}");
    }
}

#[test]
fn killed_writer_keeps_every_committed_round() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--ignored",
            "--exact",
            test_path(module_path!(), "child_writer").as_str(),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("stdout");
    let mut committed: Vec<(String, u32)> = Vec::new();
    let mut locked_checked = false;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("line");
        let Some(rest) = line.strip_prefix("committed ") else {
            continue;
        };
        let mut parts = rest.split(' ');
        let team = parts.next().unwrap_or_default().to_string();
        let n: u32 = parts
            .next()
            .and_then(|s| s.parse().ok())
            .expect("round number");
        committed.push((team, n));
        if !locked_checked && committed.len() == 20 {
            // another process (this one) cannot write while the child holds the file
            let err = Store::open(&path).expect_err("locked");
            assert!(
                matches!(err, StoreError::Locked { write: true, .. }),
                "{err}"
            );
            assert!(err.to_string().contains("mixseek.db"), "{err}");
            assert!(err.hint().unwrap_or_default().contains("only one process"));
            // nor read: DuckDB lets a file be opened by one writing process or by readers
            // only; the report commands get a message naming the file and what to do
            let err = Store::open_read_only(&path).expect_err("locked for readers too");
            assert!(
                matches!(err, StoreError::Locked { write: false, .. }),
                "{err}"
            );
            assert!(err.to_string().contains("mixseek.db"), "{err}");
            let hint = err.hint().unwrap_or_default();
            assert!(hint.contains("finish"), "{hint}");
            locked_checked = true;
        }
        if committed.len() >= 300 {
            child.kill().expect("kill");
            break;
        }
    }
    let _ = child.wait();
    assert!(locked_checked);
    assert!(
        committed.len() >= 300,
        "the child committed {} rounds",
        committed.len()
    );

    let store = Store::open_read_only(&path).expect("reopen after the kill");
    let stored = store.count_rows("leader_board").expect("count");
    assert!(
        stored >= committed.len() as u64,
        "{stored} stored < {} committed",
        committed.len()
    );
    for (team, n) in &committed {
        let d = store
            .round_detail(EXEC, team, *n)
            .expect("read")
            .unwrap_or_else(|| panic!("round {n} of {team} lost"));
        assert_eq!(
            d.submission_content,
            "a submission that is long enough to matter"
        );
    }
    // every stored round is complete: its three rows exist together
    assert_eq!(store.count_rows("round_history").expect("count"), stored);
    assert_eq!(store.count_rows("round_status").expect("count"), stored);
    assert_unique_keys(&store);
}
