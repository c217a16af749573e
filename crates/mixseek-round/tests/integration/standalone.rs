//! `run_team` (the logic of `mixseek team`): configuration from the workspace, checks, one
//! team's rounds offline with the `mock:` provider.

use mixseek_config::{EnvVars, Workspace};
use mixseek_core::{ExitReason, TeamStatusKind};
use mixseek_llm::Env;
use mixseek_round::{StandaloneError, StandaloneOptions, run_team};
use std::path::{Path, PathBuf};

fn write(dir: &Path, rel: &str, content: &str) -> PathBuf {
    let p = dir.join(rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(&p, content).expect("write");
    p
}

fn options(ws: &Path, team_file: PathBuf) -> StandaloneOptions {
    StandaloneOptions {
        workspace: Workspace::at(ws),
        team_entry: team_file.display().to_string(),
        team_file,
        prompt: "Explain async Rust".into(),
        max_rounds: Some(2),
        min_rounds: Some(1),
        env: EnvVars::from_pairs(Vec::<(String, String)>::new()),
        llm_env: Env::from_map(Vec::<(String, String)>::new()),
        attachments: Vec::new(),
    }
}

const TEAM: &str = "[team]\nteam_id = \"alpha\"\nteam_name = \"Alpha\"\n[team.leader]\nmodel = \"mock:leader\"\n[[team.members]]\nconfig = \"agents/helper.toml\"\n";
const HELPER: &str = "[agent]\nname = \"helper\"\ntype = \"plain\"\nmodel = \"mock:helper\"\n";

#[tokio::test]
async fn a_team_runs_offline_with_the_workspace_configs() {
    let dir = tempfile::tempdir().expect("tmp");
    let ws = dir.path();
    write(
        ws,
        "configs/evaluator.toml",
        "default_model = \"mock:judge\"\n[[metrics]]\nname = \"Coverage\"\n",
    );
    write(
        ws,
        "configs/judgment.toml",
        "model = \"mock:judge-continue\"\n",
    );
    write(ws, "agents/helper.toml", HELPER);
    let team = write(ws, "team.toml", TEAM);
    let run = run_team(options(ws, team)).await.expect("ran");
    assert!(run.completed);
    let r = &run.report;
    assert_eq!(
        (r.status, r.exit_reason),
        (
            TeamStatusKind::Completed,
            Some(ExitReason::MaxRoundsReached)
        )
    );
    assert_eq!(r.rounds.len(), 2);
    assert!(r.rounds.iter().all(|x| {
        x.member_submissions
            .as_ref()
            .is_some_and(|m| m["success_count"] == 1)
    }));
    let best = r.best.as_ref().expect("best");
    assert!(best.final_submission);
    let text = r.to_text();
    assert!(
        text.contains("Round 1: score") && text.contains("Round 2: score"),
        "{text}"
    );
    assert!(text.contains("=== Final Submission (round"), "{text}");
    assert!(text.contains("[mock answer from mock:leader]"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).expect("json");
    assert_eq!(json["rounds"].as_array().map(Vec::len), Some(2));
    assert_eq!(json["best"]["final_submission"], true);
}

#[tokio::test]
async fn configuration_and_setup_problems_are_reported_before_running() {
    let dir = tempfile::tempdir().expect("tmp");
    let ws = dir.path();
    // A typo in the team file.
    let bad = write(
        ws,
        "bad.toml",
        "[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[[team.members]]\nname = \"m\"\ntype = \"plian\"\nmodel = \"mock:x\"\n",
    );
    let err = run_team(options(ws, bad)).await.expect_err("invalid");
    assert!(matches!(err, StandaloneError::Config(_)));
    assert!(err.to_string().contains("did you mean `plain`?"), "{err}");

    // A provider-native member whose provider cannot honour its web search options.
    let native = write(
        ws,
        "native.toml",
        "[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[team.leader]\nmodel = \"mock:l\"\n[[team.members]]\nname = \"s\"\ntype = \"web_search\"\nmodel = \"google-gla:gemini-2.5-flash\"\n[team.members.tool_settings.web_search]\nmax_uses = 3\n",
    );
    let err = run_team(options(ws, native)).await.expect_err("refused");
    assert!(
        err.to_string().starts_with(
            "member `s`: type = \"web_search\" cannot use model `google-gla:gemini-2.5-flash`: provider `google-gla` (Gemini google_search) has no max_uses option"
        ),
        "{err}"
    );
    assert!(err.hint().is_some_and(|h| h.contains("web_fetch")));

    // A model whose key is missing.
    let keyless = write(
        ws,
        "keyless.toml",
        "[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[team.leader]\nmodel = \"openai:gpt-4o\"\n",
    );
    let err = run_team(options(ws, keyless)).await.expect_err("no key");
    assert!(
        err.to_string()
            .starts_with("leader: cannot use model `openai:gpt-4o`"),
        "{err}"
    );
    assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");

    // Round bounds.
    write(ws, "configs/judgment.toml", "model = \"mock:j\"\n");
    let team = write(
        ws,
        "ok.toml",
        "[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[team.leader]\nmodel = \"mock:l\"\n",
    );
    let mut o = options(ws, team);
    o.min_rounds = Some(3);
    let err = run_team(o).await.expect_err("bounds");
    assert_eq!(err.to_string(), "min_rounds (3) must be <= max_rounds (2)");
}
