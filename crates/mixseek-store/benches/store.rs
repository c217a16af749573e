//! Store throughput and query latency (a plain program:
//! `cargo bench --workspace --profile dev --bench store`).
//!
//! Writes 1,000,000 rounds (1,000 executions × 100 teams × 10 rounds, random-looking
//! execution ids as real runs have; the executions' `ExecutionStarted` first, timed with the
//! rounds) through the real writer (`StoreWriter::write_all`:
//! staging on the caller's side, the channel, the writer thread, batched transactions and the
//! upsert every run uses), then times the reads the prompts and the report commands make, the
//! per-round writes of a live run against the 1,000,000 stored rows (the unevaluated round of
//! `SubmissionReady`, `Evaluated` and `Judged`, each committed at a time, then `TeamFinished`),
//! and the checkpoint DuckDB otherwise does when the store closes. Targets: ≥ 50,000 rounds/s
//! written; each query ≤ 100 ms; issue 8's 1,000 teams × 5 rounds at once ≤ 5 s. Each prints
//! PASS or MISS.
//!
//! The bench rounds carry no leader messages and no member submissions: real rounds are
//! heavier (more JSON text per row).
//!
//! `MIXSEEK_BENCH_RUN_LOAD=1` runs only the store's share of the 1,000-team `mixseek exec`
//! bench instead, on a new file: 1,000 teams × 5 rounds, 100 at a time, each round's leader
//! transcript carrying a ≈ 100 kB ranking as the prompt (stored once), written as a run writes
//! it (`SubmissionReady` queued, `Evaluated` and `Judged` awaited, `TeamFinished`), with the
//! run's DuckDB settings (128 MB memory cap, vacuum deferred, one thread); prints the wall
//! time, the process's peak RSS and the checkpoints' effect (row groups of `round_history`).
//!
//! `MIXSEEK_BENCH_ROUNDS=N` writes N rounds instead (rounded to whole executions).
//! `MIXSEEK_BENCH_NO_SUBMISSIONS=1` leaves the `SubmissionReady` writes out of the live and
//! concurrent runs (the writes before the store kept unevaluated rounds), for comparison.

#![allow(clippy::print_stdout)]

use chrono::{TimeZone, Utc};
use mixseek_core::PiiMasker;
use mixseek_core::{
    Decision, Event, ExitReason, LeaderboardEntry, MemberSubmissionsRecord, MetricScore,
    RoundRecord, ScoreDetails, SubmittedRound, TeamRef, TeamStatusKind, Usage,
};
use mixseek_store::MAX_TX_ROUNDS;
use mixseek_store::{LeaderboardScope, Store, StoreWriter};
use std::time::{Duration, Instant};

const TEAMS: u32 = 100;
const ROUNDS: u32 = 10;
/// Rounds per `write_all` call: whole transactions.
const CHUNK: usize = MAX_TX_ROUNDS;

