//! A full disk and a read-only file system in the middle of `mixseek exec`, through the real
//! binary: the run stops cleanly (exit 1, a message naming the problem, a hint to fix it and
//! to `--resume`, no panic, no backtrace), the rounds committed before are readable
//! (`leaderboard`, `show`), and once the disk is writable again `mixseek exec --resume ID`
//! completes the execution.
//!
//! The workspace is a real small file system where the machine allows mounting one (root):
//! a tmpfs that the test fills up, an ext4 image (loop device, `errors=remount-ro`) that the
//! kernel turns read-only under the running process (`trigger_fs_error`, as after a disk
//! error; `mount -o remount,ro` is refused while files are open for writing). Where it cannot
//! mount, the test falls back to the store's test-only injected I/O error
//! (`MIXSEEK_TEST_STORE_FAULT`, debug builds) rather than passing without a test; the
//! `…_injected` tests run that path everywhere.
//!
//! The timing is deterministic: the fake leader server holds round 2's leader call until the
//! test has broken the disk, after round 1 and its decision are committed (the progress file
//! shows round 2 started, which the bus writes only after the store committed round 1's
//! decision). Round 2's answer is 256 kB of text, so no slack at the end of a file can take it.

use mixseek_testkit::{HttpServer, Reply, Wire, respond};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use workspace_tests::{Sandbox, describe, mixseek_bin};

const ENOSPC: i32 = 28;
const EROFS: i32 = 30;

/// What goes wrong under the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    DiskFull,
    ReadOnly,
}

impl Fault {
    /// The operating system's words for it.
    fn os_text(self) -> &'static str {
        match self {
            Fault::DiskFull => "No space left on device",
            Fault::ReadOnly => "Read-only file system",
        }
    }
}

/// A file system mounted on the workspace, unmounted when dropped.
struct Mounted {
    dir: PathBuf,
    /// The ext4 image (loop mount), for a tmpfs `None`.
    image: Option<PathBuf>,
}

fn run_quietly(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Mounted {
    fn tmpfs(dir: &Path, size: &str) -> Result<Self, String> {
        run_quietly(
            Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
                .arg(dir),
        )?;
        Ok(Self {
            dir: dir.to_path_buf(),
            image: None,
        })
    }

    /// An ext4 file system of `mb` MB in `image`, mounted with `errors=remount-ro`.
    fn ext4(dir: &Path, image: &Path, mb: u64) -> Result<Self, String> {
        let file = std::fs::File::create(image).map_err(|e| e.to_string())?;
        file.set_len(mb << 20).map_err(|e| e.to_string())?;
        run_quietly(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(image))?;
        let m = Self {
            dir: dir.to_path_buf(),
            image: Some(image.to_path_buf()),
        };
        m.mount_image()?;
        Ok(m)
    }

    fn mount_image(&self) -> Result<(), String> {
        let image = self.image.as_deref().ok_or("not an image")?;
        run_quietly(
            Command::new("mount")
                .args(["-o", "loop,errors=remount-ro"])
                .arg(image)
                .arg(&self.dir),
        )
    }

    /// Fills the file system until the kernel says ENOSPC; returns the filler file.
    fn fill(&self) -> PathBuf {
        let path = self.dir.join("filler");
        let mut f = std::fs::File::create(&path).expect("create the filler");
        let chunk = vec![0xA5u8; 1 << 20];
        for size in [1 << 20, 1 << 16, 1 << 12, 1 << 9, 1] {
            loop {
                match f.write_all(&chunk[..size]) {
                    Ok(()) => {}
                    Err(e) if e.raw_os_error() == Some(ENOSPC) => break,
                    Err(e) => panic!("filling {}: {e}", path.display()),
                }
            }
        }
        let probe = std::fs::write(self.dir.join("probe"), vec![1u8; 8192]);
        assert_eq!(
            probe.err().and_then(|e| e.raw_os_error()),
            Some(ENOSPC),
            "the file system is full"
        );
        path
    }

    /// Has the kernel turn the ext4 file system read-only, as after a disk error, while the
    /// run holds its files open for writing.
    fn make_read_only(&self) {
        let out = Command::new("findmnt")
            .args(["-n", "-o", "SOURCE"])
            .arg(&self.dir)
            .output()
            .expect("findmnt");
        let source = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let device = Path::new(&source)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| panic!("no device for {}: {source}", self.dir.display()));
        std::fs::write(
            format!("/sys/fs/ext4/{device}/trigger_fs_error"),
            "mixseek test: the disk failed",
        )
        .expect("trigger an ext4 error");
        let probe = std::fs::write(self.dir.join("probe"), "x");
        assert_eq!(
            probe.err().and_then(|e| e.raw_os_error()),
            Some(EROFS),
            "the file system is read-only"
        );
    }

    /// The ext4 file system writable again: unmounted, checked, mounted.
    fn repair(&self) {
        run_quietly(Command::new("umount").arg(&self.dir)).expect("umount");
        let image = self.image.as_deref().expect("an image");
        // exit 1 means "errors corrected"
        let status = Command::new("e2fsck")
            .args(["-f", "-y"])
            .arg(image)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("e2fsck");
        assert!(matches!(status.code(), Some(0 | 1)), "e2fsck: {status}");
        self.mount_image().expect("mount again");
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(&self.dir)
            .stderr(Stdio::null())
            .status();
    }
}

