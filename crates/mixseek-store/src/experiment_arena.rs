//! Arenas of an experiment's variants (schema version 9): `mixseek experiment arena NAME`
//! judges, on every task and repeat, the variants' submissions two by two and rates the
//! **variants** with one Bradley–Terry fit over all tasks.
//!
//! Such an arena is an ordinary arena (an `arena_runs` row and its `arena_games`, whose
//! games name real executions and teams) plus:
//!
//! * `experiment_arenas`: one row per arena (`arena_id` is its key), naming the experiment and
//!   saying how many tasks and submissions took part, how many items were left out (not
//!   finished, or without an evaluated round) and what the bootstrap resampled (`task`: whole
//!   tasks, since the games of one task are not independent).
//! * `experiment_arena_ratings`: the variants' ratings, keyed by (`arena_id`, `variant`).
//!
//! An experiment arena has no `arena_ratings` rows: its contestants are variants, not team
//! submissions. The team-arena reads ([`Store::arenas`], [`Store::latest_arena`]) leave such
//! arenas out, so `show` and the execution report keep showing the arenas of an execution's
//! own teams; exports and merges carry them with the other arena tables (by `arena_id`).
//!
//! Everything is written by the writer thread in one transaction
//! ([`crate::StoreWriter::write_experiment_arena`]); like the other arena tables there is no
//! FOREIGN KEY (see `arena.rs` for why).

use crate::arena::{self, ArenaDetail};
use crate::db::Store;
use crate::error::{Result, StoreError};
use crate::values::{query, u32_of};
use duckdb::{Connection, params};
use mixseek_core::PiiMasker;
use serde::{Deserialize, Serialize};

/// What an experiment arena's bootstrap resamples (`experiment_arenas.bootstrap_unit`):
/// `task` (whole tasks, every game of a drawn task) or `game` (single games).
pub const BOOTSTRAP_UNITS: [&str; 2] = ["task", "game"];

/// The tables version 9 adds, in creation order.
pub(crate) const EXPERIMENT_ARENA_TABLES: [&str; 2] =
    ["experiment_arenas", "experiment_arena_ratings"];

pub(crate) const EXPERIMENT_ARENAS: &str = "
CREATE TABLE experiment_arenas (
    arena_id VARCHAR PRIMARY KEY,
    experiment_id VARCHAR NOT NULL,
    tasks INTEGER NOT NULL CHECK (tasks >= 0),
    submissions INTEGER NOT NULL CHECK (submissions >= 0),
    left_out INTEGER NOT NULL CHECK (left_out >= 0),
    bootstrap_unit VARCHAR NOT NULL CHECK (bootstrap_unit IN ('task', 'game'))
);
";

pub(crate) const EXPERIMENT_ARENA_RATINGS: &str = "
CREATE TABLE experiment_arena_ratings (
    arena_id VARCHAR NOT NULL,
    variant VARCHAR NOT NULL,
    rating DOUBLE NOT NULL,
    lower DOUBLE NOT NULL,
    upper DOUBLE NOT NULL,
    rank INTEGER NOT NULL CHECK (rank >= 1),
    wins DOUBLE NOT NULL,
    losses DOUBLE NOT NULL,
    ties DOUBLE NOT NULL,
    games DOUBLE NOT NULL,
    submissions INTEGER NOT NULL CHECK (submissions >= 0),
    PRIMARY KEY (arena_id, variant)
);
";

/// The tables with their DDL, in creation order.
pub(crate) const EXPERIMENT_ARENA_DDL: [(&str, &str); 2] = [
    ("experiment_arenas", EXPERIMENT_ARENAS),
    ("experiment_arena_ratings", EXPERIMENT_ARENA_RATINGS),
];

/// An experiment arena's `experiment_arenas` row (its arena id is the arena's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentArenaLink {
    /// The experiment whose variants competed.
    pub experiment_id: String,
    /// Tasks on which at least one pair was judged.
    pub tasks: u32,
    /// Items (task × variant × repeat) whose submission competed.
    pub submissions: u32,
    /// Items left out: not finished, or without an evaluated round.
    pub left_out: u32,
    /// One of [`BOOTSTRAP_UNITS`].
    pub bootstrap_unit: String,
}

