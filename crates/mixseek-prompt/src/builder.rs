//! [`PromptBuilder`]: compiles the three templates and the injection rules once, then renders
//! prompts and applies rules from a [`PromptContext`].

use crate::applied::InjectionLog;
use crate::attachments::{ATTACHMENT_TAGS, XML_ATTR_FILTER, compiled_source, xml_attr};
use crate::clock::{SharedClock, SystemClock, env_tz, resolve_time_zone};
use crate::context::{PromptContext, py_trim};
use crate::error::{PromptError, TemplateKind, TemplateName, from_minijinja};
use crate::inject::{
    Builtin, Injected, Rule, RuleText, Suffixes, WHEN_PREFIX, assemble, collect_rules,
    when_template_source,
};
use crate::names;
use crate::tags::TagGuard;
use crate::vars::{INJECTION_VARS, compute, validate, variable_names};
use chrono_tz::Tz;
use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value};
use mixseek_config::Issues;
use mixseek_config::{InjectionPhase, InjectionSide, PromptBuilderSettings};
use mixseek_core::AppliedInjection;
use std::collections::HashSet;
use std::sync::Arc;

/// Renders the team, evaluator and judgment user prompts and applies injection rules.
/// Cheap to clone and safe to share between tasks.
#[derive(Debug, Clone)]
pub struct PromptBuilder {
    env: Arc<Environment<'static>>,
    rules: Arc<Vec<Rule>>,
    /// Top-level names each template references, indexed like `TemplateKind::ALL`.
    referenced: Arc<[HashSet<String>; 3]>,
    /// Each template's tag guard (the default tag names and its boundary tags), indexed like
    /// `TemplateKind::ALL`.
    guards: Arc<[TagGuard; 3]>,
    /// The same guards plus the attachment block's tags: those of a context with attachments.
    attached_guards: Arc<[TagGuard; 3]>,
    system_separator: String,
    user_separator: String,
    /// `[prompt_builder] system_prompt_suffix` / `prompt_suffix`.
    suffixes: Arc<Suffixes>,
    /// The rules applied per (execution, team, round), shared by every clone.
    applied: Arc<InjectionLog>,
    tz: Tz,
    clock: SharedClock,
}

/// `\r\n` and lone `\r` in a template source become `\n` (the original's engine does this).
pub(crate) fn normalize_newlines(source: &str) -> String {
    if source.contains('\r') {
        source.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        source.to_string()
    }
}

fn new_env() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_debug(true);
    env.add_filter(XML_ATTR_FILTER, xml_attr);
    env
}

fn kind_index(kind: TemplateKind) -> usize {
    match kind {
        TemplateKind::Team => 0,
        TemplateKind::Evaluator => 1,
        TemplateKind::Judgment => 2,
    }
}

/// The template whose variables a phase's rules see.
fn phase_kind(phase: InjectionPhase) -> TemplateKind {
    match phase {
        InjectionPhase::Team | InjectionPhase::Member => TemplateKind::Team,
        InjectionPhase::Evaluator => TemplateKind::Evaluator,
        InjectionPhase::Judgment => TemplateKind::Judgment,
    }
}

fn kind_phase(kind: TemplateKind) -> InjectionPhase {
    match kind {
        TemplateKind::Team => InjectionPhase::Team,
        TemplateKind::Evaluator => InjectionPhase::Evaluator,
        TemplateKind::Judgment => InjectionPhase::Judgment,
    }
}

fn rule_available(phase: InjectionPhase) -> Vec<&'static str> {
    let mut names = variable_names(phase_kind(phase));
    names.extend(INJECTION_VARS.iter().map(|v| v.name));
    names
}

