//! The copy of a database file made before its schema is upgraded: the file is the user's,
//! and an upgrade rewrites its tables (and may drop duplicated rows). The copy sits next to it,
//! named after the version it holds: `mixseek.db.v4.bak`; an existing backup is never
//! overwritten (the next one is `mixseek.db.v4.1.bak`, then `.2`, …).

use crate::error::{Result, StoreError};
use duckdb::Connection;
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Gives up looking for a free backup name after this many.
const MAX_BACKUPS: u32 = 1000;

/// Copies the database file at `path` (open on `conn`, schema version `version`) to a new
/// backup file beside it and returns its path; `None` when `path` is not a file (an in-memory
/// database). DuckDB's write-ahead log is folded into the file first (`CHECKPOINT`), so the
/// copy alone is the whole database.
pub(crate) fn backup_before_upgrade(
    conn: &Connection,
    path: &Path,
    version: i64,
) -> Result<Option<PathBuf>> {
    if !path.is_file() {
        return Ok(None);
    }
    conn.execute_batch("CHECKPOINT")
        .map_err(StoreError::db(format!(
            "folding the write-ahead log of {} into the file before backing it up",
            path.display()
        )))?;
    let (mut out, backup) = create_backup_file(path, version)?;
    let copied = File::open(path)
        .and_then(|mut input| std::io::copy(&mut input, &mut out))
        .and_then(|_| out.sync_all());
    if let Err(source) = copied {
        drop(out);
        // a partial copy is not a backup
        if let Err(e) = std::fs::remove_file(&backup) {
            tracing::debug!(error = %e, backup = %backup.display(), "removing a partial backup");
        }
        return Err(StoreError::Backup {
            path: path.to_path_buf(),
            backup,
            source,
        });
    }
    tracing::info!(
        path = %path.display(),
        backup = %backup.display(),
        version,
        "copied the database to {} before upgrading its schema",
        backup.display()
    );
    Ok(Some(backup))
}

/// The `n`th backup name of `path` for `version`.
pub(crate) fn backup_name(path: &Path, version: i64, n: u32) -> PathBuf {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "mixseek.db".to_string());
    let name = match n {
        0 => format!("{file}.v{version}.bak"),
        n => format!("{file}.v{version}.{n}.bak"),
    };
    path.with_file_name(name)
}

/// The name the next backup of `path` at `version` would get (the first that does not
/// exist), for announcing an upgrade before it starts.
pub fn next_backup_path(path: &Path, version: i64) -> PathBuf {
    (0..MAX_BACKUPS)
        .map(|n| backup_name(path, version, n))
        .find(|p| !p.exists())
        .unwrap_or_else(|| backup_name(path, version, MAX_BACKUPS))
}

/// Creates the first backup name that does not exist yet (atomically: never overwrites).
fn create_backup_file(path: &Path, version: i64) -> Result<(File, PathBuf)> {
    let mut last = backup_name(path, version, 0);
    for n in 0..MAX_BACKUPS {
        let candidate = backup_name(path, version, n);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(f) => return Ok((f, candidate)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => last = candidate,
            Err(source) => {
                return Err(StoreError::Backup {
                    path: path.to_path_buf(),
                    backup: candidate,
                    source,
                });
            }
        }
    }
    Err(StoreError::Backup {
        path: path.to_path_buf(),
        backup: last,
        source: std::io::Error::new(
            ErrorKind::AlreadyExists,
            format!("{MAX_BACKUPS} backups exist already; remove old ones"),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backups_never_overwrite_each_other() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("mixseek.db");
        std::fs::write(&path, b"old").expect("file");
        let (_, first) = create_backup_file(&path, 4).expect("first");
        assert_eq!(first, dir.path().join("mixseek.db.v4.bak"));
        let (_, second) = create_backup_file(&path, 4).expect("second");
        assert_eq!(second, dir.path().join("mixseek.db.v4.1.bak"));
        assert_eq!(
            next_backup_path(&path, 4),
            dir.path().join("mixseek.db.v4.2.bak")
        );
        let (_, other) = create_backup_file(&path, 3).expect("another version");
        assert_eq!(other, dir.path().join("mixseek.db.v3.bak"));
    }
}
