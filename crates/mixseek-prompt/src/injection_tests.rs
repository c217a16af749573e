//! Injection rules end to end: ordering, conditions, failing rules, separators, built-ins and
//! the domain context in all four phases.

use crate::*;
use chrono::{TimeZone, Utc};
use chrono_tz::Tz;
use mixseek_config::{InjectionRuleSettings, InjectionTarget};
use std::sync::Arc;

fn builder_with(settings: &PromptBuilderSettings) -> PromptBuilder {
    let now = Utc
        .with_ymd_and_hms(2025, 11, 25, 5, 30, 0)
        .single()
        .expect("valid");
    PromptBuilder::with_zone(settings, Tz::UTC)
        .expect("builder")
        .with_clock(Arc::new(FixedClock(now)))
}

fn ctx() -> PromptContext {
    PromptContext {
        user_prompt: "What is Swift?".into(),
        round_number: 2,
        team_id: "team1".into(),
        team_name: "Alpha".into(),
        execution_id: Some("exec-1".into()),
        submission: Some("Swift is a language.".into()),
        ..Default::default()
    }
}

fn rule(name: &str, priority: i64, target: InjectionTarget, text: &str) -> InjectionRuleSettings {
    InjectionRuleSettings {
        name: name.into(),
        priority: Some(priority),
        target: Some(target),
        text: Some(text.into()),
        ..Default::default()
    }
}

fn with_rules(rules: Vec<InjectionRuleSettings>) -> PromptBuilderSettings {
    PromptBuilderSettings {
        injections: rules,
        ..Default::default()
    }
}

/// Collects the `warn!` events emitted on this thread while `f` runs (message + fields, as text).
///
/// The subscriber is the process-wide default, installed once, and routes each event to a
/// per-thread buffer. A scoped subscriber (`with_default`) is not reliable here: while it is
/// the only dispatcher, `tracing` computes a callsite's cached interest from the default of
/// whichever thread reaches the callsite first, so a parallel test could leave it disabled.
fn capture_warnings<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    use std::cell::RefCell;
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Level, Metadata, Subscriber};

    thread_local! {
        static SINK: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
    }
    struct Collect;
    struct Fields(String);
    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.push_str(&format!("{}={:?} ", field.name(), value));
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.push_str(&format!("{}={} ", field.name(), value));
        }
    }
    impl Subscriber for Collect {
        fn enabled(&self, m: &Metadata<'_>) -> bool {
            *m.level() <= Level::WARN
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, e: &Event<'_>) {
            let mut v = Fields(String::new());
            e.record(&mut v);
            SINK.with(|s| {
                if let Some(out) = s.borrow_mut().as_mut() {
                    out.push(v.0);
                }
            });
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        // Fails only if another global default exists, which this test binary never sets.
        let _ = tracing::subscriber::set_global_default(Collect);
    });
    SINK.with(|s| *s.borrow_mut() = Some(Vec::new()));
    let r = f();
    let out = SINK.with(|s| s.borrow_mut().take()).unwrap_or_default();
    (r, out)
}

#[test]
fn no_input_no_rules_leaves_prompts_unchanged() {
    let b = builder_with(&PromptBuilderSettings::default());
    for phase in InjectionPhase::ALL {
        for side in [InjectionSide::System, InjectionSide::User] {
            let out = b.inject(phase, side, "base\n", &ctx()).expect("inject");
            assert_eq!(
                out,
                Injected {
                    prompt: "base\n".into(),
                    applied: vec![],
                    volatile: vec![],
                },
                "{phase:?} {side:?}"
            );
        }
    }
}

#[test]
fn builtins_run_in_priority_order_with_the_system_separator() {
    let b = builder_with(&PromptBuilderSettings::default());
    let c = PromptContext {
        language: Some("ja".into()),
        domain_context: Some("Software development, AI".into()),
        system_prompt_suffix: Some("  Be concise.\n".into()),
        prompt_suffix: Some("Answer in one page.".into()),
        ..ctx()
    };
    let out = b
        .inject_system(InjectionPhase::Team, "You lead a team.\n", &c)
        .expect("inject");
    assert_eq!(
        out.applied,
        [
            "language_preference",
            "domain_context",
            "system_prompt_suffix"
        ]
    );
    insta::assert_snapshot!("team_system_all_builtins", out.prompt);
    assert_eq!(
        out.prompt,
        "You lead a team.\n\n---\n\nAlways respond in Japanese, whatever the language of the input.\n\n---\n\n## Domain Context\nSoftware development, AI\nInterpret the task from this domain's perspective.\n\n---\n\nBe concise."
    );
    let user = b
        .inject_user(InjectionPhase::Team, "task", &c)
        .expect("inject");
    assert_eq!(
        user,
        Injected {
            prompt: "task\n\nAnswer in one page.".into(),
            applied: vec!["prompt_suffix".into()],
            volatile: vec![],
        }
    );
}

