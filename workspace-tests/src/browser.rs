//! A small async WebDriver client (the W3C protocol over HTTP) for the end-to-end browser
//! tests: [`Browser::start`] runs Debian's `chromedriver` on a free 127.0.0.1 port, which drives
//! a headless `chromium` with a fresh profile.
//!
//! ```no_run
//! # async fn demo(url: &str) -> Result<(), workspace_tests::browser::BrowserError> {
//! use std::time::Duration;
//! use workspace_tests::browser::{Browser, browser_available, screenshot_dir};
//!
//! if !browser_available("demo") {
//!     return Ok(());
//! }
//! let browser = Browser::start().await?;
//! browser.goto(url).await?;
//! browser.type_into("#name", "Ada").await?;
//! browser.click("#go").await?;
//! browser.wait_for_text("#out", "Hello, Ada", Duration::from_secs(5)).await?;
//! browser.screenshot(screenshot_dir().join("demo.png")).await?;
//! browser.quit().await?;
//! # Ok(())
//! # }
//! ```
//!
//! Dropping a [`Browser`] without [`Browser::quit`] (a failed assertion) still ends the
//! session, kills chromedriver's process group and any Chromium process of its profile.

use base64::Engine as _;
use reqwest::Method;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The key of a web element reference in WebDriver JSON.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";
/// How often the `wait_*` methods look again.
const POLL: Duration = Duration::from_millis(100);
/// How long chromedriver has to answer "ready" on `/status`.
const DRIVER_READY_TIMEOUT: Duration = Duration::from_secs(20);
/// The limit of one WebDriver command (a page load is bounded at 30 s by the session).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Chromium's switches besides `--user-data-dir`: headless, and no background connections
/// (this machine's closed network refuses them, and Chromium then refuses ours).
const CHROMIUM_ARGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
];
/// What to install when the browser is missing.
const INSTALL_HINT: &str = "install them with `apt-get install chromium chromium-driver`";

/// An error of the browser client; WebDriver errors carry the server's error code and message.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// A program is missing.
    #[error("`{0}` not found: {INSTALL_HINT}")]
    NotInstalled(&'static str),
    /// chromedriver did not start, or did not get ready (with the end of its log).
    #[error("chromedriver did not start: {0}")]
    Start(String),
    /// The WebDriver server answered `command` with an error.
    #[error("WebDriver {command}: {error}: {message}")]
    WebDriver {
        /// The method and path, e.g. `POST /element`.
        command: String,
        /// The WebDriver error code, e.g. `no such element`.
        error: String,
        /// The server's message.
        message: String,
    },
    /// The HTTP request to chromedriver failed.
    #[error("WebDriver {command}: {source}")]
    Http {
        /// The method and path.
        command: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
    /// chromedriver's answer was not what the protocol says.
    #[error("WebDriver {command}: unexpected answer: {detail}")]
    Protocol {
        /// The method and path.
        command: String,
        /// What was wrong, with the answer.
        detail: String,
    },
    /// A `wait_*` method ran out of time.
    #[error("timed out after {waited:?}: {what}")]
    Timeout {
        /// How long it waited.
        waited: Duration,
        /// What it waited for, and what it saw last.
        what: String,
    },
    /// A file could not be written or created.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl BrowserError {
    /// The WebDriver error code (`no such element`, `unexpected alert open`, …), if this is
    /// an error the server answered.
    pub fn webdriver_error(&self) -> Option<&str> {
        match self {
            Self::WebDriver { error, .. } => Some(error),
            _ => None,
        }
    }

    /// An error a `wait_*` method looks again after: the element is not (or no longer) there.
    fn is_transient(&self) -> bool {
        matches!(
            self.webdriver_error(),
            Some("no such element" | "stale element reference")
        )
    }
}

/// Whether Chromium and chromedriver are installed, for a browser test named `test` to call
/// first. When they are missing it panics if `MIXSEEK_REQUIRE_BROWSER=1`; otherwise it prints
/// a `SKIPPED <test>` notice to stderr and returns `false`, so the test can return early.
pub fn browser_available(test: &str) -> bool {
    let missing: Vec<&str> = [
        ("chromium", chromium_path()),
        ("chromedriver", chromedriver_path()),
    ]
    .into_iter()
    .filter(|(_, path)| path.is_none())
    .map(|(name, _)| name)
    .collect();
    if missing.is_empty() {
        return true;
    }
    let what = format!("{} not found: {INSTALL_HINT}", missing.join(" and "));
    if std::env::var("MIXSEEK_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
        panic!("{test}: MIXSEEK_REQUIRE_BROWSER=1 but {what}");
    }
    eprintln!(
        "\n******** SKIPPED {test}: {what} (set MIXSEEK_REQUIRE_BROWSER=1 to fail instead) ********\n"
    );
    false
}

/// Where tests put their screenshots: `MIXSEEK_SCREENSHOT_DIR` if set, else
/// `<CARGO_TARGET_DIR or target>/ui-screenshots` (a relative target directory is taken from
/// the repository root).
pub fn screenshot_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MIXSEEK_SCREENSHOT_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("target"), PathBuf::from);
    crate::repo_root().join(target).join("ui-screenshots")
}

