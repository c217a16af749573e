//! HTML to readable text: `<head>`, scripts, styles and comments dropped, block elements on
//! their own lines, list items as `- `, headings as `#`, table cells separated by tabs,
//! entities decoded, whitespace collapsed (kept inside `<pre>`).
//!
//! The same hand-written approach as `mixseek-agents/src/fetch/html.rs` (web pages for the
//! model), with the same entity table (html-escape); the two could move into one shared crate.

/// Elements whose content is never text.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "iframe", "object", "canvas", "title",
];
/// Elements that start a new line.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "caption",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "header",
    "main",
    "nav",
    "ol",
    "section",
    "summary",
    "table",
    "tbody",
    "tfoot",
    "thead",
    "tr",
    "ul",
];

/// Converts an HTML document to text.
pub(crate) fn to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut pre_depth = 0usize;
    // ASCII lowercasing keeps every byte offset, so `lower` and `html` index alike.
    let lower = html.to_ascii_lowercase();
    let bytes = html.as_bytes();
    let mut i = 0usize;
    while i < html.len() {
        if bytes[i] != b'<' {
            let next = html[i..].find('<').map_or(html.len(), |n| i + n);
            push_text(&mut out, &decode_entities(&html[i..next]), pre_depth > 0);
            i = next;
            continue;
        }
        if lower[i..].starts_with("<!--") {
            i = lower[i + 4..]
                .find("-->")
                .map_or(html.len(), |e| i + 4 + e + 3);
            continue;
        }
        let Some(end_rel) = html[i..].find('>') else {
            push_text(&mut out, &html[i..], pre_depth > 0);
            break;
        };
        let inner = &html[i + 1..i + end_rel];
        let after = i + end_rel + 1;
        let closing = inner.starts_with('/');
        let name = inner
            .trim_start_matches('/')
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_ascii_lowercase();
        if name.is_empty() {
            if inner.starts_with('!') || inner.starts_with('?') {
                // `<!DOCTYPE>`, `<?xml?>`.
                i = after;
            } else {
                // A stray `<`.
                push_text(&mut out, "<", pre_depth > 0);
                i += 1;
            }
            continue;
        }
        if !closing && (SKIPPED.contains(&name.as_str()) || name == "head") {
            if let Some(resume) = skip_element(&lower, &name, after) {
                i = resume;
                continue;
            }
        }
        match (name.as_str(), closing) {
            ("br", _) => out.push('\n'),
            ("hr", _) | ("p", _) => out.push_str("\n\n"),
            ("li", false) => out.push_str("\n- "),
            ("pre", false) => {
                pre_depth += 1;
                out.push_str("\n\n");
            }
            ("pre", true) => {
                pre_depth = pre_depth.saturating_sub(1);
                out.push_str("\n\n");
            }
            ("td" | "th", false) => {
                out.truncate(out.trim_end_matches(' ').len());
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\t');
                }
            }
            (h, false) if is_heading(h) => {
                out.push_str("\n\n");
                out.push_str(&"#".repeat(heading_level(h)));
                out.push(' ');
            }
            (h, true) if is_heading(h) => out.push_str("\n\n"),
            (b, _) if BLOCKS.contains(&b) && !out.is_empty() && !out.ends_with('\n') => {
                out.push('\n');
            }
            _ => {}
        }
        i = after;
    }
    tidy(&out)
}

/// Where to resume after an element whose content is dropped (`content_start` is just past
/// its start tag): past its end tag, or, for a `<head>` never closed, at `<body`. `None`
/// when a `<head>` has neither (its content is then read like the rest).
fn skip_element(lower: &str, name: &str, content_start: usize) -> Option<usize> {
    let rest = &lower[content_start..];
    let close = format!("</{name}");
    match rest.find(&close) {
        Some(e) => {
            let content_end = content_start + e;
            Some(
                lower[content_end..]
                    .find('>')
                    .map_or(lower.len(), |g| content_end + g + 1),
            )
        }
        None if name == "head" => rest.find("<body").map(|b| content_start + b),
        // An unclosed script or style runs to the end, as browsers read it.
        None => Some(lower.len()),
    }
}

fn is_heading(name: &str) -> bool {
    name.len() == 2 && name.starts_with('h') && matches!(name.as_bytes()[1], b'1'..=b'6')
}

