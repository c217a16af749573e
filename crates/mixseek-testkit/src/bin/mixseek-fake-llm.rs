//! `mixseek-fake-llm`: a fake LLM server on 127.0.0.1 for benchmarks and end-to-end tests.
//!
//! ```text
//! mixseek-fake-llm [--port N] [--latency-ms N] [--fault-rate F] [--wire openai|anthropic|gemini]
//! ```
//!
//! Prints its base URL (`http://127.0.0.1:PORT/v1` for OpenAI — use it as
//! `OPENAI_BASE_URL`) as the first line on stdout, then serves until killed. Every answer
//! is automatic: a schema-valid sample for a structured request, one call of each tool not
//! yet called, else `fake answer N`. `--fault-rate 0.3` answers 30 % of requests with HTTP
//! 503; `--latency-ms` delays every answer.

use mixseek_testkit::{HttpServer, Reply, Wire, error_response, respond};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

struct Options {
    port: u16,
    latency: Duration,
    fault_rate: f64,
    wire: Wire,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        port: 0,
        latency: Duration::ZERO,
        fault_rate: 0.0,
        wire: Wire::OpenAi,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--port" => {
                o.port = value("--port")?
                    .parse()
                    .map_err(|e| format!("--port: {e}"))?
            }
            "--latency-ms" => {
                o.latency = Duration::from_millis(
                    value("--latency-ms")?
                        .parse()
                        .map_err(|e| format!("--latency-ms: {e}"))?,
                )
            }
            "--fault-rate" => {
                o.fault_rate = value("--fault-rate")?
                    .parse()
                    .map_err(|e| format!("--fault-rate: {e}"))?;
                if !(0.0..=1.0).contains(&o.fault_rate) {
                    return Err("--fault-rate must be between 0 and 1".into());
                }
            }
            "--wire" => {
                o.wire = match value("--wire")?.as_str() {
                    "openai" => Wire::OpenAi,
                    "anthropic" => Wire::Anthropic,
                    "gemini" => Wire::Gemini,
                    other => {
                        return Err(format!(
                            "unknown wire `{other}` (openai, anthropic, gemini)"
                        ));
                    }
                }
            }
            "-h" | "--help" => {
                return Err("usage: mixseek-fake-llm [--port N] [--latency-ms N] [--fault-rate F] [--wire openai|anthropic|gemini]".into());
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(o)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "{e}");
            return std::process::ExitCode::from(2);
        }
    };
    let counter = Arc::new(AtomicUsize::new(0));
    let (latency, fault_rate, wire) = (o.latency, o.fault_rate, o.wire);
    let server = HttpServer::start(o.port, move |req| {
        let counter = counter.clone();
        async move {
            let n = counter.fetch_add(1, Ordering::Relaxed);
            let body: serde_json::Value =
                serde_json::from_slice(&req.body).unwrap_or(serde_json::Value::Null);
            if !latency.is_zero() {
                tokio::time::sleep(latency).await;
            }
            if fault_rate > 0.0 && fastrand::f64() < fault_rate {
                return error_response(
                    wire,
                    503,
                    "injected fault (mixseek-fake-llm --fault-rate)",
                    &[],
                );
            }
            respond(wire, Reply::Auto, &body, n, true).await
        }
    })
    .await;
    let server = match server {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "cannot bind 127.0.0.1:{}: {e}", o.port);
            return std::process::ExitCode::from(1);
        }
    };
    let url = match wire {
        Wire::OpenAi => format!("{}/v1", server.uri()),
        _ => server.uri(),
    };
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{url}");
    let _ = out.flush();
    let _ = tokio::signal::ctrl_c().await;
    std::process::ExitCode::SUCCESS
}
