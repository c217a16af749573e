//! Prompt-injection rules (seed 000): blocks of text added to the system or user prompt of a
//! phase, ordered by priority, each under an optional condition. Built-in rules carry the
//! answer language, the domain context (seed 002), and the system / user prompt suffixes into
//! every phase; `[[prompt_builder.injections]]` adds rules or overrides built-ins key by key.

use crate::context::{PromptContext, py_trim};
use mixseek_config::{
    InjectionPhase, InjectionRuleSettings, InjectionSide, PromptBuilderSettings, is_blank,
};

/// A prompt with the injection rules applied.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Injected {
    /// The base prompt, then the separator and each block (unchanged when no rule applied).
    pub prompt: String,
    /// Names of the rules that added a block, in the order their blocks appear.
    pub applied: Vec<String>,
    /// Parts of `prompt` that change from one run to the next without changing what is asked:
    /// the rendered `current_datetime`. The LLM cache leaves them out of its key
    /// (`ChatRequest::cache_volatile`), so a rerun with the cache on can hit.
    pub volatile: Vec<String>,
}

/// The suffixes set in `[prompt_builder]` (`system_prompt_suffix`, `prompt_suffix`): the
/// inputs of the two suffix rules when the context sets none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Suffixes {
    pub(crate) system: Option<String>,
    pub(crate) user: Option<String>,
}

/// The built-in rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin {
    LanguagePreference,
    DomainContext,
    SystemPromptSuffix,
    PromptSuffix,
}

impl Builtin {
    const ALL: [Builtin; 4] = [
        Builtin::LanguagePreference,
        Builtin::DomainContext,
        Builtin::SystemPromptSuffix,
        Builtin::PromptSuffix,
    ];

    fn name(self) -> &'static str {
        match self {
            Builtin::LanguagePreference => "language_preference",
            Builtin::DomainContext => "domain_context",
            Builtin::SystemPromptSuffix => "system_prompt_suffix",
            Builtin::PromptSuffix => "prompt_suffix",
        }
    }

    fn priority(self) -> i64 {
        match self {
            Builtin::LanguagePreference => 100,
            Builtin::DomainContext => 90,
            Builtin::SystemPromptSuffix => 40,
            Builtin::PromptSuffix => 10,
        }
    }

    fn side(self) -> InjectionSide {
        match self {
            Builtin::PromptSuffix => InjectionSide::User,
            _ => InjectionSide::System,
        }
    }

    /// The rule's input, when set (non-blank; `language = "auto"` counts as unset).
    #[cfg(test)]
    pub(crate) fn input(self, ctx: &PromptContext) -> Option<&str> {
        static NONE: Suffixes = Suffixes {
            system: None,
            user: None,
        };
        self.input_or(ctx, &NONE)
    }

    /// The rule's input from the context, else (suffix rules) from the configured
    /// `[prompt_builder]` suffixes.
    pub(crate) fn input_or<'a>(
        self,
        ctx: &'a PromptContext,
        configured: &'a Suffixes,
    ) -> Option<&'a str> {
        let nonblank = |v: Option<&'a str>| v.map(py_trim).filter(|v| !v.is_empty());
        let value = match self {
            Builtin::LanguagePreference => nonblank(ctx.language.as_deref()),
            Builtin::DomainContext => nonblank(ctx.domain_context.as_deref()),
            Builtin::SystemPromptSuffix => nonblank(ctx.system_prompt_suffix.as_deref())
                .or_else(|| nonblank(configured.system.as_deref())),
            Builtin::PromptSuffix => nonblank(ctx.prompt_suffix.as_deref())
                .or_else(|| nonblank(configured.user.as_deref())),
        }?;
        if self == Builtin::LanguagePreference && value.eq_ignore_ascii_case("auto") {
            None
        } else {
            Some(value)
        }
    }

    /// The built-in text for `phase`, from the (trimmed) input.
    pub(crate) fn text(self, phase: InjectionPhase, input: &str) -> String {
        match self {
            Builtin::LanguagePreference => {
                format!(
                    "Always respond in {}, whatever the language of the input.",
                    language_name(input)
                )
            }
            Builtin::DomainContext => {
                let how = match phase {
                    InjectionPhase::Team => "Interpret the task from this domain's perspective.",
                    InjectionPhase::Member => {
                        "Interpret your assignment from this domain's perspective."
                    }
                    InjectionPhase::Evaluator => {
                        "Evaluate the submission from this domain's perspective."
                    }
                    InjectionPhase::Judgment => {
                        "Judge whether another round is worthwhile from this domain's perspective."
                    }
                };
                format!("## Domain Context\n{input}\n{how}")
            }
            Builtin::SystemPromptSuffix | Builtin::PromptSuffix => input.to_string(),
        }
    }
}

