//! The wire formats the fake servers speak, the usage every answer reports and each wire's
//! error answer: shared by the scripted answers (`fake.rs`) and the hostile ones
//! (`hostile.rs`).

use crate::server::HttpResponse;
use serde_json::json;

/// Input tokens reported by every fake answer.
pub const USAGE_INPUT: u64 = 12;
/// Output tokens reported by every fake answer.
pub const USAGE_OUTPUT: u64 = 5;

/// The wire format a fake server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI Chat Completions (and the Responses API on [`RESPONSES_PATH`]).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini `generateContent`.
    Gemini,
}

/// The path of the OpenAI Responses API on the fake OpenAI server.
pub const RESPONSES_PATH: &str = "/v1/responses";

/// The error answer of `wire` (its JSON error shape) with extra headers.
pub fn error_response(
    wire: Wire,
    status: u16,
    message: &str,
    headers: &[(String, String)],
) -> HttpResponse {
    let body = match wire {
        Wire::OpenAi => {
            json!({"error": {"message": message, "type": "fake_error", "code": status}})
        }
        Wire::Anthropic => {
            json!({"type": "error", "error": {"type": "fake_error", "message": message}})
        }
        Wire::Gemini => {
            json!({"error": {"code": status, "message": message, "status": "FAKE_ERROR"}})
        }
    };
    let mut r = HttpResponse::json(status, &body);
    for (k, v) in headers {
        r = r.with_header(k, v);
    }
    r
}
