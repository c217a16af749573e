//! `command` members — our replacement for the original's Python custom agents: an external
//! program, started once per task, receiving
//! `{"task", "context": {execution_id, team_id, team_name, round_number, domain_context,
//! language}, "tool_settings"}` as JSON on stdin and answering
//! `{"content", "status"?: "success" | "warning" | "error", "error_message"?, "usage"?:
//! {"input_tokens", "output_tokens", "requests"?, "cost_usd"?}}` on stdout.
//!
//! The program runs in the folder of the file that defined the member, with the member's
//! `timeout_seconds` (default 300) as its time limit; it is killed when the limit passes.
//! A non-zero exit status, invalid JSON or a missing `content` is an `ERROR` submission
//! carrying the program's stderr.

use crate::context::RoundContext;
use crate::error::AgentError;
use crate::member::{EMPTY_TASK, MemberAgent, MemberOutput};
use mixseek_config::MemberSettings;
use mixseek_core::{MemberStatus, Usage};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The default time limit of one run of the program.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// How much of stdout is read at most.
const MAX_STDOUT: u64 = 16 * 1024 * 1024;
/// How much of stderr is quoted in an error.
const STDERR_TAIL: usize = 2000;

/// A `command` member.
pub struct CommandMember {
    name: String,
    program: String,
    args: Vec<String>,
    cwd: Option<PathBuf>,
    timeout: Duration,
    tool_settings: serde_json::Value,
}

impl CommandMember {
    pub fn new(settings: &MemberSettings, base_dir: Option<&Path>) -> Result<Self, AgentError> {
        let name = settings.name.clone().unwrap_or_else(|| "member".into());
        let mut parts = settings.command.clone().unwrap_or_default().into_iter();
        let program = parts
            .next()
            .filter(|p| !p.trim().is_empty())
            .ok_or_else(|| AgentError::Unsupported {
                member: name.clone(),
                message: "type = \"command\" needs a command".into(),
                hint: Some("command = [\"python3\", \"agent.py\"]".into()),
            })?;
        let tool_settings = serde_json::to_value(settings.effective_tool_settings())
            .unwrap_or_else(|_| serde_json::json!({}));
        Ok(Self {
            name,
            program,
            args: parts.collect(),
            cwd: base_dir.map(Path::to_path_buf),
            timeout: settings
                .timeout_seconds
                .filter(|t| *t > 0)
                .map_or(DEFAULT_TIMEOUT, Duration::from_secs),
            tool_settings,
        })
    }

    async fn run(&self, input: &[u8]) -> Result<RawRun, String> {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", self.program))?;
        let mut stdin = child.stdin.take();
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let write = async {
            if let Some(mut s) = stdin.take() {
                // A program that does not read its input closes the pipe: not an error.
                let _ = s.write_all(input).await;
                let _ = s.shutdown().await;
            }
        };
        let read_out = async {
            let mut buf = Vec::new();
            if let Some(s) = stdout.take() {
                let _ = s.take(MAX_STDOUT).read_to_end(&mut buf).await;
            }
            buf
        };
        let read_err = async {
            let mut buf = Vec::new();
            if let Some(s) = stderr.take() {
                let _ = s.take(MAX_STDOUT).read_to_end(&mut buf).await;
            }
            buf
        };
        let all = async {
            let ((), out, err) = tokio::join!(write, read_out, read_err);
            let status = child.wait().await;
            (status, out, err)
        };
        match tokio::time::timeout(self.timeout, all).await {
            Err(_) => Err(format!(
                "`{}` did not answer within {} s and was killed",
                self.program,
                self.timeout.as_secs_f64()
            )),
            Ok((Err(e), _, _)) => Err(format!("`{}` failed: {e}", self.program)),
            Ok((Ok(status), stdout, stderr)) => Ok(RawRun {
                status,
                stdout,
                stderr,
            }),
        }
    }
}

struct RawRun {
    status: std::process::ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// The program's answer.
#[derive(Debug, Deserialize)]
struct Answer {
    content: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default, alias = "error")]
    error_message: Option<String>,
    #[serde(default)]
    usage: Option<AnswerUsage>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct AnswerUsage {
    input_tokens: u64,
    output_tokens: u64,
    requests: Option<u64>,
    cost_usd: Option<f64>,
}

fn tail(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let s = s.trim();
    match s.char_indices().rev().nth(STDERR_TAIL) {
        Some((i, _)) => format!("…{}", &s[i..]),
        None => s.to_string(),
    }
}

/// Turns the program's run into an output.
fn interpret(program: &str, run: RawRun) -> MemberOutput {
    let stderr = tail(&run.stderr);
    let with_stderr = |msg: String| {
        if stderr.is_empty() {
            msg
        } else {
            format!("{msg}; stderr: {stderr}")
        }
    };
    if !run.status.success() {
        let code = run
            .status
            .code()
            .map_or_else(|| "a signal".to_string(), |c| format!("status {c}"));
        return MemberOutput::error(
            with_stderr(format!("`{program}` exited with {code}")),
            Usage::default(),
            Vec::new(),
        );
    }
    let answer: Answer = match serde_json::from_slice(&run.stdout) {
        Ok(a) => a,
        Err(e) => {
            return MemberOutput::error(
                with_stderr(format!(
                    "`{program}` did not print a JSON answer {{\"content\", \"status\", \"usage\"}}: {e}"
                )),
                Usage::default(),
                Vec::new(),
            );
        }
    };
    let usage = answer.usage.map_or_else(Usage::default, |u| Usage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        requests: u.requests.unwrap_or(0),
        cost_usd: u.cost_usd.unwrap_or(0.0),
        ..Usage::default()
    });
    let raw_answer =
        serde_json::from_slice::<serde_json::Value>(&run.stdout).unwrap_or(serde_json::Value::Null);
    let messages =
        vec![serde_json::json!({"role": "command", "program": program, "answer": raw_answer})];
    let status = match answer
        .status
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("success") => MemberStatus::Success,
        Some("warning") => MemberStatus::Warning,
        Some("error") => MemberStatus::Error,
        Some(other) => {
            return MemberOutput::error(
                format!(
                    "`{program}` answered an unknown status `{other}` (success, warning or error)"
                ),
                usage,
                messages,
            );
        }
    };
    match (status, answer.content) {
        (MemberStatus::Error, _) => MemberOutput::error(
            answer
                .error_message
                .unwrap_or_else(|| with_stderr(format!("`{program}` reported an error"))),
            usage,
            messages,
        ),
        (_, None) => MemberOutput::error(
            format!("`{program}` answered without `content`"),
            usage,
            messages,
        ),
        (status, Some(content)) => MemberOutput {
            status,
            content,
            error_message: answer.error_message,
            usage,
            messages,
        },
    }
}

#[async_trait::async_trait]
impl MemberAgent for CommandMember {
    fn name(&self) -> &str {
        &self.name
    }
    fn agent_type(&self) -> &str {
        "command"
    }

    async fn execute(&self, task: &str, ctx: &RoundContext) -> MemberOutput {
        if task.trim().is_empty() {
            return MemberOutput::error(EMPTY_TASK, Usage::default(), Vec::new());
        }
        let input = serde_json::json!({
            "task": task,
            "context": ctx.member_context_json(),
            "tool_settings": self.tool_settings,
        });
        let bytes = serde_json::to_vec(&input).unwrap_or_default();
        match self.run(&bytes).await {
            Ok(run) => interpret(&self.program, run),
            Err(message) => MemberOutput::error(message, Usage::default(), Vec::new()),
        }
    }
}
