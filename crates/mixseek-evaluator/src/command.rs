//! Command metrics (`type = "command"`): any program scores the submission. It gets
//! `{user_prompt, submission, execution_id, team_id, round_number, metric}` as JSON on stdin
//! and prints `{"score": <number>, "evaluator_comment": <string>}` on stdout (the last
//! non-empty line may be the JSON when the program prints other lines first). Scores are not
//! bounded unless the metric sets `min_score` / `max_score` (backtest-style metrics may be
//! negative or above 100), but they are always finite numbers: `NaN`, `Infinity` or a number
//! too large for a double is bad output, and a score outside the declared range is an
//! `out_of_range` error; nothing is clamped.
//!
//! A start failure, a timeout, a non-zero exit or a signal, stdout that is not UTF-8 or
//! larger than [`MAX_STDOUT`] and bad output are each a [`MetricFailure`] naming the metric,
//! the command and what happened, with an excerpt of the program's stdout kept as its
//! `raw_output`. How the program is run (process group, caps, EPIPE): [`crate::process`].

use crate::error::{MetricFailure, MetricFailureKind};
use mixseek_process::{self as process, RunError, Spec, bytes_text, describe_status};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The most a command metric may print on stdout; a program printing more is stopped and
/// the metric fails.
pub const MAX_STDOUT: usize = 8 * 1024 * 1024;
/// How many of stderr's last bytes are kept (for the error message and the debug log).
const STDERR_KEPT: usize = 64 * 1024;
/// Characters of stdout or stderr quoted in an error message.
const SHOWN: usize = 500;
/// Characters of stdout kept as a failure's `raw_output` (first and last halves when longer).
pub(crate) const RAW_KEPT: usize = 16 * 1024;

/// What a command metric reads on stdin.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CommandInput<'a> {
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

/// A `type = "command"` metric, resolved.
#[derive(Debug, Clone)]
pub(crate) struct CommandMetric {
    /// Program and arguments.
    pub argv: Vec<String>,
    pub timeout: Duration,
    /// The scores it may print (`min_score`, `max_score`); open by default.
    pub range: ScoreRange,
}

/// The range a command metric declared (`min_score`, `max_score`, both inclusive); unset
/// bounds are open. Scores are finite whatever the range.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct ScoreRange {
    pub min: Option<f64>,
    pub max: Option<f64>,
}

impl ScoreRange {
    /// `Ok` when `score` is finite and within the range.
    pub(crate) fn check(&self, score: f64) -> Result<(), String> {
        if !score.is_finite() {
            return Err(format!(
                "a score that is not a finite number ({})",
                number(score)
            ));
        }
        let below = self.min.is_some_and(|m| score < m);
        let above = self.max.is_some_and(|m| score > m);
        if below || above {
            return Err(format!(
                "score {}, outside its range {} (min_score / max_score)",
                number(score),
                self.describe()
            ));
        }
        Ok(())
    }

    /// `0..=100`, `0..`, `..=100`.
    pub(crate) fn describe(&self) -> String {
        let min = self.min.map_or_else(String::new, number);
        let max = self
            .max
            .map_or_else(String::new, |m| format!("={}", number(m)));
        format!("{min}..{max}")
    }
}

/// A number as written in messages: `100`, `-12.5`, `1e300` (no 300-digit expansions).
fn number(x: f64) -> String {
    if x.is_finite() && x.abs() < 1e16 {
        x.to_string()
    } else {
        format!("{x:?}")
    }
}