/// How the test breaks the workspace.
enum Medium {
    Real(Mounted),
    /// `MIXSEEK_TEST_STORE_FAULT`: writes fail while `marker` exists.
    Injected {
        marker: PathBuf,
    },
}

impl Medium {
    /// A real file system for `fault` on `ws`, else (`real == false`, or mounting is not
    /// allowed here) the injected fault.
    fn new(sb: &Sandbox, fault: Fault, real: bool) -> Self {
        let ws = sb.workspace();
        std::fs::create_dir_all(&ws).expect("mkdir");
        let injected = Medium::Injected {
            marker: sb.path().join("fault-marker"),
        };
        if !real {
            return injected;
        }
        let mounted = match fault {
            Fault::DiskFull => Mounted::tmpfs(&ws, "64M"),
            Fault::ReadOnly => Mounted::ext4(&ws, &sb.path().join("ws.img"), 64),
        };
        match mounted {
            Ok(m) => Medium::Real(m),
            Err(why) => {
                eprintln!(
                    "cannot mount a file system here ({why}): falling back to the injected I/O error"
                );
                injected
            }
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Medium::Real(m) if m.image.is_some() => "ext4 on a loop device",
            Medium::Real(_) => "tmpfs",
            Medium::Injected { .. } => "injected I/O error",
        }
    }

    /// The variable that arms the injected fault.
    fn env(&self, fault: Fault) -> Option<(String, String)> {
        match self {
            Medium::Real(_) => None,
            Medium::Injected { marker } => {
                let kind = match fault {
                    Fault::DiskFull => "enospc",
                    Fault::ReadOnly => "erofs",
                };
                Some((
                    "MIXSEEK_TEST_STORE_FAULT".to_string(),
                    format!("{kind}:{}", marker.display()),
                ))
            }
        }
    }

    fn break_it(&self, fault: Fault) -> Option<PathBuf> {
        match (self, fault) {
            (Medium::Real(m), Fault::DiskFull) => Some(m.fill()),
            (Medium::Real(m), Fault::ReadOnly) => {
                m.make_read_only();
                None
            }
            (Medium::Injected { marker }, _) => {
                std::fs::write(marker, "").expect("arm the fault");
                None
            }
        }
    }

    fn fix_it(&self, filler: Option<PathBuf>) {
        match self {
            Medium::Real(m) => match filler {
                Some(f) => std::fs::remove_file(f).expect("free the space"),
                None => m.repair(),
            },
            Medium::Injected { marker } => std::fs::remove_file(marker).expect("disarm"),
        }
    }
}

/// A fake OpenAI-compatible leader server: request `held` waits until [`Leader::release`]
/// and then answers with a big text; the others answer at once.
struct Leader {
    server: HttpServer,
    requests: Arc<AtomicUsize>,
    gate: Arc<Semaphore>,
}

