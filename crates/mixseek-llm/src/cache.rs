//! The opt-in response cache: one JSON file per request key under a directory of the
//! workspace, valid for a TTL. The key is a SHA-256 of everything that shapes the answer
//! (provider, base URL, model, system, messages, tools, schema, params and the caller's
//! repeat index); API keys are not part of it and never written. Errors are never cached.
//! The parts of the rendered prompt a request marks as volatile (`ChatRequest::cache_volatile`:
//! the rendered `current_datetime`) are masked in the key, so a rerun hits although the clock
//! moved on. With `[privacy] mask_pii` on, an answer that holds personal data is not cached
//! (the cache keeps answers verbatim, and a masked answer would replay differently).

use crate::error::LlmError;
use crate::types::{ChatRequest, ChatResponse};
use mixseek_core::PiiMasker;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Hit and miss counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheStats {
    /// Requests answered from the cache.
    pub hits: u64,
    /// Requests the cache could not answer.
    pub misses: u64,
    /// Answers stored.
    pub writes: u64,
}

impl CacheStats {
    /// `"N hits, M misses"` (singular for one).
    pub fn summary(&self) -> String {
        let plural =
            |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        format!(
            "{}, {}",
            plural(self.hits, "hit", "hits"),
            plural(self.misses, "miss", "misses")
        )
    }
}

/// Hits, misses and writes of every cache of this process (the `exec` summary line).
static PROCESS_HITS: AtomicU64 = AtomicU64::new(0);
static PROCESS_MISSES: AtomicU64 = AtomicU64::new(0);
static PROCESS_WRITES: AtomicU64 = AtomicU64::new(0);

/// The hits, misses and writes of all response caches of this process so far.
pub fn process_stats() -> CacheStats {
    CacheStats {
        hits: PROCESS_HITS.load(Ordering::Relaxed),
        misses: PROCESS_MISSES.load(Ordering::Relaxed),
        writes: PROCESS_WRITES.load(Ordering::Relaxed),
    }
}

#[derive(Serialize, Deserialize)]
struct Entry {
    stored_at: u64,
    response: ChatResponse,
}

