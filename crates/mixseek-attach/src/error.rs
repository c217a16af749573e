//! What can go wrong with an attachment, each error naming the file, and what to do about it.

use crate::{MAX_DECOMPRESSED_BYTES, supported_list};

/// Why a file could not be attached. Every variant carries `file`: the path as given to
/// [`extract`](crate::extract), or the name given to [`extract_bytes`](crate::extract_bytes).
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// Nothing exists at the path.
    #[error("attachment {file}: no such file")]
    NotFound { file: String },

    /// The path is a directory.
    #[error("attachment {file} is a directory, not a file")]
    Directory { file: String },

    /// The file exists but could not be read (permissions, I/O error, not a regular file).
    #[error("attachment {file} cannot be read: {source}")]
    Unreadable {
        file: String,
        #[source]
        source: std::io::Error,
    },

    /// The raw file is larger than [`Limits::max_file_bytes`](crate::Limits::max_file_bytes);
    /// checked before the file is read.
    #[error(
        "attachment {file} is {} ({size} bytes), over the limit of {} ({limit} bytes)",
        human_bytes(*size),
        human_bytes(*limit)
    )]
    TooLarge { file: String, size: u64, limit: u64 },

    /// The file name's extension is not one of [`SUPPORTED`](crate::SUPPORTED).
    #[error(
        "attachment {file}: {} is not supported (supported: {})",
        match extension {
            Some(ext) => format!("the file type .{ext}"),
            None => "a file without an extension".to_string(),
        },
        supported_list()
    )]
    Unsupported {
        file: String,
        /// The extension as written (without the dot), if there is one.
        extension: Option<String>,
    },

    /// A text, Markdown or HTML file whose bytes are not UTF-8.
    #[error("attachment {file} is not UTF-8 text: {detail}")]
    NotUtf8 {
        file: String,
        /// Where decoding failed, and the encoding it seems to be in when that is known.
        detail: String,
        /// The encoding recognised from a byte-order mark (`UTF-16LE`, `UTF-16BE`), if any.
        encoding: Option<&'static str>,
    },

    /// The PDF parser rejected the file (or panicked on it).
    #[error("attachment {file} is not a readable PDF: {reason}")]
    CorruptPdf { file: String, reason: String },

    /// The PDF needs a password to be read.
    #[error("attachment {file} is an encrypted (password-protected) PDF")]
    EncryptedPdf { file: String },

    /// The PDF has pages but none with text: most likely scanned images.
    #[error(
        "attachment {file} has no extractable text in its {pages} page{}: it is probably scanned images",
        if *pages == 1 { "" } else { "s" }
    )]
    NoTextInPdf { file: String, pages: usize },

    /// The DOCX is not a ZIP, lacks its document part, or its XML is malformed.
    #[error("attachment {file} is not a readable DOCX: {reason}")]
    CorruptDocx { file: String, reason: String },

    /// A part of the DOCX expands past [`MAX_DECOMPRESSED_BYTES`] (a zip bomb, or simply huge).
    #[error(
        "attachment {file}: {part} expands to more than {} when decompressed",
        human_bytes(*limit)
    )]
    DecompressedTooLarge {
        file: String,
        part: String,
        limit: u64,
    },
}

impl AttachError {
    /// The file the error is about: the path, or the name given to `extract_bytes`.
    pub fn file(&self) -> &str {
        match self {
            Self::NotFound { file }
            | Self::Directory { file }
            | Self::Unreadable { file, .. }
            | Self::TooLarge { file, .. }
            | Self::Unsupported { file, .. }
            | Self::NotUtf8 { file, .. }
            | Self::CorruptPdf { file, .. }
            | Self::EncryptedPdf { file }
            | Self::NoTextInPdf { file, .. }
            | Self::CorruptDocx { file, .. }
            | Self::DecompressedTooLarge { file, .. } => file,
        }
    }

