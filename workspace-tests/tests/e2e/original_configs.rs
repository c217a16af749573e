//! The original's own example configurations as a compatibility corpus: every TOML file the
//! mixseek-core 0.1.0a22 package ships (`workspace-tests/fixtures/mixseek-core-0.1.0a22`,
//! Apache-2.0, its LICENSE beside them) loads unchanged, laid out as the original's
//! `mixseek init` lays them out; and competitions built from them run end to end against the
//! testkit's fake servers of every provider they name (Gemini, xAI's Responses API,
//! Anthropic). To check a later release, drop its files into a folder of the same shape and
//! point [`CORPUS`] at it.

use mixseek_testkit::{FakeLlm, RESPONSES_PATH};
use serde_json::Value;
use std::path::{Path, PathBuf};
use workspace_tests::{Sandbox, describe, repo_root};

/// The folder of the release checked.
const CORPUS: &str = "workspace-tests/fixtures/mixseek-core-0.1.0a22";

/// Where the original's `mixseek init` puts each sample (`templates/` of the package), and
/// where these tests put the rest: the prompt builder sample as the workspace's implicit
/// default, and the member agent samples (`agents/` of the package) in `configs/members/`.
fn destination(corpus_file: &str) -> Option<&'static str> {
    Some(match corpus_file {
        "templates/search_news.toml" => "configs/search_news.toml",
        "templates/search_news_multi_perspective.toml" => {
            "configs/search_news_multi_perspective.toml"
        }
        "templates/team_general_researcher.toml" => "configs/agents/team_general_researcher.toml",
        "templates/team_sns_researcher.toml" => "configs/agents/team_sns_researcher.toml",
        "templates/team_academic_researcher.toml" => "configs/agents/team_academic_researcher.toml",
        "templates/evaluator_search_news.toml" => "configs/evaluators/evaluator_search_news.toml",
        "templates/judgment_search_news.toml" => "configs/judgment/judgment_search_news.toml",
        "templates/prompt_builder_default.toml" => "configs/prompt_builder.toml",
        "agents/plain.toml" => "configs/members/plain.toml",
        "agents/web-search.toml" => "configs/members/web-search.toml",
        "agents/web-fetch.toml" => "configs/members/web-fetch.toml",
        "agents/code-exec.toml" => "configs/members/code-exec.toml",
        _ => return None,
    })
}

/// Every TOML file of the corpus, relative to it.
fn corpus_files() -> Vec<String> {
    let root = repo_root().join(CORPUS);
    let mut files = Vec::new();
    for dir in ["templates", "agents"] {
        for entry in std::fs::read_dir(root.join(dir)).expect("read the corpus") {
            let name = entry.expect("entry").file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".toml") {
                files.push(format!("{dir}/{name}"));
            }
        }
    }
    files.sort();
    files
}

/// A team of the four member samples, each loaded from its file by `config`, led by the
/// samples' Gemini model; and an orchestrator of that team (the test's own files: the
/// original ships no team of its member samples).
const MEMBERS_TEAM: &str = "[team]\nteam_id = \"member-samples\"\nteam_name = \"Member samples\"\n\
    [team.leader]\nmodel = \"google-gla:gemini-flash-lite-latest\"\n\
    [[team.members]]\nconfig = \"configs/members/plain.toml\"\n\
    [[team.members]]\nconfig = \"configs/members/web-search.toml\"\n\
    [[team.members]]\nconfig = \"configs/members/web-fetch.toml\"\n\
    [[team.members]]\nconfig = \"configs/members/code-exec.toml\"\n";

/// A workspace holding every corpus file, byte for byte, where [`destination`] says.
fn corpus_workspace(sb: &Sandbox) -> PathBuf {
    let ws = sb.workspace();
    let root = repo_root().join(CORPUS);
    let files = corpus_files();
    assert!(files.len() >= 12, "the corpus is there: {files:?}");
    for file in &files {
        let to = destination(file).unwrap_or_else(|| {
            panic!("{CORPUS}/{file}: a file of a new release; say where `mixseek init` puts it")
        });
        let to = ws.join(to);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(root.join(file), &to).expect("copy");
    }
    write(&ws, "configs/agents/team_member_samples.toml", MEMBERS_TEAM);
    write(
        &ws,
        "configs/member_samples.toml",
        "[orchestrator]\nmin_rounds = 1\nmax_rounds = 1\n\
         [[orchestrator.teams]]\nconfig = \"configs/agents/team_member_samples.toml\"\n",
    );
    ws
}

