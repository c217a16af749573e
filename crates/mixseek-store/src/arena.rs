//! Pairwise arenas: the submissions of several teams (of one or more executions) compared two
//! by two by judge LLMs, each pair judged twice with the positions swapped, and rated with a
//! Bradley–Terry model. The arena engine (mixseek-orchestrator) computes an [`ArenaDetail`];
//! this module stores it (schema version 6: `arena_runs`, `arena_games`, `arena_ratings`) and
//! reads it back ([`Store::arenas`], [`Store::arena`], [`Store::latest_arena`]).
//!
//! An arena is written once, whole, by the writer thread
//! ([`StoreWriter::write_arena`](crate::StoreWriter::write_arena)): its three tables' rows in
//! one transaction, validated and masked first ([`prepare`]). Its rows are keyed by
//! `arena_id`, not by execution: the executions it compared are the JSON array
//! `arena_runs.execution_ids` (and `execution_id` of its games and ratings).
//!
//! No FOREIGN KEY ties `arena_games` / `arena_ratings` to `arena_runs`: DuckDB checks a
//! foreign key on every write, has no `ON DELETE CASCADE`, refuses to drop or rebuild a
//! referenced table (which a later upgrade may need, as version 5's rebuilt the round tables)
//! and refuses deleting a referenced row within the transaction that deletes its children.
//! The writer inserts an arena's rows together, in one transaction, from one record, so they
//! cannot disagree.

use crate::db::Store;
use crate::error::{Result, StoreError};
use crate::values::{TS, decode_json as decode, json_text, micros, query, u32_of, u64_i64, u64_of};
use chrono::{DateTime, Utc};
use duckdb::{Connection, Row, params};
use mixseek_core::PiiMasker;
use serde::{Deserialize, Serialize};

/// The verdicts a game may have (`arena_games.verdict`; NULL when the judge's answer could not
/// be parsed or the call failed): from "A is much better" to "B is much better".
pub const ARENA_VERDICTS: [&str; 5] = ["A>>B", "A>B", "A=B", "B>A", "B>>A"];

/// Whether the two games of a pair agree once the positions are swapped back
/// (`arena_games.agreement`): `agree`, `disagree`, or `incomplete` (a game has no verdict).
pub const ARENA_AGREEMENTS: [&str; 3] = ["agree", "disagree", "incomplete"];

/// The arena tables, in creation order.
pub(crate) const ARENA_TABLES: [&str; 3] = ["arena_runs", "arena_games", "arena_ratings"];

pub(crate) const ARENA_RUNS: &str = "
CREATE TABLE arena_runs (
    arena_id VARCHAR PRIMARY KEY,
    created_at TIMESTAMPTZ NOT NULL,
    user_prompt VARCHAR NOT NULL,
    execution_ids VARCHAR NOT NULL,
    judge_models VARCHAR NOT NULL,
    settings VARCHAR NOT NULL,
    pairs INTEGER NOT NULL,
    games INTEGER NOT NULL,
    parsed_games INTEGER NOT NULL,
    disagreeing_pairs INTEGER NOT NULL,
    regularized BOOLEAN NOT NULL,
    bootstrap_rounds INTEGER NOT NULL,
    confidence DOUBLE NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_usd DOUBLE
);
";

pub(crate) const ARENA_GAMES: &str = "
CREATE TABLE arena_games (
    arena_id VARCHAR NOT NULL,
    pair_index INTEGER NOT NULL,
    game INTEGER NOT NULL CHECK (game IN (1, 2)),
    judge VARCHAR NOT NULL,
    a_execution_id VARCHAR NOT NULL,
    a_team_id VARCHAR NOT NULL,
    b_execution_id VARCHAR NOT NULL,
    b_team_id VARCHAR NOT NULL,
    verdict VARCHAR CHECK (verdict IN ('A>>B', 'A>B', 'A=B', 'B>A', 'B>>A')),
    raw_output VARCHAR,
    agreement VARCHAR NOT NULL CHECK (agreement IN ('agree', 'disagree', 'incomplete')),
    error VARCHAR,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_usd DOUBLE,
    PRIMARY KEY (arena_id, pair_index, game, judge)
);
";

