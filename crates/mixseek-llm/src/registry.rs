//! [`ModelRegistry`]: turns `provider:model` ids into ready [`ChatModel`]s, sharing one HTTP
//! client and one limiter per provider, the pricing table, the response cache and the call
//! observers (the structured-output capability learnt from a server is kept per process,
//! see [`crate::capability`]).

use crate::cache::{CacheStats, ResponseCache};
use crate::env::Env;
use crate::error::LlmError;
use crate::model::ChatModel;
use crate::observed::{FallbackModel, ObservedModel};
use crate::observer::{CallObserver, Observers, UsageLedger};
use crate::pricing::PriceTable;
use crate::runtime::{ProviderModel, ProviderRuntime};
use mixseek_config::{CacheSettings, Price, ProviderSettings};
use mixseek_core::ModelId;
use mixseek_core::model_id::{BUILTIN_PROVIDERS, builtin_provider};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// How long opening a TCP (and TLS) connection to a provider may take.
pub(crate) const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Everything a registry is built from.
#[derive(Clone, Default)]
pub struct RegistryConfig {
    /// `[providers.<name>]` tables (overrides of built-ins and new OpenAI-compatible,
    /// Anthropic or Gemini endpoints).
    pub providers: BTreeMap<String, ProviderSettings>,
    /// `[pricing."provider:model"]`, on top of the shipped defaults.
    pub pricing: BTreeMap<String, Price>,
    /// `[cache]`.
    pub cache: CacheSettings,
    /// Base of a relative `cache.dir` (the workspace). Without it a relative dir is used as is.
    pub workspace: Option<PathBuf>,
    /// Where API keys and `OPENAI_BASE_URL` come from.
    pub env: Env,
    /// Extra receivers of one [`mixseek_core::LlmCallRecord`] per call (the registry's own
    /// [`UsageLedger`] always receives them too).
    pub observers: Vec<Arc<dyn CallObserver>>,
    /// `[privacy]`: the cache leaves out answers holding personal data.
    pub masker: Option<Arc<mixseek_core::PiiMasker>>,
    /// Provider runtimes shared with other registries (see [`SharedRuntimes`]).
    pub shared: Option<SharedRuntimes>,
}

/// Provider runtimes shared by the registries of several executions in one process (an
/// experiment's): each provider's rate limits (requests and tokens per minute, concurrency),
/// its retry state and what was learnt of its server are then one for all of them. Runtimes
/// are shared by provider name and settings: a variant that sets other `[providers.<name>]`
/// values gets a runtime (and limits) of its own.
#[derive(Clone, Default)]
pub struct SharedRuntimes(Arc<Mutex<HashMap<String, Arc<ProviderRuntime>>>>);

impl std::fmt::Debug for SharedRuntimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.lock().map(|m| m.len()).unwrap_or_default();
        f.debug_struct("SharedRuntimes")
            .field("runtimes", &n)
            .finish()
    }
}

impl SharedRuntimes {
    /// An empty set (runtimes are added as the registries first use their providers).
    pub fn new() -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for RegistryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryConfig")
            .field("providers", &self.providers)
            .field("pricing", &self.pricing.keys().collect::<Vec<_>>())
            .field("cache", &self.cache)
            .field("workspace", &self.workspace)
            .field("env", &self.env)
            .field("observers", &self.observers.len())
            .finish()
    }
}

impl RegistryConfig {
    /// No provider tables or price overrides, the default `[cache]`, the process environment.
    pub fn new() -> Self {
        Self::default()
    }
    /// The config with these `[providers]` tables.
    pub fn with_providers(mut self, providers: BTreeMap<String, ProviderSettings>) -> Self {
        self.providers = providers;
        self
    }
    /// The config with these `[pricing]` overrides.
    pub fn with_pricing(mut self, pricing: BTreeMap<String, Price>) -> Self {
        self.pricing = pricing;
        self
    }
    /// The config with `[cache]` and the workspace a relative cache dir is under.
    pub fn with_cache(mut self, cache: CacheSettings, workspace: Option<PathBuf>) -> Self {
        self.cache = cache;
        self.workspace = workspace;
        self
    }
    /// Shares provider runtimes (rate limits, retry state) with other registries.
    pub fn with_shared_runtimes(mut self, shared: SharedRuntimes) -> Self {
        self.shared = Some(shared);
        self
    }
    /// The run's PII masker (`[privacy] mask_pii`): answers it finds personal data in are
    /// not cached.
    pub fn with_masker(mut self, masker: Arc<mixseek_core::PiiMasker>) -> Self {
        self.masker = Some(masker);
        self
    }
    /// The config reading API keys and base URLs from `env`.
    pub fn with_env(mut self, env: Env) -> Self {
        self.env = env;
        self
    }
    /// The config with one more call observer.
    pub fn with_observer(mut self, observer: Arc<dyn CallObserver>) -> Self {
        self.observers.push(observer);
        self
    }
}

