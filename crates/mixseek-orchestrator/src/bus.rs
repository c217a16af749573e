//! The one event stream of a run: every event goes to each sink in order. The first sink is
//! the store writer — an error there (a round that could not be committed) is returned to the
//! emitter; the others (progress display, progress files, hooks, budget) only log failures.

use mixseek_core::{Event, EventSink, SinkError};
use std::sync::Arc;

pub struct EventBus {
    /// Sinks whose failure fails the emitter (the store).
    primary: Vec<Arc<dyn EventSink>>,
    /// Sinks whose failure is logged and ignored.
    secondary: Vec<Arc<dyn EventSink>>,
}

impl std::fmt::Debug for EventBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBus")
            .field("primary", &self.primary.len())
            .field("secondary", &self.secondary.len())
            .finish()
    }
}

impl EventBus {
    pub fn new() -> Self {
        Self {
            primary: Vec::new(),
            secondary: Vec::new(),
        }
    }
    pub fn with_primary(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.primary.push(sink);
        self
    }
    pub fn with_secondary(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.secondary.push(sink);
        self
    }
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait::async_trait]
impl EventSink for EventBus {
    async fn emit(&self, event: &Event) -> Result<(), SinkError> {
        for s in &self.primary {
            s.emit(event).await?;
        }
        for s in &self.secondary {
            if let Err(e) = s.emit(event).await {
                tracing::warn!(error = %e, "event consumer failed (ignored)");
            }
        }
        Ok(())
    }
}
