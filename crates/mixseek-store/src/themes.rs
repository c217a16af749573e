//! Themes of judge comments: what the judges of an execution keep criticising or praising,
//! per team and metric across rounds (`mixseek analyze`). The engine (mixseek-orchestrator)
//! computes a [`ThemeAnalysis`]; this module stores it (schema version 7: `theme_analyses`,
//! one row per analysis, and `comment_themes`, one row per theme) and reads it back
//! ([`Store::theme_analyses`], [`Store::theme_analysis`], [`Store::latest_theme_analysis`]).
//!
//! An analysis is written once, whole, by the writer thread
//! ([`StoreWriter::write_themes`](crate::StoreWriter::write_themes)), validated and masked
//! first ([`prepare`]). As with the arena tables, no FOREIGN KEY ties `comment_themes` to
//! `theme_analyses` (see `arena.rs` for why); the writer inserts both from one record in one
//! transaction.

use crate::db::Store;
use crate::error::{Result, StoreError};
use crate::values::{TS, decode_json as decode, json_text, micros, query, u32_of, u64_i64, u64_of};
use chrono::{DateTime, Utc};
use duckdb::{Connection, Row, params};
use mixseek_core::PiiMasker;
use serde::{Deserialize, Serialize};

/// Where a theme comes from (`comment_themes.source`): the LLM step, or the keyword step.
pub const THEME_SOURCES: [&str; 2] = ["llm", "keywords"];

/// What a theme is (`comment_themes.kind`): a criticism or a praise (named by the LLM step),
/// or a keyword (the keyword step cannot tell).
pub const THEME_KINDS: [&str; 3] = ["criticism", "praise", "keyword"];

/// How serious a theme is (`comment_themes.severity`; NULL for keywords).
pub const THEME_SEVERITIES: [&str; 3] = ["high", "medium", "low"];

/// The confidence labels (`comment_themes.confidence_label`), from seed 003's rule.
pub const CONFIDENCE_LABELS: [&str; 3] = ["High", "Medium", "Low"];

/// The theme tables, in creation order.
pub(crate) const THEME_TABLES: [&str; 2] = ["theme_analyses", "comment_themes"];

pub(crate) const THEME_ANALYSES: &str = "
CREATE TABLE theme_analyses (
    analysis_id VARCHAR PRIMARY KEY,
    execution_id VARCHAR NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    team_filter VARCHAR,
    model VARCHAR,
    teams INTEGER NOT NULL,
    rounds_analysed INTEGER NOT NULL,
    comments INTEGER NOT NULL,
    llm_calls INTEGER NOT NULL,
    failed_calls INTEGER NOT NULL,
    rejected_quotes INTEGER NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_usd DOUBLE
);
";

pub(crate) const COMMENT_THEMES: &str = "
CREATE TABLE comment_themes (
    analysis_id VARCHAR NOT NULL,
    theme_index INTEGER NOT NULL,
    team_id VARCHAR NOT NULL,
    team_name VARCHAR NOT NULL,
    metric_name VARCHAR NOT NULL,
    source VARCHAR NOT NULL CHECK (source IN ('llm', 'keywords')),
    theme VARCHAR NOT NULL,
    kind VARCHAR NOT NULL CHECK (kind IN ('criticism', 'praise', 'keyword')),
    summary VARCHAR,
    severity VARCHAR CHECK (severity IN ('high', 'medium', 'low')),
    rounds VARCHAR NOT NULL,
    frequency DOUBLE NOT NULL CHECK (frequency >= 0 AND frequency <= 1),
    evidence VARCHAR NOT NULL,
    confidence DOUBLE NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
    confidence_label VARCHAR NOT NULL CHECK (confidence_label IN ('High', 'Medium', 'Low')),
    keyword_score DOUBLE,
    PRIMARY KEY (analysis_id, theme_index)
);
";

/// The theme tables with their DDL, in creation order.
pub(crate) const THEME_DDL: [(&str, &str); 2] = [
    ("theme_analyses", THEME_ANALYSES),
    ("comment_themes", COMMENT_THEMES),
];

/// One quote supporting a theme: a passage of a judge's comment on a round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThemeEvidence {
    /// The round whose comment holds the quote.
    pub round_number: u32,
    /// The passage, verbatim from the stored comment.
    pub quote: String,
}

