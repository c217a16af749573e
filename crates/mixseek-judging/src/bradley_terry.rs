//! The Bradley–Terry model on an Elo-like scale: the maximum-likelihood fit of weighted pairwise
//! comparisons, percentile-bootstrap confidence intervals, and ranks that only separate
//! contestants whose intervals do not overlap (as Chatbot Arena does).
//!
//! The model: `P(i beats j) = 1 / (1 + base^((R_j − R_i) / points))`. A comparison with score
//! `s` and weight `w` counts as `s·w` wins for `a` and `(1 − s)·w` for `b` (a tie is half a win
//! each). The fit maximizes the likelihood with Newton's method on the log-strengths (a
//! backtracking line search keeps every step uphill), then converts to the scale.
//!
//! When the maximum-likelihood estimate does not exist — some contestant won or lost all of
//! their comparisons, or the contestants who played fall into groups that never met — a weak
//! prior keeps every rating finite: each contestant plays a virtual tie of weight
//! [`PRIOR_WEIGHT`] against a virtual reference player of strength 1 (log-strength 0), and the
//! fit says `regularized`. When the estimate exists, nothing is added.

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use crate::verdict::Comparison;

/// Weight of the virtual tie every contestant plays against the reference player when the
/// maximum-likelihood estimate does not exist (only then).
pub const PRIOR_WEIGHT: f64 = 0.1;

/// The most Newton iterations a fit may take before [`FitError::DidNotConverge`].
pub const MAX_ITERATIONS: usize = 200;

/// The fit has converged when the largest Newton step is below this, in natural-log strength
/// units (on the default scale, 1e-10 is about 2e-8 rating points).
pub const TOLERANCE: f64 = 1e-10;

/// How often a line search may halve the Newton step before giving up.
const MAX_HALVINGS: usize = 60;

/// Which rating is pinned to [`Scale::anchor_rating`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Anchor {
    /// The mean of all ratings is the anchor rating.
    Mean,
    /// This contestant's rating is the anchor rating.
    Contestant(usize),
}

/// The rating scale: `P(i beats j) = 1 / (1 + base^((R_j − R_i) / points))`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Scale {
    /// Rating points per factor `base` in the odds (400, finite and positive).
    pub points: f64,
    /// The odds base (10, finite and greater than 1).
    pub base: f64,
    /// The rating the anchor gets (1000, finite).
    pub anchor_rating: f64,
    /// What is anchored.
    pub anchor: Anchor,
}

impl Default for Scale {
    fn default() -> Self {
        Scale {
            points: 400.0,
            base: 10.0,
            anchor_rating: 1000.0,
            anchor: Anchor::Mean,
        }
    }
}

/// The result of one fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// One rating per contestant, on the scale.
    pub ratings: Vec<f64>,
    /// Whether the weak prior was needed (no maximum-likelihood estimate existed).
    pub regularized: bool,
    /// Newton iterations taken (0 when nobody played).
    pub iterations: usize,
}

/// Why a fit could not be made.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum FitError {
    /// There are no contestants.
    #[error("no contestants to rate")]
    NoContestants,
    /// A comparison names a contestant that does not exist.
    #[error("comparison {comparison} names a contestant outside 0..{contestants}")]
    IndexOutOfRange {
        /// Position of the comparison in the list.
        comparison: usize,
        /// Number of contestants.
        contestants: usize,
    },
    /// A comparison pits a contestant against itself.
    #[error("comparison {comparison} pits a contestant against itself")]
    SelfComparison {
        /// Position of the comparison in the list.
        comparison: usize,
    },
    /// A comparison weight is negative or not finite.
    #[error("comparison {comparison} has weight {weight}; weights must be finite and >= 0")]
    InvalidWeight {
        /// Position of the comparison in the list.
        comparison: usize,
        /// The weight given.
        weight: f64,
    },
    /// A comparison score is outside `0..=1`.
    #[error("comparison {comparison} has score {score}; scores must lie in 0..=1")]
    InvalidScore {
        /// Position of the comparison in the list.
        comparison: usize,
        /// The score given.
        score: f64,
    },
    /// The scale is unusable.
    #[error("invalid scale: {0}")]
    InvalidScale(&'static str),
    /// The anchor contestant does not exist.
    #[error("anchor contestant {anchor} is outside 0..{contestants}")]
    AnchorOutOfRange {
        /// The anchor given.
        anchor: usize,
        /// Number of contestants.
        contestants: usize,
    },
    /// The bootstrap confidence is not strictly between 0 and 1.
    #[error("confidence {0} must lie strictly between 0 and 1")]
    InvalidConfidence(f64),
    /// The information matrix could not be factorized (numerically singular).
    #[error("the fit is numerically singular")]
    Singular,
    /// The Newton iteration did not converge.
    #[error("the fit did not converge after {iterations} iterations")]
    DidNotConverge {
        /// Iterations taken.
        iterations: usize,
    },
    /// [`rate_clustered`] was given a cluster list of another length than the comparisons.
    #[error("{clusters} cluster labels for {comparisons} comparisons")]
    ClusterCount {
        /// Labels given.
        clusters: usize,
        /// Comparisons given.
        comparisons: usize,
    },
}

/// Fits the ratings of `n` contestants to the comparisons by maximum likelihood.
///
/// Contestants without comparisons (of positive weight) take no part in the fit and are given
/// the mean rating of those who played, so under [`Anchor::Mean`] they get exactly the anchor
/// rating. When the maximum-likelihood estimate does not exist the weak prior described in the
/// module documentation is added and `regularized` is set.
pub fn fit(n: usize, comparisons: &[Comparison], scale: &Scale) -> Result<Fit, FitError> {
    validate(n, comparisons, scale)?;
    fit_valid(n, comparisons, scale)
}

