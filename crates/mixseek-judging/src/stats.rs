//! Statistics for experiment reports: the mean of a sample with a percentile-bootstrap
//! confidence interval, and the paired comparison of a candidate with a baseline over the same
//! units (tasks): the mean difference with its interval, and wins, ties and losses.
//!
//! Every function is pure and deterministic given its seed (`fastrand::Rng::with_seed`).
//! Non-finite values (NaN, ±∞) are ignored: a failed or missing score must not poison a mean,
//! and [`Interval::n`] says how many values were used. In [`paired`] a pair is ignored when
//! either side is non-finite.
//!
//! The bootstrap draws `n` values with replacement `resamples` times and takes the mean of
//! each draw; the bounds are the `(1 − c)/2` and `(1 + c)/2` quantiles of those means, with
//! linear interpolation between order statistics (position `q·(resamples − 1)`), as in
//! [`crate::bradley_terry`]. One buffer of `resamples` means is the only allocation of the
//! resampling, so 2,000 resamples of 10,000 values take a few tens of milliseconds.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// Resamples a report uses unless told otherwise.
pub const DEFAULT_RESAMPLES: usize = 2000;

/// A point estimate with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The point estimate: the mean of the finite values.
    pub estimate: f64,
    /// Lower bound of the interval (never above `estimate`).
    pub low: f64,
    /// Upper bound of the interval (never below `estimate`).
    pub high: f64,
    /// How many finite values the estimate is made of.
    pub n: usize,
}

/// A candidate compared with a baseline over the same units.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// Mean of `candidate − baseline` over the units, with its interval.
    pub difference: Interval,
    /// Units where the candidate is higher by more than the tie tolerance.
    pub wins: usize,
    /// Units where the two differ by at most the tie tolerance.
    pub ties: usize,
    /// Units where the candidate is lower by more than the tie tolerance.
    pub losses: usize,
}

/// The mean of `values` with a percentile-bootstrap interval of coverage `confidence`.
///
/// Non-finite values are ignored. `None` when no finite value is left or `confidence` is not
/// strictly between 0 and 1. With one value, or with 0 resamples, the interval is the estimate
/// itself (`low == high == estimate`). The interval is widened, if need be, to contain the
/// estimate: the percentile method does not guarantee it (a tiny confidence or a very skewed
/// sample), and a report should never show a mean outside its own interval.
pub fn mean_interval(
    values: &[f64],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<Interval> {
    if !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let finite: Cow<'_, [f64]> = if values.iter().all(|v| v.is_finite()) {
        Cow::Borrowed(values)
    } else {
        Cow::Owned(values.iter().copied().filter(|v| v.is_finite()).collect())
    };
    let n = finite.len();
    if n == 0 {
        return None;
    }
    let estimate = mean(&finite);
    if n == 1 || resamples == 0 {
        return Some(Interval {
            estimate,
            low: estimate,
            high: estimate,
            n,
        });
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut means = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let mut sum = 0.0;
        for _ in 0..n {
            sum += finite[rng.usize(..n)];
        }
        means.push(sum / n as f64);
    }
    means.sort_unstable_by(f64::total_cmp);
    let low = quantile(&means, (1.0 - confidence) / 2.0);
    let high = quantile(&means, (1.0 + confidence) / 2.0);
    Some(Interval {
        estimate,
        low: low.min(estimate),
        high: high.max(estimate),
        n,
    })
}

