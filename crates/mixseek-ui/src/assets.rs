//! The page assets, compiled into the binary: the report's style sheet plus the UI's own
//! rules, and one script (no inline script anywhere: the Content-Security-Policy forbids it).

use axum::http::header;
use axum::response::{IntoResponse, Response};

const UI_CSS: &str = include_str!("../assets/ui.css");
const UI_JS: &str = include_str!("../assets/ui.js");

/// `GET /assets/ui.css`.
pub(crate) async fn css() -> Response {
    let body = format!("{}\n{UI_CSS}", mixseek_store::report::html::CSS);
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// `GET /assets/ui.js`.
pub(crate) async fn js() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        UI_JS,
    )
        .into_response()
}