#[test]
fn domain_context_reaches_every_phase() {
    let b = builder_with(&PromptBuilderSettings::default());
    let c = PromptContext {
        domain_context: Some("Software development".into()),
        ..ctx()
    };
    let expected = [
        (
            InjectionPhase::Team,
            "Interpret the task from this domain's perspective.",
        ),
        (
            InjectionPhase::Member,
            "Interpret your assignment from this domain's perspective.",
        ),
        (
            InjectionPhase::Evaluator,
            "Evaluate the submission from this domain's perspective.",
        ),
        (
            InjectionPhase::Judgment,
            "Judge whether another round is worthwhile from this domain's perspective.",
        ),
    ];
    for (phase, how) in expected {
        let out = b.inject_system(phase, "instruction", &c).expect("inject");
        assert_eq!(out.applied, ["domain_context"], "{phase:?}");
        assert_eq!(
            out.prompt,
            format!("instruction\n\n---\n\n## Domain Context\nSoftware development\n{how}")
        );
    }
    // and it is a variable of every template
    let settings = PromptBuilderSettings {
        team_user_prompt: "T:{{ domain_context }}".into(),
        evaluator_user_prompt: "E:{{ domain_context }}".into(),
        judgment_user_prompt: "J:{{ domain_context }}".into(),
        ..Default::default()
    };
    let b = builder_with(&settings);
    assert_eq!(b.render_team(&c).expect("t"), "T:Software development");
    assert_eq!(b.render_evaluator(&c).expect("e"), "E:Software development");
    assert_eq!(b.render_judgment(&c).expect("j"), "J:Software development");
    // a template that shows it itself does not get it twice; members still do
    let out = b
        .inject_system(InjectionPhase::Team, "instruction", &c)
        .expect("inject");
    assert!(out.applied.is_empty());
    let out = b
        .inject_system(InjectionPhase::Member, "instruction", &c)
        .expect("inject");
    assert_eq!(out.applied, ["domain_context"]);
}

#[test]
fn user_rules_interleave_by_priority_and_ties_keep_declaration_order() {
    let settings = with_rules(vec![
        rule("low", 5, InjectionTarget::System, "LOW"),
        rule("tie_a", 90, InjectionTarget::System, "TIE A"),
        rule("top", 200, InjectionTarget::System, "TOP"),
        rule("tie_b", 90, InjectionTarget::System, "TIE B"),
        rule("user_side", 100, InjectionTarget::User, "USER"),
    ]);
    let b = builder_with(&settings);
    let c = PromptContext {
        domain_context: Some("D".into()),
        ..ctx()
    };
    let out = b
        .inject_system(InjectionPhase::Judgment, "", &c)
        .expect("inject");
    assert_eq!(
        out.applied,
        ["top", "domain_context", "tie_a", "tie_b", "low"]
    );
    // a blank base prompt gets no leading separator
    assert!(
        out.prompt
            .starts_with("TOP\n\n---\n\n## Domain Context\nD\n"),
        "{}",
        out.prompt
    );
    assert!(
        out.prompt
            .ends_with("\n\n---\n\nTIE A\n\n---\n\nTIE B\n\n---\n\nLOW")
    );
}

#[test]
fn conditions_targets_and_phases() {
    let settings = with_rules(vec![
        InjectionRuleSettings {
            when: Some("round_number > 1".into()),
            ..rule("later_rounds", 50, InjectionTarget::System, "improve")
        },
        InjectionRuleSettings {
            when: Some("round_number > 5".into()),
            ..rule("much_later", 50, InjectionTarget::System, "never")
        },
        rule("judge_only", 50, InjectionTarget::JudgmentUser, "be strict"),
        InjectionRuleSettings {
            phases: Some(vec![InjectionPhase::Team, InjectionPhase::Member]),
            ..rule(
                "agents",
                50,
                InjectionTarget::System,
                "agent {{ phase }}/{{ side }} {{ team_name }}",
            )
        },
        InjectionRuleSettings {
            when: Some("'Swift' in submission".into()),
            ..rule(
                "swift_eval",
                50,
                InjectionTarget::EvaluatorSystem,
                "Check Swift facts.",
            )
        },
    ]);
    let b = builder_with(&settings);
    let c = ctx();
    let sys = |phase| b.inject_system(phase, "S", &c).expect("inject").applied;
    assert_eq!(sys(InjectionPhase::Team), ["later_rounds", "agents"]);
    assert_eq!(sys(InjectionPhase::Member), ["later_rounds", "agents"]);
    // `round_number` is not an evaluator variable: that rule fails there and is skipped
    assert_eq!(sys(InjectionPhase::Evaluator), ["swift_eval"]);
    assert_eq!(sys(InjectionPhase::Judgment), ["later_rounds"]);
    let out = b
        .inject_system(InjectionPhase::Member, "S", &c)
        .expect("inject");
    assert_eq!(
        out.prompt,
        "S\n\n---\n\nimprove\n\n---\n\nagent member/system Alpha"
    );
    let user = b
        .inject_user(InjectionPhase::Judgment, "J", &c)
        .expect("inject");
    assert_eq!(user.prompt, "J\n\nbe strict");
    let round1 = PromptContext {
        round_number: 1,
        ..ctx()
    };
    assert_eq!(
        b.inject_system(InjectionPhase::Team, "S", &round1)
            .expect("inject")
            .applied,
        ["agents"]
    );
}