/// One variant's rating (`experiment_arena_ratings`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantRatingRow {
    /// The variant.
    pub variant: String,
    /// The Bradley–Terry rating.
    pub rating: f64,
    /// The interval's lower bound (at the arena's `confidence`).
    pub lower: f64,
    /// The interval's upper bound.
    pub upper: f64,
    /// 1 for the best; variants whose intervals overlap share ranks.
    pub rank: u32,
    /// Games won (weighted: a strong verdict counts `strong_weight`).
    pub wins: f64,
    /// Games lost.
    pub losses: f64,
    /// Games tied.
    pub ties: f64,
    /// Games played with a verdict (weighted).
    pub games: f64,
    /// The variant's submissions that competed.
    pub submissions: u32,
}

/// A whole experiment arena: what the engine computes,
/// [`StoreWriter::write_experiment_arena`](crate::StoreWriter::write_experiment_arena) stores
/// and [`Store::experiment_arena`] reads back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentArena {
    /// The `arena_runs` row and the games (`ratings` is empty: see the module docs).
    pub arena: ArenaDetail,
    /// The `experiment_arenas` row.
    pub link: ExperimentArenaLink,
    /// The variants' ratings, by rank, then rating (highest first) and variant.
    pub ratings: Vec<VariantRatingRow>,
}

impl ExperimentArena {
    /// In the order the reads return: ratings by rank, then rating (highest first) and
    /// variant; games by pair, game and judge.
    pub fn sorted(mut self) -> Self {
        self.arena = self.arena.sorted();
        self.ratings.sort_by(|a, b| {
            a.rank
                .cmp(&b.rank)
                .then(b.rating.total_cmp(&a.rating))
                .then_with(|| a.variant.cmp(&b.variant))
        });
        self
    }
}

fn invalid(arena_id: &str, message: String) -> StoreError {
    StoreError::Invalid(format!("experiment arena {arena_id}: {message}"))
}

/// Checks a record before it is written: the arena as [`arena::validate`] checks it, without
/// team ratings; a named experiment; a known bootstrap unit; each variant named once, with
/// finite ratings, `lower <= upper`, a rank from 1 and finite, non-negative counts.
pub(crate) fn validate(r: &ExperimentArena) -> Result<()> {
    arena::validate(&r.arena)?;
    let id = r.arena.summary.arena_id.as_str();
    if !r.arena.ratings.is_empty() {
        return Err(invalid(
            id,
            "an experiment arena rates variants: its team ratings (arena_ratings) must be empty"
                .into(),
        ));
    }
    if r.link.experiment_id.trim().is_empty() {
        return Err(invalid(id, "experiment_id must not be empty".into()));
    }
    if !BOOTSTRAP_UNITS.contains(&r.link.bootstrap_unit.as_str()) {
        return Err(invalid(
            id,
            format!(
                "bootstrap_unit `{}` is not one of {}",
                r.link.bootstrap_unit,
                BOOTSTRAP_UNITS.join(", ")
            ),
        ));
    }
    for (field, v) in [
        ("tasks", r.link.tasks),
        ("submissions", r.link.submissions),
        ("left_out", r.link.left_out),
    ] {
        int(id, field, v)?;
    }
    let mut seen = std::collections::BTreeSet::new();
    for t in &r.ratings {
        let at = format!("rating of variant `{}`", t.variant);
        if t.variant.trim().is_empty() {
            return Err(invalid(id, "a rating's variant is empty".into()));
        }
        if !seen.insert(t.variant.as_str()) {
            return Err(invalid(id, format!("{at}: the variant is rated twice")));
        }
        arena::check_rating(
            &at,
            [t.rating, t.lower, t.upper],
            t.rank,
            [t.wins, t.losses, t.ties, t.games],
        )
        .map_err(|m| invalid(id, m))?;
        int(id, &format!("{at}: rank"), t.rank)?;
        int(id, &format!("{at}: submissions"), t.submissions)?;
    }
    Ok(())
}

/// A count as INTEGER (`field` names it in the error).
fn int(arena_id: &str, field: &str, v: u32) -> Result<i32> {
    i32::try_from(v).map_err(|_| invalid(arena_id, format!("{field} {v} is out of range")))
}

