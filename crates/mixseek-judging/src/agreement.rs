//! Agreement within a jury: several LLM judges (or repeated samples of one judge) scoring the
//! same submissions on 0–100. Owns Krippendorff's alpha for interval data, the spread of one
//! submission's ratings, the per-metric summary of an execution and the reading of alpha
//! against Krippendorff's thresholds.
//!
//! A *unit* is one thing being rated (a submission for one metric); `units[u]` holds the ratings
//! it received, in any order, with missing ratings simply absent.

use serde::{Deserialize, Serialize};

/// Krippendorff's alpha for interval data.
///
/// `units[u]` holds the values unit `u` received (one per rater that rated it; missing ratings
/// are simply absent, so units can have different lengths). Units with fewer than 2 values are
/// not pairable and are ignored. α = 1 − D_o / D_e with the squared-difference metric, in the
/// coincidence-matrix formulation where `n` is the number of pairable values:
///
/// * D_o = (1/n) · Σ_u Σ_{i≠j in u} (v_i − v_j)² / (m_u − 1), `m_u` the size of unit `u`;
/// * D_e = 1/(n(n−1)) · Σ_{i≠j over all pairable values} (v_i − v_j)².
///
/// Both double sums are computed through Σ_{i≠j} (v_i − v_j)² = 2·m·Σ (v − mean)², so the cost
/// is linear in the number of values.
///
/// `None` when there are fewer than 2 pairable values (n < 2), when D_e = 0 (every pairable
/// value is the same, so there is no variation to agree on) or when a value is not finite.
/// The result is at most 1; it goes below 0 when raters disagree more than chance would.
pub fn krippendorff_alpha_interval(units: &[Vec<f64>]) -> Option<f64> {
    if units.iter().flatten().any(|v| !v.is_finite()) {
        return None;
    }
    let pairable: Vec<&[f64]> = units
        .iter()
        .filter(|unit| unit.len() >= 2)
        .map(Vec::as_slice)
        .collect();
    let all: Vec<f64> = pairable
        .iter()
        .flat_map(|unit| unit.iter().copied())
        .collect();
    let n = all.len() as f64;
    if all.len() < 2 || all.iter().all(|&v| v == all[0]) {
        return None;
    }

    // Σ_u Σ_{i≠j in u} (v_i − v_j)² / (m_u − 1) = Σ_u 2·m_u·SS_u / (m_u − 1).
    let observed_sum: f64 = pairable
        .iter()
        .map(|unit| {
            let m = unit.len() as f64;
            2.0 * m * squared_deviations(unit) / (m - 1.0)
        })
        .sum();
    // Σ_{i≠j over all} (v_i − v_j)² = 2·n·SS.
    let expected_sum = 2.0 * n * squared_deviations(&all);

    let observed = observed_sum / n;
    let expected = expected_sum / (n * (n - 1.0));
    let alpha = 1.0 - observed / expected;
    alpha.is_finite().then_some(alpha)
}

/// Σ (v − mean)² of a non-empty slice.
fn squared_deviations(values: &[f64]) -> f64 {
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    values.iter().map(|v| (v - mean).powi(2)).sum()
}

/// Spread of one unit's ratings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Number of ratings.
    pub n: usize,
    /// Arithmetic mean of the ratings.
    pub mean: f64,
    /// Smallest rating.
    pub min: f64,
    /// Largest rating.
    pub max: f64,
    /// Population standard deviation (divides by `n`, not `n − 1`): the spread of these ratings
    /// themselves, 0 for a single rating.
    pub stdev: f64,
}

impl Spread {
    /// The spread of `values`; `None` when `values` is empty or holds a non-finite value.
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let stdev = (squared_deviations(values) / n as f64).sqrt();
        let spread = Spread {
            n,
            mean,
            min,
            max,
            stdev,
        };
        // Finite inputs can still overflow (e.g. values near f64::MAX).
        (mean.is_finite() && stdev.is_finite()).then_some(spread)
    }

    /// `max − min`.
    pub fn range(&self) -> f64 {
        self.max - self.min
    }
}

