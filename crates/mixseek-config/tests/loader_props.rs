//! Property tests: loading never panics, whatever the files and the environment say.
//!
//! Every file kind is fuzzed at once: an orchestrator file that references a team file (whose
//! members may reference a member file), an evaluator, a judgment and a prompt-builder file,
//! each generated from the keys of its kind (real keys, typos, nested tables, arrays of
//! tables) with values of every TOML type, plus `MIXSEEK_*` environment overlays. Each case
//! runs the whole pipeline a command runs: load, preflight, template checks, `into_config`,
//! and serializing what loaded (what `config show` prints).

use mixseek_config::{EnvVars, Overrides, Workspace};
use proptest::prelude::*;
use std::collections::BTreeMap;

const ORCHESTRATOR_KEYS: &[&str] = &[
    "max_rounds",
    "min_rounds",
    "timeout_per_team_seconds",
    "max_concurrent_teams",
    "max_retries_per_team",
    "submission_timeout_seconds",
    "judgment_timeout_seconds",
    "domain_context",
    "language",
    "max_cost_usd",
    "max_total_tokens",
    "environment",
    "workspace_path",
    "max_roundz",
    "teams",
];

const TEAM_KEYS: &[&str] = &[
    "team_id",
    "team_name",
    "max_concurrent_members",
    "max_tool_rounds",
    "domain_context",
    "language",
    "leader",
    "members",
    "environment",
    "team_nme",
];

const LEADER_KEYS: &[&str] = &[
    "model",
    "system_instruction",
    "system_prompt",
    "temperature",
    "max_tokens",
    "timeout_seconds",
    "max_retries",
    "stop_sequences",
    "top_p",
    "seed",
    "fallback_models",
    "modle",
];

const MEMBER_KEYS: &[&str] = &[
    "config",
    "name",
    "agent_name",
    "type",
    "agent_type",
    "tool_name",
    "tool_description",
    "description",
    "model",
    "system_instruction",
    "temperature",
    "max_tokens",
    "timeout_seconds",
    "max_retries",
    "top_p",
    "seed",
    "tool_settings",
    "metadata",
    "command",
    "allow_private_network",
    "plugin",
    "fallback_models",
    "capabilities",
    "retry_config",
    "instructions",
    "tempreature",
];

const EVALUATOR_KEYS: &[&str] = &[
    "default_model",
    "temperature",
    "max_tokens",
    "max_retries",
    "timeout_seconds",
    "stop_sequences",
    "top_p",
    "seed",
    "custom_metrics",
    "on_metric_error",
    "max_concurrent_metrics",
    "environment",
    "defualt_model",
];

const METRIC_KEYS: &[&str] = &[
    "name",
    "weight",
    "type",
    "model",
    "system_instruction",
    "temperature",
    "max_tokens",
    "timeout_seconds",
    "command",
    "samples",
    "aggregate",
    "judges",
    "wieght",
];

const JUDGMENT_KEYS: &[&str] = &[
    "model",
    "temperature",
    "max_tokens",
    "max_retries",
    "timeout_seconds",
    "stop_sequences",
    "top_p",
    "seed",
    "system_instruction",
    "judge_on_final_round",
    "on_error",
    "fallback_models",
    "environment",
    "judge_on_last_round",
];

const PROMPT_BUILDER_KEYS: &[&str] = &[
    "team_user_prompt",
    "evaluator_user_prompt",
    "judgment_user_prompt",
    "timezone",
    "builtin_injections",
    "system_separator",
    "user_separator",
    "environment",
    "team_user_promt",
];

const INJECTION_KEYS: &[&str] = &[
    "name", "priority", "target", "phases", "when", "text", "enabled", "taget",
];

const TOP_LEVEL_KEYS: &[&str] = &[
    "providers",
    "pricing",
    "cache",
    "privacy",
    "hooks",
    "prompt_builder",
    "x",
];

