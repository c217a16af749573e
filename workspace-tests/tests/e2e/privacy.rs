//! Nothing secret or personal leaves a run: a whole `mixseek exec` with `[privacy] mask_pii`,
//! the response cache, command and URL hooks and trace-level logging, against a fake
//! OpenAI-compatible server whose first answer echoes the API key (as some real error pages
//! do) and whose leader answer repeats the personal data of the prompt. Afterwards every file
//! the run wrote (the database dumped table by table, since DuckDB compresses strings), the
//! hook payloads, stdout and stderr are searched: the key appears nowhere, and no personal
//! data appears unmasked.

use mixseek_testkit::{FakeLlm, HttpResponse, HttpServer, Reply};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use workspace_tests::Sandbox;

/// Not shaped like any well-known key format: only the configured-key masking can hide it.
const KEY: &str = "acme-private-Zq9X7w3V5t1R8p6N";
/// The personal data of the prompt and of the leader's answer.
const PERSONAL: [&str; 5] = [
    "taro.yamada@example.co.jp",
    "4111 1111 1111 1111",
    "090-1234-5678",
    "192.168.10.20",
    "hanako.suzuki@example.org",
];

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Every row of every table of the database, as CSV text.
fn dump_database(db: &Path, into: &Path) -> String {
    let conn = duckdb::Connection::open_with_flags(
        db,
        duckdb::Config::default()
            .access_mode(duckdb::AccessMode::ReadOnly)
            .expect("read-only"),
    )
    .expect("open the database");
    let mut stmt = conn
        .prepare("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'")
        .expect("tables");
    let tables: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .expect("query")
        .map(|t| t.expect("name"))
        .collect();
    assert!(tables.iter().any(|t| t == "round_history"), "{tables:?}");
    let mut text = String::new();
    for t in tables {
        let csv = into.join(format!("{t}.csv"));
        conn.execute_batch(&format!("COPY \"{t}\" TO '{}' (HEADER)", csv.display()))
            .expect("copy");
        text.push_str(&std::fs::read_to_string(&csv).expect("csv"));
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_masked_run_leaks_no_key_and_no_personal_data_anywhere() {
    let fake = FakeLlm::openai().await;
    // A server error page quoting the key, then answers repeating the personal data.
    fake.push(Reply::status(
        500,
        format!("upstream rejected credentials {KEY}"),
    ));
    fake.set_default(Reply::text(
        "Itinerary for taro.yamada@example.co.jp (tel 090-1234-5678, card 4111 1111 1111 1111, \
         from 192.168.10.20). Questions: hanako.suzuki@example.org",
    ));
    let posted = Arc::new(Mutex::new(Vec::<String>::new()));
    let p = posted.clone();
    let receiver = HttpServer::start(0, move |req| {
        let p = p.clone();
        async move {
            p.lock()
                .expect("lock")
                .push(String::from_utf8_lossy(&req.body).into_owned());
            HttpResponse::text(204, "")
        }
    })
    .await
    .expect("hook receiver");

    let sb = Sandbox::new();
    let hook_out = sb.workspace().join("hook-events.jsonl");
    let cfg = sb.write(
        "ws/configs/orchestrator.toml",
        &format!(
            r#"[orchestrator]
min_rounds = 2
max_rounds = 2
evaluator_config = "evaluator.toml"
judgment_config = "judgment.toml"

[[orchestrator.teams]]
config = "team.toml"

[privacy]
mask_pii = true

[cache]
enabled = true

[providers.acme]
kind = "openai-compatible"
base_url = "{base}"
api_key_env = "ACME_TOKEN"

[[hooks]]
on = "round_complete"
command = ["sh", "-c", "cat >> '{out}'; echo >> '{out}'"]

[[hooks]]
on = "team_complete"
command = ["sh", "-c", "cat >> '{out}'; echo >> '{out}'"]

[[hooks]]
on = "execution_complete"
url = "{hook}/hook"
"#,
            base = fake.base_url(),
            out = hook_out.display(),
            hook = receiver.uri(),
        ),
    );
    sb.write(
        "ws/configs/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\n",
    );
    sb.write("ws/configs/judgment.toml", "model = \"mock:judge\"\n");
    sb.write(
        "ws/configs/team.toml",
        "[team]\nteam_id = \"travel\"\nteam_name = \"Travel\"\n[team.leader]\nmodel = \"acme:planner\"\n",
    );
    let prompt = "Plan a trip for taro.yamada@example.co.jp, card 4111 1111 1111 1111, \
                  phone 090-1234-5678, connecting from 192.168.10.20";
    let mut cmd = sb.bare_cmd();
    cmd.env("ACME_TOKEN", KEY)
        .arg("-w")
        .arg(sb.workspace())
        .args(["exec", prompt, "--log-level", "trace", "-c"])
        .arg(&cfg);
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("run"))
        .await
        .expect("join");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        fake.request_count() >= 3,
        "the error page and both rounds' answers were served"
    );

    // What the run wrote: the workspace (database, logs, progress files, cache, hook output).
    let written = files(&sb.workspace());
    let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    for expected in [
        "mixseek.db",
        "logs/mixseek.log",
        ".progress.json",
        ".cache/llm/",
    ] {
        assert!(
            names.iter().any(|n| n.contains(expected)),
            "{expected} not written: {names:#?}"
        );
    }
    let log = std::fs::read_to_string(sb.workspace().join("logs/mixseek.log")).expect("log");
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "debug logging ran"
    );
    let hooks = std::fs::read_to_string(&hook_out).expect("the command hooks ran");
    let posted = posted.lock().expect("lock").join("\n");
    assert!(posted.contains("execution_finished"), "URL hook: {posted}");

    let dump_dir = tempfile::tempdir().expect("tempdir");
    let mut haystacks: Vec<(String, String)> = vec![
        ("stdout".into(), stdout.clone()),
        ("stderr".into(), stderr.clone()),
        ("command hook payloads".into(), hooks.clone()),
        ("URL hook payloads".into(), posted.clone()),
        (
            "database rows".into(),
            dump_database(&sb.workspace().join("mixseek.db"), dump_dir.path()),
        ),
    ];
    for path in &written {
        let bytes = std::fs::read(path).expect("read");
        haystacks.push((
            path.display().to_string(),
            String::from_utf8_lossy(&bytes).into_owned(),
        ));
    }
    for (name, text) in &haystacks {
        assert!(!text.contains(KEY), "the API key is in {name}");
        assert!(
            !text.contains("Zq9X7w3V5t1R8p6N"),
            "part of the key is in {name}"
        );
        for personal in PERSONAL {
            assert!(
                !text.contains(personal),
                "unmasked `{personal}` in {name}:\n{}",
                text.chars().take(2000).collect::<String>()
            );
        }
    }

    // Masked, not dropped: the labels are where the data was.
    for (name, text) in [
        ("stdout", &stdout),
        ("hooks", &hooks),
        ("database", &haystacks[4].1),
    ] {
        assert!(text.contains("[メールアドレス]"), "{name}: {text}");
    }
    assert!(haystacks[4].1.contains("[電話番号]") && haystacks[4].1.contains("[カード番号]"));
}