/// One theme of one team's comments on one metric (`comment_themes`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThemeRow {
    /// The team.
    pub team_id: String,
    /// The team's name.
    pub team_name: String,
    /// The metric whose comments it comes from.
    pub metric_name: String,
    /// One of [`THEME_SOURCES`].
    pub source: String,
    /// The theme's name (a keyword phrase for the keyword step).
    pub theme: String,
    /// One of [`THEME_KINDS`].
    pub kind: String,
    /// The LLM's one-sentence summary; `None` for keywords.
    pub summary: Option<String>,
    /// One of [`THEME_SEVERITIES`]; `None` for keywords.
    pub severity: Option<String>,
    /// The rounds it was seen in, ascending.
    pub rounds: Vec<u32>,
    /// The share of the team's analysed rounds it was seen in (0..=1).
    pub frequency: f64,
    /// Verified quotes.
    pub evidence: Vec<ThemeEvidence>,
    /// `0.7 × frequency + 0.3 × min(quotes / 3, 1)` (0..=1).
    pub confidence: f64,
    /// One of [`CONFIDENCE_LABELS`].
    pub confidence_label: String,
    /// The keyword's RAKE score; `None` for the LLM's themes.
    pub keyword_score: Option<f64>,
}

/// An analysis's `theme_analyses` row: everything but its themes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThemeAnalysisSummary {
    /// The analysis's id.
    pub analysis_id: String,
    /// The execution whose comments were analysed.
    pub execution_id: String,
    /// When it ran.
    #[serde(with = "mixseek_core::time::utc")]
    pub created_at: DateTime<Utc>,
    /// The team analysed when one was chosen (`--team`); `None`: every team.
    pub team_filter: Option<String>,
    /// The model of the LLM step; `None` when only keywords were extracted.
    pub model: Option<String>,
    /// Teams analysed.
    pub teams: u32,
    /// Rounds with at least one judge comment.
    pub rounds_analysed: u32,
    /// Comments read (a metric's comment on a round; a jury's judges count once each).
    pub comments: u32,
    /// Calls made by the LLM step.
    pub llm_calls: u32,
    /// Calls of the LLM step that failed (their rounds have keyword themes only).
    pub failed_calls: u32,
    /// Quotes the LLM gave that are not in the comments (dropped, never shown as evidence).
    pub rejected_quotes: u32,
    /// Input tokens of the LLM step.
    pub input_tokens: u64,
    /// Output tokens of the LLM step.
    pub output_tokens: u64,
    /// Cost of the LLM step in US dollars; `None` when unpriced (or no call).
    pub cost_usd: Option<f64>,
}

/// A whole analysis: what the engine computes, [`StoreWriter::write_themes`] stores and
/// [`Store::theme_analysis`] reads back. Its JSON: the summary's fields, then `themes`.
///
/// [`StoreWriter::write_themes`]: crate::StoreWriter::write_themes
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThemeAnalysis {
    /// The `theme_analyses` row.
    #[serde(flatten)]
    pub summary: ThemeAnalysisSummary,
    /// In the engine's order: by team, metric, source (the LLM's first), then confidence.
    pub themes: Vec<ThemeRow>,
}

fn invalid(analysis_id: &str, message: String) -> StoreError {
    StoreError::Invalid(format!("theme analysis {analysis_id}: {message}"))
}

fn int(analysis_id: &str, field: &str, v: u32) -> Result<i32> {
    i32::try_from(v).map_err(|_| invalid(analysis_id, format!("{field} {v} is out of range")))
}

