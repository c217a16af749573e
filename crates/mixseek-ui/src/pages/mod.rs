//! The pages and their JSON endpoints.

pub(crate) mod compare;
pub(crate) mod experiments;
pub(crate) mod history;
pub(crate) mod live;
pub(crate) mod results;
pub(crate) mod run;

use crate::data::ReadError;
use crate::layout::{self, Nav, esc};
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Any unknown address.
pub(crate) async fn not_found() -> Response {
    layout::page_with_status(
        StatusCode::NOT_FOUND,
        "Not found",
        Nav::Results,
        "<h1>Not found</h1><p>There is no such page. <a href=\"/history\">See every execution.</a></p>",
    )
}

/// The page of a failed read.
pub(crate) fn read_error(e: ReadError, nav: Nav) -> Response {
    match e {
        ReadError::Busy { pid } => layout::page_with_status(
            StatusCode::SERVICE_UNAVAILABLE,
            "A run is writing",
            nav,
            &format!(
                "<h1>A run is writing the database</h1><div class=\"notice\" id=\"busy\">DuckDB lets one process use \
                 <code>mixseek.db</code> while it writes{}. Results show here when it finishes; meanwhile follow it \
                 live on the <a href=\"/run\">Run page</a>.</div>",
                pid.map(|p| format!(" (process {p})")).unwrap_or_default()
            ),
        ),
        ReadError::NoDatabase => layout::page(
            "No executions yet",
            nav,
            "<h1>No executions yet</h1><p>This workspace has no database yet: <a href=\"/run\">start a run</a>, or run \
             <code>mixseek exec</code>.</p>",
        ),
        ReadError::NotFound(what) => layout::page_with_status(
            StatusCode::NOT_FOUND,
            "Not found",
            nav,
            &format!("<h1>Not found</h1><p>{}</p>", esc(&what)),
        ),
        ReadError::Failed(what) => layout::page_with_status(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Cannot read",
            nav,
            &format!(
                "<h1>The database cannot be read</h1><div class=\"notice error\">{}</div>",
                esc(&what)
            ),
        ),
    }
}

/// A JSON error answer: `{"error": message}`.
pub(crate) fn json_error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(serde_json::json!({ "error": message.into() }))).into_response()
}
