//! Opening the database: one DuckDB instance per file per process (a registry hands out the
//! same instance to every `Store::open` of the same path; connections are `try_clone`s of
//! it), lock errors turned into messages that name the file, and the schema migration.

use crate::error::{ErrorClass, Result, StoreError, class_of_message};
use crate::schema::{self, MigrationReport};
use duckdb::{AccessMode, Config, Connection};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The database file name inside a workspace.
pub const DB_FILE_NAME: &str = "mixseek.db";

/// `WORKSPACE/mixseek.db`.
pub fn db_path(workspace: &Path) -> PathBuf {
    workspace.join(DB_FILE_NAME)
}

pub(crate) struct Shared {
    pub(crate) path: PathBuf,
    pub(crate) read_only: bool,
    /// What the open that created this instance upgraded.
    migration: Option<MigrationReport>,
    /// A read-only open of an older file reads an upgraded copy of it in memory: what the
    /// upgrade of that copy did (the file itself is not changed).
    copy: Option<MigrationReport>,
    root: Mutex<Connection>,
    /// Whether the writer checkpoints after each finished execution
    /// ([`Store::checkpoint_after_each_execution`]).
    pub(crate) checkpoint_each_execution: AtomicBool,
}

/// A handle on one workspace database. Cheap to clone; every clone (and every `open` of the
/// same file in this process) shares one DuckDB instance. Reads are blocking calls: from async
/// code run them in `tokio::task::spawn_blocking` (or use the `*_async` variants).
#[derive(Clone)]
pub struct Store {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.shared.path)
            .field("read_only", &self.shared.read_only)
            .finish()
    }
}

/// Open databases by canonical path. Entries are weak: a file closes when its last handle (or
/// writer) goes away, and a stale entry is simply replaced by the next open.
fn registry() -> &'static Mutex<HashMap<PathBuf, Weak<Shared>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<PathBuf, Weak<Shared>>>> = OnceLock::new();
    REGISTRY.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The registry key: the canonical parent directory joined with the file name.
fn key_of(path: &Path) -> PathBuf {
    let file = path.file_name().map(PathBuf::from).unwrap_or_default();
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::canonicalize(parent)
        .unwrap_or_else(|_| parent.to_path_buf())
        .join(file)
}

/// The instance this process has open on `path`, if any.
pub(crate) fn already_open(path: &Path) -> Option<Store> {
    let reg = registry().lock().unwrap_or_else(|e| e.into_inner());
    reg.get(&key_of(path))
        .and_then(Weak::upgrade)
        .map(|shared| Store { shared })
}

/// `... Conflicting lock is held in /usr/bin/mixseek (PID 1234) ...` → 1234.
fn lock_pid(message: &str) -> Option<u32> {
    let at = message.find("(PID ")?;
    let rest = &message[at + 5..];
    let end = rest.find(|c: char| !c.is_ascii_digit())?;
    rest[..end].parse().ok()
}

/// How long a writer waits for readers that hold the file's lock for a moment (the web UI
/// and the report commands open the file only for one read). A writer holding it is not
/// waited out: after this the open fails with [`StoreError::Locked`].
pub const WRITER_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Opens `path` read-write, retrying for up to [`WRITER_WAIT`] while another process holds
/// DuckDB's lock.
fn open_writable(path: &Path) -> Result<Connection> {
    let started = std::time::Instant::now();
    loop {
        match Connection::open_with_flags(path, config(AccessMode::ReadWrite, path)?) {
            Ok(conn) => return Ok(conn),
            Err(e) => match open_error(path, e, true) {
                StoreError::Locked { .. } if started.elapsed() < WRITER_WAIT => {
                    std::thread::sleep(std::time::Duration::from_millis(25));
                }
                other => return Err(other),
            },
        }
    }
}

