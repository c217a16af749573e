//! Closing a JSON answer that was cut off at the output token limit.
//!
//! A small model under a grammar (llama.cpp) can ramble inside a string until `max_tokens`
//! stops it, answer after answer: `{"score": 70, "evaluator_comment": "The answer is...`. The
//! values before the cut are complete; only the last string is not. When the repairs are used
//! up, [`close`] ends that string with `…` (so a reader sees it was cut) and closes the open
//! objects and arrays. The caller still parses and validates the result: a missing required
//! field or a cut-off key fails as before.
//!
//! Nothing is invented: an answer that ends in a number, `true`/`false`/`null`, after a `:` or
//! inside an empty container is left alone (a cut-off `7` may have been `75`).

/// `raw` with its last string closed (ending in `…`) and its open containers closed; `None`
/// when the cut is not inside a string or after a complete value, or nothing is open.
pub(crate) fn close(raw: &str) -> Option<String> {
    let start = raw.find(['{', '['])?;
    let text = &raw[start..];
    let mut open: Vec<char> = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => open.push('}'),
            '[' => open.push(']'),
            '}' | ']' => {
                if open.pop() != Some(c) {
                    return None;
                }
                if open.is_empty() {
                    // The answer's value is complete: it was not cut off inside it.
                    return None;
                }
            }
            _ => {}
        }
    }
    let mut out = if in_string {
        let mut s = drop_partial_escape(text).to_string();
        s.push_str("…\"");
        s
    } else {
        let s = text.trim_end();
        let s = s.strip_suffix(',').unwrap_or(s).trim_end();
        if !(s.ends_with('"') || s.ends_with('}') || s.ends_with(']')) {
            return None;
        }
        s.to_string()
    };
    if open.is_empty() {
        return None;
    }
    out.extend(open.iter().rev());
    Some(out)
}

/// `text` (ending inside a string) without a trailing incomplete escape: a lone `\` or a
/// `\u` with fewer than four hex digits.
fn drop_partial_escape(text: &str) -> &str {
    let before_hex = text.trim_end_matches(|c: char| c.is_ascii_hexdigit());
    if text.len() - before_hex.len() <= 3
        && let Some(before_u) = before_hex.strip_suffix('u')
        && ends_in_an_open_escape(before_u)
    {
        return &before_u[..before_u.len() - 1];
    }
    if ends_in_an_open_escape(text) {
        return &text[..text.len() - 1];
    }
    text
}

/// Whether `s` ends in an odd number of backslashes (the last one starts an escape).
fn ends_in_an_open_escape(s: &str) -> bool {
    s.bytes().rev().take_while(|b| *b == b'\\').count() % 2 == 1
}

#[cfg(test)]
mod tests {
    use super::close;

    #[test]
    fn a_string_cut_off_is_closed_with_an_ellipsis() {
        assert_eq!(
            close("{\"score\": 0, \"evaluator_comment\": \"one two").as_deref(),
            Some("{\"score\": 0, \"evaluator_comment\": \"one two…\"}")
        );
        assert_eq!(
            close("chatter {\"a\": [\"x\", {\"b\": \"y z").as_deref(),
            Some("{\"a\": [\"x\", {\"b\": \"y z…\"}]}")
        );
        // Escaped quotes do not end the string; a partial escape is dropped.
        assert_eq!(
            close("{\"a\": \"say \\\"hi\\").as_deref(),
            Some("{\"a\": \"say \\\"hi…\"}")
        );
        assert_eq!(
            close("{\"a\": \"x \\u00").as_deref(),
            Some("{\"a\": \"x …\"}")
        );
        assert_eq!(
            close("{\"a\": \"x \\\\").as_deref(),
            Some("{\"a\": \"x \\\\…\"}")
        );
    }

    #[test]
    fn a_cut_after_a_complete_value_closes_the_containers() {
        assert_eq!(close("{\"a\": \"x\", ").as_deref(), Some("{\"a\": \"x\"}"));
        assert_eq!(
            close("{\"a\": {\"b\": [1]}").as_deref(),
            Some("{\"a\": {\"b\": [1]}}")
        );
    }

    #[test]
    fn nothing_is_invented() {
        for raw in [
            "{\"score\": 7",
            "{\"ok\": tru",
            "{\"a\": ",
            "{\"a\": [",
            "{",
            "{\"a\": 1}",
            "{\"a\": 1}}",
            "no json at all",
            "",
        ] {
            assert_eq!(close(raw), None, "{raw:?}");
        }
    }
}
