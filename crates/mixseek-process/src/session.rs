//! [`Session`]: a program spoken to in turns over its stdin and stdout, one JSON line at a
//! time, in its own process group, killed with everything it started when the session is
//! dropped before the program ended on its own.

use crate::{GroupKill, RunError, StderrTail, read_tail};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::task::JoinHandle;

/// A started program: read a line, send input, read another line, [`finish`](Self::finish).
/// Dropping it kills the program's process group (a timeout is the caller's
/// `tokio::time::timeout` around a read, then a drop).
#[derive(Debug)]
pub struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    stderr: Option<JoinHandle<StderrTail>>,
    group: GroupKill,
}

impl Session {
    /// Starts `program` with `args` (no shell) in `cwd` (`None`: ours), keeping the last
    /// `stderr_kept` bytes of its stderr.
    pub fn start(
        program: &Path,
        args: &[String],
        cwd: Option<&Path>,
        stderr_kept: usize,
    ) -> Result<Self, RunError> {
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(d) = cwd {
            cmd.current_dir(d);
        }
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn().map_err(|source| RunError::Spawn {
            program: program.to_path_buf(),
            cwd: cwd.map(Path::to_path_buf),
            source,
        })?;
        let group = GroupKill(child.id());
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| RunError::Io(std::io::Error::other("no stdout pipe")))?;
        let stderr = child
            .stderr
            .take()
            .map(|e| tokio::spawn(read_tail(e, stderr_kept)));
        Ok(Self {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            stderr,
            group,
        })
    }

    /// The next line of stdout without its newline; `None` when stdout ended first. A line
    /// longer than `max` bytes is [`RunError::StdoutTooLarge`].
    pub async fn read_line(&mut self, max: usize) -> Result<Option<Vec<u8>>, RunError> {
        let mut line = Vec::new();
        let cap = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
        (&mut self.stdout)
            .take(cap)
            .read_until(b'\n', &mut line)
            .await
            .map_err(RunError::Io)?;
        if line.is_empty() {
            return Ok(None);
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        } else if line.len() > max {
            return Err(RunError::StdoutTooLarge { limit: max });
        }
        Ok(Some(line))
    }

    /// Writes `input` to stdin and closes it. A program that no longer reads (EPIPE) is not
    /// an error: what it printed says what happened.
    pub async fn send(&mut self, input: &[u8]) -> Result<(), RunError> {
        if let Some(mut s) = self.stdin.take() {
            match s.write_all(input).await {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                Err(e) => return Err(RunError::Io(e)),
                Ok(()) => {}
            }
        }
        Ok(())
    }

    /// Waits for the program to end (stdin closed) and returns how it ended with the end of
    /// its stderr. The process group is left alone when the program ended by itself.
    pub async fn finish(mut self) -> (Option<ExitStatus>, StderrTail) {
        self.stdin = None;
        let status = self.child.wait().await.ok();
        if status.is_some() {
            self.group.disarm();
        }
        let tail = match self.stderr.take() {
            Some(h) => h.await.unwrap_or_default(),
            None => StderrTail::default(),
        };
        (status, tail)
    }

    /// The end of stderr so far, after the program ended or was killed (kills it first).
    pub async fn stderr_after_kill(mut self) -> StderrTail {
        if let Some(pid) = self.group.0.take() {
            crate::kill_group(pid);
        }
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        match self.stderr.take() {
            Some(h) => h.await.unwrap_or_default(),
            None => StderrTail::default(),
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sh(script: &str) -> Session {
        Session::start(
            Path::new("sh"),
            &["-c".to_string(), script.to_string()],
            None,
            1024,
        )
        .expect("sh starts")
    }

    #[tokio::test]
    async fn lines_and_input_in_turns() {
        let mut s = sh("echo ready; read x; echo \"got $x\"; echo oops >&2");
        assert_eq!(
            s.read_line(100).await.ok().flatten(),
            Some(b"ready".to_vec())
        );
        s.send(b"hello\n").await.expect("send");
        assert_eq!(
            s.read_line(100).await.ok().flatten(),
            Some(b"got hello".to_vec())
        );
        assert_eq!(s.read_line(100).await.ok().flatten(), None);
        let (status, tail) = s.finish().await;
        assert!(status.is_some_and(|s| s.success()));
        assert_eq!(tail.text(100), "oops");
    }

    #[tokio::test]
    async fn a_long_line_is_refused() {
        let mut s = sh("printf 'xxxxxxxxxx'; sleep 5");
        assert!(matches!(
            s.read_line(5).await,
            Err(RunError::StdoutTooLarge { limit: 5 })
        ));
    }

    #[tokio::test]
    async fn dropping_kills_the_group() {
        let dir = tempfile::tempdir().expect("tmp");
        let marker = dir.path().join("survived");
        let script = format!("echo up; (sleep 1; touch {}) & wait", marker.display());
        let mut s = sh(&script);
        assert_eq!(s.read_line(100).await.ok().flatten(), Some(b"up".to_vec()));
        drop(s);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(
            !marker.exists(),
            "the background child outlived the session"
        );
    }
}