/// Compiles everything in `settings`, collecting every problem.
fn compile(
    settings: &PromptBuilderSettings,
) -> (Environment<'static>, Vec<Rule>, Vec<PromptError>) {
    let mut errors = Vec::new();
    let mut issues = Issues::default();
    settings.validate("prompt_builder", &mut issues);
    if !issues.is_empty() {
        errors.push(PromptError::InvalidSettings {
            issues: issues.items.iter().map(|i| i.to_string()).collect(),
        });
    }
    let mut env = new_env();
    for kind in TemplateKind::ALL {
        // a default template gets the attachment block (rendering nothing without attachments)
        let source = compiled_source(
            kind,
            normalize_newlines(settings.template(kind.key()).unwrap_or_default()),
        );
        if let Err(e) = env.add_template_owned(kind.key(), source.clone()) {
            let available = variable_names(kind);
            errors.push(from_minijinja(
                &e,
                TemplateName::Prompt(kind),
                &source,
                &available,
                Vec::new,
            ));
        }
    }
    let rules = collect_rules(settings);
    for rule in &rules {
        if let (Some(name), Some(expr)) = (&rule.when, &rule.when_expr) {
            let expr = normalize_newlines(expr);
            if let Err(e) = env.add_template_owned(name.clone(), when_template_source(&expr)) {
                errors.push(when_error(&e, &rule.name, &expr, &[]));
            }
        }
        if let (RuleText::Template(name), Some(text)) = (&rule.text, &rule.text_source) {
            let text = normalize_newlines(text);
            if let Err(e) = env.add_template_owned(name.clone(), text.clone()) {
                errors.push(from_minijinja(
                    &e,
                    TemplateName::RuleText(rule.name.clone()),
                    &text,
                    &[],
                    Vec::new,
                ));
            }
        }
    }
    (env, rules, errors)
}

/// The names a compiled template reads that none of its variables provide (see
/// [`crate::names`]): the three prompt templates against their kind's variables, each rule's
/// `when` and `text` against the variables of any phase the rule applies to.
fn unknown_names(env: &Environment<'static>, rules: &[Rule]) -> Vec<PromptError> {
    // Globals (`range`, `dict`, `namespace`, …) are not variables.
    let globals: HashSet<&str> = env.globals().map(|(k, _)| k).collect();
    let used = |name: &str| {
        env.get_template(name)
            .map(|t| t.undeclared_variables(false))
            .unwrap_or_default()
            .into_iter()
            .filter(|n| !globals.contains(n.as_str()))
            .collect::<Vec<_>>()
    };
    let mut errors = Vec::new();
    for kind in TemplateKind::ALL {
        if let Ok(t) = env.get_template(kind.key()) {
            errors.extend(names::unknown_variables(
                &TemplateName::Prompt(kind),
                t.source(),
                true,
                used(kind.key()),
                &variable_names(kind),
            ));
        }
    }
    for rule in rules {
        let mut available: Vec<&str> = Vec::new();
        for phase in &rule.phases {
            for name in rule_available(*phase) {
                if !available.contains(&name) {
                    available.push(name);
                }
            }
        }
        if let (Some(name), Some(expr)) = (&rule.when, &rule.when_expr) {
            errors.extend(names::unknown_variables(
                &TemplateName::RuleWhen(rule.name.clone()),
                &normalize_newlines(expr),
                false,
                used(name),
                &available,
            ));
        }
        if let (RuleText::Template(name), Some(text)) = (&rule.text, &rule.text_source) {
            errors.extend(names::unknown_variables(
                &TemplateName::RuleText(rule.name.clone()),
                &normalize_newlines(text),
                true,
                used(name),
                &available,
            ));
        }
    }
    errors
}

/// An error of a `when` expression, positioned in the expression (not the wrapper).
fn when_error(err: &minijinja::Error, rule: &str, expr: &str, available: &[&str]) -> PromptError {
    let wrapped = when_template_source(expr);
    let mut e = from_minijinja(
        err,
        TemplateName::RuleWhen(rule.to_string()),
        &wrapped,
        available,
        Vec::new,
    );
    if let (
        Some(r),
        PromptError::Syntax { location, .. }
        | PromptError::UndefinedVariable { location, .. }
        | PromptError::Render { location, .. },
    ) = (err.range(), &mut e)
    {
        let start = r.start.saturating_sub(WHEN_PREFIX.len()).min(expr.len());
        let (line, column) = crate::error::line_col(expr, start);
        location.line = u32::try_from(line).ok();
        location.column = u32::try_from(column).ok();
    }
    e
}

/// Every problem of `settings` at once, for preflight: blank templates, bad rules, invalid
/// `timezone`, template and rule syntax errors, and every name a template or rule reads that
/// is not one of its variables (with a "did you mean" hint; names only tested with
/// `is defined` / `is undefined` or given a `default` filter are allowed). Empty when the
/// builder can be built and every name is known.
pub fn check_settings(settings: &PromptBuilderSettings) -> Vec<PromptError> {
    let (env, rules, mut errors) = compile(settings);
    errors.extend(unknown_names(&env, &rules));
    errors
}

