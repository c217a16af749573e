//! Themes of judge comments, merged across rounds: seed 003's rule for how much to trust a
//! theme (`0.7 × frequency + 0.3 × quotes`, each capped at 1, labelled High / Medium / Low)
//! and the merge of the themes seen round by round into one theme per name, with the rounds it
//! was seen in and its evidence.

use serde::Serialize;
use std::collections::BTreeSet;

/// How many distinct quotes give a theme full marks for evidence (the `quotes` term of the
/// confidence is `quotes / QUOTES_FOR_FULL_EVIDENCE`, capped at 1).
pub const QUOTES_FOR_FULL_EVIDENCE: usize = 3;

/// A confidence at or above this is `High`.
pub const HIGH_AT: f64 = 0.7;

/// A confidence at or above this (and below [`HIGH_AT`]) is `Medium`; below it, `Low`.
pub const MEDIUM_AT: f64 = 0.4;

/// How far a theme can be trusted, from [`confidence`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum ConfidenceLabel {
    /// At or above [`HIGH_AT`].
    High,
    /// At or above [`MEDIUM_AT`].
    Medium,
    /// Below [`MEDIUM_AT`].
    Low,
}

impl ConfidenceLabel {
    /// `High`, `Medium` or `Low`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfidenceLabel::High => "High",
            ConfidenceLabel::Medium => "Medium",
            ConfidenceLabel::Low => "Low",
        }
    }

    /// The label of a confidence (see [`HIGH_AT`], [`MEDIUM_AT`]).
    pub fn of(confidence: f64) -> ConfidenceLabel {
        if confidence >= HIGH_AT {
            ConfidenceLabel::High
        } else if confidence >= MEDIUM_AT {
            ConfidenceLabel::Medium
        } else {
            ConfidenceLabel::Low
        }
    }
}

/// Seed 003's confidence: `0.7 × min(frequency, 1) + 0.3 × min(quotes / 3, 1)`, where
/// `frequency` is the share of the analysed rounds in which the theme was seen and `quotes`
/// the number of distinct verified quotes. A frequency that is not a number counts as 0.
pub fn confidence(frequency: f64, quotes: usize) -> f64 {
    let f = if frequency.is_nan() {
        0.0
    } else {
        frequency.clamp(0.0, 1.0)
    };
    let q = (quotes as f64 / QUOTES_FOR_FULL_EVIDENCE as f64).min(1.0);
    0.7 * f + 0.3 * q
}

