//! Progress on stderr: one line per team step (round started, submission ready, evaluated,
//! judged, finished). Hidden with `--quiet`.

use mixseek_core::{Event, EventSink, SinkError};
use std::io::Write;

#[derive(Debug, Default)]
pub struct ProgressLines;

impl ProgressLines {
    pub fn new() -> Self {
        Self
    }
}

#[async_trait::async_trait]
impl EventSink for ProgressLines {
    async fn emit(&self, event: &Event) -> Result<(), SinkError> {
        let line = match event {
            Event::RoundStarted {
                team_id,
                round_number,
                ..
            } => Some(format!("[{team_id}] round {round_number}: leader working")),
            Event::SubmissionReady {
                team_id,
                round_number,
                usage,
                ..
            } => Some(format!(
                "[{team_id}] round {round_number}: submission ready ({} tokens), evaluating",
                usage.total_tokens()
            )),
            Event::Evaluated(r) => Some(format!(
                "[{}] round {}: score {:.2}",
                r.team_id, r.round_number, r.score_details.overall_score
            )),
            Event::Judged {
                team_id,
                round_number,
                decision,
                ..
            } => Some(format!(
                "[{team_id}] round {round_number}: {}",
                if decision.should_continue {
                    "continue".to_string()
                } else {
                    format!(
                        "stop ({})",
                        decision.exit_reason.map(|r| r.as_str()).unwrap_or("stop")
                    )
                }
            )),
            Event::TeamFinished {
                team_id,
                status,
                best,
                ..
            } => Some(format!(
                "[{team_id}] finished: {} (best {})",
                status.as_str(),
                best.as_ref()
                    .map(|b| format!("{:.2} in round {}", b.score, b.round_number))
                    .unwrap_or_else(|| "none".into())
            )),
            _ => None,
        };
        if let Some(l) = line {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{l}");
        }
        Ok(())
    }
}
