//! HTML to readable text for the model: scripts, styles and comments dropped, block
//! elements on their own lines, list items as `- `, headings as `#`, entities decoded,
//! whitespace collapsed (kept inside `<pre>`), the `<title>` returned separately.

/// A page as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PageText {
    pub title: Option<String>,
    pub text: String,
}

/// Elements whose content is never text.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "iframe", "object", "canvas",
];
/// Elements that start a new line.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
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
    "thead",
    "tfoot",
    "tr",
    "ul",
    "caption",
];

/// Converts an HTML document to text.
pub(crate) fn html_to_text(html: &str) -> PageText {
    let mut out = String::with_capacity(html.len() / 2);
    let mut title: Option<String> = None;
    let mut pre_depth = 0usize;
    let lower = html.to_ascii_lowercase();
    let bytes = html.as_bytes();
    let mut i = 0usize;
    while i < html.len() {
        if bytes[i] == b'<' {
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
            let name: String = inner
                .trim_start_matches('/')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
                .to_ascii_lowercase();
            if name.is_empty() {
                // `<!DOCTYPE>`, `<?xml?>` or a stray `<`.
                if inner.starts_with('!') || inner.starts_with('?') {
                    i = after;
                } else {
                    push_text(&mut out, "<", pre_depth > 0);
                    i += 1;
                }
                continue;
            }
            if !closing && (SKIPPED.contains(&name.as_str()) || name == "title") {
                let close = format!("</{name}");
                let content_end = lower[after..]
                    .find(&close)
                    .map_or(html.len(), |e| after + e);
                if name == "title" && title.is_none() {
                    let t = collapse(&decode_entities(&html[after..content_end]));
                    if !t.is_empty() {
                        title = Some(t);
                    }
                }
                i = html[content_end..]
                    .find('>')
                    .map_or(html.len(), |e| content_end + e + 1);
                continue;
            }
            match (name.as_str(), closing) {
                ("br", _) => out.push('\n'),
                ("hr", _) => out.push_str("\n\n"),
                ("p", _) => out.push_str("\n\n"),
                ("li", false) => out.push_str("\n- "),
                ("pre", false) => {
                    pre_depth += 1;
                    out.push_str("\n\n");
                }
                ("pre", true) => {
                    pre_depth = pre_depth.saturating_sub(1);
                    out.push_str("\n\n");
                }
                ("td" | "th", false) => out.push(' '),
                (h, false) if is_heading(h) => {
                    out.push_str("\n\n");
                    out.push_str(&"#".repeat(heading_level(h)));
                    out.push(' ');
                }
                (h, true) if is_heading(h) => out.push_str("\n\n"),
                (b, _) if BLOCKS.contains(&b) => out.push('\n'),
                _ => {}
            }
            i = after;
        } else {
            let next = html[i..].find('<').map_or(html.len(), |n| i + n);
            push_text(&mut out, &decode_entities(&html[i..next]), pre_depth > 0);
            i = next;
        }
    }
    PageText {
        title,
        text: tidy(&out),
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
            if !out.ends_with(|p: char| p.is_whitespace()) && !out.is_empty() {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
}

/// Collapses all whitespace runs to one space and trims.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Trims line ends and keeps at most one blank line in a row.
fn tidy(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank_run = 0;
    for line in s.lines() {
        let line = line.trim_end();
        let line = if line.trim().is_empty() { "" } else { line };
        if line.is_empty() {
            blank_run += 1;
            if blank_run > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

fn named_entity(name: &str) -> Option<char> {
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "hellip" => '…',
        "mdash" => '—',
        "ndash" => '–',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "laquo" => '«',
        "raquo" => '»',
        "middot" => '·',
        "bull" => '•',
        "euro" => '€',
        "yen" => '¥',
        "pound" => '£',
        "deg" => '°',
        "times" => '×',
        _ => return None,
    })
}

/// The text of a named entity (`name` without `&` and `;`): the common ones from a small
/// table, every other HTML5 name (2 000+, e.g. `percnt`, `NotEqualTilde`) from html-escape's.
fn entity_text(name: &str) -> Option<String> {
    if let Some(c) = named_entity(name) {
        return Some(c.to_string());
    }
    let written = format!("&{name};");
    match html_escape::decode_html_entities(&written) {
        std::borrow::Cow::Owned(decoded) if decoded != written => Some(decoded),
        _ => None,
    }
}

/// Longest HTML5 entity name (`CounterClockwiseContourIntegral`) plus margin.
const MAX_ENTITY_LEN: usize = 40;

/// Decodes `&name;` (every HTML5 named entity), `&#123;` and `&#x1F600;`; unknown or
/// malformed entities stay as written.
pub(crate) fn decode_entities(s: &str) -> String {
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
            .and_then(|semi| {
                let ent = &tail[1..=semi];
                let text =
                    if let Some(num) = ent.strip_prefix("#x").or_else(|| ent.strip_prefix("#X")) {
                        u32::from_str_radix(num, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .map(String::from)
                    } else if let Some(num) = ent.strip_prefix('#') {
                        num.parse::<u32>()
                            .ok()
                            .and_then(char::from_u32)
                            .map(String::from)
                    } else if ent.chars().all(|c| c.is_ascii_alphanumeric()) {
                        entity_text(ent)
                    } else {
                        None
                    };
                text.map(|t| (t, semi + 2))
            });
        match decoded {
            Some((t, len)) => {
                out.push_str(&t);
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
<div>a&lt;b &unknown; c</div></body></html>"#;
        let page = html_to_text(html);
        assert_eq!(page.title.as_deref(), Some("Rust & Tokio"));
        assert_eq!(
            page.text,
            "# Async Rust\n\nTokio is a runtime for writing reliable apps.\n\n- fast\n- reliable ✓\n\nfn main() {\n    println!(\"hi\");\n}\n\na<b &unknown; c"
        );
    }

    #[test]
    fn tolerates_broken_markup() {
        assert_eq!(html_to_text("a < b and c").text, "a < b and c");
        assert_eq!(html_to_text("text <b unclosed").text, "text <b unclosed");
        assert_eq!(html_to_text("<script>never closed").text, "");
        assert_eq!(decode_entities("&#99999999; &amp"), "&#99999999; &amp");
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
            decode_entities("&nosuchentity; &a b; & &;"),
            "&nosuchentity; &a b; & &;"
        );
    }
}