/// Checks a record before it is written (any problem is [`StoreError::Invalid`] naming the
/// field): non-empty ids; each theme's source, kind, severity and label among their sets;
/// frequency and confidence finite within 0..=1; a non-empty name; a cost finite and not
/// negative.
pub(crate) fn validate(a: &ThemeAnalysis) -> Result<()> {
    let id = a.summary.analysis_id.as_str();
    if id.trim().is_empty() {
        return Err(StoreError::Invalid("analysis_id must not be empty".into()));
    }
    if a.summary.execution_id.trim().is_empty() {
        return Err(invalid(id, "execution_id must not be empty".into()));
    }
    if let Some(c) = a.summary.cost_usd
        && !(c.is_finite() && c >= 0.0)
    {
        return Err(invalid(
            id,
            format!("cost_usd must be a finite, non-negative amount, got {c}"),
        ));
    }
    for (field, v) in [
        ("teams", a.summary.teams),
        ("rounds_analysed", a.summary.rounds_analysed),
        ("comments", a.summary.comments),
        ("llm_calls", a.summary.llm_calls),
        ("failed_calls", a.summary.failed_calls),
        ("rejected_quotes", a.summary.rejected_quotes),
    ] {
        int(id, field, v)?;
    }
    let one_of = |at: &str, field: &str, v: &str, set: &[&str]| -> Result<()> {
        if set.contains(&v) {
            Ok(())
        } else {
            Err(invalid(
                id,
                format!("{at}: {field} `{v}` is not one of {}", set.join(", ")),
            ))
        }
    };
    for (i, t) in a.themes.iter().enumerate() {
        let at = format!("theme {i} (team {}, metric {})", t.team_id, t.metric_name);
        if t.theme.trim().is_empty() {
            return Err(invalid(id, format!("{at}: theme must not be empty")));
        }
        one_of(&at, "source", &t.source, &THEME_SOURCES)?;
        one_of(&at, "kind", &t.kind, &THEME_KINDS)?;
        if let Some(s) = &t.severity {
            one_of(&at, "severity", s, &THEME_SEVERITIES)?;
        }
        one_of(
            &at,
            "confidence_label",
            &t.confidence_label,
            &CONFIDENCE_LABELS,
        )?;
        for (field, v) in [("frequency", t.frequency), ("confidence", t.confidence)] {
            if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
                return Err(invalid(
                    id,
                    format!("{at}: {field} must be between 0 and 1, got {v}"),
                ));
            }
        }
        if let Some(k) = t.keyword_score
            && !k.is_finite()
        {
            return Err(invalid(
                id,
                format!("{at}: keyword_score must be a finite number, got {k}"),
            ));
        }
    }
    Ok(())
}

/// The record as it is written: validated ([`validate`]), the LLM's names, summaries and the
/// quotes masked with `masker` (the quotes come from stored comments, masked already when the
/// run masked; the LLM's own words may not be).
pub(crate) fn prepare(record: &ThemeAnalysis, masker: &PiiMasker) -> Result<ThemeAnalysis> {
    validate(record)?;
    let mut a = record.clone();
    if !masker.is_enabled() {
        return Ok(a);
    }
    let mask = |t: &mut String| {
        if let std::borrow::Cow::Owned(m) = masker.mask(t) {
            *t = m;
        }
    };
    for t in &mut a.themes {
        mask(&mut t.theme);
        if let Some(s) = t.summary.as_mut() {
            mask(s);
        }
        for e in &mut t.evidence {
            mask(&mut e.quote);
        }
    }
    Ok(a)
}

/// Inserts a prepared analysis (inside the writer's transaction). A second analysis with the
/// same id is refused by the table's PRIMARY KEY.
pub(crate) fn insert(conn: &Connection, a: &ThemeAnalysis) -> Result<()> {
    let s = &a.summary;
    let id = s.analysis_id.as_str();
    conn.execute(
        &format!(
            "INSERT INTO theme_analyses (analysis_id, execution_id, created_at, team_filter, model,
                 teams, rounds_analysed, comments, llm_calls, failed_calls, rejected_quotes,
                 input_tokens, output_tokens, cost_usd)
             VALUES (?, ?, {TS}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        ),
        params![
            id,
            s.execution_id,
            micros(&s.created_at),
            s.team_filter,
            s.model,
            int(id, "teams", s.teams)?,
            int(id, "rounds_analysed", s.rounds_analysed)?,
            int(id, "comments", s.comments)?,
            int(id, "llm_calls", s.llm_calls)?,
            int(id, "failed_calls", s.failed_calls)?,
            int(id, "rejected_quotes", s.rejected_quotes)?,
            u64_i64(s.input_tokens),
            u64_i64(s.output_tokens),
            s.cost_usd,
        ],
    )
    .map_err(StoreError::db(format!("writing theme analysis {id}")))?;
    if a.themes.is_empty() {
        return Ok(());
    }
    let mut app = conn
        .appender("comment_themes")
        .map_err(StoreError::db("opening the comment_themes appender"))?;
    for (i, t) in a.themes.iter().enumerate() {
        let index = i32::try_from(i).map_err(|_| invalid(id, "too many themes".into()))?;
        app.append_row(params![
            id,
            index,
            t.team_id,
            t.team_name,
            t.metric_name,
            t.source,
            t.theme,
            t.kind,
            t.summary,
            t.severity,
            json_text(&t.rounds, "comment_themes.rounds")?,
            t.frequency,
            json_text(&t.evidence, "comment_themes.evidence")?,
            t.confidence,
            t.confidence_label,
            t.keyword_score,
        ])
        .map_err(StoreError::db(format!(
            "writing theme analysis {id} (themes)"
        )))?;
    }
    app.flush().map_err(StoreError::db(format!(
        "writing theme analysis {id} (themes)"
    )))?;
    tracing::debug!(
        analysis_id = id,
        themes = a.themes.len(),
        "theme analysis stored"
    );
    Ok(())
}