pub(crate) const ARENA_RATINGS: &str = "
CREATE TABLE arena_ratings (
    arena_id VARCHAR NOT NULL,
    execution_id VARCHAR NOT NULL,
    team_id VARCHAR NOT NULL,
    team_name VARCHAR NOT NULL,
    round_number INTEGER NOT NULL,
    rating DOUBLE NOT NULL,
    lower DOUBLE NOT NULL,
    upper DOUBLE NOT NULL,
    rank INTEGER NOT NULL,
    wins DOUBLE NOT NULL,
    losses DOUBLE NOT NULL,
    ties DOUBLE NOT NULL,
    games DOUBLE NOT NULL,
    PRIMARY KEY (arena_id, execution_id, team_id)
);
";

/// The arena tables with their DDL, in creation order.
pub(crate) const ARENA_DDL: [(&str, &str); 3] = [
    ("arena_runs", ARENA_RUNS),
    ("arena_games", ARENA_GAMES),
    ("arena_ratings", ARENA_RATINGS),
];

/// One game: a judge's comparison of two submissions in one order (`arena_games`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArenaGameRow {
    /// The pair (from 0 or 1, as the engine numbers them).
    pub pair_index: u32,
    /// 1, or 2 for the same pair with the positions swapped.
    pub game: u8,
    /// The judge (`provider:model`).
    pub judge: String,
    /// The execution of the submission shown as A.
    pub a_execution_id: String,
    /// The team of the submission shown as A.
    pub a_team_id: String,
    /// The execution of the submission shown as B.
    pub b_execution_id: String,
    /// The team of the submission shown as B.
    pub b_team_id: String,
    /// One of [`ARENA_VERDICTS`]; `None` when the answer could not be parsed or the call failed.
    pub verdict: Option<String>,
    /// The judge's answer (masked when the writer masks).
    pub raw_output: Option<String>,
    /// One of [`ARENA_AGREEMENTS`].
    pub agreement: String,
    /// Why the call failed or its answer could not be read (masked when the writer masks).
    pub error: Option<String>,
    /// Input tokens of the call.
    pub input_tokens: u64,
    /// Output tokens of the call.
    pub output_tokens: u64,
    /// Cost of the call in US dollars; `None` when unpriced.
    pub cost_usd: Option<f64>,
}

/// One submission's rating (`arena_ratings`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArenaRatingRow {
    /// The submission's execution.
    pub execution_id: String,
    /// The submission's team.
    pub team_id: String,
    /// The team's name.
    pub team_name: String,
    /// The round whose submission competed.
    pub round_number: u32,
    /// The Bradley–Terry rating.
    pub rating: f64,
    /// The interval's lower bound (at the arena's `confidence`).
    pub lower: f64,
    /// The interval's upper bound.
    pub upper: f64,
    /// 1 for the best.
    pub rank: u32,
    /// Games won (a game per judge and order).
    pub wins: f64,
    /// Games lost.
    pub losses: f64,
    /// Games tied.
    pub ties: f64,
    /// Games played with a verdict.
    pub games: f64,
}