/// The key two theme names merge under: lowercased, whitespace runs as one space, trimmed,
/// and full-width ASCII folded (so `Missing  examples` and `ｍｉｓｓｉｎｇ examples` are one).
pub fn theme_key(name: &str) -> String {
    let folded: String = name
        .chars()
        .map(|c| match c {
            '\u{3000}' => ' ',
            '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            _ => c,
        })
        .flat_map(char::to_lowercase)
        .collect();
    folded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One theme as seen in one round (by the LLM step, or a keyword found in the round).
#[derive(Debug, Clone, PartialEq)]
pub struct Sighting<K> {
    /// The round it was seen in.
    pub round: u32,
    /// The theme's name as given.
    pub name: String,
    /// What the caller knows of it (kind, summary, severity): the first sighting's is kept,
    /// except that [`Merge::merge`] may keep the stronger of two.
    pub details: K,
    /// Quotes supporting it (already verified by the caller).
    pub quotes: Vec<String>,
}

/// A theme merged over the rounds it was seen in.
#[derive(Debug, Clone, PartialEq)]
pub struct MergedTheme<K> {
    /// The name of its first sighting.
    pub name: String,
    /// The details kept (see [`Sighting::details`]).
    pub details: K,
    /// The rounds it was seen in, ascending.
    pub rounds: Vec<u32>,
    /// Distinct `(round, quote)` pairs, in the order seen.
    pub evidence: Vec<(u32, String)>,
    /// `rounds / analysed_rounds` (0 when no round was analysed).
    pub frequency: f64,
    /// [`confidence`] of the frequency and the number of distinct quotes.
    pub confidence: f64,
    /// [`ConfidenceLabel::of`] the confidence.
    pub label: ConfidenceLabel,
}

/// How the details of two sightings of one theme combine.
pub trait Merge {
    /// Keeps the more severe of `self` and `other` (e.g. the higher severity); the default
    /// keeps `self`, the first sighting's.
    fn merge(&mut self, other: &Self) {
        let _ = other;
    }
}

/// Merges the sightings by [`theme_key`] of their names, in the order each theme was first
/// seen, and scores each against `analysed_rounds` (the rounds that had a comment to analyse).
/// The result is sorted by confidence (highest first), then by the number of rounds, then in
/// the order first seen.
pub fn merge<K: Clone + Merge>(
    sightings: &[Sighting<K>],
    analysed_rounds: usize,
) -> Vec<MergedTheme<K>> {
    let mut keys: Vec<String> = Vec::new();
    let mut merged: Vec<(BTreeSet<u32>, MergedTheme<K>)> = Vec::new();
    for s in sightings {
        let key = theme_key(&s.name);
        if key.is_empty() {
            continue;
        }
        let at = match keys.iter().position(|k| *k == key) {
            Some(at) => {
                merged[at].1.details.merge(&s.details);
                at
            }
            None => {
                keys.push(key);
                merged.push((
                    BTreeSet::new(),
                    MergedTheme {
                        name: s.name.trim().to_string(),
                        details: s.details.clone(),
                        rounds: Vec::new(),
                        evidence: Vec::new(),
                        frequency: 0.0,
                        confidence: 0.0,
                        label: ConfidenceLabel::Low,
                    },
                ));
                merged.len() - 1
            }
        };
        let (rounds, theme) = &mut merged[at];
        rounds.insert(s.round);
        for q in &s.quotes {
            let q = q.trim();
            if !q.is_empty() && !theme.evidence.iter().any(|(r, e)| *r == s.round && e == q) {
                theme.evidence.push((s.round, q.to_string()));
            }
        }
    }
    let mut out: Vec<(usize, MergedTheme<K>)> = merged
        .into_iter()
        .enumerate()
        .map(|(order, (rounds, mut t))| {
            t.rounds = rounds.into_iter().collect();
            t.frequency = if analysed_rounds == 0 {
                0.0
            } else {
                (t.rounds.len() as f64 / analysed_rounds as f64).min(1.0)
            };
            let quotes: BTreeSet<&str> = t.evidence.iter().map(|(_, q)| q.as_str()).collect();
            t.confidence = confidence(t.frequency, quotes.len());
            t.label = ConfidenceLabel::of(t.confidence);
            (order, t)
        })
        .collect();
    out.sort_by(|(oa, a), (ob, b)| {
        b.confidence
            .total_cmp(&a.confidence)
            .then(b.rounds.len().cmp(&a.rounds.len()))
            .then(oa.cmp(ob))
    });
    out.into_iter().map(|(_, t)| t).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, PartialEq)]
    struct Severity(u8);
    impl Merge for Severity {
        fn merge(&mut self, other: &Self) {
            self.0 = self.0.max(other.0);
        }
    }

    fn seen(round: u32, name: &str, severity: u8, quotes: &[&str]) -> Sighting<Severity> {
        Sighting {
            round,
            name: name.into(),
            details: Severity(severity),
            quotes: quotes.iter().map(|q| q.to_string()).collect(),
        }
    }

    #[test]
    fn the_seed_rule_and_its_labels() {
        assert_eq!(confidence(1.0, 3), 1.0);
        assert_eq!(confidence(2.0, 10), 1.0);
        assert!((confidence(0.5, 0) - 0.35).abs() < 1e-12);
        assert!((confidence(0.4, 1) - 0.38).abs() < 1e-12);
        assert_eq!(confidence(f64::NAN, 0), 0.0);
        assert_eq!(ConfidenceLabel::of(0.7), ConfidenceLabel::High);
        assert_eq!(ConfidenceLabel::of(0.69), ConfidenceLabel::Medium);
        assert_eq!(ConfidenceLabel::of(0.4), ConfidenceLabel::Medium);
        assert_eq!(ConfidenceLabel::of(0.39), ConfidenceLabel::Low);
        assert_eq!(ConfidenceLabel::Medium.as_str(), "Medium");
    }

    #[test]
    fn names_merge_across_case_spacing_and_width() {
        assert_eq!(theme_key("  Missing\u{3000} Examples "), "missing examples");
        assert_eq!(theme_key("ｍｉｓｓｉｎｇ examples"), "missing examples");
        assert_eq!(theme_key("具体例の不足"), "具体例の不足");
    }

    #[test]
    fn sightings_merge_by_name_with_rounds_evidence_and_the_strongest_details() {
        let s = vec![
            seen(1, "Missing examples", 1, &["no example", "no example"]),
            seen(1, "Clear structure", 0, &[]),
            seen(2, "missing  examples", 3, &["only abstract claims"]),
            seen(3, "Missing examples", 2, &["no example"]),
        ];
        let m = merge(&s, 4);
        assert_eq!(m.len(), 2);
        let first = &m[0];
        assert_eq!(first.name, "Missing examples");
        assert_eq!(first.rounds, vec![1, 2, 3]);
        assert_eq!(first.details, Severity(3));
        assert_eq!(
            first.evidence,
            vec![
                (1, "no example".to_string()),
                (2, "only abstract claims".to_string()),
                (3, "no example".to_string()),
            ]
        );
        // 3 of 4 rounds, 2 distinct quotes: 0.7 × 0.75 + 0.3 × 2/3
        assert!((first.frequency - 0.75).abs() < 1e-12);
        assert!((first.confidence - 0.725).abs() < 1e-12);
        assert_eq!(first.label, ConfidenceLabel::High);
        let second = &m[1];
        assert_eq!(second.rounds, vec![1]);
        assert!((second.confidence - 0.175).abs() < 1e-12);
        assert_eq!(second.label, ConfidenceLabel::Low);
    }

    #[test]
    fn no_analysed_round_and_empty_names() {
        let m = merge(&[seen(1, "  ", 0, &["x"]), seen(1, "a", 0, &[])], 0);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].frequency, 0.0);
        assert_eq!(m[0].label, ConfidenceLabel::Low);
    }

    proptest! {
        #[test]
        fn confidence_stays_in_0_1(
            names in prop::collection::vec("[a-cA-C ]{0,4}", 0..20),
            rounds in 0usize..6,
        ) {
            let s: Vec<_> = names
                .iter()
                .enumerate()
                .map(|(i, n)| seen(i as u32 % 5, n, 0, &["q"]))
                .collect();
            for t in merge(&s, rounds) {
                prop_assert!((0.0..=1.0).contains(&t.confidence));
                prop_assert!(!t.rounds.is_empty());
                prop_assert_eq!(t.label, ConfidenceLabel::of(t.confidence));
            }
        }
    }
}
