//! Where each effective setting came from: default, file:line, environment variable or CLI.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// Where one effective setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Not set anywhere: the default.
    Default,
    /// A file, at a 1-based line.
    File {
        /// The file.
        path: PathBuf,
        /// The key's line.
        line: usize,
    },
    /// An environment variable.
    Env {
        /// The variable's name.
        var: String,
    },
    /// A command-line flag.
    Cli {
        /// The flag, e.g. `--timeout`.
        flag: String,
    },
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File { path, line } => write!(f, "{}:{line}", path.display()),
            Source::Env { var } => write!(f, "env {var}"),
            Source::Cli { flag } => write!(f, "cli {flag}"),
        }
    }
}

impl Source {
    /// `default`, `file`, `env` or `cli`.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Default => "default",
            Source::File { .. } => "file",
            Source::Env { .. } => "env",
            Source::Cli { .. } => "cli",
        }
    }
}

/// Dotted key path (as shown by `config show`, e.g. `orchestrator.max_rounds`,
/// `teams[0].team.leader.model`) → source. Absent keys are defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceMap(pub BTreeMap<String, Source>);

impl SourceMap {
    /// Records where `key` came from.
    pub fn set(&mut self, key: String, source: Source) {
        self.0.insert(key, source);
    }
    /// The source of a key; default when the key was not set by a file, the environment or
    /// the command line.
    pub fn get(&self, key: &str) -> Source {
        self.0.get(key).cloned().unwrap_or(Source::Default)
    }
    /// Copies `other`'s entries under `prefix`.
    pub(crate) fn extend_prefixed(&mut self, prefix: &str, other: &SourceMap) {
        for (k, v) in &other.0 {
            self.0.insert(format!("{prefix}{k}"), v.clone());
        }
    }
}
