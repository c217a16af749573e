//! The workspace: where a run reads its configs from and writes `mixseek.db` and `logs/`.
//!
//! Resolution: `--workspace` > `MIXSEEK_WORKSPACE` > `./mixseek-workspace` (the documented
//! default, so the quick start needs no environment variable).
//!
//! Relative paths inside configs are resolved as the original does — against the workspace —
//! and, when that file does not exist, against the folder of the file that references them.
//! When neither exists, the error names both paths tried. A resolved path may not escape the
//! workspace or the referencing file's folder through `..` or symlinks.

use std::path::{Component, Path, PathBuf};

/// The default workspace folder name, relative to the current directory.
pub(crate) const DEFAULT_WORKSPACE_DIR: &str = "mixseek-workspace";

/// Where the workspace path came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkspaceSource {
    /// `--workspace`.
    Cli,
    /// `MIXSEEK_WORKSPACE`.
    Env,
    /// `./mixseek-workspace`.
    Default,
}

impl WorkspaceSource {
    /// How the source is shown (`cli (--workspace)`, …).
    pub fn describe(&self) -> &'static str {
        match self {
            WorkspaceSource::Cli => "cli (--workspace)",
            WorkspaceSource::Env => "env (MIXSEEK_WORKSPACE)",
            WorkspaceSource::Default => "default (./mixseek-workspace)",
        }
    }
}

/// The workspace directory, where the database, logs and configurations live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// Absolute path of the workspace root (it may not exist yet).
    pub root: PathBuf,
    /// Where the path came from.
    pub source: WorkspaceSource,
}

/// A path that could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// No candidate path exists.
    #[error("{what} not found: `{given}` (tried {})", tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" and "))]
    NotFound {
        /// What the path names (`configuration file`, …).
        what: String,
        /// The path as given.
        given: String,
        /// The paths tried.
        tried: Vec<PathBuf>,
    },
    /// The path leads outside the directory it must stay in.
    #[error("{what} `{given}` escapes {base} (`..` or a symlink leads to {resolved})", base = base.display(), resolved = resolved.display())]
    Escapes {
        /// What the path names.
        what: String,
        /// The path as given.
        given: String,
        /// The directory it must stay in.
        base: PathBuf,
        /// Where it leads.
        resolved: PathBuf,
    },
    /// An empty workspace path.
    #[error("workspace path is empty")]
    Empty,
}

fn absolutize(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

/// Removes `.` and resolves `..` lexically (no filesystem access).
pub(crate) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Canonical path when it exists, normalized otherwise.
fn real(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| normalize(p))
}

impl Workspace {
    /// Resolves the workspace from the CLI value and the environment.
    pub fn resolve(cli: Option<&Path>, env: Option<&str>) -> Result<Self, PathError> {
        if let Some(p) = cli {
            if p.as_os_str().is_empty() {
                return Err(PathError::Empty);
            }
            return Ok(Self {
                root: normalize(&absolutize(p)),
                source: WorkspaceSource::Cli,
            });
        }
        if let Some(e) = env.filter(|e| !e.trim().is_empty()) {
            return Ok(Self {
                root: normalize(&absolutize(Path::new(e))),
                source: WorkspaceSource::Env,
            });
        }
        Ok(Self {
            root: normalize(&absolutize(Path::new(DEFAULT_WORKSPACE_DIR))),
            source: WorkspaceSource::Default,
        })
    }

    /// Resolves from the CLI value and the process environment.
    pub fn from_env(cli: Option<&Path>) -> Result<Self, PathError> {
        let env = std::env::var("MIXSEEK_WORKSPACE").ok();
        Self::resolve(cli, env.as_deref())
    }

