//! Property tests: loading never panics, whatever the files and the environment say.
//!
//! Every file kind is fuzzed at once: an orchestrator file that references a team file (whose
//! members may reference a member file), an evaluator, a judgment and a prompt-builder file,
//! each generated from the keys of its kind (real keys, typos, nested tables, arrays of
//! tables) with values of every TOML type, plus `MIXSEEK_*` environment overlays. Each case
//! runs the whole pipeline a command runs: load, preflight, template checks, `into_config`,
//! and serializing what loaded (what `config show` prints).
//!
//! Then each file kind on its own: arbitrary bytes (invalid UTF-8, NUL, a byte-order mark),
//! every documented key set to a value of the wrong type, a huge number or a deep nesting,
//! and paths that name a directory or nothing. Every error names its file (and the line when
//! the problem is at a key of the file).

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
    for e in report
        .errors()
        .iter()
        .chain(report.warnings().iter())
        .chain(report.env_warnings.iter())
    {
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

/// A complete configuration that loads without a problem: every file kind, each referenced
/// by a relative path.
const VALID: &[(&str, &str)] = &[
    (
        "orch.toml",
        "[orchestrator]\nevaluator_config = \"evaluator.toml\"\njudgment_config = \"judgment.toml\"\nprompt_builder_config = \"pb.toml\"\n[[orchestrator.teams]]\nconfig = \"team.toml\"\n[[orchestrator.teams]]\nconfig = \"wf.toml\"\n",
    ),
    (
        "wf.toml",
        "[workflow]\nworkflow_id = \"w\"\nworkflow_name = \"W\"\ndefault_model = \"mock:w\"\n[[workflow.steps]]\nid = \"s\"\n[[workflow.steps.executors]]\nname = \"p\"\ntype = \"plain\"\n[[workflow.steps.executors]]\nname = \"f\"\ntype = \"function\"\ntimeout_seconds = 5\n[workflow.steps.executors.plugin]\npath = \"steps.py\"\nfunction = \"run\"\n",
    ),
    (
        "team.toml",
        "[team]\nteam_id = \"a\"\nteam_name = \"A\"\n[team.leader]\nmodel = \"mock:l\"\n[[team.members]]\nconfig = \"member.toml\"\n",
    ),
    (
        "member.toml",
        "[agent]\nname = \"m\"\ntype = \"plain\"\nmodel = \"mock:m\"\n",
    ),
    (
        "evaluator.toml",
        include_str!("../../../configs/quickstart/evaluator.toml"),
    ),
    ("judgment.toml", "model = \"mock:judge-continue\"\n"),
    ("pb.toml", "[prompt_builder]\n"),
];

/// Loads the valid configuration with `name` replaced by `content` (bytes) and the workspace
/// at the temporary folder; returns the report and the folder.
fn load_replacing(name: &str, content: &[u8]) -> (mixseek_config::LoadReport, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tmp");
    for (n, text) in VALID {
        std::fs::write(dir.path().join(n), text).expect("write");
    }
    std::fs::write(dir.path().join(name), content).expect("write");
    let ws = Workspace::at(dir.path());
    let report = mixseek_config::load(
        &dir.path().join("orch.toml"),
        &ws,
        &EnvVars::default(),
        &Overrides::default(),
    );
    let _ = mixseek_config::preflight::run(&report, |_| None);
    (report, dir)
}

/// Every error names a file; a syntax or encoding error also its line.
fn assert_errors_name_their_file(report: &mixseek_config::LoadReport, what: &str) {
    for e in report.errors() {
        assert!(e.file.is_some(), "{what}: an error without its file: {e}");
        if e.message.starts_with("invalid TOML syntax") || e.message.contains("not UTF-8") {
            assert!(e.line.is_some(), "{what}: no line: {e}");
        }
    }
}

#[test]
fn the_valid_configuration_of_the_file_kind_tests_loads() {
    let (report, _dir) = load_replacing("pb.toml", b"[prompt_builder]\n");
    assert!(report.errors().is_empty(), "{:?}", report.errors());
    assert_eq!(report.teams.len(), 2);
    let loaded = report.into_config().expect("valid");
    let team = loaded.teams[0].as_team().expect("a team");
    assert_eq!(team.member_files.len(), 1);
    assert!(team.member_files[0].is_some());
    assert!(
        matches!(&loaded.teams[1], mixseek_config::LoadedUnit::Workflow(w) if w.settings.steps.len() == 1)
    );
}

const FILE_KINDS: &[&str] = &[
    "orch.toml",
    "team.toml",
    "wf.toml",
    "member.toml",
    "evaluator.toml",
    "judgment.toml",
    "pb.toml",
];

/// Bytes that stress the reader: NUL, invalid UTF-8, a byte-order mark, TOML punctuation.
fn bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        any::<u8>(),
        prop::sample::select(vec![
            0u8, 0xFF, 0xFE, 0xC0, 0x80, b'[', b']', b'=', b'"', b'\n', b'\r', b'#'
        ]),
    ];
    (
        prop::collection::vec(byte, 0..300),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(mut b, bom, valid_prefix)| {
            if valid_prefix {
                let mut v = b"[orchestrator]\n[team]\nx = 1\n".to_vec();
                v.append(&mut b);
                b = v;
            }
            if bom {
                let mut v = vec![0xEF, 0xBB, 0xBF];
                v.append(&mut b);
                b = v;
            }
            b
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_in_any_file_kind_are_errors_naming_the_file(
        which in prop::sample::select(FILE_KINDS),
        content in bytes(),
    ) {
        let (report, dir) = load_replacing(which, &content);
        assert_errors_name_their_file(&report, which);
        // Bytes that are not UTF-8 are reported at this file, with the line of the first one.
        if std::str::from_utf8(&content).is_err() {
            let path = dir.path().join(which);
            let found = report
                .errors()
                .into_iter()
                .find(|e| e.file.as_deref() == Some(path.as_path()) && e.message.contains("not UTF-8"));
            prop_assert!(found.is_some(), "{which}: {:?}", report.errors());
        }
        let _ = report.into_config();
    }
}

#[test]
fn a_byte_order_mark_and_a_bad_byte_are_handled_at_their_line() {
    let (report, _) = load_replacing("judgment.toml", b"\xEF\xBB\xBFmodel = \"mock:j\"\n");
    assert!(report.errors().is_empty(), "{:?}", report.errors());
    let (report, dir) = load_replacing("team.toml", b"[team]\nteam_id = \"a\xFF\"\n");
    let text: Vec<String> = report.errors().iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [format!(
            "{}:2:13: the team or workflow config file is not UTF-8 text (byte 0xFF) (save the file as UTF-8)",
            dir.path().join("team.toml").display()
        )]
    );
    let (report, _) = load_replacing("orch.toml", b"[orchestrator]\nmax_rounds = 3\x00\n");
    let errors = report.errors();
    assert!(
        errors.len() == 1
            && errors[0].line == Some(2)
            && errors[0].message.starts_with("invalid TOML syntax"),
        "{errors:?}"
    );
}

