//! Running an external program once: JSON on stdin, stdout and stderr read with a cap, a time
//! limit, and the whole process group killed when the run is abandoned.
//!
//! * stdin: the payload is written while stdout and stderr are read, so a program that does
//!   not read its input cannot block us; a program that closes stdin early (EPIPE on our
//!   write) is not an error.
//! * stdout: read up to a cap; a program printing more is stopped at once
//!   ([`RunError::StdoutTooLarge`]), so 200 MB of output never reaches memory.
//! * stderr: only its last bytes are kept (it is read to the end, so the program never
//!   blocks on a full pipe).
//! * On Unix the program runs in its own process group; on a timeout, an output overflow or
//!   when the caller's future is dropped, the whole group is killed, so processes it started
//!   (`sleep`, a Python worker, …) do not outlive it.
//!
//! Used by command members (`mixseek-agents`), command metrics (`mixseek-evaluator`) and hook
//! commands (`mixseek-orchestrator`). [`Session`] is the same for a program spoken to in
//! turns (one line out, then its input, then one line out): workflow function executors.

#![warn(missing_docs, unreachable_pub)]

mod session;
pub use session::Session;

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// One run of a program.
#[derive(Debug, Clone, Copy)]
pub struct Spec<'a> {
    /// The program: a path, or a bare name looked up on `PATH`.
    pub program: &'a Path,
    /// Its arguments, passed as they are (no shell).
    pub args: &'a [String],
    /// Working directory; `None`: ours.
    pub cwd: Option<&'a Path>,
    /// Written to the program's stdin, which is then closed.
    pub input: &'a [u8],
    /// How long the whole run may take before the process group is killed.
    pub timeout: Duration,
    /// The most bytes read from stdout.
    pub max_stdout: usize,
    /// How many of stderr's last bytes are kept.
    pub stderr_kept: usize,
}

/// A program that ran to its end.
#[derive(Debug)]
pub struct Finished {
    /// How it ended (see [`describe_status`] for a failure).
    pub status: ExitStatus,
    /// Everything it printed on stdout (at most `max_stdout` bytes).
    pub stdout: Vec<u8>,
    /// The end of what it printed on stderr.
    pub stderr: StderrTail,
}

/// The last bytes a program printed on stderr.
#[derive(Debug, Default)]
pub struct StderrTail {
    kept: Vec<u8>,
    total: u64,
}

impl StderrTail {
    /// The kept bytes as text (invalid UTF-8 replaced by U+FFFD), trimmed, at most `chars`
    /// characters from the end; `…` marks a cut.
    pub fn text(&self, chars: usize) -> String {
        let cut = self.total > self.kept.len() as u64;
        // A cut may fall inside a character: start at the next whole one.
        let start = if cut {
            self.kept
                .iter()
                .position(|b| b & 0xC0 != 0x80)
                .unwrap_or(self.kept.len())
        } else {
            0
        };
        let lossy = String::from_utf8_lossy(self.kept.get(start..).unwrap_or_default());
        let s = lossy.trim();
        match s.char_indices().rev().nth(chars) {
            Some((i, c)) => format!("…{}", &s[i + c.len_utf8()..]),
            None if cut => format!("…{s}"),
            None => s.to_string(),
        }
    }
}

