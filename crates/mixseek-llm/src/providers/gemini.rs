//! placeholder (being written)
use crate::backend::{Backend, RawResponse};
use crate::error::{ErrorKind, LlmError};
use crate::providers::HttpCommon;
use crate::types::ChatRequest;
use std::sync::atomic::AtomicU32;

pub(crate) struct GeminiBackend { c: HttpCommon }
impl GeminiBackend { pub fn new(c: HttpCommon) -> Self { Self { c } } }
#[async_trait::async_trait]
impl Backend for GeminiBackend {
    async fn send(&self, model: &str, _r: &ChatRequest, _a: &AtomicU32) -> Result<RawResponse, LlmError> {
        Err(LlmError::new(ErrorKind::Config, &self.c.provider, model, "wip"))
    }
}
