//! `mixseek ui`: the web UI. This crate owns the HTTP server (axum) and its pages: **Run**
//! (pick a workspace configuration, preflight, start, a live view of every team, cancel,
//! resume), **Results** (one execution, paginated, built from the same view pieces as the
//! static HTML report, `mixseek_store::report::html`), **History** (every execution, filtered,
//! paginated, and the cross-execution leaderboard), **Compare** (executions side by side,
//! with their configuration differences) and **Experiments** (every experiment, and each one's
//! report, computed and rendered by `mixseek_experiment::report` as `mixseek experiment report`
//! does, with its items linking to their executions).
//!
//! Two rules shape it (docs/ARCHITECTURE.md, "The web UI and the database"):
//! * **It never holds the database.** DuckDB lets one process write a file, and no other
//!   process open it meanwhile. Each page opens `mixseek.db` read-only for one read and closes
//!   it, so `mixseek exec` in another terminal can always start (a writer waits
//!   [`mixseek_store::WRITER_WAIT`] for such a read). While a run holds the file, the UI follows
//!   it through its progress files (`logs/*.progress.json`, `logs/*.execution.json`).
//! * **Runs are separate processes.** A run started from the UI is a `mixseek exec` child
//!   process; cancelling it sends the same SIGINT as Ctrl-C (committed rounds kept,
//!   resumable), and closing the UI does not stop it.
//!
//! Security: it binds 127.0.0.1 by default (and then accepts only a loopback `Host`, against
//! DNS rebinding); another address needs an access token on every request; every
//! state-changing request must come from the UI's own origin; every stored text is escaped;
//! configuration paths cannot leave the workspace; no secret is ever sent to the browser.

mod assets;
mod configs;
mod data;
mod error;
mod layout;
mod live;
mod pages;
mod runs;
mod security;
mod server;

pub use error::UiError;
pub use server::{Ui, UiOptions, start};
