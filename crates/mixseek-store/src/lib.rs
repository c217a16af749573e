//! mixseek-store owns the workspace database `WORKSPACE/mixseek.db` (embedded DuckDB): its
//! schema and migrations, the one writer per process that records a run's events, the reads
//! (prompt ranking, team history, round detail, executions, leaderboards), PII masking of
//! stored text, exports (JSON, CSV, Parquet) and the report formatting behind `mixseek
//! leaderboard | executions | history | show | export | report` (tables, JSON, CSV, Markdown,
//! and a self-contained HTML report).
//!
//! # Opening
//! * [`Store::open`]`(path)` — read-write; creates the file and schema, upgrades an older one
//!   (the original Python MixSeek's schema included), refuses a newer one
//!   ([`StoreError::SchemaTooNew`]). One DuckDB instance per file per process: opening the same
//!   path again returns the same instance; connections are `try_clone`s of it.
//! * [`Store::open_read_only`]`(path)` — for report commands: [`StoreError::NotFound`] when
//!   there is no database yet, [`StoreError::Locked`] when another process is writing (DuckDB
//!   allows many readers or one writer per file). Every [`StoreError`] has a `hint()` and a
//!   [`StoreError::class`] ([`ErrorClass`]: bad input, busy, I/O, internal). A file that is
//!   not a DuckDB database, or another program's DuckDB file, is refused with a message
//!   saying so. A read-only open never writes: a file of an older schema (the original's
//!   included) is read from an upgraded copy in memory ([`Store::read_copy`]). Only
//!   [`Store::open`] upgrades a file, after copying it to `mixseek.db.v<N>.bak`
//!   ([`Store::migration`] tells what the upgrade did).
//! * [`Store::status`]`(path)` — a file's schema version, origin and what an upgrade would
//!   change ([`DbStatus`], `mixseek db status`), without writing it;
//!   [`Store::schema_version_of`] the version alone, cheaply (to announce an upgrade).
//! * [`Store::select`] runs one query in a read-only transaction (tests, diagnostics); there
//!   is no public raw connection: every write goes through the writer.
//! * [`db_path`]`(workspace)` — `workspace/mixseek.db`.
//!
//! # Writing: [`StoreWriter`] (an [`mixseek_core::EventSink`])
//! `store.writer(PiiMasker)?` starts the process's writer thread (later calls return handles
//! on the same thread, each masking with its own masker; a writer asked for while the previous
//! thread is still committing waits for it, so only one thread ever writes; `writer_with_clock`
//! fixes the clock that stamps `created_at` / `updated_at`). `emit(&event)` returns once the
//! event's rows are committed:
//! * `ExecutionStarted` → `execution_summary` row, status `running`, config hash, teams;
//! * `SubmissionReady` carrying its `SubmittedRound` (the leader answered; the evaluation may
//!   still fail) → the round's `round_history` row only (prompt, submission, leader transcript,
//!   member submissions): the round is kept but not completed (no score, not ranked, never the
//!   best round, not in `completed_rounds`); a key already evaluated is left as it is;
//! * `Evaluated(RoundRecord)` → the round's `round_history` + `leader_board` + `round_status`
//!   rows in one transaction (upserts on (execution_id, team_id, round_number); it overwrites
//!   the `round_history` row of its `SubmissionReady`);
//! * `Judged` → the round's decision in `round_status` (and the judgment's usage);
//! * `LlmCall` → queued, appended to `llm_calls` with the next batch (`flush()` to wait);
//! * `TeamFinished` → the best round gets `final_submission = TRUE` and the exit reason;
//! * `ExecutionFinished` → the `execution_summary` row is completed.
//!
//! [`StoreWriter::write_arena`]`(&`[`ArenaDetail`]`)` stores a pairwise arena (schema version
//! 6: `arena_runs`, `arena_games`, `arena_ratings`) in one transaction, validated (an invalid
//! verdict, agreement, game number, rating or rank is [`StoreError::Invalid`] naming the
//! field) and masked (user prompt, judge answers, errors); an arena id already stored is
//! refused by the database. [`StoreWriter::write_themes`]`(&`[`ThemeAnalysis`]`)` stores a
//! theme analysis of judge comments (schema version 7: `theme_analyses`, `comment_themes`) the
//! same way. Experiments (schema version 8): [`StoreWriter::write_experiment`]`(&`[`ExperimentRecord`]`)`,
//! [`StoreWriter::write_experiment_item`]`(&`[`ExperimentItem`]`)` (which execution plays a
//! task × variant × repeat) and [`StoreWriter::write_attachments`] (an execution's attached
//! documents as extracted text, masked; never the raw file). Arenas of an experiment's
//! variants (schema version 9: `experiment_arenas`, `experiment_arena_ratings`, with the
//! arena's own `arena_runs` and `arena_games` rows):
//! [`StoreWriter::write_experiment_arena`]`(&`[`ExperimentArena`]`)`, in one transaction.
//!
//! Everything queued when the thread wakes is committed in one transaction (a bulk
//! `write_all` fills transactions of two DuckDB row groups, which DuckDB writes straight to the
//! file); a committed round survives the process being killed. The database keeps each round
//! key to one row (schema version 5 declares the keys; the writer upserts through them). Transient
//! failures are attempted 3 times (sleeping 1 s, then 2 s); validation errors (e.g.
//! `confidence_score` outside 0..=1) fail at once.
//!
//! # Reading (blocking; `*_async` variants run on tokio's blocking pool)
//! * [`Store::ranking`]`(execution_id) -> Vec<`[`RankingEntry`]`>` — prompt ranking: best score
//!   per team, number of rounds, best first, ties by team id;
//! * [`Store::team_rounds`]`(execution_id, team_id) -> Vec<`[`CompletedRound`]`>` (each with
//!   a `mixseek_core::RoundState`, the stored decision and usage);
//!   [`Store::completed_rounds`]`(execution_id)` for all teams (resume);
//! * [`Store::execution_state`]`(id) -> Option<`[`ExecutionState`]`>` — status, config hash,
//!   teams (for `mixseek exec --resume`);
//! * [`Store::round_detail`], [`Store::executions`], [`Store::execution_summary`],
//!   [`Store::execution_overview`], [`Store::leaderboard`] (per execution, latest, or across
//!   executions), [`Store::history`], [`Store::resolve_execution`] (unique id prefixes).
//! * Arenas: [`Store::arenas`]`(execution_id)` (newest first), [`Store::arena`]`(arena_id) ->
//!   Option<`[`ArenaDetail`]`>`, [`Store::latest_arena`]`(execution_id)`. `execution_overview`
//!   carries the latest arena, which `show` and the HTML report display.
//! * Theme analyses: [`Store::theme_analyses`]`(execution_id)` (newest first),
//!   [`Store::theme_analysis`]`(analysis_id)`, [`Store::latest_theme_analysis`]; the HTML
//!   report shows the latest.
//! * Experiments: [`Store::experiments`], [`Store::experiment`]`(name)`,
//!   [`Store::experiment_items`]`(name) -> Vec<`[`ItemState`]`>` (each item with its execution's
//!   status, score and usage); [`Store::attachments`]`(execution_id)`;
//!   [`Store::experiment_arena_ids`]`(name)` (newest first), [`Store::experiment_arena`],
//!   [`Store::latest_experiment_arena`]`(name) -> Option<`[`ExperimentArena`]`>`.
//! * [`merge::merge`] copies the executions of other database files (experiment shards) into
//!   this one, idempotently.
//!
//! Reads of completed rounds (ranking, `team_rounds`, `completed_rounds`, leaderboards,
//! executions) start from `leader_board`. `history`, `round_detail`, `round_details` and
//! `execution_overview` also show rounds that were not evaluated (`evaluated: false`, no
//! score). Metrics that failed and were skipped (`"status": "failed"` in `score_details`) read
//! as [`MetricLine`]s with an `error` and no score.
//!
//! # Reports
//! [`report`] renders each command's output as a `String` in a [`report::Format`]
//! (table, JSON, CSV, Markdown) and the HTML report; [`export`] writes JSON / CSV / Parquet.
//!
//! The schema is documented in `docs/duckdb.md` (how to open the file with the DuckDB CLI or
//! Python, too).