/// Compares a candidate with a baseline unit by unit: `pairs` are `(candidate, baseline)`, one
/// per unit (task).
///
/// The difference is the mean of `candidate − baseline` with a percentile-bootstrap interval
/// over the units (see [`mean_interval`]); a unit is a tie when `|candidate − baseline| <=
/// tie_tolerance` (a negative or NaN tolerance counts as 0: only equal scores tie), a win when
/// the candidate is higher by more, a loss when it is lower by more. Pairs with a non-finite
/// side are ignored. `None` when no pair is left or `confidence` is not strictly between 0
/// and 1.
pub fn paired(
    pairs: &[(f64, f64)],
    tie_tolerance: f64,
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<Paired> {
    let tolerance = tie_tolerance.max(0.0);
    let differences: Vec<f64> = pairs
        .iter()
        .filter(|(candidate, baseline)| candidate.is_finite() && baseline.is_finite())
        .map(|(candidate, baseline)| candidate - baseline)
        .collect();
    let difference = mean_interval(&differences, confidence, resamples, seed)?;
    let (mut wins, mut ties, mut losses) = (0, 0, 0);
    for d in &differences {
        if d.abs() <= tolerance {
            ties += 1;
        } else if *d > 0.0 {
            wins += 1;
        } else {
            losses += 1;
        }
    }
    Some(Paired {
        difference,
        wins,
        ties,
        losses,
    })
}

/// The mean of non-empty values.
fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The `q` quantile of sorted, non-empty values, interpolating linearly between order
/// statistics (position `q·(len − 1)`).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let position = q * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = (position.ceil() as usize).min(sorted.len() - 1);
    sorted[below] + (position - below as f64) * (sorted[above] - sorted[below])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn one_to_hundred() -> Vec<f64> {
        (1..=100).map(f64::from).collect()
    }

    #[test]
    fn empty_and_all_non_finite_give_none() {
        assert_eq!(mean_interval(&[], 0.95, 100, 0), None);
        assert_eq!(
            mean_interval(&[f64::NAN, f64::INFINITY], 0.95, 100, 0),
            None
        );
        assert_eq!(paired(&[], 0.0, 0.95, 100, 0), None);
        assert_eq!(paired(&[(f64::NAN, 1.0)], 0.0, 0.95, 100, 0), None);
    }

    #[test]
    fn invalid_confidence_gives_none() {
        for confidence in [0.0, 1.0, -0.5, 1.5, f64::NAN] {
            assert_eq!(mean_interval(&[1.0, 2.0], confidence, 100, 0), None);
        }
    }

    #[test]
    fn constant_sample_has_zero_width() {
        let values = vec![0.1; 1000];
        let i = mean_interval(&values, 0.95, 500, 7).unwrap();
        assert_eq!(i.low, i.estimate);
        assert_eq!(i.high, i.estimate);
        assert_eq!(i.n, 1000);
    }

    #[test]
    fn single_value_and_no_resamples_are_the_estimate() {
        let i = mean_interval(&[3.5], 0.95, 100, 0).unwrap();
        assert_eq!((i.estimate, i.low, i.high, i.n), (3.5, 3.5, 3.5, 1));
        let i = mean_interval(&[1.0, 2.0, 6.0], 0.95, 0, 0).unwrap();
        assert_eq!((i.estimate, i.low, i.high, i.n), (3.0, 3.0, 3.0, 3));
    }

    #[test]
    fn non_finite_values_are_ignored() {
        let i = mean_interval(&[1.0, f64::NAN, 3.0, f64::NEG_INFINITY], 0.95, 200, 1).unwrap();
        assert_eq!(i.n, 2);
        assert_eq!(i.estimate, 2.0);
        assert!(i.low >= 1.0 && i.high <= 3.0, "{i:?}");
    }

    #[test]
    fn known_case_one_to_hundred() {
        // Mean 50.5; standard error 28.87/√100 ≈ 2.89, so a 95% interval ≈ 44.8..56.2.
        let i = mean_interval(&one_to_hundred(), 0.95, DEFAULT_RESAMPLES, 42).unwrap();
        assert_eq!(i.estimate, 50.5);
        assert_eq!(i.n, 100);
        assert!((43.5..46.0).contains(&i.low), "{i:?}");
        assert!((55.0..57.5).contains(&i.high), "{i:?}");
        assert!(i.low < i.estimate && i.estimate < i.high);
    }

    #[test]
    fn wider_confidence_gives_wider_interval() {
        let values = one_to_hundred();
        let narrow = mean_interval(&values, 0.5, 1000, 3).unwrap();
        let wide = mean_interval(&values, 0.99, 1000, 3).unwrap();
        assert!(wide.low < narrow.low && narrow.high < wide.high);
    }

    #[test]
    fn same_seed_same_interval_other_seed_differs() {
        let values: Vec<f64> = (0..50).map(|i| f64::from(i * i % 17)).collect();
        let a = mean_interval(&values, 0.95, 500, 9).unwrap();
        let b = mean_interval(&values, 0.95, 500, 9).unwrap();
        let c = mean_interval(&values, 0.95, 500, 10).unwrap();
        assert_eq!(a, b);
        assert_ne!((a.low, a.high), (c.low, c.high));
    }

    #[test]
    fn quantile_interpolates() {
        let sorted = [1.0, 2.0, 4.0];
        assert_eq!(quantile(&sorted, 0.0), 1.0);
        assert_eq!(quantile(&sorted, 0.25), 1.5);
        assert_eq!(quantile(&sorted, 0.75), 3.0);
        assert_eq!(quantile(&sorted, 1.0), 4.0);
        assert_eq!(quantile(&[5.0], 0.5), 5.0);
    }

    #[test]
    fn paired_all_candidate_higher() {
        let pairs: Vec<(f64, f64)> = (0..30)
            .map(|i| (f64::from(i) + 1.0 + f64::from(i % 3), f64::from(i)))
            .collect();
        let p = paired(&pairs, 0.0, 0.95, 1000, 5).unwrap();
        assert_eq!((p.wins, p.ties, p.losses), (30, 0, 0));
        assert_eq!(p.difference.n, 30);
        assert!(p.difference.low > 0.0, "{p:?}");
        assert_eq!(p.difference.estimate, 2.0);
    }

    #[test]
    fn paired_ties_with_tolerance() {
        // Differences 0, 0.25, -0.25 (exact in binary), 1, -1.
        let pairs = [(1.0, 1.0), (1.25, 1.0), (0.75, 1.0), (2.0, 1.0), (0.0, 1.0)];
        let p = paired(&pairs, 0.25, 0.95, 200, 0).unwrap();
        assert_eq!((p.wins, p.ties, p.losses), (1, 3, 1));
        let exact = paired(&pairs, 0.0, 0.95, 200, 0).unwrap();
        assert_eq!((exact.wins, exact.ties, exact.losses), (2, 1, 2));
        let negative = paired(&pairs, -1.0, 0.95, 200, 0).unwrap();
        assert_eq!((negative.wins, negative.ties, negative.losses), (2, 1, 2));
        let nan = paired(&pairs, f64::NAN, 0.95, 200, 0).unwrap();
        assert_eq!((nan.wins, nan.ties, nan.losses), (2, 1, 2));
    }

    #[test]
    fn paired_ignores_pairs_with_a_non_finite_side() {
        let pairs = [
            (2.0, 1.0),
            (f64::NAN, 1.0),
            (1.0, f64::INFINITY),
            (3.0, 1.0),
        ];
        let p = paired(&pairs, 0.0, 0.95, 200, 0).unwrap();
        assert_eq!(p.difference.n, 2);
        assert_eq!(p.difference.estimate, 1.5);
        assert_eq!((p.wins, p.ties, p.losses), (2, 0, 0));
    }

    #[test]
    fn large_sample_is_fast() {
        // 2,000 resamples of 10,000 values take tens of milliseconds in the dev profile; the
        // bound is loose because test machines are shared.
        let values: Vec<f64> = (0..10_000).map(|i| f64::from(i % 97) / 97.0).collect();
        let start = std::time::Instant::now();
        let i = mean_interval(&values, 0.95, DEFAULT_RESAMPLES, 1).unwrap();
        let elapsed = start.elapsed();
        assert!(i.low <= i.estimate && i.estimate <= i.high);
        assert!(elapsed < std::time::Duration::from_secs(3), "{elapsed:?}");
    }

    proptest! {
        #[test]
        fn interval_contains_estimate(
            values in proptest::collection::vec(-1e6f64..1e6, 0..60),
            confidence in 0.01f64..0.999,
            resamples in 0usize..300,
            seed: u64,
        ) {
            match mean_interval(&values, confidence, resamples, seed) {
                None => prop_assert!(values.is_empty()),
                Some(i) => {
                    prop_assert_eq!(i.n, values.len());
                    prop_assert!(i.low <= i.estimate && i.estimate <= i.high, "{:?}", i);
                    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
                    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    // Means of draws stay within the sample's range (up to rounding).
                    let slack = 1e-9 * (1.0 + min.abs().max(max.abs()));
                    prop_assert!(i.low >= min - slack && i.high <= max + slack, "{:?}", i);
                }
            }
        }

        #[test]
        fn paired_counts_add_up(
            pairs in proptest::collection::vec((-10f64..10.0, -10f64..10.0), 1..40),
            tolerance in 0f64..2.0,
            seed: u64,
        ) {
            let p = paired(&pairs, tolerance, 0.9, 100, seed).unwrap();
            prop_assert_eq!(p.wins + p.ties + p.losses, pairs.len());
            prop_assert!(p.difference.low <= p.difference.estimate);
            prop_assert!(p.difference.estimate <= p.difference.high);
        }
    }
}
