//! `mixseek ui` as the end-to-end tests start it: the real binary on a free port, its
//! address read from the first line it prints, stopped (SIGINT, then killed) when dropped.

use crate::Sandbox;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A running `mixseek ui`.
pub struct UiServer {
    child: Child,
    /// The address it printed (`http://127.0.0.1:PORT/`, with `?token=…` when it needs one).
    pub url: String,
    /// `http://127.0.0.1:PORT` (no path, no token).
    pub base: String,
}

impl UiServer {
    /// Starts `mixseek ui -w WORKSPACE --port 0 ARGS…` and waits for its address.
    pub fn start(sb: &Sandbox, args: &[&str]) -> UiServer {
        Self::start_with_env(sb, args, &[])
    }

    /// As [`UiServer::start`], with `env` set on the server (after the clean-up of the
    /// inherited `MIXSEEK_*` and provider variables), e.g. a provider key.
    pub fn start_with_env(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> UiServer {
        let mut cmd = sb.process();
        cmd.envs(env.iter().copied());
        cmd.arg("-w")
            .arg(sb.workspace())
            .args(["ui", "--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("start mixseek ui");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("mixseek UI on ") {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("mixseek ui printed its address within 20 s");
        let rest = url.strip_prefix("http://").expect("http address");
        let host = rest.split('/').next().expect("host");
        let base = format!("http://{host}");
        UiServer { child, url, base }
    }

    /// The access token in the printed address (a UI bound beyond loopback).
    pub fn token(&self) -> Option<String> {
        self.url.split_once("?token=").map(|(_, t)| t.to_string())
    }

    /// `base` + `path`.
    pub fn at(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The process id of the server.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for UiServer {
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            use rustix::process::{Pid, Signal, kill_process};
            if let Some(pid) = i32::try_from(self.child.id()).ok().and_then(Pid::from_raw) {
                let _ = kill_process(pid, Signal::INT);
            }
            let until = Instant::now() + Duration::from_secs(3);
            while Instant::now() < until {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until `f` returns `Some`, polling every 100 ms, for at most `timeout`.
pub fn wait_until<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let until = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
