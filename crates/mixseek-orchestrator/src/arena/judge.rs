//! One arena game: the judge prompt (the user template rendered with the pair's own prompt and
//! the two answers, each neutralized), the call (structured verdict or `[[A>B]]` text), the verdict
//! parsed — never guessed — and the budget that stops new calls once it is spent.

use super::{ArenaError, ArenaPlan};
use mixseek_config::VerdictFormat;
use mixseek_core::{Role, Usage};
use mixseek_judging::verdict::{Game, Verdict, parse_verdict};
use mixseek_llm::{
    CallerTag, ChatModel, ChatRequest, GenerationParams, Message, ModelRegistry, StructuredOptions,
    generate_structured,
};
use mixseek_prompt::TagGuard;
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// The structured verdict asked for with `verdict_format = "structured"`.
#[derive(Debug, Deserialize, JsonSchema)]
struct ArenaVerdict {
    /// Why, briefly, before the verdict.
    reasoning: String,
    /// One of `A>>B`, `A>B`, `A=B`, `B>A`, `B>>A`.
    verdict: VerdictLabel,
}

/// The five labels, as the schema's enum.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
enum VerdictLabel {
    #[serde(rename = "A>>B")]
    AMuchBetter,
    #[serde(rename = "A>B")]
    ABetter,
    #[serde(rename = "A=B")]
    Tie,
    #[serde(rename = "B>A")]
    BBetter,
    #[serde(rename = "B>>A")]
    BMuchBetter,
}

impl From<VerdictLabel> for Verdict {
    fn from(v: VerdictLabel) -> Verdict {
        match v {
            VerdictLabel::AMuchBetter => Verdict::AMuchBetter,
            VerdictLabel::ABetter => Verdict::ABetter,
            VerdictLabel::Tie => Verdict::Tie,
            VerdictLabel::BBetter => Verdict::BBetter,
            VerdictLabel::BMuchBetter => Verdict::BMuchBetter,
        }
    }
}

/// One judged (or skipped) game, in the order of the plan: pair by pair, judge by judge,
/// game 1 (the pair's first contestant in position A) then game 2 (swapped).
#[derive(Debug, Clone)]
pub(crate) struct GameResult {
    pub pair_index: u32,
    /// The pair's prompt (an index into the plan's `prompts`).
    pub prompt: usize,
    /// 1 or 2.
    pub order: u8,
    pub judge: String,
    pub game: Game,
    /// The judge's answer (the JSON document for a structured verdict).
    pub raw: Option<String>,
    /// Why there is no verdict: the call failed, the answer had no label, or the budget.
    pub error: Option<String>,
    pub usage: Usage,
    pub skipped_for_budget: bool,
}

/// The judges and what every game shares.
pub(crate) struct Judge {
    models: Vec<Arc<dyn ChatModel>>,
    guard: TagGuard,
    env: minijinja::Environment<'static>,
    budget: Budget,
}

impl Judge {
    pub(crate) fn new(plan: &ArenaPlan, registry: &ModelRegistry) -> Result<Judge, ArenaError> {
        let mut models = Vec::new();
        for id in plan.settings.judge_models() {
            let model = registry.model(&id).map_err(|source| ArenaError::Model {
                model: id.clone(),
                source,
            })?;
            models.push(model);
        }
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.add_template_owned("user", plan.settings.user_template.clone())
            .map_err(|e| ArenaError::Template(e.to_string()))?;
        let judge = Judge {
            models,
            guard: TagGuard::for_template(&plan.settings.user_template),
            env,
            budget: Budget::new(plan.settings.max_cost_usd, plan.settings.max_total_tokens),
        };
        // a template that cannot render (an unknown variable) fails the arena before any call
        if let Some(p) = plan.pairs.first() {
            judge
                .render(plan, p.prompt, p.first, p.second)
                .map_err(ArenaError::Template)?;
        }
        Ok(judge)
    }

    /// Every game of the plan, `max_concurrent` at a time, in the plan's order.
    pub(crate) async fn play_all(self: &Arc<Self>, plan: &ArenaPlan) -> Vec<GameResult> {
        let mut specs = Vec::new();
        for (p, pair) in plan.pairs.iter().enumerate() {
            let (i, j) = (pair.first, pair.second);
            for (m, model) in self.models.iter().enumerate() {
                for (order, (first, second)) in [(1u8, (i, j)), (2, (j, i))] {
                    specs.push(GameSpec {
                        pair_index: u32::try_from(p).unwrap_or(u32::MAX),
                        prompt: pair.prompt,
                        order,
                        first,
                        second,
                        model: Arc::clone(model),
                        repeat: u32::try_from((p * self.models.len() + m) * 2)
                            .unwrap_or(u32::MAX)
                            .saturating_add(u32::from(order)),
                    });
                }
            }
        }
        let limit = Arc::new(Semaphore::new(plan.settings.max_concurrent.max(1) as usize));
        let mut set = JoinSet::new();
        for (at, spec) in specs.iter().enumerate() {
            let spec = spec.clone();
            let prompt = self.render(plan, spec.prompt, spec.first, spec.second);
            let this = Arc::clone(self);
            let limit = Arc::clone(&limit);
            let settings = plan.settings.clone();
            set.spawn(async move {
                let _permit = limit.acquire_owned().await;
                (at, this.play(spec, prompt, &settings).await)
            });
        }
        let mut results: Vec<Option<GameResult>> = vec![None; specs.len()];
        while let Some(joined) = set.join_next().await {
            match joined {
                Ok((at, r)) => results[at] = Some(r),
                Err(e) => tracing::warn!(error = %e, "an arena game task failed"),
            }
        }
        results
            .into_iter()
            .zip(&specs)
            .map(|(r, spec)| {
                r.unwrap_or_else(|| {
                    let mut lost = spec.unplayed();
                    lost.error = Some("the game's task failed (see the log)".into());
                    lost
                })
            })
            .collect()
    }

