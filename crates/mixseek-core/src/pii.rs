//! PII masking (seed 003) of every text that leaves the process: e-mail addresses, phone
//! numbers, payment card numbers, IP addresses and configured regexes are replaced by labels
//! such as `[メールアドレス]`. With `[privacy] mask_pii` on, one masker is built per run and
//! applied wherever text is written: the database (which stores the SHA-256 of the original
//! submission and prompt beside the masked text, `submission_sha256`, `prompt_sha256`), hook
//! payloads, progress files, the response cache (an answer holding PII is not cached), the
//! summary the CLI prints, and the log files and stderr (docs/user-guide.md, "Privacy").
//!
//! Build a masker from the `[privacy]` settings (`mixseek_config::PrivacySettings`):
//! ```ignore
//! let masker = PiiMasker::new(&MaskingSpec {
//!     mask_pii: s.mask_pii,
//!     detectors: s.detectors.clone(),
//!     extra_patterns: s.extra_patterns.iter()
//!         .map(|p| ExtraPattern { name: p.name.clone(), pattern: p.pattern.clone(), replacement: p.replacement.clone() })
//!         .collect(),
//! })?;
//! ```

use regex::Regex;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::borrow::Cow;

/// A `[privacy]` setting that cannot be turned into a masker.
#[derive(Debug, thiserror::Error)]
pub enum PiiError {
    /// A detector name that is not one of `email`, `card`, `phone`, `ip`.
    #[error("unknown PII detector `{name}` (known: {known})")]
    UnknownDetector {
        /// The name given.
        name: String,
        /// The known names.
        known: String,
    },
    /// A configured pattern does not compile.
    #[error("privacy.extra_patterns[{index}] (`{name}`): invalid regular expression: {message}")]
    Pattern {
        /// Its position in `extra_patterns`.
        index: usize,
        /// Its name.
        name: String,
        /// The regex compiler's message.
        message: String,
    },
    /// A built-in pattern does not compile (a bug).
    #[error("built-in PII pattern {name}: {message}")]
    Builtin {
        /// The detector's name.
        name: String,
        /// The regex compiler's message.
        message: String,
    },
}

type Result<T> = std::result::Result<T, PiiError>;

/// The `[privacy]` settings the masker needs (field names as in the config section).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MaskingSpec {
    /// Whether masking is on.
    pub mask_pii: bool,
    /// Any of `email`, `card`, `phone`, `ip` (empty = all four).
    pub detectors: Vec<String>,
    /// Patterns of our own, masked after the detectors.
    pub extra_patterns: Vec<ExtraPattern>,
}

/// A configured pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtraPattern {
    /// The pattern's name (the default replacement is `[{name}]`).
    pub name: String,
    /// The regular expression.
    pub pattern: String,
    /// Default: `[{name}]`.
    pub replacement: Option<String>,
}

/// Lower-case hex SHA-256 of `text`.
pub fn sha256_hex(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

type Check = fn(&str, &str, usize, usize) -> bool;

#[derive(Debug, Clone)]
struct Rule {
    name: String,
    regex: Regex,
    replacement: String,
    /// (match, whole text, start, end) → mask it?
    check: Option<Check>,
}

/// Masks PII in text. A disabled masker returns every text unchanged.
#[derive(Debug, Clone, Default)]
pub struct PiiMasker {
    rules: Vec<Rule>,
}

const EMAIL: &str = r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}";
/// 13–19 digits, optionally grouped by spaces or hyphens.
const CARD: &str = r"[0-9０-９](?:[ \-]?[0-9０-９]){12,18}";
/// Japanese numbers (`03-1234-5678`, `090-1234-5678`, `(03)1234-5678`, `09012345678`, full-width
/// digits and hyphens) and international ones (`+81 90-1234-5678`, `+1 (415) 555-0100`).
const PHONE: &str = concat!(
    r"\+[0-9]{1,3}[ \-]?(?:\([0-9]{1,4}\)[ \-]?)?[0-9]{1,4}(?:[ \-]?[0-9]{2,4}){1,3}",
    r"|[(（]?[0０][0-9０-９]{1,4}[)）\-－ー−‐][0-9０-９]{1,4}[\-－ー−‐][0-9０-９]{3,4}",
    r"|[0０][5789５７８９][0０][0-9０-９]{8}",
);
const IPV4: &str = r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}";
const IPV6: &str = r"(?i)[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}";