/// An arena's `arena_runs` row: everything but its games and ratings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArenaSummary {
    /// The arena's id.
    pub arena_id: String,
    /// When the arena ran.
    #[serde(with = "mixseek_core::time::utc")]
    pub created_at: DateTime<Utc>,
    /// The task (masked when masking was on).
    pub user_prompt: String,
    /// The executions whose submissions competed.
    pub execution_ids: Vec<String>,
    /// The judges.
    pub judge_models: Vec<String>,
    /// The arena settings used.
    pub settings: serde_json::Value,
    /// Pairs compared.
    pub pairs: u32,
    /// Games played.
    pub games: u32,
    /// Games whose verdict could be read.
    pub parsed_games: u32,
    /// Pairs whose two games disagreed.
    pub disagreeing_pairs: u32,
    /// Whether the fit was regularized.
    pub regularized: bool,
    /// Bootstrap resamples behind the intervals.
    pub bootstrap_rounds: u32,
    /// The intervals' confidence level (e.g. 0.95).
    pub confidence: f64,
    /// Input tokens of every judge call.
    pub input_tokens: u64,
    /// Output tokens of every judge call.
    pub output_tokens: u64,
    /// Cost in US dollars; `None` when unpriced.
    pub cost_usd: Option<f64>,
}

/// A whole arena: what the engine computes, [`StoreWriter::write_arena`] stores and
/// [`Store::arena`] reads back. Its JSON: the summary's fields, then `ratings` and `game_rows`
/// (`games` is the summary's count).
///
/// [`StoreWriter::write_arena`]: crate::StoreWriter::write_arena
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArenaDetail {
    /// The `arena_runs` row.
    #[serde(flatten)]
    pub summary: ArenaSummary,
    /// By rank, then rating (highest first), execution id and team id.
    pub ratings: Vec<ArenaRatingRow>,
    /// By pair, game and judge.
    #[serde(rename = "game_rows")]
    pub games: Vec<ArenaGameRow>,
}

/// An arena's summary and ratings without its games (the `arena` of `show -f json`): the
/// summary's fields, then `ratings`.
pub(crate) fn serialize_brief<S: serde::Serializer>(
    arena: &Option<ArenaDetail>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Brief<'a> {
        #[serde(flatten)]
        summary: &'a ArenaSummary,
        ratings: &'a [ArenaRatingRow],
    }
    arena
        .as_ref()
        .map(|a| Brief {
            summary: &a.summary,
            ratings: &a.ratings,
        })
        .serialize(s)
}

impl ArenaDetail {
    /// In the order [`Store::arena`] reads it back: ratings by rank, then rating (highest
    /// first), execution id and team id; games by pair, game and judge.
    pub fn sorted(mut self) -> Self {
        self.ratings.sort_by(|a, b| {
            a.rank
                .cmp(&b.rank)
                .then(b.rating.total_cmp(&a.rating))
                .then_with(|| a.execution_id.cmp(&b.execution_id))
                .then_with(|| a.team_id.cmp(&b.team_id))
        });
        self.games.sort_by(|a, b| {
            (a.pair_index, a.game, a.judge.as_str()).cmp(&(b.pair_index, b.game, b.judge.as_str()))
        });
        self
    }
}

fn invalid(arena_id: &str, message: String) -> StoreError {
    StoreError::Invalid(format!("arena {arena_id}: {message}"))
}

/// The numbers of one rating row (a team's or a variant's): a finite rating and interval with
/// `lower ≤ upper`, a rank from 1, and finite, non-negative wins, losses, ties and games. The
/// message names `at` and the field.
pub(crate) fn check_rating(
    at: &str,
    [rating, lower, upper]: [f64; 3],
    rank: u32,
    [wins, losses, ties, games]: [f64; 4],
) -> std::result::Result<(), String> {
    for (field, v) in [("rating", rating), ("lower", lower), ("upper", upper)] {
        if !v.is_finite() {
            return Err(format!("{at}: {field} must be a finite number, got {v}"));
        }
    }
    if lower > upper {
        return Err(format!(
            "{at}: lower ({lower}) must not be above upper ({upper})"
        ));
    }
    if rank < 1 {
        return Err(format!("{at}: rank must be 1 or more, got 0"));
    }
    for (field, v) in [
        ("wins", wins),
        ("losses", losses),
        ("ties", ties),
        ("games", games),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(format!(
                "{at}: {field} must be a finite, non-negative count, got {v}"
            ));
        }
    }
    Ok(())
}