fn write(ws: &Path, rel: &str, text: &str) {
    let p = ws.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

/// Keys of the providers the corpus names (the dry run checks they are set).
fn with_keys(cmd: &mut assert_cmd::Command) {
    cmd.env("GOOGLE_API_KEY", "test-google-key-0123456789abcdefghij")
        .env("GROK_API_KEY", "xai-test-0123456789abcdefghij")
        .env("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdefghij");
}

async fn output(mut cmd: assert_cmd::Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run mixseek"))
        .await
        .expect("join")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_config_of_the_original_loads_unchanged() {
    let sb = Sandbox::new();
    let ws = corpus_workspace(&sb);
    for orchestrator in [
        "configs/search_news.toml",
        "configs/search_news_multi_perspective.toml",
        "configs/member_samples.toml",
    ] {
        let mut cmd = sb.cmd();
        with_keys(&mut cmd);
        cmd.args(["exec", "x", "--dry-run", "-c"])
            .arg(ws.join(orchestrator));
        let out = output(cmd).await;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{orchestrator}: {}",
            describe(&out)
        );
        assert!(
            text.contains("✅ All checks passed"),
            "{orchestrator}: {text}"
        );
        // the workspace's prompt builder is the original's sample, and it compiles
        assert!(
            text.contains("configs/prompt_builder.toml")
                && text.contains("テンプレートをコンパイルしました"),
            "{orchestrator}: {text}"
        );
    }
    // what each orchestrator names was loaded from the corpus, not defaults
    let mut cmd = sb.cmd();
    with_keys(&mut cmd);
    cmd.args(["exec", "x", "--dry-run", "-c"])
        .arg(ws.join("configs/search_news_multi_perspective.toml"));
    let text = String::from_utf8_lossy(&output(cmd).await.stdout).into_owned();
    for part in [
        "general-researcher-team",
        "sns-researcher-team",
        "academic-researcher-team",
        "configs/evaluators/evaluator_search_news.toml",
        "configs/judgment/judgment_search_news.toml",
        "grok-responses",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn competitions_of_the_originals_configs_run_against_the_fake_servers() {
    let gemini = FakeLlm::gemini().await;
    let xai = FakeLlm::openai().await;
    let anthropic = FakeLlm::anthropic().await;
    let sb = Sandbox::new();
    let ws = corpus_workspace(&sb);
    // The multi-perspective sample as shipped, plus where its providers are (the fakes).
    let shipped = std::fs::read_to_string(ws.join("configs/search_news_multi_perspective.toml"))
        .expect("read");
    write(
        &ws,
        "configs/run_multi_perspective.toml",
        &format!(
            "{shipped}\n[providers.grok-responses]\nbase_url = \"{}\"\n",
            xai.base_url()
        ),
    );
    for (orchestrator, teams) in [
        ("configs/run_multi_perspective.toml", 3),
        ("configs/member_samples.toml", 1),
    ] {
        let mut cmd = sb.cmd();
        with_keys(&mut cmd);
        cmd.env("GOOGLE_GLA_BASE_URL", gemini.base_url())
            .env("ANTHROPIC_BASE_URL", anthropic.base_url())
            .args([
                "exec",
                "What happened in the news today?",
                "-f",
                "json",
                "-q",
                "-c",
            ])
            .arg(ws.join(orchestrator));
        let out = output(cmd).await;
        assert_eq!(
            out.status.code(),
            Some(0),
            "{orchestrator}: {}",
            describe(&out)
        );
        let summary: Value = serde_json::from_slice(&out.stdout).expect("json summary");
        let results = summary["team_results"].as_array().expect("team results");
        assert_eq!(results.len(), teams, "{orchestrator}: {summary}");
        assert_eq!(
            summary["failed_teams_info"].as_array().map(Vec::len),
            Some(0),
            "{orchestrator}: {summary}"
        );
    }
    // every provider the corpus names was called
    assert!(gemini.request_count() > 0);
    assert!(
        xai.requests()
            .iter()
            .any(|r| r.path == RESPONSES_PATH && r.body["model"] == "grok-4-1-fast"),
        "the SNS researcher's member went through the Responses API"
    );
    let anthropic_models: Vec<String> = anthropic
        .requests()
        .iter()
        .filter_map(|r| r.body["model"].as_str().map(str::to_string))
        .collect();
    assert!(
        anthropic_models.iter().any(|m| m == "claude-haiku-4-5")
            && anthropic_models
                .iter()
                .any(|m| m == "claude-sonnet-4-5-20250929"),
        "the code-exec and web-fetch samples ran: {anthropic_models:?}"
    );
}