fn digit_value(c: char) -> Option<u32> {
    match c {
        '0'..='9' => c.to_digit(10),
        '０'..='９' => Some(c as u32 - '０' as u32),
        _ => None,
    }
}

fn prev_char(text: &str, start: usize) -> Option<char> {
    text[..start].chars().next_back()
}

fn next_char(text: &str, end: usize) -> Option<char> {
    text[end..].chars().next()
}

fn is_digitish(c: char) -> bool {
    digit_value(c).is_some()
}

/// Not glued to other digits or letters, and not a piece of a longer hyphenated hex token such
/// as a UUID (`3f2b8c1e-0000-4000-8000-000000000001` holds `0000-4000-8000`, which looks like a
/// phone number: execution ids are stored in member records and prompts).
fn digit_boundary(_m: &str, text: &str, start: usize, end: usize) -> bool {
    let glued = |c: Option<char>| c.is_some_and(|c| is_digitish(c) || c.is_ascii_alphabetic());
    let mut before = text[..start].chars().rev();
    let mut after = text[end..].chars();
    let (b1, b2) = (before.next(), before.next());
    let (a1, a2) = (after.next(), after.next());
    // `-` joining hex digits, as in a UUID (`TEL-03-1234-5678` is still a phone number)
    let hyphen_chain = |hyphen: Option<char>, next: Option<char>| {
        hyphen == Some('-') && next.is_some_and(|c| c.is_ascii_hexdigit())
    };
    !glued(b1) && !glued(a1) && !hyphen_chain(b1, b2) && !hyphen_chain(a1, a2)
}