impl PromptBuilder {
    /// Builds from settings: validates them, compiles templates and rules (first problem is
    /// the error; see [`check_settings`] for all), and resolves the time zone from
    /// `settings.timezone`, else `TZ`, else UTC. Uses the system clock.
    pub fn new(settings: &PromptBuilderSettings) -> Result<Self, PromptError> {
        let tz = resolve_time_zone(settings.timezone.as_deref(), env_tz().as_deref())?;
        Self::with_zone(settings, tz)
    }

    /// Builds from settings with an already resolved time zone (the environment is not read).
    pub fn with_zone(settings: &PromptBuilderSettings, tz: Tz) -> Result<Self, PromptError> {
        let (env, rules, mut errors) = compile(settings);
        if !errors.is_empty() {
            return Err(errors.swap_remove(0));
        }
        let referenced = TemplateKind::ALL.map(|k| {
            env.get_template(k.key())
                .map(|t| t.undeclared_variables(false))
                .unwrap_or_default()
        });
        // the guards of the templates as written (the attachment block of a default template
        // is not scanned: without attachments, the guard is the original's)
        let guards = TemplateKind::ALL.map(|k| {
            TagGuard::for_template(&normalize_newlines(
                settings.template(k.key()).unwrap_or_default(),
            ))
        });
        let attached_guards = guards.clone().map(|g| g.with_extra(&ATTACHMENT_TAGS));
        Ok(Self {
            env: Arc::new(env),
            rules: Arc::new(rules),
            referenced: Arc::new(referenced),
            guards: Arc::new(guards),
            attached_guards: Arc::new(attached_guards),
            system_separator: settings.system_separator.clone(),
            user_separator: settings.user_separator.clone(),
            suffixes: Arc::new(Suffixes {
                system: settings.system_prompt_suffix.clone(),
                user: settings.prompt_suffix.clone(),
            }),
            applied: Arc::new(InjectionLog::default()),
            tz,
            clock: Arc::new(SystemClock),
        })
    }

    /// The tag guard of `kind`'s template for `ctx`: with attachments, it also guards the
    /// attachment block's tags.
    fn guard(&self, kind: TemplateKind, ctx: &PromptContext) -> &TagGuard {
        if ctx.attachments.is_empty() {
            &self.guards[kind_index(kind)]
        } else {
            &self.attached_guards[kind_index(kind)]
        }
    }

    /// Whether `kind`'s template shows the context's attachments (reads the `attachments`
    /// variable): true for the default templates, which show them in `<attachments>` after
    /// `<user_task>`; false for a template of one's own that does not use the variable, so a
    /// caller with attachments can warn that they will not reach that prompt.
    pub fn shows_attachments(&self, kind: TemplateKind) -> bool {
        self.referenced[kind_index(kind)].contains("attachments")
    }

    /// Replaces the clock (tests, `--now`).
    pub fn with_clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// The injection rules this builder (or a clone) applied in round `round` of `team_id`
    /// in `execution_id` — every phase whose prompts carried that execution id, team id and
    /// round number — ordered by phase then side; they are forgotten, with anything left from
    /// the team's earlier rounds. Every application is also logged at debug level
    /// (`injection rules applied`, with execution id, team id, round, phase, side and rules).
    pub fn take_applied(
        &self,
        execution_id: &str,
        team_id: &str,
        round: u32,
    ) -> Vec<AppliedInjection> {
        self.applied.take(execution_id, team_id, round)
    }

    /// Renders the user prompt of `kind`. `current_datetime` is read from the clock once per
    /// call. Errors: context validation, template errors (with template, line, column and,
    /// for undefined names, the available variables).
    pub fn render(&self, kind: TemplateKind, ctx: &PromptContext) -> Result<String, PromptError> {
        let vars = compute(kind, ctx, self.clock.now(), self.tz, self.guard(kind, ctx))?;
        self.render_vars(kind, &vars)
    }

