//! Logging: `tracing` to stderr (text or JSON) and appended to `WORKSPACE/logs/mixseek.log`.
//!
//! The log file is opened lazily, at the first event written once the workspace exists, so a
//! command that creates the workspace (`init`, or the preflight of `exec --dry-run` on a new
//! workspace) still gets its log file, and nothing is created in a workspace that a read-only
//! command only looks at. Events with the target [`AUDIT`] go to the file only: one line per
//! command (what ran and how it ended), so every invocation leaves a trace in the file without
//! cluttering stderr.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Target of the file-only events (`tracing::info!(target: AUDIT, ...)`).
pub const AUDIT: &str = "mixseek_audit";
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogLevel {
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

/// Installs the global subscriber. `quiet` lowers stderr to errors only; `verbose` raises it to
/// debug. `MIXSEEK_LOG` (an EnvFilter directive) wins over the level flags for fine control.
pub fn init(
    level: LogLevel,
    format: LogFormat,
    quiet: bool,
    verbose: bool,
    workspace: Option<&Path>,
    file: bool,
) {
    let console_level = if quiet {
        "error"
    } else if verbose && level == LogLevel::Info {
        "debug"
    } else {
        level.directive()
    };
    let filter_for = |lvl: &str, audit: &str| {
        let own = format!(
            "warn,mixseek={lvl},mixseek_core={lvl},mixseek_config={lvl},mixseek_llm={lvl},mixseek_prompt={lvl},mixseek_evaluator={lvl},mixseek_agents={lvl},mixseek_round={lvl},mixseek_store={lvl},mixseek_orchestrator={lvl},mixseek_cli={lvl},{AUDIT}={audit}"
        );
        std::env::var("MIXSEEK_LOG")
            .ok()
            .and_then(|d| EnvFilter::try_new(format!("{d},{AUDIT}={audit}")).ok())
            .unwrap_or_else(|| EnvFilter::new(own))
    };
    // Colours only on a terminal, and never with NO_COLOR (https://no-color.org).
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let stderr_layer = match format {
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
    };
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
    let mut layers: Vec<BoxedLayer> =
        vec![stderr_layer.with_filter_boxed(filter_for(console_level, "off"))];
    if let Some(f) = file_layer {
        layers.push(f);
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
            let _ = f.write_all(&self.buf);
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

trait WithFilter {
    fn with_filter_boxed(self, f: EnvFilter) -> BoxedLayer;
}

impl WithFilter for BoxedLayer {
    fn with_filter_boxed(self, f: EnvFilter) -> BoxedLayer {
        use tracing_subscriber::Layer;
        Box::new(self.with_filter(f))
    }
}
