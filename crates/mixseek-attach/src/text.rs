//! Plain text: UTF-8 decoding (a BOM stripped), line-ending normalisation and the character cap.

use crate::AttachError;

/// Decodes UTF-8, dropping a leading byte-order mark. Anything else is an error that says
/// where decoding failed and, for a UTF-16 BOM, which encoding the file is in.
pub(crate) fn decode_utf8(file: &str, bytes: &[u8]) -> Result<String, AttachError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let encoding = if bytes.starts_with(b"\xFF\xFE") {
        Some("UTF-16LE")
    } else if bytes.starts_with(b"\xFE\xFF") {
        Some("UTF-16BE")
    } else {
        None
    };
    match (encoding, std::str::from_utf8(bytes)) {
        (None, Ok(text)) => Ok(text.to_string()),
        (Some(enc), _) => Err(AttachError::NotUtf8 {
            file: file.to_string(),
            detail: format!("it starts with a {enc} byte-order mark, so it is {enc} text"),
            encoding: Some(enc),
        }),
        (None, Err(e)) => Err(AttachError::NotUtf8 {
            file: file.to_string(),
            detail: format!(
                "byte {:#04x} at offset {} is not valid UTF-8 (the file is in another encoding, \
                 such as Windows-1252, Latin-1 or Shift_JIS, or is not text)",
                bytes.get(e.valid_up_to()).copied().unwrap_or(0),
                e.valid_up_to()
            ),
            encoding: None,
        }),
    }
}

/// `\r\n` and lone `\r` become `\n`; trailing whitespace of the whole text is removed.
pub(crate) fn normalize(text: &str) -> String {
    let mut out = if text.contains('\r') {
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text.to_string()
    };
    out.truncate(out.trim_end().len());
    out
}

/// Keeps at most `max_chars` characters (Unicode scalar values) and, when it cuts, appends
/// the note on its own line. Returns the text and whether it was cut.
pub(crate) fn cap(text: String, max_chars: usize, name: &str) -> (String, bool) {
    let Some((cut, _)) = text.char_indices().nth(max_chars) else {
        return (text, false);
    };
    let total = max_chars + text[cut..].chars().count();
    let mut out = String::with_capacity(cut + 128);
    out.push_str(&text[..cut]);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "[… truncated by mixseek: kept the first {max_chars} of {total} characters of {name}]"
    ));
    (out, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bom_is_stripped_and_invalid_bytes_are_located() {
        assert_eq!(
            decode_utf8("a.txt", b"\xEF\xBB\xBFhello").expect("utf8"),
            "hello"
        );
        let e = decode_utf8("a.txt", b"caf\xE9").expect_err("latin-1");
        let msg = e.to_string();
        assert!(msg.contains("a.txt") && msg.contains("offset 3"), "{msg}");
        assert!(e.hint().contains("UTF-8"), "{}", e.hint());
        let e = decode_utf8("a.txt", b"\xFF\xFEh\0i\0").expect_err("utf-16");
        assert!(e.to_string().contains("UTF-16LE"), "{e}");
        assert!(
            e.hint().contains("iconv -f UTF-16LE -t UTF-8"),
            "{}",
            e.hint()
        );
    }

    #[test]
    fn line_endings_and_trailing_whitespace() {
        assert_eq!(normalize("a\r\nb\rc\n\n  \t\n"), "a\nb\nc");
        assert_eq!(normalize("  lead kept"), "  lead kept");
        assert_eq!(normalize(""), "");
    }

    #[test]
    fn cap_cuts_on_char_boundaries_and_says_so() {
        assert_eq!(cap("héllo".into(), 5, "n"), ("héllo".into(), false));
        let (text, cut) = cap("héllo wörld".into(), 2, "f.txt");
        assert!(cut);
        assert_eq!(
            text,
            "hé\n[… truncated by mixseek: kept the first 2 of 11 characters of f.txt]"
        );
        let (text, _) = cap("ab\ncd".into(), 3, "f");
        assert!(text.starts_with("ab\n[…"), "{text}");
        let (text, _) = cap("abc".into(), 0, "f");
        assert!(
            text.starts_with("[… truncated by mixseek: kept the first 0 of 3"),
            "{text}"
        );
    }
}
