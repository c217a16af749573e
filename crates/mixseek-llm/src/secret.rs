//! Masking of API keys in any text that may reach a user or a log: the configured keys
//! themselves, plus anything that looks like a well-known key format (including Google
//! Cloud's: PEM private keys, `ya29.` access tokens and signed JWTs).

use std::borrow::Cow;
use std::sync::OnceLock;

const MASK: &str = "***";

fn patterns() -> Option<&'static regex::Regex> {
    static RE: OnceLock<Option<regex::Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(
            r"(sk-ant-[A-Za-z0-9_\-]{8,}|sk-(?:proj-)?[A-Za-z0-9_\-]{16,}|xai-[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{20,}|(?i:bearer)\s+[A-Za-z0-9_\-\.=]{16,}|ya29\.[A-Za-z0-9_\-\.]{16,}|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,}|(?s:-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----))",
        )
        .ok()
    })
    .as_ref()
}

/// `text` with every occurrence of the given secrets, and of known key formats, replaced by
/// `***` (borrowed when there was nothing to mask).
pub fn mask<'a>(text: &'a str, secrets: &[&str]) -> Cow<'a, str> {
    let mut out = Cow::Borrowed(text);
    for s in secrets {
        if s.len() >= 4 && out.contains(s) {
            out = Cow::Owned(out.replace(s, MASK));
        }
    }
    match patterns() {
        Some(re) if re.is_match(&out) => Cow::Owned(re.replace_all(&out, MASK).into_owned()),
        _ => out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_given_and_known_keys() {
        let t = "bad key my-local-key and sk-proj-abcdefghijklmnopqrstuv, xai-0123456789abcdefXYZ, AIzaSyA1234567890abcdefghijk";
        let m = mask(t, &["my-local-key"]);
        assert!(!m.contains("my-local-key"));
        assert!(!m.contains("sk-proj-abc"));
        assert!(!m.contains("xai-0123"));
        assert!(!m.contains("AIzaSy"));
        assert_eq!(m.matches("***").count(), 4, "{m}");
        assert_eq!(mask("nothing here", &[]), "nothing here");
        let g = "token ya29.a0AfB_byC1234567890abcdef, jwt eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJhQGIifQ.c2lnbmF0dXJlc2lnbmF0dXJl, key -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\n end";
        let m = mask(g, &[]);
        assert_eq!(
            m, "token ***, jwt ***, key ***\n end",
            "Google tokens, JWTs and PEM keys"
        );
    }
}
