//! Helpers for the end-to-end tests in `tests/`: they drive the real `mixseek` binary.

use std::path::{Path, PathBuf};

/// A temporary workspace plus a folder for config files.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }
    /// Writes a file under the sandbox and returns its path.
    pub fn write(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.dir.path().join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&p, content).expect("write");
        p
    }
    /// The `mixseek` binary with a clean environment (no MIXSEEK_* or provider keys) and the
    /// sandbox workspace.
    pub fn cmd(&self) -> assert_cmd::Command {
        let mut c = assert_cmd::Command::new(mixseek_bin());
        for (k, _) in std::env::vars() {
            if k.starts_with("MIXSEEK_")
                || k.ends_with("_API_KEY")
                || k == "OPENAI_BASE_URL"
                || k == "TZ"
            {
                c.env_remove(k);
            }
        }
        c.current_dir(self.path());
        c.arg("-w").arg(self.workspace());
        c.arg("--no-log-file");
        c
    }
}

impl Sandbox {
    /// The `mixseek` binary with a clean environment, run in the sandbox folder, with no `-w`
    /// and no `--no-log-file`: for the default workspace (`./mixseek-workspace`) and logging.
    pub fn bare_cmd(&self) -> assert_cmd::Command {
        let mut c = assert_cmd::Command::new(mixseek_bin());
        for (k, _) in std::env::vars() {
            if k.starts_with("MIXSEEK_")
                || k.ends_with("_API_KEY")
                || k == "OPENAI_BASE_URL"
                || k == "TZ"
                || k == "NO_COLOR"
            {
                c.env_remove(k);
            }
        }
        c.current_dir(self.path());
        c
    }

    /// Copies a folder of the repository (e.g. `configs/quickstart`) into the sandbox, at the
    /// same relative path.
    pub fn copy_from_repo(&self, rel: &str) -> PathBuf {
        let from = repo_root().join(rel);
        let to = self.path().join(rel);
        std::fs::create_dir_all(&to).expect("mkdir");
        for entry in std::fs::read_dir(&from).expect("read_dir") {
            let entry = entry.expect("entry");
            if entry.path().is_file() {
                std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
            }
        }
        to
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

/// The `mixseek` binary of this build: `target/debug/mixseek`, next to the test executable's
/// `deps/` folder. `cargo test --workspace` builds it (through mixseek-cli's own integration
/// tests); a test run that did not is told how to get it.
pub fn mixseek_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("CARGO_BIN_EXE_mixseek") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test executable lives in target/<profile>/deps");
    let bin = dir.join(format!("mixseek{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} does not exist: run the end-to-end tests with `cargo test --workspace`, which builds the binary",
        bin.display()
    );
    bin
}

/// The repository root (for `configs/`, `docs/`).
///
/// Read from `CARGO_MANIFEST_DIR` at run time (cargo sets it for every test it runs), not
/// baked in with `env!`: with a target directory shared between checkouts (CI's clone and a
/// working copy) cargo can reuse a test binary built in the other checkout, whose baked-in
/// path points there.
pub fn repo_root() -> PathBuf {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    manifest_dir.parent().expect("parent").to_path_buf()
}

/// A minimal valid offline competition in `dir`: orchestrator.toml + team + evaluator + judgment.
pub fn write_mock_competition(sb: &Sandbox, teams: &[&str]) -> PathBuf {
    let mut orch = String::from(
        "[orchestrator]\ntimeout_per_team_seconds = 60\nmin_rounds = 1\nmax_rounds = 2\nevaluator_config = \"evaluator.toml\"\njudgment_config = \"judgment.toml\"\n",
    );
    for t in teams {
        orch.push_str(&format!(
            "\n[[orchestrator.teams]]\nconfig = \"team_{t}.toml\"\n"
        ));
        sb.write(
            &format!("cfg/team_{t}.toml"),
            &format!(
                "[team]\nteam_id = \"{t}\"\nteam_name = \"Team {t}\"\n[team.leader]\nmodel = \"mock:leader-{t}\"\n[[team.members]]\nname = \"helper\"\ntype = \"plain\"\nmodel = \"mock:helper\"\n"
            ),
        );
    }
    sb.write("cfg/evaluator.toml", "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\n[[metrics]]\nname = \"Relevance\"\n");
    sb.write("cfg/judgment.toml", "model = \"mock:judge-continue\"\n");
    sb.write("cfg/orchestrator.toml", &orch)
}