/// [`fit`] on input already validated.
fn fit_valid(n: usize, comparisons: &[Comparison], scale: &Scale) -> Result<Fit, FitError> {
    let (problem, active) = Problem::new(n, comparisons);
    if active.is_empty() {
        return Ok(Fit {
            ratings: vec![scale.anchor_rating; n],
            regularized: false,
            iterations: 0,
        });
    }
    let regularized = !problem.ml_exists();
    let prior = if regularized { PRIOR_WEIGHT } else { 0.0 };
    let (strengths, iterations) = problem.maximize(prior)?;
    Ok(Fit {
        ratings: to_scale(n, &active, &strengths, scale),
        regularized,
        iterations,
    })
}

/// Checks the contestant count, the scale and every comparison.
fn validate(n: usize, comparisons: &[Comparison], scale: &Scale) -> Result<(), FitError> {
    if n == 0 {
        return Err(FitError::NoContestants);
    }
    if !(scale.points.is_finite() && scale.points > 0.0) {
        return Err(FitError::InvalidScale("points must be finite and positive"));
    }
    if !(scale.base.is_finite() && scale.base > 1.0) {
        return Err(FitError::InvalidScale(
            "base must be finite and greater than 1",
        ));
    }
    if !scale.anchor_rating.is_finite() {
        return Err(FitError::InvalidScale("anchor rating must be finite"));
    }
    if let Anchor::Contestant(anchor) = scale.anchor {
        if anchor >= n {
            return Err(FitError::AnchorOutOfRange {
                anchor,
                contestants: n,
            });
        }
    }
    for (index, c) in comparisons.iter().enumerate() {
        validate_comparison(index, c, n)?;
    }
    Ok(())
}

/// Checks one comparison.
fn validate_comparison(comparison: usize, c: &Comparison, n: usize) -> Result<(), FitError> {
    if c.a >= n || c.b >= n {
        return Err(FitError::IndexOutOfRange {
            comparison,
            contestants: n,
        });
    }
    if c.a == c.b {
        return Err(FitError::SelfComparison { comparison });
    }
    if !(c.weight.is_finite() && c.weight >= 0.0) {
        return Err(FitError::InvalidWeight {
            comparison,
            weight: c.weight,
        });
    }
    if !(0.0..=1.0).contains(&c.score_a) {
        return Err(FitError::InvalidScore {
            comparison,
            score: c.score_a,
        });
    }
    Ok(())
}

/// Converts natural-log strengths of the active contestants to the scale: idle contestants
/// get the mean, then everything is shifted to the anchor.
fn to_scale(n: usize, active: &[usize], strengths: &[f64], scale: &Scale) -> Vec<f64> {
    let factor = scale.points / scale.base.ln();
    let active_ratings: Vec<f64> = strengths.iter().map(|s| factor * s).collect();
    let mean = active_ratings.iter().sum::<f64>() / active_ratings.len() as f64;
    let mut ratings = vec![mean; n];
    for (&i, &rating) in active.iter().zip(&active_ratings) {
        ratings[i] = rating;
    }
    let reference = match scale.anchor {
        Anchor::Mean => ratings.iter().sum::<f64>() / n as f64,
        Anchor::Contestant(k) => ratings[k],
    };
    let shift = scale.anchor_rating - reference;
    for rating in &mut ratings {
        *rating += shift;
    }
    if let Anchor::Contestant(k) = scale.anchor {
        ratings[k] = scale.anchor_rating;
    }
    ratings
}

/// The likelihood to maximize, over the contestants who played: `wins[i][j]` is the weighted
/// number of wins of `i` over `j` (ties counting half each way).
struct Problem {
    wins: Vec<Vec<f64>>,
}

impl Problem {
    /// Tallies the comparisons; returns the problem and the original index of each of its
    /// contestants (those with comparisons of positive weight).
    fn new(n: usize, comparisons: &[Comparison]) -> (Problem, Vec<usize>) {
        let mut wins = vec![vec![0.0; n]; n];
        for c in comparisons {
            wins[c.a][c.b] += c.score_a * c.weight;
            wins[c.b][c.a] += (1.0 - c.score_a) * c.weight;
        }
        let active: Vec<usize> = (0..n)
            .filter(|&i| (0..n).any(|j| wins[i][j] + wins[j][i] > 0.0))
            .collect();
        let wins = active
            .iter()
            .map(|&i| active.iter().map(|&j| wins[i][j]).collect())
            .collect();
        (Problem { wins }, active)
    }

    fn len(&self) -> usize {
        self.wins.len()
    }

    /// Whether the maximum-likelihood estimate exists: every contestant can be reached from
    /// every other along "beat" edges (the win graph is strongly connected).
    fn ml_exists(&self) -> bool {
        reaches_all(self.len(), |i, j| self.wins[i][j] > 0.0)
            && reaches_all(self.len(), |i, j| self.wins[j][i] > 0.0)
    }

    /// The log-likelihood of natural-log strengths `x`, with the virtual ties of weight
    /// `prior` against a reference of strength 0.
    fn log_likelihood(&self, x: &[f64], prior: f64) -> f64 {
        let mut ll = 0.0;
        for (i, row) in self.wins.iter().enumerate() {
            for (j, &w) in row.iter().enumerate() {
                if w > 0.0 {
                    ll += w * log_sigmoid(x[i] - x[j]);
                }
            }
        }
        let prior_ll: f64 = x
            .iter()
            .map(|&xi| 0.5 * prior * (log_sigmoid(xi) + log_sigmoid(-xi)))
            .sum();
        ll + prior_ll
    }