#[test]
fn failing_rules_are_skipped_with_a_warning_naming_them() {
    let settings = with_rules(vec![
        InjectionRuleSettings {
            when: Some("nope > 1".into()),
            ..rule("bad_when", 70, InjectionTarget::System, "x")
        },
        rule(
            "bad_text",
            60,
            InjectionTarget::System,
            "{{ round_number + 'a' }}",
        ),
        rule(
            "empty_text",
            55,
            InjectionTarget::System,
            "{% if false %}never{% endif %}  \n",
        ),
        rule("good", 50, InjectionTarget::System, "  GOOD  \n"),
    ]);
    let b = builder_with(&settings);
    let (out, warnings) = capture_warnings(|| {
        b.inject_system(InjectionPhase::Team, "S", &ctx())
            .expect("inject")
    });
    assert_eq!(
        (out.prompt.as_str(), out.applied.as_slice()),
        ("S\n\n---\n\nGOOD", ["good".to_string()].as_slice())
    );
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(
        warnings[0].contains("rule=bad_when") && warnings[0].contains("condition failed"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[0]
            .contains("injection rule `bad_when` (when) (line 1, column 1): undefined value"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[1].contains("rule=bad_text") && warnings[1].contains("text failed"),
        "{}",
        warnings[1]
    );
    assert!(warnings[1].contains("invalid operation"), "{}", warnings[1]);
}

#[test]
fn rule_syntax_errors_fail_the_build_with_a_position_in_the_expression() {
    let settings = with_rules(vec![InjectionRuleSettings {
        when: Some("round_number >".into()),
        ..rule("broken", 50, InjectionTarget::System, "x")
    }]);
    let err = PromptBuilder::with_zone(&settings, Tz::UTC).expect_err("syntax");
    assert!(
        matches!(&err, PromptError::Syntax { template: TemplateName::RuleWhen(n), .. } if n == "broken"),
        "{err}"
    );
    assert!(err.to_string().starts_with("Jinja2 template error: injection rule `broken` (when) (line 1, column 15): syntax error"), "{err}");
    let settings = with_rules(vec![rule("broken_text", 50, InjectionTarget::User, "{{ x")]);
    let err = PromptBuilder::with_zone(&settings, Tz::UTC).expect_err("syntax");
    assert!(
        err.to_string()
            .starts_with("Jinja2 template error: injection rule `broken_text` (text) (line 1"),
        "{err}"
    );
    let settings = with_rules(vec![InjectionRuleSettings {
        name: "no_target".into(),
        ..Default::default()
    }]);
    assert!(matches!(
        PromptBuilder::with_zone(&settings, Tz::UTC),
        Err(PromptError::InvalidSettings { .. })
    ));
}

#[test]
fn custom_separators() {
    let settings = PromptBuilderSettings {
        system_separator: "\n###\n".into(),
        user_separator: " | ".into(),
        injections: vec![
            rule("one", 50, InjectionTarget::System, "ONE"),
            rule("two", 40, InjectionTarget::User, "TWO"),
        ],
        ..Default::default()
    };
    let b = builder_with(&settings);
    let c = PromptContext {
        system_prompt_suffix: Some("SUFFIX".into()),
        prompt_suffix: Some("PS".into()),
        ..ctx()
    };
    assert_eq!(
        b.inject_system(InjectionPhase::Evaluator, "base", &c)
            .expect("i")
            .prompt,
        "base\n###\nONE\n###\nSUFFIX"
    );
    assert_eq!(
        b.inject_user(InjectionPhase::Evaluator, "base", &c)
            .expect("i")
            .prompt,
        "base | TWO | PS"
    );
}

#[test]
fn builtins_can_be_disabled_restricted_and_reworded() {
    let c = PromptContext {
        language: Some("en".into()),
        domain_context: Some("Medicine".into()),
        system_prompt_suffix: Some("SUFFIX".into()),
        ..ctx()
    };
    let settings = with_rules(vec![
        InjectionRuleSettings {
            name: "language_preference".into(),
            enabled: false,
            ..Default::default()
        },
        InjectionRuleSettings {
            name: "domain_context".into(),
            text: Some("Domain: {{ domain_context }} ({{ phase }})".into()),
            priority: Some(1),
            ..Default::default()
        },
        InjectionRuleSettings {
            name: "system_prompt_suffix".into(),
            phases: Some(vec![InjectionPhase::Team, InjectionPhase::Member]),
            ..Default::default()
        },
    ]);
    let b = builder_with(&settings);
    let team = b
        .inject_system(InjectionPhase::Team, "S", &c)
        .expect("inject");
    assert_eq!(team.applied, ["system_prompt_suffix", "domain_context"]);
    assert_eq!(
        team.prompt,
        "S\n\n---\n\nSUFFIX\n\n---\n\nDomain: Medicine (team)"
    );
    let eval = b
        .inject_system(InjectionPhase::Evaluator, "S", &c)
        .expect("inject");
    assert_eq!(eval.applied, ["domain_context"]);
    // a reworded built-in still needs its input
    let none = b
        .inject_system(InjectionPhase::Evaluator, "S", &ctx())
        .expect("inject");
    assert!(none.applied.is_empty());
    // all built-ins off
    let off = builder_with(&PromptBuilderSettings {
        builtin_injections: false,
        ..Default::default()
    });
    assert!(
        off.inject_system(InjectionPhase::Team, "S", &c)
            .expect("inject")
            .applied
            .is_empty()
    );
}

#[test]
fn language_preference_wording() {
    let b = builder_with(&PromptBuilderSettings::default());
    let text = |lang: &str| {
        let c = PromptContext {
            language: Some(lang.into()),
            ..ctx()
        };
        b.inject_system(InjectionPhase::Judgment, "", &c)
            .expect("inject")
            .prompt
    };
    assert_eq!(
        text("ja"),
        "Always respond in Japanese, whatever the language of the input."
    );
    assert_eq!(
        text("Esperanto"),
        "Always respond in Esperanto, whatever the language of the input."
    );
    assert_eq!(text("auto"), "");
}

#[test]
fn render_with_injections_uses_one_timestamp_and_the_user_rules() {
    let settings = with_rules(vec![rule(
        "stamp",
        50,
        InjectionTarget::TeamUser,
        "(at {{ current_datetime }})",
    )]);
    let b = builder_with(&settings);
    let c = PromptContext {
        prompt_suffix: Some("Cite sources.".into()),
        ..ctx()
    };
    let out = b
        .render_with_injections(TemplateKind::Team, &c)
        .expect("render");
    assert_eq!(out.applied, ["stamp", "prompt_suffix"]);
    let plain = b.render_team(&c).expect("render");
    assert_eq!(
        out.prompt,
        format!("{plain}\n\n(at 2025-11-25T05:30:00+00:00)\n\nCite sources.")
    );
}

#[test]
fn injecting_needs_a_valid_context_for_the_phase() {
    let b = builder_with(&PromptBuilderSettings::default());
    let c = PromptContext {
        submission: None,
        ..ctx()
    };
    let err = b
        .inject_system(InjectionPhase::Evaluator, "S", &c)
        .expect_err("no submission");
    assert_eq!(err.to_string(), "submission cannot be empty");
    let c = PromptContext {
        team_id: String::new(),
        ..ctx()
    };
    assert_eq!(
        b.inject_system(InjectionPhase::Member, "S", &c)
            .expect_err("no team")
            .to_string(),
        "team_id cannot be empty"
    );
}

#[test]
fn the_rendered_datetime_is_reported_as_volatile_for_the_llm_cache() {
    let b = builder_with(&PromptBuilderSettings::default());
    let out = b
        .render_with_injections(crate::TemplateKind::Team, &ctx())
        .expect("render");
    assert_eq!(out.volatile.len(), 1, "{:?}", out.volatile);
    let when = &out.volatile[0];
    assert!(
        out.prompt.contains(when.as_str()),
        "the prompt carries the datetime {when}"
    );
    // The datetime is the only thing that differs between two renders at different times.
    let later = b
        .clone()
        .with_clock(std::sync::Arc::new(crate::FixedClock(
            chrono::DateTime::parse_from_rfc3339("2031-01-02T03:04:05Z")
                .expect("instant")
                .with_timezone(&chrono::Utc),
        )))
        .render_with_injections(crate::TemplateKind::Team, &ctx())
        .expect("render");
    assert_ne!(out.prompt, later.prompt);
    assert_eq!(
        out.prompt.replace(when.as_str(), "*"),
        later.prompt.replace(later.volatile[0].as_str(), "*")
    );
}