/// A count as INTEGER (`field` names it in the error).
fn int(arena_id: &str, field: &str, v: u32) -> Result<i32> {
    i32::try_from(v).map_err(|_| invalid(arena_id, format!("{field} {v} is out of range")))
}

/// Checks a record before it is written (any problem is [`StoreError::Invalid`] naming the
/// field): a non-empty id; a confidence strictly between 0 and 1; costs finite and not
/// negative; each game numbered 1 or 2, with a verdict of [`ARENA_VERDICTS`] (or none) and an
/// agreement of [`ARENA_AGREEMENTS`]; finite ratings with `lower <= upper`, ranks from 1, and
/// finite, non-negative game counts; every game's and rating's execution among
/// `execution_ids`.
pub(crate) fn validate(r: &ArenaDetail) -> Result<()> {
    let id = r.summary.arena_id.as_str();
    if id.trim().is_empty() {
        return Err(StoreError::Invalid("arena_id must not be empty".into()));
    }
    if !(r.summary.confidence.is_finite()
        && r.summary.confidence > 0.0
        && r.summary.confidence < 1.0)
    {
        return Err(invalid(
            id,
            format!(
                "confidence must be between 0 and 1 (e.g. 0.95), got {}",
                r.summary.confidence
            ),
        ));
    }
    let check_cost = |field: &str, c: Option<f64>| match c {
        Some(c) if !(c.is_finite() && c >= 0.0) => Err(invalid(
            id,
            format!("{field} must be a finite, non-negative amount, got {c}"),
        )),
        _ => Ok(()),
    };
    check_cost("cost_usd", r.summary.cost_usd)?;
    if !r.summary.settings.is_object() {
        return Err(invalid(id, "settings must be a JSON object".into()));
    }
    for field in [
        ("pairs", r.summary.pairs),
        ("games", r.summary.games),
        ("parsed_games", r.summary.parsed_games),
        ("disagreeing_pairs", r.summary.disagreeing_pairs),
        ("bootstrap_rounds", r.summary.bootstrap_rounds),
    ] {
        int(id, field.0, field.1)?;
    }
    let known = |execution_id: &str| r.summary.execution_ids.iter().any(|e| e == execution_id);
    for g in &r.games {
        let at = format!("game {} of pair {} ({})", g.game, g.pair_index, g.judge);
        int(id, &format!("{at}: pair_index"), g.pair_index)?;
        if !matches!(g.game, 1 | 2) {
            return Err(invalid(
                id,
                format!("{at}: game must be 1 or 2 (2: positions swapped)"),
            ));
        }
        if let Some(v) = &g.verdict
            && !ARENA_VERDICTS.contains(&v.as_str())
        {
            return Err(invalid(
                id,
                format!(
                    "{at}: verdict `{v}` is not one of {} (or none)",
                    ARENA_VERDICTS.join(", ")
                ),
            ));
        }
        if !ARENA_AGREEMENTS.contains(&g.agreement.as_str()) {
            return Err(invalid(
                id,
                format!(
                    "{at}: agreement `{}` is not one of {}",
                    g.agreement,
                    ARENA_AGREEMENTS.join(", ")
                ),
            ));
        }
        for e in [&g.a_execution_id, &g.b_execution_id] {
            if !known(e) {
                return Err(invalid(
                    id,
                    format!("{at}: execution {e} is not among execution_ids"),
                ));
            }
        }
        check_cost(&format!("{at}: cost_usd"), g.cost_usd)?;
    }
    for t in &r.ratings {
        let at = format!(
            "rating of team {} (execution {})",
            t.team_id, t.execution_id
        );
        if !known(&t.execution_id) {
            return Err(invalid(
                id,
                format!("{at}: execution_id is not among execution_ids"),
            ));
        }
        int(id, &format!("{at}: round_number"), t.round_number)?;
        int(id, &format!("{at}: rank"), t.rank)?;
        check_rating(
            &at,
            [t.rating, t.lower, t.upper],
            t.rank,
            [t.wins, t.losses, t.ties, t.games],
        )
        .map_err(|m| invalid(id, m))?;
    }
    Ok(())
}