    /// The team leader's user prompt (`team_user_prompt`).
    pub fn render_team(&self, ctx: &PromptContext) -> Result<String, PromptError> {
        self.render(TemplateKind::Team, ctx)
    }

    /// The user prompt of an LLM-judge metric (`evaluator_user_prompt`); `user_prompt` and
    /// `submission` are trimmed.
    pub fn render_evaluator(&self, ctx: &PromptContext) -> Result<String, PromptError> {
        self.render(TemplateKind::Evaluator, ctx)
    }

    /// The judgment LLM's user prompt (`judgment_user_prompt`).
    pub fn render_judgment(&self, ctx: &PromptContext) -> Result<String, PromptError> {
        self.render(TemplateKind::Judgment, ctx)
    }

    /// Renders the user prompt of `kind` and applies the user-side rules of its phase, with one
    /// timestamp for both.
    pub fn render_with_injections(
        &self,
        kind: TemplateKind,
        ctx: &PromptContext,
    ) -> Result<Injected, PromptError> {
        let vars = compute(kind, ctx, self.clock.now(), self.tz, self.guard(kind, ctx))?;
        let prompt = self.render_vars(kind, &vars)?;
        Ok(self.apply(kind_phase(kind), InjectionSide::User, &prompt, ctx, vars))
    }

    /// Applies the rules of `phase` / `side` to `base` (a system instruction or a user
    /// prompt). Rule conditions and texts see the phase's template variables plus `phase`,
    /// `side`, `system_prompt_suffix`, `prompt_suffix`. A rule whose condition or text fails
    /// is skipped with a warning; empty texts are dropped. Errors only when the context is
    /// invalid for the phase (team/member/judgment need a round context, evaluator a
    /// submission). The variables (history, ranking, …) are computed only when a rule in
    /// scope has a condition or a text template, so built-in-only injection is cheap.
    pub fn inject(
        &self,
        phase: InjectionPhase,
        side: InjectionSide,
        base: &str,
        ctx: &PromptContext,
    ) -> Result<Injected, PromptError> {
        let kind = phase_kind(phase);
        // Built-in texts need no variables; compute them only for conditions and templates.
        let needs_vars = self.rules.iter().any(|r| {
            r.side == side
                && r.phases.contains(&phase)
                && (r.when.is_some() || matches!(r.text, RuleText::Template(_)))
        });
        let vars = if needs_vars {
            compute(kind, ctx, self.clock.now(), self.tz, self.guard(kind, ctx))?
        } else {
            validate(kind, ctx)?;
            Vec::new()
        };
        Ok(self.apply(phase, side, base, ctx, vars))
    }

    /// [`inject`](Self::inject) on the system side.
    pub fn inject_system(
        &self,
        phase: InjectionPhase,
        base: &str,
        ctx: &PromptContext,
    ) -> Result<Injected, PromptError> {
        self.inject(phase, InjectionSide::System, base, ctx)
    }

    /// [`inject`](Self::inject) on the user side.
    pub fn inject_user(
        &self,
        phase: InjectionPhase,
        base: &str,
        ctx: &PromptContext,
    ) -> Result<Injected, PromptError> {
        self.inject(phase, InjectionSide::User, base, ctx)
    }

