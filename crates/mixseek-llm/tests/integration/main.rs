//! The LLM layer against the testkit's fake servers on 127.0.0.1.

mod cache_and_usage;
mod grok_responses;
mod hostile;
mod mock_provider;
mod native_tools;
mod providers;
mod retries;
mod structured;
mod structured_modes;
mod vertex;

use mixseek_config::ProviderSettings;
use mixseek_llm::{Env, ModelRegistry, RegistryConfig};
use mixseek_testkit::FakeLlm;
use std::collections::BTreeMap;

pub const OPENAI_KEY: &str = "sk-test-0123456789abcdefghijkl";
pub const ANTHROPIC_KEY: &str = "sk-ant-test-0123456789abcdef";
pub const GOOGLE_KEY: &str = "AIzaTest0123456789abcdefghijkl";

/// Settings with millisecond backoff, so retry tests run fast.
pub fn fast() -> ProviderSettings {
    ProviderSettings {
        backoff_initial_seconds: 0.001,
        backoff_max_seconds: 0.01,
        timeout_seconds: 20.0,
        ..ProviderSettings::default()
    }
}

pub fn registry(providers: Vec<(&str, ProviderSettings)>, env: &[(&str, &str)]) -> ModelRegistry {
    let providers: BTreeMap<String, ProviderSettings> = providers
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    ModelRegistry::new(
        RegistryConfig::new()
            .with_providers(providers)
            .with_env(Env::from_map(env.iter().copied())),
    )
    .expect("registry")
}

/// A registry whose `openai` provider is the fake server (through `OPENAI_BASE_URL`).
pub fn openai_registry(fake: &FakeLlm, settings: ProviderSettings) -> ModelRegistry {
    let url = fake.base_url();
    registry(
        vec![("openai", settings)],
        &[
            ("OPENAI_API_KEY", OPENAI_KEY),
            ("OPENAI_BASE_URL", url.as_str()),
        ],
    )
}
