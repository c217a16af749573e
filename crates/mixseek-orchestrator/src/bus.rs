//! The one event stream of a run: every event goes to each sink in order. The first sink is
//! the store writer — an error there (a round that could not be committed) is returned to the
//! emitter; the others (progress display, progress files, hooks, budget) only log failures.
//! With `[privacy] mask_pii` on, the others get a copy of each event with its personal data
//! masked: only the primary sinks (the store, which masks what it writes and keeps the hash of
//! the original, and the in-memory ranking) see the original text.

use mixseek_core::{Event, EventSink, PiiMasker, SinkError};
use std::borrow::Cow;
use std::sync::Arc;

/// Sends each event to its sinks in order: primary ones first (their failure fails the
/// emitter), then secondary ones (their failure is logged).
pub struct EventBus {
    /// Sinks whose failure fails the emitter (the store).
    primary: Vec<Arc<dyn EventSink>>,
    /// Sinks whose failure is logged and ignored.
    secondary: Vec<Arc<dyn EventSink>>,
    /// Applied to what the secondary sinks get.
    masker: Arc<PiiMasker>,
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
    /// A bus with no sink and no masking.
    pub fn new() -> Self {
        Self {
            primary: Vec::new(),
            secondary: Vec::new(),
            masker: Arc::new(PiiMasker::disabled()),
        }
    }
    /// Masks the events the secondary sinks get.
    pub(crate) fn with_masker(mut self, masker: Arc<PiiMasker>) -> Self {
        self.masker = masker;
        self
    }
    /// Adds a sink whose failure fails the emitter.
    pub(crate) fn with_primary(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.primary.push(sink);
        self
    }
    /// Adds a sink whose failure is logged and ignored.
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
        if self.secondary.is_empty() {
            return Ok(());
        }
        let event = if self.masker.is_enabled() {
            match self.masker.masked(event) {
                Ok(masked) => Cow::Owned(masked),
                Err(e) => {
                    // Nothing unmasked leaves: the secondary sinks miss this event.
                    tracing::error!(error = %e, "cannot mask an event; progress files, hooks and the display skip it");
                    return Ok(());
                }
            }
        } else {
            Cow::Borrowed(event)
        };
        let event = event.as_ref();
        for s in &self.secondary {
            if let Err(e) = s.emit(event).await {
                tracing::warn!(error = %e, "event consumer failed (ignored)");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Seen(Mutex<Vec<Event>>);

    #[async_trait::async_trait]
    impl EventSink for Seen {
        async fn emit(&self, event: &Event) -> Result<(), SinkError> {
            self.0.lock().expect("lock").push(event.clone());
            Ok(())
        }
    }

    fn prompt_of(e: &Event) -> String {
        match e {
            Event::ExecutionStarted { user_prompt, .. } => user_prompt.clone(),
            _ => String::new(),
        }
    }

    #[tokio::test]
    async fn with_masking_only_the_primary_sinks_see_personal_data() {
        let masker = PiiMasker::new(&mixseek_core::MaskingSpec {
            mask_pii: true,
            ..Default::default()
        })
        .expect("masker");
        let (primary, secondary) = (Arc::new(Seen::default()), Arc::new(Seen::default()));
        let bus = EventBus::new()
            .with_primary(primary.clone())
            .with_secondary(secondary.clone())
            .with_masker(Arc::new(masker));
        let event = Event::ExecutionStarted {
            execution_id: "e".into(),
            user_prompt: "mail taro@example.com".into(),
            teams: vec![mixseek_core::TeamRef {
                team_id: "t".into(),
                team_name: "T".into(),
            }],
            config_hash: "h".into(),
            max_rounds: 2,
            at: mixseek_core::time::now_utc(),
        };
        bus.emit(&event).await.expect("emit");
        let raw = primary.0.lock().expect("lock").clone();
        let masked = secondary.0.lock().expect("lock").clone();
        assert_eq!(raw, vec![event.clone()]);
        assert_eq!(prompt_of(&masked[0]), "mail [メールアドレス]");
        // Everything else came through unchanged.
        let mut expected = event;
        if let Event::ExecutionStarted { user_prompt, .. } = &mut expected {
            *user_prompt = "mail [メールアドレス]".into();
        }
        assert_eq!(masked, vec![expected]);
    }
}
