//! Live progress of `mixseek exec` on stderr: one indicatif line per team showing its round,
//! phase, best score and tokens. Shown only when stderr is a terminal and neither `--quiet`
//! nor `--no-progress` (`MIXSEEK_NO_PROGRESS=1`) is given. While the lines are up, log records go through [`write_stderr`], which hides the
//! lines for the moment a record is printed so neither tears the other.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use mixseek_core::{Event, EventSink, SinkError};
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// The display currently on screen, if any (for [`write_stderr`]).
static ACTIVE: OnceLock<Mutex<Option<MultiProgress>>> = OnceLock::new();

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Writes `buf` to stderr (keys and, when asked for, personal data masked:
/// [`crate::redact`]), hiding the progress lines around it when they are shown.
pub(crate) fn write_stderr(buf: &[u8]) -> std::io::Result<()> {
    let buf = &*crate::redact::bytes(buf);
    let active = ACTIVE.get().and_then(|a| lock(a).clone());
    match active {
        Some(mp) => mp.suspend(|| std::io::stderr().lock().write_all(buf)),
        None => std::io::stderr().lock().write_all(buf),
    }
}

/// A `tracing` writer for stderr that cooperates with the progress display.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StderrWriter;

impl Write for StderrWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        write_stderr(buf)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for StderrWriter {
    type Writer = StderrWriter;
    fn make_writer(&'a self) -> Self::Writer {
        *self
    }
}

/// Set by `--no-progress` / `MIXSEEK_NO_PROGRESS` (see [`disable`]).
static DISABLED: AtomicBool = AtomicBool::new(false);

/// Turns the live display off for this process (`--no-progress`, `MIXSEEK_NO_PROGRESS=1`).
pub(crate) fn disable() {
    DISABLED.store(true, Ordering::Relaxed);
}

/// Whether the live display should be shown: stderr is a terminal, not `--quiet`, and the
/// display was not turned off.
pub(crate) fn wanted(quiet: bool) -> bool {
    !quiet && !DISABLED.load(Ordering::Relaxed) && std::io::stderr().is_terminal()
}

/// What a team is doing now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Waiting,
    Leader,
    Evaluating,
    Judging,
    Done(&'static str),
}

/// One team's line, independent of the terminal (unit-tested).
#[derive(Debug, Clone, PartialEq)]
struct TeamLine {
    round: u32,
    phase: Phase,
    best: Option<f64>,
    tokens: u64,
}

impl TeamLine {
    fn new() -> Self {
        Self {
            round: 0,
            phase: Phase::Waiting,
            best: None,
            tokens: 0,
        }
    }

    /// Applies one event concerning this team; returns whether the line changed.
    fn apply(&mut self, event: &Event) -> bool {
        match event {
            Event::RoundStarted { round_number, .. } => {
                self.round = *round_number;
                self.phase = Phase::Leader;
            }
            Event::SubmissionReady { .. } => self.phase = Phase::Evaluating,
            Event::Evaluated(r) => {
                let s = r.score_details.overall_score;
                self.best = Some(self.best.map_or(s, |b| b.max(s)));
                self.phase = Phase::Judging;
            }
            Event::LlmCall(c) => self.tokens += c.usage.total_tokens(),
            Event::TeamFinished { status, .. } => self.phase = Phase::Done(status.as_str()),
            _ => return false,
        }
        true
    }

    fn message(&self) -> String {
        let phase = match self.phase {
            Phase::Waiting => "waiting".to_string(),
            Phase::Leader => "leader working".to_string(),
            Phase::Evaluating => "evaluating".to_string(),
            Phase::Judging => "judging".to_string(),
            Phase::Done(status) => status.to_string(),
        };
        let best = self
            .best
            .map(|b| format!("{b:.2}"))
            .unwrap_or_else(|| "-".into());
        format!("{phase:<15} best {best:>6}  {} tokens", self.tokens)
    }
}

fn team_of(event: &Event) -> Option<&str> {
    match event {
        Event::RoundStarted { team_id, .. }
        | Event::SubmissionReady { team_id, .. }
        | Event::Judged { team_id, .. }
        | Event::TeamFinished { team_id, .. } => Some(team_id.as_str()),
        Event::Evaluated(r) => Some(r.team_id.as_str()),
        Event::LlmCall(c) => c.team_id.as_deref(),
        Event::ExecutionStarted { .. } | Event::ExecutionFinished(_) => None,
    }
}

/// The indicatif display: a bar per team whose length is the maximum number of rounds.
pub(crate) struct ProgressBars {
    mp: MultiProgress,
    style: ProgressStyle,
    teams: Mutex<HashMap<String, (ProgressBar, TeamLine)>>,
    max_rounds: Mutex<u64>,
}

impl ProgressBars {
    /// A display drawing on stderr (registered for [`write_stderr`]).
    pub(crate) fn new() -> Self {
        let mp = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(10));
        *lock(ACTIVE.get_or_init(|| Mutex::new(None))) = Some(mp.clone());
        let style = ProgressStyle::with_template(
            "{spinner} {prefix:<16!} round {pos}/{len} {wide_msg} {elapsed:>4}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏✓");
        Self {
            mp,
            style,
            teams: Mutex::new(HashMap::new()),
            max_rounds: Mutex::new(1),
        }
    }

    fn bar_for<'a>(
        &self,
        teams: &'a mut HashMap<String, (ProgressBar, TeamLine)>,
        team_id: &str,
    ) -> &'a mut (ProgressBar, TeamLine) {
        teams.entry(team_id.to_string()).or_insert_with(|| {
            let bar = self.mp.add(ProgressBar::new(*lock(&self.max_rounds)));
            bar.set_style(self.style.clone());
            bar.set_prefix(team_id.to_string());
            bar.enable_steady_tick(Duration::from_millis(120));
            let line = TeamLine::new();
            bar.set_message(line.message());
            (bar, line)
        })
    }

    fn finish_all(&self) {
        for (bar, _) in lock(&self.teams).values() {
            if !bar.is_finished() {
                bar.finish();
            }
        }
        if let Some(a) = ACTIVE.get() {
            *lock(a) = None;
        }
    }
}

