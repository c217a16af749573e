//! `[[hooks]]`: a command gets the event as JSON on stdin, a URL gets it POSTed. Hooks run in
//! the background; a failing or slow hook is logged and never fails the run. `finish()` waits
//! for the hooks still running (each bounded by its timeout).

use mixseek_config::HookSettings;
use mixseek_core::{Event, EventSink, SinkError};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::task::JoinSet;

pub(crate) struct HookRunner {
    hooks: Vec<HookSettings>,
    client: reqwest::Client,
    tasks: Mutex<JoinSet<()>>,
}

impl std::fmt::Debug for HookRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookRunner")
            .field("hooks", &self.hooks.len())
            .finish()
    }
}

impl HookRunner {
    pub(crate) fn new(hooks: Vec<HookSettings>) -> Arc<Self> {
        Arc::new(Self {
            hooks,
            client: reqwest::Client::new(),
            tasks: Mutex::new(JoinSet::new()),
        })
    }

    pub(crate) async fn finish(&self) {
        let mut tasks = self.tasks.lock().await;
        while tasks.join_next().await.is_some() {}
    }
}

/// What a hook command may print on stdout (it is not read) before it is stopped, and how much
/// of its stderr the log keeps.
const HOOK_STDOUT_CAP: usize = 1024 * 1024;
const HOOK_STDERR_KEPT: usize = 4 * 1024;

/// Runs a hook command with the shared process runner: the event on stdin, a time limit, output
/// capped, its whole process group killed on a timeout.
async fn run_command(cmd: Vec<String>, payload: Vec<u8>, timeout: Duration) -> Result<(), String> {
    let (prog, args) = cmd.split_first().ok_or("empty command")?;
    let done = mixseek_process::run(mixseek_process::Spec {
        program: std::path::Path::new(prog),
        args,
        cwd: None,
        input: &payload,
        timeout,
        max_stdout: HOOK_STDOUT_CAP,
        stderr_kept: HOOK_STDERR_KEPT,
    })
    .await
    .map_err(|e| match e {
        mixseek_process::RunError::Spawn { .. } => format!("cannot start `{prog}`: {e}"),
        other => other.to_string(),
    })?;
    if done.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}",
            mixseek_process::describe_status(&done.status),
            done.stderr.text(500)
        ))
    }
}

#[async_trait::async_trait]
impl EventSink for HookRunner {
    async fn emit(&self, event: &Event) -> Result<(), SinkError> {
        let Some(name) = event.hook_event() else {
            return Ok(());
        };
        let matching: Vec<HookSettings> = self
            .hooks
            .iter()
            .filter(|h| h.on == Some(name))
            .cloned()
            .collect();
        if matching.is_empty() {
            return Ok(());
        }
        let payload = serde_json::to_vec(event).unwrap_or_default();
        let mut tasks = self.tasks.lock().await;
        for h in matching {
            let payload = payload.clone();
            let client = self.client.clone();
            let timeout = Duration::from_secs(h.timeout_seconds.max(1));
            let name = name.to_string();
            tasks.spawn(async move {
                let result = if let Some(cmd) = h.command.clone() {
                    run_command(cmd, payload, timeout).await
                } else if let Some(url) = h.url.clone() {
                    client
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(payload)
                        .timeout(timeout)
                        .send()
                        .await
                        .map_err(|e| e.without_url().to_string())
                        .and_then(|r| {
                            if r.status().is_success() {
                                Ok(())
                            } else {
                                Err(format!("HTTP {}", r.status()))
                            }
                        })
                } else {
                    Ok(())
                };
                if let Err(e) = result {
                    tracing::warn!(hook = %name, error = %e, "hook failed (ignored)");
                }
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn command_hooks_get_the_event_and_failures_are_ignored() {
        let dir = tempfile::tempdir().expect("tmp");
        let out = dir.path().join("got.json");
        let hooks = vec![
            HookSettings {
                on: Some(mixseek_core::HookEvent::ExecutionComplete),
                command: Some(vec![
                    "sh".into(),
                    "-c".into(),
                    format!("cat > {}", out.display()),
                ]),
                ..Default::default()
            },
            HookSettings {
                on: Some(mixseek_core::HookEvent::ExecutionComplete),
                command: Some(vec!["false".into()]),
                ..Default::default()
            },
            HookSettings {
                on: Some(mixseek_core::HookEvent::TeamComplete),
                command: Some(vec![
                    "sh".into(),
                    "-c".into(),
                    format!("touch {}/team", dir.path().display()),
                ]),
                ..Default::default()
            },
        ];
        let runner = HookRunner::new(hooks);
        let summary = mixseek_core::ExecutionSummary {
            execution_id: "exec-1".into(),
            user_prompt: "p".into(),
            team_results: vec![],
            best_team_id: None,
            best_score: None,
            total_execution_time_seconds: 1.0,
            failed_teams_info: vec![],
            created_at: chrono::Utc::now(),
            status: mixseek_core::ExecutionStatus::Completed,
            usage: Default::default(),
            usage_by_role: Default::default(),
            stop_reason: None,
            stopped_team_ids: vec![],
        };
        runner
            .emit(&Event::ExecutionFinished(Box::new(summary)))
            .await
            .expect("never fails");
        runner.finish().await;
        let got: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out).expect("hook wrote"))
                .expect("json");
        assert_eq!(got["event"], "execution_finished");
        assert_eq!(got["execution_id"], "exec-1");
        assert!(
            !dir.path().join("team").exists(),
            "team hook must not fire on execution_complete"
        );
    }
}
