//! Logging: `tracing` to stderr (text or JSON) and appended to `WORKSPACE/logs/mixseek.log`.
//!
//! The log file is opened lazily, at the first event written once the workspace exists, so a
//! command that creates the workspace (`init`, or the preflight of `exec --dry-run` on a new
//! workspace) still gets its log file, and nothing is created in a workspace that a read-only
//! command only looks at. Events with the target [`AUDIT`] go to the file only: one line per
//! command (what ran and how it ended), so every invocation leaves a trace in the file without
//! cluttering stderr. Every line, on stderr and in the file, goes through [`crate::redact`]
//! (API keys, and personal data when `[privacy] mask_pii` is on).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Target of the file-only events (`tracing::info!(target: AUDIT, ...)`).
pub(crate) const AUDIT: &str = "mixseek_audit";
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogLevel {
    Trace,
    Debug,
    Info,
    #[value(alias = "warn")]
    Warning,
    Error,
    Critical,
}

impl LogLevel {
    fn directive(self) -> &'static str {
        match self {
            LogLevel::Trace => "trace",
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warning => "warn",
            LogLevel::Error | LogLevel::Critical => "error",
        }
    }
}

/// A `MIXSEEK_*` variable with a value its setting does not accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EnvValueError {
    pub message: String,
    pub hint: String,
}

/// Reads a variable; unset and empty are both "not given".
fn var(env: &impl Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    env(name).filter(|v| !v.trim().is_empty())
}

/// A boolean variable: `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off` (any case); unset or
/// empty is `None`; anything else is an error naming the variable.
pub(crate) fn bool_var(
    name: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<bool>, EnvValueError> {
    let Some(raw) = var(&env, name) else {
        return Ok(None);
    };
    match raw.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" | "y" | "t" => Ok(Some(true)),
        "0" | "false" | "no" | "off" | "n" | "f" => Ok(Some(false)),
        _ => Err(EnvValueError {
            message: format!("invalid value {raw:?} of the environment variable {name}"),
            hint: format!("set {name} to 1 or 0 (true/false), or unset it"),
        }),
    }
}

/// A variable holding one of a `clap::ValueEnum`'s values (any case).
fn enum_var<T: clap::ValueEnum>(
    name: &str,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Option<T>, EnvValueError> {
    let Some(raw) = var(env, name) else {
        return Ok(None);
    };
    T::from_str(raw.trim(), true).map(Some).map_err(|_| {
        let values: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value())
            .map(|p| p.get_name().to_string())
            .collect();
        EnvValueError {
            message: format!("invalid value {raw:?} of the environment variable {name}"),
            hint: format!("possible values: {}; or unset {name}", values.join(", ")),
        }
    })
}

/// The logging set-up: command-line flags first, then `MIXSEEK_LOG_LEVEL`,
/// `MIXSEEK_LOG_FORMAT`, `MIXSEEK_LOG_CONSOLE` and `MIXSEEK_LOG_FILE`, then the defaults
/// (info, text, stderr on, file on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogSettings {
    pub level: LogLevel,
    pub format: LogFormat,
    /// Log records on stderr.
    pub console: bool,
    /// Log records in `WORKSPACE/logs/mixseek.log`.
    pub file: bool,
}

