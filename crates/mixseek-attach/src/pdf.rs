//! PDF: the text of every page (pdf-extract over lopdf), pages separated by a blank line.
//!
//! Both parsers panic on some malformed input, so every call into them runs under
//! [`catch_quietly`]: a panic becomes [`AttachError::CorruptPdf`] (for the whole document) or
//! a page noted as unreadable (for one page).

use pdf_extract::{Document, PlainTextOutput};

use crate::AttachError;
use crate::guard::catch_quietly;

/// The text of the PDF in `bytes`, pages separated by a blank line.
pub(crate) fn to_text(file: &str, bytes: &[u8]) -> Result<String, AttachError> {
    let corrupt = |reason: String| AttachError::CorruptPdf {
        file: file.to_string(),
        reason,
    };
    let doc = match catch_quietly(|| Document::load_mem(bytes)) {
        Ok(Ok(doc)) => doc,
        Ok(Err(e)) => {
            return Err(match e {
                pdf_extract::Error::Decryption(_) | pdf_extract::Error::InvalidPassword => {
                    AttachError::EncryptedPdf {
                        file: file.to_string(),
                    }
                }
                other => corrupt(other.to_string()),
            });
        }
        Err(panic) => return Err(corrupt(parser_failed(&panic))),
    };
    // lopdf opens a document encrypted with an empty user password by itself; one that is
    // still encrypted after loading needs a password.
    if doc.is_encrypted() {
        return Err(AttachError::EncryptedPdf {
            file: file.to_string(),
        });
    }
    let pages: Vec<u32> = match catch_quietly(|| doc.get_pages()) {
        Ok(pages) => pages.into_keys().collect(),
        Err(panic) => return Err(corrupt(parser_failed(&panic))),
    };
    if pages.is_empty() {
        return Err(corrupt("the document has no pages".to_string()));
    }

    let mut texts = Vec::with_capacity(pages.len());
    let mut with_text = 0usize;
    let mut first_failure: Option<String> = None;
    for &page in &pages {
        match page_text(&doc, page) {
            Ok(text) => {
                let text = tidy(&text);
                if !text.is_empty() {
                    with_text += 1;
                    texts.push(text);
                }
            }
            Err(reason) => {
                tracing::warn!(file, page, %reason, "PDF page text could not be extracted");
                texts.push(format!(
                    "[mixseek: the text of page {page} could not be extracted: {reason}]"
                ));
                first_failure.get_or_insert(reason);
            }
        }
    }
    if with_text == 0 {
        return Err(match first_failure {
            Some(reason) => corrupt(format!("no page could be read ({reason})")),
            None => AttachError::NoTextInPdf {
                file: file.to_string(),
                pages: pages.len(),
            },
        });
    }
    Ok(texts.join("\n\n"))
}

/// One page's text, or why it could not be read (the parser's error or panic message).
fn page_text(doc: &Document, page: u32) -> Result<String, String> {
    let mut text = String::new();
    let outcome = catch_quietly(|| {
        let mut output = PlainTextOutput::new(&mut text);
        pdf_extract::output_doc_page(doc, &mut output, page)
    });
    match outcome {
        Ok(Ok(())) => Ok(text),
        Ok(Err(e)) => Err(e.to_string()),
        Err(panic) => Err(parser_failed(&panic)),
    }
}

/// Line ends trimmed, no blank line at either end and at most one in a row (the extractor
/// marks a wide gap between lines with a blank line, and sometimes with several).
fn tidy(page: &str) -> String {
    let mut out = String::with_capacity(page.len());
    let mut blank = false;
    for line in page.lines().map(str::trim_end) {
        if line.is_empty() {
            blank = !out.is_empty();
            continue;
        }
        if blank {
            out.push('\n');
            blank = false;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.truncate(out.trim_end().len());
    out
}

/// The reason given for a parser panic.
fn parser_failed(message: &str) -> String {
    format!("the PDF parser failed on it ({message})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_text_is_tidied() {
        assert_eq!(tidy("\n\n  a  \n\n\n\nb\n c\n\n"), "  a\n\nb\n c");
        assert_eq!(tidy("\n \n"), "");
    }
}