/// The record as it is written: validated, its arena masked as [`arena::prepare`] masks.
pub(crate) fn prepare(record: &ExperimentArena, masker: &PiiMasker) -> Result<ExperimentArena> {
    validate(record)?;
    Ok(ExperimentArena {
        arena: arena::prepare(&record.arena, masker)?,
        link: record.link.clone(),
        ratings: record.ratings.clone(),
    })
}

/// Inserts a prepared record (inside the writer's transaction): the arena's rows, then the
/// `experiment_arenas` row and the variants' ratings. A second arena with the same id is
/// refused by the tables' PRIMARY KEYs.
pub(crate) fn insert(conn: &Connection, r: &ExperimentArena) -> Result<()> {
    arena::insert(conn, &r.arena)?;
    let id = r.arena.summary.arena_id.as_str();
    let what = format!("writing experiment arena {id}");
    conn.execute(
        "INSERT INTO experiment_arenas (arena_id, experiment_id, tasks, submissions, left_out,
             bootstrap_unit)
         VALUES (?, ?, ?, ?, ?, ?)",
        params![
            id,
            r.link.experiment_id,
            int(id, "tasks", r.link.tasks)?,
            int(id, "submissions", r.link.submissions)?,
            int(id, "left_out", r.link.left_out)?,
            r.link.bootstrap_unit,
        ],
    )
    .map_err(StoreError::db(format!("{what} (experiment_arenas)")))?;
    for t in &r.ratings {
        conn.execute(
            "INSERT INTO experiment_arena_ratings (arena_id, variant, rating, lower, upper, rank,
                 wins, losses, ties, games, submissions)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            params![
                id,
                t.variant,
                t.rating,
                t.lower,
                t.upper,
                int(id, "rank", t.rank)?,
                t.wins,
                t.losses,
                t.ties,
                t.games,
                int(id, "submissions", t.submissions)?,
            ],
        )
        .map_err(StoreError::db(format!("{what} (experiment_arena_ratings)")))?;
    }
    tracing::debug!(
        arena_id = id,
        experiment = r.link.experiment_id,
        variants = r.ratings.len(),
        "experiment arena stored"
    );
    Ok(())
}

impl Store {
    /// A connection to read the experiment arena tables with, or `None` on a database without
    /// them (a schema older than version 9).
    fn experiment_arena_connection(&self) -> Result<Option<Connection>> {
        let conn = self.connection()?;
        Ok(crate::schema::table_exists(&conn, "experiment_arenas")?.then_some(conn))
    }

    /// The ids of the arenas of experiment `experiment_id`, newest first (ties by arena id).
    pub fn experiment_arena_ids(&self, experiment_id: &str) -> Result<Vec<String>> {
        let Some(conn) = self.experiment_arena_connection()? else {
            return Ok(Vec::new());
        };
        query(
            &conn,
            "the experiment's arenas",
            "SELECT x.arena_id FROM experiment_arenas x JOIN arena_runs r USING (arena_id)
             WHERE x.experiment_id = ?
             ORDER BY r.created_at DESC, x.arena_id",
            [experiment_id],
            |r| r.get(0),
        )
    }

    /// One experiment arena with its games and the variants' ratings; `None` when there is no
    /// experiment arena with this id.
    pub fn experiment_arena(&self, arena_id: &str) -> Result<Option<ExperimentArena>> {
        let Some(conn) = self.experiment_arena_connection()? else {
            return Ok(None);
        };
        let Some(link) = query(
            &conn,
            "the experiment arena",
            "SELECT experiment_id, tasks, submissions, left_out, bootstrap_unit
             FROM experiment_arenas WHERE arena_id = ?",
            [arena_id],
            |r| {
                Ok(ExperimentArenaLink {
                    experiment_id: r.get(0)?,
                    tasks: u32_of(r.get(1)?),
                    submissions: u32_of(r.get(2)?),
                    left_out: u32_of(r.get(3)?),
                    bootstrap_unit: r.get(4)?,
                })
            },
        )?
        .into_iter()
        .next() else {
            return Ok(None);
        };
        let Some(arena) = self.arena(arena_id)? else {
            return Err(StoreError::Invalid(format!(
                "experiment arena {arena_id} has no arena_runs row (the database was edited \
                 by hand?)"
            )));
        };
        let ratings = query(
            &conn,
            "the experiment arena's ratings",
            "SELECT variant, rating, lower, upper, rank, wins, losses, ties, games, submissions
             FROM experiment_arena_ratings WHERE arena_id = ?
             ORDER BY rank, rating DESC, variant",
            [arena_id],
            |r| {
                Ok(VariantRatingRow {
                    variant: r.get(0)?,
                    rating: r.get(1)?,
                    lower: r.get(2)?,
                    upper: r.get(3)?,
                    rank: u32_of(r.get(4)?),
                    wins: r.get(5)?,
                    losses: r.get(6)?,
                    ties: r.get(7)?,
                    games: r.get(8)?,
                    submissions: u32_of(r.get(9)?),
                })
            },
        )?;
        Ok(Some(ExperimentArena {
            arena,
            link,
            ratings,
        }))
    }