    /// What the user can do about it, in one or two sentences.
    pub fn hint(&self) -> String {
        match self {
            Self::NotFound { .. } => "Check the path and the file name's spelling; a relative \
                 path is resolved from the current directory."
                .to_string(),
            Self::Directory { .. } => {
                "Attach files, not directories: name each file inside it separately.".to_string()
            }
            Self::Unreadable { .. } => "Check that the file is a regular file and that the user \
                 running mixseek may read it (its permissions)."
                .to_string(),
            Self::TooLarge { limit, .. } => format!(
                "Attach a smaller file (at most {}): split it, or copy the part that matters \
                 into a .txt file and attach that.",
                human_bytes(*limit)
            ),
            Self::Unsupported { extension, .. } => {
                let specific = match extension.as_deref().map(str::to_ascii_lowercase).as_deref() {
                    Some("doc" | "odt" | "rtf" | "pages") => {
                        "Save it as .docx (or export it as .pdf or .txt) and attach that."
                    }
                    Some(
                        "csv" | "tsv" | "json" | "jsonl" | "xml" | "yaml" | "yml" | "toml"
                        | "log" | "ini" | "cfg" | "rst" | "adoc",
                    ) => "It is text already: copy it to a file ending in .txt and attach that.",
                    _ => "Convert it to text (a .txt file works for any text) and attach that.",
                };
                specific.to_string()
            }
            Self::NotUtf8 { file, encoding, .. } => {
                let path = std::path::Path::new(file);
                let stem = path.file_stem().map_or_else(
                    || "converted".to_string(),
                    |s| s.to_string_lossy().into_owned(),
                );
                let converted = match path.extension() {
                    Some(ext) => format!("{stem}-utf8.{}", ext.to_string_lossy()),
                    None => format!("{stem}-utf8"),
                };
                let converted = path.with_file_name(converted).display().to_string();
                match encoding {
                    Some(from) => format!(
                        "Convert it to UTF-8 and attach the result, e.g. \
                         `iconv -f {from} -t UTF-8 {file} > {converted}`."
                    ),
                    None => format!(
                        "Convert it to UTF-8 and attach the result, e.g. \
                         `iconv -f WINDOWS-1252 -t UTF-8 {file} > {converted}` (after -f, name \
                         the encoding it is in: WINDOWS-1252, LATIN1, SHIFT_JIS, GBK, …), or \
                         save it as UTF-8 from a text editor."
                    ),
                }
            }
            Self::CorruptPdf { .. } => "The file may be damaged or not really a PDF: open it in a \
                 PDF viewer and save (or print to PDF) a new copy, or copy its text into a .txt \
                 file and attach that."
                .to_string(),
            Self::EncryptedPdf { .. } => "Remove the password (open it with the password and save \
                 or print an unprotected copy), or copy its text into a .txt file and attach that."
                .to_string(),
            Self::NoTextInPdf { .. } => "OCR it first (e.g. `ocrmypdf in.pdf out.pdf`) and attach \
                 the result, or attach its text as a .txt file."
                .to_string(),
            Self::CorruptDocx { .. } => "The file may be damaged or not a Word .docx document: open \
                 it in Word or LibreOffice and save it again as .docx (or as .txt), then attach that."
                .to_string(),
            Self::DecompressedTooLarge { .. } => format!(
                "The document is too large once decompressed (the limit is {}; it may be a zip \
                 bomb): save its text as a .txt file and attach that.",
                human_bytes(MAX_DECOMPRESSED_BYTES)
            ),
        }
    }
}

/// `1536` → `1.5 KiB`; whole numbers without decimals (`20 MiB`).
pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: &[&str] = &["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(human_bytes(0), "0 bytes");
        assert_eq!(human_bytes(1023), "1023 bytes");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(20 * 1024 * 1024), "20 MiB");
    }

    #[test]
    fn every_variant_names_its_file_and_has_a_hint() {
        let file = "dir/report.xyz".to_string();
        let errors = vec![
            AttachError::NotFound { file: file.clone() },
            AttachError::Directory { file: file.clone() },
            AttachError::Unreadable {
                file: file.clone(),
                source: std::io::Error::other("boom"),
            },
            AttachError::TooLarge {
                file: file.clone(),
                size: 30,
                limit: 20,
            },
            AttachError::Unsupported {
                file: file.clone(),
                extension: Some("xyz".into()),
            },
            AttachError::Unsupported {
                file: file.clone(),
                extension: None,
            },
            AttachError::NotUtf8 {
                file: file.clone(),
                detail: "invalid byte".into(),
                encoding: None,
            },
            AttachError::CorruptPdf {
                file: file.clone(),
                reason: "bad".into(),
            },
            AttachError::EncryptedPdf { file: file.clone() },
            AttachError::NoTextInPdf {
                file: file.clone(),
                pages: 2,
            },
            AttachError::CorruptDocx {
                file: file.clone(),
                reason: "bad".into(),
            },
            AttachError::DecompressedTooLarge {
                file: file.clone(),
                part: "word/document.xml".into(),
                limit: MAX_DECOMPRESSED_BYTES,
            },
        ];
        for e in errors {
            assert!(e.to_string().contains(&file), "{e}");
            assert_eq!(e.file(), file);
            assert!(!e.hint().is_empty());
        }
    }
}
