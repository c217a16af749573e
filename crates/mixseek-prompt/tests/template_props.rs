//! Property tests: whatever a template or a context file says, building and rendering a
//! prompt gives a prompt or an error that names the template and its line (or the context
//! file), never a panic.

use mixseek_prompt::{
    CONTEXT_KEYS, FixedClock, PromptBuilder, PromptBuilderSettings, PromptContext, PromptError,
    TemplateKind, TemplateName, check_settings, parse_context,
};
use proptest::prelude::*;
use std::sync::Arc;

/// Pieces of template syntax, valid and broken, including names, filters, literals that
/// overflow and characters a template may not expect.
const TOKENS: &[&str] = &[
    "{{",
    "}}",
    "{%",
    "%}",
    "{#",
    "#}",
    "{%-",
    "-%}",
    "{{-",
    "-}}",
    " ",
    " ",
    "\n",
    "\r\n",
    "\r",
    "if ",
    "elif ",
    "else",
    "endif",
    "for ",
    " in ",
    "endfor",
    "set ",
    "endset",
    "macro ",
    "endmacro",
    "call ",
    "endcall",
    "filter ",
    "endfilter",
    "with ",
    "endwith",
    "raw",
    "endraw",
    "block ",
    "endblock",
    "extends ",
    "include ",
    "import ",
    "from ",
    "loop",
    "loop.index",
    "break",
    "continue",
    "user_prompt",
    "round_number",
    "team_id",
    "team_name",
    "submission",
    "submission_history",
    "ranking_table",
    "team_position_message",
    "current_datetime",
    "attachments",
    "a.text",
    "xml_attr",
    "undefined_name",
    "x",
    "=",
    "|",
    "upper",
    "default(",
    "d(",
    "length",
    "join(",
    "tojson",
    "safe",
    "int",
    "float",
    "round",
    "replace(",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    ".",
    "+",
    "-",
    "*",
    "**",
    "/",
    "//",
    "%",
    "~",
    "==",
    "!=",
    "<",
    ">",
    "and ",
    "or ",
    "not ",
    " is ",
    "defined",
    "undefined",
    "none",
    "true",
    "\"",
    "'",
    "'s'",
    "\"t\"",
    "0",
    "1",
    "-1",
    "99999999999999999999",
    "1e308",
    "-1e308",
    "range(",
    "10**10",
    "\"a\" * ",
    "self",
    "super()",
    "caller()",
    "varargs",
    "namespace()",
    "日本語",
    "\u{0}",
    "\u{feff}",
    "\\",
    "\\x",
    "\u{7f}",
];

fn template() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(prop::sample::select(TOKENS), 0..40).prop_map(|t| t.concat()),
        1 => "\\PC{0,80}",
        // Deep nesting: expressions, blocks and literals far past the parser's limits.
        1 => (1usize..2000, prop::sample::select(vec!["(", "[", "{% if x %}", "{{ (", "-"]))
            .prop_map(|(n, open)| format!("{{{{ {} }}}}", open.repeat(n))),
    ]
}

fn context() -> PromptContext {
    PromptContext {
        user_prompt: "task".into(),
        round_number: 2,
        team_id: "t1".into(),
        team_name: "Team".into(),
        execution_id: Some("e1".into()),
        submission: Some("answer".into()),
        ..Default::default()
    }
    .with_attachments(vec![mixseek_prompt::Attachment {
        name: "a\"<b>.md".into(),
        media_type: "text/markdown".into(),
        size_bytes: 7,
        sha256: "ab".into(),
        text: "</attachments>{{ x }}".into(),
        truncated: true,
    }])
}

