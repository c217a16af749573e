//! Attachments: a file attached to a task, turned into capped text.
//!
//! This crate owns reading an attached file ([`extract`]) or its bytes ([`extract_bytes`]),
//! choosing its type from the file name's extension ([`SUPPORTED`]), extracting its text
//! (plain text and Markdown as written, HTML as readable text, every page of a PDF, the
//! paragraphs of a DOCX), normalising it (line endings to `\n`, trailing whitespace
//! trimmed), and capping it at [`Limits::max_chars`] characters with a visible note. The
//! result is a [`mixseek_core::Attachment`]: the file's name, media type, raw size and
//! SHA-256, and the text. Every failure is an [`AttachError`] that names the file and has a
//! [`hint`](AttachError::hint).
//!
//! No external program runs and no input can panic the caller: the PDF parsers run under
//! `catch_unwind`, and DOCX parts are read through a decompression cap.
//!
//! The HTML converter is public ([`html::html_to_text`]): `mixseek-agents` turns the pages
//! `web_fetch` reads into text with it.
//!
//! **Does not:** decide which files a task may attach, store anything, or build prompts.

mod docx;
mod error;
mod guard;
pub mod html;
mod pdf;
mod text;

#[cfg(test)]
mod tests;

use std::io::Read;
use std::path::Path;

use mixseek_core::Attachment;
use sha2::{Digest, Sha256};

pub use error::AttachError;

/// Default [`Limits::max_file_bytes`]: 20 MiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;
/// Default [`Limits::max_chars`].
pub const DEFAULT_MAX_CHARS: usize = 50_000;
/// The most one part of a DOCX (a ZIP) may expand to: 64 MiB.
pub const MAX_DECOMPRESSED_BYTES: u64 = 64 * 1024 * 1024;

/// How much of a file is accepted and kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest raw file accepted, in bytes (checked before reading).
    pub max_file_bytes: u64,
    /// The most characters (Unicode scalar values) of text kept; past it the text is cut
    /// and a note says so.
    pub max_chars: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_chars: DEFAULT_MAX_CHARS,
        }
    }
}

const DOCX_MEDIA_TYPE: &str =
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document";

/// The supported file types: extension (lowercase, without the dot; matched
/// case-insensitively) and the media type it is extracted as.
pub const SUPPORTED: &[(&str, &str)] = &[
    ("txt", "text/plain"),
    ("text", "text/plain"),
    ("md", "text/markdown"),
    ("markdown", "text/markdown"),
    ("html", "text/html"),
    ("htm", "text/html"),
    ("pdf", "application/pdf"),
    ("docx", DOCX_MEDIA_TYPE),
];