/// Why a run did not finish.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The program could not be started (not found, not executable, …). The text is the
    /// reason with what to do, to follow "cannot start `…`: ".
    #[error("{}", spawn_reason(.source, .program, .cwd.as_deref()))]
    Spawn {
        /// The program as given in [`Spec::program`].
        program: std::path::PathBuf,
        /// The working directory as given in [`Spec::cwd`].
        cwd: Option<std::path::PathBuf>,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Reading its output or waiting for it failed.
    #[error("reading its output or waiting for it failed: {0}")]
    Io(#[source] std::io::Error),
    /// It did not finish in time; it was killed with its process group.
    #[error("did not finish within {}s and was killed", .0.as_secs_f64())]
    Timeout(Duration),
    /// It printed more than the cap on stdout; it was killed with its process group.
    #[error("printed more than {} on stdout and was stopped", bytes_text(*.limit))]
    StdoutTooLarge {
        /// The cap, [`Spec::max_stdout`].
        limit: usize,
    },
}

/// `4 MiB`, `512 KiB`, `100 bytes`.
pub fn bytes_text(n: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else {
        format!("{n} bytes")
    }
}

/// What went wrong starting `program`, with what to do about it.
fn spawn_reason(e: &std::io::Error, program: &Path, cwd: Option<&Path>) -> String {
    use std::io::ErrorKind;
    let shown = program.display();
    let has_dir = program.components().count() > 1;
    match e.kind() {
        ErrorKind::NotFound => match cwd {
            Some(d) if !d.is_dir() => {
                format!("{e} (its working directory {} does not exist)", d.display())
            }
            _ if has_dir && program.exists() => {
                format!("{e} ({shown} exists, so the interpreter on its `#!` line was not found)")
            }
            _ if has_dir => format!("{e} ({shown} does not exist)"),
            _ => format!(
                "{e} (`{shown}` is not on PATH; give its path, e.g. \"./{shown}\", relative to the configuration file)"
            ),
        },
        ErrorKind::PermissionDenied if program.is_dir() => format!("{e} ({shown} is a directory)"),
        ErrorKind::PermissionDenied => format!(
            "{e} ({shown} is not executable: `chmod +x` it or run it through its interpreter, e.g. [\"sh\", \"{shown}\"])"
        ),
        _ if is_exec_format_error(e) => format!(
            "{e} ({shown} is not a program this system can run: a script needs a `#!` line, or run it through its interpreter)"
        ),
        _ => e.to_string(),
    }
}

#[cfg(unix)]
fn is_exec_format_error(e: &std::io::Error) -> bool {
    rustix::io::Errno::from_io_error(e) == Some(rustix::io::Errno::NOEXEC)
}

#[cfg(not(unix))]
fn is_exec_format_error(_e: &std::io::Error) -> bool {
    false
}

/// How a program ended that did not succeed: `exited with status 3`, `was killed by signal 9
/// (SIGKILL)`, `was killed by signal 11 (SIGSEGV) and dumped core`.
pub fn describe_status(status: &ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = signal_name(sig).map_or_else(String::new, |n| format!(" ({n})"));
            let core = if status.core_dumped() {
                " and dumped core"
            } else {
                ""
            };
            return format!("was killed by signal {sig}{name}{core}");
        }
    }
    format!("ended with {status}")
}

/// The name of signal `n` on this system (`SIGKILL`), for the common ones.
#[cfg(unix)]
fn signal_name(n: i32) -> Option<&'static str> {
    use rustix::process::Signal as S;
    const NAMES: &[(S, &str)] = &[
        (S::HUP, "SIGHUP"),
        (S::INT, "SIGINT"),
        (S::QUIT, "SIGQUIT"),
        (S::ILL, "SIGILL"),
        (S::TRAP, "SIGTRAP"),
        (S::ABORT, "SIGABRT"),
        (S::BUS, "SIGBUS"),
        (S::FPE, "SIGFPE"),
        (S::KILL, "SIGKILL"),
        (S::USR1, "SIGUSR1"),
        (S::SEGV, "SIGSEGV"),
        (S::USR2, "SIGUSR2"),
        (S::PIPE, "SIGPIPE"),
        (S::ALARM, "SIGALRM"),
        (S::TERM, "SIGTERM"),
        (S::XCPU, "SIGXCPU"),
        (S::XFSZ, "SIGXFSZ"),
        (S::SYS, "SIGSYS"),
    ];
    NAMES
        .iter()
        .find(|(s, _)| s.as_raw() == n)
        .map(|(_, name)| *name)
}

/// Kills the process group of a started program when dropped, unless disarmed (the program
/// finished on its own).
#[derive(Debug)]
pub(crate) struct GroupKill(pub(crate) Option<u32>);

impl GroupKill {
    pub(crate) fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupKill {
    fn drop(&mut self) {
        if let Some(pid) = self.0.take() {
            kill_group(pid);
        }
    }
}

/// SIGKILL to the process group `pgid` (the program's, see `process_group(0)`).
#[cfg(unix)]
pub(crate) fn kill_group(pgid: u32) {
    use rustix::process::{Pid, Signal, kill_process_group};
    if let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) {
        // ESRCH: nothing left in the group.
        let _ = kill_process_group(pid, Signal::KILL);
    }
}

#[cfg(not(unix))]
pub(crate) fn kill_group(_pgid: u32) {}

/// Reads `r` to its end; more than `limit` bytes is [`RunError::StdoutTooLarge`] (at most
/// `limit + 1` bytes are held).
async fn read_capped(r: impl AsyncRead + Unpin, limit: usize) -> Result<Vec<u8>, RunError> {
    let mut buf = Vec::new();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    r.take(cap)
        .read_to_end(&mut buf)
        .await
        .map_err(RunError::Io)?;
    if buf.len() > limit {
        return Err(RunError::StdoutTooLarge { limit });
    }
    Ok(buf)
}

