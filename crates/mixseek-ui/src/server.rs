//! The server: options, the shared state, the routes, and the listener.

use crate::error::UiError;
use crate::pages;
use crate::runs::Runs;
use crate::security::{self, Guard};
use axum::Router;
use axum::routing::{get, post};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

/// How to serve.
#[derive(Debug, Clone)]
pub struct UiOptions {
    /// The address to listen on (`127.0.0.1` unless told otherwise).
    pub host: String,
    /// The port (0: any free port).
    pub port: u16,
    /// The workspace: its configurations, `mixseek.db` and `logs/`.
    pub workspace: PathBuf,
    /// The access token; when `None` and the address is not loopback, one is generated.
    pub token: Option<String>,
    /// The `mixseek` binary that runs started from the UI execute.
    pub exe: PathBuf,
}

/// What every handler shares.
#[derive(Debug, Clone)]
pub(crate) struct AppState {
    pub workspace: PathBuf,
    pub runs: Runs,
}

impl AppState {
    pub(crate) fn db(&self) -> PathBuf {
        self.workspace.join(mixseek_store::DB_FILE_NAME)
    }
    pub(crate) fn logs(&self) -> PathBuf {
        self.workspace.join("logs")
    }
}

/// A UI listening, not yet serving.
#[derive(Debug)]
pub struct Ui {
    listener: tokio::net::TcpListener,
    router: Router,
    /// The address it listens on.
    pub addr: SocketAddr,
    /// The token every request needs (`None` on loopback).
    pub token: Option<String>,
}

impl Ui {
    /// The address to open: with `?token=` when a token is needed.
    pub fn url(&self) -> String {
        let host = match self.addr.ip() {
            IpAddr::V4(v) if v.is_unspecified() => "127.0.0.1".to_string(),
            IpAddr::V6(v) if v.is_unspecified() => "[::1]".to_string(),
            IpAddr::V6(v) => format!("[{v}]"),
            IpAddr::V4(v) => v.to_string(),
        };
        match &self.token {
            Some(t) => format!("http://{host}:{}/?token={t}", self.addr.port()),
            None => format!("http://{host}:{}/", self.addr.port()),
        }
    }

    /// Serves until the process ends (or `shutdown` resolves).
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), UiError> {
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(UiError::Serve)
    }
}

/// Binds the address and builds the routes.
pub async fn start(opts: UiOptions) -> Result<Ui, UiError> {
    let ip: IpAddr = opts
        .host
        .trim_matches(|c| c == '[' || c == ']')
        .parse()
        .map_err(|_| UiError::Host {
            host: opts.host.clone(),
        })?;
    let meta = std::fs::metadata(&opts.workspace).map_err(|source| UiError::Workspace {
        path: opts.workspace.clone(),
        source,
    })?;
    if !meta.is_dir() {
        return Err(UiError::Workspace {
            path: opts.workspace.clone(),
            source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        });
    }
    let workspace = opts
        .workspace
        .canonicalize()
        .map_err(|source| UiError::Workspace {
            path: opts.workspace.clone(),
            source,
        })?;
    let addr = SocketAddr::new(ip, opts.port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| UiError::Bind {
            addr: addr.to_string(),
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| UiError::Bind {
        addr: addr.to_string(),
        source,
    })?;
    let token = if ip.is_loopback() {
        opts.token
    } else {
        Some(opts.token.unwrap_or_else(security::new_token))
    };
    let state = AppState {
        runs: Runs::new(opts.exe, workspace.clone()),
        workspace,
    };
    let guard = Arc::new(Guard::new(addr, token.clone()));
    let router = routes(state).layer(axum::middleware::from_fn_with_state(guard, security::guard));
    Ok(Ui {
        listener,
        router,
        addr,
        token,
    })
}

fn routes(state: AppState) -> Router {
    Router::new()
        .route("/", get(pages::run::home))
        .route("/run", get(pages::run::page))
        .route("/live/{id}", get(pages::live::page))
        .route("/results", get(pages::results::latest))
        .route("/executions/{id}", get(pages::results::page))
        .route("/executions/{id}/teams/{team}", get(pages::results::team))
        .route(
            "/executions/{id}/download/{what}",
            get(pages::results::download),
        )
        .route("/history", get(pages::history::page))
        .route("/compare", get(pages::compare::page))
        .route("/experiments", get(pages::experiments::page))
        .route("/experiments/{name}", get(pages::experiments::by_path))
        .route("/api/active", get(pages::live::active))
        .route("/api/live/{id}", get(pages::live::state))
        .route("/api/preflight", post(pages::run::preflight))
        .route("/api/runs", post(pages::run::start))
        .route("/api/runs/{id}/cancel", post(pages::live::cancel))
        .route("/api/executions/{id}/resume", post(pages::run::resume))
        .route("/assets/ui.css", get(crate::assets::css))
        .route("/assets/ui.js", get(crate::assets::js))
        .fallback(pages::not_found)
        .with_state(state)
}