/// The record as it is written: validated ([`validate`]), its user prompt, judge answers and
/// errors masked with `masker`.
pub(crate) fn prepare(record: &ArenaDetail, masker: &PiiMasker) -> Result<ArenaDetail> {
    validate(record)?;
    let mut r = record.clone();
    if !masker.is_enabled() {
        return Ok(r);
    }
    let mask = |t: &mut String| {
        if let std::borrow::Cow::Owned(m) = masker.mask(t) {
            *t = m;
        }
    };
    mask(&mut r.summary.user_prompt);
    for g in &mut r.games {
        if let Some(t) = g.raw_output.as_mut() {
            mask(t);
        }
        if let Some(t) = g.error.as_mut() {
            mask(t);
        }
    }
    Ok(r)
}

/// Inserts a prepared arena's rows (inside the writer's transaction): its `arena_runs` row,
/// then its games and ratings with DuckDB's appender. A second arena with the same id is
/// refused by the table's PRIMARY KEY.
pub(crate) fn insert(conn: &Connection, r: &ArenaDetail) -> Result<()> {
    let id = r.summary.arena_id.as_str();
    conn.execute(
        &format!(
            "INSERT INTO arena_runs (arena_id, created_at, user_prompt, execution_ids, judge_models,
                 settings, pairs, games, parsed_games, disagreeing_pairs, regularized,
                 bootstrap_rounds, confidence, input_tokens, output_tokens, cost_usd)
             VALUES (?, {TS}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        ),
        params![
            id,
            micros(&r.summary.created_at),
            r.summary.user_prompt,
            json_text(&r.summary.execution_ids, "arena_runs.execution_ids")?,
            json_text(&r.summary.judge_models, "arena_runs.judge_models")?,
            json_text(&r.summary.settings, "arena_runs.settings")?,
            int(id, "pairs", r.summary.pairs)?,
            int(id, "games", r.summary.games)?,
            int(id, "parsed_games", r.summary.parsed_games)?,
            int(id, "disagreeing_pairs", r.summary.disagreeing_pairs)?,
            r.summary.regularized,
            int(id, "bootstrap_rounds", r.summary.bootstrap_rounds)?,
            r.summary.confidence,
            u64_i64(r.summary.input_tokens),
            u64_i64(r.summary.output_tokens),
            r.summary.cost_usd,
        ],
    )
    .map_err(StoreError::db(format!("writing arena {id} (arena_runs)")))?;
    if !r.games.is_empty() {
        let mut app = conn
            .appender("arena_games")
            .map_err(StoreError::db("opening the arena_games appender"))?;
        for g in &r.games {
            app.append_row(params![
                id,
                int(id, "pair_index", g.pair_index)?,
                i32::from(g.game),
                g.judge,
                g.a_execution_id,
                g.a_team_id,
                g.b_execution_id,
                g.b_team_id,
                g.verdict,
                g.raw_output,
                g.agreement,
                g.error,
                u64_i64(g.input_tokens),
                u64_i64(g.output_tokens),
                g.cost_usd,
            ])
            .map_err(StoreError::db(format!("writing arena {id} (arena_games)")))?;
        }
        app.flush()
            .map_err(StoreError::db(format!("writing arena {id} (arena_games)")))?;
    }
    if !r.ratings.is_empty() {
        let mut app = conn
            .appender("arena_ratings")
            .map_err(StoreError::db("opening the arena_ratings appender"))?;
        for t in &r.ratings {
            app.append_row(params![
                id,
                t.execution_id,
                t.team_id,
                t.team_name,
                int(id, "round_number", t.round_number)?,
                t.rating,
                t.lower,
                t.upper,
                int(id, "rank", t.rank)?,
                t.wins,
                t.losses,
                t.ties,
                t.games,
            ])
            .map_err(StoreError::db(format!(
                "writing arena {id} (arena_ratings)"
            )))?;
        }
        app.flush().map_err(StoreError::db(format!(
            "writing arena {id} (arena_ratings)"
        )))?;
    }
    tracing::debug!(
        arena_id = id,
        games = r.games.len(),
        ratings = r.ratings.len(),
        "arena stored"
    );
    Ok(())
}

