//! The response cache and the call observers / usage ledger.

use super::*;
use mixseek_config::CacheSettings;
use mixseek_core::{LlmCallRecord, Role};
use mixseek_llm::{CallObserver, CallerTag, ChatRequest};
use mixseek_testkit::Reply;
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Collect(Mutex<Vec<LlmCallRecord>>);

impl CallObserver for Collect {
    fn on_call(&self, record: &LlmCallRecord) {
        self.0.lock().expect("lock").push(record.clone());
    }
}

fn cached_registry(fake: &FakeLlm, dir: &std::path::Path) -> ModelRegistry {
    let url = fake.base_url();
    let providers = [("openai".to_string(), fast())].into_iter().collect();
    ModelRegistry::new(
        RegistryConfig::new()
            .with_providers(providers)
            .with_cache(
                CacheSettings {
                    enabled: true,
                    ..CacheSettings::default()
                },
                Some(dir.to_path_buf()),
            )
            .with_env(Env::from_map([
                ("OPENAI_API_KEY", OPENAI_KEY),
                ("OPENAI_BASE_URL", url.as_str()),
            ])),
    )
    .expect("registry")
}

#[tokio::test]
async fn identical_requests_hit_the_cache_and_repeats_do_not() {
    let fake = FakeLlm::openai().await;
    let dir = tempfile::tempdir().expect("tmp");
    let reg = cached_registry(&fake, dir.path());
    let model = reg.model("openai:gpt-4o").expect("model");
    let req = ChatRequest::user("same question");
    let first = model.chat(&req).await.expect("ok");
    let second = model.chat(&req).await.expect("ok");
    assert_eq!(fake.request_count(), 1);
    assert!(!first.cache_hit && second.cache_hit);
    assert_eq!(second.text, first.text);
    assert_eq!(
        (
            second.attempts,
            second.usage.requests,
            second.usage.cost_usd
        ),
        (0, 0, 0.0)
    );
    // Another repeat index is another sample: not from the cache.
    model
        .chat(&req.clone().with_caller(CallerTag::default().with_repeat(1)))
        .await
        .expect("ok");
    assert_eq!(fake.request_count(), 2);
    let stats = reg.cache_stats();
    assert_eq!((stats.hits, stats.misses, stats.writes), (1, 2, 2));
    // Entries live under the workspace's cache dir and hold no key.
    let mut files = Vec::new();
    for sub in std::fs::read_dir(dir.path().join(".cache/llm")).expect("dir") {
        for f in std::fs::read_dir(sub.expect("entry").path()).expect("sub") {
            files.push(std::fs::read_to_string(f.expect("file").path()).expect("read"));
        }
    }
    assert_eq!(files.len(), 2);
    assert!(files.iter().all(|f| !f.contains(OPENAI_KEY)));
    // A new registry (a later run) reads the same cache.
    let reg2 = cached_registry(&fake, dir.path());
    assert!(
        reg2.model("openai:gpt-4o")
            .expect("model")
            .chat(&req)
            .await
            .expect("ok")
            .cache_hit
    );
    assert_eq!(fake.request_count(), 2);
}

#[tokio::test]
async fn errors_are_never_cached() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::status(400, "bad"));
    fake.push(Reply::text("good"));
    let dir = tempfile::tempdir().expect("tmp");
    let reg = cached_registry(&fake, dir.path());
    let model = reg.model("openai:gpt-4o").expect("model");
    let req = ChatRequest::user("q");
    assert!(model.chat(&req).await.is_err());
    let ok = model.chat(&req).await.expect("ok");
    assert_eq!((ok.text.as_deref(), ok.cache_hit), (Some("good"), false));
    assert_eq!(fake.request_count(), 2);
}

#[tokio::test]
async fn every_call_is_reported_once_and_booked_by_caller() {
    let fake = FakeLlm::openai().await;
    fake.script([
        Reply::text("a"),
        Reply::status(503, "x"),
        Reply::text("b"),
        Reply::status(404, "gone"),
    ]);
    let collect = Arc::new(Collect::default());
    let url = fake.base_url();
    let providers = [("openai".to_string(), fast())].into_iter().collect();
    let reg = ModelRegistry::new(
        RegistryConfig::new()
            .with_providers(providers)
            .with_env(Env::from_map([
                ("OPENAI_API_KEY", OPENAI_KEY),
                ("OPENAI_BASE_URL", url.as_str()),
            ]))
            .with_observer(collect.clone()),
    )
    .expect("registry");
    let model = reg.model("openai:gpt-4o").expect("model");
    model
        .chat(&ChatRequest::user("1").with_caller(CallerTag::run("exec", "alpha", 1, Role::Leader)))
        .await
        .expect("ok");
    model
        .chat(&ChatRequest::user("2").with_caller(CallerTag::run(
            "exec",
            "alpha",
            1,
            Role::Judgment,
        )))
        .await
        .expect("ok");
    model
        .chat(&ChatRequest::user("3").with_caller(CallerTag::run("exec", "beta", 2, Role::Member)))
        .await
        .expect_err("404");

    let records = collect.0.lock().expect("lock").clone();
    assert_eq!(records.len(), 3);
    assert_eq!(
        (
            records[0].team_id.as_deref(),
            records[0].role,
            records[0].attempts
        ),
        (Some("alpha"), Role::Leader, 1)
    );
    assert_eq!(records[1].attempts, 2);
    assert_eq!(records[0].model, "openai:gpt-4o");
    assert!(
        records[2]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("404"))
    );
    assert_eq!(records[2].usage.requests, 0);

    let ledger = reg.ledger();
    let alpha = ledger.usage_by_role(Some("exec"), Some("alpha"), Some(1));
    assert_eq!(
        alpha.0[&Role::Leader].input_tokens,
        mixseek_testkit::USAGE_INPUT
    );
    assert_eq!(alpha.0[&Role::Judgment].requests, 1);
    let beta = ledger.entry(Some("exec"), Some("beta"), None, None);
    assert_eq!(
        (beta.calls, beta.failed_calls, beta.usage.requests),
        (1, 1, 0)
    );
    assert_eq!(ledger.total().requests, 2);
}
