//! `mixseek export (EXECUTION_ID | --all) --format json|csv|parquet -o PATH`.
//!
//! * `json`: one file `PATH`: `{"mixseek_export": 1, "schema_version": 9, "executions": [...],
//!   "tables": {"execution_summary": [{column: value}], "leader_board": [...], ...}}`; JSON-text
//!   columns are embedded as JSON, timestamps are ISO-8601 UTC strings.
//! * `csv`: a directory `PATH` with one RFC 4180 file per table (`leader_board.csv`, ...).
//! * `parquet`: a directory `PATH` with one Parquet file per table (Snappy; DuckDB types
//!   mapped through Arrow: `TIMESTAMPTZ` → timestamp[µs, UTC]). Written with the Rust
//!   `parquet` crate: the bundled DuckDB has no parquet extension and must not download one.
//!
//! Tables: `execution_summary`, `leader_board`, `round_history`, `round_status`, `llm_calls`,
//! filtered by execution (with `--all`, everything, LLM calls made outside a run included),
//! then `arena_runs`, `arena_games`, `arena_ratings`: the arenas in which a submission of one
//! of the executions competed (all of them with `--all`), with `experiment_arenas` and
//! `experiment_arena_ratings` for those that were arenas of an experiment's variants, then
//! `theme_analyses` and `comment_themes`: the executions' analyses of judge comments
//! (`mixseek analyze`), then `experiments`, `experiment_items` and `execution_attachments`:
//! the executions' experiment items with the experiments they belong to, and the documents
//! attached to their tasks.
//!
//! Every table is written in a fixed order (its key, or its creation time then its key), so
//! the same database always exports the same files.

use crate::db::Store;
use crate::error::{Result, StoreError};
use crate::schema::{
    ARENA_TABLES, EXECUTION_TABLES, EXPERIMENT_ARENA_TABLES, EXPERIMENT_TABLES, JSON_COLUMNS,
    SCHEMA_VERSION, THEME_TABLES,
};
use duckdb::types::ValueRef;
use serde_json::{Map, Value};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// One JSON document at `PATH` (every table, JSON columns embedded).
    Json,
    /// A folder `PATH` with one CSV file per table.
    Csv,
    /// A folder `PATH` with one Parquet file per table.
    Parquet,
}

impl ExportFormat {
    /// The names accepted by `mixseek export --format`.
    pub const NAMES: [&'static str; 3] = ["json", "csv", "parquet"];

    /// The format of a name in [`ExportFormat::NAMES`] (any case); another name is
    /// [`StoreError::Invalid`].
    pub fn parse(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "json" => Ok(Self::Json),
            "csv" => Ok(Self::Csv),
            "parquet" => Ok(Self::Parquet),
            other => Err(StoreError::Invalid(format!(
                "unknown export format `{other}` (expected one of: {})",
                Self::NAMES.join(", ")
            ))),
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportReport {
    /// The files written (the JSON document, or one file per table).
    pub files: Vec<PathBuf>,
    /// Rows per table, in export order.
    pub rows: Vec<(String, u64)>,
}

/// An error writing the export at `path` (the operating system's, or an encoder's around it).
fn io<E: std::error::Error + Send + Sync + 'static>(
    path: &Path,
) -> impl FnOnce(E) -> StoreError + '_ {
    move |source| StoreError::ExportFile {
        path: path.to_path_buf(),
        source: Box::new(source),
    }
}

fn order_of(table: &str) -> &'static str {
    match table {
        "execution_summary" => "created_at, execution_id",
        "llm_calls" => "called_at, id",
        "arena_runs" => "created_at, arena_id",
        "arena_games" => "arena_id, pair_index, game, judge",
        "arena_ratings" => "arena_id, rank, execution_id, team_id",
        "experiment_arenas" => "arena_id",
        "experiment_arena_ratings" => "arena_id, rank, variant",
        "theme_analyses" => "created_at, analysis_id",
        "comment_themes" => "analysis_id, theme_index",
        "experiments" => "created_at, experiment_id",
        "experiment_items" => "experiment_id, task_id, variant, repeat_index",
        "execution_attachments" => "execution_id, position",
        _ => "execution_id, team_id, round_number",
    }
}

/// Every exported table (one CSV or Parquet file each): the execution tables, then the arena
/// tables (those of experiment arenas included), then the theme tables, then the experiment
/// tables.
pub fn export_tables() -> impl Iterator<Item = &'static str> {
    EXECUTION_TABLES
        .into_iter()
        .chain(ARENA_TABLES)
        .chain(EXPERIMENT_ARENA_TABLES)
        .chain(THEME_TABLES)
        .chain(EXPERIMENT_TABLES)
}