impl LogSettings {
    /// Resolves the flags (`None` / `false` when not given) against the environment.
    pub(crate) fn resolve(
        level: Option<LogLevel>,
        format: Option<LogFormat>,
        no_console: bool,
        no_file: bool,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, EnvValueError> {
        let level = match level {
            Some(l) => l,
            None => enum_var("MIXSEEK_LOG_LEVEL", &env)?.unwrap_or(LogLevel::Info),
        };
        let format = match format {
            Some(f) => f,
            None => enum_var("MIXSEEK_LOG_FORMAT", &env)?.unwrap_or(LogFormat::Text),
        };
        // A flag turns its output off whatever the variable says; the variable is still
        // checked, so a typo in it is reported.
        let console = bool_var("MIXSEEK_LOG_CONSOLE", &env)?.unwrap_or(true) && !no_console;
        let file = bool_var("MIXSEEK_LOG_FILE", &env)?.unwrap_or(true) && !no_file;
        Ok(Self {
            level,
            format,
            console,
            file,
        })
    }
}

/// Installs the global subscriber. `quiet` lowers stderr to errors only; `verbose` raises it to
/// debug. `MIXSEEK_LOG` (an EnvFilter directive) wins over the level flags for fine control.
pub(crate) fn init(
    settings: &LogSettings,
    quiet: bool,
    verbose: bool,
    workspace: Option<&Path>,
    otel: Option<crate::otel::OtelLayer>,
) {
    let LogSettings {
        level,
        format,
        console,
        file,
    } = *settings;
    let console_level = if quiet {
        "error"
    } else if verbose && level == LogLevel::Info {
        "debug"
    } else {
        level.directive()
    };
    let filter_for = |lvl: &str, audit: &str| -> LayerFilter {
        // MIXSEEK_LOG may hold any of EnvFilter's directives (span names, fields); ours are
        // plain targets and levels, for which `Targets` decides once per callsite, where
        // EnvFilter takes a lock at every span enter and exit (docs/benchmarks.md).
        if let Some(f) = std::env::var("MIXSEEK_LOG")
            .ok()
            .and_then(|d| EnvFilter::try_new(format!("{d},{AUDIT}={audit}")).ok())
        {
            return Box::new(f);
        }
        Box::new(own_targets(lvl, audit))
    };
    // Colours only on a terminal, and never with NO_COLOR (https://no-color.org).
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let stderr_layer = console.then(|| match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(crate::progress::StderrWriter)
            .with_ansi(ansi)
            .with_target(false)
            .compact()
            .boxed_layer(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .with_writer(crate::progress::StderrWriter)
            .json()
            .boxed_layer(),
    });
    let file_layer = workspace.filter(|_| file).map(|ws| {
        let writer = LogFile::new(ws);
        let layer = match format {
            LogFormat::Text => tracing_subscriber::fmt::layer()
                .with_writer(writer)
                .with_ansi(false)
                .boxed_layer(),
            LogFormat::Json => tracing_subscriber::fmt::layer()
                .with_writer(writer)
                .json()
                .boxed_layer(),
        };
        layer.with_filter_boxed(filter_for(level.directive(), "info"))
    });
    let mut layers: Vec<BoxedLayer> = Vec::new();
    if let Some(l) = stderr_layer {
        layers.push(l.with_filter_boxed(filter_for(console_level, "off")));
    }
    if let Some(f) = file_layer {
        layers.push(f);
    }
    if let Some(o) = otel {
        // mixseek's own spans, at info and above (the run's tree), nothing else.
        let ours = tracing_subscriber::filter::filter_fn(|m| {
            m.is_span() && m.target().starts_with("mixseek") && *m.level() <= tracing::Level::INFO
        });
        layers.push(Box::new(tracing_subscriber::Layer::with_filter(o, ours)));
    }
    let _ = tracing_subscriber::registry().with(layers).try_init();
}

/// `WORKSPACE/logs/mixseek.log`, opened (append, `logs/` created) at the first write made
/// while the workspace directory exists. Writes made before that are dropped.
#[derive(Clone)]
struct LogFile {
    workspace: PathBuf,
    file: Arc<Mutex<Option<File>>>,
}

impl LogFile {
    fn new(workspace: &Path) -> Self {
        Self {
            workspace: workspace.to_path_buf(),
            file: Arc::new(Mutex::new(None)),
        }
    }

    fn open(&self) -> Option<File> {
        if !self.workspace.is_dir() {
            return None;
        }
        let dir = self.workspace.join("logs");
        std::fs::create_dir_all(&dir).ok()?;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("mixseek.log"))
            .ok()
    }
}

/// One event's bytes, written to the file in one call when dropped.
struct LogLine {
    target: LogFile,
    buf: Vec<u8>,
}

