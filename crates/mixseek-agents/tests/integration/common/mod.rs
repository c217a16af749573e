//! Shared set-up of the agent tests: registries pointing at fake servers, a round context.
#![allow(dead_code)]

use mixseek_agents::{AgentDeps, RoundContext, TeamAgents};
use mixseek_config::TeamFile;
use mixseek_config::TeamSettings;
use mixseek_config::{ProviderKind, ProviderSettings};
use mixseek_llm::{Env, ModelRegistry, RegistryConfig};
use mixseek_prompt::{PromptBuilder, PromptBuilderSettings, PromptContext};
use mixseek_testkit::{FakeLlm, Wire};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A registry where `name:model` goes to `fake` (one attempt per call: no retries).
pub fn registry(providers: &[(&str, &FakeLlm, Wire)]) -> Arc<ModelRegistry> {
    let mut map = BTreeMap::new();
    for (name, fake, wire) in providers {
        let kind = match wire {
            Wire::OpenAi => ProviderKind::OpenaiCompatible,
            Wire::Anthropic => ProviderKind::Anthropic,
            Wire::Gemini => ProviderKind::Gemini,
        };
        map.insert(
            name.to_string(),
            ProviderSettings {
                kind: Some(kind),
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

/// A registry with only the built-in providers (for `mock:`).
pub fn mock_registry() -> Arc<ModelRegistry> {
    Arc::new(
        ModelRegistry::new(
            RegistryConfig::new().with_env(Env::from_map(Vec::<(String, String)>::new())),
        )
        .expect("registry"),
    )
}

pub fn deps(registry: Arc<ModelRegistry>) -> AgentDeps {
    AgentDeps::new(
        registry,
        PromptBuilder::new(&PromptBuilderSettings::default()).expect("builder"),
    )
}

pub fn team(toml_src: &str) -> TeamSettings {
    let f: TeamFile = toml::from_str(toml_src).expect("team toml");
    f.team
}

pub fn agents(toml_src: &str, registry: Arc<ModelRegistry>) -> TeamAgents {
    TeamAgents::new(team(toml_src), Vec::new(), deps(registry))
}

pub fn ctx() -> RoundContext {
    RoundContext::new(PromptContext {
        user_prompt: "Research the topic".into(),
        round_number: 2,
        team_id: "alpha".into(),
        team_name: "Alpha Team".into(),
        execution_id: Some("exec-42".into()),
        domain_context: Some("Semiconductor industry".into()),
        language: Some("ja".into()),
        ..Default::default()
    })
}

/// The `messages` of a recorded OpenAI request.
pub fn messages(body: &serde_json::Value) -> Vec<serde_json::Value> {
    body["messages"].as_array().cloned().unwrap_or_default()
}

/// The system message of a recorded OpenAI request.
pub fn system_of(body: &serde_json::Value) -> String {
    messages(body)
        .iter()
        .find(|m| m["role"] == "system")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}