    /// The gradient of the log-likelihood and the information matrix (its negated Hessian).
    /// Without a prior the first strength is pinned to 0 (its row and column become the
    /// identity), which makes the matrix positive definite when the estimate exists.
    fn gradient_and_information(&self, x: &[f64], prior: f64) -> (Vec<f64>, Vec<Vec<f64>>) {
        let m = self.len();
        let mut gradient = vec![0.0; m];
        let mut info = vec![vec![0.0; m]; m];
        for i in 0..m {
            for j in i + 1..m {
                let games = self.wins[i][j] + self.wins[j][i];
                if games <= 0.0 {
                    continue;
                }
                let p = sigmoid(x[i] - x[j]);
                let surplus = self.wins[i][j] - games * p;
                gradient[i] += surplus;
                gradient[j] -= surplus;
                let v = games * p * (1.0 - p);
                info[i][i] += v;
                info[j][j] += v;
                info[i][j] -= v;
                info[j][i] -= v;
            }
        }
        if prior > 0.0 {
            for i in 0..m {
                let p = sigmoid(x[i]);
                gradient[i] += prior * (0.5 - p);
                info[i][i] += prior * p * (1.0 - p);
            }
        } else {
            gradient[0] = 0.0;
            for row in &mut info {
                row[0] = 0.0;
            }
            info[0] = vec![0.0; m];
            info[0][0] = 1.0;
        }
        (gradient, info)
    }

    /// Newton's method with a backtracking line search from all-zero strengths. Returns the
    /// natural-log strengths and the iterations taken.
    fn maximize(&self, prior: f64) -> Result<(Vec<f64>, usize), FitError> {
        let mut x = vec![0.0; self.len()];
        let mut ll = self.log_likelihood(&x, prior);
        for iteration in 1..=MAX_ITERATIONS {
            let (gradient, info) = self.gradient_and_information(&x, prior);
            let step = cholesky_solve(info, gradient).ok_or(FitError::Singular)?;
            let size = step.iter().fold(0.0_f64, |acc, s| acc.max(s.abs()));
            if size < TOLERANCE {
                x.iter_mut().zip(&step).for_each(|(xi, si)| *xi += si);
                return Ok((x, iteration));
            }
            (x, ll) = self
                .line_search(&x, &step, ll, prior)
                .ok_or(FitError::DidNotConverge {
                    iterations: iteration,
                })?;
        }
        Err(FitError::DidNotConverge {
            iterations: MAX_ITERATIONS,
        })
    }

    /// The first of `x + step`, `x + step/2`, … that does not lower the log-likelihood (beyond
    /// rounding), with its log-likelihood.
    fn line_search(&self, x: &[f64], step: &[f64], ll: f64, prior: f64) -> Option<(Vec<f64>, f64)> {
        let slack = 1e-12 * (1.0 + ll.abs());
        let mut t = 1.0;
        for _ in 0..MAX_HALVINGS {
            let candidate: Vec<f64> = x.iter().zip(step).map(|(xi, si)| xi + t * si).collect();
            let value = self.log_likelihood(&candidate, prior);
            if value >= ll - slack {
                return Some((candidate, value));
            }
            t *= 0.5;
        }
        None
    }
}

/// Whether every node of `0..m` is reachable from node 0 along `edge(i, j)`.
fn reaches_all(m: usize, edge: impl Fn(usize, usize) -> bool) -> bool {
    let mut seen = vec![false; m];
    let mut stack = vec![0];
    seen[0] = true;
    while let Some(i) = stack.pop() {
        for (j, seen_j) in seen.iter_mut().enumerate() {
            if !*seen_j && edge(i, j) {
                *seen_j = true;
                stack.push(j);
            }
        }
    }
    seen.into_iter().all(|s| s)
}

/// `1 / (1 + e^−d)`.
fn sigmoid(d: f64) -> f64 {
    1.0 / (1.0 + (-d).exp())
}

/// `ln(sigmoid(d))`, without overflow for large `|d|`.
fn log_sigmoid(d: f64) -> f64 {
    if d >= 0.0 {
        -(-d).exp().ln_1p()
    } else {
        d - d.exp().ln_1p()
    }
}

/// Solves `a · x = b` for a symmetric positive definite `a` by Cholesky factorization; `None`
/// when `a` is not (numerically) positive definite.
fn cholesky_solve(mut a: Vec<Vec<f64>>, b: Vec<f64>) -> Option<Vec<f64>> {
    let m = b.len();
    // Lower triangle of `a` becomes L with a = L·Lᵀ.
    for j in 0..m {
        let diagonal = a[j][j] - dot(&a[j][..j], &a[j][..j]);
        if diagonal.is_nan() || diagonal <= 0.0 {
            return None;
        }
        let l = diagonal.sqrt();
        a[j][j] = l;
        for i in j + 1..m {
            a[i][j] = (a[i][j] - dot(&a[i][..j], &a[j][..j])) / l;
        }
    }
    // L·y = b, then Lᵀ·x = y.
    let mut y = b;
    for i in 0..m {
        y[i] = (y[i] - dot(&a[i][..i], &y[..i])) / a[i][i];
    }
    for i in (0..m).rev() {
        let later: f64 = (i + 1..m).map(|k| a[k][i] * y[k]).sum();
        y[i] = (y[i] - later) / a[i][i];
    }
    Some(y)
}

fn dot(u: &[f64], v: &[f64]) -> f64 {
    u.iter().zip(v).map(|(a, b)| a * b).sum()
}

/// The probability that a contestant rated `rating_a` beats one rated `rating_b`.
pub fn win_probability(rating_a: f64, rating_b: f64, scale: &Scale) -> f64 {
    1.0 / (1.0 + scale.base.powf((rating_b - rating_a) / scale.points))
}

/// Settings of the percentile bootstrap.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bootstrap {
    /// Resampling rounds (100); 0 makes every interval the point estimate.
    pub rounds: usize,
    /// Coverage of the intervals, strictly between 0 and 1 (0.95).
    pub confidence: f64,
    /// Seed of the resampling (0).
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap {
            rounds: 100,
            confidence: 0.95,
            seed: 0,
        }
    }
}

