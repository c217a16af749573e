//! `command` members — our replacement for the original's Python custom agents: an external
//! program, started once per task, receiving
//! `{"task", "context": {execution_id, team_id, team_name, round_number, domain_context,
//! language}, "tool_settings"}` as JSON on stdin and answering
//! `{"content", "status"?: "success" | "warning" | "error", "error_message"?, "usage"?:
//! {"input_tokens", "output_tokens", "requests"?, "cost_usd"?}}` on stdout.
//!
//! The program runs in the folder of the file that defined the member (a relative program
//! with a directory part, `./agent.sh`, is found there too), in its own process group, with
//! the member's `timeout_seconds` (default 300) as its time limit; when the limit passes it is
//! killed with every process it started. Its stdout is read up to [`MAX_STDOUT`] (a program
//! printing more is stopped), and the end of its stderr is kept for messages.
//!
//! Every failure is an `ERROR` output whose message names the member, the command and what
//! happened (with the end of stderr): a program that cannot be started (not found, not
//! executable), a timeout, too much output, a non-zero exit status, a signal (`was killed by
//! signal 9 (SIGKILL)`), invalid JSON or a missing `content`. A program that closes stdin
//! without reading it is fine. Stdout that is not UTF-8 is decoded with U+FFFD in place of
//! the bad bytes: the answer is kept, as a `WARNING` saying so.

use crate::context::RoundContext;
use crate::error::AgentError;
use crate::member::{EMPTY_TASK, MemberAgent, MemberOutput};
use mixseek_config::MemberSettings;
use mixseek_core::{MemberStatus, TranscriptBuilder, Usage};
use mixseek_process::{self as process, Finished, RunError, Spec, bytes_text, describe_status};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The default time limit of one run of the program.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// The most a command member may print on stdout (its JSON answer); a program printing more
/// is stopped and the task fails.
pub const MAX_STDOUT: usize = 16 * 1024 * 1024;
/// How many of stderr's last bytes are kept.
const STDERR_KEPT: usize = 64 * 1024;
/// How much of stderr is quoted in an error (characters, from the end).
const STDERR_TAIL: usize = 2000;
/// How much of stdout is quoted when it is not a JSON answer (characters, from the start).
const STDOUT_HEAD: usize = 300;

/// A `command` member.
pub(crate) struct CommandMember {
    name: String,
    program: PathBuf,
    args: Vec<String>,
    /// The command line as shown in messages.
    shown: String,
    cwd: Option<PathBuf>,
    timeout: Duration,
    tool_settings: serde_json::Value,
}

