//! `mixseek ui` as the end-to-end tests start it: the real binary on a free port, its
//! address read from the first line it prints, stopped (SIGINT, then killed) when dropped;
//! and the experiments the UI's tests and benchmark open ([`write_experiment`],
//! [`grow_experiment_sql`]).

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

/// A small offline experiment for the UI's tests and benchmark: the competition of
/// [`crate::write_mock_competition`] (teams `a` and `b`), `exp/NAME.tasks.jsonl` with one task
/// per id of `tasks` (ids are taken as given, markup and all), and `exp/NAME.toml` with
/// `variants` (the first one the baseline; each other one with its own leader model) and
/// `repeats`. Returns the experiment file.
pub fn write_experiment(
    sb: &Sandbox,
    name: &str,
    variants: &[&str],
    tasks: &[&str],
    repeats: u32,
) -> std::path::PathBuf {
    crate::write_mock_competition(sb, &["a", "b"]);
    let mut lines = String::new();
    for (n, id) in tasks.iter().enumerate() {
        lines.push_str(
            &serde_json::json!({ "id": id, "prompt": format!("Task {n}: name {n} uses of copper.") })
                .to_string(),
        );
        lines.push('\n');
    }
    let tasks_file = format!("{}.tasks.jsonl", file_stem(name));
    sb.write(&format!("exp/{tasks_file}"), &lines);
    // JSON strings are TOML basic strings.
    let q = |s: &str| serde_json::Value::from(s).to_string();
    let mut toml = format!(
        "[experiment]\nname = {}\ntasks = {}\nrepeats = {repeats}\nmax_concurrent_executions = 2\n",
        q(name),
        q(&tasks_file)
    );
    for (k, v) in variants.iter().enumerate() {
        toml.push_str(&format!(
            "\n[[experiment.variants]]\nname = {}\nconfig = \"../cfg/orchestrator.toml\"\n",
            q(v)
        ));
        if k > 0 {
            toml.push_str(&format!(
                "overrides = {{ \"team.leader.model\" = \"mock:variant{k}\" }}\n"
            ));
        }
    }
    sb.write(&format!("exp/{}.toml", file_stem(name)), &toml)
}

/// A file name for an experiment name (`..` included).
fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect::<String>()
        + "-experiment"
}

/// SQL (DuckDB) that grows experiment `name` by `n` items, on tasks `syn-0000`, `syn-0001`, …
/// with `variants` taking turns on each task, each item played by its own copy of one of the
/// experiment's stored executions (the copies: scores from 40 to 95, every 97th one failed).
/// An experiment of thousands of items without running them.
pub fn grow_experiment_sql(name: &str, variants: &[&str], n: usize) -> String {
    let q = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let k = variants.len().max(1);
    let list = variants.iter().map(|v| q(v)).collect::<Vec<_>>().join(", ");
    format!(
        "INSERT INTO execution_summary
           SELECT e.* REPLACE (
               printf('synthetic-%06d', r.i) AS execution_id,
               CASE WHEN r.i % 97 = 3 THEN 'failed' ELSE e.status END AS status,
               CASE WHEN r.i % 97 = 3 THEN NULL ELSE 40.0 + (r.i * 37) % 50 + (r.i % {k}) * 2.5 END AS best_score)
           FROM (SELECT * FROM execution_summary WHERE execution_id =
                   (SELECT min(execution_id) FROM experiment_items WHERE experiment_id = {name})) e,
                range({n}) r(i);
         INSERT INTO experiment_items (experiment_id, task_id, variant, repeat_index, execution_id, task_metadata, created_at)
           SELECT {name}, printf('syn-%04d', r.i // {k}), list_value({list})[r.i % {k} + 1], 0,
                  printf('synthetic-%06d', r.i), '{{}}', now()
           FROM range({n}) r(i);",
        name = q(name),
    )
}
