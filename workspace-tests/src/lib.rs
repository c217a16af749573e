//! Helpers for the end-to-end tests in `tests/`: they drive the real `mixseek` binary.

use std::path::{Path, PathBuf};

pub mod browser;
pub mod procfs;
pub mod ui;

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
        let mut c = assert_cmd::Command::from_std(self.process());
        c.arg("-w").arg(self.workspace());
        c.arg("--no-log-file");
        c
    }

    /// The `mixseek` binary as a process to spawn, in the sandbox folder, with a clean
    /// environment (no MIXSEEK_* or provider variables, no TZ) and no arguments.
    pub fn process(&self) -> std::process::Command {
        let mut c = std::process::Command::new(mixseek_bin());
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

/// The `mixseek` binary the end-to-end tests and the `exec` bench drive: the path in
/// `CARGO_BIN_EXE_mixseek` when it is set at run time (used as it is), else this build's
/// `target/<profile>/mixseek`, next to the test executable's `deps/` folder. `cargo test
/// --workspace` builds it (through mixseek-cli's own integration tests); a run that did not is
/// told how to get it, and a binary older than one of its Rust sources is refused (this package
/// cannot name it with `env!("CARGO_BIN_EXE_mixseek")`: cargo sets that only for the binary's
/// own package).
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
        "{} does not exist: build it with `cargo build --workspace --bins` (`cargo test --workspace` builds it too)",
        bin.display()
    );
    static FRESH: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    if let Err(why) = FRESH.get_or_init(|| check_fresh(&bin, &repo_root())) {
        panic!("{why}");
    }
    bin
}

/// `Err` when a source file the binary is built from is newer than `bin`: the tests would
/// run yesterday's binary (`cargo test -p workspace-tests` does not build it; `cargo test
/// --workspace` does, through mixseek-cli's own tests).
fn check_fresh(bin: &Path, root: &Path) -> Result<(), String> {
    let built = std::fs::metadata(bin)
        .and_then(|m| m.modified())
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    let crates = std::fs::read_dir(root.join("crates")).map_err(|e| e.to_string())?;
    for krate in crates.flatten() {
        // the test kit is not part of the binary
        if krate.file_name() == "mixseek-testkit" {
            continue;
        }
        let dir = krate.path();
        let mut files = vec![dir.join("Cargo.toml")];
        collect_files(&dir.join("src"), &mut files);
        for f in files {
            if let Ok(t) = std::fs::metadata(&f).and_then(|m| m.modified())
                && newest.as_ref().is_none_or(|(n, _)| t > *n)
            {
                newest = Some((t, f));
            }
        }
    }
    match newest {
        Some((t, f)) if t > built => Err(format!(
            "{} is older than {}: rebuild it with `cargo build --workspace --bins` \
             (or run `cargo test --workspace`, which builds it) before the end-to-end tests",
            bin.display(),
            f.display()
        )),
        _ => Ok(()),
    }
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            // Rust sources only: tests write snapshot files under src/ too
            out.push(p);
        }
    }
}

/// A finished command's exit code, stdout and stderr, for assertion messages.
pub fn describe(out: &std::process::Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
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

/// A successful command's stdout as JSON (the command's output in the panic otherwise).
pub fn json_stdout(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", describe(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(out)))
}

/// Runs [`write_mock_competition`] of `teams` to the end (offline) and returns its execution
/// id.
pub fn finished_mock_run(sb: &Sandbox, teams: &[&str]) -> String {
    let cfg = write_mock_competition(sb, teams);
    let out = sb
        .cmd()
        .args(["exec", "Write a haiku", "-f", "json", "-c"])
        .arg(&cfg)
        .output()
        .expect("run");
    json_stdout(&out)["execution_id"]
        .as_str()
        .expect("id")
        .to_string()
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

/// The count a bench's variable `name` asks for (`default` when it is unset); a value that is
/// not a whole number ≥ 1 is an error naming the variable, not a silent default.
pub fn bench_count(name: &str, default: usize) -> Result<usize, String> {
    count_of(name, std::env::var(name).ok().as_deref(), default)
}

/// [`bench_count`] on the variable's value.
fn count_of(name: &str, value: Option<&str>, default: usize) -> Result<usize, String> {
    match value {
        None => Ok(default),
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("{name}={v:?}: give a whole number, at least 1")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::{bench_count, check_fresh, count_of};
    use std::time::{Duration, SystemTime};

    fn touch(path: &std::path::Path, at: SystemTime) {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        let f = std::fs::File::create(path).expect("create");
        f.set_modified(at).expect("set mtime");
    }

    #[test]
    fn a_binary_older_than_a_source_file_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let then = SystemTime::now() - Duration::from_secs(3600);
        let bin = root.join("target/debug/mixseek");
        touch(&root.join("crates/mixseek-core/src/lib.rs"), then);
        touch(&root.join("crates/mixseek-core/Cargo.toml"), then);
        touch(&bin, then + Duration::from_secs(60));
        assert_eq!(check_fresh(&bin, root), Ok(()));
        // the test kit is not in the binary
        touch(
            &root.join("crates/mixseek-testkit/src/lib.rs"),
            SystemTime::now(),
        );
        assert_eq!(check_fresh(&bin, root), Ok(()));
        let edited = root.join("crates/mixseek-core/src/pii.rs");
        touch(&edited, SystemTime::now());
        let err = check_fresh(&bin, root).expect_err("stale");
        assert!(err.contains("pii.rs"), "{err}");
        assert!(err.contains("cargo build --workspace --bins"), "{err}");
    }

    #[test]
    fn bench_counts_are_whole_numbers_from_one() {
        assert_eq!(count_of("N", None, 7), Ok(7));
        assert_eq!(count_of("N", Some(" 12 "), 7), Ok(12));
        for bad in ["0", "-3", "ten", "1.5", ""] {
            let err = count_of("N", Some(bad), 7).expect_err(bad);
            assert!(err.starts_with("N=") && err.contains("at least 1"), "{err}");
        }
        assert_eq!(bench_count("MIXSEEK_TEST_UNSET_BENCH_COUNT", 3), Ok(3));
    }
}
