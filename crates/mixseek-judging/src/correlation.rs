//! Agreement of a judge with human labels (or with another judge): Pearson's r, Spearman's rho,
//! Kendall's tau-b, mean absolute error, and the average ranks Spearman is built on.
//!
//! Every coefficient takes two paired slices (`x[i]` and `y[i]` rate the same item) and returns
//! `None` rather than a NaN: for fewer than 2 pairs, slices of different lengths, a variable that
//! does not vary, or a non-finite value.

use std::cmp::Ordering;

/// Average (fractional) ranks, 1-based; ties get the mean of their positions (as
/// `scipy.stats.rankdata(method="average")`): `[10, 20, 10, 30]` ranks `[1.5, 3, 1.5, 4]`.
///
/// Meant for finite values; a NaN is ranked by [`f64::total_cmp`] and tied with nothing.
pub fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));

    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        // order[start..end] is a run of equal values, at 0-based positions start..end.
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Mean of the 1-based positions start+1 ..= end.
        let rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        start = end;
    }
    ranks
}

/// Pearson's r; `None` for fewer than 2 pairs, different lengths, zero variance or non-finite
/// values.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    if !comparable(x, y) {
        return None;
    }
    let n = x.len() as f64;
    let mean_x = x.iter().sum::<f64>() / n;
    let mean_y = y.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        let (dx, dy) = (a - mean_x, b - mean_y);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    let r = sxy / (sxx * syy).sqrt();
    // Rounding can push a perfect correlation a hair past ±1; overflow gives a non-finite r.
    r.is_finite().then(|| r.clamp(-1.0, 1.0))
}

/// Spearman's rho: Pearson's r of the [average ranks](average_ranks), so ties are handled.
/// Same `None` rules as [`pearson`].
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if !comparable(x, y) {
        return None;
    }
    pearson(&average_ranks(x), &average_ranks(y))
}

/// Kendall's tau-b, corrected for ties in either variable:
/// τ_b = (concordant − discordant) / √((n₀ − n₁)(n₀ − n₂)), with n₀ = n(n−1)/2 pairs, n₁ of
/// them tied in `x` and n₂ tied in `y` (scipy's default `kendalltau`). Same `None` rules as
/// [`pearson`].
///
/// Compares every pair, O(n²): fine for the few thousand items a calibration set holds.
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Option<f64> {
    if !comparable(x, y) {
        return None;
    }
    let sign = |ordering: Option<Ordering>| match ordering {
        Some(Ordering::Less) => -1_i64,
        Some(Ordering::Greater) => 1,
        _ => 0,
    };
    // Σ sign(dx)·sign(dy) is concordant − discordant; pairs tied in x or y add nothing.
    let (mut score, mut untied_x, mut untied_y) = (0_i64, 0_i64, 0_i64);
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            let sx = sign(x[i].partial_cmp(&x[j]));
            let sy = sign(y[i].partial_cmp(&y[j]));
            score += sx * sy;
            untied_x += sx.abs();
            untied_y += sy.abs();
        }
    }
    let tau = score as f64 / ((untied_x as f64) * (untied_y as f64)).sqrt();
    tau.is_finite().then(|| tau.clamp(-1.0, 1.0))
}

/// Mean absolute error, mean of `|x[i] − y[i]|`; `None` for empty or different lengths or
/// non-finite values.
pub fn mean_absolute_error(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.is_empty() || x.len() != y.len() || !all_finite(x) || !all_finite(y) {
        return None;
    }
    let mae = x.iter().zip(y).map(|(a, b)| (a - b).abs()).sum::<f64>() / x.len() as f64;
    mae.is_finite().then_some(mae)
}

/// The shared preconditions of the coefficients: same length, at least 2 pairs, finite values,
/// and each variable takes at least two distinct values (otherwise it has no variance).
fn comparable(x: &[f64], y: &[f64]) -> bool {
    x.len() == y.len() && x.len() >= 2 && all_finite(x) && all_finite(y) && varies(x) && varies(y)
}

fn all_finite(values: &[f64]) -> bool {
    values.iter().all(|v| v.is_finite())
}