/// Which documented file kind a section of docs/configuration.md describes.
fn doc_sections() -> Vec<(&'static str, Vec<String>)> {
    let doc = include_str!("../../../docs/configuration.md");
    let mut out: Vec<(&'static str, Vec<String>)> = Vec::new();
    for line in doc.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            let file = match title {
                "Orchestrator file" => Some("orch.toml"),
                "Team file" => Some("team.toml"),
                "Member file" => Some("member.toml"),
                "Evaluator file" => Some("evaluator.toml"),
                "Judgment file" => Some("judgment.toml"),
                "Prompt-builder file" => Some("pb.toml"),
                _ => None,
            };
            if let Some(f) = file {
                out.push((f, Vec::new()));
            }
            continue;
        }
        if let (Some(rest), Some((_, keys))) = (line.strip_prefix("| `"), out.last_mut()) {
            if let Some((key, _)) = rest.split_once('`') {
                keys.push(key.to_string());
            }
        }
    }
    out
}

/// Sets `value` at a documented key path (`a.b[].c`, `providers.<name>.kind`) in `table`,
/// creating tables and a first array item on the way.
fn set_doc_key(table: &mut toml::Table, key: &str, value: toml::Value) {
    let segs: Vec<String> = key
        .replace("[]", ".[]")
        .split('.')
        .map(|s| {
            if s == "<name>" {
                "x".to_string()
            } else {
                s.to_string()
            }
        })
        .collect();
    fn set(cur: &mut toml::Value, segs: &[String], value: toml::Value) {
        let Some((first, rest)) = segs.split_first() else {
            *cur = value;
            return;
        };
        if first == "[]" {
            if !matches!(cur, toml::Value::Array(a) if !a.is_empty() && a[0].is_table()) {
                *cur = toml::Value::Array(vec![toml::Value::Table(toml::Table::new())]);
            }
            if let toml::Value::Array(a) = cur {
                set(&mut a[0], rest, value);
            }
            return;
        }
        if !cur.is_table() {
            *cur = toml::Value::Table(toml::Table::new());
        }
        if let toml::Value::Table(t) = cur {
            let entry = t
                .entry(first.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            set(entry, rest, value);
        }
    }
    let mut root = toml::Value::Table(std::mem::take(table));
    set(&mut root, &segs, value);
    if let toml::Value::Table(t) = root {
        *table = t;
    }
}

/// Values of the wrong type, at the edges of the numbers, and nested deeply.
fn odd_values() -> Vec<(&'static str, String)> {
    // Within the TOML parser's nesting limit (80), and far past it.
    let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
    let deep_table = |n: usize| format!("{}1{}", "{ a = ".repeat(n), " }".repeat(n));
    vec![
        ("string", "\"x\"".into()),
        ("blank", "\"  \"".into()),
        ("i64::MAX", i64::MAX.to_string()),
        ("i64::MIN", i64::MIN.to_string()),
        ("beyond i64", "99999999999999999999999".into()),
        ("1e308", "1e308".into()),
        ("-inf", "-inf".into()),
        ("nan", "nan".into()),
        ("bool", "true".into()),
        ("datetime", "1979-05-27T07:32:00Z".into()),
        ("empty array", "[]".into()),
        ("array", "[1, \"a\", true]".into()),
        ("empty table", "{}".into()),
        ("table", "{ x = 1 }".into()),
        ("deep array", deep(70)),
        ("deep table", deep_table(70)),
        ("deeper array", deep(5000)),
        ("deeper table", deep_table(5000)),
    ]
}

#[test]
fn every_documented_key_with_an_odd_value_is_an_error_naming_file_key_and_line() {
    let sections = doc_sections();
    assert_eq!(sections.len(), 6, "{sections:?}");
    let mut cases = 0;
    for (file, keys) in &sections {
        assert!(keys.len() >= 5, "{file}: {keys:?}");
        let base = VALID
            .iter()
            .find(|(n, _)| n == file)
            .map(|(_, t)| *t)
            .expect("file");
        for key in keys {
            for (what, literal) in odd_values() {
                // The value goes in as TOML text (a placeholder replaced), so literals the
                // TOML value type cannot hold (beyond i64, deep nesting) are tried too.
                let mut table: toml::Table = base.parse().expect("valid base");
                set_doc_key(&mut table, key, toml::Value::String("@@VALUE@@".into()));
                let text = toml::to_string(&table)
                    .expect("serialize")
                    .replace("\"@@VALUE@@\"", &literal);
                let (report, dir) = load_replacing(file, text.as_bytes());
                let path = dir.path().join(file);
                let generic = key.replace("[]", "[0]").replace("<name>", "x");
                for e in report.errors() {
                    assert!(e.file.is_some(), "{file} {key} = {what}: no file: {e}");
                    let at_key = e.file.as_deref() == Some(path.as_path())
                        && !e.key.is_empty()
                        && (generic.starts_with(&e.key) || e.key.starts_with(&generic));
                    if at_key || e.message.starts_with("invalid TOML syntax") {
                        assert!(e.line.is_some(), "{file} {key} = {what}: no line: {e}");
                    }
                }
                let _ = report.into_config();
                cases += 1;
            }
        }
    }
    assert!(cases > 1000, "{cases}");
}

#[test]
fn directories_and_missing_files_where_a_file_is_expected_are_errors_naming_them() {
    // A directory in place of each referenced file, and of the orchestrator file.
    for name in FILE_KINDS {
        let dir = tempfile::tempdir().expect("tmp");
        for (n, text) in VALID {
            if n != name {
                std::fs::write(dir.path().join(n), text).expect("write");
            }
        }
        std::fs::create_dir(dir.path().join(name)).expect("mkdir");
        let report = mixseek_config::load(
            &dir.path().join("orch.toml"),
            &Workspace::at(dir.path()),
            &EnvVars::default(),
            &Overrides::default(),
        );
        let errors = report.errors();
        let path = dir.path().join(name);
        assert!(
            errors
                .iter()
                .any(|e| e.file.as_deref() == Some(path.as_path())
                    && e.message.contains("is a directory")),
            "{name}: {errors:?}"
        );
        let _ = mixseek_config::preflight::run(&report, |_| None);
    }
    // The implicit WORKSPACE/configs/evaluator.toml as a directory is reported, not skipped.
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(
        dir.path().join("orch.toml"),
        "[orchestrator]\n[[orchestrator.teams]]\nconfig = \"team.toml\"\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("team.toml"),
        VALID[1]
            .1
            .replace("[[team.members]]\nconfig = \"member.toml\"\n", ""),
    )
    .expect("write");
    std::fs::create_dir_all(dir.path().join("configs/evaluator.toml")).expect("mkdir");
    let report = mixseek_config::load(
        &dir.path().join("orch.toml"),
        &Workspace::at(dir.path()),
        &EnvVars::default(),
        &Overrides::default(),
    );
    let text: Vec<String> = report.errors().iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [format!(
            "{}: is a directory, not a evaluator config file (name the TOML file itself)",
            dir.path().join("configs/evaluator.toml").display()
        )]
    );
    // An empty path resolves to the workspace folder itself.
    let (report, _) = load_replacing(
        "orch.toml",
        b"[orchestrator]\nevaluator_config = \"\"\n[[orchestrator.teams]]\nconfig = \"\"\n",
    );
    let errors = report.errors();
    assert!(errors.len() >= 2, "{errors:?}");
    for e in &errors {
        assert!(e.file.is_some(), "{e}");
    }
    // Missing files: the orchestrator file and a referenced one.
    let dir = tempfile::tempdir().expect("tmp");
    let report = mixseek_config::load(
        &dir.path().join("nope.toml"),
        &Workspace::at(dir.path()),
        &EnvVars::default(),
        &Overrides::default(),
    );
    let text: Vec<String> = report.errors().iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [format!(
            "{}: orchestrator config file not found",
            dir.path().join("nope.toml").display()
        )]
    );
    let (report, dir) = load_replacing(
        "orch.toml",
        b"[orchestrator]\njudgment_config = \"gone.toml\"\n[[orchestrator.teams]]\nconfig = \"team.toml\"\n",
    );
    let errors = report.errors();
    assert!(
        errors.len() == 1
            && errors[0].file.as_deref() == Some(dir.path().join("orch.toml").as_path())
            && errors[0].key == "orchestrator.judgment_config"
            && errors[0].line == Some(2)
            && errors[0].to_string().contains("gone.toml"),
        "{errors:?}"
    );
}

