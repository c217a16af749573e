//! Benchmarks of `mixseek experiment` (a plain program: `cargo bench --workspace --profile dev
//! --bench experiment`, after `cargo build --workspace --bins`). Drives the real binary on the
//! offline `mock:` provider with the quick start's competition played for exactly 2 rounds
//! (3 teams, a leader with two members each, four LLM-judge metrics, a judgment per round).
//!
//! 1. **Run.** An experiment of `MIXSEEK_BENCH_ITEMS` executions (default 10,000: one variant,
//!    10,000 tasks, `max_concurrent_executions = 4`) in one process. Targets: the wall time
//!    per execution at most that of a single `mixseek exec` of the same competition (the
//!    median of 5, each a process of its own, as a user runs it), and bounded memory: the
//!    peak RSS ≤ 300 MB and the RSS of the last quarter of the run no more than 20 % above
//!    that of the second quarter (it must not grow with the finished executions).
//! 2. **Merge.** 16 shard files of 1,000 executions each, made from the run's database (its
//!    first 1,000 executions copied under new execution and task ids per shard, rounds, LLM
//!    calls and items included), merged by `mixseek experiment merge`. Target: ≤ 10 s
//!    ("seconds"); the merged file is checked to hold the 16,000 executions exactly once.
//!
//! `MIXSEEK_BENCH_KEEP=1` keeps the folder (its path is printed).

#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use workspace_tests::procfs::{load_average, stat, status_kb, ticks_to_duration};

type BoxError = Box<dyn std::error::Error>;

const SHARDS: usize = 16;
const PER_SHARD: usize = 1000;

fn verdict(ok: bool) -> &'static str {
    if ok { "PASS" } else { "MISS" }
}

/// A finished process: wall and CPU time, and its RSS (KiB) sampled every 100 ms.
struct Measured {
    wall: Duration,
    cpu: Duration,
    peak_kb: u64,
    rss_kb: Vec<u64>,
}

/// Runs `command` to its end, sampling it; fails with its stderr when it fails.
fn measure(mut command: Command, out: &Path) -> Result<Measured, BoxError> {
    let err_path = out.with_extension("stderr.txt");
    let start = Instant::now();
    let mut child = command
        .env_remove("MIXSEEK_WORKSPACE")
        .env_remove("MIXSEEK_BENCH_ITEMS")
        .env_remove("MIXSEEK_BENCH_KEEP")
        .stdout(std::fs::File::create(out)?)
        .stderr(std::fs::File::create(&err_path)?)
        .spawn()?;
    let pid = child.id();
    let (mut peak_kb, mut ticks, mut rss_kb) = (0, 0, Vec::new());
    let mut next_sample = Duration::ZERO;
    let wall = loop {
        if let Some(kb) = status_kb(pid, "VmHWM:") {
            peak_kb = peak_kb.max(kb);
        }
        if start.elapsed() >= next_sample {
            next_sample += Duration::from_millis(100);
            if let Some(kb) = status_kb(pid, "VmRSS:") {
                rss_kb.push(kb);
            }
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
        return Err(format!(
            "{command:?} failed ({:?}): {}",
            status.code(),
            std::fs::read_to_string(&err_path).unwrap_or_default()
        )
        .into());
    }
    Ok(Measured {
        wall,
        cpu: ticks_to_duration(ticks),
        peak_kb,
        rss_kb,
    })
}

/// The quick start's configs in `dir/cfg`, with an orchestrator playing exactly 2 rounds.
fn write_configs(dir: &Path) -> Result<PathBuf, BoxError> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/quickstart");
    let cfg = dir.join("cfg");
    std::fs::create_dir_all(&cfg)?;
    for entry in std::fs::read_dir(&src)? {
        let entry = entry?;
        std::fs::copy(entry.path(), cfg.join(entry.file_name()))?;
    }
    let orch = std::fs::read_to_string(cfg.join("orchestrator.toml"))?;
    let two = orch.replace("max_rounds = 3", "max_rounds = 2");
    if two == orch {
        return Err("configs/quickstart/orchestrator.toml no longer says max_rounds = 3".into());
    }
    let path = cfg.join("orchestrator-2-rounds.toml");
    std::fs::write(&path, two)?;
    Ok(path)
}

