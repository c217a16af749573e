//! Shared set-up of the round tests: fake-server registries, a scripted evaluator, a
//! recording sink, a fixed ranking.
#![allow(dead_code)]

use chrono::{DateTime, TimeZone, Utc};
use mixseek_agents::{AgentDeps, TeamAgents};
use mixseek_config::JudgmentSettings;
use mixseek_config::TeamFile;
use mixseek_config::{ProviderKind, ProviderSettings};
use mixseek_core::{Event, EventSink, MetricScore, ScoreDetails, SinkError, Usage};
use mixseek_llm::{Env, ModelRegistry, RegistryConfig};
use mixseek_prompt::{FixedClock, PromptBuilder, PromptBuilderSettings, RankingEntry};
use mixseek_round::{
    EvaluateError, Evaluation, EvaluationRequest, JudgmentClient, RankingError, RankingSource,
    RoundController, RoundSettings, SubmissionEvaluator,
};
use mixseek_testkit::FakeLlm;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// A registry where `name:model` goes to the OpenAI-format `fake` (no retries).
pub fn registry(providers: &[(&str, &FakeLlm)]) -> Arc<ModelRegistry> {
    let mut map = BTreeMap::new();
    for (name, fake) in providers {
        map.insert(
            name.to_string(),
            ProviderSettings {
                kind: Some(ProviderKind::OpenaiCompatible),
                base_url: Some(fake.base_url()),
                max_attempts: 1,
                ..ProviderSettings::default()
            },
        );
    }
    let config = RegistryConfig::new()
        .with_providers(map)
        .with_env(Env::from_map(Vec::<(String, String)>::new()));
    Arc::new(ModelRegistry::new(config).expect("registry"))
}

pub fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 11, 25, 5, 30, 0)
        .single()
        .expect("time")
}

pub fn prompts() -> PromptBuilder {
    PromptBuilder::with_zone(
        &PromptBuilderSettings::default(),
        chrono_tz::Tz::Asia__Tokyo,
    )
    .expect("builder")
    .with_clock(Arc::new(FixedClock(now())))
}

pub fn team_agents(toml_src: &str, registry: Arc<ModelRegistry>) -> TeamAgents {
    let f: TeamFile = toml::from_str(toml_src).expect("team toml");
    TeamAgents::new(f.team, Vec::new(), AgentDeps::new(registry, prompts()))
}

/// A solo team whose leader is `model`.
pub fn solo(model: &str, registry: Arc<ModelRegistry>) -> TeamAgents {
    team_agents(
        &format!(
            "[team]\nteam_id = \"alpha\"\nteam_name = \"Alpha Team\"\n[team.leader]\nmodel = \"{model}\"\n"
        ),
        registry,
    )
}

pub fn judgment(
    model: &str,
    registry: &ModelRegistry,
    edit: impl FnOnce(&mut JudgmentSettings),
) -> JudgmentClient {
    let mut s = JudgmentSettings {
        model: model.into(),
        ..JudgmentSettings::default()
    };
    edit(&mut s);
    JudgmentClient::new(&s, registry, prompts()).expect("judgment client")
}

pub fn settings(min_rounds: u32, max_rounds: u32) -> RoundSettings {
    RoundSettings {
        min_rounds,
        max_rounds,
        ..RoundSettings::default()
    }
}

/// Scores round `n` with `scores[n - 1]` (the last score repeats); records the requests.
pub struct ScriptedEvaluator {
    pub scores: Vec<f64>,
    pub requests: Mutex<Vec<EvaluationRequest>>,
    pub fail_on_round: Option<u32>,
}

impl ScriptedEvaluator {
    pub fn new(scores: &[f64]) -> Arc<Self> {
        Arc::new(Self {
            scores: scores.to_vec(),
            requests: Mutex::new(Vec::new()),
            fail_on_round: None,
        })
    }
    pub fn failing_on(round: u32) -> Arc<Self> {
        Arc::new(Self {
            scores: vec![50.0],
            requests: Mutex::new(Vec::new()),
            fail_on_round: Some(round),
        })
    }
    pub fn requests(&self) -> Vec<EvaluationRequest> {
        self.requests.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

#[async_trait::async_trait]
impl SubmissionEvaluator for ScriptedEvaluator {
    async fn evaluate(&self, request: &EvaluationRequest) -> Result<Evaluation, EvaluateError> {
        if let Ok(mut g) = self.requests.lock() {
            g.push(request.clone());
        }
        if self.fail_on_round == Some(request.round_number) {
            return Err(EvaluateError::new("metric Coverage failed"));
        }
        let i = (request.round_number as usize)
            .saturating_sub(1)
            .min(self.scores.len().saturating_sub(1));
        let score = self.scores.get(i).copied().unwrap_or(0.0);
        Ok(Evaluation {
            score_details: ScoreDetails {
                overall_score: score,
                metrics: vec![MetricScore::new(
                    "Coverage",
                    score,
                    format!("round {}", request.round_number),
                )],
            },
            usage: Usage {
                input_tokens: 10,
                output_tokens: 2,
                requests: 1,
                ..Usage::default()
            },
        })
    }
}

/// Records every event; can refuse `Evaluated`.
#[derive(Default)]
pub struct RecordingSink {
    pub events: Mutex<Vec<Event>>,
    pub refuse_evaluated: bool,
    pub refuse_judged: bool,
}

impl RecordingSink {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().map(|g| g.clone()).unwrap_or_default()
    }
    /// `round_started:1`, `evaluated:1`, `judged:1`, `team_finished`, ...
    pub fn names(&self) -> Vec<String> {
        self.events()
            .iter()
            .map(|e| match e {
                Event::RoundStarted { round_number, .. } => format!("round_started:{round_number}"),
                Event::SubmissionReady { round_number, .. } => {
                    format!("submission_ready:{round_number}")
                }
                Event::Evaluated(r) => format!("evaluated:{}", r.round_number),
                Event::Judged { round_number, .. } => format!("judged:{round_number}"),
                Event::TeamFinished { .. } => "team_finished".into(),
                other => format!("{other:?}"),
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl EventSink for RecordingSink {
    async fn emit(&self, event: &Event) -> Result<(), SinkError> {
        let refused = (self.refuse_evaluated && matches!(event, Event::Evaluated(_)))
            || (self.refuse_judged && matches!(event, Event::Judged { .. }));
        if refused {
            return Err(SinkError::message("store", "disk full"));
        }
        if let Ok(mut g) = self.events.lock() {
            g.push(event.clone());
        }
        Ok(())
    }
}

/// A fixed ranking.
pub struct FixedRanking(pub Vec<RankingEntry>);

#[async_trait::async_trait]
impl RankingSource for FixedRanking {
    async fn ranking(
        &self,
        _execution_id: &mixseek_core::ExecutionId,
    ) -> Result<Option<mixseek_prompt::Ranking>, RankingError> {
        Ok(Some(std::sync::Arc::new(self.0.clone())))
    }
}

pub fn controller(
    agents: TeamAgents,
    evaluator: Arc<ScriptedEvaluator>,
    judgment: JudgmentClient,
    settings: RoundSettings,
    sink: Arc<RecordingSink>,
) -> RoundController {
    RoundController::new(agents, prompts(), evaluator, judgment, settings).with_sink(sink)
}
