//! The one rule that ranks teams against each other: the higher score first; on a tie, the
//! smaller `team_id` (compared byte by byte, as `str`'s `Ord` and DuckDB's `ORDER BY
//! team_id` do).
//!
//! It orders the ranking the next round's prompts show (`RankingEntry::order` in
//! mixseek-prompt, the original's rule there), picks the execution's best team
//! (`ExecutionSummary::pick_best`), orders the leaderboard table `mixseek exec` prints, and
//! is written as `ORDER BY score DESC, team_id ASC` in mixseek-store's reads (`mixseek
//! leaderboard`, reports). The original broke ties by configuration order for the best team
//! and its printed table, and by `team_id` in its prompts; one rule everywhere means the
//! winner named in the summary is the first row of every leaderboard.
//!
//! A team's best round is another question with its own rule (the later round on a tie:
//! [`crate::best_round`]).

use std::cmp::Ordering;

/// How team `a` (its score and id) ranks against team `b`: `Less` when `a` ranks above `b`.
/// Scores that do not compare (NaN, never stored) count as equal.
pub fn team_order(a: (f64, &str), b: (f64, &str)) -> Ordering {
    b.0.partial_cmp(&a.0)
        .unwrap_or(Ordering::Equal)
        .then_with(|| a.1.cmp(b.1))
}

#[cfg(test)]
mod tests {
    use super::team_order;
    use std::cmp::Ordering;

    #[test]
    fn higher_scores_first_then_team_id() {
        assert_eq!(team_order((90.0, "b"), (80.0, "a")), Ordering::Less);
        assert_eq!(team_order((80.0, "a"), (90.0, "b")), Ordering::Greater);
        assert_eq!(team_order((90.0, "a"), (90.0, "b")), Ordering::Less);
        assert_eq!(team_order((90.0, "b"), (90.0, "a")), Ordering::Greater);
        // byte order: upper case before lower case, as DuckDB sorts VARCHAR
        assert_eq!(team_order((1.0, "Z"), (1.0, "a")), Ordering::Less);
        let mut teams = [(50.0, "c"), (70.0, "b"), (70.0, "a"), (10.0, "d")];
        teams.sort_by(|x, y| team_order(*x, *y));
        assert_eq!(
            teams.iter().map(|t| t.1).collect::<Vec<_>>(),
            ["a", "b", "c", "d"]
        );
    }
}