fn mixseek(bin: &Path, workspace: &Path) -> Command {
    let mut c = Command::new(bin);
    c.arg("-w").arg(workspace).args(["--no-log-file", "-q"]);
    c
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The mean of a slice of samples.
fn mean(v: &[u64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.iter().sum::<u64>() as f64 / v.len() as f64
}

/// Writes shard `s` (1,000 executions of `source`, under new ids) to `path`.
fn make_shard(source: &Path, path: &Path, s: usize) -> Result<(), BoxError> {
    // The schema, as mixseek creates it.
    drop(mixseek_store::Store::open(path)?);
    let conn = duckdb::Connection::open(path)?;
    conn.execute_batch(&format!(
        "ATTACH '{}' AS src (READ_ONLY);
         CREATE TEMP TABLE ids AS
           SELECT execution_id AS old,
                  (SELECT printf('%s-%s-%s-%s-%s', h[1:8], h[9:12], h[13:16], h[17:20], h[21:32])
                     FROM (SELECT md5(execution_id || '/{s}') AS h)) AS new
           FROM (SELECT execution_id FROM src.experiment_items ORDER BY task_id LIMIT {PER_SHARD});",
        source.display().to_string().replace('\'', "''")
    ))?;
    let mut stmt = conn.prepare(
        "SELECT DISTINCT table_name FROM duckdb_columns()
         WHERE database_name = 'src' AND column_name = 'execution_id' ORDER BY table_name",
    )?;
    let tables: Vec<String> = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    conn.execute_batch("BEGIN")?;
    for t in &tables {
        let task = if t == "experiment_items" {
            format!(", t.task_id || '-s{s}' AS task_id")
        } else {
            String::new()
        };
        conn.execute_batch(&format!(
            "INSERT INTO main.\"{t}\" SELECT t.* REPLACE (ids.new AS execution_id{task})
             FROM src.\"{t}\" t JOIN ids ON t.execution_id = ids.old"
        ))?;
    }
    conn.execute_batch("INSERT INTO main.experiments SELECT * FROM src.experiments; COMMIT")?;
    Ok(())
}

fn main() -> Result<(), BoxError> {
    let bin = workspace_tests::mixseek_bin();
    let items = workspace_tests::bench_count("MIXSEEK_BENCH_ITEMS", 10_000)?;
    let mut dir = tempfile::Builder::new()
        .prefix("mixseek-bench-experiment-")
        .tempdir()?;
    if std::env::var_os("MIXSEEK_BENCH_KEEP").is_some() {
        dir.disable_cleanup(true);
        println!("experiment: keeping {}", dir.path().display());
    }
    let root = dir.path();
    let orchestrator = write_configs(root)?;
    let mut all_pass = true;

    // A single exec of the same competition, as a user runs it: five processes.
    let mut singles = Vec::new();
    let mut single_cpu = Vec::new();
    for i in 0..5 {
        let mut c = mixseek(&bin, &root.join(format!("single-{i}")));
        c.args([
            "exec",
            "Task 1: write a haiku about item 1.",
            "-f",
            "json",
            "-c",
        ])
        .arg(&orchestrator);
        let m = measure(c, &root.join(format!("single-{i}.json")))?;
        singles.push(m.wall);
        single_cpu.push(m.cpu);
    }
    let single = median(singles);
    let single_cpu = median(single_cpu);

    // 1. The experiment.
    let mut tasks = String::new();
    for i in 0..items {
        tasks.push_str(&format!(
            "{{\"id\": \"t{i:05}\", \"prompt\": \"Task {i}: write a haiku about item {i}.\"}}\n"
        ));
    }
    std::fs::write(root.join("tasks.jsonl"), tasks)?;
    std::fs::write(
        root.join("experiment.toml"),
        "[experiment]\nname = \"bench\"\ntasks = \"tasks.jsonl\"\nmax_concurrent_executions = 4\n\n\
         [[experiment.variants]]\nname = \"quickstart\"\nconfig = \"cfg/orchestrator-2-rounds.toml\"\n",
    )?;
    let ws = root.join("ws");
    let load_before = load_average();
    let mut c = mixseek(&bin, &ws);
    c.args(["experiment", "run", "--no-progress", "-f", "json"])
        .arg(root.join("experiment.toml"));
    let run = measure(c, &root.join("run.json"))?;
    let load_after = load_average();
    let outcome: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("run.json"))?)?;
    let done = outcome.get("done").and_then(|v| v.as_u64());
    let failed = outcome.get("failed").and_then(|v| v.as_u64());
    if done != Some(items as u64) || failed != Some(0) {
        return Err(format!("NOT EVERY EXECUTION FINISHED: {outcome}").into());
    }
    let per_execution = run.wall / items as u32;
    let speed_ok = per_execution <= single;
    let quarter = run.rss_kb.len() / 4;
    let (second, last) = (
        mean(&run.rss_kb[quarter..2 * quarter]),
        mean(&run.rss_kb[3 * quarter..]),
    );
    let growth = if second > 0.0 {
        last / second - 1.0
    } else {
        0.0
    };
    let peak_mb = run.peak_kb as f64 / 1024.0;
    let memory_ok = peak_mb <= 300.0 && growth <= 0.20;
    all_pass &= speed_ok && memory_ok;
    println!(
        "experiment: {items} executions on mock: (3 teams × 2 rounds, max_concurrent_executions = 4): \
         wall {:.1} s = {:.1} ms per execution [{} ≤ a single exec's {:.0} ms], CPU {:.1} s = {:.1} ms \
         per execution (a single exec: {:.0} ms); peak RSS {peak_mb:.0} MB, mean RSS {:.0} MB in the \
         second quarter and {:.0} MB in the last ({:+.1} %) [{} ≤ 300 MB, ≤ +20 %]; database {:.0} MB; \
         load average {load_before} before, {load_after} after",
        run.wall.as_secs_f64(),
        per_execution.as_secs_f64() * 1000.0,
        verdict(speed_ok),
        single.as_secs_f64() * 1000.0,
        run.cpu.as_secs_f64(),
        run.cpu.as_secs_f64() * 1000.0 / items as f64,
        single_cpu.as_secs_f64() * 1000.0,
        second / 1024.0,
        last / 1024.0,
        growth * 100.0,
        verdict(memory_ok),
        std::fs::metadata(ws.join("mixseek.db"))?.len() as f64 / 1e6,
    );

    // 2. The merge of 16 shards of 1,000 executions.
    let source = ws.join("mixseek.db");
    let mut shards = Vec::new();
    for s in 0..SHARDS {
        let path = root.join(format!("shard-{s}.db"));
        make_shard(&source, &path, s)?;
        shards.push(path);
    }
    let merged = root.join("all.db");
    let mut c = mixseek(&bin, &root.join("merge-ws"));
    c.args(["experiment", "merge"])
        .args(&shards)
        .arg("-o")
        .arg(&merged);
    let m = measure(c, &root.join("merge.txt"))?;
    let conn = duckdb::Connection::open(&merged)?;
    let (executions, distinct, items_merged): (i64, i64, i64) = conn.query_row(
        "SELECT count(*), count(DISTINCT execution_id),
                (SELECT count(*) FROM experiment_items) FROM execution_summary",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let rounds: i64 = conn.query_row("SELECT count(*) FROM round_history", [], |r| r.get(0))?;
    let expected = (SHARDS * PER_SHARD.min(items)) as i64;
    if executions != expected || distinct != expected || items_merged != expected {
        return Err(format!(
            "MERGE INCOMPLETE: {executions} executions ({distinct} distinct), {items_merged} items; expected {expected}"
        )
        .into());
    }
    let merge_ok = m.wall <= Duration::from_secs(10);
    all_pass &= merge_ok;
    println!(
        "experiment: merge of {SHARDS} shards × {} executions ({rounds} rounds in all): wall {:.2} s \
         [{} ≤ 10 s], CPU {:.2} s, peak RSS {:.0} MB; merged file {:.0} MB",
        PER_SHARD.min(items),
        m.wall.as_secs_f64(),
        verdict(merge_ok),
        m.cpu.as_secs_f64(),
        m.peak_kb as f64 / 1024.0,
        std::fs::metadata(&merged)?.len() as f64 / 1e6,
    );
    println!(
        "experiment: {}",
        if all_pass {
            "every target met"
        } else {
            "MISSED a target (see MISS above)"
        }
    );
    Ok(())
}
