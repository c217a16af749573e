//! `[privacy]`: masking of personal data (PII) in every text a run writes out.
//!
//! ```toml
//! [privacy]
//! mask_pii = true
//! detectors = ["email", "phone", "card", "ip"]
//! extra_patterns = [
//!   { name = "employee_id", pattern = "EMP-[0-9]{6}", replacement = "[社員番号]" },
//! ]
//! ```
//!
//! The masking itself is done by `mixseek_core::PiiMasker`, built from these settings
//! with [`PrivacySettings::masker`]. Regexes are compiled there; an invalid one is reported
//! with its key path (`privacy.extra_patterns[i].pattern`).

use crate::issues::Issues;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Names of the built-in detectors, in the order they are applied.
pub(crate) const PII_DETECTORS: [&str; 4] = ["email", "card", "phone", "ip"];

/// `[privacy]` settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct PrivacySettings {
    /// Mask personal data in every text a run writes out: the submissions, prompts, member
    /// outputs, evaluator comments and judgment texts in the workspace database (`mixseek.db`),
    /// hook payloads, progress files, log files and stderr, and the summary `exec` prints. Each
    /// masked match is replaced by a label such as `[メールアドレス]`, and the SHA-256 of the
    /// original submission and prompt is stored beside the masked text. An LLM answer that
    /// holds personal data is not written to the response cache. What is sent to the LLMs is
    /// not changed. Off by default.
    pub mask_pii: bool,
    /// The built-in detectors used when `mask_pii` is on: any of `email` (e-mail addresses),
    /// `phone` (phone numbers, Japanese and international forms), `card` (payment card numbers
    /// that pass the Luhn check) and `ip` (IPv4 and IPv6 addresses). Default: all four.
    pub detectors: Vec<String>,
    /// Additional regular expressions to mask (Rust `regex` syntax), applied after the
    /// built-in detectors.
    pub extra_patterns: Vec<PiiPattern>,
}

impl Default for PrivacySettings {
    fn default() -> Self {
        Self {
            mask_pii: false,
            detectors: PII_DETECTORS.iter().map(|d| (*d).to_string()).collect(),
            extra_patterns: Vec::new(),
        }
    }
}

/// One configured masking pattern.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct PiiPattern {
    /// A short name for the pattern (used in logs and in the default replacement).
    pub name: String,
    /// The regular expression (Rust `regex` syntax; no look-around).
    pub pattern: String,
    /// The text that replaces each match. Default: `[{name}]`.
    pub replacement: Option<String>,
}

impl PrivacySettings {
    /// The masker these settings describe (one that changes nothing when `mask_pii` is off).
    pub fn masker(&self) -> Result<mixseek_core::PiiMasker, mixseek_core::PiiError> {
        mixseek_core::PiiMasker::new(&mixseek_core::MaskingSpec {
            mask_pii: self.mask_pii,
            detectors: self.detectors.clone(),
            extra_patterns: self
                .extra_patterns
                .iter()
                .map(|p| mixseek_core::ExtraPattern {
                    name: p.name.clone(),
                    pattern: p.pattern.clone(),
                    replacement: p.replacement.clone(),
                })
                .collect(),
        })
    }

    /// Checks detector names and that every extra pattern has a name and a pattern.
    pub fn validate(&self, prefix: &str, issues: &mut Issues) {
        for (i, d) in self.detectors.iter().enumerate() {
            if !PII_DETECTORS.contains(&d.as_str()) {
                let hint = match crate::issues::closest(d, PII_DETECTORS) {
                    Some(c) => format!(
                        "did you mean `{c}`? known detectors: {}",
                        PII_DETECTORS.join(", ")
                    ),
                    None => format!("known detectors: {}", PII_DETECTORS.join(", ")),
                };
                issues.error_hint(
                    prefix,
                    &format!("detectors[{i}]"),
                    format!("unknown PII detector `{d}`"),
                    hint,
                );
            }
        }
        for (i, p) in self.extra_patterns.iter().enumerate() {
            let key = format!("extra_patterns[{i}]");
            let p_prefix = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            issues.non_blank(&p_prefix, "name", &p.name);
            issues.non_blank(&p_prefix, "pattern", &p.pattern);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_mask_nothing_but_list_every_detector() {
        let p = PrivacySettings::default();
        assert!(!p.mask_pii);
        assert_eq!(p.detectors, vec!["email", "card", "phone", "ip"]);
        let parsed: PrivacySettings = toml::from_str("").expect("empty section");
        assert_eq!(parsed, p);
    }

    #[test]
    fn parses_extra_patterns() {
        let p: PrivacySettings = toml::from_str(
            r#"
mask_pii = true
detectors = ["email"]
extra_patterns = [{ name = "emp", pattern = "EMP-[0-9]{6}", replacement = "[社員番号]" }]
"#,
        )
        .expect("valid");
        assert!(p.mask_pii);
        assert_eq!(
            p.extra_patterns[0].replacement.as_deref(),
            Some("[社員番号]")
        );
        let mut issues = Issues::default();
        p.validate("privacy", &mut issues);
        assert!(issues.is_empty(), "{issues:?}");
    }

    #[test]
    fn unknown_detectors_and_blank_patterns_are_reported() {
        let p = PrivacySettings {
            mask_pii: true,
            detectors: vec!["emial".into()],
            extra_patterns: vec![PiiPattern {
                name: "x".into(),
                pattern: " ".into(),
                replacement: None,
            }],
        };
        let mut issues = Issues::default();
        p.validate("privacy", &mut issues);
        assert_eq!(issues.len(), 2);
        assert_eq!(issues.items[0].key, "privacy.detectors[0]");
        assert!(
            issues.items[0]
                .hint
                .as_deref()
                .unwrap_or("")
                .contains("`email`")
        );
        assert_eq!(issues.items[1].key, "privacy.extra_patterns[0].pattern");
    }
}
