//! Judging analysis: the pure computations behind the pairwise arena, jury agreement and judge
//! calibration. No I/O, no LLM calls, no runtime: callers (the CLI, the orchestrator) make the
//! judge calls through `mixseek-llm`, store results through `mixseek-store`, and hand this
//! crate numbers.
//!
//! * [`verdict`]: the five-level pairwise verdicts (`A>>B` … `B>>A`), parsing a judge's text,
//!   and turning the two games of a pair (positions swapped) into weighted outcomes.
//! * [`design`]: which pairs to judge — all of them up to a size, beyond that a seeded design
//!   that still connects every contestant.
//! * [`bradley_terry`]: the Bradley–Terry fit (maximum likelihood, Elo-like scale), bootstrap
//!   confidence intervals and ranks that only separate non-overlapping intervals.
//! * [`agreement`]: Krippendorff's alpha (interval data) and the spread of several ratings.
//! * [`correlation`]: Spearman and Kendall rank correlations, Pearson, mean absolute error.
//! * [`keywords`]: RAKE keyword phrases of judge comments (English and Japanese, segmented by a
//!   safe TinySegmenter port), and checks that a sentence or a quote is really in a comment.
//! * [`themes`]: themes of judge comments merged across rounds, and seed 003's confidence rule.
//! * [`stats`]: means with percentile-bootstrap intervals and paired candidate-vs-baseline
//!   comparisons (wins, ties, losses) for experiment reports.

#![warn(missing_docs, unreachable_pub)]

pub mod agreement;
pub mod bradley_terry;
pub mod correlation;
pub mod design;
pub mod keywords;
pub mod stats;
pub mod themes;
pub mod verdict;