impl Leader {
    async fn start(held: usize) -> Self {
        let requests = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(Semaphore::new(0));
        let (r, g) = (requests.clone(), gate.clone());
        let server = HttpServer::start(0, move |req| {
            let (r, g) = (r.clone(), g.clone());
            async move {
                let n = r.fetch_add(1, Ordering::SeqCst);
                let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
                let reply = if n == held {
                    if let Ok(permit) = g.acquire().await {
                        permit.forget();
                    }
                    Reply::text(big_answer())
                } else {
                    Reply::Auto
                };
                respond(Wire::OpenAi, reply, &body, n, true).await
            }
        })
        .await
        .expect("fake leader server");
        Self {
            server,
            requests,
            gate,
        }
    }

    fn url(&self) -> String {
        format!("{}/v1", self.server.uri())
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    fn release(&self) {
        self.gate.add_permits(1_000);
    }
}

/// 256 kB of letters that do not compress.
fn big_answer() -> String {
    let mut x: u32 = 0x9E37_79B9;
    (0..256 * 1024)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if i % 80 == 79 {
                '\n'
            } else {
                char::from(b'a' + (x % 26) as u8)
            }
        })
        .collect()
}

/// One team `solo` (leader on the fake server) × 3 rounds; evaluator and judgment on `mock:`.
/// The configuration lives outside the workspace.
fn competition(sb: &Sandbox, leader_url: &str) -> PathBuf {
    sb.write(
        "cfg/team_solo.toml",
        "[team]\nteam_id = \"solo\"\nteam_name = \"Team solo\"\n[team.leader]\nmodel = \"fake:gpt\"\n",
    );
    sb.write(
        "cfg/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\n[[metrics]]\nname = \"Relevance\"\n",
    );
    sb.write("cfg/judgment.toml", "model = \"mock:judge-continue\"\n");
    sb.write(
        "cfg/orchestrator.toml",
        &format!(
            "[orchestrator]\nevaluator_config = \"evaluator.toml\"\njudgment_config = \"judgment.toml\"\n\
             min_rounds = 3\nmax_rounds = 3\ntimeout_per_team_seconds = 300\n\n\
             [[orchestrator.teams]]\nconfig = \"team_solo.toml\"\n\n\
             [providers.fake]\nkind = \"openai-compatible\"\nbase_url = \"{leader_url}\"\n\
             backoff_initial_seconds = 0.01\nbackoff_max_seconds = 0.05\n"
        ),
    )
}

/// `mixseek -w WS ARGS…` with a clean environment; the log file stays on (it lives on the
/// broken file system too).
fn mixseek(sb: &Sandbox) -> Command {
    let mut c = Command::new(mixseek_bin());
    for (k, _) in std::env::vars() {
        if k.starts_with("MIXSEEK_") || k.ends_with("_API_KEY") || k == "RUST_BACKTRACE" {
            c.env_remove(k);
        }
    }
    c.current_dir(sb.path()).arg("-w").arg(sb.workspace());
    c
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run mixseek"))
        .await
        .expect("join")
}

/// The running execution's id and the round its team `solo` is at, from its progress file.
fn progress(ws: &Path) -> Option<(String, u64)> {
    let dir = std::fs::read_dir(ws.join("logs")).ok()?;
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".solo.progress.json") {
            let text = std::fs::read_to_string(entry.path()).ok()?;
            let v: Value = serde_json::from_str(&text).ok()?;
            return Some((
                v["execution_id"].as_str()?.to_string(),
                v["current_round"].as_u64()?,
            ));
        }
    }
    None
}

