//! Function executors: the user's Python callable, run in a Python subprocess with the
//! original's contract — one string in, `str()` of the result out, coroutine functions
//! awaited, an exception is an `ERROR` with its text, `timeout_seconds` enforced. Unlike the
//! original (whose worker thread keeps running), a timed-out function is stopped: its
//! interpreter exits, and is killed with its process group if it does not.
//!
//! Each call is one interpreter (`assets/function_runner.py`): it loads the function and says
//! so (the step's build phase), then gets the input and answers one JSON line. Module-level
//! code therefore runs once per call, where the original imports a `module` once per process.

use mixseek_config::ExecutorSettings;
use mixseek_process::{RunError, Session};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The runner, passed to `python -c`.
const RUNNER: &str = include_str!("../../assets/function_runner.py");
/// The most bytes of one answer line (the content of a function's result).
const MAX_LINE: usize = 16 * 1024 * 1024;
/// How much of the interpreter's stderr is kept for messages.
const STDERR_KEPT: usize = 8 * 1024;
/// The variable naming the interpreter when neither the executor nor the workflow does.
pub(crate) const PYTHON_VAR: &str = "MIXSEEK_PYTHON";
/// Time granted past `timeout_seconds` for the interpreter to report the timeout itself
/// before it is killed.
const TIMEOUT_GRACE: Duration = Duration::from_secs(5);

/// A function executor, ready to be loaded.
#[derive(Debug, Clone)]
pub(crate) struct FunctionExecutor {
    name: String,
    python: PathBuf,
    spec: String,
    timeout_seconds: Option<u64>,
}

/// The result of one call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FunctionResult {
    /// `str()` of what the function returned.
    Success(String),
    /// Its exception's text, or the timeout message.
    Error(String),
}

/// A loaded function, waiting for its input.
#[derive(Debug)]
pub(crate) struct LoadedFunction {
    name: String,
    session: Session,
    python: PathBuf,
    timeout_seconds: Option<u64>,
}

#[derive(Deserialize)]
struct Built {
    built: bool,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

impl FunctionExecutor {
    /// The executor of `settings` (a `function` executor). The interpreter: the executor's
    /// `python`, else the workflow's, else `MIXSEEK_PYTHON`, else `python3`. A relative
    /// `plugin.path` is a file in the current directory, as in the original, else in
    /// `workflow_dir` (the workflow file's folder), so a workflow runs from anywhere.
    pub(crate) fn new(
        settings: &ExecutorSettings,
        workflow_python: Option<&str>,
        workflow_dir: Option<&Path>,
    ) -> Self {
        let plugin = settings.plugin.clone().unwrap_or_default();
        let trim = |s: Option<String>| s.map(|v| v.trim().to_string());
        let path = trim(plugin.path).map(|p| {
            let given = Path::new(&p);
            match workflow_dir {
                Some(dir)
                    if given.is_relative() && !given.is_file() && dir.join(given).is_file() =>
                {
                    dir.join(given).display().to_string()
                }
                _ => p,
            }
        });
        let spec = serde_json::json!({
            "module": trim(plugin.module),
            "path": path,
            "function": trim(plugin.function).unwrap_or_default(),
            "timeout": settings.timeout_seconds,
        });
        let python = settings
            .python
            .clone()
            .or_else(|| workflow_python.map(str::to_string))
            .or_else(|| {
                std::env::var(PYTHON_VAR)
                    .ok()
                    .filter(|v| !v.trim().is_empty())
            })
            .unwrap_or_else(|| "python3".into());
        Self {
            name: settings.name.clone(),
            python: PathBuf::from(python),
            spec: spec.to_string(),
            timeout_seconds: settings.timeout_seconds,
        }
    }