const SUMMARY_COLUMNS: &str = "analysis_id, execution_id, created_at, team_filter, model, teams,
    rounds_analysed, comments, llm_calls, failed_calls, rejected_quotes, input_tokens,
    output_tokens, cost_usd";

fn summary_of(r: &Row<'_>) -> duckdb::Result<ThemeAnalysisSummary> {
    Ok(ThemeAnalysisSummary {
        analysis_id: r.get(0)?,
        execution_id: r.get(1)?,
        created_at: crate::read::ts(r, 2)?.unwrap_or_default(),
        team_filter: r.get(3)?,
        model: r.get(4)?,
        teams: u32_of(r.get(5)?),
        rounds_analysed: u32_of(r.get(6)?),
        comments: u32_of(r.get(7)?),
        llm_calls: u32_of(r.get(8)?),
        failed_calls: u32_of(r.get(9)?),
        rejected_quotes: u32_of(r.get(10)?),
        input_tokens: u64_of(r.get(11)?),
        output_tokens: u64_of(r.get(12)?),
        cost_usd: r.get(13)?,
    })
}

/// A `comment_themes` row as read, its JSON columns still text.
struct RawTheme {
    row: ThemeRow,
    rounds: String,
    evidence: String,
}

impl Store {
    /// A connection to read the theme tables with, or `None` on a database without them (a
    /// schema older than version 7: the reads then find no analysis).
    fn themes_connection(&self) -> Result<Option<Connection>> {
        let conn = self.connection()?;
        Ok(crate::schema::table_exists(&conn, "theme_analyses")?.then_some(conn))
    }

    /// The theme analyses of `execution_id`, newest first (ties by id).
    pub fn theme_analyses(&self, execution_id: &str) -> Result<Vec<ThemeAnalysisSummary>> {
        let Some(conn) = self.themes_connection()? else {
            return Ok(Vec::new());
        };
        query(
            &conn,
            "the theme analyses",
            &format!(
                "SELECT {SUMMARY_COLUMNS} FROM theme_analyses WHERE execution_id = ?
                 ORDER BY created_at DESC, analysis_id"
            ),
            [execution_id],
            summary_of,
        )
    }

    /// One analysis with its themes (in the order written); `None` when there is none with
    /// this id.
    pub fn theme_analysis(&self, analysis_id: &str) -> Result<Option<ThemeAnalysis>> {
        let Some(conn) = self.themes_connection()? else {
            return Ok(None);
        };
        let Some(summary) = query(
            &conn,
            "the theme analysis",
            &format!("SELECT {SUMMARY_COLUMNS} FROM theme_analyses WHERE analysis_id = ?"),
            [analysis_id],
            summary_of,
        )?
        .into_iter()
        .next() else {
            return Ok(None);
        };
        let raw = query(
            &conn,
            "the themes",
            "SELECT team_id, team_name, metric_name, source, theme, kind, summary, severity,
                 rounds, frequency, evidence, confidence, confidence_label, keyword_score
             FROM comment_themes WHERE analysis_id = ? ORDER BY theme_index",
            [analysis_id],
            |r| {
                Ok(RawTheme {
                    row: ThemeRow {
                        team_id: r.get(0)?,
                        team_name: r.get(1)?,
                        metric_name: r.get(2)?,
                        source: r.get(3)?,
                        theme: r.get(4)?,
                        kind: r.get(5)?,
                        summary: r.get(6)?,
                        severity: r.get(7)?,
                        rounds: Vec::new(),
                        frequency: r.get(9)?,
                        evidence: Vec::new(),
                        confidence: r.get(11)?,
                        confidence_label: r.get(12)?,
                        keyword_score: r.get(13)?,
                    },
                    rounds: r.get(8)?,
                    evidence: r.get(10)?,
                })
            },
        )?;
        let mut themes = Vec::with_capacity(raw.len());
        for t in raw {
            let mut row = t.row;
            row.rounds = decode(&t.rounds, "comment_themes.rounds")?;
            row.evidence = decode(&t.evidence, "comment_themes.evidence")?;
            themes.push(row);
        }
        Ok(Some(ThemeAnalysis { summary, themes }))
    }