impl Default for ProgressBars {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for ProgressBars {
    fn drop(&mut self) {
        self.finish_all();
    }
}

#[async_trait::async_trait]
impl EventSink for ProgressBars {
    async fn emit(&self, event: &Event) -> Result<(), SinkError> {
        match event {
            Event::ExecutionStarted {
                teams, max_rounds, ..
            } => {
                *lock(&self.max_rounds) = u64::from(*max_rounds).max(1);
                let mut map = lock(&self.teams);
                for t in teams {
                    self.bar_for(&mut map, t.team_id.as_str());
                }
            }
            Event::ExecutionFinished(_) => self.finish_all(),
            _ => {
                let Some(team) = team_of(event) else {
                    return Ok(());
                };
                let mut map = lock(&self.teams);
                let (bar, line) = self.bar_for(&mut map, team);
                if line.apply(event) {
                    bar.set_position(u64::from(line.round));
                    bar.set_message(line.message());
                    if matches!(line.phase, Phase::Done(_)) {
                        bar.finish();
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mixseek_core::{LlmCallRecord, Role, TeamStatusKind, Usage};

    fn started(round: u32) -> Event {
        Event::RoundStarted {
            execution_id: "e".into(),
            team_id: "alpha".into(),
            team_name: "Alpha".into(),
            round_number: round,
            at: chrono::Utc::now(),
        }
    }

    fn call(tokens: u64) -> Event {
        Event::LlmCall(Box::new(LlmCallRecord {
            execution_id: Some("e".into()),
            team_id: Some("alpha".into()),
            round_number: Some(1),
            role: Role::Leader,
            model: "mock:x".into(),
            usage: Usage {
                input_tokens: tokens,
                ..Usage::default()
            },
            latency_ms: 1,
            attempts: 1,
            cache_hit: false,
            error: None,
            at: chrono::Utc::now(),
        }))
    }

    #[test]
    fn a_team_line_follows_round_phase_tokens_and_status() {
        let mut line = TeamLine::new();
        assert_eq!(line.message(), "waiting         best      -  0 tokens");
        assert!(line.apply(&started(2)));
        assert!(line.apply(&call(120)));
        assert!(line.apply(&call(30)));
        assert_eq!(line.round, 2);
        assert_eq!(line.message(), "leader working  best      -  150 tokens");
        let finished = Event::TeamFinished {
            execution_id: "e".into(),
            team_id: "alpha".into(),
            team_name: "Alpha".into(),
            status: TeamStatusKind::Completed,
            best: None,
            exit_reason: None,
            rounds_completed: 2,
            error_message: None,
            usage: Usage::default(),
            at: chrono::Utc::now(),
        };
        assert!(line.apply(&finished));
        assert!(line.message().starts_with("completed "));
    }

    #[test]
    fn events_are_routed_to_their_team() {
        assert_eq!(team_of(&started(1)), Some("alpha"));
        assert_eq!(team_of(&call(1)), Some("alpha"));
    }
}
