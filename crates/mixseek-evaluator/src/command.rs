//! Command metrics (`type = "command"`): any program scores the submission. It gets
//! `{user_prompt, submission, execution_id, team_id, round_number, metric}` as JSON on stdin
//! and prints `{"score": <number>, "evaluator_comment": <string>}` on stdout (the last
//! non-empty line may be the JSON when the program prints other lines first). Scores are not
//! bounded (backtest-style metrics may be negative or above 100). A timeout, a start failure,
//! a non-zero exit and bad output are clear errors.
//!
//! On Unix the program runs in its own process group; on a timeout (or when the evaluation
//! is cancelled) the whole group is killed, so processes it started (`sleep`, a Python
//! worker, …) do not outlive it.

use crate::error::MetricFailure;
use crate::plan::CommandMetric;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

/// What a command metric reads on stdin.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandInput<'a> {
    pub user_prompt: &'a str,
    pub submission: &'a str,
    pub execution_id: Option<&'a str>,
    pub team_id: Option<&'a str>,
    pub round_number: Option<u32>,
    /// The metric's configured name.
    pub metric: &'a str,
}

/// What a command metric prints.
#[derive(Debug, Clone, PartialEq, Deserialize)]
struct CommandOutput {
    score: serde_json::Number,
    #[serde(default)]
    evaluator_comment: String,
}

const SHOWN: usize = 500;

fn tail(s: &str) -> String {
    let s = s.trim();
    let n = s.chars().count();
    if n <= SHOWN {
        s.to_string()
    } else {
        format!("…{}", s.chars().skip(n - SHOWN).collect::<String>())
    }
}

fn head(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= SHOWN {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(SHOWN).collect::<String>())
    }
}

/// The program to start: a relative path with a directory part (`./score.sh`,
/// `scripts/score.py`) is taken relative to `dir`; a bare name is looked up on `PATH`.
fn program(argv0: &str, dir: Option<&Path>) -> PathBuf {
    let p = Path::new(argv0);
    match dir {
        Some(d) if p.is_relative() && p.components().count() > 1 => d.join(p),
        _ => p.to_path_buf(),
    }
}

/// Kills the process group of a started command when dropped, unless disarmed (the
/// command finished on its own).
struct GroupKill(Option<u32>);