/// A directory of cached responses.
#[derive(Debug)]
pub struct ResponseCache {
    dir: PathBuf,
    ttl: Duration,
    hits: AtomicU64,
    misses: AtomicU64,
    writes: AtomicU64,
    /// An answer in which it finds personal data is not written.
    masker: Arc<PiiMasker>,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl ResponseCache {
    /// Opens (creating) the cache directory.
    pub(crate) fn open(dir: PathBuf, ttl: Duration) -> Result<Self, LlmError> {
        std::fs::create_dir_all(&dir).map_err(|e| {
            LlmError::config(
                "",
                format!(
                    "cannot create the LLM cache directory {}: {e}",
                    dir.display()
                ),
            )
        })?;
        Ok(Self {
            dir,
            ttl,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            masker: Arc::new(PiiMasker::disabled()),
        })
    }

    /// Leaves out of the cache every answer in which `masker` finds personal data.
    pub(crate) fn with_masker(mut self, masker: Arc<PiiMasker>) -> Self {
        self.masker = masker;
        self
    }

    /// The key of a request to `provider` at `base_url` for `model`.
    pub fn key(provider: &str, base_url: &str, model: &str, request: &ChatRequest) -> String {
        let mut h = Sha256::new();
        for part in [provider, base_url, model] {
            h.update(part.as_bytes());
            h.update([0u8]);
        }
        // The request serialises without timeout and caller; the repeat index is added.
        h.update(serde_json::to_vec(&*keyed(request)).unwrap_or_default());
        h.update([0u8]);
        h.update(request.caller.repeat.to_le_bytes());
        let digest = h.finalize();
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir
            .join(&key[..2.min(key.len())])
            .join(format!("{key}.json"))
    }

    /// The cached response for `key`, if present and fresh (counts a hit or a miss).
    pub(crate) async fn get(&self, key: &str) -> Option<ChatResponse> {
        let found = match tokio::fs::read(self.path(key)).await {
            Ok(bytes) => serde_json::from_slice::<Entry>(&bytes)
                .ok()
                .filter(|e| now_secs().saturating_sub(e.stored_at) <= self.ttl.as_secs()),
            Err(_) => None,
        };
        match found {
            Some(e) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                PROCESS_HITS.fetch_add(1, Ordering::Relaxed);
                Some(e.response)
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                PROCESS_MISSES.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Stores a successful response (a failed write is logged, not an error of the call).
    pub(crate) async fn put(&self, key: &str, response: &ChatResponse) {
        let path = self.path(key);
        let entry = Entry {
            stored_at: now_secs(),
            response: response.clone(),
        };
        let Ok(bytes) = serde_json::to_vec(&entry) else {
            return;
        };
        if self.masker.is_enabled()
            && std::str::from_utf8(&bytes).map_or(true, |text| {
                matches!(self.masker.mask(text), std::borrow::Cow::Owned(_))
            })
        {
            tracing::debug!("answer not cached: it holds personal data ([privacy] mask_pii)");
            return;
        }
        if let Some(parent) = path.parent()
            && let Err(e) = tokio::fs::create_dir_all(parent).await
        {
            tracing::warn!(error = %e, "cannot write the LLM cache");
            return;
        }
        // Write to a temporary file and rename, so a reader never sees half an entry.
        let tmp = path.with_extension(format!("tmp{}", fastrand::u64(..)));
        let res = match tokio::fs::write(&tmp, &bytes).await {
            Ok(()) => tokio::fs::rename(&tmp, &path).await,
            Err(e) => Err(e),
        };
        match res {
            Ok(()) => {
                self.writes.fetch_add(1, Ordering::Relaxed);
                PROCESS_WRITES.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                let _ = tokio::fs::remove_file(&tmp).await;
                tracing::warn!(error = %e, "cannot write the LLM cache");
            }
        }
    }

    pub(crate) fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
        }
    }
}

/// The request the key is computed from: `request` itself, or, when it marks volatile parts,
/// a copy in which they are replaced by a placeholder in the parts mixseek rendered (the
/// system prompt and the first user message). Model output that quotes them (tool-call
/// arguments, later turns) stays as it is: on a rerun it comes from the cache unchanged.
fn keyed(request: &ChatRequest) -> std::borrow::Cow<'_, ChatRequest> {
    let parts: Vec<&str> = request
        .cache_volatile
        .iter()
        .map(String::as_str)
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty() {
        return std::borrow::Cow::Borrowed(request);
    }
    let mask = |text: &mut String| {
        for part in &parts {
            if text.contains(part) {
                *text = text.replace(part, "\u{0}volatile\u{0}");
            }
        }
    };
    let mut copy = request.clone();
    if let Some(system) = copy.system.as_mut() {
        mask(system);
    }
    if let Some(crate::Message::User { content }) = copy.messages.first_mut() {
        mask(content);
    }
    std::borrow::Cow::Owned(copy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{CallerTag, FinishReason};

    fn response() -> ChatResponse {
        ChatResponse {
            text: Some("hi".into()),
            tool_calls: vec![],
            usage: mixseek_core::Usage {
                requests: 1,
                input_tokens: 3,
                ..Default::default()
            },
            finish_reason: FinishReason::Stop,
            latency: Duration::from_millis(5),
            attempts: 1,
            model: "mock:x".into(),
            cache_hit: false,
        }
    }

    #[tokio::test]
    async fn with_masking_on_an_answer_holding_personal_data_is_not_cached() {
        let dir = tempfile::tempdir().expect("tempdir");
        let masker = PiiMasker::new(&mixseek_core::MaskingSpec {
            mask_pii: true,
            ..Default::default()
        })
        .expect("masker");
        let cache = ResponseCache::open(dir.path().to_path_buf(), Duration::from_secs(60))
            .expect("cache")
            .with_masker(Arc::new(masker));
        let mut personal = response();
        personal.text = Some("write to taro.yamada@example.co.jp".into());
        cache.put("aa01", &personal).await;
        cache.put("bb02", &response()).await;
        assert!(cache.get("aa01").await.is_none(), "personal answer cached");
        assert_eq!(
            cache.get("bb02").await.map(|r| r.text),
            Some(Some("hi".into()))
        );
        assert_eq!(cache.stats().writes, 1);
        // Nothing of the personal answer reached the directory.
        let mut stack = vec![dir.path().to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).expect("read dir").flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    let text = std::fs::read_to_string(&p).expect("entry");
                    assert!(!text.contains("taro.yamada"), "{}", p.display());
                }
            }
        }
    }

    #[test]
    fn key_depends_on_content_and_repeat_but_not_on_the_rest_of_the_caller() {
        let r = ChatRequest::user("hello");
        let k = ResponseCache::key("openai", "http://a", "gpt", &r);
        assert_eq!(
            k,
            ResponseCache::key(
                "openai",
                "http://a",
                "gpt",
                &r.clone()
                    .with_caller(CallerTag::run("e", "t", 3, mixseek_core::Role::Leader))
            )
        );
        assert_ne!(
            k,
            ResponseCache::key(
                "openai",
                "http://a",
                "gpt",
                &r.clone().with_caller(CallerTag::default().with_repeat(1))
            )
        );
        assert_ne!(k, ResponseCache::key("openai", "http://b", "gpt", &r));
        assert_ne!(k, ResponseCache::key("openai", "http://a", "gpt2", &r));
        assert_ne!(
            k,
            ResponseCache::key("openai", "http://a", "gpt", &ChatRequest::user("hello!"))
        );
        let mut p = r.clone();
        p.params.temperature = Some(0.5);
        assert_ne!(k, ResponseCache::key("openai", "http://a", "gpt", &p));
    }

    #[test]
    fn volatile_parts_are_left_out_of_the_key_and_nothing_else_is() {
        let at = |when: &str| {
            ChatRequest::user(format!("現在日時: {when}\nWrite a haiku"))
                .with_cache_volatile(vec![when.to_string()])
        };
        let monday = at("2026-11-23T21:03:45.938622+00:00");
        let tuesday = at("2026-11-24T08:00:00+09:00");
        let key = |r: &ChatRequest| ResponseCache::key("openai", "http://a", "gpt", r);
        assert_eq!(key(&monday), key(&tuesday));
        // Without the marking the two differ, and the question itself still counts.
        let mut unmarked = monday.clone();
        unmarked.cache_volatile.clear();
        assert_ne!(key(&unmarked), key(&monday));
        let other_question =
            ChatRequest::user("現在日時: 2026-11-23T21:03:45.938622+00:00\nWrite a poem")
                .with_cache_volatile(vec!["2026-11-23T21:03:45.938622+00:00".into()]);
        assert_ne!(key(&other_question), key(&monday));
        // Only the rendered parts are masked: the same text in a later turn (model output
        // quoting the prompt) still counts.
        let mut quoted = monday.clone();
        quoted.messages.push(crate::Message::assistant(
            "It is 2026-11-23T21:03:45.938622+00:00",
        ));
        let mut quoted_later = tuesday.clone();
        quoted_later
            .messages
            .push(crate::Message::assistant("It is 2026-11-24T08:00:00+09:00"));
        assert_ne!(key(&quoted), key(&quoted_later));
        // The system prompt is rendered too.
        let sys = |when: &str| {
            ChatRequest::user("q")
                .with_system(format!("now: {when}"))
                .with_cache_volatile(vec![when.to_string()])
        };
        assert_eq!(key(&sys("a1")), key(&sys("b2")));
    }

    #[tokio::test]
    async fn stores_reads_and_expires() {
        let dir = tempfile::tempdir().expect("tmp");
        let c = ResponseCache::open(dir.path().join("c"), Duration::from_secs(60)).expect("open");
        assert!(c.get("abcd").await.is_none());
        c.put("abcd", &response()).await;
        assert_eq!(
            c.get("abcd").await.map(|r| r.text),
            Some(Some("hi".to_string()))
        );
        assert_eq!(
            c.stats(),
            CacheStats {
                hits: 1,
                misses: 1,
                writes: 1
            }
        );
        assert!(process_stats().hits >= 1 && process_stats().misses >= 1);
        assert_eq!(c.stats().summary(), "1 hit, 1 miss");
        assert_eq!(
            CacheStats {
                hits: 0,
                misses: 3,
                writes: 0
            }
            .summary(),
            "0 hits, 3 misses"
        );
        // An entry older than the TTL is a miss.
        let old = Entry {
            stored_at: now_secs() - 120,
            response: response(),
        };
        std::fs::write(c.path("abcd"), serde_json::to_vec(&old).expect("json")).expect("write");
        assert!(c.get("abcd").await.is_none());
    }
}