/// One contestant's rating with its interval, rank and record.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rating {
    /// The point estimate: the fit on all comparisons.
    pub rating: f64,
    /// Lower bound of the percentile-bootstrap interval.
    pub lower: f64,
    /// Upper bound of the percentile-bootstrap interval.
    pub upper: f64,
    /// 1 + the number of contestants whose lower bound is above this upper bound.
    pub rank: usize,
    /// Weighted comparisons won (score above 0.5).
    pub wins: f64,
    /// Weighted comparisons lost (score below 0.5).
    pub losses: f64,
    /// Weighted comparisons tied (score exactly 0.5).
    pub ties: f64,
    /// Weighted comparisons played.
    pub games: f64,
}

/// Ratings of all contestants, with how they were obtained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ratings {
    /// One entry per contestant, in contestant order.
    pub ratings: Vec<Rating>,
    /// Whether the point fit needed the weak prior.
    pub regularized: bool,
    /// Bootstrap rounds used for the intervals.
    pub rounds: usize,
    /// Coverage of the intervals.
    pub confidence: f64,
}

/// Fits the ratings and adds percentile-bootstrap intervals, ranks and records.
///
/// Each round draws `comparisons.len()` comparisons with replacement (seeded by
/// `bootstrap.seed`) and refits; a degenerate sample is fitted with the prior like any
/// degenerate case. The bounds are the `(1 − c)/2` and `(1 + c)/2` quantiles (linear
/// interpolation) of the round ratings; as in any percentile bootstrap, the point estimate is
/// not guaranteed to lie inside its interval. With 0 rounds the intervals are the point
/// estimates.
pub fn rate(
    n: usize,
    comparisons: &[Comparison],
    scale: &Scale,
    bootstrap: &Bootstrap,
) -> Result<Ratings, FitError> {
    let singletons: Vec<Vec<usize>> = (0..comparisons.len()).map(|i| vec![i]).collect();
    rate_resampling(n, comparisons, &singletons, scale, bootstrap)
}

/// [`rate`] with a cluster bootstrap: `clusters[i]` names the cluster of `comparisons[i]`
/// (e.g. the task both submissions answer), and each round draws as many clusters as there
/// are, with replacement, keeping every comparison of a drawn cluster. Use it when the
/// comparisons of one cluster are not independent: the intervals then reflect how much the
/// ratings vary between clusters, not only between comparisons. The point estimate, ranks and
/// records are [`rate`]'s. `clusters` must be as long as `comparisons`
/// ([`FitError::ClusterCount`]).
pub fn rate_clustered(
    n: usize,
    comparisons: &[Comparison],
    clusters: &[usize],
    scale: &Scale,
    bootstrap: &Bootstrap,
) -> Result<Ratings, FitError> {
    if clusters.len() != comparisons.len() {
        return Err(FitError::ClusterCount {
            clusters: clusters.len(),
            comparisons: comparisons.len(),
        });
    }
    let mut groups: std::collections::BTreeMap<usize, Vec<usize>> =
        std::collections::BTreeMap::new();
    for (i, &c) in clusters.iter().enumerate() {
        groups.entry(c).or_default().push(i);
    }
    let groups: Vec<Vec<usize>> = groups.into_values().collect();
    rate_resampling(n, comparisons, &groups, scale, bootstrap)
}

/// The fit with intervals from resampling `groups` (indices into `comparisons`) with
/// replacement.
fn rate_resampling(
    n: usize,
    comparisons: &[Comparison],
    groups: &[Vec<usize>],
    scale: &Scale,
    bootstrap: &Bootstrap,
) -> Result<Ratings, FitError> {
    validate(n, comparisons, scale)?;
    let confidence = bootstrap.confidence;
    let confidence_ok = confidence > 0.0 && confidence < 1.0;
    if !confidence_ok {
        return Err(FitError::InvalidConfidence(confidence));
    }
    let point = fit_valid(n, comparisons, scale)?;
    let intervals = if bootstrap.rounds == 0 {
        point.ratings.iter().map(|&r| (r, r)).collect()
    } else {
        let samples = bootstrap_samples(n, comparisons, groups, scale, bootstrap)?;
        let tail = (1.0 - confidence) / 2.0;
        samples
            .iter()
            .map(|sorted| (quantile(sorted, tail), quantile(sorted, 1.0 - tail)))
            .collect::<Vec<_>>()
    };
    let ranks = ranks(&intervals);
    let records = records(n, comparisons);
    let ratings = (0..n)
        .map(|i| {
            let (wins, losses, ties, games) = records[i];
            Rating {
                rating: point.ratings[i],
                lower: intervals[i].0,
                upper: intervals[i].1,
                rank: ranks[i],
                wins,
                losses,
                ties,
                games,
            }
        })
        .collect();
    Ok(Ratings {
        ratings,
        regularized: point.regularized,
        rounds: bootstrap.rounds,
        confidence,
    })
}

/// Each contestant's bootstrap ratings, sorted ascending: each round draws `groups.len()`
/// groups of comparisons with replacement (one comparison per group: the plain bootstrap).
fn bootstrap_samples(
    n: usize,
    comparisons: &[Comparison],
    groups: &[Vec<usize>],
    scale: &Scale,
    bootstrap: &Bootstrap,
) -> Result<Vec<Vec<f64>>, FitError> {
    let mut rng = fastrand::Rng::with_seed(bootstrap.seed);
    let mut samples = vec![Vec::with_capacity(bootstrap.rounds); n];
    if groups.is_empty() {
        // nobody played: every round is the empty fit
        let round = fit_valid(n, &[], scale)?;
        for (sample, rating) in samples.iter_mut().zip(round.ratings) {
            sample.resize(bootstrap.rounds, rating);
        }
        return Ok(samples);
    }
    let mut resampled: Vec<Comparison> = Vec::with_capacity(comparisons.len());
    for _ in 0..bootstrap.rounds {
        resampled.clear();
        for _ in 0..groups.len() {
            let group = &groups[rng.usize(..groups.len())];
            resampled.extend(group.iter().map(|&i| comparisons[i]));
        }
        let round = fit_valid(n, &resampled, scale)?;
        for (sample, rating) in samples.iter_mut().zip(round.ratings) {
            sample.push(rating);
        }
    }
    for sample in &mut samples {
        sample.sort_by(f64::total_cmp);
    }
    Ok(samples)
}

