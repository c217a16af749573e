//! Files that are not what `mixseek.db` should be give clear errors, never a panic: another
//! program's DuckDB file, damaged or foreign bytes, an empty file, a directory, a file another
//! process holds, a disk that fills up during a write. Every error has a class
//! ([`ErrorClass`]) the CLI maps to an exit code and a hint. (Older and newer schema versions:
//! `migration.rs`.)

use crate::common;

use common::*;
use mixseek_core::Event;
use mixseek_core::PiiMasker;
use mixseek_store::{ErrorClass, LeaderboardScope, Store, StoreError};
use proptest::prelude::*;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Every read a report command makes, on whatever opened: each may fail, none may panic.
fn read_everything(store: &Store) {
    let _ = store.executions(None);
    let _ = store.leaderboard(&LeaderboardScope::All);
    let _ = store.leaderboard(&LeaderboardScope::Latest);
    let _ = store.ranking(EXEC);
    let _ = store.history(EXEC, None);
    let _ = store.round_detail(EXEC, "alpha", 1);
    let _ = store.team_rounds(EXEC, "alpha");
    let _ = store.execution_overview(EXEC);
    let _ = store.arenas(EXEC);
    let _ = store.latest_arena(EXEC);
}

/// Opens `path` both ways and reads what opens; returns the errors (each with a class and a
/// message naming the file).
fn open_both(path: &Path) -> Vec<StoreError> {
    let mut errors = Vec::new();
    for result in [Store::open_read_only(path), Store::open(path)] {
        match result {
            Ok(store) => read_everything(&store),
            Err(e) => {
                let _ = (e.class(), e.hint());
                errors.push(e);
            }
        }
    }
    errors
}

/// A valid database with a finished execution, closed (everything in the file, no log).
fn valid_database() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        {
            let (_store, writer) = open_with_writer(dir.path());
            rt.block_on(populate(&writer));
        }
        std::fs::read(dir.path().join("mixseek.db")).expect("the file")
    })
}

fn write_file(dir: &Path, bytes: &[u8]) -> PathBuf {
    let path = dir.join("mixseek.db");
    std::fs::write(&path, bytes).expect("write");
    path
}

#[test]
fn the_valid_fixture_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_file(dir.path(), valid_database());
    let store = Store::open_read_only(&path).expect("valid");
    assert!(!store.executions(None).expect("executions").is_empty());
}

#[test]
fn another_programs_duckdb_file_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    raw(&path)
        .execute_batch(
            "CREATE TABLE sales (id INTEGER, amount DOUBLE); INSERT INTO sales VALUES (1, 2.5);",
        )
        .expect("another program's database");
    let errors = open_both(&path);
    assert_eq!(errors.len(), 2);
    for err in &errors {
        assert!(matches!(err, StoreError::ForeignSchema { .. }), "{err}");
        assert_eq!(err.class(), ErrorClass::BadInput);
        let text = err.to_string();
        assert!(
            text.contains("mixseek.db") && text.contains("sales"),
            "{text}"
        );
        assert!(
            err.hint().unwrap_or_default().contains("workspace"),
            "{err:?}"
        );
    }
    // nothing of ours was added, and no backup made
    let tables: i64 = raw(&path)
        .query_row("SELECT count(*) FROM information_schema.tables", [], |r| {
            r.get(0)
        })
        .expect("tables");
    assert_eq!(tables, 1);
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1);
}

#[test]
fn a_round_history_table_of_other_columns_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    raw(&path)
        .execute_batch("CREATE TABLE round_history (id INTEGER, note VARCHAR)")
        .expect("foreign round_history");
    for err in open_both(&path) {
        assert!(matches!(err, StoreError::ForeignSchema { .. }), "{err}");
        assert!(
            err.to_string().contains("round_history") && err.to_string().contains("execution_id"),
            "{err}"
        );
    }
    // one of our tables missing from a file of our version
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_file(dir.path(), valid_database());
    raw(&path)
        .execute_batch("DROP TABLE round_status")
        .expect("drop");
    for err in open_both(&path) {
        assert!(matches!(err, StoreError::ForeignSchema { .. }), "{err}");
        assert!(err.to_string().contains("round_status"), "{err}");
    }
}

