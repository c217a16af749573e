//! `mixseek ui`: serves the web UI (mixseek-ui) until Ctrl-C.

use crate::context::Ctx;
use crate::error::CliError;
use std::io::Write;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Port to listen on
    #[arg(long, env = "MIXSEEK_UI__PORT", default_value_t = 8501)]
    pub port: u16,
    /// Address to listen on; another than 127.0.0.1 / ::1 requires an access token (generated
    /// and printed unless --token gives one)
    #[arg(long, env = "MIXSEEK_UI__HOST", default_value = "127.0.0.1")]
    pub host: String,
    /// The access token to require (default on a non-loopback address: a new random one)
    #[arg(long, env = "MIXSEEK_UI__TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Open the address in the default browser
    #[arg(long)]
    pub open: bool,
}

pub(crate) async fn run(args: Args, ctx: &Ctx) -> Result<ExitCode, CliError> {
    let root = ctx.workspace.root.clone();
    std::fs::create_dir_all(&root).map_err(|e| {
        CliError::from_error(&e, 1).with_hint(format!(
            "the workspace {} cannot be created; pass -w DIR (or MIXSEEK_UI__WORKSPACE)",
            root.display()
        ))
    })?;
    let exe = std::env::current_exe().map_err(|e| {
        CliError::from_error(&e, 1).with_hint("the UI starts runs with this program's own binary")
    })?;
    if args.token.as_deref().is_some_and(|t| t.trim().len() < 8) {
        return Err(
            CliError::usage("--token is too short (at least 8 characters)")
                .with_hint("omit it: a random token is generated and printed"),
        );
    }
    let ui = mixseek_ui::start(mixseek_ui::UiOptions {
        host: args.host.clone(),
        port: args.port,
        workspace: root.clone(),
        token: args.token.clone(),
        exe,
    })
    .await
    .map_err(|e| {
        let hint = e.hint();
        let err = CliError::from_error(&e, 2);
        match hint {
            Some(h) => err.with_hint(h),
            None => err,
        }
    })?;
    let url = ui.url();
    let mut out = std::io::stdout();
    let _ = writeln!(out, "mixseek UI on {url}");
    let _ = writeln!(out, "Workspace: {}", root.display());
    if ui.token.is_some() && args.token.is_none() {
        let _ = writeln!(
            out,
            "Listening beyond this machine: every request needs the access token in the address above \
             (or `Authorization: Bearer TOKEN`)."
        );
    }
    let _ = writeln!(
        out,
        "Press Ctrl-C to stop (runs started from the UI go on)."
    );
    let _ = out.flush();
    tracing::info!(addr = %ui.addr, workspace = %root.display(), "web UI listening");
    if args.open {
        open_browser(&url);
    }
    ui.serve(async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
    .map_err(|e| CliError::from_error(&e, 1))?;
    Ok(ExitCode::SUCCESS)
}

fn open_browser(url: &str) {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    if let Err(e) = std::process::Command::new(program)
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        eprintln!("Could not open a browser ({program}: {e}); open {url} yourself.");
    }
}
