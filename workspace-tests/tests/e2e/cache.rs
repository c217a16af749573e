//! The opt-in LLM response cache through the real binary: `mixseek llm -c` with
//! `[cache] enabled = true` and `mixseek exec --cache`, each run twice against a fake
//! OpenAI server: the second run sends nothing and says where its answers came from.

use mixseek_testkit::{FakeLlm, Reply};
use workspace_tests::Sandbox;

const KEY: &str = "sk-test-cache-0123456789abcdef";

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs the command off the async runtime (the fake server lives on it).
async fn run(mut cmd: assert_cmd::Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run"))
        .await
        .expect("join")
}

/// Every file under `dir`, recursively.
fn files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_with_a_cache_enabled_config_answers_the_second_run_from_disk() {
    let fake = FakeLlm::openai().await;
    fake.set_default(Reply::text("cached hello"));
    let sb = Sandbox::new();
    let cfg = sb.write("orch.toml", "[orchestrator]\n\n[cache]\nenabled = true\n");
    let call = || {
        let mut cmd = sb.cmd();
        cmd.env("OPENAI_API_KEY", KEY)
            .env("OPENAI_BASE_URL", fake.base_url());
        cmd.args(["llm", "openai:gpt-4o", "say hello", "-c"])
            .arg(&cfg);
        cmd
    };
    let first = run(call()).await;
    let text = stdout(&first);
    assert!(first.status.success(), "{text}\n{}", stderr(&first));
    assert!(text.starts_with("cached hello"), "{text}");
    assert!(text.contains("attempts: 1,"), "{text}");
    assert!(!text.contains("from cache"), "{text}");
    assert!(text.ends_with("cache: 0 hits, 1 miss\n"), "{text}");
    assert_eq!(fake.request_count(), 1);

    let second = run(call()).await;
    let text = stdout(&second);
    assert!(second.status.success(), "{text}\n{}", stderr(&second));
    assert!(text.starts_with("cached hello"), "{text}");
    assert!(
        text.contains("attempts: 0,") && text.contains(", from cache"),
        "{text}"
    );
    assert!(text.ends_with("cache: 1 hit, 0 misses\n"), "{text}");
    assert_eq!(fake.request_count(), 1, "the second run must send nothing");

    // The entry lives in the workspace's default cache directory, without the key.
    let entries = files(&sb.workspace().join(".cache/llm"));
    assert_eq!(entries.len(), 1, "{entries:?}");
    let stored = std::fs::read_to_string(&entries[0]).expect("read");
    assert!(stored.contains("cached hello") && !stored.contains(KEY));

    // A different prompt is a miss and goes to the server.
    let mut cmd = sb.cmd();
    cmd.env("OPENAI_API_KEY", KEY)
        .env("OPENAI_BASE_URL", fake.base_url());
    cmd.args(["llm", "openai:gpt-4o", "say goodbye", "-c"])
        .arg(&cfg);
    let third = run(cmd).await;
    assert!(stdout(&third).ends_with("cache: 0 hits, 1 miss\n"));
    assert_eq!(fake.request_count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_with_cache_sends_nothing_the_second_time_and_reports_hits() {
    let fake = FakeLlm::openai().await;
    fake.set_default(Reply::text("A short report about tokio."));
    let sb = Sandbox::new();
    // Templates without `current_datetime`: the default ones carry the time of the call,
    // so their requests differ from run to run and never hit the cache.
    let cfg = sb.write(
        "ws/configs/cache/orchestrator.toml",
        r#"[orchestrator]
min_rounds = 1
max_rounds = 1
evaluator_config = "evaluator.toml"
judgment_config = "judgment.toml"

[[orchestrator.teams]]
config = "team.toml"

[prompt_builder]
team_user_prompt = "Task: {{ user_prompt }} (round {{ round_number }})"
evaluator_user_prompt = "Task: {{ user_prompt }}\nRate this submission: {{ submission }}"
judgment_user_prompt = "Task: {{ user_prompt }} (round {{ round_number }})\n{{ submission_history }}"
"#,
    );
    sb.write(
        "ws/configs/cache/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\n",
    );
    sb.write(
        "ws/configs/cache/judgment.toml",
        "model = \"mock:judge-stop\"\n",
    );
    sb.write(
        "ws/configs/cache/team.toml",
        "[team]\nteam_id = \"beta\"\nteam_name = \"Beta\"\n[team.leader]\nmodel = \"openai:gpt-fake\"\n",
    );
    let call = || {
        let mut cmd = sb.cmd();
        cmd.env("OPENAI_API_KEY", KEY)
            .env("OPENAI_BASE_URL", fake.base_url());
        cmd.args(["exec", "Write about tokio", "--cache", "-c"])
            .arg(&cfg);
        cmd
    };
    let first = run(call()).await;
    let text = stdout(&first);
    assert!(first.status.success(), "{text}\n{}", stderr(&first));
    assert_eq!(fake.request_count(), 1, "{text}");
    let misses = text
        .lines()
        .find_map(|l| l.strip_prefix("cache: 0 hits, "))
        .unwrap_or_else(|| panic!("no cache line in:\n{text}"))
        .to_string();

    let second = run(call()).await;
    let text = stdout(&second);
    assert!(second.status.success(), "{text}\n{}", stderr(&second));
    assert_eq!(
        fake.request_count(),
        1,
        "the second run must be answered from the cache:\n{text}"
    );
    // Every call of the first run (all misses) is a hit now.
    let calls = misses
        .trim_end_matches(" misses")
        .trim_end_matches(" miss")
        .to_string();
    let hits = if calls == "1" { "hit" } else { "hits" };
    assert!(
        text.contains(&format!("cache: {calls} {hits}, 0 misses")),
        "first run: {misses}; second run:\n{text}"
    );
    assert!(text.contains("A short report about tokio."), "{text}");
    assert!(!text.contains(KEY) && !stderr(&second).contains(KEY));
}

/// With the shipped templates every prompt carries `current_datetime`, which differs from
/// one run to the next: the cache must still answer a rerun (the rendered datetime is left out
/// of the key), members and later turns included, and give the same results.
#[test]
fn a_rerun_with_the_default_templates_is_answered_from_the_cache() {
    let sb = Sandbox::new();
    let cfg = workspace_tests::write_mock_competition(&sb, &["solo"]);
    let run = || {
        let mut cmd = sb.cmd();
        cmd.args(["exec", "Write a haiku about autumn", "--cache", "-c"])
            .arg(&cfg);
        let out = cmd.output().expect("run");
        assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
        stdout(&out)
    };
    let line = |text: &str, prefix: &str| {
        text.lines()
            .find(|l| l.contains(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line in {text}"))
            .to_string()
    };
    let first = run();
    assert!(
        line(&first, "cache: ").starts_with("cache: 0 hits, "),
        "{first}"
    );
    // The clock moves on between the runs (the datetime has microseconds; wait a second anyway).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let second = run();
    let cache = line(&second, "cache: ");
    assert!(cache.ends_with(" 0 misses"), "{cache}");
    assert!(!cache.starts_with("cache: 0 hits"), "{cache}");
    assert_eq!(line(&first, "Best Result"), line(&second, "Best Result"));
}
