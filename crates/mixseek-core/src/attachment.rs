//! A document attached to a task (`exec --attach FILE`, an experiment task's attachments):
//! what is kept of it. The raw file never is: only its name, type, size, SHA-256 and the text
//! extracted from it (capped; `truncated` says when the cap cut it).

use serde::{Deserialize, Serialize};

/// One attachment, as the prompts see it and the store records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// The file name, without its directory (`report.pdf`).
    pub name: String,
    /// The media type the text was extracted as (`application/pdf`, `text/markdown`, …).
    pub media_type: String,
    /// The size of the raw file, in bytes.
    pub size_bytes: u64,
    /// The SHA-256 of the raw file, lowercase hex.
    pub sha256: String,
    /// The extracted text; when `truncated`, it ends with a visible note saying so.
    pub text: String,
    /// Whether the text was cut at the size cap.
    pub truncated: bool,
}