/// Strings that mean something somewhere: model ids, paths, templates, enum values.
const STRINGS: &[&str] = &[
    "",
    "  ",
    "mock:x",
    "mock:judge-continue",
    "openai:gpt-4o",
    "opnai:gpt",
    "anthropic:claude",
    "no-colon",
    ":",
    "plain",
    "command",
    "custom",
    "web_fetch",
    "Coverage",
    "clarity_coherence",
    "Novelty",
    "median",
    "skip",
    "stop",
    "dev",
    "round_complete",
    "http://127.0.0.1:9/v1",
    "https://u:p@h/x?token=t",
    "team.toml",
    "member.toml",
    "missing.toml",
    "../outside.toml",
    "/definitely/not/here.toml",
    "{{ user_prompt }}",
    "{{ user_promt }}",
    "{% if %}",
    "{{ round_number + }}",
    "Asia/Tokyo",
    "asia/tokyo",
    "system",
    "team.user",
    "ja",
    "日本語",
];

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(STRINGS).prop_map(|s| format!("{s:?}")),
        prop_oneof![
            Just(0i64),
            Just(1),
            Just(2),
            Just(3),
            Just(10),
            Just(-1),
            Just(4000),
            Just(i64::MAX),
            Just(i64::MIN),
            any::<i64>(),
        ]
        .prop_map(|i| i.to_string()),
        prop_oneof![
            Just("0.5".to_string()),
            Just("0.3".to_string()),
            Just("1.5".to_string()),
            Just("-0.1".to_string()),
            Just("nan".to_string()),
            Just("inf".to_string()),
            Just("1e308".to_string()),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| format!("{f:?}")),
        ],
        any::<bool>().prop_map(|b| b.to_string()),
        "[a-z_./:{}% ]{0,12}".prop_map(|s| format!("{s:?}")),
    ]
}

fn value() -> impl Strategy<Value = String> {
    scalar().prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(", "))),
            prop::collection::btree_map(prop::sample::select(STRINGS), inner, 0..3).prop_map(|m| {
                let body: Vec<String> = m.iter().map(|(k, v)| format!("{:?} = {v}", k)).collect();
                format!("{{ {} }}", body.join(", "))
            }),
        ]
    })
}

/// `key = value` lines with distinct keys (duplicates would only test the TOML parser).
fn body(keys: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::btree_map(prop::sample::select(keys), value(), 0..6).prop_map(
        |m: BTreeMap<&str, String>| {
            m.iter()
                .map(|(k, v)| format!("{k} = {v}\n"))
                .collect::<String>()
        },
    )
}

/// Some `[[header]]` items, each with a body.
fn items(header: &'static str, keys: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec(body(keys), 0..3).prop_map(move |bodies| {
        bodies
            .iter()
            .map(|b| format!("\n[[{header}]]\n{b}"))
            .collect::<String>()
    })
}

fn orchestrator_doc() -> impl Strategy<Value = String> {
    (
        body(ORCHESTRATOR_KEYS),
        any::<bool>(),
        body(TOP_LEVEL_KEYS),
        body(PROMPT_BUILDER_KEYS),
        any::<bool>(),
    )
        .prop_map(|(orch, refs, top, pb, inline_pb)| {
            let mut s = String::new();
            s.push_str(&top);
            s.push_str("[orchestrator]\n");
            if refs && !orch.contains("teams =") {
                s.push_str(
                    "evaluator_config = \"evaluator.toml\"\njudgment_config = \"judgment.toml\"\n",
                );
                if !inline_pb {
                    s.push_str("prompt_builder_config = \"pb.toml\"\n");
                }
            }
            s.push_str(&orch);
            if !orch.contains("teams =") {
                s.push_str("\n[[orchestrator.teams]]\nconfig = \"team.toml\"\n");
            }
            if inline_pb && !top.contains("prompt_builder =") {
                s.push_str("\n[prompt_builder]\n");
                s.push_str(&pb);
            }
            s
        })
}

fn team_doc() -> impl Strategy<Value = String> {
    (
        body(TEAM_KEYS),
        body(LEADER_KEYS),
        items("team.members", MEMBER_KEYS),
        any::<bool>(),
    )
        .prop_map(|(team, leader, members, reference)| {
            let mut s = format!("[team]\n{team}");
            if !team.contains("leader =") {
                s.push_str(&format!("\n[team.leader]\n{leader}"));
            }
            if !team.contains("members =") {
                s.push_str(&members);
                if reference {
                    s.push_str("\n[[team.members]]\nconfig = \"member.toml\"\n");
                }
            }
            s
        })
}

