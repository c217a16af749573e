//! Store throughput and query latency (a plain program:
//! `cargo bench --workspace --profile dev --bench store`).
//!
//! Writes 1,000,000 rounds (1,000 executions × 100 teams × 10 rounds) through the real
//! writer (`StoreWriter::write_all`: staging on the caller's side, the channel, the writer
//! thread, batched transactions and the upsert every run uses), then times the reads the
//! prompts and the report commands make, and the checkpoint DuckDB otherwise does when the
//! store closes. Targets: ≥ 50,000 rounds/s written, each query ≤ 100 ms.
//!
//! `MIXSEEK_BENCH_ROUNDS=N` writes N rounds instead (rounded to whole executions).

#![allow(clippy::print_stdout)]

use chrono::{TimeZone, Utc};
use mixseek_core::{Event, MemberSubmissionsRecord, MetricScore, RoundRecord, ScoreDetails, Usage};
use mixseek_store::{LeaderboardScope, PiiMasker, Store};
use std::time::{Duration, Instant};

const TEAMS: u32 = 100;
const ROUNDS: u32 = 10;
const CHUNK: usize = 65_536;

fn exec_id(e: u32) -> String {
    format!("{e:08x}-0000-4000-8000-{e:012x}")
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
        execution_id: execution_id.clone(),
        team_id: team_id.clone(),
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
            execution_id,
            team_id,
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
    }
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
    let verdict = if median <= Duration::from_millis(100) {
        "ok"
    } else {
        "OVER TARGET"
    };
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
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
        "write: {total} rounds in {:.2} s = {rate:.0} rounds/s ({}; building the events took {:.2} s more)",
        write.as_secs_f64(),
        if rate >= 50_000.0 {
            "ok, target ≥ 50,000"
        } else {
            "BELOW the 50,000 target"
        },
        build.as_secs_f64()
    );
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(path.with_extension("db.wal"))
            .map(|m| m.len())
            .unwrap_or(0);
    println!(
        "database: {:.1} MB, {} leader_board rows",
        size as f64 / 1e6,
        store.count_rows("leader_board")?
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
    drop(writer);
    // What the commits left in the write-ahead log is compressed into the file at the latest
    // when the store closes: timed here so the write rate above is not read without it.
    let t = Instant::now();
    store.connection()?.execute_batch("CHECKPOINT")?;
    let checkpoint = t.elapsed();
    println!(
        "checkpoint after the run (folding the write-ahead log into the file): {:.2} s; \
         writes including it: {:.0} rounds/s",
        checkpoint.as_secs_f64(),
        f64::from(total) / (write + checkpoint).as_secs_f64()
    );
    Ok(())
}
