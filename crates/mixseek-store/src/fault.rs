//! Test-only fault injection for the writer: a full disk or a read-only file system where the
//! machine cannot provide a real one (mounting a small file system needs root). The
//! end-to-end tests of the `mixseek` binary use a real tmpfs / ext4 where they can, and this
//! otherwise.
//!
//! In a build with debug assertions (the dev profile the tests use),
//! `MIXSEEK_TEST_STORE_FAULT=KIND:MARKER` makes every write transaction fail before its commit,
//! while the file `MARKER` exists, with the operating system's error `KIND`: `enospc` ("No
//! space left on device") or `erofs` ("Read-only file system"). Removing the file is "space is
//! back". A release build compiles the check out: no environment can trigger it there.

use crate::error::Result;
use std::path::{Path, PathBuf};

/// The writer thread's injected fault (none unless the test variable asks for one).
#[derive(Debug, Default)]
pub(crate) struct Fault {
    #[cfg(debug_assertions)]
    armed: Option<(i32, PathBuf)>,
    db: PathBuf,
}

impl Fault {
    /// The fault `MIXSEEK_TEST_STORE_FAULT` asks for, for the database `db`.
    pub(crate) fn from_env(db: &Path) -> Self {
        Self {
            #[cfg(debug_assertions)]
            armed: std::env::var("MIXSEEK_TEST_STORE_FAULT")
                .ok()
                .and_then(|v| parse(&v)),
            db: db.to_path_buf(),
        }
    }

    /// `Err` (an I/O error on the database) while the fault is armed and its marker exists.
    pub(crate) fn check(&self) -> Result<()> {
        #[cfg(debug_assertions)]
        if let Some((errno, marker)) = &self.armed
            && marker.exists()
        {
            return Err(crate::error::StoreError::Io {
                path: self.db.clone(),
                source: std::io::Error::from_raw_os_error(*errno),
            });
        }
        let _ = &self.db;
        Ok(())
    }
}

/// `enospc:/path` → (ENOSPC, /path).
#[cfg(debug_assertions)]
fn parse(value: &str) -> Option<(i32, PathBuf)> {
    const ENOSPC: i32 = 28;
    const EROFS: i32 = 30;
    let (kind, marker) = value.split_once(':')?;
    let errno = match kind {
        "enospc" => ENOSPC,
        "erofs" => EROFS,
        _ => return None,
    };
    Some((errno, PathBuf::from(marker)))
}

#[cfg(all(test, debug_assertions))]
mod tests {
    use super::*;
    use crate::error::ErrorClass;

    #[test]
    fn the_fault_fails_writes_while_its_marker_exists() {
        let dir = tempfile::tempdir().expect("tempdir");
        let marker = dir.path().join("full");
        let fault = Fault {
            armed: parse(&format!("enospc:{}", marker.display())),
            db: dir.path().join("mixseek.db"),
        };
        assert!(fault.check().is_ok());
        std::fs::write(&marker, "").expect("marker");
        let err = fault.check().expect_err("armed");
        assert_eq!(err.class(), ErrorClass::Io);
        assert!(err.to_string().contains("No space left on device"), "{err}");
        assert_eq!(parse("erofs:/x").map(|p| p.0), Some(30));
        assert_eq!(parse("eio:/x"), None);
        assert!(Fault::default().check().is_ok());
    }
}