    /// The newest arena of experiment `experiment_id`, in full.
    pub fn latest_experiment_arena(&self, experiment_id: &str) -> Result<Option<ExperimentArena>> {
        match self.experiment_arena_ids(experiment_id)?.into_iter().next() {
            Some(id) => self.experiment_arena(&id),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn record() -> ExperimentArena {
        let mut arena = crate::arena::tests::record();
        arena.summary.arena_id = "xarena-1".into();
        arena.ratings.clear();
        let rating = |variant: &str, rank: u32, rating: f64| VariantRatingRow {
            variant: variant.into(),
            rating,
            lower: rating - 20.0,
            upper: rating + 20.0,
            rank,
            wins: 1.0,
            losses: 1.0,
            ties: 0.0,
            games: 2.0,
            submissions: 1,
        };
        ExperimentArena {
            arena,
            link: ExperimentArenaLink {
                experiment_id: "copper".into(),
                tasks: 1,
                submissions: 2,
                left_out: 0,
                bootstrap_unit: "task".into(),
            },
            ratings: vec![rating("base", 1, 1010.0), rating("hot", 1, 990.0)],
        }
    }

    #[test]
    fn a_valid_record_passes_and_each_invalid_field_is_named() {
        validate(&record()).expect("valid");
        type Spoil = fn(&mut ExperimentArena);
        let cases: [(Spoil, &str); 8] = [
            (
                |r| r.arena.ratings = crate::arena::tests::record().ratings,
                "team ratings",
            ),
            (|r| r.link.experiment_id = " ".into(), "experiment_id"),
            (|r| r.link.bootstrap_unit = "pair".into(), "bootstrap_unit"),
            (|r| r.ratings[1].variant = "base".into(), "rated twice"),
            (|r| r.ratings[0].upper = f64::INFINITY, "upper"),
            (|r| r.ratings[0].lower = 5000.0, "lower"),
            (|r| r.ratings[1].rank = 0, "rank"),
            (|r| r.ratings[1].games = -2.0, "games"),
        ];
        for (spoil, field) in cases {
            let mut r = record();
            spoil(&mut r);
            let err = validate(&r).expect_err(field);
            assert!(matches!(err, StoreError::Invalid(_)), "{err}");
            assert!(err.to_string().contains(field), "{field}: {err}");
        }
        // the arena's own checks apply too
        let mut r = record();
        r.arena.games[0].verdict = Some("A>>>B".into());
        assert!(validate(&r).is_err());
    }

    #[test]
    fn an_experiment_arena_is_written_once_and_read_back_whole() {
        let conn = Connection::open_in_memory().expect("db");
        crate::schema::migrate(&conn, std::path::Path::new(":memory:")).expect("schema");
        let r = prepare(&record(), &PiiMasker::disabled()).expect("prepared");
        crate::writer::in_transaction(&conn, |c| insert(c, &r)).expect("inserted");
        let err = crate::writer::in_transaction(&conn, |c| insert(c, &r)).expect_err("again");
        assert!(err.is_duplicate_key(), "{err}");
        // the failed second write left nothing behind
        let n: i64 = conn
            .query_row("SELECT count(*) FROM experiment_arena_ratings", [], |r| {
                r.get(0)
            })
            .expect("count");
        assert_eq!(n, 2);
        // the database enforces the rating key on its own
        let err = conn
            .execute_batch(
                "INSERT INTO experiment_arena_ratings VALUES
                 ('xarena-1', 'base', 1, 0, 2, 1, 0, 0, 0, 0, 0)",
            )
            .expect_err("a second rating of one variant");
        assert!(err.to_string().contains("Constraint Error"), "{err}");
    }
}
