//! Combining repeated judge answers (samples) and jury votes: median or mean, and the spread
//! reported with them (min, max, population standard deviation).

use serde::Serialize;

/// How several scores become one (`aggregate` of a metric); defined with the settings.
pub(crate) use mixseek_config::Aggregate;

/// The scores combined as `aggregate` asks; `None` for no scores.
pub(crate) fn apply(aggregate: Aggregate, scores: &[f64]) -> Option<f64> {
    match aggregate {
        Aggregate::Median => median(scores),
        Aggregate::Mean => mean(scores),
    }
}

pub(crate) fn mean(scores: &[f64]) -> Option<f64> {
    if scores.is_empty() {
        return None;
    }
    Some(scores.iter().sum::<f64>() / scores.len() as f64)
}

pub(crate) fn median(scores: &[f64]) -> Option<f64> {
    if scores.is_empty() {
        return None;
    }
    let mut v = scores.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Spread of a set of scores.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Spread {
    pub min: f64,
    pub max: f64,
    /// Population standard deviation (0 for a single score).
    pub stdev: f64,
}

impl Spread {
    pub(crate) fn of(scores: &[f64]) -> Option<Self> {
        let m = mean(scores)?;
        let min = scores.iter().copied().fold(f64::INFINITY, f64::min);
        let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let var = scores.iter().map(|s| (s - m).powi(2)).sum::<f64>() / scores.len() as f64;
        Some(Self {
            min,
            max,
            stdev: var.sqrt(),
        })
    }

    /// Agreement of judges on a 0..=100 scale: `1 - (max - min) / 100`, in `0..=1` for
    /// scores in 0..=100, which is all a jury combines (1: every judge gave the same score).
    pub(crate) fn agreement(&self) -> f64 {
        1.0 - (self.max - self.min) / 100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_mean() {
        assert_eq!(median(&[70.0, 90.0, 10.0]), Some(70.0));
        assert_eq!(median(&[70.0, 90.0, 10.0, 80.0]), Some(75.0));
        assert_eq!(mean(&[70.0, 90.0, 10.0]), Some(170.0 / 3.0));
        assert_eq!(median(&[]), None);
        assert_eq!(apply(Aggregate::Median, &[1.0, 2.0]), Some(1.5));
        assert_eq!(apply(Aggregate::Mean, &[1.0, 2.0, 6.0]), Some(3.0));
    }

    #[test]
    fn spread_and_agreement() {
        let s = Spread::of(&[80.0, 90.0]).expect("spread");
        assert_eq!((s.min, s.max, s.stdev), (80.0, 90.0, 5.0));
        assert!((s.agreement() - 0.9).abs() < 1e-12);
        assert_eq!(
            Spread::of(&[42.0]).map(|s| (s.stdev, s.agreement())),
            Some((0.0, 1.0))
        );
        assert_eq!(Spread::of(&[]), None);
    }
}
