//! What every command gets: the resolved workspace and the global flags.

use crate::error::CliError;
use std::path::{Path, PathBuf};

/// Global state of one CLI invocation.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    /// `-w/--workspace`, else `MIXSEEK_WORKSPACE`, else `./mixseek-workspace`.
    pub workspace: mixseek_config::Workspace,
    pub quiet: bool,
    pub verbose: bool,
}

impl Ctx {
    /// The workspace root (it may not exist yet; commands that write create it).
    pub(crate) fn workspace(&self) -> Result<PathBuf, CliError> {
        Ok(self.workspace.root.clone())
    }

    /// Resolves a `-c/--config` path: absolute as is; relative against the workspace, then the
    /// current directory; when neither exists the error names both.
    pub(crate) fn resolve_config_path(&self, given: &Path) -> Result<PathBuf, CliError> {
        self.workspace
            .resolve_cli_path(given)
            .map_err(CliError::from)
    }
}