/// The command line as shown in messages: arguments with spaces or quotes are quoted.
fn shown(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if a.is_empty()
                || a.chars()
                    .any(|c| c.is_whitespace() || c == '"' || c == '\'')
            {
                format!("{a:?}")
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The program to start: a relative path with a directory part (`./agent.sh`) is taken
/// relative to `dir`; a bare name is looked up on `PATH`.
fn program(argv0: &str, dir: Option<&Path>) -> PathBuf {
    let p = Path::new(argv0);
    match dir {
        Some(d) if p.is_relative() && p.components().count() > 1 => d.join(p),
        _ => p.to_path_buf(),
    }
}

impl CommandMember {
    pub(crate) fn new(
        settings: &MemberSettings,
        base_dir: Option<&Path>,
    ) -> Result<Self, AgentError> {
        let name = settings.name.clone().unwrap_or_else(|| "member".into());
        let argv = settings.command.clone().unwrap_or_default();
        let (program, args) = match argv.split_first() {
            Some((p, rest)) if !p.trim().is_empty() => (p.clone(), rest.to_vec()),
            _ => {
                return Err(AgentError::Unsupported {
                    member: name,
                    message: "type = \"command\" needs a command".into(),
                    hint: Some("command = [\"python3\", \"agent.py\"]".into()),
                });
            }
        };
        let tool_settings = serde_json::to_value(settings.effective_tool_settings())
            .unwrap_or_else(|_| serde_json::json!({}));
        Ok(Self {
            name,
            program: self::program(&program, base_dir),
            args,
            shown: shown(&argv),
            cwd: base_dir.map(Path::to_path_buf),
            timeout: settings
                .timeout_seconds
                .filter(|t| *t > 0)
                .map_or(DEFAULT_TIMEOUT, Duration::from_secs),
            tool_settings,
        })
    }

    /// `command member `name`: `cmd` …` — the start of every failure message.
    fn prefix(&self) -> String {
        format!("command member `{}`: `{}`", self.name, self.shown)
    }

    async fn run(&self, input: &[u8]) -> Result<Finished, String> {
        let spec = Spec {
            program: &self.program,
            args: &self.args,
            cwd: self.cwd.as_deref(),
            input,
            timeout: self.timeout,
            max_stdout: MAX_STDOUT,
            stderr_kept: STDERR_KEPT,
        };
        process::run(spec).await.map_err(|e| match e {
            RunError::Spawn { .. } => format!(
                "command member `{}`: cannot start `{}`: {e}",
                self.name, self.shown
            ),
            RunError::Timeout(t) => format!(
                "{} did not answer within {} s and was killed with every process it started (timeout_seconds)",
                self.prefix(),
                t.as_secs_f64()
            ),
            RunError::StdoutTooLarge { limit } => format!(
                "{} printed more than {} on stdout and was stopped; a command member prints one JSON answer {{\"content\", \"status\", \"usage\"}} (send logs to stderr)",
                self.prefix(),
                bytes_text(limit)
            ),
            RunError::Io(e) => format!("{} failed: {e}", self.prefix()),
        })
    }

    /// Turns the program's run into an output.
    fn interpret(&self, task: &str, run: Finished) -> MemberOutput {
        let prefix = self.prefix();
        let stderr = run.stderr.text(STDERR_TAIL);
        let with_stderr = |msg: String| {
            if stderr.is_empty() {
                msg
            } else {
                format!("{msg}; stderr: {stderr}")
            }
        };
        if !run.status.success() {
            return MemberOutput::error(
                with_stderr(format!("{prefix} {}", describe_status(&run.status))),
                Usage::default(),
                Vec::new(),
            );
        }
        // Not UTF-8: the bad bytes become U+FFFD and the answer is kept, with a warning.
        let (stdout, not_utf8) = match String::from_utf8(run.stdout) {
            Ok(s) => (s, None),
            Err(e) => {
                let at = e.utf8_error().valid_up_to();
                let note = format!(
                    "{prefix} printed bytes that are not UTF-8 (the first at byte {at}); they were replaced by U+FFFD"
                );
                tracing::warn!(member = %self.name, command = %self.shown, first_invalid_byte = at, "command member printed non-UTF-8 output; invalid bytes replaced");
                (
                    String::from_utf8_lossy(e.as_bytes()).into_owned(),
                    Some(note),
                )
            }
        };
        let answer: Answer = match serde_json::from_str(&stdout) {
            Ok(a) => a,
            Err(e) => {
                let got = match stdout.trim() {
                    "" => "(nothing)".to_string(),
                    s => match s.char_indices().nth(STDOUT_HEAD) {
                        Some((i, _)) => format!("{}…", &s[..i]),
                        None => s.to_string(),
                    },
                };
                return MemberOutput::error(
                    with_stderr(format!(
                        "{prefix} did not print a JSON answer {{\"content\", \"status\", \"usage\"}}: {e}; got: {got}"
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
            serde_json::from_str::<serde_json::Value>(&stdout).unwrap_or(serde_json::Value::Null);
        let messages = {
            let mut t = TranscriptBuilder::new();
            t.user(task).command_answer(
                &self.shown,
                answer.content.as_deref().unwrap_or_default(),
                &raw_answer,
                &usage,
            );
            t.finish()
        };
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
                        "{prefix} answered an unknown status `{other}` (success, warning or error)"
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
                    .unwrap_or_else(|| with_stderr(format!("{prefix} reported an error"))),
                usage,
                messages,
            ),
            (_, None) => MemberOutput::error(
                format!("{prefix} answered without `content`"),
                usage,
                messages,
            ),
            (status, Some(content)) => {
                let (status, error_message) = match not_utf8 {
                    None => (status, answer.error_message),
                    Some(note) => (
                        MemberStatus::Warning,
                        Some(match answer.error_message {
                            Some(own) => format!("{own}; {note}"),
                            None => note,
                        }),
                    ),
                };
                MemberOutput {
                    status,
                    content,
                    error_message,
                    usage,
                    messages,
                }
            }
        }
    }
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
            Ok(run) => self.interpret(task, run),
            Err(message) => MemberOutput::error(message, Usage::default(), Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_and_programs() {
        let argv: Vec<String> = ["sh", "-c", "echo no luck >&2; exit 4"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(shown(&argv), "sh -c \"echo no luck >&2; exit 4\"");
        let d = Path::new("/team");
        assert_eq!(program("./a.sh", Some(d)), PathBuf::from("/team/./a.sh"));
        assert_eq!(program("python3", Some(d)), PathBuf::from("python3"));
        assert_eq!(program("/bin/sh", Some(d)), PathBuf::from("/bin/sh"));
    }
}
