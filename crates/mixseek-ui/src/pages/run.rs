//! The Run page: pick a configuration of the workspace, enter the task (or load it from a
//! file), check it (the `--dry-run` preflight), start; and the runs in progress.

use crate::configs;
use crate::layout::{self, Nav, esc};
use crate::pages::json_error;
use crate::server::AppState;
use axum::Json;
use axum::extract::{Form, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

/// The task a run may take, at most (bytes).
const MAX_PROMPT: usize = 1 << 20;

/// `GET /`.
pub(crate) async fn home() -> Redirect {
    Redirect::to("/run")
}

/// The `<select>` of the workspace's configurations.
pub(crate) fn config_select(id: &str, configs: &[String], chosen: Option<&str>) -> String {
    let mut h = format!("<select id=\"{id}\" name=\"config\" required>");
    for c in configs {
        h.push_str(&format!(
            "<option value=\"{0}\"{1}>{0}</option>",
            esc(c),
            if Some(c.as_str()) == chosen {
                " selected"
            } else {
                ""
            }
        ));
    }
    h.push_str("</select>");
    h
}

/// `GET /run`.
pub(crate) async fn page(State(s): State<AppState>) -> Response {
    let ws = s.workspace.clone();
    let list = tokio::task::spawn_blocking(move || configs::list(&ws))
        .await
        .unwrap_or_default();
    let form = if list.is_empty() {
        format!(
            "<div class=\"notice\" id=\"no-configs\">No orchestrator configuration in the workspace <code>{}</code>. \
             Create one with <code>mixseek init -w {}</code> (it writes <code>configs/</code>), then reload.</div>",
            esc(&s.workspace.display().to_string()),
            esc(&s.workspace.display().to_string())
        )
    } else {
        let preferred = list
            .iter()
            .find(|c| c.ends_with("quickstart/orchestrator.toml"))
            .map(String::as_str);
        format!(
            "<form id=\"run-form\" class=\"stack\" method=\"post\" action=\"/api/runs\">\n\
             <label for=\"config\">Orchestrator configuration</label>{}\n\
             <label for=\"prompt\">Task (the user prompt every team answers)</label>\n\
             <textarea id=\"prompt\" name=\"prompt\" required placeholder=\"Write a haiku about autumn\"></textarea>\n\
             <label for=\"prompt-file\">…or load it from a file</label><input type=\"file\" id=\"prompt-file\" accept=\".txt,.md,text/*\">\n\
             <div class=\"buttons\"><button type=\"button\" class=\"secondary\" id=\"preflight\">Check (preflight)</button>\
             <button type=\"submit\" id=\"start\">Start</button></div>\n\
             <p class=\"notice error\" id=\"run-error\" role=\"alert\"></p>\n\
             <pre id=\"preflight-output\" hidden></pre>\n</form>",
            config_select("config", &list, preferred)
        )
    };
    let body = format!(
        "<h1>Run a competition</h1>\n{form}\n\
         <h2>Runs in progress</h2>\n<div id=\"active-runs\"><p class=\"empty muted\">None right now (runs started from a terminal show here too).</p>\
         <table><thead><tr><th>Execution</th><th>Task</th><th>Status</th><th>Teams</th><th>Started</th></tr></thead><tbody></tbody></table></div>"
    );
    layout::page("Run", Nav::Run, &body)
}

/// The fields of a run or preflight request.
#[derive(Debug, Deserialize)]
pub(crate) struct RunForm {
    #[serde(default)]
    config: String,
    #[serde(default)]
    prompt: String,
}

fn checked(s: &AppState, f: &RunForm) -> Result<std::path::PathBuf, Response> {
    let Some(config) = configs::resolve(&s.workspace, &f.config) else {
        return Err(json_error(
            StatusCode::BAD_REQUEST,
            format!(
                "`{}` is not an orchestrator configuration of this workspace; pick one from the list",
                f.config
            ),
        ));
    };
    if f.prompt.trim().is_empty() {
        return Err(json_error(
            StatusCode::BAD_REQUEST,
            "the task is empty: write the prompt every team answers",
        ));
    }
    if f.prompt.len() > MAX_PROMPT {
        return Err(json_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the task is longer than 1 MiB",
        ));
    }
    Ok(config)
}

/// `POST /api/preflight`.
pub(crate) async fn preflight(State(s): State<AppState>, Form(f): Form<RunForm>) -> Response {
    let config = match checked(&s, &f) {
        Ok(c) => c,
        Err(r) => return r,
    };
    Json(s.runs.preflight(&config, &f.prompt).await).into_response()
}

/// `POST /api/runs`: `{"execution_id", "live_url"}`.
pub(crate) async fn start(State(s): State<AppState>, Form(f): Form<RunForm>) -> Response {
    let config = match checked(&s, &f) {
        Ok(c) => c,
        Err(r) => return r,
    };
    match s.runs.start(&config, &f.prompt).await {
        Ok(id) => Json(serde_json::json!({
            "execution_id": id,
            "live_url": format!("/live/{id}"),
        }))
        .into_response(),
        Err(e) => run_error(e),
    }
}

/// The fields of a resume request.
#[derive(Debug, Deserialize)]
pub(crate) struct ResumeForm {
    #[serde(default)]
    config: String,
}

/// `POST /api/executions/{id}/resume`.
pub(crate) async fn resume(
    State(s): State<AppState>,
    Path(id): Path<String>,
    Form(f): Form<ResumeForm>,
) -> Response {
    if !crate::live::plain_id(&id) {
        return json_error(StatusCode::BAD_REQUEST, "not an execution id");
    }
    let Some(config) = configs::resolve(&s.workspace, &f.config) else {
        return json_error(
            StatusCode::BAD_REQUEST,
            format!(
                "`{}` is not an orchestrator configuration of this workspace",
                f.config
            ),
        );
    };
    if crate::live::execution(&s.logs(), &id).is_some_and(|e| e.live_status() == "running") {
        return json_error(StatusCode::CONFLICT, "this execution is running already");
    }
    match s.runs.resume(&id, &config).await {
        Ok(()) => Json(serde_json::json!({
            "execution_id": id,
            "live_url": format!("/live/{id}"),
        }))
        .into_response(),
        Err(e) => run_error(e),
    }
}

fn run_error(e: crate::runs::RunError) -> Response {
    let status = match e {
        crate::runs::RunError::Busy => StatusCode::CONFLICT,
        crate::runs::RunError::Spawn(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    json_error(status, e.to_string())
}