/// Which rows an export takes: everything, or those of some executions (and of the arenas in
/// which their submissions competed, and of their theme analyses).
enum Selection<'a> {
    All,
    Some {
        executions: &'a [String],
        arenas: Vec<String>,
        analyses: Vec<String>,
        experiments: Vec<String>,
    },
}

impl<'a> Selection<'a> {
    fn of(store: &Store, executions: Option<&'a [String]>) -> Result<Self> {
        Ok(match executions {
            None => Selection::All,
            Some(executions) => {
                let mut analyses = Vec::new();
                for e in executions {
                    analyses.extend(store.theme_analyses(e)?.into_iter().map(|a| a.analysis_id));
                }
                Selection::Some {
                    executions,
                    arenas: store.arena_ids_of(executions)?,
                    analyses,
                    experiments: experiment_ids_of(store, executions)?,
                }
            }
        })
    }
}

/// The experiments in which some of `executions` play an item, by name.
fn experiment_ids_of(store: &Store, executions: &[String]) -> Result<Vec<String>> {
    if executions.is_empty() {
        return Ok(Vec::new());
    }
    let conn = store.connection()?;
    let marks = vec!["?"; executions.len()].join(", ");
    crate::values::query(
        &conn,
        "the executions' experiments",
        &format!(
            "SELECT DISTINCT experiment_id FROM experiment_items WHERE execution_id IN ({marks})
             ORDER BY experiment_id"
        ),
        duckdb::params_from_iter(executions.iter()),
        |r| r.get::<_, String>(0),
    )
}

/// The `SELECT` of one table for the selection with its parameters.
fn select(table: &str, selection: &Selection<'_>) -> (String, Vec<String>) {
    match selection {
        Selection::All => (
            format!("SELECT * FROM {table} ORDER BY {}", order_of(table)),
            Vec::new(),
        ),
        Selection::Some {
            executions,
            arenas,
            analyses,
            experiments,
        } => {
            let (column, ids) =
                if ARENA_TABLES.contains(&table) || EXPERIMENT_ARENA_TABLES.contains(&table) {
                    ("arena_id", arenas.as_slice())
                } else if table == "comment_themes" {
                    ("analysis_id", analyses.as_slice())
                } else if table == "experiments" {
                    ("experiment_id", experiments.as_slice())
                } else {
                    ("execution_id", *executions)
                };
            let marks = vec!["?"; ids.len().max(1)].join(", ");
            let mut params = ids.to_vec();
            if params.is_empty() {
                params.push(String::new());
            }
            (
                format!(
                    "SELECT * FROM {table} WHERE {column} IN ({marks}) ORDER BY {}",
                    order_of(table)
                ),
                params,
            )
        }
    }
}

fn json_value(v: ValueRef<'_>, column: &str) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Boolean(b) => Value::Bool(b),
        ValueRef::TinyInt(i) => i.into(),
        ValueRef::SmallInt(i) => i.into(),
        ValueRef::Int(i) => i.into(),
        ValueRef::BigInt(i) => i.into(),
        ValueRef::UTinyInt(i) => i.into(),
        ValueRef::USmallInt(i) => i.into(),
        ValueRef::UInt(i) => i.into(),
        ValueRef::UBigInt(i) => i.into(),
        ValueRef::Float(f) => {
            serde_json::Number::from_f64(f64::from(f)).map_or(Value::Null, Value::Number)
        }
        ValueRef::Double(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        ValueRef::Timestamp(unit, t) => chrono::DateTime::from_timestamp_micros(unit.to_micros(t))
            .map(|d| Value::String(mixseek_core::time::format_utc(&d)))
            .unwrap_or(Value::Null),
        ValueRef::Text(bytes) => {
            let s = String::from_utf8_lossy(bytes).into_owned();
            if JSON_COLUMNS.contains(&column) {
                serde_json::from_str(&s).unwrap_or(Value::String(s))
            } else {
                Value::String(s)
            }
        }
        other => Value::String(format!("{other:?}")),
    }
}

fn text_value(v: ValueRef<'_>, column: &str) -> String {
    match json_value(v, column) {
        Value::Null => String::new(),
        Value::String(s) => s,
        other if JSON_COLUMNS.contains(&column) => other.to_string(),
        other => other.to_string(),
    }
}

