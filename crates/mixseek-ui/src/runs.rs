//! Runs started from the UI: each is a `mixseek exec` child process (the UI's own binary),
//! given its execution id so the live view can follow it from the first moment, the task on
//! its stdin, its output in `logs/ui-runs/{execution_id}.log`. Cancelling sends SIGINT, the
//! same clean interrupt as Ctrl-C. The children live in their own process group: closing the
//! UI does not stop them.

use crate::live;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;

/// A run's state as the UI knows it.
#[derive(Debug, Clone)]
pub(crate) struct RunHandle {
    pub pid: Option<u32>,
    /// The exit code once the process ended.
    pub exit: Option<i32>,
}

/// Why a run could not be started or cancelled.
#[derive(Debug)]
pub(crate) enum RunError {
    /// This UI's process for the execution is still running.
    Busy,
    /// The process could not be started.
    Spawn(std::io::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Busy => f.write_str("this execution is running already"),
            RunError::Spawn(e) => write!(f, "the run could not start: {e}"),
        }
    }
}

/// The runs this UI started, by execution id.
#[derive(Debug, Clone)]
pub(crate) struct Runs {
    exe: PathBuf,
    workspace: PathBuf,
    runs: Arc<Mutex<HashMap<String, RunHandle>>>,
    /// The processes already sent SIGINT: a second one would make `exec` exit at once (its
    /// Ctrl-C twice), before it records the interrupt.
    interrupted: Arc<Mutex<std::collections::HashSet<u32>>>,
}

/// What a preflight printed.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Preflight {
    pub ok: bool,
    pub output: String,
}

impl Runs {
    pub(crate) fn new(exe: PathBuf, workspace: PathBuf) -> Self {
        Runs {
            exe,
            workspace,
            runs: Arc::new(Mutex::new(HashMap::new())),
            interrupted: Arc::new(Mutex::new(std::collections::HashSet::new())),
        }
    }

    fn logs(&self) -> PathBuf {
        self.workspace.join("logs")
    }

    /// The run of `id`, if this UI started it.
    pub(crate) fn get(&self, id: &str) -> Option<RunHandle> {
        self.runs.lock().ok()?.get(id).cloned()
    }