impl GroupKill {
    fn disarm(&mut self) {
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

/// SIGKILL to the process group `pgid` (the command's, see `process_group(0)`).
#[cfg(unix)]
fn kill_group(pgid: u32) {
    use rustix::process::{Pid, Signal, kill_process_group};
    if let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) {
        // ESRCH: nothing left in the group.
        let _ = kill_process_group(pid, Signal::KILL);
    }
}

#[cfg(not(unix))]
fn kill_group(_pgid: u32) {}

/// Runs the command once; returns the score (finite, unbounded) and the comment.
pub async fn run(
    metric: &CommandMetric,
    name: &str,
    input: &CommandInput<'_>,
    dir: Option<&Path>,
) -> Result<(f64, String), MetricFailure> {
    let fail = |kind: &'static str, message: String, raw: Option<String>| MetricFailure {
        metric_name: name.to_string(),
        kind,
        message,
        provider: None,
        retries: None,
        raw_output: raw,
        rejected: Vec::new(),
    };
    let shown = metric.argv.join(" ");
    let payload = serde_json::to_vec(input)
        .map_err(|e| fail("internal", format!("cannot encode the input: {e}"), None))?;
    let mut cmd = tokio::process::Command::new(program(&metric.argv[0], dir));
    cmd.args(&metric.argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    // Its own process group (pgid = its pid), so everything it starts can be killed at once.
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd.spawn().map_err(|e| {
        fail(
            "spawn",
            format!("command metric '{name}': cannot start `{shown}`: {e}"),
            None,
        )
    })?;
    // Dropped on a timeout or when this future is cancelled: the group dies with it.
    let mut group = GroupKill(child.id());
    if let Some(mut stdin) = child.stdin.take() {
        // Written concurrently with the wait, so a program that does not read cannot block us;
        // a closed pipe (the program exited without reading) is not an error.
        tokio::spawn(async move {
            let _ = stdin.write_all(&payload).await;
            let _ = stdin.shutdown().await;
        });
    }
    let output = match tokio::time::timeout(metric.timeout, child.wait_with_output()).await {
        Ok(Ok(o)) => {
            group.disarm();
            o
        }
        Ok(Err(e)) => {
            return Err(fail(
                "spawn",
                format!("command metric '{name}': waiting for `{shown}` failed: {e}"),
                None,
            ));
        }
        Err(_) => {
            drop(group);
            return Err(fail(
                "timeout",
                format!(
                    "command metric '{name}': `{shown}` timed out after {}s (timeout_seconds)",
                    metric.timeout.as_secs_f64()
                ),
                None,
            ));
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if !stderr.trim().is_empty() {
        tracing::debug!(metric = name, stderr = %tail(&stderr), "command metric stderr");
    }
    if !output.status.success() {
        let status = output
            .status
            .code()
            .map_or_else(|| "a signal".to_string(), |c| format!("status {c}"));
        let detail = if stderr.trim().is_empty() {
            String::new()
        } else {
            format!(": {}", tail(&stderr))
        };
        return Err(fail(
            "exit",
            format!("command metric '{name}': `{shown}` exited with {status}{detail}"),
            Some(stdout),
        ));
    }
    let parsed = parse_output(&stdout).map_err(|why| {
        fail(
            "bad_output",
            format!(
                "command metric '{name}': `{shown}` printed {why}; expected one JSON object {{\"score\": <number>, \"evaluator_comment\": <string>}} on stdout, got: {}",
                if stdout.trim().is_empty() { "(nothing)".to_string() } else { head(&stdout) }
            ),
            Some(stdout.clone()),
        )
    })?;
    Ok(parsed)
}

fn parse_output(stdout: &str) -> Result<(f64, String), String> {
    let trimmed = stdout.trim();
    if trimmed.is_empty() {
        return Err("nothing".into());
    }
    let attempt = |text: &str| serde_json::from_str::<CommandOutput>(text);
    let out = match attempt(trimmed) {
        Ok(o) => o,
        Err(first) => {
            let last = trimmed
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            attempt(last.trim()).map_err(|_| format!("invalid JSON ({first})"))?
        }
    };
    let score = out
        .score
        .as_f64()
        .filter(|s| s.is_finite())
        .ok_or_else(|| format!("a score that is not a finite number ({})", out.score))?;
    Ok((score, out.evaluator_comment))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_parsing() {
        assert_eq!(
            parse_output("{\"score\": -12.5, \"evaluator_comment\": \"loss\"}"),
            Ok((-12.5, "loss".into()))
        );
        assert_eq!(
            parse_output("progress 1/2\nprogress 2/2\n{\"score\": 250}\n"),
            Ok((250.0, String::new()))
        );
        assert!(parse_output("").unwrap_err().contains("nothing"));
        assert!(
            parse_output("score: 5")
                .unwrap_err()
                .contains("invalid JSON")
        );
        assert!(
            parse_output("{\"score\": \"high\"}")
                .unwrap_err()
                .contains("invalid JSON")
        );
    }

    #[test]
    fn relative_programs_with_a_directory_part_are_resolved_against_the_working_dir() {
        let d = Path::new("/cfg");
        assert_eq!(
            program("./score.sh", Some(d)),
            PathBuf::from("/cfg/./score.sh")
        );
        assert_eq!(program("python3", Some(d)), PathBuf::from("python3"));
        assert_eq!(
            program("/usr/bin/env", Some(d)),
            PathBuf::from("/usr/bin/env")
        );
        assert_eq!(program("./x", None), PathBuf::from("./x"));
    }
}