/// Agreement of a jury on one metric over an execution.
///
/// Only pairable units (those with at least 2 ratings) count: `units`, `ratings`, `mean_stdev`
/// and `max_range` describe those units, as alpha does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct JuryAgreement {
    /// Krippendorff's alpha (interval); `None` when it is undefined (no variation at all).
    pub alpha: Option<f64>,
    /// The reading of `alpha` against Krippendorff's thresholds.
    pub level: AgreementLevel,
    /// Number of pairable units (rated at least twice).
    pub units: usize,
    /// Number of ratings in those units.
    pub ratings: usize,
    /// Mean over those units of the population standard deviation of their ratings.
    pub mean_stdev: f64,
    /// Largest `max − min` of one unit's ratings.
    pub max_range: f64,
}

/// The agreement of a jury over `units` (see [`krippendorff_alpha_interval`] for the layout).
///
/// `None` when no unit has at least 2 ratings, or when a rating is not finite.
pub fn jury_agreement(units: &[Vec<f64>]) -> Option<JuryAgreement> {
    if units.iter().flatten().any(|v| !v.is_finite()) {
        return None;
    }
    let spreads: Vec<Spread> = units
        .iter()
        .filter(|unit| unit.len() >= 2)
        .map(|unit| Spread::of(unit))
        .collect::<Option<_>>()?;
    if spreads.is_empty() {
        return None;
    }
    let alpha = krippendorff_alpha_interval(units);
    Some(JuryAgreement {
        alpha,
        level: level(alpha),
        units: spreads.len(),
        ratings: spreads.iter().map(|s| s.n).sum(),
        mean_stdev: spreads.iter().map(|s| s.stdev).sum::<f64>() / spreads.len() as f64,
        max_range: spreads.iter().map(Spread::range).fold(0.0, f64::max),
    })
}

/// Krippendorff's guidance: α ≥ 0.800 reliable, 0.667 ≤ α < 0.800 tentative (acceptable for
/// tentative conclusions only), below that low; unknown when α is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgreementLevel {
    /// α ≥ 0.800.
    Reliable,
    /// 0.667 ≤ α < 0.800.
    Tentative,
    /// α < 0.667.
    Low,
    /// α undefined.
    Unknown,
}

impl AgreementLevel {
    /// The snake_case name, as serialised: "reliable", "tentative", "low" or "unknown".
    pub fn label(&self) -> &'static str {
        match self {
            AgreementLevel::Reliable => "reliable",
            AgreementLevel::Tentative => "tentative",
            AgreementLevel::Low => "low",
            AgreementLevel::Unknown => "unknown",
        }
    }

    /// Whether the jury agrees too little to be relied on (`Low` only; `Unknown` is not low).
    pub fn is_low(&self) -> bool {
        matches!(self, AgreementLevel::Low)
    }
}