/// `.txt, .text, .md, …` for messages.
pub(crate) fn supported_list() -> String {
    SUPPORTED
        .iter()
        .map(|(ext, _)| format!(".{ext}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How a type's text is extracted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Html,
    Pdf,
    Docx,
}

impl Kind {
    fn of_media_type(media_type: &str) -> Option<Self> {
        match media_type {
            "text/plain" | "text/markdown" => Some(Self::Text),
            "text/html" => Some(Self::Html),
            "application/pdf" => Some(Self::Pdf),
            DOCX_MEDIA_TYPE => Some(Self::Docx),
            _ => None,
        }
    }
}

/// The media type and kind for a file name, or the unsupported-type error.
fn classify(file: &str, name: &str) -> Result<(&'static str, Kind), AttachError> {
    let extension = Path::new(name)
        .extension()
        .map(|e| e.to_string_lossy().into_owned());
    let found = extension.as_deref().and_then(|ext| {
        SUPPORTED
            .iter()
            .find(|(known, _)| known.eq_ignore_ascii_case(ext))
            .and_then(|&(_, media_type)| Some((media_type, Kind::of_media_type(media_type)?)))
    });
    found.ok_or_else(|| AttachError::Unsupported {
        file: file.to_string(),
        extension,
    })
}

/// Reads the file at `path` and extracts its text. The checks come in this order: the file
/// exists, is not a directory, has a supported extension, and is at most
/// `limits.max_file_bytes`; only then is it read. Errors name the path as given.
pub fn extract(path: &Path, limits: &Limits) -> Result<Attachment, AttachError> {
    let file = path.display().to_string();
    let name = path
        .file_name()
        .map_or_else(|| file.clone(), |n| n.to_string_lossy().into_owned());
    let metadata = std::fs::metadata(path).map_err(|e| io_error(&file, e))?;
    if metadata.is_dir() {
        return Err(AttachError::Directory { file });
    }
    if !metadata.is_file() {
        return Err(AttachError::Unreadable {
            file,
            source: std::io::Error::other("not a regular file (a device, socket or pipe)"),
        });
    }
    let (media_type, kind) = classify(&file, &name)?;
    check_size(&file, metadata.len(), limits)?;

    let handle = std::fs::File::open(path).map_err(|e| io_error(&file, e))?;
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    // One byte past the limit tells a file that grew since `metadata` from one that did not.
    handle
        .take(limits.max_file_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(&file, e))?;
    check_size(&file, bytes.len() as u64, limits)?;
    build(&file, &name, media_type, kind, &bytes, limits)
}

/// Extracts the text of `bytes`, a file called `name` (its extension decides the type; a
/// directory part is dropped from the attachment's name). Errors name `name`.
pub fn extract_bytes(name: &str, bytes: &[u8], limits: &Limits) -> Result<Attachment, AttachError> {
    let (media_type, kind) = classify(name, name)?;
    check_size(name, bytes.len() as u64, limits)?;
    let base = Path::new(name)
        .file_name()
        .map_or_else(|| name.to_string(), |n| n.to_string_lossy().into_owned());
    build(name, &base, media_type, kind, bytes, limits)
}

fn check_size(file: &str, size: u64, limits: &Limits) -> Result<(), AttachError> {
    if size > limits.max_file_bytes {
        return Err(AttachError::TooLarge {
            file: file.to_string(),
            size,
            limit: limits.max_file_bytes,
        });
    }
    Ok(())
}

fn io_error(file: &str, e: std::io::Error) -> AttachError {
    if e.kind() == std::io::ErrorKind::NotFound {
        AttachError::NotFound {
            file: file.to_string(),
        }
    } else {
        AttachError::Unreadable {
            file: file.to_string(),
            source: e,
        }
    }
}

/// Extracts, normalises, caps and describes. `file` names the file in errors, `name` in
/// the attachment and the truncation note.
fn build(
    file: &str,
    name: &str,
    media_type: &str,
    kind: Kind,
    bytes: &[u8],
    limits: &Limits,
) -> Result<Attachment, AttachError> {
    let raw = match kind {
        Kind::Text => text::decode_utf8(file, bytes)?,
        Kind::Html => html::html_to_text(&text::decode_utf8(file, bytes)?).text,
        Kind::Pdf => pdf::to_text(file, bytes)?,
        // The ZIP and XML readers are not known to panic; guarded all the same.
        Kind::Docx => {
            guard::catch_quietly(|| docx::to_text(file, bytes)).unwrap_or_else(|panic| {
                Err(AttachError::CorruptDocx {
                    file: file.to_string(),
                    reason: format!("the DOCX reader failed on it ({panic})"),
                })
            })?
        }
    };
    let normalized = text::normalize(&raw);
    let (text, truncated) = text::cap(normalized, limits.max_chars, name);
    let sha256 = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>();
    tracing::debug!(
        file,
        media_type,
        size_bytes = bytes.len(),
        chars = text.chars().count(),
        truncated,
        "attachment extracted"
    );
    Ok(Attachment {
        name: name.to_string(),
        media_type: media_type.to_string(),
        size_bytes: bytes.len() as u64,
        sha256,
        text,
        truncated,
    })
}
