//! Pairwise verdicts: the five Arena-Hard labels (`A>>B` … `B>>A`), reading the verdict out of a
//! judge's text, and turning judged games into weighted comparisons for the Bradley–Terry fit.
//!
//! Each pair of contestants is judged twice with the positions swapped; [`pair_agreement`] says
//! whether the two games name the same winner. Both games always enter the fit as the evidence
//! they are: a disagreeing pair is not dropped.

use serde::{Deserialize, Serialize};

/// A judge's verdict on one game, from the point of view of the answer shown in position A.
///
/// Serialized as its label (`"A>>B"`, `"A>B"`, `"A=B"`, `"B>A"`, `"B>>A"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Verdict {
    /// `A>>B`: A is significantly better.
    #[serde(rename = "A>>B")]
    AMuchBetter,
    /// `A>B`: A is slightly better.
    #[serde(rename = "A>B")]
    ABetter,
    /// `A=B`: a tie.
    #[serde(rename = "A=B")]
    Tie,
    /// `B>A`: B is slightly better.
    #[serde(rename = "B>A")]
    BBetter,
    /// `B>>A`: B is significantly better.
    #[serde(rename = "B>>A")]
    BMuchBetter,
}

impl Verdict {
    /// All five verdicts, from best to worst for A.
    pub const ALL: [Verdict; 5] = [
        Verdict::AMuchBetter,
        Verdict::ABetter,
        Verdict::Tie,
        Verdict::BBetter,
        Verdict::BMuchBetter,
    ];

    /// The canonical label: `"A>>B"`, `"A>B"`, `"A=B"`, `"B>A"` or `"B>>A"`.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::AMuchBetter => "A>>B",
            Verdict::ABetter => "A>B",
            Verdict::Tie => "A=B",
            Verdict::BBetter => "B>A",
            Verdict::BMuchBetter => "B>>A",
        }
    }

    /// Reads a label: the five canonical ones and their mirrored spellings (`"B<<A"`, `"B<A"`,
    /// `"B=A"`, `"A<B"`, `"A<<B"`), surrounding whitespace trimmed. Anything else is `None`:
    /// an unknown label is never guessed at.
    pub fn from_label(s: &str) -> Option<Verdict> {
        match s.trim() {
            "A>>B" | "B<<A" => Some(Verdict::AMuchBetter),
            "A>B" | "B<A" => Some(Verdict::ABetter),
            "A=B" | "B=A" => Some(Verdict::Tie),
            "B>A" | "A<B" => Some(Verdict::BBetter),
            "B>>A" | "A<<B" => Some(Verdict::BMuchBetter),
            _ => None,
        }
    }

    /// The same judgment with the positions exchanged (`A>B` ↔ `B>A`, `A>>B` ↔ `B>>A`, ties
    /// stay ties).
    pub fn swapped(self) -> Verdict {
        match self {
            Verdict::AMuchBetter => Verdict::BMuchBetter,
            Verdict::ABetter => Verdict::BBetter,
            Verdict::Tie => Verdict::Tie,
            Verdict::BBetter => Verdict::ABetter,
            Verdict::BMuchBetter => Verdict::AMuchBetter,
        }
    }

    /// A's score in the game: 1 for a win (slight or strong), 0.5 for a tie, 0 for a loss.
    pub fn score_for_a(self) -> f64 {
        match self {
            Verdict::AMuchBetter | Verdict::ABetter => 1.0,
            Verdict::Tie => 0.5,
            Verdict::BBetter | Verdict::BMuchBetter => 0.0,
        }
    }

    /// Whether this is a strong verdict (`A>>B` or `B>>A`), which counts `strong_weight` times.
    pub fn is_strong(self) -> bool {
        matches!(self, Verdict::AMuchBetter | Verdict::BMuchBetter)
    }
}

/// Reads the verdict out of a judge's text: the label of the last `[[…]]` whose content is made
/// only of `A`, `B`, `<`, `>`, `=` (the regex `\[\[([AB<>=]+)\]\]`); when there is none, the
/// last single-bracket `[…]` of the same kind. The label found must be a known one
/// ([`Verdict::from_label`]), otherwise the text is unparseable (`None`) — the earlier
/// matches are not tried.
pub fn parse_verdict(text: &str) -> Option<Verdict> {
    last_bracketed(text, "[[", "]]")
        .or_else(|| last_bracketed(text, "[", "]"))
        .and_then(Verdict::from_label)
}