#[test]
fn bytes_that_are_not_a_database_are_refused() {
    let cases: [(&str, Vec<u8>); 4] = [
        ("text", b"execution_id,team_id\ne,t\n".to_vec()),
        (
            "random bytes",
            (0..20_000u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect(),
        ),
        ("empty", Vec::new()),
        // DuckDB reads the header and the catalogue when it opens a file, the tables' blocks
        // later: cut inside the first 256 kB block, so the catalogue is surely missing (where
        // the last checkpoint put it decides whether a file cut at a third still opens; its
        // reads then fail with the missing blocks)
        (
            "truncated",
            valid_database()[..valid_database().len().min(128 * 1024)].to_vec(),
        ),
    ];
    for (what, bytes) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_file(dir.path(), &bytes);
        let errors = open_both(&path);
        assert_eq!(errors.len(), 2, "{what}: both opens fail");
        for err in errors {
            assert_eq!(err.class(), ErrorClass::BadInput, "{what}: {err}");
            assert!(
                matches!(err, StoreError::NotADatabase { .. }),
                "{what}: {err}"
            );
            let text = err.to_string();
            assert!(
                text.contains("mixseek.db") && text.contains("not a mixseek database"),
                "{what}: {text}"
            );
            if what == "empty" {
                assert!(text.contains("empty (0 bytes)"), "{text}");
            }
            assert!(
                err.hint().unwrap_or_default().contains("move"),
                "{what}: {err:?}"
            );
        }
        // the file is left as it was
        assert_eq!(std::fs::read(&path).expect("file"), bytes, "{what}");
    }
}

#[test]
fn a_directory_where_the_file_should_be_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    std::fs::create_dir(&path).expect("directory");
    let errors = open_both(&path);
    assert_eq!(errors.len(), 2);
    for err in errors {
        assert!(matches!(err, StoreError::NotAFile { .. }), "{err}");
        assert_eq!(err.class(), ErrorClass::BadInput);
        assert!(err.to_string().contains("is a directory"), "{err}");
        assert!(err.hint().is_some());
    }
}

const HOLDER_ENV: &str = "MIXSEEK_STORE_HOLDER_PATH";

/// Not a test on its own: the body of the process started by the test below. It opens the
/// database for writing, says so, and holds it until its stdin closes.
#[test]
#[ignore = "helper: runs only as the child process of a_file_held_by_another_process_fails_fast"]
fn hold_the_database() {
    let Ok(path) = std::env::var(HOLDER_ENV) else {
        return;
    };
    let store = Store::open(&path).expect("holder open");
    println!("holding");
    std::io::stdout().flush().expect("flush");
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    drop(store);
}

#[test]
fn a_file_held_by_another_process_fails_fast_naming_the_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_file(dir.path(), valid_database());
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--ignored",
            "--exact",
            test_path(module_path!(), "hold_the_database").as_str(),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HOLDER_ENV, &path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the holder");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines().map_while(Result::ok);
    let holding = lines.by_ref().any(|l| l.contains("holding"));
    assert!(holding, "the holder did not open the file");
    let pid = child.id();
    for (err, write) in [
        (Store::open(&path).expect_err("held"), true),
        (Store::open_read_only(&path).expect_err("held"), false),
    ] {
        assert!(
            matches!(err, StoreError::Locked { pid: Some(p), write: w, .. } if p == pid && w == write),
            "{err:?}"
        );
        assert_eq!(err.class(), ErrorClass::Busy);
        let text = err.to_string();
        assert!(
            text.contains("mixseek.db")
                && text.contains("in use by another process")
                && text.contains(&format!("(PID {pid})")),
            "{text}"
        );
        assert!(err.hint().is_some_and(|h| h.contains("wait")), "{err:?}");
    }
    // released: it opens again
    drop(child.stdin.take());
    // (read to the end: the child's test harness still prints its result)
    lines.for_each(drop);
    let status = child.wait().expect("holder ends");
    assert!(status.success());
    let store = Store::open(&path).expect("free again");
    read_everything(&store);
}

/// A round of the test execution.
fn event(n: u32) -> Event {
    Event::Evaluated(Box::new(round(
        EXEC,
        "alpha",
        "Alpha",
        n,
        f64::from(n),
        "an answer that takes some room in the log",
    )))
}

