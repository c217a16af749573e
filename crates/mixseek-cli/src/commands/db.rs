//! `mixseek db status` / `mixseek db upgrade`: a workspace database's schema version, origin
//! and what an upgrade would change; the upgrade itself, asked for explicitly. Read commands
//! never upgrade a file (they read an older one as it is); `exec` upgrades before it writes and
//! says so first ([`announce_upgrade`]).

use crate::context::Ctx;
use crate::error::CliError;
use crate::output::{TextOrJson, to_json_pretty};
use mixseek_store::{DbStatus, SCHEMA_VERSION, Store, db_path};
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub(crate) enum DbCommand {
    /// Show the workspace database's schema version, who wrote it and what an upgrade would change (writes nothing)
    Status(StatusArgs),
    /// Upgrade the workspace database to this build's schema (a copy of the file is kept next to it first)
    Upgrade,
}

#[derive(clap::Args, Debug)]
pub(crate) struct StatusArgs {
    #[arg(short = 'f', long = "format", value_enum, default_value = "text")]
    pub format: TextOrJson,
}

pub(crate) async fn run(cmd: DbCommand, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let path = db_path(&ctx.workspace()?);
    tokio::task::spawn_blocking(move || match cmd {
        DbCommand::Status(a) => status(&path, a.format),
        DbCommand::Upgrade => upgrade(&path),
    })
    .await
    .map_err(|e| crate::panic_hook::join_error(&e))?
}

fn status(path: &Path, format: TextOrJson) -> Result<ExitCode, CliError> {
    let status = Store::status(path).map_err(|e| CliError::from_store(&e))?;
    match format {
        TextOrJson::Json => println!("{}", to_json_pretty(&status)),
        TextOrJson::Text => print!("{}", status_text(&status)),
    }
    Ok(ExitCode::SUCCESS)
}

fn status_text(s: &DbStatus) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Database:        {}", s.path.display());
    let version = match s.version {
        0 => "none (no mixseek tables)".to_string(),
        1 => "1 (the original MixSeek's)".to_string(),
        v => v.to_string(),
    };
    let _ = writeln!(out, "Schema version:  {version}");
    let _ = writeln!(out, "Written by:      {}", s.origin.describe());
    let _ = writeln!(out, "Executions:      {}", s.executions);
    let _ = writeln!(out, "This build:      schema version {}", s.latest);
    if !s.history.is_empty() {
        let _ = writeln!(out, "History:");
        for h in &s.history {
            let _ = writeln!(
                out,
                "  {}  version {}: {}",
                h.applied_at, h.version, h.description
            );
        }
    }
    match &s.upgrade {
        None => {
            let _ = writeln!(out, "Upgrade:         not needed");
        }
        Some(plan) => {
            let _ = writeln!(
                out,
                "Upgrade:         needed to write ({} → {}); read commands read the file as it is",
                plan.from, plan.to
            );
            let _ = writeln!(
                out,
                "Run `mixseek db upgrade` (the next `mixseek exec` does it too). The file is first \
                 copied to {}. The upgrade:",
                plan.backup.display()
            );
            for c in &plan.changes {
                let _ = writeln!(out, "  - {c}");
            }
        }
    }
    out
}

fn upgrade(path: &Path) -> Result<ExitCode, CliError> {
    let status = Store::status(path).map_err(|e| CliError::from_store(&e))?;
    let Some(plan) = &status.upgrade else {
        println!(
            "{} is at schema version {SCHEMA_VERSION} already: nothing to upgrade.",
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    announce(path, plan.from, &plan.backup);
    let store = Store::open(path).map_err(|e| CliError::from_store(&e))?;
    match store.migration() {
        Some(report) => {
            let backup = report
                .backup
                .as_ref()
                .map(|b| b.display().to_string())
                .unwrap_or_else(|| "none".into());
            println!(
                "Upgraded {} from schema version {} to {}. The previous file is kept at {backup}.",
                path.display(),
                report.from,
                report.to
            );
            for c in &plan.changes {
                println!("  - {c}");
            }
        }
        // another process upgraded it in between
        None => println!("{} is at schema version {SCHEMA_VERSION}.", path.display()),
    }
    Ok(ExitCode::SUCCESS)
}

fn announce(path: &Path, from: i64, backup: &Path) {
    let what = match from {
        1 => "schema version 1 (the original MixSeek's)".to_string(),
        v => format!("schema version {v}"),
    };
    let line = format!(
        "Upgrading {} from {what} to {SCHEMA_VERSION} before writing to it; the file is first copied to {} \
         (`mixseek db status` lists the changes).\n",
        path.display(),
        backup.display()
    );
    let _ = crate::progress::write_stderr(line.as_bytes());
}

/// Before `exec` opens the workspace database to write: when the file has an older schema, says
/// on stderr that it is about to be upgraded and where the backup goes. Quiet when the file is
/// new, current, or cannot be read here (the run's own open then reports why).
pub(crate) fn announce_upgrade(path: &Path) {
    match Store::schema_version_of(path) {
        Ok(Some(v)) if (1..SCHEMA_VERSION).contains(&v) => {
            announce(path, v, &mixseek_store::next_backup_path(path, v));
        }
        Ok(_) => {}
        Err(e) => tracing::debug!(error = %e, "probing the database's schema version"),
    }
}
