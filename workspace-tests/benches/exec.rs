//! Whole-run benchmarks of `mixseek exec` (a plain program: `cargo bench --workspace
//! --profile dev --bench exec`, after `cargo build --workspace --bins`). Drives the real
//! binary (`target/debug/mixseek`: the dev profile, optimised)
//! against a fake OpenAI-compatible server on 127.0.0.1 running in this process, and reports
//! the child's wall time, CPU time (user + system, from `/proc/PID/stat`) and peak RSS
//! (`VmHWM`, sampled every 5 ms), each with PASS/MISS against its target, and the load
//! average before and after.
//!
//! Every round is complete: a leader call, an evaluation (one LLM-judge metric) and, after
//! rounds 1–4, the judgment call (min_rounds = 1, max_rounds = 5; the fake judgment always
//! answers `should_continue = true`, so every team plays 5 rounds; no judgment after the last
//! round, `judge_on_final_round = false`).
//!
//! 1. 1,000 teams × 5 rounds at 0 ms latency, `max_concurrent_teams = 100`: 14,000 LLM calls,
//!    5,000 stored rounds. Targets: ≤ 10 s wall, ≤ 300 MB peak RSS.
//! 2. 10 teams × 5 rounds at 200 ms latency per call, all teams at once: the critical path of
//!    a team is 5 × (leader + evaluation) + 4 × judgment = 14 × 200 ms = 2.8 s. Target: the
//!    run within 5 % of it.
//!
//! 3. The original's own shape, 50 teams × 5 rounds at 0 ms, all teams at once: each team a
//!    leader with one member (the leader delegates every round: leader, member, leader), three
//!    LLM-judge metrics and a judgment after every round. Run as a user runs it (log file on,
//!    default output). Target: ≤ 0.25 ms of CPU per LLM request, everything included (50×
//!    less than the original's 13.9 ms per request when the target was set;
//!    `scripts/compare-original` measures the ratio itself, the original and mixseek side by
//!    side).
//!
//! The program fails (exit 1, `NOT ALL TEAMS COMPLETED`) when a run does not complete every
//! team with 5 rounds; a missed target is reported as MISS.
//! `MIXSEEK_BENCH_KEEP=1` keeps each scenario's folder (configs, workspace, database).
//! `MIXSEEK_BENCH_TEAMS=N` changes the team count of the first scenario, and
//! `MIXSEEK_BENCH_ORIGINAL_TEAMS=N` that of the third (one team shows a run's fixed cost);
//! `MIXSEEK_BENCH_NO_RANKING=1` replaces the team and judgment prompts by ones without the
//! ranking table (the original's prompts list every team, so with 1,000 teams each prompt of
//! rounds 2–5 carries a ≈ 100 kB ranking), to see what that ranking costs.

#![allow(clippy::print_stdout)]

use mixseek_testkit::{HttpServer, Reply, Wire, respond};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use workspace_tests::procfs::{load_average, stat, status_kb, ticks_to_duration};

type BoxError = Box<dyn std::error::Error>;

/// The fake server: schema-valid answers, except that the judgment always says go on.
async fn fake_server(latency: Duration, counter: Arc<AtomicUsize>) -> Result<HttpServer, BoxError> {
    Ok(HttpServer::start(0, move |req| {
        let counter = counter.clone();
        async move {
            let n = counter.fetch_add(1, Ordering::Relaxed);
            let body: Value = req.json();
            let judgment = body
                .pointer("/response_format/json_schema/schema/properties/should_continue")
                .is_some();
            let answer = if judgment {
                Reply::text(
                    r#"{"should_continue": true, "reasoning": "The answer can still improve.", "confidence_score": 0.8}"#,
                )
            } else {
                Reply::Auto
            };
            let reply = if latency.is_zero() {
                answer
            } else {
                Reply::delayed(latency, answer)
            };
            respond(Wire::OpenAi, reply, &body, n, true).await
        }
    })
    .await?)
}

/// Whether `MIXSEEK_BENCH_WRAP` runs the binary under a profiler: the times and RSS read are
/// then the wrapper's, so no target is judged.
fn wrapped() -> bool {
    !wrapper().is_empty()
}

