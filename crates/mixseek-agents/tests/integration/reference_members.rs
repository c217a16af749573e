//! Members loaded from files (`config = "member.toml"`): the entry's `tool_name` /
//! `tool_description` overrides reach the leader's tool list on the wire; any other member
//! key next to `config` is an error naming the key, the file and what to do.

use crate::common;

use common::{deps, registry};
use mixseek_agents::{RoundContext, TeamAgents};
use mixseek_config::load_team;
use mixseek_config::{EnvVars, SourceMap, Workspace, WorkspaceSource};
use mixseek_prompt::PromptContext;
use mixseek_testkit::{FakeLlm, Reply, Wire};
use serde_json::json;
use std::path::Path;

fn workspace(root: &Path) -> Workspace {
    Workspace {
        root: root.to_path_buf(),
        source: WorkspaceSource::Cli,
    }
}

fn write(root: &Path, rel: &str, text: &str) -> std::path::PathBuf {
    let p = root.join(rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(&p, text).expect("write");
    p
}

const MEMBER: &str = "[agent]\nname = \"analyst\"\ntype = \"plain\"\nmodel = \"mem:gpt-a\"\ntool_description = \"from the member file\"\n[agent.system_instruction]\ntext = \"You analyse.\"\n";

#[tokio::test]
async fn reference_overrides_reach_the_leader_tool_list() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "agents/analyst.toml", MEMBER);
    write(
        root,
        "agents/plainref.toml",
        &MEMBER
            .replace("analyst", "writer")
            .replace("tool_description = \"from the member file\"\n", ""),
    );
    let team_file = write(
        root,
        "team.toml",
        "[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[team.leader]\nmodel = \"lead:gpt-l\"\n\n[[team.members]]\nconfig = \"agents/analyst.toml\"\ntool_name = \"ask_the_analyst\"\ntool_description = \"Deep analysis of numbers\"\n\n[[team.members]]\nconfig = \"agents/plainref.toml\"\n",
    );
    let part = load_team(
        &workspace(root),
        "team.toml",
        &team_file,
        &EnvVars::default(),
        &mut SourceMap::default(),
        "",
    );
    assert!(part.errors.is_empty(), "{:?}", part.errors);
    let loaded = part.value.expect("team");
    let first = &loaded.settings.members[0];
    assert_eq!(first.name.as_deref(), Some("analyst"));
    assert_eq!(first.tool_name.as_deref(), Some("ask_the_analyst"));
    assert_eq!(
        first.system_instruction.as_ref().map(|i| i.0.as_str()),
        Some("You analyse.")
    );

    let leader = FakeLlm::openai().await;
    let members = FakeLlm::openai().await;
    leader.push(Reply::tool_call(
        "ask_the_analyst",
        json!({"task": "check"}),
    ));
    leader.push(Reply::text("done"));
    members.set_default(Reply::text("analysed"));
    let reg = registry(&[
        ("lead", &leader, Wire::OpenAi),
        ("mem", &members, Wire::OpenAi),
    ]);
    let agents = TeamAgents::from_loaded(&loaded, deps(reg));
    let ctx = RoundContext::new(PromptContext {
        user_prompt: "q".into(),
        round_number: 1,
        team_id: "t".into(),
        team_name: "T".into(),
        execution_id: Some("e".into()),
        ..Default::default()
    });
    let out = agents.run_round("q", &ctx).await.expect("round");
    assert_eq!(out.member_submissions[0].content, "analysed");

    let body = &leader.requests()[0].body;
    let tools: Vec<(String, String)> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| {
            (
                t["function"]["name"].as_str().unwrap_or("").to_string(),
                t["function"]["description"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            (
                "ask_the_analyst".to_string(),
                "Deep analysis of numbers".to_string()
            ),
            (
                "delegate_to_writer".to_string(),
                "Delegate task to writer".to_string()
            ),
        ]
    );
    // The member ran with the file's instruction.
    let member_system = members.requests()[0].body["messages"][0].clone();
    assert_eq!(member_system["role"], "system");
    assert!(
        member_system["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("You analyse.")),
        "{member_system}"
    );
}

#[test]
fn other_keys_next_to_config_are_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "agents/analyst.toml", MEMBER);
    let team_file = write(
        root,
        "team.toml",
        "[team]\nteam_id = \"t\"\nteam_name = \"T\"\n[[team.members]]\nconfig = \"agents/analyst.toml\"\ndescription = \"ok: an alias of tool_description\"\nmodel = \"openai:gpt-4o\"\ntemperature = 0.5\n",
    );
    let part = load_team(
        &workspace(root),
        "team.toml",
        &team_file,
        &EnvVars::default(),
        &mut SourceMap::default(),
        "",
    );
    let texts: Vec<String> = part.errors.items.iter().map(|i| i.to_string()).collect();
    assert_eq!(texts.len(), 2, "{texts:#?}");
    let model = &part.errors.items[0];
    assert_eq!(model.key, "team.members[0].model");
    assert_eq!(model.line, Some(7), "{model}");
    assert_eq!(
        model.message,
        "unknown key for a member reference: `model` cannot be set next to `config = \"agents/analyst.toml\"` (only tool_name and tool_description can)"
    );
    assert_eq!(
        model.hint.as_deref(),
        Some(
            "set `model` in the [agent] table of agents/analyst.toml, or define the member inline without `config`"
        )
    );
    assert!(
        texts[1].contains("`temperature` cannot be set"),
        "{}",
        texts[1]
    );

    // A team file without [team] gets the original's text.
    let bare = write(root, "bare.toml", "[leader]\nmodel = \"mock:x\"\n");
    let part = load_team(
        &workspace(root),
        "bare.toml",
        &bare,
        &EnvVars::default(),
        &mut SourceMap::default(),
        "",
    );
    assert!(
        part.errors.items.iter().any(|i| i.message
            == format!(
                "Invalid team config: missing 'team' section in {}",
                bare.display()
            )),
        "{:?}",
        part.errors
    );
}