impl Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let Ok(mut guard) = self.target.file.lock() else {
            return;
        };
        if guard.is_none() {
            *guard = self.target.open();
        }
        if let Some(f) = guard.as_mut() {
            let _ = f.write_all(&crate::redact::bytes(&self.buf));
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogFile {
    type Writer = LogLine;
    fn make_writer(&'a self) -> Self::Writer {
        LogLine {
            target: self.clone(),
            buf: Vec::new(),
        }
    }
}

type BoxedLayer = Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

trait Boxed {
    fn boxed_layer(self) -> BoxedLayer;
}

impl<L> Boxed for L
where
    L: tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync + 'static,
{
    fn boxed_layer(self) -> BoxedLayer {
        Box::new(self)
    }
}

/// A layer's filter: our own targets, or the user's `MIXSEEK_LOG` directives.
type LayerFilter =
    Box<dyn tracing_subscriber::layer::Filter<tracing_subscriber::Registry> + Send + Sync>;

/// Our crates at `lvl`, the audit events at `audit`, everything else at `warn`.
fn own_targets(lvl: &str, audit: &str) -> tracing_subscriber::filter::Targets {
    use tracing_subscriber::filter::LevelFilter;
    let level = |l: &str| l.parse::<LevelFilter>().unwrap_or(LevelFilter::INFO);
    let ours = [
        "mixseek",
        "mixseek_core",
        "mixseek_config",
        "mixseek_llm",
        "mixseek_prompt",
        "mixseek_evaluator",
        "mixseek_agents",
        "mixseek_round",
        "mixseek_store",
        "mixseek_orchestrator",
    ];
    tracing_subscriber::filter::Targets::new()
        .with_default(LevelFilter::WARN)
        .with_targets(ours.map(|t| (t, level(lvl))))
        .with_target(AUDIT, level(audit))
}

trait WithFilter {
    fn with_filter_boxed(self, f: LayerFilter) -> BoxedLayer;
}

impl WithFilter for BoxedLayer {
    fn with_filter_boxed(self, f: LayerFilter) -> BoxedLayer {
        use tracing_subscriber::Layer;
        Box::new(self.with_filter(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_targets_log_at_the_level_asked_and_the_rest_at_warn() {
        use tracing::Level;
        let t = own_targets("info", "off");
        for ours in [
            "mixseek",
            "mixseek_llm",
            "mixseek_store::writer",
            "mixseek_ui",
        ] {
            assert!(t.would_enable(ours, &Level::INFO), "{ours}");
            assert!(!t.would_enable(ours, &Level::DEBUG), "{ours}");
        }
        assert!(
            !t.would_enable(AUDIT, &Level::ERROR),
            "the audit line is off"
        );
        assert!(t.would_enable("hyper", &Level::WARN));
        assert!(!t.would_enable("hyper", &Level::INFO));
        let t = own_targets("debug", "info");
        assert!(t.would_enable("mixseek_round", &Level::DEBUG));
        assert!(!t.would_enable("mixseek_round", &Level::TRACE));
        assert!(t.would_enable(AUDIT, &Level::INFO));
        assert!(!t.would_enable("reqwest", &Level::INFO));
    }

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn flags_win_over_variables_which_win_over_defaults() {
        let none = LogSettings::resolve(None, None, false, false, env(&[])).expect("ok");
        assert_eq!(
            none,
            LogSettings {
                level: LogLevel::Info,
                format: LogFormat::Text,
                console: true,
                file: true
            }
        );
        let vars = [
            ("MIXSEEK_LOG_LEVEL", "WARNING"),
            ("MIXSEEK_LOG_FORMAT", "json"),
            ("MIXSEEK_LOG_CONSOLE", "0"),
            ("MIXSEEK_LOG_FILE", "false"),
        ];
        let from_env = LogSettings::resolve(None, None, false, false, env(&vars)).expect("ok");
        assert_eq!(
            from_env,
            LogSettings {
                level: LogLevel::Warning,
                format: LogFormat::Json,
                console: false,
                file: false
            }
        );
        let flags = LogSettings::resolve(
            Some(LogLevel::Debug),
            Some(LogFormat::Text),
            true,
            true,
            env(&[("MIXSEEK_LOG_CONSOLE", "1"), ("MIXSEEK_LOG_FILE", "on")]),
        )
        .expect("ok");
        assert_eq!(
            flags,
            LogSettings {
                level: LogLevel::Debug,
                format: LogFormat::Text,
                console: false,
                file: false
            }
        );
        // Empty is unset.
        let empty =
            LogSettings::resolve(None, None, false, false, env(&[("MIXSEEK_LOG_LEVEL", "")]));
        assert_eq!(empty.expect("ok").level, LogLevel::Info);
    }

    #[test]
    fn a_bad_value_names_the_variable_and_the_values_it_takes() {
        let e = LogSettings::resolve(
            None,
            None,
            false,
            false,
            env(&[("MIXSEEK_LOG_LEVEL", "loud")]),
        )
        .expect_err("bad");
        assert_eq!(
            e.message,
            "invalid value \"loud\" of the environment variable MIXSEEK_LOG_LEVEL"
        );
        assert!(e.hint.contains("debug, info, warning"), "{}", e.hint);
        let e = LogSettings::resolve(
            None,
            None,
            false,
            false,
            env(&[("MIXSEEK_LOG_FILE", "maybe")]),
        )
        .expect_err("bad");
        assert!(e.message.contains("MIXSEEK_LOG_FILE"), "{}", e.message);
        assert_eq!(bool_var("X", env(&[("X", " Yes ")])), Ok(Some(true)));
        assert_eq!(bool_var("X", env(&[])), Ok(None));
    }
}
