//! Property tests: loading never panics, whatever the TOML says.

use mixseek_config::{EnvVars, Overrides, Workspace};
use proptest::prelude::*;

const KEYS: &[&str] = &[
    "orchestrator",
    "teams",
    "config",
    "max_rounds",
    "min_rounds",
    "timeout_per_team_seconds",
    "max_concurrent_teams",
    "evaluator_config",
    "providers",
    "pricing",
    "cache",
    "privacy",
    "hooks",
    "prompt_builder",
    "team_user_prompt",
    "x",
    "max_roundz",
    "base_url",
    "kind",
    "enabled",
    "mask_pii",
    "on",
    "command",
    "url",
];

fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:?}")),
        any::<bool>().prop_map(|b| b.to_string()),
        "[a-z./:{}% ]{0,12}".prop_map(|s| format!("{s:?}")),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop::collection::vec(inner, 0..4).prop_map(|v| format!("[{}]", v.join(", ")))
    })
}

fn toml_doc() -> impl Strategy<Value = String> {
    let line = (prop::sample::select(KEYS), value()).prop_map(|(k, v)| format!("{k} = {v}"));
    let header = prop::collection::vec(prop::sample::select(KEYS), 1..3)
        .prop_map(|ks| format!("[{}]", ks.join(".")));
    let aot = prop::collection::vec(prop::sample::select(KEYS), 1..3)
        .prop_map(|ks| format!("[[{}]]", ks.join(".")));
    prop::collection::vec(prop_oneof![3 => line, 1 => header, 1 => aot], 0..16)
        .prop_map(|l| l.join("\n"))
}

fn load_str(text: &str) {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("orch.toml");
    std::fs::write(&path, text).expect("write");
    std::fs::write(dir.path().join("t.toml"), text).expect("write");
    let ws = Workspace::at(dir.path());
    let report = mixseek_config::load(&path, &ws, &EnvVars::default(), &Overrides::default());
    let _ = mixseek_config::preflight::run(&report, |_| None);
    let _ = report.into_config();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn loading_structured_garbage_never_panics(doc in toml_doc()) {
        load_str(&doc);
    }

    #[test]
    fn loading_arbitrary_text_never_panics(text in "\\PC{0,200}") {
        load_str(&text);
    }
}

#[test]
fn a_team_file_referencing_itself_terminates() {
    load_str(
        "[orchestrator]\n[[orchestrator.teams]]\nconfig = \"t.toml\"\n[[team.members]]\nconfig = \"t.toml\"\n",
    );
}