/// `/usr/bin/chromium`, else `chromium` on `PATH`.
fn chromium_path() -> Option<PathBuf> {
    find_program("chromium", "/usr/bin/chromium")
}

/// `/usr/bin/chromedriver`, else `chromedriver` on `PATH`.
fn chromedriver_path() -> Option<PathBuf> {
    find_program("chromedriver", "/usr/bin/chromedriver")
}

fn find_program(name: &str, usual: &str) -> Option<PathBuf> {
    let usual = Path::new(usual);
    if usual.is_file() {
        return Some(usual.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// One WebDriver session: the HTTP client and `http://127.0.0.1:<port>/session/<id>`.
#[derive(Debug, Clone)]
struct Session {
    http: reqwest::Client,
    url: String,
}

impl Session {
    async fn get(&self, path: &str) -> Result<Value, BrowserError> {
        self.call(Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value, BrowserError> {
        self.call(Method::POST, path, Some(body)).await
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, BrowserError> {
        let url = format!("{}{path}", self.url);
        let command = format!(
            "{method} {}",
            if path.is_empty() { "/session" } else { path }
        );
        call(&self.http, method, &url, command, body).await
    }
}

/// Sends one WebDriver command and returns the answer's `value`.
async fn call(
    http: &reqwest::Client,
    method: Method,
    url: &str,
    command: String,
    body: Option<Value>,
) -> Result<Value, BrowserError> {
    let mut request = http.request(method, url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = match request.send().await {
        Ok(r) => r,
        Err(source) => return Err(BrowserError::Http { command, source }),
    };
    let status = response.status();
    let bytes = match response.bytes().await {
        Ok(b) => b,
        Err(source) => return Err(BrowserError::Http { command, source }),
    };
    let mut answer: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return Err(BrowserError::Protocol {
                command,
                detail: format!("HTTP {status}, not JSON ({e}): {}", excerpt(&bytes)),
            });
        }
    };
    let value = answer.get_mut("value").map(Value::take).unwrap_or_default();
    if status.is_success() {
        return Ok(value);
    }
    match value.get("error").and_then(Value::as_str) {
        Some(error) => Err(BrowserError::WebDriver {
            command,
            error: error.to_string(),
            message: value
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        }),
        None => Err(BrowserError::Protocol {
            command,
            detail: format!("HTTP {status}: {}", excerpt(&bytes)),
        }),
    }
}

/// The first 500 characters of an answer, for error messages.
fn excerpt(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).chars().take(500).collect()
}

/// An element of the page (a WebDriver element reference).
#[derive(Debug, Clone)]
pub struct Element {
    session: Session,
    id: String,
}

impl Element {
    fn from_reference(
        session: &Session,
        value: &Value,
        command: &str,
    ) -> Result<Self, BrowserError> {
        match value.get(ELEMENT_KEY).and_then(Value::as_str) {
            Some(id) => Ok(Self {
                session: session.clone(),
                id: id.to_string(),
            }),
            None => Err(BrowserError::Protocol {
                command: command.to_string(),
                detail: format!("not an element reference: {value}"),
            }),
        }
    }

    /// The element as an argument of [`Browser::execute`] (`arguments[i]` is the DOM node).
    pub fn as_arg(&self) -> Value {
        json!({ ELEMENT_KEY: self.id })
    }

    /// Its rendered text (as the user sees it: hidden parts are left out).
    pub async fn text(&self) -> Result<String, BrowserError> {
        let v = self
            .session
            .get(&format!("/element/{}/text", self.id))
            .await?;
        Ok(v.as_str().unwrap_or_default().to_string())
    }

    /// Clicks it (scrolled into view; an error if something else would get the click).
    pub async fn click(&self) -> Result<(), BrowserError> {
        self.session
            .post(&format!("/element/{}/click", self.id), json!({}))
            .await
            .map(drop)
    }

    /// The HTML attribute `name` as written in the page (`None` when absent). For the live
    /// value of an input, use [`Element::property`] `"value"`.
    pub async fn attr(&self, name: &str) -> Result<Option<String>, BrowserError> {
        let v = self
            .session
            .get(&format!("/element/{}/attribute/{name}", self.id))
            .await?;
        Ok(v.as_str().map(str::to_string))
    }

    /// The DOM property `name` (e.g. `value`, `checked`), `Null` when undefined.
    pub async fn property(&self, name: &str) -> Result<Value, BrowserError> {
        self.session
            .get(&format!("/element/{}/property/{name}", self.id))
            .await
    }

    /// Types `text` into it (focused first; appended to what is there).
    pub async fn send_keys(&self, text: &str) -> Result<(), BrowserError> {
        self.session
            .post(
                &format!("/element/{}/value", self.id),
                json!({ "text": text }),
            )
            .await
            .map(drop)
    }

    /// Empties an input or textarea.
    pub async fn clear(&self) -> Result<(), BrowserError> {
        self.session
            .post(&format!("/element/{}/clear", self.id), json!({}))
            .await
            .map(drop)
    }
}

/// A headless Chromium driven through its own chromedriver. End it with [`Browser::quit`];
/// dropping it cleans up too (best-effort, blocking for at most a few seconds).
#[derive(Debug)]
pub struct Browser {
    session: Session,
    /// chromedriver's port.
    port: u16,
    /// chromedriver; its pid is its process group's id.
    driver: tokio::process::Child,
    /// The group is still to be killed.
    driver_pgid: Option<u32>,
    /// The session is still to be deleted.
    open: bool,
    /// Chromium's profile and chromedriver's log.
    dir: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver on a free 127.0.0.1 port, waits (up to 20 s) until it is ready,
    /// then opens a session with a headless Chromium on a fresh profile.
    pub async fn start() -> Result<Self, BrowserError> {
        let chromium = chromium_path().ok_or(BrowserError::NotInstalled("chromium"))?;
        let driver = chromedriver_path().ok_or(BrowserError::NotInstalled("chromedriver"))?;
        let dir = tempfile::Builder::new()
            .prefix("mixseek-browser-")
            .tempdir()
            .map_err(|source| BrowserError::Io {
                context: "creating the browser's temporary folder".into(),
                source,
            })?;
        let profile = dir.path().join("profile");
        let log = dir.path().join("chromedriver.log");
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|source| BrowserError::Http {
                command: "building the HTTP client".into(),
                source,
            })?;
        // The free port can be taken before chromedriver binds it: then it exits, and we
        // try another.
        let mut attempt = 0;
        let (driver, port) = loop {
            attempt += 1;
            let port = free_port()?;
            let mut child = spawn_driver(&driver, port, &log)?;
            match wait_ready(&http, port, &mut child, &log).await {
                Ok(()) => break (child, port),
                Err(Ready::Exited(why)) if attempt < 3 => {
                    eprintln!("chromedriver on port {port} exited ({why}); trying another port");
                }
                Err(Ready::Exited(why) | Ready::Late(why)) => {
                    if let Some(pgid) = child.id() {
                        kill_group(pgid);
                    }
                    return Err(BrowserError::Start(why));
                }
            }
        };
        let mut browser = Self {
            session: Session {
                http,
                url: String::new(),
            },
            port,
            driver_pgid: driver.id(),
            driver,
            open: false,
            dir,
        };
        // From here on, dropping `browser` cleans up after a failure.
        let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|a| a.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        let capabilities = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "timeouts": { "pageLoad": 30_000, "script": 30_000, "implicit": 0 },
            "goog:chromeOptions": { "binary": chromium, "args": args },
            // The page's console, for `console_log`.
            "goog:loggingPrefs": { "browser": "ALL" },
        }}});
        let value = call(
            &browser.session.http,
            Method::POST,
            &format!("http://127.0.0.1:{port}/session"),
            "POST /session".into(),
            Some(capabilities),
        )
        .await
        .map_err(|e| {
            BrowserError::Start(format!(
                "no session: {e}\n{}",
                log_tail(&browser.dir.path().join("chromedriver.log"))
            ))
        })?;
        let Some(id) = value.get("sessionId").and_then(Value::as_str) else {
            return Err(BrowserError::Protocol {
                command: "POST /session".into(),
                detail: format!("no sessionId in {value}"),
            });
        };
        browser.session.url = format!("http://127.0.0.1:{port}/session/{id}");
        browser.open = true;
        Ok(browser)
    }

    /// Opens `url` and waits until it is loaded.
    pub async fn goto(&self, url: &str) -> Result<(), BrowserError> {
        self.session
            .post("/url", json!({ "url": url }))
            .await
            .map(drop)
    }

    /// The URL of the page shown.
    pub async fn current_url(&self) -> Result<String, BrowserError> {
        Ok(string(self.session.get("/url").await?))
    }

    /// The page's title.
    pub async fn title(&self) -> Result<String, BrowserError> {
        Ok(string(self.session.get("/title").await?))
    }

    /// The first element matching the CSS selector `css` (error `no such element` if none).
    pub async fn find(&self, css: &str) -> Result<Element, BrowserError> {
        let v = self
            .session
            .post("/element", json!({ "using": "css selector", "value": css }))
            .await?;
        Element::from_reference(&self.session, &v, "POST /element")
    }

    /// Every element matching `css`, in document order (empty if none).
    pub async fn find_all(&self, css: &str) -> Result<Vec<Element>, BrowserError> {
        let v = self
            .session
            .post(
                "/elements",
                json!({ "using": "css selector", "value": css }),
            )
            .await?;
        let Value::Array(items) = v else {
            return Err(BrowserError::Protocol {
                command: "POST /elements".into(),
                detail: format!("not a list: {v}"),
            });
        };
        items
            .iter()
            .map(|item| Element::from_reference(&self.session, item, "POST /elements"))
            .collect()
    }

    /// Waits up to `timeout` for an element matching `css`, looking every 100 ms.
    pub async fn wait_for(&self, css: &str, timeout: Duration) -> Result<Element, BrowserError> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.find(css).await {
                Ok(element) => return Ok(element),
                Err(e) if !e.is_transient() => return Err(e),
                Err(_) if Instant::now() >= deadline => {
                    return Err(BrowserError::Timeout {
                        waited: timeout,
                        what: format!("no element matches `{css}`"),
                    });
                }
                Err(_) => tokio::time::sleep(POLL).await,
            }
        }
    }

    /// Waits up to `timeout` until the text of the first element matching `css` contains
    /// `needle`, and returns that text. On timeout the error says what the text was.
    pub async fn wait_for_text(
        &self,
        css: &str,
        needle: &str,
        timeout: Duration,
    ) -> Result<String, BrowserError> {
        let deadline = Instant::now() + timeout;
        let mut last: Option<String> = None;
        loop {
            let seen = match self.find(css).await {
                Ok(element) => element.text().await,
                Err(e) => Err(e),
            };
            match seen {
                Ok(text) if text.contains(needle) => return Ok(text),
                Ok(text) => last = Some(text),
                Err(e) if !e.is_transient() => return Err(e),
                Err(_) => {}
            }
            if Instant::now() >= deadline {
                let what = match last {
                    Some(text) => {
                        format!("the text of `{css}` does not contain {needle:?}; it is {text:?}")
                    }
                    None => format!("no element matches `{css}` (waiting for text {needle:?})"),
                };
                return Err(BrowserError::Timeout {
                    waited: timeout,
                    what,
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The text of the first element matching `css`.
    pub async fn text(&self, css: &str) -> Result<String, BrowserError> {
        self.find(css).await?.text().await
    }

    /// Clicks the first element matching `css`.
    pub async fn click(&self, css: &str) -> Result<(), BrowserError> {
        self.find(css).await?.click().await
    }

    /// Empties the first input matching `css`, then types `text` into it.
    pub async fn type_into(&self, css: &str, text: &str) -> Result<(), BrowserError> {
        let element = self.find(css).await?;
        element.clear().await?;
        element.send_keys(text).await
    }

    /// Runs `script` (a function body: `return …` gives the result, `arguments[i]` the
    /// arguments, see [`Element::as_arg`]) in the page and returns its result as JSON.
    pub async fn execute(&self, script: &str, args: Vec<Value>) -> Result<Value, BrowserError> {
        self.session
            .post("/execute/sync", json!({ "script": script, "args": args }))
            .await
    }

    /// The browser console's messages since the last call, as (level, text): what pages
    /// logged, their uncaught errors, resources that failed to load and Content-Security-Policy
    /// violations. `SEVERE` is the level of an error.
    pub async fn console_log(&self) -> Result<Vec<(String, String)>, BrowserError> {
        let v = self
            .session
            .post("/se/log", json!({ "type": "browser" }))
            .await?;
        Ok(v.as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                (
                    string(e.get("level").cloned().unwrap_or_default()),
                    string(e.get("message").cloned().unwrap_or_default()),
                )
            })
            .collect())
    }

    /// The page's current HTML.
    pub async fn page_source(&self) -> Result<String, BrowserError> {
        Ok(string(self.session.get("/source").await?))
    }

    /// Saves a PNG screenshot of the window to `path` (creating its folder).
    pub async fn screenshot(&self, path: impl AsRef<Path>) -> Result<(), BrowserError> {
        let path = path.as_ref();
        let v = self.session.get("/screenshot").await?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .map_err(|e| BrowserError::Protocol {
                command: "GET /screenshot".into(),
                detail: format!("not base64: {e}"),
            })?;
        let io = |source| BrowserError::Io {
            context: format!("writing the screenshot {}", path.display()),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(path, png).map_err(io)
    }

    /// The text of the open `alert`/`confirm`/`prompt` dialog.
    pub async fn alert_text(&self) -> Result<String, BrowserError> {
        Ok(string(self.session.get("/alert/text").await?))
    }

    /// Accepts the open dialog (OK on a `confirm`).
    pub async fn accept_alert(&self) -> Result<(), BrowserError> {
        self.session
            .post("/alert/accept", json!({}))
            .await
            .map(drop)
    }

    /// Dismisses the open dialog (Cancel on a `confirm`).
    pub async fn dismiss_alert(&self) -> Result<(), BrowserError> {
        self.session
            .post("/alert/dismiss", json!({}))
            .await
            .map(drop)
    }

    /// Sets cookie `name` for the current page's domain (path `/`).
    pub async fn set_cookie(&self, name: &str, value: &str) -> Result<(), BrowserError> {
        self.session
            .post(
                "/cookie",
                json!({ "cookie": { "name": name, "value": value, "path": "/" } }),
            )
            .await
            .map(drop)
    }

    /// The current page's cookies as (name, value) pairs.
    pub async fn get_cookies(&self) -> Result<Vec<(String, String)>, BrowserError> {
        let v = self.session.get("/cookie").await?;
        Ok(v.as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    string(c.get("name").cloned().unwrap_or_default()),
                    string(c.get("value").cloned().unwrap_or_default()),
                )
            })
            .collect())
    }

    /// Ends the session (Chromium closes), then stops chromedriver.
    pub async fn quit(mut self) -> Result<(), BrowserError> {
        self.open = false;
        let deleted = self.session.call(Method::DELETE, "", None).await.map(drop);
        self.kill_driver();
        // Reaps it (it was killed).
        let _ = tokio::time::timeout(Duration::from_secs(5), self.driver.wait()).await;
        deleted
    }

    /// SIGKILL to chromedriver's process group, then to any process left of this profile.
    fn kill_driver(&mut self) {
        if let Some(pgid) = self.driver_pgid.take() {
            kill_group(pgid);
        }
        kill_profile_processes(self.dir.path());
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if self.open {
            self.open = false;
            if let Some(id) = self.session.url.rsplit('/').next() {
                delete_session_blocking(self.port, id);
            }
        }
        self.kill_driver();
    }
}