/// Reads `r` to its end, keeping its last `keep` bytes.
pub(crate) async fn read_tail(mut r: impl AsyncRead + Unpin, keep: usize) -> StderrTail {
    let mut tail = StderrTail::default();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match r.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let got = chunk.get(..n).unwrap_or_default();
                tail.total = tail.total.saturating_add(n as u64);
                tail.kept.extend_from_slice(got);
                // Trim only once the buffer holds twice what is kept: amortised O(1).
                if tail.kept.len() > keep.saturating_mul(2).max(64 * 1024) {
                    let excess = tail.kept.len() - keep;
                    tail.kept.drain(..excess);
                }
            }
        }
    }
    if tail.kept.len() > keep {
        let excess = tail.kept.len() - keep;
        tail.kept.drain(..excess);
    }
    tail
}

/// Runs `spec` once. See the module docs.
pub async fn run(spec: Spec<'_>) -> Result<Finished, RunError> {
    let mut cmd = tokio::process::Command::new(spec.program);
    cmd.args(spec.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(d) = spec.cwd {
        cmd.current_dir(d);
    }
    // Its own process group (pgid = its pid), so everything it starts can be killed at once.
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd.spawn().map_err(|source| RunError::Spawn {
        program: spec.program.to_path_buf(),
        cwd: spec.cwd.map(Path::to_path_buf),
        source,
    })?;
    // Dropped on any early return (timeout, overflow, cancelled future): the group dies.
    let mut group = GroupKill(child.id());
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let write = async move {
        if let Some(mut s) = stdin {
            match s.write_all(spec.input).await {
                // The program exited or closed stdin without reading it all: not an error.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                Err(e) => tracing::debug!(error = %e, "writing the program's stdin failed"),
                Ok(()) => {}
            }
            // Dropping the pipe closes it: the program sees the end of its input.
        }
        Ok::<(), RunError>(())
    };
    let read_out = async move {
        match stdout {
            Some(s) => read_capped(s, spec.max_stdout).await,
            None => Ok(Vec::new()),
        }
    };
    let read_err = async move {
        Ok::<StderrTail, RunError>(match stderr {
            Some(s) => read_tail(s, spec.stderr_kept).await,
            None => StderrTail::default(),
        })
    };
    let wait = async { child.wait().await.map_err(RunError::Io) };
    let all = async { tokio::try_join!(write, read_out, read_err, wait) };
    match tokio::time::timeout(spec.timeout, all).await {
        Err(_) => Err(RunError::Timeout(spec.timeout)),
        Ok(Err(e)) => Err(e),
        Ok(Ok(((), stdout, stderr, status))) => {
            group.disarm();
            Ok(Finished {
                status,
                stdout,
                stderr,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(bytes_text(8 * 1024 * 1024), "8 MiB");
        assert_eq!(bytes_text(64 * 1024), "64 KiB");
        assert_eq!(bytes_text(1000), "1000 bytes");
    }

    #[cfg(unix)]
    #[test]
    fn statuses_name_their_signal() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            describe_status(&ExitStatus::from_raw(3 << 8)),
            "exited with status 3"
        );
        assert_eq!(
            describe_status(&ExitStatus::from_raw(9)),
            "was killed by signal 9 (SIGKILL)"
        );
        assert_eq!(
            describe_status(&ExitStatus::from_raw(11 | 0x80)),
            "was killed by signal 11 (SIGSEGV) and dumped core"
        );
        assert_eq!(signal_name(15), Some("SIGTERM"));
        assert_eq!(signal_name(64), None);
    }

    #[test]
    fn the_stderr_tail_keeps_the_end() {
        let t = StderrTail {
            kept: b"  line one\nline two  ".to_vec(),
            total: 21,
        };
        assert_eq!(t.text(100), "line one\nline two");
        assert_eq!(t.text(3), "…two");
        let cut = StderrTail {
            kept: b"two".to_vec(),
            total: 1000,
        };
        assert_eq!(cut.text(100), "…two");
    }

    #[tokio::test]
    async fn reading_stops_past_the_cap_and_the_tail_is_bounded() {
        let data = vec![b'x'; 10_000];
        assert_eq!(
            read_capped(&data[..], 10_000).await.map(|v| v.len()).ok(),
            Some(10_000)
        );
        assert!(matches!(
            read_capped(&data[..], 9_999).await,
            Err(RunError::StdoutTooLarge { limit: 9_999 })
        ));
        let mut data = vec![b'a'; 100_000];
        data.extend_from_slice(b"the end");
        let tail = read_tail(&data[..], 7).await;
        assert_eq!(
            (tail.kept.as_slice(), tail.total),
            (&b"the end"[..], 100_007)
        );
    }
}