fn member_doc() -> impl Strategy<Value = String> {
    body(MEMBER_KEYS).prop_map(|b| format!("[agent]\n{b}"))
}

fn evaluator_doc() -> impl Strategy<Value = String> {
    (
        body(EVALUATOR_KEYS),
        body(LEADER_KEYS),
        items("metrics", METRIC_KEYS),
    )
        .prop_map(|(top, llm_default, metrics)| {
            format!("{top}\n[llm_default]\n{llm_default}{metrics}")
        })
}

fn judgment_doc() -> impl Strategy<Value = String> {
    body(JUDGMENT_KEYS)
}

fn prompt_builder_doc() -> impl Strategy<Value = String> {
    (
        body(PROMPT_BUILDER_KEYS),
        items("prompt_builder.injections", INJECTION_KEYS),
    )
        .prop_map(|(b, inj)| format!("[prompt_builder]\n{b}{inj}"))
}

const ENV_NAMES: &[&str] = &[
    "MIXSEEK_MAX_ROUNDS",
    "MIXSEEK_MIN_ROUNDS",
    "MIXSEEK_MAX_ROUNDZ",
    "MIXSEEK_TIMEOUT_PER_TEAM_SECONDS",
    "MIXSEEK_TEAMS",
    "MIXSEEK_TEAM__TEAM_NAME",
    "MIXSEEK_TEAM__LEADER__MODEL",
    "MIXSEEK_TEAM__MEMBERS",
    "MIXSEEK_TEAM__MEMBERS__0__MODEL",
    "MIXSEEK_LEADER__MODEL",
    "MIXSEEK_LEADER__TEMPERATURE",
    "MIXSEEK_LEADER__MODLE",
    "MIXSEEK_EVALUATOR__DEFAULT_MODEL",
    "MIXSEEK_EVALUATOR__METRICS",
    "MIXSEEK_EVALUATOR__METRICS__0__WEIGHT",
    "MIXSEEK_EVALUATOR__TIMEOUT_SECONDS",
    "MIXSEEK_JUDGMENT__MODEL",
    "MIXSEEK_JUDGMENT__TIMEOUT_SECONDS",
    "MIXSEEK_JUDGMENT__ENVIRONMENT",
    "MIXSEEK_PROMPT_BUILDER__TEAM_USER_PROMPT",
    "MIXSEEK_PROMPT_BUILDER__INJECTIONS__0__NAME",
    "MIXSEEK_PROVIDERS__OLLAMA__BASE_URL",
    "MIXSEEK_PROVIDERS__MOCK__MAX_ATTEMPTS",
    "MIXSEEK_PROVIDERS",
    "MIXSEEK_CACHE__ENABLED",
    "MIXSEEK_CACHE",
    "MIXSEEK_PRIVACY__MASK_PII",
    "MIXSEEK_PRIVACY__EXTRA_PATTERNS__0__PATTERN",
    "MIXSEEK_HOOKS__0__URL",
    "MIXSEEK_HOOKS__5__ON",
    "MIXSEEK_HOOKS",
    "MIXSEEK_PRICING__X__INPUT_PER_MILLION",
    "MIXSEEK___",
    "MIXSEEK_A____B",
    "MIXSEEK_WORKSPACE",
    "MIXSEEK_UI__PORT",
];

fn env_vars() -> impl Strategy<Value = EnvVars> {
    prop::collection::btree_map(
        prop::sample::select(ENV_NAMES),
        prop_oneof![
            scalar(),
            value(),
            Just("{\"enabled\": true}".to_string()),
            Just("[{\"on\": \"round_complete\", \"url\": \"http://x\"}]".to_string()),
            "\\PC{0,20}",
        ],
        0..5,
    )
    .prop_map(|m| EnvVars::from_pairs(m.into_iter().map(|(k, v)| (k.to_string(), v))))
}