/// The start of `s` (trimmed), at most [`SHOWN`] characters; `…` marks a cut.
fn head(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(SHOWN) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// `s` as kept in a failure's `raw_output`: whole up to [`RAW_KEPT`] characters, else its
/// first and last halves around a note of what was left out.
pub(crate) fn kept(s: &str) -> String {
    let n = s.chars().count();
    if n <= RAW_KEPT {
        return s.to_string();
    }
    let half = RAW_KEPT / 2;
    let first: String = s.chars().take(half).collect();
    let last: String = s.chars().skip(n - half).collect();
    format!(
        "{first}\n… [{} characters left out] …\n{last}",
        n - 2 * half
    )
}

/// The command line as shown in messages: arguments with spaces or quotes are quoted.
pub(crate) fn shown(argv: &[String]) -> String {
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

/// The program to start: a relative path with a directory part (`./score.sh`,
/// `scripts/score.py`) is taken relative to `dir`; a bare name is looked up on `PATH`.
fn program(argv0: &str, dir: Option<&Path>) -> PathBuf {
    let p = Path::new(argv0);
    match dir {
        Some(d) if p.is_relative() && p.components().count() > 1 => d.join(p),
        _ => p.to_path_buf(),
    }
}

/// Runs the command once; returns the score (finite, within the metric's range) and the
/// comment.
pub(crate) async fn run(
    metric: &CommandMetric,
    name: &str,
    input: &CommandInput<'_>,
    dir: Option<&Path>,
) -> Result<(f64, String), MetricFailure> {
    let fail = |kind: MetricFailureKind, message: String, raw: Option<String>| MetricFailure {
        metric_name: name.to_string(),
        kind,
        message,
        provider: None,
        retries: None,
        raw_output: raw,
        rejected: Vec::new(),
    };
    let shown = shown(&metric.argv);
    let payload = serde_json::to_vec(input).map_err(|e| {
        fail(
            MetricFailureKind::Internal,
            format!("cannot encode the input: {e}"),
            None,
        )
    })?;
    let Some((argv0, args)) = metric.argv.split_first() else {
        return Err(fail(
            MetricFailureKind::Spawn,
            format!("command metric '{name}': the command is empty"),
            None,
        ));
    };
    let program = program(argv0, dir);
    let spec = Spec {
        program: &program,
        args,
        cwd: dir,
        input: &payload,
        timeout: metric.timeout,
        max_stdout: MAX_STDOUT,
        stderr_kept: STDERR_KEPT,
    };
    let done = process::run(spec).await.map_err(|e| match e {
        RunError::Spawn { .. } => fail(
            MetricFailureKind::Spawn,
            format!("command metric '{name}': cannot start `{shown}`: {e}"),
            None,
        ),
        RunError::Timeout(t) => fail(
            MetricFailureKind::Timeout,
            format!(
                "command metric '{name}': `{shown}` timed out after {}s (timeout_seconds) and was killed with every process it started",
                t.as_secs_f64()
            ),
            None,
        ),
        RunError::StdoutTooLarge { limit } => fail(
            MetricFailureKind::BadOutput,
            format!(
                "command metric '{name}': `{shown}` printed more than {} on stdout and was stopped; a command metric prints one JSON object {{\"score\": <number>, \"evaluator_comment\": <string>}} (send logs to stderr or a file)",
                bytes_text(limit)
            ),
            None,
        ),
        RunError::Io(e) => fail(
            MetricFailureKind::Spawn,
            format!("command metric '{name}': running `{shown}` failed: {e}"),
            None,
        ),
    })?;
    let stderr = done.stderr.text(SHOWN);
    if !stderr.is_empty() {
        tracing::debug!(metric = name, stderr = %stderr, "command metric stderr");
    }
    let lossy = || kept(&String::from_utf8_lossy(&done.stdout));
    if !done.status.success() {
        let detail = if stderr.is_empty() {
            String::new()
        } else {
            format!(": {stderr}")
        };
        return Err(fail(
            MetricFailureKind::Exit,
            format!(
                "command metric '{name}': `{shown}` {}{detail}",
                describe_status(&done.status)
            ),
            Some(lossy()),
        ));
    }
    let stdout = std::str::from_utf8(&done.stdout).map_err(|e| {
        fail(
            MetricFailureKind::BadOutput,
            format!(
                "command metric '{name}': `{shown}` printed bytes that are not UTF-8 on stdout (the first at byte {}); a command metric prints one UTF-8 JSON object {{\"score\": <number>, \"evaluator_comment\": <string>}}",
                e.valid_up_to()
            ),
            Some(lossy()),
        )
    })?;
    let got = || {
        if stdout.trim().is_empty() {
            "(nothing)".to_string()
        } else {
            head(stdout)
        }
    };
    let (score, comment) = parse_output(stdout).map_err(|why| {
        fail(
            MetricFailureKind::BadOutput,
            format!(
                "command metric '{name}': `{shown}` printed {why}; expected one JSON object {{\"score\": <number>, \"evaluator_comment\": <string>}} on stdout, got: {}",
                got()
            ),
            Some(kept(stdout)),
        )
    })?;
    metric.range.check(score).map_err(|why| {
        fail(
            MetricFailureKind::OutOfRange,
            format!(
                "command metric '{name}': `{shown}` printed {why}; nothing is clamped, got: {}",
                got()
            ),
            Some(kept(stdout)),
        )
    })?;
    Ok((score, comment))
}

/// A `NaN` / `Infinity` literal (Python's `json.dumps` of a non-finite float) or a number
/// too large for a double given as the score, e.g. `NaN` in `{"score": NaN}`.
fn non_finite_score(text: &str) -> Option<&str> {
    let after = text.split_once("\"score\"")?.1.trim_start();
    let value = after.strip_prefix(':')?.trim_start();
    let end = value
        .find(|c: char| c == ',' || c == '}' || c.is_whitespace())
        .unwrap_or(value.len());
    let token = value.get(..end)?;
    // Rust's float syntax reads `NaN`, `inf`, `Infinity` and overflows to an infinity.
    token
        .parse::<f64>()
        .is_ok_and(|x| !x.is_finite())
        .then_some(token)
}

/// Parses what the program printed: one JSON object, or the JSON object on its last
/// non-empty line. The score is a finite number.
pub(crate) fn parse_output(stdout: &str) -> Result<(f64, String), String> {
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
                .unwrap_or("")
                .trim();
            match attempt(last) {
                Ok(o) => o,
                Err(_) => {
                    if let Some(token) =
                        non_finite_score(last).or_else(|| non_finite_score(trimmed))
                    {
                        return Err(format!(
                            "a score that is not a finite number (`{token}`; NaN and infinities are not JSON numbers)"
                        ));
                    }
                    return Err(format!("invalid JSON ({first})"));
                }
            }
        }
    };
    // serde_json numbers are finite; checked anyway, so no NaN can slip through.
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
    use proptest::prelude::*;

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
    fn non_finite_scores_are_bad_output_with_their_token() {
        for (text, token) in [
            ("{\"score\": NaN, \"evaluator_comment\": \"x\"}", "NaN"),
            ("{\"score\": Infinity}", "Infinity"),
            ("log line\n{\"score\":-Infinity}", "-Infinity"),
            ("{\"score\": 1e999}", "1e999"),
            ("{\"score\": -1e400, \"evaluator_comment\": \"\"}", "-1e400"),
        ] {
            let e = parse_output(text).unwrap_err();
            assert!(
                e.starts_with(&format!("a score that is not a finite number (`{token}`")),
                "{text}: {e}"
            );
        }
        // The largest double is finite, hence a valid (unbounded) score.
        assert_eq!(
            parse_output("{\"score\": 1.7976931348623157e308}").map(|r| r.0),
            Ok(f64::MAX)
        );
    }

    #[test]
    fn ranges_are_inclusive_and_open_when_unset() {
        let r = ScoreRange {
            min: Some(0.0),
            max: Some(100.0),
        };
        assert_eq!(r.check(0.0), Ok(()));
        assert_eq!(r.check(100.0), Ok(()));
        assert_eq!(
            r.check(100.5),
            Err("score 100.5, outside its range 0..=100 (min_score / max_score)".into())
        );
        assert!(r.check(-0.01).is_err());
        assert!(r.check(f64::NAN).is_err());
        let open = ScoreRange::default();
        assert_eq!(open.check(-1e300), Ok(()));
        assert!(open.check(f64::INFINITY).is_err());
        assert_eq!(
            ScoreRange {
                min: Some(-5.5),
                max: None
            }
            .describe(),
            "-5.5.."
        );
    }

    #[test]
    fn kept_output_is_bounded_and_marks_the_cut() {
        let long = format!("{}{}", "a".repeat(RAW_KEPT), "b".repeat(RAW_KEPT));
        let k = kept(&long);
        assert!(k.chars().count() < RAW_KEPT + 100);
        assert!(k.starts_with('a') && k.ends_with('b'));
        assert!(k.contains(&format!("[{RAW_KEPT} characters left out]")));
        assert_eq!(kept("short"), "short");
        assert_eq!(
            head(&"é".repeat(SHOWN + 1)),
            format!("{}…", "é".repeat(SHOWN))
        );
    }

    #[test]
    fn command_lines_quote_arguments_with_spaces() {
        let argv: Vec<String> = ["sh", "-c", "echo hi >&2; exit 3", ""]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(shown(&argv), "sh -c \"echo hi >&2; exit 3\" \"\"");
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

    /// Scores as a program might print them, including non-finite and huge ones.
    fn score_text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<f64>().prop_map(|x| x.to_string()),
            any::<i64>().prop_map(|x| x.to_string()),
            any::<u64>().prop_map(|x| x.to_string()),
            (any::<f64>(), -400i32..400).prop_map(|(m, e)| format!("{m}e{e}")),
            prop::sample::select(
                [
                    "NaN",
                    "Infinity",
                    "-Infinity",
                    "1e999",
                    "-1e999",
                    "1e308",
                    "null",
                    "\"7\"",
                    "-0",
                    "0.0e0",
                ]
                .map(str::to_string)
                .to_vec()
            ),
            Just("9".repeat(400)),
        ]
    }

    proptest! {
        #[test]
        fn the_parser_never_panics_and_scores_are_finite(text in any::<String>()) {
            if let Ok((score, _)) = parse_output(&text) {
                prop_assert!(score.is_finite());
            }
        }

        #[test]
        fn printed_scores_are_finite_and_within_the_declared_range(
            score in score_text(),
            noise in "[a-z {}:\",\n]{0,20}",
            lo in prop::option::of(-1e6f64..1e6),
            width in prop::option::of(0f64..1e6),
        ) {
            let range = ScoreRange { min: lo, max: lo.zip(width).map(|(l, w)| l + w) };
            for text in [
                format!("{{\"score\": {score}, \"evaluator_comment\": \"c\"}}"),
                format!("{noise}\n{{\"score\":{score}}}"),
                format!("{{\"score\": {score}{noise}"),
            ] {
                if let Ok((s, _)) = parse_output(&text) {
                    prop_assert!(s.is_finite(), "{text} gave {s}");
                    if range.check(s).is_ok() {
                        prop_assert!(range.min.is_none_or(|m| s >= m));
                        prop_assert!(range.max.is_none_or(|m| s <= m));
                    }
                }
            }
        }

        #[test]
        fn the_range_check_accepts_exactly_the_finite_scores_inside(
            x in any::<f64>(),
            a in prop::option::of(any::<f64>().prop_filter("finite", |v| v.is_finite())),
            b in prop::option::of(any::<f64>().prop_filter("finite", |v| v.is_finite())),
        ) {
            let range = ScoreRange { min: a, max: b };
            let inside = x.is_finite()
                && a.is_none_or(|m| x >= m)
                && b.is_none_or(|m| x <= m);
            prop_assert_eq!(range.check(x).is_ok(), inside);
        }
    }
}
