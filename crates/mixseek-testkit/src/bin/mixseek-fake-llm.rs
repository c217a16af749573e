//! `mixseek-fake-llm`: a fake LLM server on 127.0.0.1 for benchmarks and end-to-end tests.
//!
//! ```text
//! mixseek-fake-llm [--port N] [--latency-ms N] [--fault-rate F] [--continue]
//!                  [--wire openai|anthropic|gemini]
//! ```
//!
//! Prints its base URL (`http://127.0.0.1:PORT/v1` for OpenAI — use it as
//! `OPENAI_BASE_URL`) as the first line on stdout, then serves until killed; on Ctrl-C
//! (SIGINT) it prints `N requests` on stderr, the requests it answered. Every answer
//! is automatic: a schema-valid sample for a structured request, one call of each tool not
//! yet called, else `fake answer N`. `--fault-rate 0.3` answers 30 % of requests with HTTP
//! 503; `--latency-ms` delays every answer. `--continue` answers every continuation judgment
//! (a structured request, or an output tool, whose schema has `should_continue`; OpenAI wire)
//! with "continue", so runs play all their rounds: the automatic sample's `false` would stop
//! every team after its first. `scripts/compare-original` uses it to run the Python original
//! and mixseek on the same competition.

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
    keep_going: bool,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        port: 0,
        latency: Duration::ZERO,
        fault_rate: 0.0,
        wire: Wire::OpenAi,
        keep_going: false,
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
            "--continue" => o.keep_going = true,
            "-h" | "--help" => {
                return Err("usage: mixseek-fake-llm [--port N] [--latency-ms N] [--fault-rate F] [--continue] [--wire openai|anthropic|gemini]".into());
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if o.keep_going && !matches!(o.wire, Wire::OpenAi) {
        return Err("--continue answers OpenAI-format judgments only: leave out --wire".into());
    }
    Ok(o)
}

/// The answer a continuation judgment gets with `--continue`.
fn continue_judgments(body: &serde_json::Value) -> Reply {
    let verdict = serde_json::json!({
        "should_continue": true,
        "reasoning": "The answer can still improve.",
        "confidence_score": 0.8,
    });
    let judges = |schema: Option<&serde_json::Value>| {
        schema.is_some_and(|s| s.pointer("/properties/should_continue").is_some())
    };
    if judges(body.pointer("/response_format/json_schema/schema")) {
        return Reply::Json(verdict);
    }
    let output_tool = body
        .get("tools")
        .and_then(|t| t.as_array())
        .into_iter()
        .flatten()
        .find(|t| judges(t.pointer("/function/parameters")))
        .and_then(|t| t.pointer("/function/name"))
        .and_then(|n| n.as_str());
    match output_tool {
        Some(name) => Reply::ToolCalls(vec![(name.to_string(), verdict)]),
        None => Reply::Auto,
    }
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
    let answered = counter.clone();
    let (latency, fault_rate, wire, keep_going) = (o.latency, o.fault_rate, o.wire, o.keep_going);
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
            let reply = match keep_going {
                true => continue_judgments(&body),
                false => Reply::Auto,
            };
            respond(wire, reply, &body, n, true).await
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
    let _ = writeln!(
        std::io::stderr(),
        "{} requests",
        answered.load(Ordering::Relaxed)
    );
    std::process::ExitCode::SUCCESS
}