/// Whether `c` may appear in a bracketed label.
fn is_label_char(c: char) -> bool {
    matches!(c, 'A' | 'B' | '<' | '>' | '=')
}

/// The content of the last `open LABEL close` in `text` with a non-empty LABEL of label
/// characters. Candidates cannot overlap (a label holds no brackets), so this is the last match
/// a regex would find.
fn last_bracketed<'t>(text: &'t str, open: &str, close: &str) -> Option<&'t str> {
    let mut found = None;
    let mut from = 0;
    while let Some(offset) = text[from..].find(open) {
        let start = from + offset + open.len();
        let rest = &text[start..];
        let len = rest.find(|c| !is_label_char(c)).unwrap_or(rest.len());
        if len > 0 && rest[len..].starts_with(close) {
            found = Some(&rest[..len]);
        }
        // `open` is ASCII, so one byte past its start is a character boundary.
        from += offset + 1;
    }
    found
}

/// One judged game: contestant `first` was shown in position A, `second` in position B.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Game {
    /// The contestant shown in position A.
    pub first: usize,
    /// The contestant shown in position B.
    pub second: usize,
    /// The parsed verdict, `None` when the judge's answer was unparseable.
    pub verdict: Option<Verdict>,
}

/// One weighted comparison for the fit, from `a`'s point of view: `a` won `score_a · weight`
/// and `b` won `(1 − score_a) · weight` (a tie, `score_a = 0.5`, is half a win for each).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The contestant whose score is given.
    pub a: usize,
    /// The opponent.
    pub b: usize,
    /// `a`'s score in `0..=1`: 1 win, 0.5 tie, 0 loss.
    pub score_a: f64,
    /// How many games this comparison counts as (`strong_weight` for `>>` verdicts, else 1).
    pub weight: f64,
}

impl Game {
    /// The game as a comparison from `first`'s point of view, `None` when the verdict is
    /// unparseable. A strong verdict (`A>>B`, `B>>A`) weighs `strong_weight`, any other 1.
    pub fn comparison(&self, strong_weight: f64) -> Option<Comparison> {
        let verdict = self.verdict?;
        Some(Comparison {
            a: self.first,
            b: self.second,
            score_a: verdict.score_for_a(),
            weight: if verdict.is_strong() {
                strong_weight
            } else {
                1.0
            },
        })
    }

    /// The contestant this game says won, `Some(None)` for a tie, `None` when unparseable.
    fn winner(&self) -> Option<Option<usize>> {
        let verdict = self.verdict?;
        let score = verdict.score_for_a();
        Some(if score > 0.5 {
            Some(self.first)
        } else if score < 0.5 {
            Some(self.second)
        } else {
            None
        })
    }

    /// The pair of contestants, smaller index first.
    fn pair(&self) -> (usize, usize) {
        (self.first.min(self.second), self.first.max(self.second))
    }
}

/// Whether the two games of one pair (positions swapped) tell the same story.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PairAgreement {
    /// Both games name the same winner (strength may differ), or both are ties.
    Agree,
    /// The games name different winners, or one is a tie and the other a win.
    Disagree,
    /// A verdict is missing, or the games are not of the same pair.
    Incomplete,
}