#![warn(missing_docs, unreachable_pub)]

mod agreement;
mod arena;
mod backup;
mod db;
mod error;
mod experiment;
mod experiment_arena;
mod fault;
mod model;
mod read;
mod rounds;
mod schema;
mod status;
mod themes;
mod values;
mod write;
mod writer;

// Two namespaces stay public: each holds a family of functions named after what they
// render or write (`report::leaderboard`, `export::parquet`, …).
pub mod export;
pub mod merge;
pub mod report;

pub use agreement::MetricAgreement;
pub use arena::{
    ARENA_AGREEMENTS, ARENA_VERDICTS, ArenaDetail, ArenaGameRow, ArenaRatingRow, ArenaSummary,
};
pub use backup::next_backup_path;
pub use db::{DB_FILE_NAME, RUN_MEMORY_LIMIT, Store, WRITER_WAIT, db_path};
pub use error::{DuckDbError, ErrorClass, Result, StoreError};
pub use experiment::{ExperimentItem, ExperimentListing, ExperimentRecord, ItemState};
pub use experiment_arena::{
    BOOTSTRAP_UNITS, ExperimentArena, ExperimentArenaLink, VariantRatingRow,
};
pub use model::{
    CompletedRound, ExecutionOverview, ExecutionRow, ExecutionState, HistoryRow, LeaderboardRow,
    LeaderboardScope, MetricLine, RankingEntry, RoundDetail, RoundScore, RoundUsage,
    StoredDecision, TeamOverview,
};
pub use schema::{DroppedDuplicates, MigrationReport, RenumberedIds, SCHEMA_VERSION, TABLES};
pub use status::{DbOrigin, DbStatus, UpgradePlan, VersionEntry};
pub use themes::{
    CONFIDENCE_LABELS, THEME_KINDS, THEME_SEVERITIES, THEME_SOURCES, ThemeAnalysis,
    ThemeAnalysisSummary, ThemeEvidence, ThemeRow,
};
pub use writer::{Clock, MAX_TX_ROUNDS, StoreWriter};