fn heading_level(name: &str) -> usize {
    usize::from(name.as_bytes()[1] - b'0')
}

fn push_text(out: &mut String, text: &str, preformatted: bool) {
    if preformatted {
        out.push_str(text);
        return;
    }
    for c in text.chars() {
        if c.is_whitespace() {
            if !out.is_empty() && !out.ends_with(char::is_whitespace) {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
}

/// Trims line ends and keeps at most one blank line in a row.
fn tidy(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank_run = 0;
    for line in s.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank_run += 1;
            if blank_run > 1 || out.is_empty() {
                continue;
            }
            out.push('\n');
        } else {
            blank_run = 0;
            out.push_str(line);
            out.push('\n');
        }
    }
    out.truncate(out.trim_end().len());
    out
}

/// Longest HTML5 entity name (`CounterClockwiseContourIntegral`) plus margin.
const MAX_ENTITY_LEN: usize = 40;

/// Decodes `&name;` (every HTML5 named entity), `&#123;` and `&#x1F600;`; unknown or
/// malformed entities stay as written. A non-breaking space becomes a plain space.
fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let tail = &rest[amp..];
        let decoded = tail[1..]
            .find(';')
            .filter(|semi| *semi <= MAX_ENTITY_LEN)
            .and_then(|semi| entity(&tail[1..=semi]).map(|t| (t, semi + 2)));
        match decoded {
            Some((text, len)) => {
                out.push_str(&text);
                rest = &tail[len..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The text of one entity, written without `&` and `;`.
fn entity(ent: &str) -> Option<String> {
    let code = if let Some(hex) = ent.strip_prefix("#x").or_else(|| ent.strip_prefix("#X")) {
        u32::from_str_radix(hex, 16).ok()
    } else if let Some(dec) = ent.strip_prefix('#') {
        dec.parse::<u32>().ok()
    } else {
        if ent.is_empty() || !ent.chars().all(|c| c.is_ascii_alphanumeric()) {
            return None;
        }
        let written = format!("&{ent};");
        return match html_escape::decode_html_entities(&written) {
            std::borrow::Cow::Owned(decoded) if decoded != written => {
                Some(decoded.replace('\u{a0}', " "))
            }
            _ => None,
        };
    };
    code.and_then(char::from_u32)
        .map(|c| if c == '\u{a0}' { ' ' } else { c })
        .map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_a_page_to_readable_text() {
        let html = r#"<!DOCTYPE html>
<html><head><title> Rust &amp; Tokio </title>
<style>body { color: red; }</style><script>var x = "<p>not text</p>";</script></head>
<body><!-- a comment <p>hidden</p> -->
<h1>Async   Rust</h1>
<p>Tokio is a <b>runtime</b>&nbsp;for&#32;writing <a href="/x">reliable</a> apps.</p>
<ul><li>fast</li><li>reliable &#x2713;</li></ul>
<pre>fn main() {
    println!("hi");
}</pre>
<table><tr><th>Name</th> <th>Score</th></tr>
<tr><td>a</td>
<td>1</td></tr></table>
<div>a&lt;b &unknown; c</div></body></html>"#;
        assert_eq!(
            to_text(html),
            "# Async Rust\n\nTokio is a runtime for writing reliable apps.\n\n- fast\n- reliable ✓\n\n\
             fn main() {\n    println!(\"hi\");\n}\n\nName\tScore\na\t1\na<b &unknown; c"
        );
    }

    #[test]
    fn head_without_end_tag_stops_at_body() {
        assert_eq!(
            to_text("<html><head><meta charset=utf-8><body><p>kept</p>"),
            "kept"
        );
        assert_eq!(to_text("<head>only a head"), "only a head");
    }

    #[test]
    fn tolerates_broken_markup() {
        assert_eq!(to_text("a < b and c"), "a < b and c");
        assert_eq!(to_text("text <b unclosed"), "text <b unclosed");
        assert_eq!(to_text("<script>never closed"), "");
        assert_eq!(to_text("<!-- never closed"), "");
        assert_eq!(
            decode_entities("&#99999999; &amp &;"),
            "&#99999999; &amp &;"
        );
        assert_eq!(decode_entities("5&percnt; &hearts; &rarr;"), "5% ♥ →");
    }
}