/// Reads `alpha` against Krippendorff's thresholds (a NaN counts as unknown).
pub fn level(alpha: Option<f64>) -> AgreementLevel {
    match alpha {
        Some(a) if a >= 0.800 => AgreementLevel::Reliable,
        Some(a) if a >= 0.667 => AgreementLevel::Tentative,
        Some(a) if a < 0.667 => AgreementLevel::Low,
        _ => AgreementLevel::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the worked example
    /// with missing values ("."): one row per observer A–D, units 1–12, turned into one list of
    /// values per unit.
    fn krippendorff_2011_example() -> Vec<Vec<f64>> {
        let observers = [
            "1 2 3 3 2 1 4 1 2 . . .",
            "1 2 3 3 2 2 4 1 2 5 . 3",
            ". 3 3 3 2 3 4 2 2 5 1 .",
            "1 2 3 3 2 4 4 1 2 5 1 .",
        ];
        let mut units = vec![Vec::new(); 12];
        for row in observers {
            for (unit, value) in units.iter_mut().zip(row.split(' ')) {
                if value != "." {
                    unit.push(value.parse().expect("a number"));
                }
            }
        }
        units
    }

    #[test]
    fn alpha_matches_krippendorff_2011_interval_example() {
        let alpha = krippendorff_alpha_interval(&krippendorff_2011_example()).expect("defined");
        assert_eq!((alpha * 1000.0).round() / 1000.0, 0.849, "alpha = {alpha}");
    }

    #[test]
    fn alpha_ignores_the_unpairable_unit_of_the_example() {
        let mut units = krippendorff_2011_example();
        let with = krippendorff_alpha_interval(&units).expect("defined");
        units.pop(); // unit 12: one value only
        let without = krippendorff_alpha_interval(&units).expect("defined");
        assert_eq!(with, without);
    }

    #[test]
    fn alpha_of_perfect_agreement_is_one() {
        let units = vec![
            vec![10.0, 10.0, 10.0],
            vec![50.0, 50.0],
            vec![90.0, 90.0, 90.0],
        ];
        assert_eq!(krippendorff_alpha_interval(&units), Some(1.0));
    }

    #[test]
    fn alpha_by_hand() {
        // Units [1, 2] and [3, 4]: n = 4.
        // D_o = (1/4)·(2·1²/1 + 2·1²/1) = 1.
        // D_e: pairs i<j of {1,2,3,4} give 1+4+9+1+4+1 = 20, so Σ_{i≠j} = 40 and
        // D_e = 40 / (4·3) = 10/3. α = 1 − 1/(10/3) = 0.7.
        let alpha =
            krippendorff_alpha_interval(&[vec![1.0, 2.0], vec![3.0, 4.0]]).expect("defined");
        assert!((alpha - 0.7).abs() < 1e-12, "alpha = {alpha}");
    }

    #[test]
    fn alpha_of_systematic_disagreement_is_negative() {
        // Units [1, 2] and [2, 1]: D_o = (2 + 2)/4 = 1; pairs i<j of {1,2,2,1} give
        // 1+1+0+0+1+1 = 4, Σ_{i≠j} = 8, D_e = 8/12 = 2/3; α = 1 − 3/2 = −0.5.
        let alpha =
            krippendorff_alpha_interval(&[vec![1.0, 2.0], vec![2.0, 1.0]]).expect("defined");
        assert!((alpha + 0.5).abs() < 1e-12, "alpha = {alpha}");
    }

    #[test]
    fn alpha_is_undefined_without_pairable_values_or_variation() {
        assert_eq!(krippendorff_alpha_interval(&[]), None);
        assert_eq!(krippendorff_alpha_interval(&[vec![1.0], vec![2.0]]), None);
        assert_eq!(
            krippendorff_alpha_interval(&[vec![7.0, 7.0], vec![7.0, 7.0, 7.0]]),
            None
        );
        // The only variation is in an unpairable unit.
        assert_eq!(
            krippendorff_alpha_interval(&[vec![7.0, 7.0], vec![3.0]]),
            None
        );
    }

    #[test]
    fn alpha_rejects_non_finite_values() {
        assert_eq!(
            krippendorff_alpha_interval(&[vec![1.0, f64::NAN], vec![3.0, 4.0]]),
            None
        );
        assert_eq!(
            krippendorff_alpha_interval(&[vec![1.0, 2.0], vec![f64::INFINITY]]),
            None
        );
    }

    #[test]
    fn spread_of_a_textbook_sample() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squared deviations 9+1+1+1+0+0+4+16 = 32, 32/8 = 4.
        let s = Spread::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).expect("non-empty");
        assert_eq!(
            s,
            Spread {
                n: 8,
                mean: 5.0,
                min: 2.0,
                max: 9.0,
                stdev: 2.0
            }
        );
        assert_eq!(s.range(), 7.0);
    }

    #[test]
    fn spread_of_nothing_or_non_finite_is_none() {
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(Spread::of(&[1.0, f64::NAN]), None);
        assert_eq!(Spread::of(&[f64::NEG_INFINITY]), None);
    }

    #[test]
    fn jury_agreement_summarises_pairable_units() {
        // Pairable units [1, 2] and [3, 4] (alpha 0.7 by hand above); [5] is ignored.
        // Each pairable unit has population stdev 0.5 and range 1.
        let agreement =
            jury_agreement(&[vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0]]).expect("pairable");
        assert!((agreement.alpha.expect("defined") - 0.7).abs() < 1e-12);
        assert_eq!(agreement.level, AgreementLevel::Tentative);
        assert_eq!(agreement.units, 2);
        assert_eq!(agreement.ratings, 4);
        assert_eq!(agreement.mean_stdev, 0.5);
        assert_eq!(agreement.max_range, 1.0);
    }

    #[test]
    fn jury_agreement_of_identical_ratings_has_unknown_alpha() {
        let agreement = jury_agreement(&[vec![80.0, 80.0], vec![80.0, 80.0]]).expect("pairable");
        assert_eq!(agreement.alpha, None);
        assert_eq!(agreement.level, AgreementLevel::Unknown);
        assert_eq!(agreement.mean_stdev, 0.0);
        assert_eq!(agreement.max_range, 0.0);
    }

    #[test]
    fn jury_agreement_needs_a_pairable_unit_and_finite_values() {
        assert_eq!(jury_agreement(&[]), None);
        assert_eq!(jury_agreement(&[vec![1.0], vec![2.0]]), None);
        assert_eq!(jury_agreement(&[vec![1.0, 2.0], vec![f64::NAN]]), None);
    }

    #[test]
    fn level_follows_krippendorff_thresholds() {
        assert_eq!(level(Some(1.0)), AgreementLevel::Reliable);
        assert_eq!(level(Some(0.800)), AgreementLevel::Reliable);
        assert_eq!(level(Some(0.799)), AgreementLevel::Tentative);
        assert_eq!(level(Some(0.667)), AgreementLevel::Tentative);
        assert_eq!(level(Some(0.666)), AgreementLevel::Low);
        assert_eq!(level(Some(-0.5)), AgreementLevel::Low);
        assert_eq!(level(None), AgreementLevel::Unknown);
        assert_eq!(level(Some(f64::NAN)), AgreementLevel::Unknown);
    }

    #[test]
    fn level_labels_and_lowness() {
        let all = [
            AgreementLevel::Reliable,
            AgreementLevel::Tentative,
            AgreementLevel::Low,
            AgreementLevel::Unknown,
        ];
        let labels: Vec<&str> = all.iter().map(AgreementLevel::label).collect();
        assert_eq!(labels, ["reliable", "tentative", "low", "unknown"]);
        let low: Vec<bool> = all.iter().map(AgreementLevel::is_low).collect();
        assert_eq!(low, [false, false, true, false]);
    }

    /// Up to 8 units of up to 5 ratings on the 0–100 scale (whole numbers, as judges give).
    fn units_strategy() -> impl Strategy<Value = Vec<Vec<f64>>> {
        prop::collection::vec(
            prop::collection::vec((0u8..=100).prop_map(f64::from), 0..5),
            0..8,
        )
    }

    fn same_alpha(a: Option<f64>, b: Option<f64>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) => (a - b).abs() < 1e-9,
            (None, None) => true,
            _ => false,
        }
    }

    proptest! {
        #[test]
        fn alpha_ignores_the_order_of_raters(units in units_strategy(), seed in any::<u64>()) {
            let mut rng = fastrand::Rng::with_seed(seed);
            let mut shuffled = units.clone();
            for unit in &mut shuffled {
                rng.shuffle(unit);
            }
            let (a, b) = (krippendorff_alpha_interval(&units), krippendorff_alpha_interval(&shuffled));
            prop_assert!(same_alpha(a, b), "{a:?} vs {b:?}");
        }

        #[test]
        fn alpha_ignores_the_order_of_units(units in units_strategy(), seed in any::<u64>()) {
            let mut shuffled = units.clone();
            fastrand::Rng::with_seed(seed).shuffle(&mut shuffled);
            let (a, b) = (krippendorff_alpha_interval(&units), krippendorff_alpha_interval(&shuffled));
            prop_assert!(same_alpha(a, b), "{a:?} vs {b:?}");
        }

        #[test]
        fn alpha_is_at_most_one(units in units_strategy()) {
            if let Some(alpha) = krippendorff_alpha_interval(&units) {
                prop_assert!(alpha.is_finite() && alpha <= 1.0, "alpha = {alpha}");
            }
        }
    }
}