/// A fixed pseudo-random 64-bit value of `x` (splitmix64).
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A UUID-v4-looking id, random-looking as real ones are (so no execution's rows can be found
/// by their id's order alone).
fn exec_id(e: u32) -> String {
    let a = mix(u64::from(e));
    let b = mix(a);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

fn record(e: u32, team: u32, round: u32) -> RoundRecord {
    let start = Utc
        .with_ymd_and_hms(2025, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or_default()
        + chrono::Duration::seconds(i64::from(e) * 3600 + i64::from(round) * 60);
    let score = f64::from((e * 7 + team * 13 + round * 31) % 1000) / 10.0;
    let execution_id = exec_id(e);
    let team_id = format!("team-{team:03}");
    RoundRecord {
        execution_id: execution_id.clone().into(),
        team_id: team_id.clone().into(),
        team_name: format!("Team {team}"),
        round_number: round,
        prompt: "prompt ".repeat(20),
        submission_content: format!(
            "Submission of team {team} in round {round}: {}",
            "lorem ipsum ".repeat(15)
        ),
        score_details: ScoreDetails {
            overall_score: score,
            metrics: vec![
                MetricScore::new("ClarityCoherence", score, "clear"),
                MetricScore::new("Coverage", score, "ok"),
            ],
        },
        round_started_at: start,
        round_ended_at: start + chrono::Duration::seconds(30),
        leader_messages: Vec::new(),
        member_submissions: MemberSubmissionsRecord {
            execution_id: execution_id.into(),
            team_id: team_id.into(),
            team_name: format!("Team {team}"),
            round_number: round,
            submissions: Vec::new(),
        },
        agent_usage: Usage {
            input_tokens: 1000,
            output_tokens: 400,
            requests: 2,
            cost_usd: 0.01,
            ..Usage::default()
        },
        evaluation_usage: Usage {
            input_tokens: 300,
            output_tokens: 80,
            requests: 2,
            cost_usd: 0.002,
            ..Usage::default()
        },
        applied_injections: Vec::new(),
    }
}

/// The `SubmissionReady` of a round, carrying its unevaluated part (the controller emits it
/// when the leader answers, before the evaluation).
fn submitted(r: &RoundRecord) -> Event {
    Event::SubmissionReady {
        execution_id: r.execution_id.clone(),
        team_id: r.team_id.clone(),
        team_name: r.team_name.clone(),
        round_number: r.round_number,
        submission_chars: r.submission_content.len(),
        usage: r.agent_usage,
        at: r.round_started_at,
        round: Some(Box::new(SubmittedRound {
            execution_id: r.execution_id.clone(),
            team_id: r.team_id.clone(),
            team_name: r.team_name.clone(),
            round_number: r.round_number,
            prompt: r.prompt.clone(),
            submission_content: r.submission_content.clone(),
            round_started_at: r.round_started_at,
            submitted_at: r.round_started_at,
            leader_messages: r.leader_messages.clone(),
            member_submissions: r.member_submissions.clone(),
            agent_usage: r.agent_usage,
        })),
    }
}

/// Whether the live and concurrent runs write `SubmissionReady` (see the module docs).
fn with_submissions() -> bool {
    std::env::var("MIXSEEK_BENCH_NO_SUBMISSIONS").map_or(true, |v| v.is_empty() || v == "0")
}

fn time_query<T>(name: &str, runs: usize, mut f: impl FnMut() -> T) -> Duration {
    let _ = f(); // warm-up
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed()
        })
        .collect();
    times.sort();
    let median = times[times.len() / 2];
    let max = times[times.len() - 1];
    let verdict = pass(median <= Duration::from_millis(100));
    println!(
        "  {name:<52} median {:>8.2} ms   max {:>8.2} ms   {verdict}",
        ms(median),
        ms(max)
    );
    median
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn pass(met: bool) -> &'static str {
    if met { "PASS" } else { "MISS" }
}

/// Median and 95th percentile.
fn percentiles(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.95))
}

/// The `ExecutionStarted` of execution `e`.
fn started(e: u32, teams: u32, rounds: u32) -> Event {
    Event::ExecutionStarted {
        execution_id: exec_id(e).into(),
        user_prompt: "bench".into(),
        teams: (0..teams)
            .map(|t| TeamRef {
                team_id: format!("team-{t:03}").into(),
                team_name: format!("Team {t}"),
            })
            .collect(),
        config_hash: "bench".into(),
        max_rounds: rounds,
        at: Utc::now(),
    }
}

