//! The live view of one execution, the list of runs in progress, and cancelling a run. All of
//! it comes from the progress files (a running execution holds the database).

use crate::layout::{self, Nav, esc, url};
use crate::live::{self, ExecutionFile, FileUsage};
use crate::pages::json_error;
use crate::server::AppState;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// Lines of log shown.
const LOG_LINES: usize = 40;

/// One team in the live view.
#[derive(Debug, Serialize)]
struct LiveTeam {
    team_id: String,
    team_name: String,
    current_round: u32,
    total_rounds: u32,
    phase: String,
    best_score: Option<f64>,
    usage: FileUsage,
    status: String,
    error_message: Option<String>,
}

/// `GET /api/live/{id}`.
#[derive(Debug, Serialize)]
pub(crate) struct LiveState {
    execution_id: String,
    /// `starting`, `running`, `stopped` (its process ended unfinished), or the stored status.
    status: String,
    user_prompt: String,
    total_teams: u32,
    teams: Vec<LiveTeam>,
    log: Vec<String>,
    cancellable: bool,
}

fn live_state(s: &AppState, id: &str) -> Option<LiveState> {
    let logs = s.logs();
    let file = live::execution(&logs, id);
    let run = s.runs.get(id);
    let status = match (&file, &run) {
        // resumed by this UI: the file is the earlier process's until the new one rewrites it
        (Some(f), Some(r)) if r.exit.is_none() && f.pid != r.pid => "starting".to_string(),
        (Some(f), Some(r)) if f.status == "running" && r.exit.is_some() => "stopped".to_string(),
        (Some(f), _) => f.live_status().to_string(),
        (None, Some(r)) if r.exit.is_none() => "starting".into(),
        (None, Some(_)) => "failed".into(),
        (None, None) => return None,
    };
    let over = !matches!(status.as_str(), "running" | "starting");
    let teams = live::teams(&logs, id)
        .into_iter()
        .map(|mut t| {
            // An interrupted or killed run leaves its unfinished teams' files at `running`.
            if over && t.status == "running" {
                t.status = if status == "completed" {
                    "stopped".into()
                } else {
                    status.clone()
                };
                t.current_agent = None;
            }
            t
        })
        .map(|t| LiveTeam {
            phase: t.phase(),
            team_id: t.team_id,
            team_name: t.team_name,
            current_round: t.current_round,
            total_rounds: t.total_rounds,
            best_score: t.best_score,
            usage: t.usage,
            status: t.status,
            error_message: t.error_message,
        })
        .collect();
    let log = if run.is_some() {
        live::tail(&live::run_log(&logs, id), None, LOG_LINES)
    } else {
        live::tail(&logs.join("mixseek.log"), Some(id), LOG_LINES)
    };
    let cancellable = status == "running" || status == "starting";
    let f = file.unwrap_or_default();
    Some(LiveState {
        execution_id: id.to_string(),
        status,
        user_prompt: f.user_prompt,
        total_teams: f.total_teams,
        teams,
        log,
        cancellable,
    })
}

/// `GET /api/live/{id}`.
pub(crate) async fn state(State(s): State<AppState>, Path(id): Path<String>) -> Response {
    if !live::plain_id(&id) {
        return json_error(StatusCode::BAD_REQUEST, "not an execution id");
    }
    let state = tokio::task::spawn_blocking(move || live_state(&s, &id))
        .await
        .ok()
        .flatten();
    match state {
        Some(st) => Json(st).into_response(),
        None => json_error(
            StatusCode::NOT_FOUND,
            "no run with this id is known to the progress files",
        ),
    }
}

/// `GET /live/{id}`.
pub(crate) async fn page(State(s): State<AppState>, Path(id): Path<String>) -> Response {
    if !live::plain_id(&id) {
        return crate::pages::not_found().await;
    }
    let prompt = live::execution(&s.logs(), &id)
        .map(|f| f.user_prompt)
        .unwrap_or_default();
    let body = format!(
        "<div data-live=\"{id}\">\n<h1>Execution <code>{short}</code></h1>\n\
         <p>Status: <span id=\"exec-status\" class=\"status\">…</span> · teams reporting: <span id=\"exec-teams\">0</span> \
         <button type=\"button\" class=\"danger\" id=\"cancel\" hidden>Cancel run</button> \
         <a class=\"button secondary\" id=\"results-link\" href=\"/executions/{href}\" hidden>Open results</a></p>\n\
         <p class=\"muted\" id=\"live-note\" role=\"status\"></p>\n\
         <pre class=\"prompt\" id=\"live-prompt\">{prompt}</pre>\n\
         <table id=\"live-teams\"><thead><tr><th>Team</th><th>Round</th><th>Phase</th><th>Best score</th><th>Tokens</th>\
         <th>Cost</th><th>Status</th><th>Error</th></tr></thead><tbody></tbody></table>\n\
         <h2>Log</h2>\n<pre class=\"log\" id=\"live-log\"></pre>\n</div>",
        id = esc(&id),
        short = esc(id.get(..8).unwrap_or(&id)),
        href = esc(&url(&id)),
        prompt = esc(&prompt),
    );
    layout::page("Live", Nav::Run, &body)
}

/// `GET /api/active`: the executions running now (from any process), newest first.
pub(crate) async fn active(State(s): State<AppState>) -> Response {
    let list = tokio::task::spawn_blocking(move || {
        let mut out: Vec<ExecutionFile> = live::executions(&s.logs())
            .into_iter()
            .filter(|f| f.live_status() == "running")
            .map(|mut f| {
                f.status = "running".into();
                f
            })
            .collect();
        out.truncate(200);
        out
    })
    .await
    .unwrap_or_default();
    Json(list).into_response()
}

/// `POST /api/runs/{id}/cancel`.
pub(crate) async fn cancel(State(s): State<AppState>, Path(id): Path<String>) -> Response {
    if !live::plain_id(&id) {
        return json_error(StatusCode::BAD_REQUEST, "not an execution id");
    }
    if s.runs.cancel(&id) {
        Json(serde_json::json!({ "cancelled": true })).into_response()
    } else {
        json_error(
            StatusCode::CONFLICT,
            "this run is not running, was already sent a cancel, or was not started by mixseek on this machine",
        )
    }
}