/// The stored rounds of team `solo`, through `mixseek history -f json`.
async fn stored_rounds(sb: &Sandbox, id: &str) -> Vec<u64> {
    let mut cmd = mixseek(sb);
    cmd.args(["history", "-e", id, "--team", "solo", "-f", "json"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let rows: Value = serde_json::from_slice(&out.stdout).expect("json history");
    let mut rounds: Vec<u64> = rows
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| !r["score"].is_null())
        .filter_map(|r| r["round_number"].as_u64())
        .collect();
    rounds.sort_unstable();
    rounds
}

async fn scenario(fault: Fault, real: bool) {
    let sb = Sandbox::new();
    let medium = Medium::new(&sb, fault, real);
    // round 2's leader call (the second request) waits for the test
    let leader = Leader::start(1).await;
    let cfg = competition(&sb, &leader.url());

    let mut cmd = mixseek(&sb);
    cmd.args([
        "exec",
        "Write a short poem about rivers",
        "-f",
        "json",
        "-c",
    ])
    .arg(&cfg)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    if let Some((k, v)) = medium.env(fault) {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn mixseek");

    // round 1 and its decision are committed, round 2's leader call is waiting
    let deadline = Instant::now() + Duration::from_secs(120);
    let id = loop {
        if let Some((id, round)) = progress(&sb.workspace())
            && round == 2
            && leader.requests() >= 2
        {
            break id;
        }
        assert!(
            child.try_wait().expect("wait").is_none(),
            "mixseek exited before round 2"
        );
        assert!(Instant::now() < deadline, "round 2 never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let filler = medium.break_it(fault);
    leader.release();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().expect("wait"))
        .await
        .expect("join");

    // a clean failure: exit 1, what happened, what to do, no panic
    let err = String::from_utf8_lossy(&out.stderr);
    let report: Vec<&str> = err
        .lines()
        .skip_while(|l| !l.starts_with("Error: "))
        .collect();
    eprintln!("{fault:?} ({}):\n{}", medium.name(), report.join("\n"));
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        err.contains(&format!(
            "Error: execution {id} stopped: cannot record round 2 of team `solo`"
        )),
        "{}",
        describe(&out)
    );
    assert!(err.contains(fault.os_text()), "{}", describe(&out));
    assert!(
        err.contains("Hint: check that the disk has free space and that the workspace folder and mixseek.db are writable"),
        "{}",
        describe(&out)
    );
    assert!(
        err.contains(&format!("exec --resume {id}")),
        "the hint names the resume command: {}",
        describe(&out)
    );
    for bad in ["panicked", "stack backtrace", "internal error"] {
        assert!(!err.contains(bad), "`{bad}` in:\n{}", describe(&out));
    }
    assert!(out.stdout.is_empty(), "no summary: {}", describe(&out));

    // the committed round is readable while the disk is still broken
    let mut cmd = mixseek(&sb);
    cmd.args(["leaderboard", "-e", &id, "-f", "json"]);
    let board = output(cmd).await;
    assert_eq!(board.status.code(), Some(0), "{}", describe(&board));
    let rows: Value = serde_json::from_slice(&board.stdout).expect("json leaderboard");
    assert_eq!(rows[0]["team_id"], "solo", "{rows}");
    assert_eq!(rows[0]["round_number"], 1, "{rows}");
    let mut cmd = mixseek(&sb);
    cmd.args(["show", &id, "--team", "solo", "--round", "1"]);
    let shown = output(cmd).await;
    assert_eq!(shown.status.code(), Some(0), "{}", describe(&shown));
    assert_eq!(stored_rounds(&sb, &id).await, vec![1]);

    // once the disk is writable again, --resume completes the execution
    medium.fix_it(filler);
    let mut cmd = mixseek(&sb);
    cmd.args(["-q", "exec", "--resume", &id, "-f", "json", "-c"])
        .arg(&cfg);
    let resumed = output(cmd).await;
    assert_eq!(resumed.status.code(), Some(0), "{}", describe(&resumed));
    let summary: Value = serde_json::from_slice(&resumed.stdout).expect("json summary");
    assert_eq!(summary["execution_id"], id.as_str());
    assert_eq!(summary["status"], "completed", "{summary}");
    assert_eq!(stored_rounds(&sb, &id).await, vec![1, 2, 3]);
    drop(medium);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_during_a_run_stops_it_cleanly_and_resume_completes_it() {
    scenario(Fault::DiskFull, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_turning_read_only_during_a_run_stops_it_cleanly_and_keeps_the_data() {
    scenario(Fault::ReadOnly, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_injected_stops_the_run_cleanly_and_resume_completes_it() {
    scenario(Fault::DiskFull, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_workspace_injected_stops_the_run_cleanly_and_resume_completes_it() {
    scenario(Fault::ReadOnly, false).await;
}
