//! The prompt builder's errors. Template errors keep the original's contractual prefix
//! `Jinja2 template error: ` and add the template, line and column; undefined-variable errors
//! list the variables the template may use.

use std::fmt;

/// The three user-prompt templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TemplateKind {
    /// The team leader's user prompt of a round.
    Team,
    /// The evaluator's user prompt for one submission.
    Evaluator,
    /// The judgment's user prompt (continue or stop) after a round.
    Judgment,
}

impl TemplateKind {
    /// Every kind, in the order above.
    pub const ALL: [TemplateKind; 3] = [
        TemplateKind::Team,
        TemplateKind::Evaluator,
        TemplateKind::Judgment,
    ];

    /// `team`, `evaluator`, `judgment` (the CLI's `--kind` values).
    pub fn as_str(&self) -> &'static str {
        match self {
            TemplateKind::Team => "team",
            TemplateKind::Evaluator => "evaluator",
            TemplateKind::Judgment => "judgment",
        }
    }

    /// The settings key holding the template (`team_user_prompt`, …).
    pub fn key(&self) -> &'static str {
        match self {
            TemplateKind::Team => "team_user_prompt",
            TemplateKind::Evaluator => "evaluator_user_prompt",
            TemplateKind::Judgment => "judgment_user_prompt",
        }
    }

    /// The kind named by `s`, either [`as_str`](Self::as_str) or [`key`](Self::key).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == s || k.key() == s)
    }
}

impl fmt::Display for TemplateKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// Which template text an error is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateName {
    /// One of the three user-prompt templates.
    Prompt(TemplateKind),
    /// The `when` expression of an injection rule.
    RuleWhen(String),
    /// The `text` template of an injection rule.
    RuleText(String),
}

impl fmt::Display for TemplateName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplateName::Prompt(k) => write!(f, "{}", k.key()),
            TemplateName::RuleWhen(n) => write!(f, "injection rule `{n}` (when)"),
            TemplateName::RuleText(n) => write!(f, "injection rule `{n}` (text)"),
        }
    }
}

/// Where a time-zone name came from (named in the error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeZoneSource {
    /// The `TZ` environment variable (the original's only source; its message is kept).
    Env,
    /// `[prompt_builder] timezone`.
    Settings,
    /// The CLI's `--tz`.
    Cli,
}

impl fmt::Display for TimeZoneSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimeZoneSource::Env => "TZ environment variable",
            TimeZoneSource::Settings => "[prompt_builder] timezone",
            TimeZoneSource::Cli => "--tz",
        })
    }
}

/// ` (line 3, column 5)`, or nothing when unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Location {
    /// The 1-based line, when known.
    pub line: Option<u32>,
    /// The 1-based column, when known.
    pub column: Option<u32>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, " (line {l}, column {c})"),
            (Some(l), None) => write!(f, " (line {l})"),
            _ => Ok(()),
        }
    }
}

/// Why building, rendering or injecting a prompt failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PromptError {
    /// The template does not parse.
    #[error("Jinja2 template error: {template}{location}: {detail}")]
    Syntax {
        /// The template at fault.
        template: TemplateName,
        /// Where in it.
        location: Location,
        /// The template engine's message.
        detail: String,
    },

    /// The template uses a name that is not one of its variables.
    #[error(
        "Jinja2 template error: {template}{location}: {detail}; available variables: {}",
        available.join(", ")
    )]
    UndefinedVariable {
        /// The template at fault.
        template: TemplateName,
        /// Where in it.
        location: Location,
        /// Names the template uses that are not available (may be empty, e.g. for
        /// `user_prompt.foo`).
        unknown: Vec<String>,
        /// Every variable this template can use.
        available: Vec<String>,
        /// The template engine's message.
        detail: String,
    },

    /// Any other failure while rendering (unknown filter, invalid operation such as
    /// `int + str`, …).
    #[error("Jinja2 template error: {template}{location}: {detail}")]
    Render {
        /// The template at fault.
        template: TemplateName,
        /// Where in it.
        location: Location,
        /// The template engine's message.
        detail: String,
    },

    /// A context field breaks the original's rules (`user_prompt cannot be empty`,
    /// `round_number must be >= 1`, …).
    #[error("{0}")]
    InvalidContext(String),

    /// The time zone is not an IANA name.
    #[error(
        "Invalid timezone in {origin}: {value}. Valid examples: 'UTC', 'Asia/Tokyo', 'America/New_York'"
    )]
    InvalidTimeZone {
        /// Where the name came from.
        origin: TimeZoneSource,
        /// The name as given.
        value: String,
    },

    /// Position message with an impossible total.
    #[error("Invalid total_teams: {total}")]
    InvalidTotalTeams {
        /// The total given.
        total: usize,
    },

    /// Position message with a position outside 1..=total.
    #[error("Invalid position: {position} (total_teams: {total})")]
    InvalidPosition {
        /// The position given.
        position: usize,
        /// The total given.
        total: usize,
    },

    /// The settings do not validate (blank template, bad rule, …); one line per problem.
    #[error("invalid [prompt_builder] settings:\n{}", issues.join("\n"))]
    InvalidSettings {
        /// One message per problem.
        issues: Vec<String>,
    },

    /// A file given to the builder (settings or context) cannot be read or parsed.
    #[error("{path}: {message}")]
    File {
        /// The file, as given.
        path: String,
        /// What is wrong with it.
        message: String,
    },
}

