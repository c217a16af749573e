//! The last filter on what this process writes for people to read: every log line (stderr and
//! `logs/mixseek.log`), every error it prints, and the texts `exec` echoes on stdout. API keys
//! (the values of the configured providers' key variables, and anything shaped like a
//! well-known key) always become `***`; with `[privacy] mask_pii` on, personal data is masked
//! as in the database. A command installs the run's rules with [`install`] once its
//! configuration is loaded; before that only key-shaped text is masked.
//!
//! The crates below mask what they write themselves (the store, progress files, hooks and the
//! response cache get the same masker from the orchestrator); this module covers the text that
//! only the CLI writes, and is the safety net for anything a log line quotes.

use mixseek_core::PiiMasker;
use std::borrow::Cow;
use std::sync::{Arc, RwLock};

/// What [`text`] applies.
#[derive(Debug, Default)]
struct Rules {
    masker: PiiMasker,
    secrets: Vec<String>,
}

static RULES: RwLock<Option<Arc<Rules>>> = RwLock::new(None);

/// Installs the run's rules: its PII masker (disabled unless `[privacy] mask_pii`) and the
/// secret values to hide (the API keys it may send).
pub(crate) fn install(masker: PiiMasker, secrets: Vec<String>) {
    let rules = Arc::new(Rules { masker, secrets });
    if let Ok(mut guard) = RULES.write() {
        *guard = Some(rules);
    }
}

fn rules() -> Option<Arc<Rules>> {
    RULES.read().ok().and_then(|g| g.clone())
}

/// `s` with secrets and (when masking is on) personal data masked; borrowed when unchanged.
pub(crate) fn text(s: &str) -> Cow<'_, str> {
    let Some(rules) = rules() else {
        return mixseek_llm::mask(s, &[]);
    };
    let secrets: Vec<&str> = rules.secrets.iter().map(String::as_str).collect();
    match mixseek_llm::mask(s, &secrets) {
        Cow::Borrowed(b) => rules.masker.mask(b),
        Cow::Owned(o) => Cow::Owned(rules.masker.mask(&o).into_owned()),
    }
}

/// [`text`] over bytes written to a log or stderr (lossless for UTF-8, which is all we write).
pub(crate) fn bytes(b: &[u8]) -> Cow<'_, [u8]> {
    match std::str::from_utf8(b) {
        Ok(s) => match text(s) {
            Cow::Borrowed(_) => Cow::Borrowed(b),
            Cow::Owned(o) => Cow::Owned(o.into_bytes()),
        },
        Err(_) => Cow::Owned(text(&String::from_utf8_lossy(b)).into_owned().into_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_masked_before_and_after_install_and_pii_once_asked_for() {
        // One test: the rules are process-wide.
        let line = "key sk-proj-abcdefghijklmnopqrstuv for taro@example.com, custom my-own-key-123";
        let before = text(line);
        assert!(!before.contains("sk-proj-abc"), "{before}");
        assert!(before.contains("taro@example.com"));
        install(PiiMasker::disabled(), vec!["my-own-key-123".into()]);
        let after = text(line);
        assert!(!after.contains("my-own-key-123"), "{after}");
        assert!(
            after.contains("taro@example.com"),
            "masking is off: {after}"
        );
        let masker = PiiMasker::new(&mixseek_core::MaskingSpec {
            mask_pii: true,
            ..Default::default()
        })
        .expect("masker");
        install(masker, vec!["my-own-key-123".into()]);
        let masked = text(line);
        assert!(!masked.contains("taro@example.com"), "{masked}");
        assert!(!masked.contains("my-own-key-123"), "{masked}");
        assert!(matches!(text("nothing to hide"), Cow::Borrowed(_)));
        assert_eq!(&*bytes(b"plain"), b"plain");
        assert!(!String::from_utf8_lossy(&bytes(line.as_bytes())).contains("taro@"));
    }
}