/// The command prefix `MIXSEEK_BENCH_WRAP` gives (empty when unset).
fn wrapper() -> Vec<String> {
    std::env::var("MIXSEEK_BENCH_WRAP")
        .map(|w| w.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

fn verdict(ok: bool) -> &'static str {
    if wrapped() {
        "not judged: wrapped"
    } else if ok {
        "PASS"
    } else {
        "MISS"
    }
}

/// Every team completed, with 5 rounds stored each.
fn check_complete(summary: &Value, teams: usize) -> Result<(), BoxError> {
    let completed = summary["completed_teams"].as_u64().unwrap_or(0);
    let rounds_ok = summary["team_results"]
        .as_array()
        .is_some_and(|r| r.iter().all(|t| t["exit_reason"] == "max_rounds_reached"));
    if completed != teams as u64 || summary["status"] != "completed" || !rounds_ok {
        return Err(format!(
            "NOT ALL TEAMS COMPLETED 5 ROUNDS: {completed} of {teams} completed, status {}, stop {}, failures {}",
            summary["status"], summary["stop_reason"], summary["failed_teams_info"]
        )
        .into());
    }
    Ok(())
}

/// What a competition looks like beyond its size.
#[derive(Clone, Copy)]
struct Shape {
    /// Each team's leader has one LLM member it delegates to.
    member: bool,
    /// LLM-judge metrics per evaluation.
    metrics: usize,
    /// A judgment after the last round too.
    judge_final: bool,
}

/// Scenarios 1 and 2: a leader alone, one metric, no judgment after the last round.
const LEAN: Shape = Shape {
    member: false,
    metrics: 1,
    judge_final: false,
};

/// Scenario 3: the original's own shape.
const ORIGINAL: Shape = Shape {
    member: true,
    metrics: 3,
    judge_final: true,
};

/// Writes a competition of `teams` teams of `shape` on the `fake` provider into `dir`.
fn write_config(
    dir: &Path,
    url: &str,
    teams: usize,
    concurrent: usize,
    shape: Shape,
) -> Result<PathBuf, BoxError> {
    let mut orch = format!(
        "[orchestrator]\nmin_rounds = 1\nmax_rounds = 5\nmax_concurrent_teams = {concurrent}\n\
         timeout_per_team_seconds = 3600\nevaluator_config = \"evaluator.toml\"\n\
         judgment_config = \"judgment.toml\"\n\n\
         [providers.fake]\nkind = \"openai-compatible\"\nbase_url = \"{url}\"\nmax_in_flight = 256\n"
    );
    for i in 0..teams {
        orch.push_str(&format!(
            "\n[[orchestrator.teams]]\nconfig = \"team_{i:04}.toml\"\n"
        ));
        let mut team = format!(
            "[team]\nteam_id = \"team-{i:04}\"\nteam_name = \"Team {i}\"\n[team.leader]\nmodel = \"fake:leader\"\n"
        );
        if shape.member {
            team.push_str(
                "\n[[team.members]]\nname = \"researcher\"\ntype = \"plain\"\n\
                 tool_description = \"Researches the task\"\nmodel = \"fake:member\"\n",
            );
        }
        std::fs::write(dir.join(format!("team_{i:04}.toml")), team)?;
    }
    let mut evaluator = "default_model = \"fake:judge\"\n".to_string();
    for name in ["Coverage", "Relevance", "ClarityCoherence"]
        .iter()
        .take(shape.metrics)
    {
        evaluator.push_str(&format!(
            "[[metrics]]\nname = \"{name}\"\nweight = {}\n",
            1.0 / shape.metrics as f64
        ));
    }
    std::fs::write(dir.join("evaluator.toml"), evaluator)?;
    std::fs::write(
        dir.join("judgment.toml"),
        format!(
            "model = \"fake:judge\"\njudge_on_final_round = {}\n",
            shape.judge_final
        ),
    )?;
    if std::env::var_os("MIXSEEK_BENCH_NO_RANKING").is_some() {
        // For comparison only: prompts without the ranking of every team.
        orch.push_str(
            "\n[prompt_builder]\nteam_user_prompt = \"{{ user_prompt }} (round {{ round_number }})\\n{{ submission_history }}\"\n\
             judgment_user_prompt = \"{{ user_prompt }} (round {{ round_number }})\\n{{ submission_history }}\"\n",
        );
    }
    let path = dir.join("orchestrator.toml");
    std::fs::write(&path, orch)?;
    Ok(path)
}

/// The `mixseek` binary: `CARGO_BIN_EXE_mixseek` when set, else the one next to this
/// benchmark's `deps/` folder, refused when one of its sources is newer
/// (`workspace_tests::mixseek_bin`, as for the end-to-end tests).
fn mixseek_bin() -> PathBuf {
    workspace_tests::mixseek_bin()
}

struct RunResult {
    wall: Duration,
    cpu: Duration,
    max_rss_mb: f64,
    summary: Value,
}

/// Peak RSS so far (`VmHWM`, KiB) of a live process.
fn peak_rss_kb(pid: u32) -> Option<u64> {
    status_kb(pid, "VmHWM:")
}

/// The current RSS.
fn rss_kb(pid: u32) -> Option<u64> {
    status_kb(pid, "VmRSS:")
}

/// Runs `mixseek exec` and samples its peak RSS until it exits; its CPU time is read from
/// the zombie's `/proc` entry before it is reaped.
///
/// `as_user`: run it as a user would (log file on, default verbosity); otherwise without the
/// log file and quiet, to measure the run alone.
fn run_exec(
    bin: &Path,
    cfg: &Path,
    workspace: &Path,
    as_user: bool,
) -> Result<RunResult, BoxError> {
    let out_path = workspace.with_extension("stdout.json");
    let err_path = workspace.with_extension("stderr.txt");
    let start = Instant::now();
    // `MIXSEEK_BENCH_WRAP="heaptrack -o FILE"` (any profiler taking a command line) runs
    // the binary under it; the times and RSS measured are then the wrapper's (not judged).
    let wrap = wrapper();
    let mut command = match wrap.split_first() {
        Some((program, args)) => {
            let mut c = std::process::Command::new(program);
            c.args(args).arg(bin);
            c
        }
        None => std::process::Command::new(bin),
    };
    let mut child = command
        .env_remove("MIXSEEK_WORKSPACE")
        // MIXSEEK_* variables are configuration overlays for the child.
        .env_remove("MIXSEEK_BENCH_TEAMS")
        .env_remove("MIXSEEK_BENCH_NO_RANKING")
        .env_remove("MIXSEEK_BENCH_WRAP")
        .env_remove("MIXSEEK_BENCH_ONLY")
        .env_remove("MIXSEEK_BENCH_KEEP")
        .env_remove("MIXSEEK_BENCH_RSS_TRACE")
        .arg("-w")
        .arg(workspace)
        .args(if as_user {
            &[][..]
        } else {
            &["--no-log-file", "-q"][..]
        })
        .args(["exec", "Benchmark task", "-f", "json", "-c"])
        .arg(cfg)
        .stdout(std::fs::File::create(&out_path)?)
        .stderr(std::fs::File::create(&err_path)?)
        .spawn()?;
    let pid = child.id();
    let mut peak_kb = 0;
    let mut ticks = 0;
    // `MIXSEEK_BENCH_RSS_TRACE=1`: the RSS every 250 ms (when the peak is reached)
    let trace = std::env::var_os("MIXSEEK_BENCH_RSS_TRACE").is_some();
    let mut traced = Duration::ZERO;
    let wall = loop {
        if let Some(kb) = peak_rss_kb(pid) {
            peak_kb = peak_kb.max(kb);
        }
        if trace && start.elapsed() >= traced {
            traced += Duration::from_millis(250);
            eprintln!(
                "exec: {:6.2} s RSS {} MB (peak {} MB)",
                start.elapsed().as_secs_f64(),
                rss_kb(pid).unwrap_or(0) / 1024,
                peak_kb / 1024
            );
        }
        match stat(pid) {
            Some(('Z', t)) | Some(('X', t)) => {
                ticks = t;
                break start.elapsed();
            }
            Some((_, t)) => ticks = t,
            None => break start.elapsed(),
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let status = child.wait()?;
    if !status.success() {
        let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
        return Err(format!(
            "mixseek exec failed ({:?}): {}\n{}",
            status.code(),
            std::fs::read_to_string(&err_path).unwrap_or_default(),
            stdout.chars().take(2000).collect::<String>()
        )
        .into());
    }
    Ok(RunResult {
        wall,
        cpu: ticks_to_duration(ticks),
        max_rss_mb: peak_kb as f64 / 1024.0,
        summary: serde_json::from_slice(&std::fs::read(&out_path)?)?,
    })
}

/// The scenario's folder (configs and workspace): removed afterwards, unless
/// `MIXSEEK_BENCH_KEEP=1`, which keeps it (its path is printed) to inspect the database.
fn bench_dir() -> Result<tempfile::TempDir, BoxError> {
    let mut dir = tempfile::Builder::new()
        .prefix("mixseek-bench-")
        .tempdir()?;
    if std::env::var_os("MIXSEEK_BENCH_KEEP").is_some() {
        dir.disable_cleanup(true);
        println!("exec: keeping {}", dir.path().display());
    }
    Ok(dir)
}

/// One scenario: a fake server answering after `latency`, a competition of `teams` teams of
/// `shape`, and the run. Returns the run, the LLM calls the server answered, and the load
/// average before and after.
fn scenario(
    rt: &tokio::runtime::Runtime,
    bin: &Path,
    latency: Duration,
    (teams, concurrent): (usize, usize),
    shape: Shape,
    as_user: bool,
) -> Result<(RunResult, usize, String, String), BoxError> {
    let calls = Arc::new(AtomicUsize::new(0));
    let server = rt.block_on(fake_server(latency, calls.clone()))?;
    let dir = bench_dir()?;
    let url = format!("{}/v1", server.uri());
    let cfg = write_config(dir.path(), &url, teams, concurrent, shape)?;
    let load_before = load_average();
    let r = run_exec(bin, &cfg, &dir.path().join("ws"), as_user)?;
    let load_after = load_average();
    check_complete(&r.summary, teams)?;
    Ok((r, calls.load(Ordering::Relaxed), load_before, load_after))
}

fn main() -> Result<(), BoxError> {
    let bin = mixseek_bin();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let teams = workspace_tests::bench_count("MIXSEEK_BENCH_TEAMS", 1000)?;
    let original_teams = workspace_tests::bench_count("MIXSEEK_BENCH_ORIGINAL_TEAMS", 50)?;

    // `MIXSEEK_BENCH_ONLY=1`, `2` or `3` runs one scenario.
    let only = std::env::var("MIXSEEK_BENCH_ONLY").ok();
    let run = |n: &str| only.as_deref().is_none_or(|o| o == n);
    let mut all_pass = true;

    // 1. Many teams, no latency: the orchestrator's own overhead.
    if run("1") {
        let (r, n, load_before, load_after) =
            scenario(&rt, &bin, Duration::ZERO, (teams, 100), LEAN, false)?;
        let wall_ok = r.wall <= Duration::from_secs(10);
        let rss_ok = r.max_rss_mb <= 300.0;
        all_pass &= wall_ok && rss_ok;
        println!(
            "exec: {teams} teams × 5 rounds at 0 ms (max_concurrent_teams = 100, dev profile): \
             wall {:.2} s [{} ≤ 10 s], CPU {:.2} s, peak RSS {:.0} MB [{} ≤ 300 MB], \
             {n} LLM calls = {:.0} calls/s; load average {load_before} before, {load_after} after",
            r.wall.as_secs_f64(),
            verdict(wall_ok),
            r.cpu.as_secs_f64(),
            r.max_rss_mb,
            verdict(rss_ok),
            n as f64 / r.wall.as_secs_f64(),
        );
    }

    // 2. Ten teams at 200 ms: how close the run gets to its critical path.
    if run("2") {
        let latency = Duration::from_millis(200);
        let (r, n, load_before, load_after) = scenario(&rt, &bin, latency, (10, 10), LEAN, false)?;
        // Per team: 5 leader calls, 5 evaluations, 4 judgments, one after the other.
        let critical = latency * 14;
        let inside = r.summary["total_execution_time_seconds"]
            .as_f64()
            .unwrap_or(f64::NAN);
        let over = inside / critical.as_secs_f64() - 1.0;
        let ok = over <= 0.05;
        all_pass &= ok;
        println!(
            "exec: 10 teams × 5 rounds at 200 ms (dev profile): critical path {:.2} s; run {:.2} s \
             ({:+.1} %) [{} ≤ +5 %], process wall {:.2} s ({:+.1} %), CPU {:.2} s, {} LLM calls; \
             load average {load_before} before, {load_after} after",
            critical.as_secs_f64(),
            inside,
            over * 100.0,
            verdict(ok),
            r.wall.as_secs_f64(),
            (r.wall.as_secs_f64() / critical.as_secs_f64() - 1.0) * 100.0,
            r.cpu.as_secs_f64(),
            n,
        );
    }
    // 3. The original's shape: the CPU one LLM request costs, everything included.
    if run("3") {
        let (r, n, load_before, load_after) = scenario(
            &rt,
            &bin,
            Duration::ZERO,
            (original_teams, original_teams),
            ORIGINAL,
            true,
        )?;
        let per_request_ms = r.cpu.as_secs_f64() * 1000.0 / n.max(1) as f64;
        let ok = per_request_ms <= 0.25;
        all_pass &= ok;
        println!(
            "exec: the original's shape, {original_teams} teams × 5 rounds at 0 ms (leader + 1 member, 3 LLM-judge \
             metrics, a judgment every round; log file on): {n} LLM calls, CPU {:.3} s = \
             {per_request_ms:.3} ms per request [{} ≤ 0.25 ms], wall {:.2} s, peak RSS {:.0} MB; \
             load average {load_before} before, {load_after} after",
            r.cpu.as_secs_f64(),
            verdict(ok),
            r.wall.as_secs_f64(),
            r.max_rss_mb,
        );
    }
    println!(
        "exec: {}",
        if wrapped() {
            "targets not judged (MIXSEEK_BENCH_WRAP: the times and RSS are the wrapper's)"
        } else if all_pass {
            "every target met"
        } else {
            "MISSED a target (see MISS above)"
        }
    );
    Ok(())
}