/// Load `files` (name, text) over the valid set and render the errors, paths relative to the
/// temporary directory.
fn errors_with(files: &[(&str, &str)]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tmp");
    for (n, text) in VALID {
        std::fs::write(dir.path().join(n), text).expect("write");
    }
    for (n, text) in files {
        std::fs::write(dir.path().join(n), text).expect("write");
    }
    let report = mixseek_config::load(
        &dir.path().join("orch.toml"),
        &Workspace::at(dir.path()),
        &EnvVars::default(),
        &Overrides::default(),
    );
    let prefix = format!("{}/", dir.path().display());
    report
        .errors()
        .iter()
        .map(|e| e.to_string().replace(&prefix, ""))
        .collect()
}

#[test]
fn an_unknown_policy_names_file_key_line_the_closest_and_every_value() {
    assert_eq!(
        errors_with(&[(
            "judgment.toml",
            "model = \"mock:judge-continue\"\non_error = \"contine\"\n"
        )]),
        [
            "judgment.toml:2:1: `on_error`: unknown value `contine` (did you mean `continue`? one of: stop, continue, fail)"
        ]
    );
    assert_eq!(
        errors_with(&[(
            "evaluator.toml",
            "on_metric_error = \"ignore\"\n[[metrics]]\nname = \"Coverage\"\n"
        )]),
        ["evaluator.toml:1:1: `on_metric_error`: unknown value `ignore` (one of: fail, skip)"]
    );
    // An unknown hook event is reported once (not again as a missing event).
    assert_eq!(
        errors_with(&[(
            "orch.toml",
            "[orchestrator]\nevaluator_config = \"evaluator.toml\"\njudgment_config = \"judgment.toml\"\nprompt_builder_config = \"pb.toml\"\nenvironment = \"production\"\n[[orchestrator.teams]]\nconfig = \"team.toml\"\n[[hooks]]\non = \"team_completed\"\ncommand = [\"true\"]\n"
        )]),
        [
            "orch.toml:5:1: `orchestrator.environment`: unknown value `production` (did you mean `prod`? one of: dev, staging, prod)",
            "orch.toml:9:1: `hooks[0].on`: unknown value `team_completed` (did you mean `team_complete`? one of: round_complete, team_complete, execution_complete)",
        ]
    );
    // A member type, inline and in a member file: once each, at the file that has it.
    assert_eq!(
        errors_with(&[(
            "member.toml",
            "[agent]\nname = \"m\"\ntype = \"plian\"\nmodel = \"mock:x\"\n"
        )]),
        [
            "member.toml:3:1: `agent.type`: unknown value `plian` (did you mean `plain`? one of: plain, web_search, web_fetch, code_execution, command, custom)"
        ]
    );
}
