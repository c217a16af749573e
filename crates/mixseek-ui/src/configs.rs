//! The orchestrator configurations a run may use: the `.toml` files inside the workspace
//! whose top level has an `[orchestrator]` table. A chosen path must be one of them, so a
//! request cannot name a file outside the workspace (`..`, an absolute path or a symbolic
//! link leading out are all refused).

use std::path::{Path, PathBuf};

/// Folders never searched (logs, caches, build output, hidden folders).
const SKIP: [&str; 4] = ["logs", "target", "node_modules", "__pycache__"];
/// How deep below the workspace configurations are looked for.
const MAX_DEPTH: usize = 5;
/// At most this many files are offered.
const MAX_FILES: usize = 500;

/// The orchestrator configurations in `workspace`, as paths relative to it, sorted.
pub(crate) fn list(workspace: &Path) -> Vec<String> {
    let Ok(root) = workspace.canonicalize() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk(&root, &root, 0, &mut out);
    out.sort();
    out
}

fn walk(root: &Path, dir: &Path, depth: usize, out: &mut Vec<String>) {
    if depth > MAX_DEPTH || out.len() >= MAX_FILES {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let path = e.path();
        // follow no link out of the workspace
        let Ok(real) = path.canonicalize() else {
            continue;
        };
        if !real.starts_with(root) {
            continue;
        }
        if real.is_dir() {
            if !name.starts_with('.') && !SKIP.contains(&name) {
                walk(root, &path, depth + 1, out);
            }
        } else if name.ends_with(".toml") && is_orchestrator(&real) {
            if let Ok(rel) = path.strip_prefix(root) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
        if out.len() >= MAX_FILES {
            return;
        }
    }
}

fn is_orchestrator(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    toml::from_str::<toml::Table>(&text)
        .is_ok_and(|t| t.get("orchestrator").is_some_and(toml::Value::is_table))
}

/// The absolute path of `chosen`, which must be one of [`list`]'s; `None` otherwise.
pub(crate) fn resolve(workspace: &Path, chosen: &str) -> Option<PathBuf> {
    let root = workspace.canonicalize().ok()?;
    if !list(workspace).iter().any(|c| c == chosen) {
        return None;
    }
    let real = root.join(chosen).canonicalize().ok()?;
    real.starts_with(&root).then_some(real)
}

/// `path` relative to the workspace, if it is inside it.
pub(crate) fn relative(workspace: &Path, path: &str) -> Option<String> {
    let root = workspace.canonicalize().ok()?;
    let real = Path::new(path).canonicalize().ok()?;
    real.strip_prefix(&root)
        .ok()
        .map(|r| r.to_string_lossy().replace('\\', "/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_orchestrator_files_inside_the_workspace() {
        let dir = tempfile::tempdir().expect("tmp");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("configs/a")).expect("mkdir");
        std::fs::create_dir_all(ws.join("logs")).expect("mkdir");
        std::fs::write(
            ws.join("configs/a/orch.toml"),
            "[orchestrator]\nteams = []\n",
        )
        .expect("w");
        std::fs::write(ws.join("configs/a/team.toml"), "[team]\nteam_id = \"t\"\n").expect("w");
        std::fs::write(ws.join("logs/orch.toml"), "[orchestrator]\n").expect("w");
        std::fs::write(dir.path().join("outside.toml"), "[orchestrator]\n").expect("w");
        assert_eq!(list(&ws), vec!["configs/a/orch.toml".to_string()]);
        assert!(resolve(&ws, "configs/a/orch.toml").is_some());
        assert!(resolve(&ws, "../outside.toml").is_none());
        assert!(resolve(&ws, "configs/a/team.toml").is_none());
        assert!(resolve(&ws, &dir.path().join("outside.toml").display().to_string()).is_none());
    }

    #[cfg(unix)]
    #[test]
    fn a_link_out_of_the_workspace_is_not_offered() {
        let dir = tempfile::tempdir().expect("tmp");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).expect("mkdir");
        std::fs::write(dir.path().join("outside.toml"), "[orchestrator]\n").expect("w");
        std::os::unix::fs::symlink(dir.path().join("outside.toml"), ws.join("link.toml"))
            .expect("link");
        assert!(list(&ws).is_empty());
        assert!(resolve(&ws, "link.toml").is_none());
    }
}