/// Whether the values are not all equal. Checked exactly rather than through a computed
/// variance, which rounding can leave a hair above zero for a constant input.
fn varies(values: &[f64]) -> bool {
    values.iter().any(|&v| v != values[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const X: [f64; 5] = [1.0, 2.0, 3.0, 4.0, 5.0];
    const Y: [f64; 5] = [5.0, 6.0, 7.0, 8.0, 7.0];

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn average_ranks_like_scipy_rankdata() {
        assert_eq!(
            average_ranks(&[10.0, 20.0, 10.0, 30.0]),
            [1.5, 3.0, 1.5, 4.0]
        );
        // scipy.stats.rankdata([0, 2, 3, 2]) = [1, 2.5, 4, 2.5].
        assert_eq!(average_ranks(&[0.0, 2.0, 3.0, 2.0]), [1.0, 2.5, 4.0, 2.5]);
        // Three-way tie at positions 1..=3 -> 2 each.
        assert_eq!(average_ranks(&[7.0, 7.0, 7.0, -1.0]), [3.0, 3.0, 3.0, 1.0]);
        assert_eq!(average_ranks(&[]), Vec::<f64>::new());
    }

    #[test]
    fn scipy_reference_values() {
        // scipy.stats.pearsonr / spearmanr / kendalltau on X, Y.
        let r = pearson(&X, &Y).expect("defined");
        let rho = spearman(&X, &Y).expect("defined");
        let tau = kendall_tau_b(&X, &Y).expect("defined");
        assert!(close(r, 0.8320502943378437), "r = {r}");
        assert!(close(rho, 0.8207826816681233), "rho = {rho}");
        assert!(close(tau, 0.7378647873726218), "tau = {tau}");
    }

    #[test]
    fn small_example_by_hand() {
        // x = [1, 2, 3], y = [1, 3, 2]: deviations (−1, 0, 1) and (−1, 1, 0), so
        // sxy = 1, sxx = syy = 2 and r = 1/2; the values are their own ranks, so rho = 1/2.
        // Pairs (1,2) and (1,3) concordant, (2,3) discordant: tau = (2 − 1)/3.
        let (x, y) = ([1.0, 2.0, 3.0], [1.0, 3.0, 2.0]);
        assert!(close(pearson(&x, &y).expect("defined"), 0.5));
        assert!(close(spearman(&x, &y).expect("defined"), 0.5));
        assert!(close(kendall_tau_b(&x, &y).expect("defined"), 1.0 / 3.0));
    }

    #[test]
    fn kendall_tau_b_with_ties_in_both_variables() {
        // x = [1, 1, 2, 3], y = [1, 2, 2, 3]; 6 pairs: (1,2) tied in x, (2,3) tied in y, the
        // other 4 concordant. tau_b = 4 / √((6 − 1)(6 − 1)) = 0.8 (scipy agrees).
        let tau = kendall_tau_b(&[1.0, 1.0, 2.0, 3.0], &[1.0, 2.0, 2.0, 3.0]).expect("defined");
        assert!(close(tau, 0.8), "tau = {tau}");
    }

    #[test]
    fn perfect_and_reversed_monotone_relations() {
        let y_up = [1.0, 4.0, 9.0, 16.0, 25.0]; // monotone but not linear in X
        let y_down = [50.0, 40.0, 30.0, 20.0, 10.0];
        assert_eq!(spearman(&X, &y_up), Some(1.0));
        assert_eq!(kendall_tau_b(&X, &y_up), Some(1.0));
        assert!(pearson(&X, &y_up).expect("defined") < 1.0);
        assert_eq!(pearson(&X, &y_down), Some(-1.0));
        assert_eq!(spearman(&X, &y_down), Some(-1.0));
        assert_eq!(kendall_tau_b(&X, &y_down), Some(-1.0));
    }

    #[test]
    fn undefined_cases_are_none() {
        type Coefficient = fn(&[f64], &[f64]) -> Option<f64>;
        let coefficients: [Coefficient; 3] = [pearson, spearman, kendall_tau_b];
        for f in coefficients {
            assert_eq!(f(&[1.0], &[2.0]), None, "one pair");
            assert_eq!(f(&[], &[]), None, "no pairs");
            assert_eq!(f(&[1.0, 2.0, 3.0], &[1.0, 2.0]), None, "lengths differ");
            assert_eq!(f(&[1.0, 2.0, 3.0], &[4.0, 4.0, 4.0]), None, "y constant");
            assert_eq!(f(&[0.1, 0.1, 0.1], &[1.0, 2.0, 3.0]), None, "x constant");
            assert_eq!(f(&[1.0, f64::NAN, 3.0], &[1.0, 2.0, 3.0]), None, "NaN");
            assert_eq!(
                f(&[1.0, 2.0, 3.0], &[1.0, f64::INFINITY, 3.0]),
                None,
                "infinity"
            );
        }
    }

    #[test]
    fn mean_absolute_error_by_hand() {
        // |1−5| + |2−6| + |3−7| + |4−8| + |5−7| = 4+4+4+4+2 = 18, /5 = 3.6.
        assert!(close(mean_absolute_error(&X, &Y).expect("defined"), 3.6));
        assert_eq!(mean_absolute_error(&[42.0], &[40.0]), Some(2.0));
        assert_eq!(mean_absolute_error(&[], &[]), None);
        assert_eq!(mean_absolute_error(&[1.0, 2.0], &[1.0]), None);
        assert_eq!(mean_absolute_error(&[1.0], &[f64::NAN]), None);
    }

    /// Paired 0–100 scores (whole numbers, so ties are common), 0 to 30 pairs.
    fn pairs() -> impl Strategy<Value = (Vec<f64>, Vec<f64>)> {
        prop::collection::vec(((0u8..=100), (0u8..=100)), 0..30).prop_map(|pairs| {
            pairs
                .into_iter()
                .map(|(a, b)| (f64::from(a), f64::from(b)))
                .unzip()
        })
    }

    proptest! {
        #[test]
        fn coefficients_are_symmetric((x, y) in pairs()) {
            prop_assert_eq!(pearson(&x, &y), pearson(&y, &x));
            prop_assert_eq!(spearman(&x, &y), spearman(&y, &x));
            prop_assert_eq!(kendall_tau_b(&x, &y), kendall_tau_b(&y, &x));
            prop_assert_eq!(mean_absolute_error(&x, &y), mean_absolute_error(&y, &x));
        }

        #[test]
        fn coefficients_are_bounded((x, y) in pairs()) {
            for value in [pearson(&x, &y), spearman(&x, &y), kendall_tau_b(&x, &y)].into_iter().flatten() {
                prop_assert!((-1.0..=1.0).contains(&value), "{value}");
            }
        }

        #[test]
        fn correlation_with_itself_is_one((x, _) in pairs()) {
            // Defined exactly when x varies (at least two distinct values).
            if let Some(r) = pearson(&x, &x) {
                prop_assert!(close(r, 1.0), "r = {r}");
                prop_assert!(close(spearman(&x, &x).expect("defined"), 1.0));
                prop_assert_eq!(kendall_tau_b(&x, &x), Some(1.0));
            }
        }
    }
}