/// Compares the two games of one pair (in either order of `first`/`second`).
///
/// * `Agree` when both verdicts make the same contestant the winner — `A>>B` in one game and
///   `B>A` in the swapped one agree, strength is not compared — or both are ties.
/// * `Disagree` when they name different winners, **including a tie against a win**: a judge
///   that sees a difference only in one position order is position-biased on that pair.
/// * `Incomplete` when either verdict is unparseable, or the two games are not of the same
///   pair of contestants.
///
/// This is a diagnostic only: both games count in the fit whatever it says.
pub fn pair_agreement(g1: &Game, g2: &Game) -> PairAgreement {
    if g1.pair() != g2.pair() {
        return PairAgreement::Incomplete;
    }
    match (g1.winner(), g2.winner()) {
        (Some(w1), Some(w2)) if w1 == w2 => PairAgreement::Agree,
        (Some(_), Some(_)) => PairAgreement::Disagree,
        _ => PairAgreement::Incomplete,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn game(first: usize, second: usize, label: &str) -> Game {
        Game {
            first,
            second,
            verdict: Verdict::from_label(label),
        }
    }

    #[test]
    fn labels_round_trip() {
        for v in Verdict::ALL {
            assert_eq!(Verdict::from_label(v.label()), Some(v));
        }
        let labels: Vec<&str> = Verdict::ALL.iter().map(|v| v.label()).collect();
        assert_eq!(labels, ["A>>B", "A>B", "A=B", "B>A", "B>>A"]);
    }

    #[test]
    fn mirrored_spellings_and_whitespace() {
        assert_eq!(Verdict::from_label("B<<A"), Some(Verdict::AMuchBetter));
        assert_eq!(Verdict::from_label("B<A"), Some(Verdict::ABetter));
        assert_eq!(Verdict::from_label("B=A"), Some(Verdict::Tie));
        assert_eq!(Verdict::from_label("A<B"), Some(Verdict::BBetter));
        assert_eq!(Verdict::from_label("A<<B"), Some(Verdict::BMuchBetter));
        assert_eq!(Verdict::from_label("  A>B\n"), Some(Verdict::ABetter));
        for bad in [
            "", "A", "A>>>B", "A>=B", "a>b", "A > B", "B>B", "A=A", "C>D",
        ] {
            assert_eq!(Verdict::from_label(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn scores_and_strength() {
        let scores: Vec<f64> = Verdict::ALL.iter().map(|v| v.score_for_a()).collect();
        assert_eq!(scores, [1.0, 1.0, 0.5, 0.0, 0.0]);
        let strong: Vec<bool> = Verdict::ALL.iter().map(|v| v.is_strong()).collect();
        assert_eq!(strong, [true, false, false, false, true]);
        assert_eq!(Verdict::ABetter.swapped(), Verdict::BBetter);
        assert_eq!(Verdict::AMuchBetter.swapped(), Verdict::BMuchBetter);
        assert_eq!(Verdict::Tie.swapped(), Verdict::Tie);
    }

    #[test]
    fn swapped_is_an_involution_mirroring_the_score() {
        for v in Verdict::ALL {
            assert_eq!(v.swapped().swapped(), v);
            assert_eq!(v.swapped().score_for_a(), 1.0 - v.score_for_a());
            assert_eq!(v.swapped().is_strong(), v.is_strong());
        }
    }

    #[test]
    fn parse_takes_the_last_double_bracket_match() {
        let text = "At first [[A>B]] seemed right ... final verdict: [[B>A]]";
        assert_eq!(parse_verdict(text), Some(Verdict::BBetter));
        assert_eq!(
            parse_verdict("My final verdict is [[A>>B]]."),
            Some(Verdict::AMuchBetter)
        );
        assert_eq!(parse_verdict("[[A=B]]"), Some(Verdict::Tie));
        // A double-bracket match wins over a later single-bracket one.
        assert_eq!(
            parse_verdict("[[B>>A]] then [A>B]"),
            Some(Verdict::BMuchBetter)
        );
        assert_eq!(parse_verdict("[[[A<B]]]"), Some(Verdict::BBetter));
    }

    #[test]
    fn parse_falls_back_to_single_brackets() {
        assert_eq!(parse_verdict("verdict: [A>B]"), Some(Verdict::ABetter));
        assert_eq!(parse_verdict("[B>A] no, [A=B]"), Some(Verdict::Tie));
        assert_eq!(parse_verdict("broken [[A>B] here"), Some(Verdict::ABetter));
        assert_eq!(
            parse_verdict("see [1] and [B<<A]"),
            Some(Verdict::AMuchBetter)
        );
    }

    #[test]
    fn parse_never_guesses() {
        assert_eq!(parse_verdict(""), None);
        assert_eq!(parse_verdict("A is better than B"), None);
        assert_eq!(parse_verdict("[[C>D]]"), None);
        assert_eq!(parse_verdict("[[A > B]]"), None);
        assert_eq!(parse_verdict("[[]]"), None);
        // The last match is an unknown label: earlier known ones are not used.
        assert_eq!(parse_verdict("[[A>B]] ... [[A>>>B]]"), None);
        assert_eq!(parse_verdict("[[A>B]] ... [[B]]"), None);
        assert_eq!(parse_verdict("ünïcödé [[B>A]] ✓"), Some(Verdict::BBetter));
    }

    #[test]
    fn comparison_weights_strong_verdicts() {
        let g = game(3, 5, "A>>B");
        assert_eq!(
            g.comparison(3.0),
            Some(Comparison {
                a: 3,
                b: 5,
                score_a: 1.0,
                weight: 3.0
            })
        );
        let g = game(5, 3, "B>A");
        assert_eq!(
            g.comparison(3.0),
            Some(Comparison {
                a: 5,
                b: 3,
                score_a: 0.0,
                weight: 1.0
            })
        );
        let g = game(1, 2, "A=B");
        let c = g.comparison(3.0).expect("parsed");
        assert_eq!((c.score_a, c.weight), (0.5, 1.0));
        assert_eq!(game(1, 2, "garbage").comparison(3.0), None);
    }

    #[test]
    fn pair_agreement_cases() {
        use PairAgreement::*;
        // 0 wins in both orders, strength differs: agree.
        assert_eq!(
            pair_agreement(&game(0, 1, "A>>B"), &game(1, 0, "B>A")),
            Agree
        );
        assert_eq!(
            pair_agreement(&game(0, 1, "A>B"), &game(1, 0, "B>>A")),
            Agree
        );
        // 1 wins both.
        assert_eq!(
            pair_agreement(&game(0, 1, "B>A"), &game(1, 0, "A>B")),
            Agree
        );
        assert_eq!(
            pair_agreement(&game(0, 1, "A=B"), &game(1, 0, "A=B")),
            Agree
        );
        // Position bias: whoever is shown first wins.
        assert_eq!(
            pair_agreement(&game(0, 1, "A>B"), &game(1, 0, "A>B")),
            Disagree
        );
        // A tie against a win disagrees.
        assert_eq!(
            pair_agreement(&game(0, 1, "A=B"), &game(1, 0, "B>A")),
            Disagree
        );
        assert_eq!(
            pair_agreement(&game(0, 1, "A>>B"), &game(1, 0, "A=B")),
            Disagree
        );
        // Unparseable or not the same pair.
        assert_eq!(
            pair_agreement(&game(0, 1, "A>B"), &game(1, 0, "??")),
            Incomplete
        );
        assert_eq!(
            pair_agreement(&game(0, 1, "??"), &game(1, 0, "??")),
            Incomplete
        );
        assert_eq!(
            pair_agreement(&game(0, 1, "A>B"), &game(2, 0, "B>A")),
            Incomplete
        );
        // Same order twice is still the same pair.
        assert_eq!(
            pair_agreement(&game(0, 1, "A>B"), &game(0, 1, "A>>B")),
            Agree
        );
    }

    #[test]
    fn serde_uses_labels() {
        use serde::de::IntoDeserializer;
        use serde::de::value::{Error, StrDeserializer};
        let read = |label: &str| {
            let de: StrDeserializer<'_, Error> = label.into_deserializer();
            Verdict::deserialize(de).ok()
        };
        for v in Verdict::ALL {
            assert_eq!(read(v.label()), Some(v));
        }
        assert_eq!(read("BMuchBetter"), None);
        let de: StrDeserializer<'_, Error> = "snake_case".into_deserializer();
        assert!(PairAgreement::deserialize(de).is_err());
        let de: StrDeserializer<'_, Error> = "incomplete".into_deserializer();
        assert_eq!(
            PairAgreement::deserialize(de).ok(),
            Some(PairAgreement::Incomplete)
        );
    }

    proptest! {
        #[test]
        fn parse_finds_a_label_anywhere(prefix in "[a-z .:]{0,40}", suffix in "[a-z .:]{0,40}", i in 0usize..5) {
            let v = Verdict::ALL[i];
            let text = format!("{prefix}[[{}]]{suffix}", v.label());
            prop_assert_eq!(parse_verdict(&text), Some(v));
        }

        #[test]
        fn parse_never_panics(text in "\\PC{0,80}") {
            let _ = parse_verdict(&text);
        }
    }
}
