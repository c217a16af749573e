//! Files rewritten whole many times (each team's progress file, at every step of its run),
//! kept open between rewrites: opening one again by its path costs more than the rewrite
//! itself (the measurements are in docs/benchmarks.md).
//!
//! A rewrite writes over the old content in place and cuts the file only when the new content
//! is shorter. Opening with `O_TRUNC` instead frees the file's block and allocates it again at
//! every write, which on ext4 costs many times as much (docs/benchmarks.md).
//! A kept file that was removed behind our back (its last link gone) is opened again by its
//! path, so the file comes back.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Most files kept open at once: past it, all are closed and the next writes open them again
/// (a run of 1,000 teams must not hold 1,000 descriptors).
const MAX_OPEN: usize = 128;

/// An open file and the length of what was last written to it.
#[derive(Debug)]
struct Kept {
    file: File,
    len: u64,
}

/// The files kept open, by path. One lock for all: a rewrite is a few microseconds.
#[derive(Debug, Default)]
pub(crate) struct OpenFiles {
    files: Mutex<HashMap<PathBuf, Kept>>,
}

impl OpenFiles {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Kept>> {
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the content of the file at `path` with `text` (creating the file, not its
    /// folder), and keeps it open for the next rewrite.
    pub(crate) fn rewrite(&self, path: &Path, text: &str) -> std::io::Result<()> {
        let mut files = self.lock();
        if let Some(kept) = files.get_mut(path) {
            match rewrite_kept(kept, text) {
                Ok(true) => return Ok(()),
                // removed, or failing: dropped, and opened again below
                Ok(false) | Err(_) => {
                    files.remove(path);
                }
            }
        }
        let mut kept = Kept {
            file: std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)?,
            // what an existing file holds is cut to the new length below
            len: u64::MAX,
        };
        rewrite_kept(&mut kept, text)?;
        if files.len() >= MAX_OPEN {
            files.clear();
        }
        files.insert(path.to_path_buf(), kept);
        Ok(())
    }

    /// Closes the file at `path` (its last rewrite is done), if it is open.
    pub(crate) fn close(&self, path: &Path) {
        self.lock().remove(path);
    }

    /// How many files are open.
    #[cfg(test)]
    pub(crate) fn open_count(&self) -> usize {
        self.lock().len()
    }
}

/// Rewrites a kept file; `false` when the file was removed since it was opened (the text is
/// then not written: it would go to a file no one can read).
fn rewrite_kept(kept: &mut Kept, text: &str) -> std::io::Result<bool> {
    if removed(&kept.file)? {
        return Ok(false);
    }
    kept.file.rewind()?;
    kept.file.write_all(text.as_bytes())?;
    let len = text.len() as u64;
    if len < kept.len {
        kept.file.set_len(len)?;
    }
    kept.len = len;
    Ok(true)
}

/// Whether the open `file` has no name left in the file system.
#[cfg(unix)]
fn removed(file: &File) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    Ok(file.metadata()?.nlink() == 0)
}

/// Elsewhere a file open for writing cannot be removed.
#[cfg(not(unix))]
fn removed(_file: &File) -> std::io::Result<bool> {
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).expect("read")
    }

    #[test]
    fn a_rewrite_replaces_the_whole_content_longer_or_shorter() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("f.json");
        // a file left by an earlier process, longer than the first rewrite
        std::fs::write(&path, "left by an earlier process").expect("w");
        let files = OpenFiles::default();
        files.rewrite(&path, "0123456789").expect("write");
        assert_eq!(read(&path), "0123456789");
        files.rewrite(&path, "abc").expect("write");
        assert_eq!(read(&path), "abc");
        files.rewrite(&path, "abcdef").expect("write");
        assert_eq!(read(&path), "abcdef");
        files.rewrite(&path, "xy").expect("write");
        assert_eq!(read(&path), "xy");
        assert_eq!(files.open_count(), 1);
        files.close(&path);
        assert_eq!(files.open_count(), 0);
        files.rewrite(&path, "z").expect("write");
        assert_eq!(read(&path), "z");
    }

    #[cfg(unix)]
    #[test]
    fn a_file_removed_while_open_comes_back_at_the_next_rewrite() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("f.json");
        let files = OpenFiles::default();
        files.rewrite(&path, "first").expect("write");
        std::fs::remove_file(&path).expect("rm");
        files.rewrite(&path, "second").expect("write");
        assert_eq!(read(&path), "second");
        // its folder gone too: the error says so (the caller creates the folder and retries)
        drop(dir);
        let err = files.rewrite(&path, "third").expect_err("no folder");
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn no_more_than_max_open_files_stay_open() {
        let dir = tempfile::tempdir().expect("tmp");
        let files = OpenFiles::default();
        for i in 0..MAX_OPEN + 5 {
            files
                .rewrite(&dir.path().join(format!("{i}.json")), "x")
                .expect("write");
        }
        assert!(files.open_count() <= MAX_OPEN, "{}", files.open_count());
        for i in 0..MAX_OPEN + 5 {
            assert_eq!(read(&dir.path().join(format!("{i}.json"))), "x");
        }
    }
}
