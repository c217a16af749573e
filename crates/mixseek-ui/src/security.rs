//! The request guard: the `Host` check (loopback binds), the access token (other binds), the
//! same-origin check on every state-changing request, and the security headers of every
//! answer (a Content-Security-Policy without inline scripts, so escaped text stays text).

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The cookie that carries the token after the first `?token=` visit.
pub(crate) const TOKEN_COOKIE: &str = "mixseek_token";

/// What the guard checks.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    /// Required on every request when set (the UI listens beyond loopback).
    pub token: Option<String>,
    /// The `Host` values accepted (loopback binds only; empty = any).
    pub hosts: Vec<String>,
}

impl Guard {
    /// The guard of a server on `addr`: loopback accepts only its loopback names; another
    /// address any `Host`, with the token.
    pub(crate) fn new(addr: std::net::SocketAddr, token: Option<String>) -> Self {
        let port = addr.port();
        let hosts = if addr.ip().is_loopback() {
            vec![
                format!("127.0.0.1:{port}"),
                format!("localhost:{port}"),
                format!("[::1]:{port}"),
            ]
        } else {
            Vec::new()
        };
        Guard { token, hosts }
    }
}

/// Compares without stopping at the first difference.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == TOKEN_COOKIE)
        .map(|(_, v)| v.to_string())
}

/// The `token=` query parameter, and the query without it.
fn query_token(query: Option<&str>) -> (Option<String>, String) {
    let mut token = None;
    let mut rest = Vec::new();
    for kv in query.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
        match kv.split_once('=') {
            Some(("token", v)) => token = Some(v.to_string()),
            _ => rest.push(kv),
        }
    }
    (token, rest.join("&"))
}

fn refuse(status: StatusCode, message: &str) -> Response {
    let body = format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{}</title></head><body><h1>{}</h1><p>{}</p></body></html>",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        crate::layout::esc(message)
    );
    let mut resp = (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response();
    secure_headers(resp.headers_mut());
    resp
}

/// The headers of every answer, refusals included.
fn secure_headers(h: &mut HeaderMap) {
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
}

/// The middleware.
pub(crate) async fn guard(State(g): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_string();
    if !g.hosts.is_empty() && !g.hosts.iter().any(|h| h.eq_ignore_ascii_case(&host)) {
        return refuse(
            StatusCode::MISDIRECTED_REQUEST,
            "This server answers only requests addressed to 127.0.0.1, localhost or [::1].",
        );
    }
    let mut set_cookie = None;
    if let Some(token) = &g.token {
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_string);
        let (from_query, rest) = query_token(req.uri().query());
        let ok = |t: &Option<String>| t.as_deref().is_some_and(|t| same(t, token));
        if ok(&from_query) && req.method() == Method::GET {
            // Keep it in a cookie and drop it from the address bar.
            let path = req.uri().path();
            let to = if rest.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{rest}")
            };
            let cookie = format!("{TOKEN_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict");
            return (
                StatusCode::SEE_OTHER,
                [(header::LOCATION, to), (header::SET_COOKIE, cookie)],
            )
                .into_response();
        }
        if !(ok(&bearer) || ok(&cookie_token(headers)) || ok(&from_query)) {
            return refuse(
                StatusCode::UNAUTHORIZED,
                "An access token is required: open the address `mixseek ui` printed (it ends with ?token=…), or send `Authorization: Bearer TOKEN`.",
            );
        }
        if ok(&from_query) {
            set_cookie = Some(format!(
                "{TOKEN_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
            ));
        }
    }
    if !matches!(*req.method(), Method::GET | Method::HEAD) {
        let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
        let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
        let same_origin = match origin {
            Some(o) => o == format!("http://{host}"),
            None => fetch_site == Some("same-origin"),
        };
        if !same_origin {
            return refuse(
                StatusCode::FORBIDDEN,
                "Cross-site request refused: runs are started and cancelled only from the UI's own pages.",
            );
        }
    }
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    secure_headers(h);
    if let Some(c) = set_cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        h.insert(header::SET_COOKIE, c);
    }
    resp
}

/// A new random access token (128 bits from the OS's random source, as hex).
pub(crate) fn new_token() -> String {
    let a = uuid::Uuid::new_v4().simple().to_string();
    a.chars().take(32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_token_is_taken_out() {
        assert_eq!(
            query_token(Some("page=2&token=abc&q=x")),
            (Some("abc".into()), "page=2&q=x".into())
        );
        assert_eq!(query_token(None), (None, String::new()));
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
    }

    #[test]
    fn loopback_binds_name_their_hosts() {
        let g = Guard::new("127.0.0.1:8501".parse().expect("addr"), None);
        assert!(g.hosts.contains(&"localhost:8501".to_string()));
        let g = Guard::new("0.0.0.0:8501".parse().expect("addr"), Some("t".into()));
        assert!(g.hosts.is_empty());
    }

    #[test]
    fn cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; mixseek_token=xyz; b=2"),
        );
        assert_eq!(cookie_token(&h).as_deref(), Some("xyz"));
    }
}