/// English name of a language code (`ja` → `Japanese`); other values are used as given
/// (`language = "Japanese"` works too).
pub(crate) fn language_name(code: &str) -> String {
    let norm = code.trim().to_ascii_lowercase().replace('_', "-");
    let name = match norm.as_str() {
        "ja" | "jp" | "ja-jp" => "Japanese",
        "en" | "en-us" | "en-gb" => "English",
        "zh" | "zh-cn" | "zh-hans" => "Simplified Chinese",
        "zh-tw" | "zh-hant" => "Traditional Chinese",
        "ko" => "Korean",
        "fr" => "French",
        "de" => "German",
        "es" => "Spanish",
        "it" => "Italian",
        "pt" | "pt-br" => "Portuguese",
        "ru" => "Russian",
        "ar" => "Arabic",
        "hi" => "Hindi",
        "nl" => "Dutch",
        "sv" => "Swedish",
        "pl" => "Polish",
        "tr" => "Turkish",
        "vi" => "Vietnamese",
        "th" => "Thai",
        "id" => "Indonesian",
        "uk" => "Ukrainian",
        _ => return code.trim().to_string(),
    };
    name.to_string()
}

/// How a rule's text is produced.
#[derive(Debug, Clone)]
pub(crate) enum RuleText {
    Builtin,
    /// Name of the text template in the builder's environment.
    Template(String),
}

/// A rule ready to run.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub(crate) name: String,
    pub(crate) priority: i64,
    pub(crate) side: InjectionSide,
    pub(crate) phases: Vec<InjectionPhase>,
    pub(crate) builtin: Option<Builtin>,
    /// Name of the condition template (`{% if (EXPR) %}1{% endif %}`) in the environment.
    pub(crate) when: Option<String>,
    /// The raw `when` expression (for error positions).
    pub(crate) when_expr: Option<String>,
    pub(crate) text: RuleText,
    /// The raw text template source.
    pub(crate) text_source: Option<String>,
}

/// Prefix of the wrapper that turns a `when` expression into a template.
pub(crate) const WHEN_PREFIX: &str = "{% if (";
const WHEN_SUFFIX: &str = ") %}1{% endif %}";

pub(crate) fn when_template_source(expr: &str) -> String {
    format!("{WHEN_PREFIX}{expr}{WHEN_SUFFIX}")
}

pub(crate) fn when_template_name(rule: &str) -> String {
    format!("injection:{rule}:when")
}

pub(crate) fn text_template_name(rule: &str) -> String {
    format!("injection:{rule}:text")
}

fn phases_of(settings: &InjectionRuleSettings, default: &[InjectionPhase]) -> Vec<InjectionPhase> {
    match (settings.target.and_then(|t| t.phase()), &settings.phases) {
        (Some(p), _) => vec![p],
        (None, Some(list)) => list.clone(),
        (None, None) => default.to_vec(),
    }
}

/// The rules of `settings` (built-ins first, overridden key by key by same-named entries,
/// then the user's rules), enabled ones only, sorted by priority (highest first; ties keep
/// this order).
pub(crate) fn collect_rules(settings: &PromptBuilderSettings) -> Vec<Rule> {
    let mut rules: Vec<Rule> = Vec::new();
    let override_of = |name: &str| settings.injections.iter().find(|r| r.name == name);
    if settings.builtin_injections {
        for b in Builtin::ALL {
            let mut rule = Rule {
                name: b.name().to_string(),
                priority: b.priority(),
                side: b.side(),
                phases: InjectionPhase::ALL.to_vec(),
                builtin: Some(b),
                when: None,
                when_expr: None,
                text: RuleText::Builtin,
                text_source: None,
            };
            if let Some(o) = override_of(b.name()) {
                if !o.enabled {
                    continue;
                }
                apply_settings(&mut rule, o);
            }
            rules.push(rule);
        }
    }
    for s in settings
        .injections
        .iter()
        .filter(|r| r.enabled && !r.is_builtin())
    {
        let mut rule = Rule {
            name: s.name.clone(),
            priority: 50,
            side: InjectionSide::System,
            phases: InjectionPhase::ALL.to_vec(),
            builtin: None,
            when: None,
            when_expr: None,
            text: RuleText::Builtin,
            text_source: None,
        };
        apply_settings(&mut rule, s);
        rules.push(rule);
    }
    // stable: equal priorities keep the order above
    rules.sort_by_key(|r| std::cmp::Reverse(r.priority));
    rules
}