/// A live run's writes against the stored rows: `ExecutionStarted`, then each team's rounds
/// one at a time (`SubmissionReady`, `Evaluated`, `Judged`), `TeamFinished`.
fn live_run(
    rt: &tokio::runtime::Runtime,
    writer: &StoreWriter,
    e: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    const LIVE_TEAMS: u32 = 20;
    const LIVE_ROUNDS: u32 = 5;
    let execution_id = exec_id(e);
    let at = Utc::now();
    rt.block_on(writer.write(&started(e, LIVE_TEAMS, LIVE_ROUNDS)))?;
    let (mut submissions, mut evaluated, mut judged, mut finished) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut rounds_total = Vec::new();
    for team in 0..LIVE_TEAMS {
        let mut best: Option<RoundRecord> = None;
        for round in 1..=LIVE_ROUNDS {
            let r = record(e, team, round);
            let t = Instant::now();
            if with_submissions() {
                rt.block_on(writer.write(&submitted(&r)))?;
            }
            let t_submitted = t.elapsed();
            let t = Instant::now();
            rt.block_on(writer.write(&Event::Evaluated(Box::new(r.clone()))))?;
            let t_eval = t.elapsed();
            let t = Instant::now();
            rt.block_on(writer.write(&Event::Judged {
                execution_id: execution_id.clone().into(),
                team_id: r.team_id.clone(),
                team_name: r.team_name.clone(),
                round_number: round,
                decision: Decision {
                    should_continue: round < LIVE_ROUNDS,
                    reasoning: "keep going".into(),
                    confidence_score: Some(0.5),
                    judgment: None,
                    exit_reason: (round == LIVE_ROUNDS).then_some(ExitReason::MaxRoundsReached),
                    usage: Usage::default(),
                },
                at,
            }))?;
            let t_judged = t.elapsed();
            submissions.push(t_submitted);
            evaluated.push(t_eval);
            judged.push(t_judged);
            rounds_total.push(t_submitted + t_eval + t_judged);
            if best
                .as_ref()
                .is_none_or(|b| b.score_details.overall_score < r.score_details.overall_score)
            {
                best = Some(r);
            }
        }
        let best = best.map(|b| {
            Box::new(LeaderboardEntry {
                id: None,
                execution_id: b.execution_id.clone(),
                team_id: b.team_id.clone(),
                team_name: b.team_name.clone(),
                round_number: b.round_number,
                submission_content: b.submission_content.clone(),
                submission_format: "md".into(),
                score: b.score_details.overall_score,
                score_details: b.score_details.clone(),
                final_submission: true,
                exit_reason: Some("max_rounds_reached".into()),
                created_at: b.round_ended_at,
                updated_at: b.round_ended_at,
            })
        });
        let t = Instant::now();
        rt.block_on(writer.write(&Event::TeamFinished {
            execution_id: execution_id.clone().into(),
            team_id: format!("team-{team:03}").into(),
            team_name: format!("Team {team}"),
            status: TeamStatusKind::Completed,
            best,
            exit_reason: Some(ExitReason::MaxRoundsReached),
            rounds_completed: LIVE_ROUNDS,
            error_message: None,
            usage: Usage::default(),
            at,
        }))?;
        finished.push(t.elapsed());
    }
    let (submitted_med, submitted_p95) = percentiles(submissions);
    let (eval_med, eval_p95) = percentiles(evaluated);
    let (judged_med, judged_p95) = percentiles(judged);
    let (finished_med, finished_p95) = percentiles(finished);
    let (round_med, round_p95) = percentiles(rounds_total);
    println!(
        "live run against the stored rows ({LIVE_TEAMS} teams × {LIVE_ROUNDS} rounds, one write at a time):"
    );
    println!(
        "  SubmissionReady (unevaluated row)  median {:>8.2} ms   p95 {:>8.2} ms",
        ms(submitted_med),
        ms(submitted_p95)
    );
    println!(
        "  Evaluated (round committed)        median {:>8.2} ms   p95 {:>8.2} ms",
        ms(eval_med),
        ms(eval_p95)
    );
    println!(
        "  Judged (decision committed)        median {:>8.2} ms   p95 {:>8.2} ms",
        ms(judged_med),
        ms(judged_p95)
    );
    println!(
        "  TeamFinished (final flag)          median {:>8.2} ms   p95 {:>8.2} ms",
        ms(finished_med),
        ms(finished_p95)
    );
    println!(
        "  a round (all three)                median {:>8.2} ms   p95 {:>8.2} ms",
        ms(round_med),
        ms(round_p95),
    );
    Ok(())
}

/// Issue 8's load on the store: 1,000 teams × 5 rounds at once (each team a task writing
/// `SubmissionReady`, `Evaluated` then `Judged` per round, as the round controller does),
/// against the stored rows. Target: ≤ 5 s, half of the 10 s that whole run may take.
fn concurrent_run(
    rt: &tokio::runtime::Runtime,
    writer: &StoreWriter,
    e: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    const TEAMS_AT_ONCE: u32 = 1_000;
    const ROUNDS_EACH: u32 = 5;
    let t = Instant::now();
    rt.block_on(async {
        writer
            .write(&started(e, TEAMS_AT_ONCE, ROUNDS_EACH))
            .await?;
        let mut tasks = Vec::new();
        for team in 0..TEAMS_AT_ONCE {
            let writer = writer.clone();
            tasks.push(tokio::spawn(async move {
                for round in 1..=ROUNDS_EACH {
                    let r = record(e, team, round);
                    if with_submissions() {
                        writer.write(&submitted(&r)).await?;
                    }
                    writer.write(&Event::Evaluated(Box::new(r.clone()))).await?;
                    writer
                        .write(&Event::Judged {
                            execution_id: r.execution_id.clone(),
                            team_id: r.team_id.clone(),
                            team_name: r.team_name.clone(),
                            round_number: round,
                            decision: Decision {
                                should_continue: round < ROUNDS_EACH,
                                reasoning: "keep going".into(),
                                confidence_score: Some(0.5),
                                judgment: None,
                                exit_reason: None,
                                usage: Usage::default(),
                            },
                            at: r.round_ended_at,
                        })
                        .await?;
                }
                Ok::<(), mixseek_store::StoreError>(())
            }));
        }
        for task in tasks {
            task.await??;
        }
        Ok::<(), Box<dyn std::error::Error>>(())
    })?;
    let took = t.elapsed();
    println!(
        "concurrent run against the stored rows ({TEAMS_AT_ONCE} teams × {ROUNDS_EACH} rounds at once, \
         SubmissionReady + Evaluated + Judged each): {:.2} s = {:.0} rounds/s, target ≤ 5 s: {}",
        took.as_secs_f64(),
        f64::from(TEAMS_AT_ONCE * ROUNDS_EACH) / took.as_secs_f64(),
        pass(took <= Duration::from_secs(5))
    );
    Ok(())
}

