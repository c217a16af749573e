//! HTML to readable text, for attached HTML files and for the pages `web_fetch` gives the
//! model (`mixseek-agents` uses this converter): `<head>`, scripts, styles and comments
//! dropped, block elements on their own lines, list items as `- `, headings as `#`, table
//! cells separated by tabs, entities decoded (every HTML5 name, through html-escape's table),
//! whitespace collapsed (kept inside `<pre>`), the first `<title>` returned apart from the
//! text.
//!
//! A hand-written scanner, not a parser: broken markup never fails, it is read as text.

/// A document as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HtmlText {
    /// The first `<title>`'s text (entities decoded, whitespace collapsed), if it has any.
    pub title: Option<String>,
    /// The readable text of the document (the title not included).
    pub text: String,
}

/// Elements whose content is never text (a `<title>`'s is returned apart).
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

/// Converts an HTML document to text (see the module docs).
pub fn html_to_text(html: &str) -> HtmlText {
    let mut body = String::with_capacity(html.len() / 2);
    // What the `<head>` would show (its stray text): read, then dropped.
    let mut head_text = String::new();
    let mut title: Option<String> = None;
    let mut pre_depth = 0usize;
    // ASCII lowercasing keeps every byte offset, so `lower` and `html` index alike.
    let lower = html.to_ascii_lowercase();
    let bytes = html.as_bytes();
    // Inside a `<head>` (until its end tag or `<body>`): text and tags read, then dropped.
    let mut in_head = false;
    let mut i = 0usize;
    while i < html.len() {
        let out = if in_head { &mut head_text } else { &mut body };
        if bytes[i] != b'<' {
            let next = html[i..].find('<').map_or(html.len(), |n| i + n);
            push_text(out, &decode_entities(&html[i..next]), pre_depth > 0);
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
            push_text(out, &html[i..], pre_depth > 0);
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
                push_text(out, "<", pre_depth > 0);
                i += 1;
            }
            continue;
        }
        if name == "head" || (name == "body" && !closing) {
            if !closing && !in_head {
                // A head with neither an end tag nor a body after it is read as text.
                let rest = &lower[after..];
                in_head = rest.contains("</head") || rest.contains("<body");
            } else if in_head && (closing || name == "body") {
                in_head = false;
            }
            if name == "head" {
                i = after;
                continue;
            }
        }
        let out = if in_head { &mut head_text } else { &mut body };
        if !closing && SKIPPED.contains(&name.as_str()) {
            let (content_end, resume) = skipped_element(&lower, &name, after);
            if name == "title" && title.is_none() {
                let t = collapse(&decode_entities(&html[after..content_end]));
                if !t.is_empty() {
                    title = Some(t);
                }
            }
            i = resume;
            continue;
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
    HtmlText {
        title,
        text: tidy(&body),
    }
}

/// An element whose content is dropped (`content_start` is just past its start tag): where
/// its content ends, and where to resume (past its end tag). One never closed runs to the end,
/// as browsers read an unclosed script or title.
fn skipped_element(lower: &str, name: &str, content_start: usize) -> (usize, usize) {
    let close = format!("</{name}");
    match lower[content_start..].find(&close) {
        Some(e) => {
            let content_end = content_start + e;
            let resume = lower[content_end..]
                .find('>')
                .map_or(lower.len(), |g| content_end + g + 1);
            (content_end, resume)
        }
        None => (lower.len(), lower.len()),
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

/// Collapses all whitespace runs to one space and trims.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(html: &str) -> String {
        html_to_text(html).text
    }

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
        let page = html_to_text(html);
        assert_eq!(page.title.as_deref(), Some("Rust & Tokio"));
        assert_eq!(
            page.text,
            "# Async Rust\n\nTokio is a runtime for writing reliable apps.\n\n- fast\n- reliable ✓\n\n\
             fn main() {\n    println!(\"hi\");\n}\n\nName\tScore\na\t1\na<b &unknown; c"
        );
    }

    #[test]
    fn the_head_is_dropped_but_its_title_kept() {
        // Stray text in the head is not shown; the first title wins, a later one is dropped.
        let page = html_to_text(
            "<html><head><meta charset=utf-8>stray<title>First</title></head>\
             <body><p>kept</p><title>Second</title></body>",
        );
        assert_eq!(
            (page.title.as_deref(), page.text.as_str()),
            (Some("First"), "kept")
        );
        // A head without an end tag stops at <body>; one with neither is read as text.
        assert_eq!(
            text("<html><head><meta charset=utf-8><body><p>kept</p>"),
            "kept"
        );
        assert_eq!(text("<head>only a head"), "only a head");
        // A head's body tag ends it, and the body's text is shown.
        assert_eq!(text("<head><style>p {}</style><body>b<p>c</p>"), "b\n\nc");
        // A script in the head hides what looks like the head's end tag.
        let page = html_to_text("<head><script>x = '</head>';</script></head><body>b</body>");
        assert_eq!((page.title, page.text.as_str()), (None, "b"));
        // An SVG's title is not the page's; an empty title is none.
        let page = html_to_text("<svg><title>icon</title></svg><title>  </title><p>p</p>");
        assert_eq!((page.title, page.text.as_str()), (None, "p"));
        // <header> is not <head>.
        assert_eq!(text("<header>top</header><p>p</p>"), "top\n\np");
    }

    #[test]
    fn blocks_start_lines_without_blank_lines_between_them() {
        assert_eq!(
            text("<div><div>a</div></div><div>b</div><section><p>c</p></section>"),
            "a\nb\n\nc"
        );
        assert_eq!(text("a<br>b<hr>c"), "a\nb\n\nc");
    }

    #[test]
    fn tolerates_broken_markup() {
        assert_eq!(text("a < b and c"), "a < b and c");
        assert_eq!(text("text <b unclosed"), "text <b unclosed");
        assert_eq!(text("<script>never closed"), "");
        assert_eq!(text("<!-- never closed"), "");
        assert_eq!(text(""), "");
        assert_eq!(
            html_to_text("<title>never closed").title.as_deref(),
            Some("never closed")
        );
    }

    #[test]
    fn every_html5_named_entity_is_decoded() {
        assert_eq!(
            decode_entities(
                "5&percnt; &hearts; &frac12; &Alpha;&beta; &rarr; &EqualTilde; &CounterClockwiseContourIntegral;"
            ),
            "5% ♥ ½ Αβ → ≂ ∳"
        );
        assert_eq!(
            decode_entities("&nosuchentity; &a b; & &; &#99999999; &amp"),
            "&nosuchentity; &a b; & &; &#99999999; &amp"
        );
        // A non-breaking space, named or numbered, is a plain space.
        assert_eq!(decode_entities("a&nbsp;b&#160;c&#xA0;d"), "a b c d");
    }
}