fn for_each_row(
    store: &Store,
    table: &str,
    selection: &Selection<'_>,
    mut f: impl FnMut(&[String], &duckdb::Row<'_>) -> Result<()>,
) -> Result<(Vec<String>, u64)> {
    let conn = store.connection()?;
    let (sql, params) = select(table, selection);
    let mut stmt = conn
        .prepare(&sql)
        .map_err(StoreError::db(format!("exporting {table}")))?;
    let mut rows = stmt
        .query(duckdb::params_from_iter(params.iter()))
        .map_err(StoreError::db(format!("exporting {table}")))?;
    let names: Vec<String> = rows.as_ref().map(|s| s.column_names()).unwrap_or_default();
    let mut n = 0;
    while let Some(row) = rows
        .next()
        .map_err(StoreError::db(format!("exporting {table}")))?
    {
        f(&names, row)?;
        n += 1;
    }
    Ok((names, n))
}

/// Exports the chosen executions (`None` = everything) to `out`.
pub fn export(
    store: &Store,
    executions: Option<&[String]>,
    format: ExportFormat,
    out: &Path,
) -> Result<ExportReport> {
    let selection = Selection::of(store, executions)?;
    match format {
        ExportFormat::Json => export_json(store, executions, &selection, out),
        ExportFormat::Csv | ExportFormat::Parquet => {
            std::fs::create_dir_all(out).map_err(io(out))?;
            let mut report = ExportReport {
                files: Vec::new(),
                rows: Vec::new(),
            };
            for table in export_tables() {
                let (path, n) = if format == ExportFormat::Csv {
                    export_csv(store, table, &selection, out)?
                } else {
                    export_parquet(store, table, &selection, out)?
                };
                report.files.push(path);
                report.rows.push((table.to_string(), n));
            }
            Ok(report)
        }
    }
}

fn export_json(
    store: &Store,
    executions: Option<&[String]>,
    selection: &Selection<'_>,
    out: &Path,
) -> Result<ExportReport> {
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    let mut tables = Map::new();
    let mut counts = Vec::new();
    for table in export_tables() {
        let mut rows = Vec::new();
        let (_, n) = for_each_row(store, table, selection, |names, row| {
            let mut obj = Map::new();
            for (i, name) in names.iter().enumerate() {
                let v = row
                    .get_ref(i)
                    .map_err(StoreError::db(format!("exporting {table}")))?;
                obj.insert(name.clone(), json_value(v, name));
            }
            rows.push(Value::Object(obj));
            Ok(())
        })?;
        tables.insert(table.to_string(), Value::Array(rows));
        counts.push((table.to_string(), n));
    }
    let ids: Vec<Value> = match executions {
        Some(ids) => ids.iter().map(|s| Value::String(s.clone())).collect(),
        None => tables
            .get("execution_summary")
            .and_then(Value::as_array)
            .map(|rows| {
                rows.iter()
                    .filter_map(|r| r.get("execution_id").cloned())
                    .collect()
            })
            .unwrap_or_default(),
    };
    let doc = serde_json::json!({
        "mixseek_export": 1,
        "schema_version": SCHEMA_VERSION,
        "executions": ids,
        "tables": tables,
    });
    let mut f = File::create(out).map_err(io(out))?;
    serde_json::to_writer_pretty(&mut f, &doc).map_err(io(out))?;
    f.write_all(b"\n").map_err(io(out))?;
    Ok(ExportReport {
        files: vec![out.to_path_buf()],
        rows: counts,
    })
}

fn export_csv(
    store: &Store,
    table: &str,
    selection: &Selection<'_>,
    dir: &Path,
) -> Result<(PathBuf, u64)> {
    let path = dir.join(format!("{table}.csv"));
    let file = File::create(&path).map_err(io(&path))?;
    let mut w = csv::Writer::from_writer(file);
    let mut header_written = false;
    let (names, n) = for_each_row(store, table, selection, |names, row| {
        if !header_written {
            w.write_record(names).map_err(io(&path))?;
            header_written = true;
        }
        let mut record = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let v = row
                .get_ref(i)
                .map_err(StoreError::db(format!("exporting {table}")))?;
            record.push(text_value(v, name));
        }
        w.write_record(&record).map_err(io(&path))
    })?;
    if !header_written {
        w.write_record(&names).map_err(io(&path))?;
    }
    w.flush().map_err(io(&path))?;
    Ok((path, n))
}

fn export_parquet(
    store: &Store,
    table: &str,
    selection: &Selection<'_>,
    dir: &Path,
) -> Result<(PathBuf, u64)> {
    use parquet::arrow::ArrowWriter;
    use parquet::basic::Compression;
    use parquet::file::properties::WriterProperties;

    let path = dir.join(format!("{table}.parquet"));
    let conn = store.connection()?;
    let (sql, params) = select(table, selection);
    let mut stmt = conn
        .prepare(&sql)
        .map_err(StoreError::db(format!("exporting {table}")))?;
    let arrow = stmt
        .query_arrow(duckdb::params_from_iter(params.iter()))
        .map_err(StoreError::db(format!("exporting {table}")))?;
    let schema = arrow.get_schema();
    let file = File::create(&path).map_err(io(&path))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut writer = ArrowWriter::try_new(file, schema, Some(props)).map_err(io(&path))?;
    let mut n = 0u64;
    for batch in arrow {
        n += batch.num_rows() as u64;
        writer.write(&batch).map_err(io(&path))?;
    }
    writer.close().map_err(io(&path))?;
    Ok((path, n))
}