/// An `arena_runs` row as read, its JSON columns still text.
struct RawSummary {
    summary: ArenaSummary,
    execution_ids: String,
    judge_models: String,
    settings: String,
}

const SUMMARY_COLUMNS: &str = "arena_id, created_at, user_prompt, execution_ids, judge_models,
    settings, pairs, games, parsed_games, disagreeing_pairs, regularized, bootstrap_rounds,
    confidence, input_tokens, output_tokens, cost_usd";

fn raw_summary(r: &Row<'_>) -> duckdb::Result<RawSummary> {
    Ok(RawSummary {
        summary: ArenaSummary {
            arena_id: r.get(0)?,
            created_at: crate::read::ts(r, 1)?.unwrap_or_default(),
            user_prompt: r.get(2)?,
            execution_ids: Vec::new(),
            judge_models: Vec::new(),
            settings: serde_json::Value::Null,
            pairs: u32_of(r.get(6)?),
            games: u32_of(r.get(7)?),
            parsed_games: u32_of(r.get(8)?),
            disagreeing_pairs: u32_of(r.get(9)?),
            regularized: r.get(10)?,
            bootstrap_rounds: u32_of(r.get(11)?),
            confidence: r.get(12)?,
            input_tokens: u64_of(r.get(13)?),
            output_tokens: u64_of(r.get(14)?),
            cost_usd: r.get(15)?,
        },
        execution_ids: r.get(3)?,
        judge_models: r.get(4)?,
        settings: r.get(5)?,
    })
}

impl RawSummary {
    fn decode(self) -> Result<ArenaSummary> {
        let mut s = self.summary;
        s.execution_ids = decode(&self.execution_ids, "arena_runs.execution_ids")?;
        s.judge_models = decode(&self.judge_models, "arena_runs.judge_models")?;
        s.settings = decode(&self.settings, "arena_runs.settings")?;
        Ok(s)
    }
}

impl Store {
    /// A connection to read the arena tables with, or `None` on a database without them (a
    /// schema older than version 6: the reads then find no arena).
    fn arena_connection(&self) -> Result<Option<Connection>> {
        let conn = self.connection()?;
        Ok(crate::schema::table_exists(&conn, "arena_runs")?.then_some(conn))
    }

    /// The arenas in which a submission of `execution_id` competed, newest first (ties by
    /// arena id). Arenas of an experiment's variants (`mixseek experiment arena`, see
    /// `experiment_arena.rs`) are left out: they rate variants, not the execution's teams.
    pub fn arenas(&self, execution_id: &str) -> Result<Vec<ArenaSummary>> {
        let Some(conn) = self.arena_connection()? else {
            return Ok(Vec::new());
        };
        // The bundled DuckDB has no JSON functions: the JSON text is searched for the id as
        // JSON writes it, and the decoded array decides.
        let needle = json_text(execution_id, "an execution id")?;
        let not_experiment = if crate::schema::table_exists(&conn, "experiment_arenas")? {
            "AND arena_id NOT IN (SELECT arena_id FROM experiment_arenas)"
        } else {
            ""
        };
        let rows = query(
            &conn,
            "the arenas",
            &format!(
                "SELECT {SUMMARY_COLUMNS} FROM arena_runs WHERE contains(execution_ids, ?)
                 {not_experiment}
                 ORDER BY created_at DESC, arena_id"
            ),
            [needle],
            raw_summary,
        )?;
        let mut out = Vec::new();
        for raw in rows {
            let s = raw.decode()?;
            if s.execution_ids.iter().any(|e| e == execution_id) {
                out.push(s);
            }
        }
        Ok(out)
    }