/// The `q` quantile of sorted, non-empty values, interpolating linearly between order
/// statistics (position `q·(len − 1)`).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let position = q * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = position.ceil() as usize;
    sorted[below] + (position - below as f64) * (sorted[above] - sorted[below])
}

/// Weighted (wins, losses, ties, games) of each contestant.
fn records(n: usize, comparisons: &[Comparison]) -> Vec<(f64, f64, f64, f64)> {
    let mut records = vec![(0.0, 0.0, 0.0, 0.0); n];
    for c in comparisons {
        let w = c.weight;
        if c.score_a > 0.5 {
            records[c.a].0 += w;
            records[c.b].1 += w;
        } else if c.score_a < 0.5 {
            records[c.a].1 += w;
            records[c.b].0 += w;
        } else {
            records[c.a].2 += w;
            records[c.b].2 += w;
        }
        records[c.a].3 += w;
        records[c.b].3 += w;
    }
    records
}

/// Ranks from `(lower, upper)` intervals: 1 + the number of contestants whose lower bound is
/// strictly above this contestant's upper bound, so overlapping intervals share ranks.
pub fn ranks(intervals: &[(f64, f64)]) -> Vec<usize> {
    intervals
        .iter()
        .map(|&(_, upper)| {
            1 + intervals
                .iter()
                .filter(|&&(lower, _)| lower > upper)
                .count()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn c(a: usize, b: usize, score_a: f64) -> Comparison {
        Comparison {
            a,
            b,
            score_a,
            weight: 1.0,
        }
    }

    /// `count` copies of a comparison.
    fn times(count: usize, comparison: Comparison) -> Vec<Comparison> {
        vec![comparison; count]
    }

    fn fit_default(n: usize, comparisons: &[Comparison]) -> Fit {
        fit(n, comparisons, &Scale::default()).expect("fit")
    }

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    #[test]
    fn two_players_closed_form() {
        let mut games = times(7, c(0, 1, 1.0));
        games.extend(times(3, c(1, 0, 1.0)));
        let fit = fit_default(2, &games);
        let expected = 400.0 * (7.0_f64 / 3.0).log10();
        assert!(!fit.regularized);
        assert!(close(fit.ratings[0] - fit.ratings[1], expected, 1e-6));
        assert!(close(fit.ratings[0], 1000.0 + expected / 2.0, 1e-6));
        assert!(close(expected, 147.190_714, 1e-6));
    }

    #[test]
    fn two_players_closed_form_with_ties() {
        // 6 wins, 2 ties, 2 losses: w = 7 of 10.
        let mut games = times(6, c(0, 1, 1.0));
        games.extend(times(2, c(1, 0, 0.5)));
        games.extend(times(2, c(0, 1, 0.0)));
        let fit = fit_default(2, &games);
        let expected = 400.0 * (7.0_f64 / 3.0).log10();
        assert!(close(fit.ratings[0] - fit.ratings[1], expected, 1e-6));
        // One comparison of weight 10 and score 0.7 is the same evidence.
        let single = fit_default(
            2,
            &[Comparison {
                a: 0,
                b: 1,
                score_a: 0.7,
                weight: 10.0,
            }],
        );
        assert!(close(single.ratings[0] - single.ratings[1], expected, 1e-6));
    }

    #[test]
    fn other_scales_follow_the_formula() {
        let mut games = times(3, c(0, 1, 1.0));
        games.push(c(0, 1, 0.0));
        let scale = Scale {
            points: 1.0,
            base: std::f64::consts::E,
            anchor_rating: 0.0,
            anchor: Anchor::Mean,
        };
        let fit = fit(2, &games, &scale).expect("fit");
        assert!(close(fit.ratings[0] - fit.ratings[1], 3.0_f64.ln(), 1e-9));
        assert!(close(
            win_probability(fit.ratings[0], fit.ratings[1], &scale),
            0.75,
            1e-9
        ));
    }

    #[test]
    fn symmetric_players_sit_at_the_anchor() {
        let mut games = Vec::new();
        for (i, j) in [(0, 1), (1, 2), (0, 2)] {
            games.push(c(i, j, 1.0));
            games.push(c(j, i, 1.0));
            games.push(c(i, j, 0.5));
        }
        let fit = fit_default(3, &games);
        assert!(!fit.regularized);
        for r in &fit.ratings {
            assert!(close(*r, 1000.0, 1e-9), "{r}");
        }
        // Rock–paper–scissors, 2–1 each way round: also all equal.
        let mut cycle = Vec::new();
        for (i, j) in [(0, 1), (1, 2), (2, 0)] {
            cycle.extend(times(2, c(i, j, 1.0)));
            cycle.push(c(i, j, 0.0));
        }
        let fit = fit_default(3, &cycle);
        for r in &fit.ratings {
            assert!(close(*r, 1000.0, 1e-9), "{r}");
        }
    }

    fn three_player_games() -> Vec<Comparison> {
        let mut games = times(6, c(0, 1, 1.0));
        games.extend(times(4, c(1, 0, 1.0)));
        games.extend(times(7, c(1, 2, 1.0)));
        games.extend(times(2, c(2, 1, 1.0)));
        games.extend(times(3, c(0, 2, 1.0)));
        games.extend(times(1, c(0, 2, 0.0)));
        games
    }

    #[test]
    fn anchors() {
        let games = three_player_games();
        let mean_fit = fit_default(3, &games);
        let mean = mean_fit.ratings.iter().sum::<f64>() / 3.0;
        assert!(close(mean, 1000.0, 1e-9));
        assert!(mean_fit.ratings[0] > mean_fit.ratings[1]);
        assert!(mean_fit.ratings[1] > mean_fit.ratings[2]);
        for k in 0..3 {
            let scale = Scale {
                anchor_rating: 1500.0,
                anchor: Anchor::Contestant(k),
                ..Scale::default()
            };
            let anchored = fit(3, &games, &scale).expect("fit");
            assert_eq!(anchored.ratings[k], 1500.0);
            for i in 0..3 {
                let shift = anchored.ratings[i] - mean_fit.ratings[i];
                assert!(close(shift, 1500.0 - mean_fit.ratings[k], 1e-9));
            }
        }
    }

    #[test]
    fn idle_contestants_get_the_mean() {
        let mut games = times(7, c(0, 2, 1.0));
        games.extend(times(3, c(2, 0, 1.0)));
        let fit = fit_default(4, &games);
        assert!(!fit.regularized);
        assert_eq!(fit.ratings[1], 1000.0);
        assert_eq!(fit.ratings[3], 1000.0);
        let expected = 400.0 * (7.0_f64 / 3.0).log10();
        assert!(close(fit.ratings[0] - fit.ratings[2], expected, 1e-6));
        let nobody = fit_default(3, &[]);
        assert_eq!(nobody.ratings, vec![1000.0; 3]);
        assert_eq!(nobody.iterations, 0);
        let zero_weight = Comparison {
            weight: 0.0,
            ..c(0, 1, 1.0)
        };
        assert_eq!(fit_default(2, &[zero_weight]).ratings, vec![1000.0; 2]);
    }

    #[test]
    fn strong_weight_equals_repeated_games() {
        let strong = Comparison {
            weight: 3.0,
            ..c(0, 1, 1.0)
        };
        let rest = [c(1, 0, 1.0), c(0, 2, 0.5), c(2, 1, 1.0), c(1, 2, 1.0)];
        let mut weighted = vec![strong];
        weighted.extend(rest);
        let mut repeated = times(3, c(0, 1, 1.0));
        repeated.extend(rest);
        let a = fit_default(3, &weighted);
        let b = fit_default(3, &repeated);
        assert!(!a.regularized);
        for (x, y) in a.ratings.iter().zip(&b.ratings) {
            assert!(close(*x, *y, 1e-9), "{x} vs {y}");
        }
        // And it differs from a single plain win.
        let mut single = vec![c(0, 1, 1.0)];
        single.extend(rest);
        assert!(fit_default(3, &single).ratings[0] < a.ratings[0] - 50.0);
    }

    #[test]
    fn a_player_who_won_everything_is_regularized_and_finite() {
        let mut games = times(5, c(0, 1, 1.0));
        games.extend(times(5, c(2, 0, 0.0)));
        games.extend(times(3, c(1, 2, 1.0)));
        games.extend(times(3, c(2, 1, 1.0)));
        let fit = fit_default(3, &games);
        assert!(fit.regularized);
        assert!(fit.ratings.iter().all(|r| r.is_finite()));
        assert!(fit.ratings[0] > fit.ratings[1] + 200.0);
        assert!(fit.ratings[0] > fit.ratings[2] + 200.0);
        assert!(close(fit.ratings[1], fit.ratings[2], 1e-6));
        // Losing everything mirrors it.
        let mirrored: Vec<Comparison> = games
            .iter()
            .map(|g| Comparison {
                score_a: 1.0 - g.score_a,
                ..*g
            })
            .collect();
        let low = fit_default(3, &mirrored);
        assert!(low.regularized);
        assert!(close(
            low.ratings[0] - 1000.0,
            1000.0 - fit.ratings[0],
            1e-6
        ));
    }

    #[test]
    fn two_players_one_sided_is_regularized() {
        let fit = fit_default(2, &times(10, c(0, 1, 1.0)));
        assert!(fit.regularized);
        let gap = fit.ratings[0] - fit.ratings[1];
        assert!(gap.is_finite() && gap > 400.0, "{gap}");
        // More one-sided evidence moves them further apart.
        let more = fit_default(2, &times(100, c(0, 1, 1.0)));
        assert!(more.ratings[0] - more.ratings[1] > gap);
    }

    #[test]
    fn disconnected_groups_are_regularized_and_finite() {
        let mut games = times(3, c(0, 1, 1.0));
        games.push(c(1, 0, 1.0));
        games.extend(times(2, c(2, 3, 1.0)));
        games.extend(times(2, c(3, 2, 1.0)));
        let fit = fit_default(4, &games);
        assert!(fit.regularized);
        assert!(fit.ratings.iter().all(|r| r.is_finite()));
        assert!(fit.ratings[0] > fit.ratings[1]);
        assert!(close(fit.ratings[2], fit.ratings[3], 1e-6));
        let mean = fit.ratings.iter().sum::<f64>() / 4.0;
        assert!(close(mean, 1000.0, 1e-9));
    }

    /// Seeded games between every pair of contestants with the given true ratings, no ties.
    fn simulate(truth: &[f64], per_pair: usize, seed: u64) -> Vec<Comparison> {
        let scale = Scale::default();
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut games = Vec::new();
        for i in 0..truth.len() {
            for j in i + 1..truth.len() {
                let p = win_probability(truth[i], truth[j], &scale);
                for g in 0..per_pair {
                    let i_wins = rng.f64() < p;
                    let (a, b) = if g % 2 == 0 { (i, j) } else { (j, i) };
                    let score_a = if i_wins == (a == i) { 1.0 } else { 0.0 };
                    games.push(c(a, b, score_a));
                }
            }
        }
        games
    }

    #[test]
    fn recovers_known_ratings() {
        let truth = [1200.0, 1100.0, 1000.0, 900.0];
        let scale = Scale {
            anchor_rating: 1050.0,
            ..Scale::default()
        };
        let many = simulate(&truth, 500, 7);
        let rated = rate(4, &many, &scale, &Bootstrap::default()).expect("rate");
        assert!(!rated.regularized);
        for (r, t) in rated.ratings.iter().zip(truth) {
            assert!(close(r.rating, t, 25.0), "{} vs {t}", r.rating);
        }
        assert!(rated.ratings.windows(2).all(|w| w[0].rating > w[1].rating));
        let covered = rated
            .ratings
            .iter()
            .zip(truth)
            .filter(|(r, t)| r.lower <= *t && *t <= r.upper)
            .count();
        assert!(covered >= 3, "{covered} of 4 intervals cover the truth");
        assert_eq!(
            rated.ratings.iter().map(|r| r.rank).collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
        assert_eq!(rated.ratings[0].games, 1500.0);

        let few = simulate(&truth, 50, 7);
        let rated_few = rate(4, &few, &scale, &Bootstrap::default()).expect("rate");
        let width = |r: &Ratings| {
            r.ratings.iter().map(|x| x.upper - x.lower).sum::<f64>() / r.ratings.len() as f64
        };
        assert!(width(&rated) * 2.0 < width(&rated_few));
    }

    #[test]
    fn rate_records_and_defaults() {
        let strong = Comparison {
            weight: 3.0,
            ..c(0, 1, 1.0)
        };
        let games = [
            strong,
            c(1, 0, 1.0),
            c(0, 2, 0.5),
            c(2, 1, 1.0),
            c(1, 2, 0.0),
        ];
        let rated = rate(3, &games, &Scale::default(), &Bootstrap::default()).expect("rate");
        assert_eq!(rated.rounds, 100);
        assert_eq!(rated.confidence, 0.95);
        let r0 = rated.ratings[0];
        assert_eq!(
            (r0.wins, r0.losses, r0.ties, r0.games),
            (3.0, 1.0, 1.0, 5.0)
        );
        let r1 = rated.ratings[1];
        assert_eq!(
            (r1.wins, r1.losses, r1.ties, r1.games),
            (1.0, 5.0, 0.0, 6.0)
        );
        let r2 = rated.ratings[2];
        assert_eq!(
            (r2.wins, r2.losses, r2.ties, r2.games),
            (2.0, 0.0, 1.0, 3.0)
        );
        let point = fit_default(3, &games);
        for (r, p) in rated.ratings.iter().zip(&point.ratings) {
            assert_eq!(r.rating, *p);
            assert!(r.lower <= r.upper);
        }
        // The same seed gives the same intervals.
        let again = rate(3, &games, &Scale::default(), &Bootstrap::default()).expect("rate");
        assert_eq!(rated, again);
    }

    #[test]
    fn zero_rounds_give_point_intervals() {
        let games = three_player_games();
        let bootstrap = Bootstrap {
            rounds: 0,
            ..Bootstrap::default()
        };
        let rated = rate(3, &games, &Scale::default(), &bootstrap).expect("rate");
        for r in &rated.ratings {
            assert_eq!((r.lower, r.upper), (r.rating, r.rating));
        }
        assert_eq!(
            rated.ratings.iter().map(|r| r.rank).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        let empty = rate(2, &[], &Scale::default(), &Bootstrap::default()).expect("rate");
        assert!(
            empty
                .ratings
                .iter()
                .all(|r| r.lower == 1000.0 && r.upper == 1000.0)
        );
    }

    #[test]
    fn a_cluster_bootstrap_widens_the_intervals_of_clustered_evidence() {
        // 8 clusters (tasks): player 0 wins all 10 games of 4 clusters and loses all 10 of
        // the other 4. Games of a cluster are copies of one outcome: resampled one by one
        // they look like 80 independent games, resampled by cluster like 8.
        let mut games = Vec::new();
        let mut clusters = Vec::new();
        for task in 0..8 {
            for _ in 0..10 {
                games.push(c(0, 1, if task < 4 { 1.0 } else { 0.0 }));
                clusters.push(task);
            }
        }
        let boot = Bootstrap {
            rounds: 400,
            seed: 3,
            ..Bootstrap::default()
        };
        let plain = rate(2, &games, &Scale::default(), &boot).expect("rate");
        let by_task =
            rate_clustered(2, &games, &clusters, &Scale::default(), &boot).expect("clustered");
        let width = |r: &Ratings| r.ratings[0].upper - r.ratings[0].lower;
        assert!(
            width(&by_task) > 1.5 * width(&plain),
            "{by_task:?} vs {plain:?}"
        );
        // the point estimate, ranks and records are the plain fit's
        for (a, b) in plain.ratings.iter().zip(&by_task.ratings) {
            assert_eq!(
                (a.rating, a.wins, a.losses, a.games),
                (b.rating, b.wins, b.losses, b.games)
            );
        }
        // every cluster its own: the same draws as the plain bootstrap
        let own: Vec<usize> = (0..games.len()).collect();
        assert_eq!(
            rate_clustered(2, &games, &own, &Scale::default(), &boot).expect("own"),
            plain
        );
        // labels and comparisons must match
        assert_eq!(
            rate_clustered(2, &games, &[0], &Scale::default(), &boot),
            Err(FitError::ClusterCount {
                clusters: 1,
                comparisons: 80
            })
        );
        let empty = rate_clustered(2, &[], &[], &Scale::default(), &boot).expect("empty");
        assert!(
            empty
                .ratings
                .iter()
                .all(|r| r.lower == 1000.0 && r.upper == 1000.0)
        );
    }

    #[test]
    fn quantile_interpolates() {
        let sorted = [1.0, 2.0, 4.0, 8.0, 16.0];
        assert_eq!(quantile(&sorted, 0.0), 1.0);
        assert_eq!(quantile(&sorted, 1.0), 16.0);
        assert_eq!(quantile(&sorted, 0.5), 4.0);
        assert_eq!(quantile(&sorted, 0.625), 6.0);
        assert_eq!(quantile(&[3.0], 0.025), 3.0);
    }

    #[test]
    fn ranks_by_hand() {
        // The third overlaps the second but not the first.
        assert_eq!(
            ranks(&[(1000.0, 1100.0), (1050.0, 1200.0), (1150.0, 1250.0)]),
            [2, 1, 1]
        );
        assert_eq!(ranks(&[(0.0, 1.0), (2.0, 3.0), (4.0, 5.0)]), [3, 2, 1]);
        assert_eq!(ranks(&[(0.0, 10.0), (2.0, 3.0), (4.0, 5.0)]), [1, 2, 1]);
        // Touching intervals overlap.
        assert_eq!(ranks(&[(0.0, 1.0), (1.0, 2.0)]), [1, 1]);
        assert_eq!(ranks(&[(5.0, 5.0), (5.0, 5.0), (1.0, 2.0)]), [1, 1, 3]);
        assert!(ranks(&[]).is_empty());
    }

    #[test]
    fn win_probability_values() {
        let scale = Scale::default();
        assert_eq!(win_probability(1000.0, 1000.0, &scale), 0.5);
        assert!(close(
            win_probability(1400.0, 1000.0, &scale),
            10.0 / 11.0,
            1e-12
        ));
        assert!(close(
            win_probability(1000.0, 1400.0, &scale),
            1.0 / 11.0,
            1e-12
        ));
        assert!(close(
            win_probability(1200.0, 1000.0, &scale),
            0.759_746_926_6,
            1e-9
        ));
    }

    #[test]
    fn invalid_input_is_rejected() {
        let scale = Scale::default();
        assert_eq!(fit(0, &[], &scale), Err(FitError::NoContestants));
        assert_eq!(
            fit(2, &[c(0, 1, 1.0), c(0, 2, 1.0)], &scale),
            Err(FitError::IndexOutOfRange {
                comparison: 1,
                contestants: 2
            })
        );
        assert_eq!(
            fit(2, &[c(1, 1, 1.0)], &scale),
            Err(FitError::SelfComparison { comparison: 0 })
        );
        let negative = Comparison {
            weight: -1.0,
            ..c(0, 1, 1.0)
        };
        assert!(matches!(
            fit(2, &[negative], &scale),
            Err(FitError::InvalidWeight { comparison: 0, .. })
        ));
        let infinite = Comparison {
            weight: f64::INFINITY,
            ..c(0, 1, 1.0)
        };
        assert!(matches!(
            fit(2, &[infinite], &scale),
            Err(FitError::InvalidWeight { .. })
        ));
        for score in [1.5, -0.1, f64::NAN] {
            assert!(matches!(
                fit(2, &[c(0, 1, score)], &scale),
                Err(FitError::InvalidScore { .. })
            ));
        }
        for bad in [
            Scale {
                points: 0.0,
                ..scale
            },
            Scale {
                points: f64::NAN,
                ..scale
            },
            Scale { base: 1.0, ..scale },
            Scale {
                base: f64::INFINITY,
                ..scale
            },
            Scale {
                anchor_rating: f64::NAN,
                ..scale
            },
        ] {
            assert!(matches!(fit(2, &[], &bad), Err(FitError::InvalidScale(_))));
        }
        let far = Scale {
            anchor: Anchor::Contestant(2),
            ..scale
        };
        assert_eq!(
            fit(2, &[], &far),
            Err(FitError::AnchorOutOfRange {
                anchor: 2,
                contestants: 2
            })
        );
        for confidence in [0.0, 1.0, f64::NAN] {
            let bootstrap = Bootstrap {
                confidence,
                ..Bootstrap::default()
            };
            assert!(matches!(
                rate(2, &[], &scale, &bootstrap),
                Err(FitError::InvalidConfidence(_))
            ));
        }
    }

    fn comparisons(n: usize) -> impl Strategy<Value = Vec<Comparison>> {
        let one =
            (0..n, 1..n, 0usize..3, prop::bool::ANY).prop_map(move |(a, offset, s, strong)| {
                Comparison {
                    a,
                    b: (a + offset) % n,
                    score_a: s as f64 / 2.0,
                    weight: if strong { 3.0 } else { 1.0 },
                }
            });
        prop::collection::vec(one, 0..40)
    }

    fn random_problem() -> impl Strategy<Value = (usize, Vec<Comparison>)> {
        (2usize..7).prop_flat_map(|n| (Just(n), comparisons(n)))
    }

    proptest! {
        #[test]
        fn fits_are_finite_and_anchored((n, games) in random_problem()) {
            let fit = fit(n, &games, &Scale::default()).expect("fit");
            prop_assert!(fit.ratings.iter().all(|r| r.is_finite()));
            let mean = fit.ratings.iter().sum::<f64>() / n as f64;
            prop_assert!(close(mean, 1000.0, 1e-6));
        }

        /// At the maximum-likelihood estimate every contestant's expected score equals the
        /// actual one.
        #[test]
        fn ml_fit_matches_expected_wins((n, games) in random_problem()) {
            let scale = Scale::default();
            let fit = fit(n, &games, &scale).expect("fit");
            prop_assume!(!fit.regularized);
            let mut surplus = vec![0.0; n];
            for g in &games {
                let p = win_probability(fit.ratings[g.a], fit.ratings[g.b], &scale);
                surplus[g.a] += g.weight * (g.score_a - p);
                surplus[g.b] -= g.weight * (g.score_a - p);
            }
            for s in surplus {
                prop_assert!(s.abs() < 1e-6, "{s}");
            }
        }

        #[test]
        fn rated_intervals_are_ordered((n, games) in random_problem(), seed in any::<u64>()) {
            let bootstrap = Bootstrap { rounds: 20, seed, ..Bootstrap::default() };
            let rated = rate(n, &games, &Scale::default(), &bootstrap).expect("rate");
            for r in &rated.ratings {
                prop_assert!(r.lower <= r.upper);
                prop_assert!(r.lower.is_finite() && r.upper.is_finite());
                prop_assert!((1..=n).contains(&r.rank));
            }
        }
    }
}