    /// The newest theme analysis of `execution_id`, in full.
    pub fn latest_theme_analysis(&self, execution_id: &str) -> Result<Option<ThemeAnalysis>> {
        match self.theme_analyses(execution_id)?.into_iter().next() {
            Some(s) => self.theme_analysis(&s.analysis_id),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn record() -> ThemeAnalysis {
        let theme = |source: &str, kind: &str, severity: Option<&str>| ThemeRow {
            team_id: "t1".into(),
            team_name: "Team 1".into(),
            metric_name: "ClarityCoherence".into(),
            source: source.into(),
            theme: "missing examples".into(),
            kind: kind.into(),
            summary: severity.map(|_| "The answer lacks concrete examples.".into()),
            severity: severity.map(str::to_string),
            rounds: vec![1, 2],
            frequency: 1.0,
            evidence: vec![ThemeEvidence {
                round_number: 1,
                quote: "no concrete example".into(),
            }],
            confidence: 0.8,
            confidence_label: "High".into(),
            keyword_score: (source == "keywords").then_some(4.0),
        };
        ThemeAnalysis {
            summary: ThemeAnalysisSummary {
                analysis_id: "themes-1".into(),
                execution_id: "e".into(),
                created_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default(),
                team_filter: None,
                model: Some("mock:themes".into()),
                teams: 1,
                rounds_analysed: 2,
                comments: 2,
                llm_calls: 2,
                failed_calls: 0,
                rejected_quotes: 1,
                input_tokens: 100,
                output_tokens: 50,
                cost_usd: None,
            },
            themes: vec![
                theme("llm", "criticism", Some("high")),
                theme("keywords", "keyword", None),
            ],
        }
    }

    #[test]
    fn a_valid_record_passes_and_each_invalid_field_is_named() {
        validate(&record()).expect("valid");
        type Spoil = fn(&mut ThemeAnalysis);
        let cases: [(Spoil, &str); 8] = [
            (|a| a.themes[0].source = "guess".into(), "source"),
            (|a| a.themes[0].kind = "complaint".into(), "kind"),
            (
                |a| a.themes[0].severity = Some("critical".into()),
                "severity",
            ),
            (
                |a| a.themes[1].confidence_label = "high".into(),
                "confidence_label",
            ),
            (|a| a.themes[0].frequency = 1.5, "frequency"),
            (|a| a.themes[0].confidence = f64::NAN, "confidence"),
            (
                |a| a.themes[0].theme = " ".into(),
                "theme must not be empty",
            ),
            (|a| a.summary.analysis_id = "".into(), "analysis_id"),
        ];
        for (spoil, field) in cases {
            let mut a = record();
            spoil(&mut a);
            let err = validate(&a).expect_err(field);
            assert!(matches!(err, StoreError::Invalid(_)), "{err}");
            assert!(err.to_string().contains(field), "{field}: {err}");
        }
    }

    #[test]
    fn an_analysis_is_written_once_and_the_database_checks_its_sets() {
        let conn = Connection::open_in_memory().expect("db");
        crate::schema::migrate(&conn, std::path::Path::new(":memory:")).expect("schema");
        let a = prepare(&record(), &PiiMasker::disabled()).expect("prepared");
        crate::writer::in_transaction(&conn, |c| insert(c, &a)).expect("inserted");
        let err = crate::writer::in_transaction(&conn, |c| insert(c, &a)).expect_err("again");
        assert!(err.is_duplicate_key(), "{err}");
        // the CHECK constraints hold even for a row written behind the validation's back
        let bad = conn.execute(
            "INSERT INTO comment_themes VALUES ('x', 0, 't', 'T', 'm', 'llm', 'n', 'rant', NULL,
                 NULL, '[]', 0.5, '[]', 0.5, 'Medium', NULL)",
            [],
        );
        assert!(bad.is_err(), "a kind outside the set is refused");
    }
}