/// Writes the files and runs everything a command does with them.
fn run(files: &[(&str, &str)], env: &EnvVars) {
    let dir = tempfile::tempdir().expect("tmp");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    let ws = Workspace::at(dir.path());
    let path = dir.path().join("orch.toml");
    let report = mixseek_config::load(&path, &ws, env, &Overrides::default());
    let pf = mixseek_config::preflight::run(&report, |_| None);
    let _ = serde_json::to_string(&pf);
    if let Some(pb) = &report.prompt_builder.value {
        let _ = mixseek_prompt::check_settings(pb);
    }
    for e in report.errors().iter().chain(report.warnings().iter()) {
        let _ = e.to_string();
    }
    if let Some(f) = &report.orchestrator.value {
        let _ = serde_json::to_value(f);
    }
    if let Some(e) = &report.evaluator.value {
        let _ = serde_json::to_value(e);
    }
    let _ = report.into_config();
}

/// Edits a text at byte-safe positions: deletions, insertions of TOML punctuation, swaps.
fn mutate(text: &str, edits: &[(usize, u8, char)]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for (pos, op, c) in edits {
        if chars.is_empty() {
            chars.push(*c);
            continue;
        }
        let i = pos % chars.len();
        match op % 3 {
            0 => {
                chars.remove(i);
            }
            1 => chars.insert(i, *c),
            _ => chars[i] = *c,
        }
    }
    chars.into_iter().collect()
}

const QUICKSTART: &[(&str, &str)] = &[
    (
        "orch.toml",
        include_str!("../../../configs/quickstart/orchestrator.toml"),
    ),
    (
        "team_alpha.toml",
        include_str!("../../../configs/quickstart/team_alpha.toml"),
    ),
    (
        "evaluator.toml",
        include_str!("../../../configs/quickstart/evaluator.toml"),
    ),
    (
        "judgment.toml",
        include_str!("../../../configs/quickstart/judgment.toml"),
    ),
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn loading_every_file_kind_with_env_overlays_never_panics(
        orch in orchestrator_doc(),
        team in team_doc(),
        member in member_doc(),
        evaluator in evaluator_doc(),
        judgment in judgment_doc(),
        pb in prompt_builder_doc(),
        env in env_vars(),
    ) {
        run(
            &[
                ("orch.toml", &orch),
                ("team.toml", &team),
                ("member.toml", &member),
                ("evaluator.toml", &evaluator),
                ("judgment.toml", &judgment),
                ("pb.toml", &pb),
            ],
            &env,
        );
    }

    #[test]
    fn mutated_real_configs_never_panic(
        which in 0usize..4,
        edits in prop::collection::vec(
            (any::<usize>(), any::<u8>(), prop::sample::select(vec!['[', ']', '=', '"', '\n', '.', '{', ',', '#', 'x', '0', '\''])),
            1..6,
        ),
        env in env_vars(),
    ) {
        let mut files: Vec<(&str, String)> =
            QUICKSTART.iter().map(|(n, t)| (*n, t.to_string())).collect();
        files[which].1 = mutate(&files[which].1, &edits);
        let refs: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
        run(&refs, &env);
    }

    #[test]
    fn loading_arbitrary_text_never_panics(text in "\\PC{0,200}") {
        run(&[("orch.toml", &text), ("team.toml", &text)], &EnvVars::default());
    }
}

#[test]
fn a_team_file_referencing_itself_terminates() {
    run(
        &[(
            "orch.toml",
            "[orchestrator]\n[[orchestrator.teams]]\nconfig = \"orch.toml\"\n[[team.members]]\nconfig = \"orch.toml\"\n",
        )],
        &EnvVars::default(),
    );
}

#[test]
fn the_fuzzed_documents_are_mostly_valid_toml() {
    // Guards the generators: fuzzing only the TOML parser would prove little.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut parsed = 0;
    for _ in 0..100 {
        let doc = team_doc().new_tree(&mut runner).expect("tree").current();
        if doc.parse::<toml::Table>().is_ok() {
            parsed += 1;
        }
    }
    assert!(parsed >= 80, "only {parsed}/100 team documents parse");
}