/// The error of a failed open of `path`: [`StoreError::Locked`] when another process holds
/// the file, [`StoreError::NotADatabase`] for a file that is not DuckDB's, else
/// [`StoreError::Open`].
pub(crate) fn open_error(path: &Path, err: duckdb::Error, write: bool) -> StoreError {
    let text = err.to_string();
    match class_of_message(&text) {
        ErrorClass::Busy => StoreError::Locked {
            path: path.to_path_buf(),
            pid: lock_pid(&text),
            write,
            source: Some(err.into()),
        },
        ErrorClass::BadInput => {
            let empty = std::fs::metadata(path).is_ok_and(|m| m.len() == 0);
            StoreError::NotADatabase {
                path: path.to_path_buf(),
                detail: if empty {
                    "the file is empty (0 bytes)".to_string()
                } else {
                    text
                },
                source: Some(err.into()),
            }
        }
        _ => StoreError::Open {
            path: path.to_path_buf(),
            message: text,
            source: Some(err.into()),
        },
    }
}

/// Refuses a directory where the database file should be (DuckDB's own message for it does
/// not say so).
fn check_not_a_directory(path: &Path) -> Result<()> {
    if path.is_dir() {
        return Err(StoreError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

/// How much write-ahead log DuckDB lets accumulate before it checkpoints (compresses the
/// logged rows into the database file). The trade-off:
/// * writes: every checkpoint re-compresses the tables' newest row groups. When every row of
///   a bulk load went through the log, checkpoints took more than half of its time; bulk
///   loads now write whole row groups straight to the file (see `writer.rs`) and log little,
///   so the threshold mostly paces the per-round writes of live runs. Those rows carry the
///   prompts (with 1,000 teams each prompt holds a ≈ 100 kB ranking), and DuckDB keeps the
///   logged rows in memory until the checkpoint: DuckDB's default, 16 MB, keeps a large run's
///   memory low, where 64 MB measured no faster (docs/benchmarks.md);
/// * readers and crashes: a process that opens the file read-only (every report command)
///   replays the whole log in memory at each open and cannot checkpoint it, and a killed run
///   leaves its log for the next open to replay; 16 MB replays in a fraction of a second.
///
/// The writer also checkpoints after each finished execution, so a completed run leaves an
/// empty log. Commits are durable either way (the log is synced on every commit).
const CHECKPOINT_THRESHOLD: &str = "16MB";

/// DuckDB's storage format for the files mixseek creates; a file keeps the format it was
/// created with. From this format on DuckDB compresses long strings (transcripts, member
/// records, score details) with zstd: files several times smaller, and merging shards is
/// bound by the bytes it writes. DuckDB 1.2 and later read it (the original's 1.4 included).
const STORAGE_VERSION: &str = "v1.2.0";

/// DuckDB's buffer memory for a live run ([`Store::limit_memory`], which `mixseek exec`
/// calls): what it caches of the tables and keeps of the logged rows until a checkpoint.
/// DuckDB's default (80 % of RAM) let a 1,000-team run's process grow past 1 GB, and a run
/// only reads its own execution's recent rows back. Not the default of every open: a bulk
/// write (`StoreWriter::write_all`, used by tests and benchmarks) with 128 MB evicts and re-reads the
/// row groups it is compressing, which cut its rate from ≈ 58,000 to ≈ 36,000 rounds/s
/// (docs/benchmarks.md). A write that needs more than the cap (very long prompts or
/// transcripts) does not fail: the writer lifts the cap to DuckDB's default and retries it.
pub const RUN_MEMORY_LIMIT: &str = "128MB";

/// Up to how many rows DuckDB may merge the row groups of a table with indexes (the keys of
/// schema version 5) and rebuild its indexes afterwards: every table, whatever its size. Without
/// it DuckDB appends a table's new rows to its last row group and rewrites that whole row group
/// at every checkpoint — with the keys, a live run's checkpoints rewrote its growing
/// `round_history` again and again, as without [`Store::defer_vacuum`] (docs/benchmarks.md).
/// With it a table with indexes takes rows as a table without them does: new rows in row groups
/// of their own, merged by a later checkpoint's vacuum, which then rebuilds that table's
/// indexes (a few seconds for a million rounds, in a process that is not running an
/// execution). DuckDB calls the setting experimental; it can only be set when the database
/// opens.
const VACUUM_REBUILD_INDEXES: &str = "1000000000000";

fn config(mode: AccessMode, path: &Path) -> Result<Config> {
    let wrap = |e: duckdb::Error| StoreError::Open {
        path: path.to_path_buf(),
        message: e.to_string(),
        source: Some(e.into()),
    };
    let read_write = matches!(mode, AccessMode::ReadWrite);
    // Never download extensions at run time (no network; the bundled build has what we use).
    let config = Config::default()
        .access_mode(mode)
        .map_err(wrap)?
        .enable_autoload_extension(false)
        .map_err(wrap)?;
    if !read_write {
        return Ok(config);
    }
    config
        .with("checkpoint_threshold", CHECKPOINT_THRESHOLD)
        .map_err(wrap)?
        .with("vacuum_rebuild_indexes", VACUUM_REBUILD_INDEXES)
        .map_err(wrap)?
        .with("storage_compatibility_version", STORAGE_VERSION)
        .map_err(wrap)
}

/// An in-memory database holding a copy of the file's tables, upgraded to the latest schema
/// (no backup: the file is only read). The file is attached read-only for the copy and
/// detached after it.
fn upgraded_copy(path: &Path) -> Result<(Connection, MigrationReport)> {
    let wrap = |e: duckdb::Error| StoreError::Open {
        path: path.to_path_buf(),
        message: e.to_string(),
        source: Some(e.into()),
    };
    let config = Config::default()
        .enable_autoload_extension(false)
        .map_err(wrap)?;
    let conn = Connection::open_in_memory_with_flags(config).map_err(wrap)?;
    let quoted = path.to_string_lossy().replace('\'', "''");
    conn.execute_batch(&format!("ATTACH '{quoted}' AS mixseek_file (READ_ONLY)"))
        .map_err(|e| open_error(path, e, false))?;
    let copied = conn.execute_batch("COPY FROM DATABASE mixseek_file TO memory");
    if let Err(e) = conn.execute_batch("DETACH mixseek_file") {
        tracing::debug!(error = %e, "detaching the file after copying it");
    }
    copied.map_err(|e| StoreError::Open {
        path: path.to_path_buf(),
        message: format!("copying the file's tables into memory: {e}"),
        source: Some(e.into()),
    })?;
    let report = schema::migrate_copy(&conn, path)?;
    Ok((conn, report))
}

impl Store {
    /// Opens (creating it and its parent directory if needed) the database for reading and
    /// writing, creating or upgrading the schema (an older file is first copied to a backup
    /// beside it; [`Store::migration`] tells what the upgrade did). Only commands that write
    /// open this way; they announce an upgrade first ([`Store::schema_version_of`]). A file written by a newer
    /// mixseek is refused ([`StoreError::SchemaTooNew`]), and so are a file that is not a
    /// DuckDB database or a damaged one ([`StoreError::NotADatabase`]), another program's
    /// DuckDB file ([`StoreError::ForeignSchema`]) and a directory ([`StoreError::NotAFile`]);
    /// a file held by another process gives [`StoreError::Locked`] after [`WRITER_WAIT`] (a
    /// reader such as the web UI holds it only for one read). Every error's
    /// `hint()` says what to do, its `class()` what kind of failure it is.
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        let path = path.as_ref();
        check_not_a_directory(path)?;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let key = key_of(path);
        let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(shared) = reg.get(&key).and_then(Weak::upgrade) {
            if !shared.read_only {
                return Ok(Store { shared });
            }
            return Err(StoreError::Open {
                path: path.to_path_buf(),
                message: "this process already has the file open read-only; close that handle before writing".into(),
                source: None,
            });
        }
        let conn = open_writable(path)?;
        let migration = schema::migrate(&conn, path)?;
        let shared = Arc::new(Shared {
            path: path.to_path_buf(),
            read_only: false,
            migration,
            copy: None,
            root: Mutex::new(conn),
            checkpoint_each_execution: AtomicBool::new(true),
        });
        reg.insert(key, Arc::downgrade(&shared));
        Ok(Store { shared })
    }

    /// Opens the database for reading only (report commands); the file is never written.
    /// Several processes may read at once; while another process writes, DuckDB refuses
    /// ([`StoreError::Locked`]). Inside a process that already has the file open, the same
    /// instance is shared (reads then see the writer's committed rows). A missing file is
    /// [`StoreError::NotFound`]. A file of an older schema (the original MixSeek's included)
    /// is read as it is: its tables are copied into an in-memory database and upgraded there
    /// ([`Store::read_copy`] tells what that upgrade did), so every read works on every
    /// version while the file stays byte for byte as it was. The price is memory the size of
    /// the data for each such open; `mixseek db upgrade` ends it.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Store> {
        let path = path.as_ref();
        if !path.exists() {
            return Err(StoreError::NotFound {
                path: path.to_path_buf(),
            });
        }
        check_not_a_directory(path)?;
        let key = key_of(path);
        {
            let reg = registry().lock().unwrap_or_else(|e| e.into_inner());
            if let Some(shared) = reg.get(&key).and_then(Weak::upgrade) {
                return Ok(Store { shared });
            }
        }
        let conn = Connection::open_with_flags(path, config(AccessMode::ReadOnly, path)?)
            .map_err(|e| open_error(path, e, false))?;
        // a newer file, or another program's, is refused here
        let found = schema::check(&conn, path)?;
        let (conn, copy) = match found {
            schema::Found::Version(v) if v == schema::SCHEMA_VERSION => (conn, None),
            _ => {
                drop(conn);
                let (conn, report) = upgraded_copy(path)?;
                tracing::info!(
                    path = %path.display(),
                    from = report.from,
                    to = report.to,
                    "the database has schema version {} (this mixseek writes {}): read from an upgraded copy in memory, the file is not changed; `mixseek db status` tells what an upgrade would change",
                    report.from,
                    report.to
                );
                (conn, Some(report))
            }
        };
        let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(shared) = reg.get(&key).and_then(Weak::upgrade) {
            return Ok(Store { shared });
        }
        let shared = Arc::new(Shared {
            path: path.to_path_buf(),
            read_only: true,
            migration: None,
            copy,
            root: Mutex::new(conn),
            checkpoint_each_execution: AtomicBool::new(true),
        });
        reg.insert(key, Arc::downgrade(&shared));
        Ok(Store { shared })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Whether this handle's database was opened by [`Store::open_read_only`] (writes are then
    /// refused with [`StoreError::ReadOnly`]).
    pub fn is_read_only(&self) -> bool {
        self.shared.read_only
    }

    /// What opening this file upgraded (the schema version it had, the backup made of it,
    /// rows dropped as duplicates of a key); `None` when nothing was upgraded. The open that
    /// upgraded the file logs the same, as warnings for anything dropped.
    pub fn migration(&self) -> Option<&MigrationReport> {
        self.shared.migration.as_ref()
    }

    /// For a read-only handle on a file of an older schema: what upgrading the in-memory copy
    /// it reads did (the version the file has, the rows an upgrade of the file would drop or
    /// renumber); `None` when the handle reads the file itself.
    pub fn read_copy(&self) -> Option<&MigrationReport> {
        self.shared.copy.as_ref()
    }

    /// Folds DuckDB's write-ahead log into the database file (DuckDB does it by itself every
    /// 16 MB of log and when the file closes; the writer after each finished execution).
    /// Fails while another connection of the process is in the middle of a write.
    pub fn checkpoint(&self) -> Result<()> {
        self.connection()?
            .execute_batch("CHECKPOINT")
            .map_err(StoreError::db(format!(
                "checkpointing {}",
                self.shared.path.display()
            )))
    }

    /// Whether the writer checkpoints after each finished execution (the default: a finished
    /// `exec` leaves an empty log). An experiment runs thousands of executions in one
    /// process: a checkpoint after each wrote a few blocks per table for every execution
    /// (870 MB for 1,000 small executions, and its time grew with the file), so it turns this
    /// off and leaves the checkpoints to DuckDB's log threshold and to the end of its run.
    pub fn checkpoint_after_each_execution(&self, on: bool) {
        self.shared
            .checkpoint_each_execution
            .store(on, Ordering::Relaxed);
    }

    /// Runs one SQL query for inspection (tests, diagnostics) and maps its rows with `f`. It
    /// runs in a read-only transaction, so a statement that would write is refused: every
    /// write goes through the [`StoreWriter`](crate::StoreWriter). `sql` is one statement
    /// without a `;` (DuckDB would run the statements before the last one outside that
    /// transaction). mixseek's own reads are the typed methods ([`Store::ranking`],
    /// [`Store::history`], …).
    pub fn select<T>(
        &self,
        sql: &str,
        params: impl duckdb::Params,
        f: impl FnMut(&duckdb::Row<'_>) -> duckdb::Result<T>,
    ) -> Result<Vec<T>> {
        if sql.trim_end().trim_end_matches(';').contains(';') {
            return Err(StoreError::Invalid(format!(
                "`{sql}` is more than one statement (or has a `;` in it): give one query"
            )));
        }
        let conn = self.connection()?;
        conn.execute_batch("BEGIN TRANSACTION READ ONLY")
            .map_err(StoreError::db("beginning a read-only transaction"))?;
        let rows = (|| {
            let mut stmt = conn.prepare(sql)?;
            let rows = stmt.query_map(params, f)?;
            rows.collect::<duckdb::Result<Vec<T>>>()
        })()
        .map_err(StoreError::db(format!("running `{sql}`")));
        if let Err(e) = conn.execute_batch("ROLLBACK") {
            tracing::debug!(error = %e, "ending a read-only transaction");
        }
        rows
    }

    /// Caps DuckDB's buffer memory for this database (every connection of the process shares
    /// it), e.g. [`RUN_MEMORY_LIMIT`]; `limit` is a DuckDB size (`"128MB"`, `"1GB"`).
    pub fn limit_memory(&self, limit: &str) -> Result<()> {
        let valid = !limit.is_empty()
            && limit
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == ' ');
        if !valid {
            return Err(StoreError::Invalid(format!(
                "`{limit}` is not a memory size (e.g. \"128MB\")"
            )));
        }
        self.connection()?
            .execute_batch(&format!("SET memory_limit = '{limit}'"))
            .map_err(StoreError::db("setting the memory limit"))
    }

    /// For a live run: checkpoints write the new rows only, in row groups of their own, and
    /// never merge them with the stored ones (DuckDB's vacuum, `max_vacuum_tasks = 0` for this
    /// process). Each merge re-read and rewrote every string of the table: with a 1,000-team
    /// ranking in every transcript, the checkpoints of a run rewrote its growing
    /// `round_history` again and again (70–100 MB of peak memory, and time). The row groups
    /// stay as written (a few per thousand rounds) until a later process's checkpoint merges
    /// them.
    pub fn defer_vacuum(&self) -> Result<()> {
        self.connection()?
            .execute_batch("SET max_vacuum_tasks = 0")
            .map_err(StoreError::db("deferring the vacuum"))
    }

    /// Runs DuckDB's work for this process on `threads` threads (the calling one included).
    /// A live run's statements are small: with DuckDB's default (one thread per core) its idle
    /// worker spun waiting for tasks on a core the run's own work needed (`mixseek exec`: 2.5 s
    /// of CPU in 10 s on 2 cores, docs/benchmarks.md). `threads` ≥ 1.
    pub fn limit_threads(&self, threads: u32) -> Result<()> {
        self.connection()?
            .execute_batch(&format!("SET threads = {}", threads.max(1)))
            .map_err(StoreError::db("setting the thread count"))
    }

    /// A new connection to the shared instance (a `try_clone` of the root connection). Not
    /// public: every write goes through the writer thread.
    pub(crate) fn connection(&self) -> Result<Connection> {
        let root = self.shared.root.lock().unwrap_or_else(|e| e.into_inner());
        root.try_clone()
            .map_err(StoreError::db("cloning a connection"))
    }

    /// Runs a blocking read on tokio's blocking pool.
    pub async fn read_async<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Store) -> Result<T> + Send + 'static,
    {
        let store = self.clone();
        tokio::task::spawn_blocking(move || f(&store))
            .await
            .map_err(|e| StoreError::Export(format!("read task failed: {e}")))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_messages_give_the_pid() {
        let msg = "IO Error: Could not set lock on file \"/w/mixseek.db\": Conflicting lock is held in /usr/bin/mixseek (PID 4242) by user root. See also https://duckdb.org/docs/stable/connect/concurrency";
        assert_eq!(lock_pid(msg), Some(4242));
        assert_eq!(lock_pid("no pid here"), None);
    }

    #[test]
    fn opening_twice_shares_one_instance() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ws").join(DB_FILE_NAME);
        let a = Store::open(&path).expect("open");
        let b = Store::open(&path).expect("open again");
        assert!(Arc::ptr_eq(&a.shared, &b.shared));
        let r = Store::open_read_only(&path).expect("read-only in the same process");
        assert!(Arc::ptr_eq(&a.shared, &r.shared));
        drop((a, b, r));
        // all handles gone: the file can be opened read-only on its own
        let r = Store::open_read_only(&path).expect("read-only");
        assert!(r.is_read_only());
    }

    #[test]
    fn select_reads_and_cannot_write() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().join(DB_FILE_NAME)).expect("open");
        let versions: Vec<i64> = store
            .select("SELECT version FROM schema_version", [], |r| r.get(0))
            .expect("read");
        assert_eq!(versions, vec![schema::SCHEMA_VERSION]);
        for write in [
            "DELETE FROM schema_version RETURNING version",
            "INSERT INTO schema_version (version, description) VALUES (9, 'x') RETURNING version",
        ] {
            let err = store
                .select(write, [], |r| r.get::<_, i64>(0))
                .expect_err("refused");
            assert!(err.to_string().contains("read-only"), "{err}");
        }
        // several statements are not one query
        assert!(
            store
                .select(
                    "COMMIT; DELETE FROM schema_version RETURNING version",
                    [],
                    |r| { r.get::<_, i64>(0) }
                )
                .is_err()
        );
        let n: Vec<i64> = store
            .select("SELECT count(*) FROM schema_version", [], |r| r.get(0))
            .expect("count");
        assert_eq!(n, vec![1], "nothing was written");
    }

    /// The compressions DuckDB chose for a column of long texts written to `store` and
    /// checkpointed.
    fn long_text_compressions(store: &Store) -> Vec<String> {
        store
            .connection()
            .expect("connection")
            .execute_batch(
                "CREATE TABLE long_texts (t VARCHAR);
                 INSERT INTO long_texts SELECT repeat('transcript ' || i, 800) FROM range(50) r(i);
                 CHECKPOINT",
            )
            .expect("write");
        store
            .select(
                "SELECT DISTINCT compression FROM pragma_storage_info('long_texts')
                 WHERE column_name = 't' ORDER BY 1",
                [],
                |r| r.get(0),
            )
            .expect("storage info")
    }

    #[test]
    fn new_files_compress_long_texts_and_older_files_keep_their_format() {
        let dir = tempfile::tempdir().expect("tempdir");
        let new = Store::open(dir.path().join("new.db")).expect("open");
        let found = long_text_compressions(&new);
        assert!(found.iter().any(|c| c == "ZSTD"), "{found:?}");

        // A file in DuckDB's older default format (an earlier mixseek's) keeps it, so the
        // DuckDB versions that read it still do.
        let old_path = dir.path().join("old.db");
        Connection::open_in_memory()
            .expect("memory")
            .execute_batch(&format!(
                "ATTACH '{}' AS old (STORAGE_VERSION 'v1.0.0'); DETACH old",
                old_path.display()
            ))
            .expect("an old-format file");
        let old = Store::open(&old_path).expect("open the old file");
        let found = long_text_compressions(&old);
        assert!(!found.iter().any(|c| c == "ZSTD"), "{found:?}");
    }

    #[test]
    fn missing_file_is_not_found_with_a_hint() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = Store::open_read_only(dir.path().join(DB_FILE_NAME)).expect_err("missing");
        assert!(matches!(err, StoreError::NotFound { .. }));
        assert!(err.hint().unwrap_or_default().contains("mixseek exec"));
    }
}