/// Builds and hands out models. Cheap to share behind an `Arc`; models it returns stay valid
/// after it is dropped.
pub struct ModelRegistry {
    providers: BTreeMap<String, ProviderSettings>,
    prices: Arc<PriceTable>,
    cache: Option<Arc<ResponseCache>>,
    env: Env,
    http: reqwest::Client,
    observers: Arc<Observers>,
    runtimes: Mutex<HashMap<String, Arc<ProviderRuntime>>>,
    shared: Option<SharedRuntimes>,
}

impl std::fmt::Debug for ModelRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelRegistry")
            .field("providers", &self.known_providers())
            .finish_non_exhaustive()
    }
}

impl ModelRegistry {
    /// A registry from settings. Fails only when the HTTP client cannot be built or the
    /// cache directory cannot be created.
    pub fn new(config: RegistryConfig) -> Result<Self, LlmError> {
        // No overall timeout here: each call has its own time limit and each attempt its own
        // (see `ProviderSettings::attempt_timeout_seconds`); a connection that cannot be
        // opened within 10 s is a transient transport error, retried.
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .tcp_nodelay(true)
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| LlmError::config("", format!("cannot build the HTTP client: {e}")))?;
        let cache = if config.cache.enabled {
            let dir = PathBuf::from(&config.cache.dir);
            let dir = match (&config.workspace, dir.is_absolute()) {
                (Some(ws), false) => ws.join(dir),
                _ => dir,
            };
            let cache = ResponseCache::open(
                dir,
                std::time::Duration::from_secs(config.cache.ttl_seconds),
            )?;
            Some(Arc::new(match &config.masker {
                Some(m) => cache.with_masker(m.clone()),
                None => cache,
            }))
        } else {
            None
        };
        Ok(Self {
            providers: config.providers,
            prices: Arc::new(PriceTable::with_overrides(&config.pricing)),
            cache,
            env: config.env,
            http,
            observers: Arc::new(Observers {
                ledger: Arc::new(UsageLedger::new()),
                extra: config.observers,
            }),
            runtimes: Mutex::new(HashMap::new()),
            shared: config.shared,
        })
    }

    /// A registry with default settings, reading the process environment (for `mixseek llm`
    /// and tests of the `mock:` provider).
    pub fn with_defaults() -> Result<Self, LlmError> {
        Self::new(RegistryConfig::new().with_env(Env::process()))
    }

    /// Every provider prefix this registry accepts, sorted: the built-ins and the configured
    /// `[providers.<name>]`.
    pub fn known_providers(&self) -> Vec<String> {
        let mut v: Vec<String> = BUILTIN_PROVIDERS
            .iter()
            .map(|p| p.name.to_string())
            .collect();
        for name in self.providers.keys() {
            if !v.contains(name) {
                v.push(name.clone());
            }
        }
        v.sort();
        v
    }

    /// The model for `id` (`provider:model`), wrapped so every call is reported to the
    /// observers. Fails with a [`Config`](crate::ErrorKind::Config) error for a malformed
    /// id, an unknown or unsupported provider (the message lists the known ones), or a
    /// missing API key.
    pub fn model(&self, id: &str) -> Result<Arc<dyn ChatModel>, LlmError> {
        let inner = self.provider_model(id)?;
        Ok(Arc::new(ObservedModel::new(inner, self.observers.clone())))
    }

    /// The model for `id`, falling back to each of `fallbacks` in order when a call to the
    /// previous one fails (after its own retries). The response's `model` names the one
    /// that answered; `attempts` counts all of them.
    pub fn model_with_fallbacks(
        &self,
        id: &str,
        fallbacks: &[String],
    ) -> Result<Arc<dyn ChatModel>, LlmError> {
        if fallbacks.is_empty() {
            return self.model(id);
        }
        let mut chain = vec![self.provider_model(id)?];
        for f in fallbacks {
            chain.push(self.provider_model(f)?);
        }
        let inner: Arc<dyn ChatModel> = Arc::new(FallbackModel::new(id.trim().to_string(), chain));
        Ok(Arc::new(ObservedModel::new(inner, self.observers.clone())))
    }

    /// Checks that `id` would resolve (provider known and supported, API key present),
    /// without sending anything: for preflight.
    pub fn check_model(&self, id: &str) -> Result<(), LlmError> {
        self.provider_model(id).map(|_| ())
    }

    /// Whether the provider of `id` (`provider:model`) can run the provider-native `tool`,
    /// given its `[providers.<name>]` settings; `Err` says why not (see
    /// [`crate::providers::native_tool_support`]).
    pub fn native_tool_support(
        &self,
        id: &str,
        tool: &crate::types::NativeTool,
    ) -> Result<(), String> {
        let mid = ModelId::parse(id).map_err(|e| e.to_string())?;
        crate::providers::native_tool_support(
            &mid.provider,
            self.providers.get(&mid.provider),
            tool,
        )
    }

    /// The built-in usage ledger (every call of every model of this registry).
    pub fn ledger(&self) -> Arc<UsageLedger> {
        self.observers.ledger.clone()
    }

    /// Whether the response cache is on.
    pub fn cache_enabled(&self) -> bool {
        self.cache.is_some()
    }

    /// Cache hits and misses so far (zeros when the cache is off).
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.as_ref().map(|c| c.stats()).unwrap_or_default()
    }

    /// The price of a `provider:model`, if known.
    pub fn price(&self, id: &str) -> Option<Price> {
        self.prices.get(id).cloned()
    }

    fn provider_model(&self, id: &str) -> Result<Arc<dyn ChatModel>, LlmError> {
        let mid = ModelId::parse(id).map_err(|e| LlmError::config("", e.to_string()))?;
        let runtime = self.runtime(&mid.provider)?;
        Ok(Arc::new(ProviderModel::new(
            mid,
            runtime,
            self.prices.clone(),
            self.cache.clone(),
        )))
    }

    fn runtime(&self, provider: &str) -> Result<Arc<ProviderRuntime>, LlmError> {
        let mut guard = match self.runtimes.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if let Some(rt) = guard.get(provider) {
            return Ok(rt.clone());
        }
        let settings = self.providers.get(provider);
        if settings.is_none() && builtin_provider(provider).is_none() {
            let known = self.known_providers();
            let suggestion = mixseek_config::closest(provider, known.iter().map(String::as_str))
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            return Err(LlmError::config(
                provider,
                format!(
                    "unknown provider `{provider}`{suggestion}; known providers: {} (add a [providers.{provider}] table with kind and base_url for another server)",
                    known.join(", ")
                ),
            ));
        }
        let rt = match &self.shared {
            Some(shared) => {
                // Shared by name and settings (a variant's own provider settings get their
                // own runtime).
                let key = format!(
                    "{provider}\u{0}{}",
                    settings
                        .map(|s| serde_json::to_string(s).unwrap_or_default())
                        .unwrap_or_default()
                );
                let mut pool = shared.0.lock().unwrap_or_else(|p| p.into_inner());
                match pool.get(&key) {
                    Some(rt) => rt.clone(),
                    None => {
                        let rt = Arc::new(ProviderRuntime::build(
                            provider, settings, &self.env, &self.http,
                        )?);
                        pool.insert(key, rt.clone());
                        rt
                    }
                }
            }
            None => Arc::new(ProviderRuntime::build(
                provider, settings, &self.env, &self.http,
            )?),
        };
        guard.insert(provider.to_string(), rt.clone());
        Ok(rt)
    }
}