/// Writes rounds 1..=3, then points DuckDB's write-ahead log at `/dev/full` (every write to
/// it fails with "No space left on device", as on a full disk) and writes round 4: the write
/// fails with an I/O-class error, and rounds 1..=3 are there when the file is opened again.
#[tokio::test]
async fn a_write_on_a_full_disk_fails_clearly_and_keeps_the_committed_rounds() {
    if !Path::new("/dev/full").exists() {
        eprintln!("SKIPPED: no /dev/full on this system to inject the disk-full error");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixseek.db");
    {
        let (_store, writer) = open_with_writer(dir.path());
        for n in 1..=3 {
            writer.write(&event(n)).await.expect("committed");
        }
    }
    let wal = dir.path().join("mixseek.db.wal");
    if wal.exists() {
        let len = std::fs::metadata(&wal).expect("log").len();
        assert_eq!(len, 0, "closing folded the log into the file");
        std::fs::remove_file(&wal).expect("empty log");
    }
    let store = Store::open(&path).expect("open");
    let writer = store.writer(PiiMasker::disabled()).expect("writer");
    std::os::unix::fs::symlink("/dev/full", &wal).expect("log on a full device");
    let err = writer.write(&event(4)).await.expect_err("the disk is full");
    assert_eq!(err.class(), ErrorClass::Io, "{err}");
    assert!(err.to_string().contains("No space left on device"), "{err}");
    assert!(
        err.hint().is_some_and(|h| h.contains("free space")),
        "{err:?}"
    );
    drop((writer, store));
    std::fs::remove_file(&wal).expect("the disk has room again");
    let store = Store::open_read_only(&path).expect("reopen");
    let rounds = store.team_rounds(EXEC, "alpha").expect("rounds");
    assert_eq!(
        rounds
            .iter()
            .map(|r| r.state.round_number)
            .collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
}

/// A tmpfs of `size`, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(dir.to_path_buf()))
    }

    fn remount_read_only(&self) -> bool {
        Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// The same on a real small file system (a 4 MB tmpfs), where mounting is allowed (root);
/// elsewhere the test says it was skipped. Then the file system is made read-only.
#[tokio::test]
async fn a_real_full_file_system_fails_the_write_and_keeps_the_committed_rounds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(fs) = Tmpfs::mount(dir.path(), "4M") else {
        eprintln!(
            "SKIPPED: cannot mount a tmpfs here (needs root); the /dev/full test covers a full disk"
        );
        return;
    };
    let path = dir.path().join("mixseek.db");
    let mut committed = 0u32;
    let failure = {
        let (_store, writer) = open_with_writer(dir.path());
        let mut failure = None;
        for n in 1..=2_000u32 {
            let mut r = round(EXEC, "alpha", "Alpha", n, 1.0, "answer");
            // incompressible text fills the 4 MB quickly
            r.prompt = (0..2_000u32)
                .map(|i| {
                    char::from(
                        b'a' + ((i.wrapping_mul(n).wrapping_mul(2_654_435_761) >> 7) % 26) as u8,
                    )
                })
                .collect();
            match writer.write(&Event::Evaluated(Box::new(r))).await {
                Ok(()) => committed = n,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        failure
    };
    let err = failure.expect("4 MB fill up");
    assert!(committed > 0);
    assert_eq!(err.class(), ErrorClass::Io, "{err}");
    assert!(err.to_string().contains("No space left on device"), "{err}");
    // every committed round is readable (from the write-ahead log; the failed write's
    // partial entry at its end is not replayed)
    {
        let store = Store::open_read_only(&path).expect("reopen");
        let stored = store.team_rounds(EXEC, "alpha").expect("rounds").len();
        assert_eq!(stored, committed as usize);
    }
    // a read-only file system: writing is refused with an I/O-class error
    if fs.remount_read_only() {
        let err = Store::open(&path).expect_err("read-only file system");
        assert_eq!(err.class(), ErrorClass::Io, "{err}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random bytes written into a valid file, or the file cut short, at random places:
    /// opening and reading never panics (an error, or what still reads).
    #[test]
    fn damaged_files_never_panic(
        writes in proptest::collection::vec((any::<prop::sample::Index>(), proptest::collection::vec(any::<u8>(), 1..64)), 0..6),
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let mut bytes = valid_database().to_vec();
        for (at, data) in &writes {
            let at = at.index(bytes.len());
            let end = (at + data.len()).min(bytes.len());
            bytes[at..end].copy_from_slice(&data[..end - at]);
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len()));
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_file(dir.path(), &bytes);
        for err in open_both(&path) {
            let text = err.to_string();
            prop_assert!(text.contains("mixseek.db") || !text.is_empty());
        }
    }
}