impl PromptError {
    /// The template the error is about, for template errors.
    pub fn template(&self) -> Option<&TemplateName> {
        match self {
            PromptError::Syntax { template, .. }
            | PromptError::UndefinedVariable { template, .. }
            | PromptError::Render { template, .. } => Some(template),
            _ => None,
        }
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// 1-based line and column (in characters) of a byte offset of `source`.
pub(crate) fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let col = match before.rfind('\n') {
        Some(i) => before[i + 1..].chars().count(),
        None => before.chars().count(),
    } + 1;
    (line, col)
}

/// Converts a minijinja error about `template` (whose source is `source`) into ours.
/// `available` is the template's variable list (used for undefined-variable errors) and
/// `used` the names the template references.
pub(crate) fn from_minijinja(
    err: &minijinja::Error,
    template: TemplateName,
    source: &str,
    available: &[&str],
    used: impl FnOnce() -> Vec<String>,
) -> PromptError {
    let location = match err.range() {
        Some(r) => {
            let (line, column) = line_col(source, r.start);
            Location {
                line: Some(to_u32(line)),
                column: Some(to_u32(column)),
            }
        }
        None => Location {
            line: err.line().map(to_u32),
            column: None,
        },
    };
    let detail = match err.detail() {
        Some(d) => format!("{}: {d}", err.kind()),
        None => err.kind().to_string(),
    };
    match err.kind() {
        minijinja::ErrorKind::SyntaxError | minijinja::ErrorKind::BadEscape => {
            PromptError::Syntax {
                template,
                location,
                detail,
            }
        }
        minijinja::ErrorKind::UndefinedError => {
            let mut unknown: Vec<String> = used()
                .into_iter()
                .filter(|n| !available.contains(&n.as_str()))
                .collect();
            unknown.sort();
            PromptError::UndefinedVariable {
                template,
                location,
                unknown,
                available: available.iter().map(|s| s.to_string()).collect(),
                detail,
            }
        }
        _ => PromptError::Render {
            template,
            location,
            detail,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("abc", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("日本\n語x", "日本\n語".len()), (2, 2));
        assert_eq!(line_col("x", 99), (1, 2));
    }

    #[test]
    fn messages_keep_the_original_prefixes() {
        let e = PromptError::InvalidTimeZone {
            origin: TimeZoneSource::Env,
            value: "JST-9".into(),
        };
        assert_eq!(
            e.to_string(),
            "Invalid timezone in TZ environment variable: JST-9. Valid examples: 'UTC', 'Asia/Tokyo', 'America/New_York'"
        );
        assert_eq!(
            PromptError::InvalidTotalTeams { total: 0 }.to_string(),
            "Invalid total_teams: 0"
        );
        assert_eq!(
            PromptError::InvalidPosition {
                position: 6,
                total: 5
            }
            .to_string(),
            "Invalid position: 6 (total_teams: 5)"
        );
        let e = PromptError::UndefinedVariable {
            template: TemplateName::Prompt(TemplateKind::Evaluator),
            location: Location {
                line: Some(2),
                column: Some(4),
            },
            unknown: vec!["round_number".into()],
            available: vec!["user_prompt".into(), "submission".into()],
            detail: "undefined value: `round_number` is undefined".into(),
        };
        assert_eq!(
            e.to_string(),
            "Jinja2 template error: evaluator_user_prompt (line 2, column 4): undefined value: `round_number` is undefined; available variables: user_prompt, submission"
        );
    }
}