    /// One arena with its ratings and games; `None` when there is none with this id.
    pub fn arena(&self, arena_id: &str) -> Result<Option<ArenaDetail>> {
        let Some(conn) = self.arena_connection()? else {
            return Ok(None);
        };
        let Some(raw) = query(
            &conn,
            "the arena",
            &format!("SELECT {SUMMARY_COLUMNS} FROM arena_runs WHERE arena_id = ?"),
            [arena_id],
            raw_summary,
        )?
        .into_iter()
        .next() else {
            return Ok(None);
        };
        let summary = raw.decode()?;
        let ratings = query(
            &conn,
            "the arena's ratings",
            "SELECT execution_id, team_id, team_name, round_number, rating, lower, upper, rank,
                 wins, losses, ties, games
             FROM arena_ratings WHERE arena_id = ?
             ORDER BY rank, rating DESC, execution_id, team_id",
            [arena_id],
            |r| {
                Ok(ArenaRatingRow {
                    execution_id: r.get(0)?,
                    team_id: r.get(1)?,
                    team_name: r.get(2)?,
                    round_number: u32_of(r.get(3)?),
                    rating: r.get(4)?,
                    lower: r.get(5)?,
                    upper: r.get(6)?,
                    rank: u32_of(r.get(7)?),
                    wins: r.get(8)?,
                    losses: r.get(9)?,
                    ties: r.get(10)?,
                    games: r.get(11)?,
                })
            },
        )?;
        let games = query(
            &conn,
            "the arena's games",
            "SELECT pair_index, game, judge, a_execution_id, a_team_id, b_execution_id, b_team_id,
                 verdict, raw_output, agreement, error, input_tokens, output_tokens, cost_usd
             FROM arena_games WHERE arena_id = ?
             ORDER BY pair_index, game, judge",
            [arena_id],
            |r| {
                Ok(ArenaGameRow {
                    pair_index: u32_of(r.get(0)?),
                    game: u8::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                    judge: r.get(2)?,
                    a_execution_id: r.get(3)?,
                    a_team_id: r.get(4)?,
                    b_execution_id: r.get(5)?,
                    b_team_id: r.get(6)?,
                    verdict: r.get(7)?,
                    raw_output: r.get(8)?,
                    agreement: r.get(9)?,
                    error: r.get(10)?,
                    input_tokens: u64_of(r.get(11)?),
                    output_tokens: u64_of(r.get(12)?),
                    cost_usd: r.get(13)?,
                })
            },
        )?;
        Ok(Some(ArenaDetail {
            summary,
            ratings,
            games,
        }))
    }

    /// The newest arena in which a submission of `execution_id` competed, in full.
    pub fn latest_arena(&self, execution_id: &str) -> Result<Option<ArenaDetail>> {
        match self.arenas(execution_id)?.into_iter().next() {
            Some(s) => self.arena(&s.arena_id),
            None => Ok(None),
        }
    }