    /// Starts an interpreter and loads the function. `Err` is the build failure's text (the
    /// original's messages for a module that does not import, a missing attribute, …).
    pub(crate) async fn load(&self) -> Result<LoadedFunction, String> {
        let args = ["-c".to_string(), RUNNER.to_string(), self.spec.clone()];
        let mut session = Session::start(&self.python, &args, None, STDERR_KEPT).map_err(|e| {
            format!(
                "cannot start the Python interpreter `{}`: {e}; set `python = \"/path/to/python3\"` on the executor or [workflow], or the {PYTHON_VAR} variable",
                self.python.display()
            )
        })?;
        let line = match session.read_line(MAX_LINE).await {
            Ok(Some(l)) => l,
            Ok(None) => {
                let tail = session.stderr_after_kill().await;
                return Err(format!(
                    "the Python interpreter `{}` ended before it loaded the function: {}",
                    self.python.display(),
                    tail.text(600)
                ));
            }
            Err(e) => return Err(format!("cannot read the Python runner: {e}")),
        };
        match serde_json::from_slice::<Built>(&line) {
            Ok(Built { built: true, .. }) => Ok(LoadedFunction {
                name: self.name.clone(),
                session,
                python: self.python.clone(),
                timeout_seconds: self.timeout_seconds,
            }),
            Ok(Built { error, .. }) => Err(error.unwrap_or_default()),
            Err(e) => Err(format!(
                "the Python runner answered something else than its protocol ({e}): {}",
                String::from_utf8_lossy(&line)
                    .chars()
                    .take(200)
                    .collect::<String>()
            )),
        }
    }
}

impl LoadedFunction {
    /// Calls the function with `input`. Returns the result and how long the call took.
    pub(crate) async fn call(&mut self, input: &str) -> (FunctionResult, Duration) {
        let started = Instant::now();
        tracing::info!(function_name = %self.name, "function_execution_start");
        let result = self.exchange(input).await;
        let elapsed = started.elapsed();
        match &result {
            FunctionResult::Success(_) => tracing::info!(
                function_name = %self.name,
                execution_time_ms = elapsed.as_millis() as u64,
                "function_execution_complete"
            ),
            FunctionResult::Error(e) => {
                tracing::error!(function_name = %self.name, error = %e, "function_execution_error")
            }
        }
        (result, elapsed)
    }

    async fn exchange(&mut self, input: &str) -> FunctionResult {
        if let Err(e) = self.session.send(input.as_bytes()).await {
            return FunctionResult::Error(format!("cannot pass the input to the function: {e}"));
        }
        let read = self.session.read_line(MAX_LINE);
        let line = match self.timeout_seconds {
            Some(t) => {
                match tokio::time::timeout(Duration::from_secs(t) + TIMEOUT_GRACE, read).await {
                    Ok(r) => r,
                    Err(_) => {
                        tracing::error!(function_name = %self.name, timeout_seconds = t, "function_execution_timeout");
                        return FunctionResult::Error(format!("function timed out after {t}s"));
                    }
                }
            }
            None => read.await,
        };
        match line {
            Ok(Some(l)) => match serde_json::from_slice::<Answer>(&l) {
                Ok(a) if a.status == "SUCCESS" => {
                    FunctionResult::Success(a.content.unwrap_or_default())
                }
                Ok(a) => FunctionResult::Error(a.error.unwrap_or_default()),
                Err(e) => FunctionResult::Error(format!(
                    "the Python runner answered something else than its protocol: {e}"
                )),
            },
            Ok(None) => FunctionResult::Error(format!(
                "the Python interpreter `{}` ended without an answer (killed, or the function ended the process)",
                self.python.display()
            )),
            Err(RunError::StdoutTooLarge { limit }) => FunctionResult::Error(format!(
                "the function's result is larger than {}",
                mixseek_process::bytes_text(limit)
            )),
            Err(e) => FunctionResult::Error(format!("cannot read the function's result: {e}")),
        }
    }

    /// Ends the interpreter (it exits by itself after answering); kept for its stderr in logs.
    pub(crate) async fn close(self) {
        let (_, tail) = self.session.finish().await;
        let text = tail.text(2000);
        if !text.is_empty() {
            tracing::debug!(function_name = %self.name, stderr = %text, "function output on stderr");
        }
    }
}

#[cfg(test)]
mod tests {
    //! Against the real interpreter (`python3`, or `MIXSEEK_PYTHON`): these are the contract.
    use super::*;
    use mixseek_config::{ExecutorType, PluginSettings};

    fn executor(dir: &Path, code: &str, function: &str, timeout: Option<u64>) -> FunctionExecutor {
        std::fs::write(dir.join("fns.py"), code).expect("write");
        let settings = ExecutorSettings {
            name: "f".into(),
            executor_type: Some(ExecutorType::Function),
            timeout_seconds: timeout,
            plugin: Some(PluginSettings {
                path: Some("fns.py".into()),
                function: Some(function.into()),
                ..PluginSettings::default()
            }),
            ..ExecutorSettings::default()
        };
        FunctionExecutor::new(&settings, None, Some(dir))
    }

    async fn call(f: &FunctionExecutor, input: &str) -> FunctionResult {
        let mut loaded = f.load().await.expect("loads");
        let (r, _) = loaded.call(input).await;
        loaded.close().await;
        r
    }