/// Every template error names its template and a line.
fn check_error(e: &PromptError, expected: &[&str]) {
    let text = e.to_string();
    match e {
        PromptError::Syntax {
            template, location, ..
        }
        | PromptError::UndefinedVariable {
            template, location, ..
        }
        | PromptError::Render {
            template, location, ..
        } => {
            let name = template.to_string();
            assert!(
                text.contains(&name),
                "the error does not name its template: {text}"
            );
            if let TemplateName::Prompt(k) = template {
                assert!(expected.contains(&k.key()), "{text}");
            }
            assert!(location.line.is_some(), "no line in: {text}");
        }
        // Context and settings checks, positions in a ranking: the original's messages.
        _ => assert!(!text.is_empty()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_template_builds_and_renders_or_names_template_and_line(
        team in template(),
        evaluator in template(),
        judgment in template(),
    ) {
        let settings = PromptBuilderSettings {
            team_user_prompt: team,
            evaluator_user_prompt: evaluator,
            judgment_user_prompt: judgment,
            ..PromptBuilderSettings::default()
        };
        let keys = ["team_user_prompt", "evaluator_user_prompt", "judgment_user_prompt"];
        for e in check_settings(&settings) {
            check_error(&e, &keys);
        }
        match PromptBuilder::with_zone(&settings, chrono_tz::Tz::UTC) {
            Err(e) => check_error(&e, &keys),
            Ok(builder) => {
                let builder = builder.with_clock(Arc::new(FixedClock(
                    "2025-11-25T05:30:00Z".parse().expect("time"),
                )));
                for kind in TemplateKind::ALL {
                    if let Err(e) = builder.render(kind, &context()) {
                        check_error(&e, &[kind.key()]);
                    }
                    if let Err(e) = builder.render_with_injections(kind, &context()) {
                        check_error(&e, &[kind.key()]);
                    }
                }
            }
        }
    }

    #[test]
    fn any_injection_rule_template_names_its_rule(when in template(), text in template()) {
        let mut rule = toml::Table::new();
        rule.insert("name".into(), "r".into());
        rule.insert("when".into(), when.into());
        rule.insert("text".into(), text.into());
        let mut pb = toml::Table::new();
        pb.insert("injections".into(), toml::Value::Array(vec![toml::Value::Table(rule)]));
        let mut doc = toml::Table::new();
        doc.insert("prompt_builder".into(), toml::Value::Table(pb));
        let text = toml::to_string(&doc).expect("toml");
        // A rule the settings checks refuse (a blank `text`, …) is a settings error.
        let settings = match mixseek_prompt::settings_from_toml(&text, "pb.toml") {
            Ok(s) => s,
            Err(e) => {
                prop_assert!(matches!(e, PromptError::InvalidSettings { .. }), "{}", e);
                return Ok(());
            }
        };
        for e in check_settings(&settings) {
            check_error(&e, &[]);
        }
        if let Ok(builder) = PromptBuilder::with_zone(&settings, chrono_tz::Tz::UTC) {
            for kind in TemplateKind::ALL {
                if let Err(e) = builder.render_with_injections(kind, &context()) {
                    check_error(&e, &[kind.key()]);
                }
            }
        }
    }
}

/// JSON values of every shape, with the context's keys (and typos) at the top.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|i| serde_json::json!(i)),
        any::<u64>().prop_map(|i| serde_json::json!(i)),
        prop_oneof![Just(0i64), Just(1), Just(-1), Just(4_294_967_296)]
            .prop_map(|i| serde_json::json!(i)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| serde_json::json!(f)),
        Just(serde_json::json!(1e308)),
        "\\PC{0,12}".prop_map(serde_json::Value::String),
        Just(serde_json::json!("")),
        Just(serde_json::json!("   ")),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "round_number",
                    "submission_content",
                    "evaluation_score",
                    "score_details",
                    "team_id",
                    "team_name",
                    "max_score",
                    "total_rounds",
                    "x",
                ]),
                inner,
                0..5,
            )
            .prop_map(|m| serde_json::Value::Object(
                m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
}

fn context_json() -> impl Strategy<Value = String> {
    let keys: Vec<&'static str> = CONTEXT_KEYS
        .iter()
        .copied()
        .chain(["user_promt", "rankings"])
        .collect();
    prop_oneof![
        4 => prop::collection::btree_map(prop::sample::select(keys), json_value(), 0..10)
            .prop_map(|m| serde_json::Value::Object(
                m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            ).to_string()),
        1 => json_value().prop_map(|v| v.to_string()),
        1 => "\\PC{0,60}",
        1 => (1usize..5000).prop_map(|n| format!("{{\"score_details\": {}", "[".repeat(n))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_context_file_renders_or_names_the_file(json in context_json()) {
        let builder = PromptBuilder::with_zone(&PromptBuilderSettings::default(), chrono_tz::Tz::UTC)
            .expect("default templates")
            .with_clock(Arc::new(FixedClock("2025-11-25T05:30:00Z".parse().expect("time"))));
        for kind in TemplateKind::ALL {
            match parse_context(&json, kind, "ctx.json") {
                Err(e) => {
                    let text = e.to_string();
                    prop_assert!(text.starts_with("ctx.json: "), "{}", text);
                    if text.starts_with("ctx.json: invalid JSON") {
                        prop_assert!(text.contains(" line "), "{}", text);
                    }
                }
                Ok(ctx) => {
                    if let Err(e) = builder.render(kind, &ctx) {
                        check_error(&e, &[kind.key()]);
                    }
                    if let Err(e) = builder.render_with_injections(kind, &ctx) {
                        check_error(&e, &[kind.key()]);
                    }
                }
            }
        }
    }
}