/// A ranking table of `teams` rows as the team prompts carry it (≈ 100 bytes a row).
fn ranking_prompt(teams: u32, round: u32, team: u32) -> String {
    let mut out = format!(
        "Round {round} for team-{team:04}. Current ranking:\n| # | team | best | rounds |\n"
    );
    for t in 0..teams {
        let score = f64::from((t * 7919 + round * 104_729) % 10_000) / 100.0;
        out.push_str(&format!(
            "| {} | team-{t:04} (a team with a descriptive name) | {score:.2} | {} |\n",
            t + 1,
            round - 1
        ));
    }
    out
}

/// Peak resident memory of this process (`VmHWM`), in MB.
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The store's share of the 1,000-team exec bench (see the module docs).
fn run_load() -> Result<(), Box<dyn std::error::Error>> {
    use mixseek_core::EventSink;
    const TEAMS: u32 = 1_000;
    const ROUNDS: u32 = 5;
    const AT_ONCE: usize = 100;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("mixseek.db");
    let store = Store::open(&path)?;
    store.limit_memory(mixseek_store::RUN_MEMORY_LIMIT)?;
    store.defer_vacuum()?;
    store.limit_threads(1)?;
    let writer = store.writer(PiiMasker::disabled())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let e = 4_242;
    let rss_before = peak_rss_mb();
    let t = Instant::now();
    rt.block_on(async {
        writer.emit(&started(e, TEAMS, ROUNDS)).await?;
        let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(AT_ONCE));
        let mut tasks = Vec::new();
        for team in 0..TEAMS {
            let writer = writer.clone();
            let permits = permits.clone();
            tasks.push(tokio::spawn(async move {
                let _permit = permits.acquire().await?;
                for round in 1..=ROUNDS {
                    let mut r = record(e, team, round);
                    r.team_id = format!("team-{team:04}").into();
                    r.member_submissions.team_id = r.team_id.clone();
                    r.prompt = ranking_prompt(TEAMS, round, team);
                    r.leader_messages = vec![
                        serde_json::json!({"role": "user", "content": r.prompt}),
                        serde_json::json!({"role": "assistant", "content": r.submission_content}),
                    ];
                    writer.emit(&submitted(&r)).await?;
                    writer.emit(&Event::Evaluated(Box::new(r.clone()))).await?;
                    writer
                        .emit(&Event::Judged {
                            execution_id: r.execution_id.clone(),
                            team_id: r.team_id.clone(),
                            team_name: r.team_name.clone(),
                            round_number: round,
                            decision: Decision {
                                should_continue: round < ROUNDS,
                                reasoning: "keep going".into(),
                                confidence_score: Some(0.5),
                                judgment: None,
                                exit_reason: None,
                                usage: Usage::default(),
                            },
                            at: r.round_ended_at,
                        })
                        .await?;
                }
                writer
                    .emit(&Event::TeamFinished {
                        execution_id: exec_id(e).into(),
                        team_id: format!("team-{team:04}").into(),
                        team_name: format!("Team {team}"),
                        status: TeamStatusKind::Completed,
                        best: None,
                        exit_reason: Some(ExitReason::MaxRoundsReached),
                        rounds_completed: ROUNDS,
                        error_message: None,
                        usage: Usage::default(),
                        at: Utc::now(),
                    })
                    .await?;
                Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
            }));
        }
        for task in tasks {
            task.await?.map_err(|e| e.to_string())?;
        }
        Ok::<(), Box<dyn std::error::Error>>(())
    })?;
    let took = t.elapsed();
    let completed = store.count_rows("leader_board")?;
    let file_mb = std::fs::metadata(&path).map_or(0.0, |m| m.len() as f64 / 1e6);
    let wal_mb =
        std::fs::metadata(path.with_extension("db.wal")).map_or(0.0, |m| m.len() as f64 / 1e6);
    println!(
        "run load ({TEAMS} teams × {ROUNDS} rounds, {AT_ONCE} at a time, ≈ 100 kB prompts): {:.2} s, \
         peak RSS {:.0} MB (before the run {:.0} MB), file {file_mb:.1} MB + log {wal_mb:.1} MB, \
         {completed} rounds completed",
        took.as_secs_f64(),
        peak_rss_mb(),
        rss_before,
    );
    drop(writer);
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::var("MIXSEEK_BENCH_RUN_LOAD").is_ok_and(|v| !v.is_empty() && v != "0") {
        return run_load();
    }
    let total: u32 = std::env::var("MIXSEEK_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let executions = (total / (TEAMS * ROUNDS)).max(1);
    let total = executions * TEAMS * ROUNDS;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("mixseek.db");
    let store = Store::open(&path)?;
    let writer = store.writer(PiiMasker::disabled())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;

    println!(
        "mixseek-store benchmark: {total} rounds ({executions} executions × {TEAMS} teams × {ROUNDS} rounds)"
    );
    let mut build = Duration::ZERO;
    let mut write = Duration::ZERO;
    // the executions start (their rows are what tells the writer that they have no rounds yet)
    let starts: Vec<Event> = (0..executions).map(|e| started(e, TEAMS, ROUNDS)).collect();
    let t = Instant::now();
    rt.block_on(writer.write_all(starts))?;
    write += t.elapsed();
    let mut pending = Vec::with_capacity(CHUNK);
    let flush =
        |events: Vec<Event>, write: &mut Duration| -> Result<(), Box<dyn std::error::Error>> {
            let t = Instant::now();
            rt.block_on(writer.write_all(events))?;
            *write += t.elapsed();
            Ok(())
        };
    for e in 0..executions {
        for round in 1..=ROUNDS {
            for team in 0..TEAMS {
                let t = Instant::now();
                pending.push(Event::Evaluated(Box::new(record(e, team, round))));
                build += t.elapsed();
                if pending.len() == CHUNK {
                    flush(
                        std::mem::replace(&mut pending, Vec::with_capacity(CHUNK)),
                        &mut write,
                    )?;
                }
            }
        }
    }
    if !pending.is_empty() {
        flush(pending, &mut write)?;
    }
    let rate = f64::from(total) / write.as_secs_f64();
    println!(
        "write: {total} rounds in {:.2} s = {rate:.0} rounds/s, target ≥ 50,000: {} (building the events took {:.2} s more)",
        write.as_secs_f64(),
        pass(rate >= 50_000.0),
        build.as_secs_f64()
    );
    let file_mb = |p: &std::path::Path| std::fs::metadata(p).map_or(0.0, |m| m.len() as f64 / 1e6);
    let wal = path.with_extension("db.wal");
    println!(
        "database: file {:.1} MB + write-ahead log {:.1} MB, {} leader_board rows",
        file_mb(&path),
        file_mb(&wal),
        store.count_rows("leader_board")?
    );
    // What the commits left in the write-ahead log is compressed into the file at the latest
    // when the store closes: timed here so the write rate above is not read without it.
    let t = Instant::now();
    store.checkpoint()?;
    let checkpoint = t.elapsed();
    let with_checkpoint = f64::from(total) / (write + checkpoint).as_secs_f64();
    println!(
        "checkpoint after the bulk write (folding the write-ahead log into the file): {:.2} s; \
         writes including it: {with_checkpoint:.0} rounds/s, target ≥ 50,000: {}",
        checkpoint.as_secs_f64(),
        pass(with_checkpoint >= 50_000.0)
    );

    let mid = exec_id(executions / 2);
    println!("queries (10 runs each):");
    time_query("ranking (prompt; one execution)", 10, || {
        store.ranking(&mid)
    });
    time_query("leaderboard --execution ID", 10, || {
        store.leaderboard(&LeaderboardScope::Execution(mid.clone()))
    });
    time_query("leaderboard --latest", 10, || {
        store.leaderboard(&LeaderboardScope::Latest)
    });
    time_query(
        "leaderboard --all (best per team, all executions)",
        10,
        || store.leaderboard(&LeaderboardScope::All),
    );
    time_query("history --execution ID (1,000 rounds)", 10, || {
        store.history(&mid, None)
    });
    time_query("history --execution ID --team T", 10, || {
        store.history(&mid, Some("team-042"))
    });
    time_query("team rounds (prompt history; one team)", 10, || {
        store.team_rounds(&mid, "team-042")
    });
    time_query("executions (list, 20 newest)", 10, || {
        store.executions(Some(20))
    });
    time_query("resolve an execution id prefix", 10, || {
        store.resolve_execution(&mid[..13])
    });
    live_run(&rt, &writer, executions + 1)?;
    concurrent_run(&rt, &writer, executions + 2)?;
    drop(writer);
    Ok(())
}