fn luhn_card(m: &str, text: &str, start: usize, end: usize) -> bool {
    if !digit_boundary(m, text, start, end) {
        return false;
    }
    let digits: Vec<u32> = m.chars().filter_map(digit_value).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| {
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                *d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

fn phone(m: &str, text: &str, start: usize, end: usize) -> bool {
    let n = m.chars().filter(|c| is_digitish(*c)).count();
    digit_boundary(m, text, start, end) && (9..=15).contains(&n)
}

fn ipv4(m: &str, text: &str, start: usize, end: usize) -> bool {
    let glued = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '.');
    // "1.2.3.4." at a sentence end is fine; "1.2.3.4.5" is not an address.
    let after_dot_digit =
        text[end..].starts_with('.') && text[end + 1..].starts_with(|c: char| c.is_ascii_digit());
    !glued(prev_char(text, start))
        && !next_char(text, end).is_some_and(|c| c.is_ascii_alphanumeric())
        && !after_dot_digit
        && m.split('.')
            .all(|o| o.parse::<u16>().is_ok_and(|v| v <= 255))
}

fn ipv6(m: &str, text: &str, start: usize, end: usize) -> bool {
    let glued =
        |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    if glued(prev_char(text, start)) || glued(next_char(text, end)) {
        return false;
    }
    let colons = m.matches(':').count();
    let hex = m.chars().filter(|c| c.is_ascii_hexdigit()).count();
    let longest_group = m.split(':').map(str::len).max().unwrap_or(0);
    (colons == 7 || (m.contains("::") && longest_group >= 3))
        && hex >= 4
        && m.parse::<std::net::Ipv6Addr>().is_ok()
}

fn builtin(name: &str) -> Option<(&'static str, &'static str, Option<Check>)> {
    match name {
        "email" => Some((EMAIL, "[メールアドレス]", None)),
        "card" => Some((CARD, "[カード番号]", Some(luhn_card as Check))),
        "phone" => Some((PHONE, "[電話番号]", Some(phone as Check))),
        _ => None,
    }
}

impl PiiMasker {
    /// A masker that changes nothing.
    pub fn disabled() -> Self {
        Self::default()
    }

    /// Builds the masker; an unknown detector or an invalid regex is an error.
    pub fn new(spec: &MaskingSpec) -> Result<Self> {
        if !spec.mask_pii {
            return Ok(Self::disabled());
        }
        let all = ["email", "card", "phone", "ip"];
        let wanted: Vec<&str> = if spec.detectors.is_empty() {
            all.to_vec()
        } else {
            spec.detectors.iter().map(String::as_str).collect()
        };
        let mut rules = Vec::new();
        // Fixed order: e-mail (contains digits and dots), card (long digit runs), phone, ip.
        for name in all {
            if !wanted.contains(&name) {
                continue;
            }
            let compiled = |re: &str| {
                Regex::new(re).map_err(|e| PiiError::Builtin {
                    name: name.into(),
                    message: e.to_string(),
                })
            };
            if name == "ip" {
                rules.push(Rule {
                    name: "ipv4".into(),
                    regex: compiled(IPV4)?,
                    replacement: "[IPアドレス]".into(),
                    check: Some(ipv4),
                });
                rules.push(Rule {
                    name: "ipv6".into(),
                    regex: compiled(IPV6)?,
                    replacement: "[IPアドレス]".into(),
                    check: Some(ipv6),
                });
            } else if let Some((re, label, check)) = builtin(name) {
                rules.push(Rule {
                    name: name.into(),
                    regex: compiled(re)?,
                    replacement: label.into(),
                    check,
                });
            }
        }
        for d in &wanted {
            if !all.contains(d) {
                return Err(PiiError::UnknownDetector {
                    name: d.to_string(),
                    known: all.join(", "),
                });
            }
        }
        for (index, p) in spec.extra_patterns.iter().enumerate() {
            let regex = Regex::new(&p.pattern).map_err(|e| PiiError::Pattern {
                index,
                name: p.name.clone(),
                message: e.to_string(),
            })?;
            rules.push(Rule {
                name: p.name.clone(),
                regex,
                replacement: p
                    .replacement
                    .clone()
                    .unwrap_or_else(|| format!("[{}]", p.name)),
                check: None,
            });
        }
        Ok(Self { rules })
    }

    /// Whether any rule is active (masking on).
    pub fn is_enabled(&self) -> bool {
        !self.rules.is_empty()
    }

    /// The masked text (borrowed when nothing matched).
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut current: Cow<'a, str> = Cow::Borrowed(text);
        for rule in &self.rules {
            let replaced = replace_checked(rule, &current);
            if let Some(r) = replaced {
                tracing::trace!(rule = %rule.name, "masked PII");
                current = Cow::Owned(r);
            }
        }
        current
    }

    /// A copy of `value` with every string in it masked (through its JSON form, so a text
    /// field added later is masked too). Fields its serialisation skips come back as their
    /// default. Fails only if the type does not read back what it writes (a bug, which the
    /// round-trip tests of the event and summary types guard against).
    pub fn masked<T: serde::Serialize + serde::de::DeserializeOwned>(
        &self,
        value: &T,
    ) -> std::result::Result<T, serde_json::Error> {
        let mut json = serde_json::to_value(value)?;
        self.mask_json(&mut json);
        serde_json::from_value(json)
    }

    /// Masks every string value (not the keys) of a JSON document; true if anything changed.
    pub fn mask_json(&self, value: &mut Value) -> bool {
        if !self.is_enabled() {
            return false;
        }
        match value {
            Value::String(s) => match self.mask(s) {
                Cow::Owned(m) => {
                    *s = m;
                    true
                }
                Cow::Borrowed(_) => false,
            },
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |acc, v| self.mask_json(v) | acc),
            Value::Object(map) => map
                .values_mut()
                .fold(false, |acc, v| self.mask_json(v) | acc),
            _ => false,
        }
    }
}