fn apply_settings(rule: &mut Rule, s: &InjectionRuleSettings) {
    if let Some(p) = s.priority {
        rule.priority = p;
    }
    if let Some(t) = s.target {
        rule.side = t.side();
    }
    if s.target.is_some() || s.phases.is_some() {
        rule.phases = phases_of(s, &InjectionPhase::ALL);
    }
    if let Some(expr) = &s.when {
        rule.when = Some(when_template_name(&rule.name));
        rule.when_expr = Some(expr.clone());
    }
    if let Some(text) = &s.text {
        rule.text = RuleText::Template(text_template_name(&rule.name));
        rule.text_source = Some(text.clone());
    }
}

/// Joins `base` and the blocks with `separator`: `base` (its trailing whitespace removed)
/// first unless blank; `base` unchanged when there is no block.
pub(crate) fn assemble(base: &str, blocks: &[String], separator: &str) -> String {
    if blocks.is_empty() {
        return base.to_string();
    }
    let mut out = String::with_capacity(
        base.len()
            + blocks
                .iter()
                .map(|b| b.len() + separator.len())
                .sum::<usize>(),
    );
    if !is_blank(base) {
        out.push_str(base.trim_end());
        out.push_str(separator);
    }
    for (i, b) in blocks.iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        out.push_str(b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mixseek_config::InjectionTarget;

    #[test]
    fn builtins_are_ordered_by_priority() {
        let rules = collect_rules(&PromptBuilderSettings::default());
        let names: Vec<(&str, i64)> = rules
            .iter()
            .map(|r| (r.name.as_str(), r.priority))
            .collect();
        assert_eq!(
            names,
            [
                ("language_preference", 100),
                ("domain_context", 90),
                ("system_prompt_suffix", 40),
                ("prompt_suffix", 10)
            ]
        );
        assert_eq!(rules[3].side, InjectionSide::User);
    }

    #[test]
    fn overrides_and_user_rules_merge_by_priority_then_declaration() {
        let settings = PromptBuilderSettings {
            injections: vec![
                InjectionRuleSettings {
                    name: "language_preference".into(),
                    enabled: false,
                    ..Default::default()
                },
                InjectionRuleSettings {
                    name: "domain_context".into(),
                    priority: Some(5),
                    phases: Some(vec![InjectionPhase::Team]),
                    ..Default::default()
                },
                InjectionRuleSettings {
                    name: "mine".into(),
                    priority: Some(40),
                    target: Some(InjectionTarget::MemberUser),
                    text: Some("x".into()),
                    ..Default::default()
                },
                InjectionRuleSettings {
                    name: "default_priority".into(),
                    target: Some(InjectionTarget::System),
                    text: Some("y".into()),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let rules = collect_rules(&settings);
        let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "default_priority",
                "system_prompt_suffix",
                "mine",
                "prompt_suffix",
                "domain_context"
            ]
        );
        let mine = &rules[2];
        assert_eq!(
            (mine.side, mine.phases.as_slice()),
            (InjectionSide::User, &[InjectionPhase::Member][..])
        );
        assert_eq!(rules[4].phases, [InjectionPhase::Team]);
        assert!(matches!(rules[4].text, RuleText::Builtin));
        let none = collect_rules(&PromptBuilderSettings {
            builtin_injections: false,
            ..settings
        });
        assert_eq!(
            none.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
            ["default_priority", "mine"]
        );
    }

    #[test]
    fn assemble_joins_with_the_separator() {
        let blocks = vec!["A".to_string(), "B".to_string()];
        assert_eq!(
            assemble("base\n", &blocks, "\n\n---\n\n"),
            "base\n\n---\n\nA\n\n---\n\nB"
        );
        assert_eq!(assemble("  ", &blocks, "|"), "A|B");
        assert_eq!(assemble("base\n", &[], "|"), "base\n");
    }

    #[test]
    fn language_names() {
        assert_eq!(language_name("ja"), "Japanese");
        assert_eq!(language_name("EN"), "English");
        assert_eq!(language_name("zh_TW"), "Traditional Chinese");
        assert_eq!(language_name("Klingon"), "Klingon");
    }

    #[test]
    fn builtin_inputs_ignore_blank_and_auto() {
        let mut ctx = PromptContext {
            language: Some("auto".into()),
            domain_context: Some(" \n".into()),
            ..Default::default()
        };
        assert_eq!(Builtin::LanguagePreference.input(&ctx), None);
        assert_eq!(Builtin::DomainContext.input(&ctx), None);
        ctx.language = Some(" ja ".into());
        assert_eq!(Builtin::LanguagePreference.input(&ctx), Some("ja"));
        assert_eq!(
            Builtin::DomainContext.text(InjectionPhase::Evaluator, "Software"),
            "## Domain Context\nSoftware\nEvaluate the submission from this domain's perspective."
        );
    }
}
