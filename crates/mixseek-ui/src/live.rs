//! What is running, from the progress files every run writes in `WORKSPACE/logs/`: one
//! `{execution_id}.execution.json` per execution and one `{execution_id}.{team_id}.progress.json`
//! per team (mixseek-orchestrator's `progress_files.rs`). A running execution holds the
//! database, so this is the live view's only source; the files are small and read per request.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `logs/{execution_id}.execution.json`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub(crate) struct ExecutionFile {
    pub execution_id: String,
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub config: Option<String>,
    /// The effective settings (`"section › key": value`, secrets masked).
    #[serde(default, skip_serializing)]
    pub settings: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub user_prompt: String,
    #[serde(default)]
    pub total_teams: u32,
    #[serde(default)]
    pub max_rounds: u32,
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub updated_at: Option<String>,
    #[serde(default)]
    pub best_team_id: Option<String>,
    #[serde(default)]
    pub best_score: Option<f64>,
    #[serde(default)]
    pub completed_at: Option<String>,
}

impl ExecutionFile {
    /// `running` while its process lives; `stopped` when the process ended without
    /// finishing (killed: resumable); otherwise the stored status.
    pub(crate) fn live_status(&self) -> &str {
        if self.status == "running" {
            if self.pid.is_some_and(process_alive) {
                "running"
            } else {
                "stopped"
            }
        } else {
            &self.status
        }
    }
}

/// The usage in a team's progress file.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize)]
pub(crate) struct FileUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub requests: u64,
    #[serde(default)]
    pub cost_usd: f64,
}

/// `logs/{execution_id}.{team_id}.progress.json`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub(crate) struct TeamFile {
    #[serde(default)]
    pub team_id: String,
    #[serde(default)]
    pub team_name: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub current_round: u32,
    #[serde(default)]
    pub total_rounds: u32,
    #[serde(default)]
    pub current_agent: Option<String>,
    #[serde(default)]
    pub error_message: Option<String>,
    #[serde(default)]
    pub best_round: Option<u32>,
    #[serde(default)]
    pub best_score: Option<f64>,
    #[serde(default)]
    pub usage: FileUsage,
    #[serde(default)]
    pub updated_at: Option<String>,
}

impl TeamFile {
    /// What the team is doing: `leader` / `evaluator` / `judgment` while running, else its
    /// status.
    pub(crate) fn phase(&self) -> String {
        match (self.status.as_str(), self.current_agent.as_deref()) {
            ("running", Some(a)) => a.to_string(),
            ("running", None) => "judgment".into(),
            (s, _) => s.to_string(),
        }
    }
}

/// Whether process `pid` exists (a process of another user counts).
pub(crate) fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, test_kill_process};
        match i32::try_from(pid).ok().and_then(Pid::from_raw) {
            Some(p) => match test_kill_process(p) {
                Ok(()) => true,
                Err(e) => e == rustix::io::Errno::PERM,
            },
            None => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Every execution file in `logs`, most recently started first.
pub(crate) fn executions(logs: &Path) -> Vec<ExecutionFile> {
    let mut out: Vec<ExecutionFile> = std::fs::read_dir(logs)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.ends_with(".execution.json"))
        })
        .filter_map(|e| read_json(&e.path()))
        .collect();
    out.sort_by(|a, b| b.started_at.cmp(&a.started_at));
    out
}

/// The execution file of `id`, if any. `id` is checked to be a plain id first.
pub(crate) fn execution(logs: &Path, id: &str) -> Option<ExecutionFile> {
    if !plain_id(id) {
        return None;
    }
    read_json(&logs.join(format!("{id}.execution.json")))
}

/// The team files of execution `id`, in team-id order.
pub(crate) fn teams(logs: &Path, id: &str) -> Vec<TeamFile> {
    if !plain_id(id) {
        return Vec::new();
    }
    let prefix = format!("{id}.");
    let mut out: Vec<TeamFile> = std::fs::read_dir(logs)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".progress.json"))
        })
        .filter_map(|e| read_json(&e.path()))
        .collect();
    out.sort_by(|a, b| a.team_id.cmp(&b.team_id));
    out
}

/// An id that can name a file in `logs/` (no separator, no `..`).
pub(crate) fn plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The last `n` lines of `path` that contain `needle` (all lines when `None`), reading at most
/// the file's last 256 KiB.
pub(crate) fn tail(path: &Path, needle: Option<&str>, n: usize) -> Vec<String> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(256 * 1024);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let mut lines: Vec<&str> = text
        .lines()
        .skip(usize::from(start > 0))
        .filter(|l| needle.is_none_or(|s| l.contains(s)))
        .collect();
    let from = lines.len().saturating_sub(n);
    lines.drain(..from);
    lines.into_iter().map(str::to_string).collect()
}

/// The log of a run the UI started: `logs/ui-runs/{execution_id}.log`.
pub(crate) fn run_log(logs: &Path, id: &str) -> PathBuf {
    logs.join("ui-runs").join(format!("{id}.log"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_cannot_leave_the_logs() {
        assert!(plain_id("0b6f3c2e-1f7d-4a55-9d0e-7f1a2b3c4d5e"));
        assert!(!plain_id("../etc/passwd"));
        assert!(!plain_id("a/b"));
        assert!(!plain_id(""));
    }

    #[test]
    fn tail_keeps_the_last_matching_lines() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("log");
        std::fs::write(&p, "a 1\nb 2\na 3\na 4\n").expect("write");
        assert_eq!(tail(&p, Some("a"), 2), vec!["a 3", "a 4"]);
        assert_eq!(tail(&p, None, 10).len(), 4);
        assert!(tail(&dir.path().join("none"), None, 3).is_empty());
    }

    #[test]
    fn unreadable_or_hostile_files_are_skipped() {
        let dir = tempfile::tempdir().expect("tmp");
        let logs = dir.path();
        std::fs::write(logs.join("a.execution.json"), "{not json").expect("w");
        std::fs::write(logs.join("b.execution.json"), [0xff, 0xfe, 0x00]).expect("w");
        std::fs::write(logs.join("c.execution.json"), r#"{"execution_id": 5}"#).expect("w");
        std::fs::write(
            logs.join("d.execution.json"),
            r#"{"execution_id": "d", "pid": -1, "status": "running"}"#,
        )
        .expect("w");
        std::fs::write(
            logs.join("e.execution.json"),
            r#"{"execution_id": "e", "pid": 0, "status": "running", "extra": [1, 2]}"#,
        )
        .expect("w");
        std::fs::write(logs.join("e.t.progress.json"), "[]").expect("w");
        std::fs::write(
            logs.join("e.u.progress.json"),
            r#"{"team_id": "u", "current_round": 4294967296}"#,
        )
        .expect("w");
        let found: Vec<String> = executions(logs)
            .into_iter()
            .map(|e| e.execution_id)
            .collect();
        assert_eq!(found, vec!["e".to_string()]);
        // an out-of-range number makes the file unreadable (skipped), never a panic
        assert!(teams(logs, "e").iter().all(|t| t.team_id != "u"));
        assert!(execution(logs, "../e").is_none());
    }

    #[test]
    fn a_running_file_whose_process_is_gone_is_stopped() {
        let f = ExecutionFile {
            status: "running".into(),
            pid: Some(u32::MAX - 1),
            ..Default::default()
        };
        assert_eq!(f.live_status(), "stopped");
        let me = ExecutionFile {
            status: "running".into(),
            pid: Some(std::process::id()),
            ..Default::default()
        };
        assert_eq!(me.live_status(), "running");
    }
}