fn replace_checked(rule: &Rule, text: &str) -> Option<String> {
    let mut out: Option<String> = None;
    let mut last = 0;
    for m in rule.regex.find_iter(text) {
        let ok = rule
            .check
            .is_none_or(|c| c(m.as_str(), text, m.start(), m.end()));
        if !ok {
            continue;
        }
        let buf = out.get_or_insert_with(|| String::with_capacity(text.len()));
        buf.push_str(&text[last..m.start()]);
        buf.push_str(&rule.replacement);
        last = m.end();
    }
    out.map(|mut buf| {
        buf.push_str(&text[last..]);
        buf
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masker() -> PiiMasker {
        PiiMasker::new(&MaskingSpec {
            mask_pii: true,
            ..MaskingSpec::default()
        })
        .expect("masker")
    }

    #[test]
    fn disabled_masker_changes_nothing() {
        let m = PiiMasker::new(&MaskingSpec::default()).expect("masker");
        assert!(!m.is_enabled());
        assert!(matches!(m.mask("taro@example.com"), Cow::Borrowed(_)));
    }

    #[test]
    fn masks_japanese_business_text() {
        let text = "お問い合わせは山田太郎（taro.yamada@example.co.jp）まで。\
                    電話: 03-1234-5678、携帯 090-1234-5678、または０３－１２３４－５６７８へ。\
                    お支払いはカード番号4111 1111 1111 1111で完了しました。\
                    接続元IPは192.168.10.25、IPv6は2001:db8::8a2e:370:7334です。";
        let masked = masker().mask(text).into_owned();
        assert_eq!(
            masked,
            "お問い合わせは山田太郎（[メールアドレス]）まで。\
             電話: [電話番号]、携帯 [電話番号]、または[電話番号]へ。\
             お支払いはカード番号[カード番号]で完了しました。\
             接続元IPは[IPアドレス]、IPv6は[IPアドレス]です。"
        );
    }

    #[test]
    fn masks_international_numbers_and_glued_japanese_text() {
        let m = masker();
        assert_eq!(
            m.mask("Call +81 90-1234-5678 today"),
            "Call [電話番号] today"
        );
        assert_eq!(
            m.mask("US office: +1 (415) 555-0100."),
            "US office: [電話番号]."
        );
        assert_eq!(m.mask("携帯09012345678に連絡"), "携帯[電話番号]に連絡");
        assert_eq!(m.mask("TEL-03-1234-5678"), "TEL-[電話番号]");
        assert_eq!(
            m.mask("カード5500-0000-0000-0004です"),
            "カード[カード番号]です"
        );
    }

    #[test]
    fn leaves_look_alikes_alone() {
        let m = masker();
        for text in [
            "2025-11-19 の売上は 1,234,567 円",
            "version 1.2.3 and 10.0.0.1.5",
            "use std::fmt::Display; Foo::bar()",
            "order 4111111111111112 (not a valid card)",
            "score 85.5/100 at 10:30:00",
            "ISBN 978-4-06-519981-7",
            // execution ids (UUIDs) whose groups look like a phone or card number
            "execution 3f2b8c1e-0000-4000-8000-000000000001",
            "{\"execution_id\":\"9a7d6e5f-0312-3456-7890-000000000002\"}",
            "id 0000-4111-1111-1111-1111-abcdef",
        ] {
            assert_eq!(m.mask(text), text, "{text}");
        }
    }

    #[test]
    fn extra_patterns_and_detector_selection() {
        let m = PiiMasker::new(&MaskingSpec {
            mask_pii: true,
            detectors: vec!["email".into()],
            extra_patterns: vec![ExtraPattern {
                name: "employee".into(),
                pattern: "EMP-[0-9]{6}".into(),
                replacement: Some("[社員番号]".into()),
            }],
        })
        .expect("masker");
        assert_eq!(
            m.mask("EMP-123456 a@b.io 03-1234-5678"),
            "[社員番号] [メールアドレス] 03-1234-5678"
        );
        let bad = PiiMasker::new(&MaskingSpec {
            mask_pii: true,
            detectors: vec![],
            extra_patterns: vec![ExtraPattern {
                name: "x".into(),
                pattern: "(".into(),
                replacement: None,
            }],
        });
        assert!(matches!(bad, Err(PiiError::Pattern { index: 0, .. })));
        let unknown = PiiMasker::new(&MaskingSpec {
            mask_pii: true,
            detectors: vec!["mail".into()],
            ..Default::default()
        });
        assert!(matches!(unknown, Err(PiiError::UnknownDetector { .. })));
    }

    #[test]
    fn masks_json_strings_but_not_keys() {
        let mut v = serde_json::json!({"taro@example.com": ["mail taro@example.com", 3, {"ip": "10.1.2.3"}]});
        assert!(masker().mask_json(&mut v));
        assert_eq!(
            v,
            serde_json::json!({"taro@example.com": ["mail [メールアドレス]", 3, {"ip": "[IPアドレス]"}]})
        );
    }

    #[test]
    fn sha256_is_hex_of_the_original() {
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