    /// A workspace at `root` (made absolute), as if given with `--workspace`.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self {
            root: normalize(&absolutize(&root.into())),
            source: WorkspaceSource::Cli,
        }
    }

    /// `mixseek.db` in the workspace.
    pub fn db_path(&self) -> PathBuf {
        self.root.join("mixseek.db")
    }
    /// `logs/` in the workspace.
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }
    /// `configs/` in the workspace.
    pub fn configs_dir(&self) -> PathBuf {
        self.root.join("configs")
    }

    /// A `-c/--config` path: absolute as is; relative against the workspace, then the current
    /// directory.
    pub fn resolve_cli_path(&self, given: &Path) -> Result<PathBuf, PathError> {
        if given.is_absolute() {
            return if given.exists() {
                Ok(given.to_path_buf())
            } else {
                Err(PathError::NotFound {
                    what: "configuration file".into(),
                    given: given.display().to_string(),
                    tried: vec![given.to_path_buf()],
                })
            };
        }
        let in_ws = normalize(&self.root.join(given));
        if in_ws.exists() {
            return Ok(in_ws);
        }
        let in_cwd = normalize(&absolutize(given));
        if in_cwd.exists() {
            return Ok(in_cwd);
        }
        Err(PathError::NotFound {
            what: "configuration file".into(),
            given: given.display().to_string(),
            tried: vec![in_ws, in_cwd],
        })
    }

    /// A path written inside a config file (`referenced_by`): absolute as is; relative against
    /// the workspace, then the referencing file's folder. The result must stay inside the base
    /// it was resolved against (after following symlinks).
    pub(crate) fn resolve_ref(
        &self,
        what: &str,
        given: &str,
        referenced_by: &Path,
    ) -> Result<PathBuf, PathError> {
        let p = Path::new(given);
        if p.is_absolute() {
            return if p.exists() {
                Ok(p.to_path_buf())
            } else {
                Err(PathError::NotFound {
                    what: what.into(),
                    given: given.into(),
                    tried: vec![p.to_path_buf()],
                })
            };
        }
        let file_dir = referenced_by
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let mut tried = Vec::new();
        for base in [self.root.clone(), file_dir] {
            let candidate = normalize(&base.join(p));
            if tried.contains(&candidate) {
                continue;
            }
            tried.push(candidate.clone());
            if candidate.exists() {
                let base_real = real(&base);
                let cand_real = real(&candidate);
                if !cand_real.starts_with(&base_real) {
                    return Err(PathError::Escapes {
                        what: what.into(),
                        given: given.into(),
                        base: base_real,
                        resolved: cand_real,
                    });
                }
                return Ok(candidate);
            }
        }
        Err(PathError::NotFound {
            what: what.into(),
            given: given.into(),
            tried,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_beats_env_beats_default() {
        let ws = Workspace::resolve(Some(Path::new("/a")), Some("/b")).expect("ok");
        assert_eq!(
            (ws.root.as_path(), ws.source),
            (Path::new("/a"), WorkspaceSource::Cli)
        );
        let ws = Workspace::resolve(None, Some("/b")).expect("ok");
        assert_eq!(
            (ws.root.as_path(), ws.source),
            (Path::new("/b"), WorkspaceSource::Env)
        );
        let ws = Workspace::resolve(None, None).expect("ok");
        assert!(ws.root.ends_with(DEFAULT_WORKSPACE_DIR));
        assert_eq!(ws.source, WorkspaceSource::Default);
    }

    #[test]
    fn refs_prefer_the_workspace_then_the_file_folder() {
        let ws_dir = tempfile::tempdir().expect("tmp");
        let other = tempfile::tempdir().expect("tmp");
        std::fs::write(other.path().join("team.toml"), "").expect("write");
        let ws = Workspace::at(ws_dir.path());
        let orch = other.path().join("orch.toml");
        let got = ws
            .resolve_ref("team config", "team.toml", &orch)
            .expect("found next to the file");
        assert_eq!(got, other.path().join("team.toml"));
        std::fs::write(ws_dir.path().join("team.toml"), "").expect("write");
        let got = ws
            .resolve_ref("team config", "team.toml", &orch)
            .expect("found in workspace");
        assert_eq!(got, ws_dir.path().join("team.toml"));
    }

    #[test]
    fn missing_refs_name_both_paths() {
        let ws_dir = tempfile::tempdir().expect("tmp");
        let other = tempfile::tempdir().expect("tmp");
        let ws = Workspace::at(ws_dir.path());
        let err = ws
            .resolve_ref("team config", "nope.toml", &other.path().join("o.toml"))
            .expect_err("missing");
        let msg = err.to_string();
        assert!(
            msg.contains(&ws_dir.path().join("nope.toml").display().to_string()),
            "{msg}"
        );
        assert!(
            msg.contains(&other.path().join("nope.toml").display().to_string()),
            "{msg}"
        );
    }

    #[test]
    fn dotdot_escapes_are_refused() {
        let root = tempfile::tempdir().expect("tmp");
        let ws_dir = root.path().join("ws");
        std::fs::create_dir_all(&ws_dir).expect("mkdir");
        std::fs::write(root.path().join("secret.toml"), "").expect("write");
        let ws = Workspace::at(&ws_dir);
        let err = ws
            .resolve_ref("team config", "../secret.toml", &ws_dir.join("o.toml"))
            .expect_err("escape");
        assert!(matches!(err, PathError::Escapes { .. }), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn symlink_escapes_are_refused() {
        let root = tempfile::tempdir().expect("tmp");
        let ws_dir = root.path().join("ws");
        std::fs::create_dir_all(&ws_dir).expect("mkdir");
        std::fs::write(root.path().join("secret.toml"), "").expect("write");
        std::os::unix::fs::symlink(root.path().join("secret.toml"), ws_dir.join("link.toml"))
            .expect("link");
        let ws = Workspace::at(&ws_dir);
        let err = ws
            .resolve_ref("team config", "link.toml", &ws_dir.join("o.toml"))
            .expect_err("escape");
        assert!(matches!(err, PathError::Escapes { .. }), "{err}");
    }
}