    /// The ids of the arenas in which a submission of one of `executions` competed (for
    /// exports), sorted.
    pub(crate) fn arena_ids_of(&self, executions: &[String]) -> Result<Vec<String>> {
        let Some(conn) = self.arena_connection()? else {
            return Ok(Vec::new());
        };
        let rows = query(
            &conn,
            "the arenas",
            "SELECT arena_id, execution_ids FROM arena_runs ORDER BY arena_id",
            [],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
        )?;
        let mut out = Vec::new();
        for (arena_id, ids) in rows {
            let ids: Vec<String> = decode(&ids, "arena_runs.execution_ids")?;
            if ids.iter().any(|e| executions.contains(e)) {
                out.push(arena_id);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn record() -> ArenaDetail {
        let game = |pair: u32, game: u8, verdict: Option<&str>| ArenaGameRow {
            pair_index: pair,
            game,
            judge: "mock:judge".into(),
            a_execution_id: "e".into(),
            a_team_id: if game == 1 { "a" } else { "b" }.into(),
            b_execution_id: "e".into(),
            b_team_id: if game == 1 { "b" } else { "a" }.into(),
            verdict: verdict.map(str::to_string),
            raw_output: Some(format!("[[{}]]", verdict.unwrap_or("?"))),
            agreement: "agree".into(),
            error: None,
            input_tokens: 10,
            output_tokens: 5,
            cost_usd: None,
        };
        let rating = |team: &str, rank: u32, rating: f64| ArenaRatingRow {
            execution_id: "e".into(),
            team_id: team.into(),
            team_name: team.to_uppercase(),
            round_number: 1,
            rating,
            lower: rating - 10.0,
            upper: rating + 10.0,
            rank,
            wins: 1.0,
            losses: 1.0,
            ties: 0.0,
            games: 2.0,
        };
        ArenaDetail {
            summary: ArenaSummary {
                arena_id: "arena-1".into(),
                created_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default(),
                user_prompt: "task".into(),
                execution_ids: vec!["e".into()],
                judge_models: vec!["mock:judge".into()],
                settings: serde_json::json!({"bootstrap_rounds": 100}),
                pairs: 1,
                games: 2,
                parsed_games: 2,
                disagreeing_pairs: 0,
                regularized: false,
                bootstrap_rounds: 100,
                confidence: 0.95,
                input_tokens: 20,
                output_tokens: 10,
                cost_usd: None,
            },
            games: vec![game(0, 1, Some("A>B")), game(0, 2, Some("B>A"))],
            ratings: vec![rating("a", 1, 1010.0), rating("b", 2, 990.0)],
        }
    }

    #[test]
    fn a_valid_record_passes_and_each_invalid_field_is_named() {
        validate(&record()).expect("valid");
        type Spoil = fn(&mut ArenaDetail);
        let cases: [(Spoil, &str); 10] = [
            (|r| r.games[0].verdict = Some("A>>>B".into()), "verdict"),
            (|r| r.games[1].agreement = "maybe".into(), "agreement"),
            (|r| r.games[0].game = 3, "game must be 1 or 2"),
            (|r| r.ratings[0].rating = f64::NAN, "rating"),
            (|r| r.ratings[1].lower = 2000.0, "lower"),
            (|r| r.ratings[0].rank = 0, "rank"),
            (|r| r.summary.confidence = 95.0, "confidence"),
            (|r| r.ratings[0].execution_id = "x".into(), "execution_id"),
            (|r| r.summary.arena_id = " ".into(), "arena_id"),
            (|r| r.ratings[0].wins = -1.0, "wins"),
        ];
        for (spoil, field) in cases {
            let mut r = record();
            spoil(&mut r);
            let err = validate(&r).expect_err(field);
            assert!(matches!(err, StoreError::Invalid(_)), "{err}");
            assert!(err.to_string().contains(field), "{field}: {err}");
        }
        // no verdict is fine (an unparseable answer)
        let mut r = record();
        r.games[0].verdict = None;
        r.games[0].agreement = "incomplete".into();
        validate(&r).expect("no verdict");
    }

    #[test]
    fn an_arena_is_written_once() {
        let conn = Connection::open_in_memory().expect("db");
        crate::schema::migrate(&conn, std::path::Path::new(":memory:")).expect("schema");
        let r = prepare(&record(), &PiiMasker::disabled()).expect("prepared");
        crate::writer::in_transaction(&conn, |c| insert(c, &r)).expect("inserted");
        let err = crate::writer::in_transaction(&conn, |c| insert(c, &r)).expect_err("again");
        assert!(err.is_duplicate_key(), "{err}");
    }
}
