//! Validation problems, collected (never only the first) and rendered with file, key path,
//! position and a hint.

use std::fmt;
use std::path::{Path, PathBuf};

/// One problem found in a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigIssue {
    /// The file the problem is in, when it comes from a file.
    pub file: Option<PathBuf>,
    /// Dotted key path, e.g. `orchestrator.max_rounds` or `team.members[1].temperature`.
    pub key: String,
    /// 1-based line and column of the key or value, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// What to do about it ("did you mean `max_rounds`?", "allowed range: 1..=10").
    pub hint: Option<String>,
    /// Set on the warning about a `MIXSEEK_*` environment variable that names no setting
    /// (it is ignored): the variable, so that the warning is reported once per variable
    /// however many files it was checked against.
    pub env_var: Option<String>,
}

impl ConfigIssue {
    /// An issue about `key` with no file, position or hint yet.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            file: None,
            key: key.into(),
            line: None,
            column: None,
            message: message.into(),
            hint: None,
            env_var: None,
        }
    }
    /// The warning about `var`, a `MIXSEEK_*` variable that names no setting and is ignored.
    pub(crate) fn unknown_env_var(var: impl Into<String>, hint: impl Into<String>) -> Self {
        let var = var.into();
        let mut issue =
            Self::new(var.clone(), "unknown environment variable, ignored").with_hint(hint);
        issue.env_var = Some(var);
        issue
    }
    /// With a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
    /// In `file`, unless it already names one.
    pub fn in_file(mut self, file: &Path) -> Self {
        if self.file.is_none() {
            self.file = Some(file.to_path_buf());
        }
        self
    }
    /// At 1-based `line` and `column`.
    pub fn at(mut self, line: usize, column: usize) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self
    }
}

impl fmt::Display for ConfigIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}", file.display())?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
                if let Some(col) = self.column {
                    write!(f, ":{col}")?;
                }
            }
            write!(f, ": ")?;
        }
        if !self.key.is_empty() {
            write!(f, "`{}`: ", self.key)?;
        }
        write!(f, "{}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " ({hint})")?;
        }
        Ok(())
    }
}

/// A collector of issues with helpers for the common checks. Section types implement
/// `validate(&self, prefix, &mut Issues)` with it.
#[derive(Debug, Default, Clone)]
pub struct Issues {
    /// The issues, in the order found.
    pub items: Vec<ConfigIssue>,
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

impl Issues {
    /// Adds `other`'s issues after these.
    pub fn append(&mut self, mut other: Issues) {
        self.items.append(&mut other.items);
    }
    /// Adds one issue.
    pub fn push(&mut self, issue: ConfigIssue) {
        self.items.push(issue);
    }
    /// Adds an error about `prefix.key`.
    pub fn error(&mut self, prefix: &str, key: &str, message: impl Into<String>) {
        self.items
            .push(ConfigIssue::new(join(prefix, key), message));
    }
    pub(crate) fn error_hint(
        &mut self,
        prefix: &str,
        key: &str,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) {
        self.items
            .push(ConfigIssue::new(join(prefix, key), message).with_hint(hint));
    }
    /// `value` must lie in `lo..=hi`.
    pub(crate) fn range_f64(&mut self, prefix: &str, key: &str, value: f64, lo: f64, hi: f64) {
        if !(value >= lo && value <= hi) {
            self.items.push(
                ConfigIssue::new(join(prefix, key), format!("{value} is out of range"))
                    .with_hint(format!("allowed range: {lo}..={hi}")),
            );
        }
    }
    pub(crate) fn range_i64(&mut self, prefix: &str, key: &str, value: i64, lo: i64, hi: i64) {
        if value < lo || value > hi {
            self.items.push(
                ConfigIssue::new(join(prefix, key), format!("{value} is out of range"))
                    .with_hint(format!("allowed range: {lo}..={hi}")),
            );
        }
    }
    pub(crate) fn opt_range_f64(
        &mut self,
        prefix: &str,
        key: &str,
        value: Option<f64>,
        lo: f64,
        hi: f64,
    ) {
        if let Some(v) = value {
            self.range_f64(prefix, key, v, lo, hi);
        }
    }
    pub(crate) fn opt_range_i64(
        &mut self,
        prefix: &str,
        key: &str,
        value: Option<i64>,
        lo: i64,
        hi: i64,
    ) {
        if let Some(v) = value {
            self.range_i64(prefix, key, v, lo, hi);
        }
    }
    /// A string that must not be blank.
    pub(crate) fn non_blank(&mut self, prefix: &str, key: &str, value: &str) {
        if value.trim().is_empty() {
            self.items.push(ConfigIssue::new(
                join(prefix, key),
                format!("{key} cannot be empty"),
            ));
        }
    }
    /// Whether there is no issue.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    /// The number of issues.
    pub fn len(&self) -> usize {
        self.items.len()
    }
}

/// The closest candidate to `wrong` (Jaro-Winkler ≥ 0.7 or Levenshtein ≤ 2), for "did you mean".
pub fn closest<'a>(wrong: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let wrong_l = wrong.to_ascii_lowercase();
    let mut best: Option<(&str, f64)> = None;
    for c in candidates {
        let c_l = c.to_ascii_lowercase();
        let jw = strsim::jaro_winkler(&wrong_l, &c_l);
        let lev = strsim::levenshtein(&wrong_l, &c_l);
        let score = if lev <= 2 { jw.max(0.9) } else { jw };
        if score >= 0.7 && best.is_none_or(|(_, s)| score > s) {
            best = Some((c, score));
        }
    }
    best.map(|(c, _)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_finds_typos() {
        let keys = ["max_rounds", "min_rounds", "timeout_per_team_seconds"];
        assert_eq!(closest("max_round", keys), Some("max_rounds"));
        assert_eq!(closest("maxrounds", keys), Some("max_rounds"));
        assert_eq!(
            closest("timeout_per_team", keys),
            Some("timeout_per_team_seconds")
        );
        assert_eq!(closest("zzzzzz", keys), None);
    }

    #[test]
    fn issues_render_file_line_key_and_hint() {
        let i = ConfigIssue::new("orchestrator.max_roundz", "unknown key")
            .with_hint("did you mean `max_rounds`?")
            .in_file(Path::new("orch.toml"))
            .at(3, 1);
        assert_eq!(
            i.to_string(),
            "orch.toml:3:1: `orchestrator.max_roundz`: unknown key (did you mean `max_rounds`?)"
        );
    }

    #[test]
    fn range_checks_name_the_allowed_range() {
        let mut v = Issues::default();
        v.range_i64("orchestrator", "max_rounds", 11, 1, 10);
        v.range_f64("", "temperature", 1.5, 0.0, 2.0);
        assert_eq!(v.len(), 1);
        assert_eq!(v.items[0].hint.as_deref(), Some("allowed range: 1..=10"));
    }
}