    fn render_vars(
        &self,
        kind: TemplateKind,
        vars: &[(&'static str, Value)],
    ) -> Result<String, PromptError> {
        let template = self.env.get_template(kind.key()).map_err(|e| {
            from_minijinja(
                &e,
                TemplateName::Prompt(kind),
                "",
                &variable_names(kind),
                Vec::new,
            )
        })?;
        template
            .render(Value::from_pairs(vars.iter().map(|(k, v)| (*k, v.clone()))))
            .map_err(|e| {
                from_minijinja(
                    &e,
                    TemplateName::Prompt(kind),
                    template.source(),
                    &variable_names(kind),
                    || self.referenced[kind_index(kind)].iter().cloned().collect(),
                )
            })
    }

    fn apply(
        &self,
        phase: InjectionPhase,
        side: InjectionSide,
        base: &str,
        ctx: &PromptContext,
        mut vars: Vec<(&'static str, Value)>,
    ) -> Injected {
        let mut rules = self
            .rules
            .iter()
            .filter(|r| r.side == side && r.phases.contains(&phase))
            .peekable();
        let volatile = current_datetime_of(&vars);
        if rules.peek().is_none() {
            return Injected {
                prompt: base.to_string(),
                applied: Vec::new(),
                volatile,
            };
        }
        vars.push(("phase", Value::from(phase.as_str())));
        vars.push(("side", Value::from(side.as_str())));
        vars.push((
            "system_prompt_suffix",
            Value::from(
                Builtin::SystemPromptSuffix
                    .input_or(ctx, &self.suffixes)
                    .unwrap_or(""),
            ),
        ));
        vars.push((
            "prompt_suffix",
            Value::from(
                Builtin::PromptSuffix
                    .input_or(ctx, &self.suffixes)
                    .unwrap_or(""),
            ),
        ));
        let values = Value::from_pairs(vars);
        let mut blocks = Vec::new();
        let mut applied = Vec::new();
        for rule in rules {
            if let Some(text) = self.run_rule(rule, phase, ctx, &values) {
                blocks.push(text);
                applied.push(rule.name.clone());
            }
        }
        let separator = match side {
            InjectionSide::System => &self.system_separator,
            InjectionSide::User => &self.user_separator,
        };
        if !applied.is_empty() {
            self.applied.record(phase, side, ctx, &applied);
        }
        Injected {
            prompt: assemble(base, &blocks, separator),
            applied,
            volatile,
        }
    }

    /// The rule's trimmed text, or `None` when it does not apply, fails, or is empty.
    fn run_rule(
        &self,
        rule: &Rule,
        phase: InjectionPhase,
        ctx: &PromptContext,
        values: &Value,
    ) -> Option<String> {
        let input = match rule.builtin {
            Some(b) => Some(b.input_or(ctx, &self.suffixes)?),
            None => None,
        };
        if rule.builtin == Some(Builtin::DomainContext)
            && self.template_mentions(phase, "domain_context")
        {
            tracing::debug!(rule = %rule.name, phase = phase.as_str(), "skipped: the template shows domain_context itself");
            return None;
        }
        if let Some(when) = &rule.when {
            let result = self.env.get_template(when).and_then(|t| t.render(values));
            match result {
                Ok(out) if out == "1" => {}
                Ok(_) => return None,
                Err(e) => {
                    let expr = rule.when_expr.as_deref().unwrap_or("");
                    let err = when_error(&e, &rule.name, expr, &rule_available(phase));
                    tracing::warn!(rule = %rule.name, phase = phase.as_str(), error = %err, "injection rule skipped: its condition failed");
                    return None;
                }
            }
        }
        let text = match (&rule.text, input) {
            (RuleText::Builtin, Some(input)) => rule
                .builtin
                .map(|b| b.text(phase, input))
                .unwrap_or_default(),
            (RuleText::Builtin, None) => return None,
            (RuleText::Template(name), _) => {
                match self.env.get_template(name).and_then(|t| t.render(values)) {
                    Ok(text) => text,
                    Err(e) => {
                        let source = rule
                            .text_source
                            .as_deref()
                            .map(normalize_newlines)
                            .unwrap_or_default();
                        let err = from_minijinja(
                            &e,
                            TemplateName::RuleText(rule.name.clone()),
                            &source,
                            &rule_available(phase),
                            Vec::new,
                        );
                        tracing::warn!(rule = %rule.name, phase = phase.as_str(), error = %err, "injection rule skipped: its text failed");
                        return None;
                    }
                }
            }
        };
        let text = py_trim(&text);
        if text.is_empty() {
            None
        } else {
            Some(text.to_string())
        }
    }

    /// True when the phase's user template references `name` (member: the team template is
    /// not the member's prompt, so never).
    fn template_mentions(&self, phase: InjectionPhase, name: &str) -> bool {
        match phase {
            InjectionPhase::Member => false,
            _ => self.referenced[kind_index(phase_kind(phase))].contains(name),
        }
    }
}

/// The rendered `current_datetime` among `vars` (none when the variables were not computed).
fn current_datetime_of(vars: &[(&'static str, Value)]) -> Vec<String> {
    vars.iter()
        .filter(|(name, _)| *name == "current_datetime")
        .filter_map(|(_, v)| v.as_str().map(str::to_string))
        .filter(|s| !s.is_empty())
        .collect()
}