    /// The judge prompt of one game: prompt `prompt` of the plan, contestant `first` as A.
    pub(crate) fn render(
        &self,
        plan: &ArenaPlan,
        prompt: usize,
        first: usize,
        second: usize,
    ) -> Result<String, String> {
        let text = |t: Option<&String>| {
            t.map(|t| self.guard.neutralize(t).into_owned())
                .ok_or_else(|| "the game names a prompt or contestant the plan lacks".to_string())
        };
        let ctx = minijinja::context! {
            user_prompt => text(plan.prompts.get(prompt))?,
            answer_a => text(plan.contestants.get(first).map(|c| &c.submission))?,
            answer_b => text(plan.contestants.get(second).map(|c| &c.submission))?,
        };
        self.env
            .get_template("user")
            .and_then(|t| t.render(ctx))
            .map_err(|e| e.to_string())
    }

    async fn play(
        &self,
        spec: GameSpec,
        prompt: Result<String, String>,
        settings: &mixseek_config::ArenaSettings,
    ) -> GameResult {
        let mut result = spec.unplayed();
        if let Some(why) = self.budget.spent() {
            result.error = Some(why);
            result.skipped_for_budget = true;
            return result;
        }
        let prompt = match prompt {
            Ok(p) => p,
            Err(e) => {
                result.error = Some(e);
                return result;
            }
        };
        let request = ChatRequest {
            system: Some(settings.system_prompt.clone()),
            messages: vec![Message::user(prompt)],
            params: GenerationParams {
                temperature: Some(settings.temperature),
                max_tokens: settings
                    .max_tokens
                    .map(|t| u32::try_from(t).unwrap_or(u32::MAX)),
                ..GenerationParams::default()
            },
            timeout: Some(Duration::from_secs(settings.timeout_seconds)),
            caller: CallerTag::role(Role::Evaluator).with_repeat(spec.repeat),
            ..ChatRequest::default()
        };
        match settings.verdict_format {
            VerdictFormat::Structured => {
                let options = StructuredOptions::<ArenaVerdict>::default()
                    .with_max_repairs(settings.max_retries);
                match generate_structured(spec.model.as_ref(), request, options).await {
                    Ok(out) => {
                        tracing::trace!(reasoning = %out.value.reasoning, "arena verdict");
                        result.game.verdict = Some(out.value.verdict.into());
                        result.raw = Some(out.raw);
                        result.usage = out.usage;
                    }
                    // A judge without usable structured output that wrote the text form's
                    // label instead is read as such (the label is exact: still never guessed).
                    Err(e) => match e.raw_output.as_deref().and_then(parse_verdict) {
                        Some(verdict) => {
                            tracing::debug!(error = %e, "no structured verdict; read the [[…]] label of the answer");
                            result.game.verdict = Some(verdict);
                            result.raw = e.raw_output.clone();
                        }
                        None => result.error = Some(e.to_string()),
                    },
                }
            }
            VerdictFormat::Text => match spec.model.chat(&request).await {
                Ok(answer) => {
                    let text = answer.text_or_empty().to_string();
                    result.game.verdict = parse_verdict(&text);
                    if result.game.verdict.is_none() {
                        result.error = Some(
                            "no verdict label ([[A>>B]], [[A>B]], [[A=B]], [[B>A]] or [[B>>A]]) in the answer".into(),
                        );
                    }
                    result.raw = Some(text);
                    result.usage = answer.usage;
                }
                Err(e) => result.error = Some(e.to_string()),
            },
        }
        self.budget.add(&result.usage);
        result
    }
}

#[derive(Clone)]
struct GameSpec {
    pair_index: u32,
    prompt: usize,
    order: u8,
    first: usize,
    second: usize,
    model: Arc<dyn ChatModel>,
    /// Tells the games apart for the mock provider and the response cache's caller.
    repeat: u32,
}

impl GameSpec {
    /// The game before (or without) its judge's answer.
    fn unplayed(&self) -> GameResult {
        GameResult {
            pair_index: self.pair_index,
            prompt: self.prompt,
            order: self.order,
            judge: self.model.id().to_string(),
            game: Game {
                first: self.first,
                second: self.second,
                verdict: None,
            },
            raw: None,
            error: None,
            usage: Usage::default(),
            skipped_for_budget: false,
        }
    }
}

/// The arena's spending against `max_cost_usd` / `max_total_tokens`. Calls already in
/// flight when it is reached still finish (at most `max_concurrent` of them).
struct Budget {
    max_cost: Option<f64>,
    max_tokens: Option<u64>,
    used: Mutex<Usage>,
}

impl Budget {
    fn new(max_cost: Option<f64>, max_tokens: Option<u64>) -> Budget {
        Budget {
            max_cost,
            max_tokens,
            used: Mutex::new(Usage::default()),
        }
    }

    fn add(&self, usage: &Usage) {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        *used += *usage;
    }

    /// Why no more calls may be sent, if the budget is spent.
    fn spent(&self) -> Option<String> {
        let used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(max) = self.max_cost
            && used.cost_usd >= max
        {
            return Some(format!(
                "not judged: the arena's budget max_cost_usd = {max} was reached (${:.4} spent)",
                used.cost_usd
            ));
        }
        if let Some(max) = self.max_tokens
            && used.input_tokens + used.output_tokens >= max
        {
            return Some(format!(
                "not judged: the arena's budget max_total_tokens = {max} was reached ({} used)",
                used.input_tokens + used.output_tokens
            ));
        }
        None
    }
}