    fn command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.exe);
        cmd.arg("-w")
            .arg(&self.workspace)
            .env("MIXSEEK_NO_PROGRESS", "1")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped());
        cmd
    }

    /// `mixseek exec - -c CONFIG --dry-run`: the preflight, as the CLI prints it.
    pub(crate) async fn preflight(&self, config: &Path, prompt: &str) -> Preflight {
        let mut cmd = self.command();
        cmd.args(["exec", "-", "--dry-run", "-c"])
            .arg(config)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let output = async {
            let mut child = cmd.spawn()?;
            if let Some(mut stdin) = child.stdin.take() {
                stdin.write_all(prompt.as_bytes()).await?;
            }
            child.wait_with_output().await
        };
        match tokio::time::timeout(std::time::Duration::from_secs(60), output).await {
            Ok(Ok(out)) => {
                let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
                text.push_str(&String::from_utf8_lossy(&out.stderr));
                Preflight {
                    ok: out.status.success(),
                    output: text,
                }
            }
            Ok(Err(e)) => Preflight {
                ok: false,
                output: format!("the preflight could not run: {e}"),
            },
            Err(_) => Preflight {
                ok: false,
                output: "the preflight did not finish within 60 s".into(),
            },
        }
    }

    /// Starts `mixseek exec` on `config` with `prompt` as a new execution; returns its id.
    pub(crate) async fn start(&self, config: &Path, prompt: &str) -> Result<String, RunError> {
        let id = uuid::Uuid::new_v4().to_string();
        let mut cmd = self.command();
        cmd.args(["exec", "-", "--execution-id", &id, "-c"])
            .arg(config);
        self.spawn(cmd, id.clone(), Some(prompt.to_string()))
            .await?;
        Ok(id)
    }

    /// `mixseek exec --resume ID -c CONFIG`.
    pub(crate) async fn resume(&self, id: &str, config: &Path) -> Result<(), RunError> {
        let mut cmd = self.command();
        cmd.args(["exec", "--resume", id, "-c"]).arg(config);
        self.spawn(cmd, id.to_string(), None).await
    }

    async fn spawn(
        &self,
        mut cmd: tokio::process::Command,
        id: String,
        stdin: Option<String>,
    ) -> Result<(), RunError> {
        // One process per execution: the slot is taken before the process starts, so two
        // requests at once cannot both start one.
        {
            let mut runs = self.runs.lock().map_err(|_| RunError::Busy)?;
            if runs.get(&id).is_some_and(|r| r.exit.is_none()) {
                return Err(RunError::Busy);
            }
            runs.insert(
                id.clone(),
                RunHandle {
                    pid: None,
                    exit: None,
                },
            );
        }
        let spawned = self.spawn_child(&mut cmd, &id, stdin).await;
        let mut runs = self.runs.lock().map_err(|_| RunError::Busy)?;
        match spawned {
            Ok(mut child) => {
                let pid = child.id();
                runs.insert(id.clone(), RunHandle { pid, exit: None });
                drop(runs);
                let runs = self.runs.clone();
                tokio::spawn(async move {
                    let code = match child.wait().await {
                        Ok(s) => s.code().unwrap_or(130),
                        Err(_) => -1,
                    };
                    if let Ok(mut runs) = runs.lock() {
                        if let Some(r) = runs.get_mut(&id) {
                            r.exit = Some(code);
                        }
                    }
                });
                Ok(())
            }
            Err(e) => {
                runs.remove(&id);
                Err(RunError::Spawn(e))
            }
        }
    }

    async fn spawn_child(
        &self,
        cmd: &mut tokio::process::Command,
        id: &str,
        stdin: Option<String>,
    ) -> std::io::Result<tokio::process::Child> {
        let log = live::run_log(&self.logs(), id);
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)?;
        let err = out.try_clone()?;
        cmd.stdout(out).stderr(err);
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn()?;
        if let Some(mut pipe) = child.stdin.take() {
            if let Some(text) = stdin {
                pipe.write_all(text.as_bytes()).await?;
            }
            drop(pipe);
        }
        Ok(child)
    }

    /// Sends SIGINT to the run of execution `id`: one this UI started, or one started from the
    /// CLI whose execution file names a live `mixseek` process. Returns whether a signal went.
    pub(crate) fn cancel(&self, id: &str) -> bool {
        let pid = match self.get(id) {
            Some(RunHandle {
                pid: Some(pid),
                exit: None,
            }) => Some(pid),
            Some(_) => None,
            None => live::execution(&self.logs(), id)
                .filter(|f| f.live_status() == "running")
                .and_then(|f| f.pid)
                .filter(|pid| is_mixseek(*pid)),
        };
        let Some(pid) = pid else { return false };
        // Once only: a second SIGINT is `exec`'s "exit at once".
        let first = self
            .interrupted
            .lock()
            .is_ok_and(|mut sent| sent.insert(pid));
        first && interrupt(pid)
    }
}

/// Whether process `pid` runs a program named `mixseek` (the CLI's own).
fn is_mixseek(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .and_then(|c| {
            c.split(|b| *b == 0)
                .next()
                .map(|a| String::from_utf8_lossy(a).into_owned())
        })
        .is_some_and(|argv0| {
            Path::new(&argv0)
                .file_name()
                .is_some_and(|n| n == "mixseek")
        })
}

/// SIGINT to `pid`.
fn interrupt(pid: u32) -> bool {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, Signal, kill_process};
        i32::try_from(pid)
            .ok()
            .and_then(Pid::from_raw)
            .is_some_and(|p| kill_process(p, Signal::INT).is_ok())
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}
