//! Logging: `tracing` to stderr (text or JSON) and, when the workspace exists, appended to
//! `WORKSPACE/logs/mixseek.log`.

use std::path::Path;
use std::sync::Mutex;
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
    let filter_for = |lvl: &str| {
        let own = format!(
            "warn,mixseek={lvl},mixseek_core={lvl},mixseek_config={lvl},mixseek_llm={lvl},mixseek_prompt={lvl},mixseek_evaluator={lvl},mixseek_agents={lvl},mixseek_round={lvl},mixseek_store={lvl},mixseek_orchestrator={lvl},mixseek_cli={lvl}"
        );
        std::env::var("MIXSEEK_LOG")
            .ok()
            .and_then(|d| EnvFilter::try_new(d).ok())
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
    let file_layer = workspace.filter(|_| file).and_then(|ws| {
        if !ws.is_dir() {
            return None;
        }
        let dir = ws.join("logs");
        std::fs::create_dir_all(&dir).ok()?;
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("mixseek.log"))
            .ok()?;
        let layer = match format {
            LogFormat::Text => tracing_subscriber::fmt::layer()
                .with_writer(Mutex::new(f))
                .with_ansi(false)
                .boxed_layer(),
            LogFormat::Json => tracing_subscriber::fmt::layer()
                .with_writer(Mutex::new(f))
                .json()
                .boxed_layer(),
        };
        Some(layer.with_filter_boxed(filter_for(level.directive())))
    });
    let mut layers: Vec<BoxedLayer> =
        vec![stderr_layer.with_filter_boxed(filter_for(console_level))];
    if let Some(f) = file_layer {
        layers.push(f);
    }
    let _ = tracing_subscriber::registry().with(layers).try_init();
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
