//! The page shell (navigation, style sheet, script) and small HTML helpers shared by pages.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// HTML-escapes text (the report's escaping: one rule everywhere).
pub(crate) fn esc(s: &str) -> String {
    mixseek_store::report::html::escape(s)
}

/// Percent-encodes a path segment or query value.
pub(crate) fn url(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Which navigation entry is current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nav {
    Run,
    Results,
    History,
    Compare,
    Experiments,
}

/// A whole page.
pub(crate) fn page(title: &str, nav: Nav, body: &str) -> Response {
    page_with_status(StatusCode::OK, title, nav, body)
}

/// A whole page with another status.
pub(crate) fn page_with_status(status: StatusCode, title: &str, nav: Nav, body: &str) -> Response {
    let item = |n: Nav, href: &str, label: &str| {
        format!(
            "<a href=\"{href}\"{}>{label}</a>",
            if n == nav {
                " class=\"current\" aria-current=\"page\""
            } else {
                ""
            }
        )
    };
    let html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{} — MixSeek</title>\n<link rel=\"stylesheet\" href=\"/assets/ui.css\">\n\
         <script src=\"/assets/ui.js\" defer></script>\n</head>\n<body>\n\
         <nav class=\"top\"><span class=\"brand\">MixSeek</span>{}{}{}{}{}</nav>\n<main>\n{}\n</main>\n</body>\n</html>\n",
        esc(title),
        item(Nav::Run, "/run", "Run"),
        item(Nav::Results, "/results", "Results"),
        item(Nav::History, "/history", "History"),
        item(Nav::Compare, "/compare", "Compare"),
        item(Nav::Experiments, "/experiments", "Experiments"),
        body
    );
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        html,
    )
        .into_response()
}

/// Page links for `total` items, `per` a page, the current `page` (from 1); `href(n)` is the
/// address of page n.
pub(crate) fn pager(
    total: usize,
    per: usize,
    page: usize,
    href: impl Fn(usize) -> String,
) -> String {
    let pages = total.div_ceil(per.max(1)).max(1);
    if pages <= 1 {
        return String::new();
    }
    let mut h = String::from("<nav class=\"pager\">");
    if page > 1 {
        h.push_str(&format!(
            "<a href=\"{}\" rel=\"prev\">← previous</a> ",
            esc(&href(page - 1))
        ));
    }
    h.push_str(&format!("<span>page {page} of {pages} ({total})</span>"));
    if page < pages {
        h.push_str(&format!(
            " <a href=\"{}\" rel=\"next\">next →</a>",
            esc(&href(page + 1))
        ));
    }
    h.push_str("</nav>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_encode_everything_special() {
        assert_eq!(url("a b/c?d&e"), "a%20b%2Fc%3Fd%26e");
        assert_eq!(url("チーム"), "%E3%83%81%E3%83%BC%E3%83%A0");
    }

    #[test]
    fn one_page_has_no_pager() {
        assert_eq!(pager(10, 20, 1, |n| format!("?page={n}")), "");
        let p = pager(45, 20, 2, |n| format!("?page={n}"));
        assert!(p.contains("page 2 of 3") && p.contains("?page=1") && p.contains("?page=3"));
    }
}