/// A JSON string's content ("" for anything else).
fn string(v: Value) -> String {
    match v {
        Value::String(s) => s,
        _ => String::new(),
    }
}

/// A port nobody listens on at the moment.
fn free_port() -> Result<u16, BrowserError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|source| BrowserError::Io {
            context: "finding a free port for chromedriver".into(),
            source,
        })
}

fn spawn_driver(
    driver: &Path,
    port: u16,
    log: &Path,
) -> Result<tokio::process::Child, BrowserError> {
    let mut cmd = tokio::process::Command::new(driver);
    cmd.arg(format!("--port={port}"))
        .arg(format!("--log-path={}", log.display()))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    // Its own process group (pgid = its pid), so it and what it starts can be killed at once.
    #[cfg(unix)]
    cmd.process_group(0);
    cmd.spawn().map_err(|source| BrowserError::Io {
        context: format!("starting {}", driver.display()),
        source,
    })
}

/// Why chromedriver is not ready.
enum Ready {
    /// It exited (e.g. the port was taken).
    Exited(String),
    /// It did not say ready in time.
    Late(String),
}

/// Waits until chromedriver's `/status` says ready.
async fn wait_ready(
    http: &reqwest::Client,
    port: u16,
    child: &mut tokio::process::Child,
    log: &Path,
) -> Result<(), Ready> {
    let deadline = Instant::now() + DRIVER_READY_TIMEOUT;
    let url = format!("http://127.0.0.1:{port}/status");
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Ready::Exited(format!(
                "chromedriver exited ({status})\n{}",
                log_tail(log)
            )));
        }
        let ready = http
            .get(&url)
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .ok()
            .map(|r| r.json::<Value>());
        if let Some(answer) = ready {
            if let Ok(v) = answer.await {
                if v["value"]["ready"] == Value::Bool(true) {
                    return Ok(());
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(Ready::Late(format!(
                "chromedriver on port {port} was not ready within {DRIVER_READY_TIMEOUT:?}\n{}",
                log_tail(log)
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The last lines of chromedriver's log, for error messages.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(15)..].join("\n");
    format!("chromedriver log ({}):\n{tail}", log.display())
}

/// `DELETE /session/<id>` with a blocking socket (for `Drop`, which cannot await): Chromium
/// closes cleanly. Best-effort, at most a few seconds.
fn delete_session_blocking(port: u16, id: &str) {
    use std::io::{Read, Write};
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let Ok(mut stream) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let request = format!(
        "DELETE /session/{id} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    if stream.write_all(request.as_bytes()).is_err() {
        return;
    }
    // chromedriver keeps the connection open despite `Connection: close`: read until the
    // body is in (Chromium is gone by then).
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    while !http_answer_complete(&answer) {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => answer.extend_from_slice(chunk.get(..n).unwrap_or_default()),
        }
    }
}

/// Whether `answer` holds an HTTP response's head and its `Content-Length` bytes of body.
fn http_answer_complete(answer: &[u8]) -> bool {
    let Some(head_end) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(answer.get(..head_end).unwrap_or_default());
    let length = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .unwrap_or(0);
    answer.len() >= head_end + 4 + length
}

/// SIGKILL to the process group `pgid`.
#[cfg(unix)]
fn kill_group(pgid: u32) {
    use rustix::process::{Pid, Signal, kill_process_group};
    if let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) {
        // ESRCH: nothing left in the group.
        let _ = kill_process_group(pid, Signal::KILL);
    }
}

#[cfg(not(unix))]
fn kill_group(_pgid: u32) {}

/// SIGKILL to every process whose command line names `dir` (Chromium's processes of this
/// profile), in case one left chromedriver's process group.
#[cfg(target_os = "linux")]
fn kill_profile_processes(dir: &Path) {
    use rustix::process::{Pid, Signal, kill_process};
    let marker = dir.as_os_str().as_encoded_bytes();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
            .and_then(Pid::from_raw)
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if !marker.is_empty() && cmdline.windows(marker.len()).any(|w| w == marker) {
            let _ = kill_process(pid, Signal::KILL);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn kill_profile_processes(_dir: &Path) {}

#[cfg(test)]
mod tests {
    use super::http_answer_complete;

    #[test]
    fn an_http_answer_is_complete_once_its_content_length_is_in() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length:14\r\nConnection:close\r\n\r\n";
        assert!(!http_answer_complete(&head[..20]));
        assert!(!http_answer_complete(head));
        let whole = [&head[..], b"{\"value\":null}"].concat();
        assert!(!http_answer_complete(&whole[..whole.len() - 1]));
        assert!(http_answer_complete(&whole));
        assert!(http_answer_complete(b"HTTP/1.1 204 No Content\r\n\r\n"));
    }
}
