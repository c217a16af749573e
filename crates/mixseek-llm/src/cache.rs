//! The opt-in response cache: one JSON file per request key under a directory of the
//! workspace, valid for a TTL. The key is a SHA-256 of everything that shapes the answer
//! (provider, base URL, model, system, messages, tools, schema, params and the caller's
//! repeat index); API keys are not part of it and never written. Errors are never cached.

use crate::error::LlmError;
use crate::types::{ChatRequest, ChatResponse};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Hit and miss counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
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
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl ResponseCache {
    /// Opens (creating) the cache directory.
    pub fn open(dir: PathBuf, ttl: Duration) -> Result<Self, LlmError> {
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
        })
    }

    /// The key of a request to `provider` at `base_url` for `model`.
    pub fn key(provider: &str, base_url: &str, model: &str, request: &ChatRequest) -> String {
        let mut h = Sha256::new();
        for part in [provider, base_url, model] {
            h.update(part.as_bytes());
            h.update([0u8]);
        }
        // The request serialises without timeout and caller; the repeat index is added.
        h.update(serde_json::to_vec(request).unwrap_or_default());
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
    pub async fn get(&self, key: &str) -> Option<ChatResponse> {
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
    pub async fn put(&self, key: &str, response: &ChatResponse) {
        let path = self.path(key);
        let entry = Entry {
            stored_at: now_secs(),
            response: response.clone(),
        };
        let Ok(bytes) = serde_json::to_vec(&entry) else {
            return;
        };
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

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
        }
    }
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
