//! Tournament design: which pairs of contestants to judge. Small fields play every pair; larger
//! ones get a seeded sparse design that keeps the comparison graph connected (so one
//! Bradley–Terry scale covers everyone) and gives every contestant a minimum number of
//! opponents.

use std::collections::BTreeSet;

/// Which pairs `(i, j)` with `i < j` of `n` contestants to judge, sorted, without duplicates.
///
/// * `n <= 1`: no pairs.
/// * `n <= all_pairs_up_to`: every pair, `n(n−1)/2` of them.
/// * Otherwise a design seeded by `seed` (the same seed gives the same pairs): a random
///   Hamiltonian cycle through a shuffled order of the contestants (so the graph is connected
///   and everyone has at least 2 opponents, 1 when `n = 2`), then, for every contestant with
///   fewer than `min(k, n − 1)` opponents, random new opponents until it has that many —
///   preferring opponents that are themselves still short, so the extra pairs are not wasted.
pub fn pairs(n: usize, all_pairs_up_to: usize, k: usize, seed: u64) -> Vec<(usize, usize)> {
    if n <= 1 {
        return Vec::new();
    }
    if n <= all_pairs_up_to {
        return (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .collect();
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut order: Vec<usize> = (0..n).collect();
    rng.shuffle(&mut order);
    let mut design = Design::new(n);
    for (position, &contestant) in order.iter().enumerate() {
        design.add(contestant, order[(position + 1) % n]);
    }
    let target = k.min(n - 1);
    for &contestant in &order {
        while design.degree[contestant] < target {
            let Some(partner) = design.pick_partner(contestant, target, &mut rng) else {
                break;
            };
            design.add(contestant, partner);
        }
    }
    design.pairs.into_iter().collect()
}

/// Whether the pairs connect all `n` contestants into one graph (`true` for `n <= 1`). A pair
/// naming a contestant `>= n` makes the answer `false`.
pub fn is_connected(n: usize, pairs: &[(usize, usize)]) -> bool {
    if pairs.iter().any(|&(i, j)| i >= n || j >= n) {
        return false;
    }
    if n <= 1 {
        return true;
    }
    let mut neighbours = vec![Vec::new(); n];
    for &(i, j) in pairs {
        neighbours[i].push(j);
        neighbours[j].push(i);
    }
    let mut seen = vec![false; n];
    seen[0] = true;
    let mut stack = vec![0];
    while let Some(i) = stack.pop() {
        for &j in &neighbours[i] {
            if !seen[j] {
                seen[j] = true;
                stack.push(j);
            }
        }
    }
    seen.into_iter().all(|s| s)
}

/// A design under construction: the pairs chosen so far and each contestant's opponent count.
struct Design {
    pairs: BTreeSet<(usize, usize)>,
    degree: Vec<usize>,
}

impl Design {
    fn new(n: usize) -> Self {
        Design {
            pairs: BTreeSet::new(),
            degree: vec![0; n],
        }
    }

    fn has(&self, i: usize, j: usize) -> bool {
        self.pairs.contains(&(i.min(j), i.max(j)))
    }

    /// Adds the pair unless it is a self-pair or already chosen.
    fn add(&mut self, i: usize, j: usize) {
        if i != j && self.pairs.insert((i.min(j), i.max(j))) {
            self.degree[i] += 1;
            self.degree[j] += 1;
        }
    }

    /// A random new opponent for `contestant`, among those below `target` when there are any.
    fn pick_partner(
        &self,
        contestant: usize,
        target: usize,
        rng: &mut fastrand::Rng,
    ) -> Option<usize> {
        let candidates: Vec<usize> = (0..self.degree.len())
            .filter(|&j| j != contestant && !self.has(contestant, j))
            .collect();
        let short: Vec<usize> = candidates
            .iter()
            .copied()
            .filter(|&j| self.degree[j] < target)
            .collect();
        let pool = if short.is_empty() {
            &candidates
        } else {
            &short
        };
        if pool.is_empty() {
            return None;
        }
        Some(pool[rng.usize(..pool.len())])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn degrees(n: usize, pairs: &[(usize, usize)]) -> Vec<usize> {
        let mut degree = vec![0; n];
        for &(i, j) in pairs {
            degree[i] += 1;
            degree[j] += 1;
        }
        degree
    }

    #[test]
    fn no_pairs_for_zero_or_one() {
        for threshold in [0, 5] {
            assert!(pairs(0, threshold, 3, 1).is_empty());
            assert!(pairs(1, threshold, 3, 1).is_empty());
        }
    }

    #[test]
    fn all_pairs_up_to_the_threshold() {
        assert_eq!(pairs(3, 8, 1, 0), vec![(0, 1), (0, 2), (1, 2)]);
        for n in 2..=8 {
            let p = pairs(n, 8, 1, 42);
            assert_eq!(p.len(), n * (n - 1) / 2);
            assert!(p.windows(2).all(|w| w[0] < w[1]));
        }
        // Just above the threshold the design is sparse.
        assert_eq!(pairs(9, 8, 2, 42).len(), 9);
    }

    #[test]
    fn two_contestants_above_threshold_get_their_single_pair() {
        assert_eq!(pairs(2, 0, 5, 7), vec![(0, 1)]);
    }

    #[test]
    fn large_k_gives_every_pair() {
        assert_eq!(pairs(6, 0, 10, 3).len(), 15);
    }

    #[test]
    fn same_seed_same_design_other_seed_other_design() {
        let a = pairs(30, 8, 4, 1234);
        assert_eq!(a, pairs(30, 8, 4, 1234));
        assert_ne!(a, pairs(30, 8, 4, 1235));
    }

    #[test]
    fn cycle_only_when_k_is_at_most_two() {
        let p = pairs(20, 8, 2, 9);
        assert_eq!(p.len(), 20);
        assert!(degrees(20, &p).iter().all(|&d| d == 2));
        assert!(is_connected(20, &p));
    }

    #[test]
    fn connectivity_by_hand() {
        assert!(is_connected(0, &[]));
        assert!(is_connected(1, &[]));
        assert!(!is_connected(2, &[]));
        assert!(is_connected(3, &[(0, 1), (1, 2)]));
        assert!(!is_connected(4, &[(0, 1), (2, 3)]));
        assert!(is_connected(4, &[(0, 1), (2, 3), (3, 0)]));
        assert!(!is_connected(2, &[(0, 1), (1, 2)]));
    }

    proptest! {
        #[test]
        fn design_is_connected_with_minimum_degree(
            n in 2usize..60,
            threshold in 0usize..6,
            k in 0usize..12,
            seed in any::<u64>(),
        ) {
            let p = pairs(n, threshold, k, seed);
            prop_assert!(is_connected(n, &p));
            prop_assert!(p.windows(2).all(|w| w[0] < w[1]), "sorted without duplicates");
            prop_assert!(p.iter().all(|&(i, j)| i < j && j < n));
            let target = k.min(n - 1);
            prop_assert!(degrees(n, &p).iter().all(|&d| d >= target));
            if n > threshold {
                prop_assert!(p.len() <= n * target.max(2));
            }
            prop_assert_eq!(p, pairs(n, threshold, k, seed));
        }
    }
}