    #[tokio::test]
    async fn the_result_is_str_of_what_the_function_returns() {
        let dir = tempfile::tempdir().expect("tmp");
        let code = "import asyncio\nprint('noise on stdout')\ndef upper(s):\n    print('more noise')\n    return s.upper()\ndef d(s):\n    return {'n': len(s)}\ndef none(s):\n    return None\nasync def later(s):\n    await asyncio.sleep(0.01)\n    return 'async ' + s\n";
        let f = executor(dir.path(), code, "upper", None);
        assert_eq!(
            call(&f, "héllo \"x\"\n").await,
            FunctionResult::Success("HÉLLO \"X\"\n".into())
        );
        let f = executor(dir.path(), code, "d", None);
        assert_eq!(
            call(&f, "abc").await,
            FunctionResult::Success("{'n': 3}".into())
        );
        let f = executor(dir.path(), code, "none", None);
        assert_eq!(call(&f, "").await, FunctionResult::Success("None".into()));
        let f = executor(dir.path(), code, "later", Some(5));
        assert_eq!(
            call(&f, "x").await,
            FunctionResult::Success("async x".into())
        );
    }

    #[tokio::test]
    async fn an_exception_is_an_error_with_its_text() {
        let dir = tempfile::tempdir().expect("tmp");
        let code = "def bad(s):\n    raise ValueError('went wrong: ' + s)\ndef t(s):\n    raise TimeoutError('my own')\ndef ok(s):\n    return 'ERROR'\n";
        let f = executor(dir.path(), code, "bad", None);
        assert_eq!(
            call(&f, "x").await,
            FunctionResult::Error("went wrong: x".into())
        );
        // A TimeoutError of the function's own is an ordinary exception.
        let f = executor(dir.path(), code, "t", Some(5));
        assert_eq!(call(&f, "x").await, FunctionResult::Error("my own".into()));
        // Returning "ERROR" is a success.
        let f = executor(dir.path(), code, "ok", None);
        assert_eq!(call(&f, "x").await, FunctionResult::Success("ERROR".into()));
    }

    #[tokio::test]
    async fn a_timed_out_function_is_stopped() {
        let dir = tempfile::tempdir().expect("tmp");
        let marker = dir.path().join("still-running");
        let code = format!(
            "import time\ndef slow(s):\n    time.sleep(2)\n    open({:?}, 'w').write('x')\n    return 'late'\n",
            marker.display().to_string()
        );
        let f = executor(dir.path(), &code, "slow", Some(1));
        assert_eq!(
            call(&f, "x").await,
            FunctionResult::Error("function timed out after 1s".into())
        );
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert!(!marker.exists(), "the timed-out function went on running");
    }

    #[tokio::test]
    async fn loading_failures_are_the_originals_messages() {
        let dir = tempfile::tempdir().expect("tmp");
        let f = executor(dir.path(), "X = 1\n", "missing", None);
        let err = f.load().await.expect_err("no attribute");
        assert!(
            err.starts_with("Path '/") && err.ends_with("fns.py' has no attribute 'missing'"),
            "{err}"
        );
        let f = executor(dir.path(), "X = 1\n", "X", None);
        let err = f.load().await.expect_err("not callable");
        assert!(
            err.starts_with("'X' in path '") && err.ends_with("' is not callable"),
            "{err}"
        );
        let f = executor(dir.path(), "raise RuntimeError('at import')\n", "x", None);
        let err = f.load().await.expect_err("module code fails");
        assert!(
            err.starts_with("Failed to execute module from path '")
                && err.ends_with("': at import"),
            "{err}"
        );
        let module = ExecutorSettings {
            name: "m".into(),
            executor_type: Some(ExecutorType::Function),
            plugin: Some(PluginSettings {
                module: Some(" no_such_module_here ".into()),
                function: Some("f".into()),
                ..PluginSettings::default()
            }),
            ..ExecutorSettings::default()
        };
        let err = FunctionExecutor::new(&module, None, None)
            .load()
            .await
            .expect_err("no module");
        assert_eq!(
            err,
            "Failed to import module 'no_such_module_here': No module named 'no_such_module_here'"
        );
        let missing = ExecutorSettings {
            plugin: Some(PluginSettings {
                path: Some("nowhere/fns.py".into()),
                function: Some("f".into()),
                ..PluginSettings::default()
            }),
            ..module.clone()
        };
        let err = FunctionExecutor::new(&missing, None, Some(dir.path()))
            .load()
            .await
            .expect_err("no file");
        assert_eq!(
            err,
            "Failed to load function from path 'nowhere/fns.py'. FileNotFoundError: File not found or is not a regular file. Check file path in TOML config."
        );
        let no_python = ExecutorSettings {
            python: Some("/nonexistent/python9".into()),
            ..module
        };
        let err = FunctionExecutor::new(&no_python, None, None)
            .load()
            .await
            .expect_err("no interpreter");
        assert!(
            err.starts_with("cannot start the Python interpreter `/nonexistent/python9`"),
            "{err}"
        );
        assert!(err.contains("MIXSEEK_PYTHON"), "{err}");
    }
}
