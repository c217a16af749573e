//! Retries, timeouts, limits and model fallbacks: each path has a test that fails if it
//! breaks.

use super::*;
use mixseek_llm::{ChatModel, ChatRequest, ErrorKind};
use mixseek_testkit::Reply;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test]
async fn every_transient_status_is_retried_and_counted() {
    let fake = FakeLlm::openai().await;
    for status in [408, 500, 502, 503, 504, 529] {
        fake.push(Reply::status(status, "try again"));
    }
    fake.push(Reply::text("finally"));
    let reg = openai_registry(
        &fake,
        ProviderSettings {
            max_attempts: 7,
            ..fast()
        },
    );
    let r = reg
        .model("openai:gpt-4o")
        .expect("model")
        .chat(&ChatRequest::user("x"))
        .await
        .expect("answer");
    assert_eq!(r.text.as_deref(), Some("finally"));
    assert_eq!(r.attempts, 7);
    assert_eq!(fake.request_count(), 7);
}

#[tokio::test]
async fn retries_stop_after_max_attempts_with_the_last_error() {
    let fake = FakeLlm::openai().await;
    fake.set_default(Reply::status(503, "overloaded"));
    let reg = openai_registry(&fake, fast());
    let err = reg
        .model("openai:gpt-4o")
        .expect("model")
        .chat(&ChatRequest::user("x"))
        .await
        .expect_err("exhausted");
    assert_eq!(
        (err.kind, err.status, err.attempts),
        (ErrorKind::Server, Some(503), 6)
    );
    assert_eq!(fake.request_count(), 6, "default: 6 attempts");
    assert!(
        err.to_string().contains("overloaded") && err.to_string().contains("after 6 attempts"),
        "{err}"
    );
}

#[tokio::test]
async fn permanent_statuses_are_not_retried() {
    for status in [400, 401, 403, 404] {
        let fake = FakeLlm::openai().await;
        fake.set_default(Reply::status(status, "no"));
        let reg = openai_registry(&fake, fast());
        let err = reg
            .model("openai:gpt-4o")
            .expect("model")
            .chat(&ChatRequest::user("x"))
            .await
            .expect_err("permanent");
        assert_eq!(
            (err.kind, err.status, err.attempts),
            (ErrorKind::Permanent, Some(status), 1)
        );
        assert_eq!(fake.request_count(), 1, "status {status} must fail at once");
    }
}

#[tokio::test]
async fn rate_limit_retry_after_is_honoured() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::rate_limited("1"));
    fake.push(Reply::text("ok"));
    // Backoff alone would wait ~1 ms: the wait must come from Retry-After.
    let reg = openai_registry(&fake, fast());
    let started = Instant::now();
    let r = reg
        .model("openai:gpt-4o")
        .expect("model")
        .chat(&ChatRequest::user("x"))
        .await
        .expect("answer");
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "waited only {:?}",
        started.elapsed()
    );
    assert_eq!(r.attempts, 2);
}

#[tokio::test]
async fn retry_after_as_http_date_is_honoured() {
    let fake = FakeLlm::openai().await;
    let at = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(2));
    fake.push(Reply::rate_limited(&at));
    fake.push(Reply::text("ok"));
    let reg = openai_registry(&fake, fast());
    let started = Instant::now();
    reg.model("openai:gpt-4o")
        .expect("model")
        .chat(&ChatRequest::user("x"))
        .await
        .expect("answer");
    // HTTP dates have 1 s resolution: at least ~1 s must have been waited.
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "waited only {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn retry_after_beyond_the_time_limit_fails_at_once() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::rate_limited("120"));
    let reg = openai_registry(&fake, fast());
    let err = reg
        .model("openai:gpt-4o")
        .expect("model")
        .chat(&ChatRequest::user("x").with_timeout(Duration::from_secs(5)))
        .await
        .expect_err("no time");
    // Failing at once, not after waiting: the error says there was no time to retry.
    assert!(err.message.contains("no time left to retry"), "{err}");
    assert_eq!(err.kind, ErrorKind::RateLimited);
    assert_eq!(err.retry_after, Some(Duration::from_secs(120)));
    assert_eq!(fake.request_count(), 1);
}

#[tokio::test]
async fn absurd_retry_hints_fail_at_once_naming_the_wait_instead_of_panicking() {
    for (header, value) in [
        ("retry-after-ms", "1e30"),
        ("retry-after", "1e30"),
        ("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT"),
    ] {
        let fake = FakeLlm::openai().await;
        fake.push(Reply::Error {
            status: 429,
            message: "slow down".into(),
            headers: vec![(header.into(), value.into())],
        });
        let reg = openai_registry(&fake, fast());
        let err = reg
            .model("openai:gpt-4o")
            .expect("model")
            .chat(&ChatRequest::user("x").with_timeout(Duration::from_secs(60)))
            .await
            .expect_err("no time");
        assert_eq!(err.kind, ErrorKind::RateLimited, "{header}: {value}");
        assert_eq!(
            err.retry_after,
            Some(mixseek_llm::MAX_SERVER_WAIT),
            "{header}: {value}"
        );
        assert!(
            err.message
                .contains("the server asked to wait 3600 s or more")
                && err.message.contains("no time left to retry"),
            "{err}"
        );
        assert_eq!(fake.request_count(), 1);
    }
}

#[tokio::test]
async fn invalid_retry_hints_are_ignored_and_the_backoff_applies() {
    let fake = FakeLlm::openai().await;
    for value in ["NaN", "-1", "inf", ""] {
        fake.push(Reply::Error {
            status: 429,
            message: "slow down".into(),
            headers: vec![("retry-after-ms".into(), value.into())],
        });
    }
    fake.push(Reply::text("ok"));
    let reg = openai_registry(&fake, fast());
    let r = reg
        .model("openai:gpt-4o")
        .expect("model")
        .chat(&ChatRequest::user("x"))
        .await
        .expect("answer after the backoff");
    assert_eq!((r.attempts, fake.request_count()), (5, 5));
}

#[tokio::test]
async fn a_hanging_server_times_out_within_the_call_limit() {
    let fake = FakeLlm::openai().await;
    fake.set_default(Reply::hang());
    let reg = openai_registry(&fake, fast());
    let err = reg
        .model("openai:gpt-4o")
        .expect("model")
        .chat(&ChatRequest::user("x").with_timeout(Duration::from_millis(300)))
        .await
        .expect_err("timeout");
    assert_eq!(err.kind, ErrorKind::Timeout);
    assert!(
        err.to_string().contains("call's time limit of 0.3 s"),
        "{err}"
    );
    // Each attempt gets half the call's limit by default: the hung first attempt was
    // abandoned and retried before the call ran out of time.
    assert!(err.attempts >= 2, "{err:?}");
    assert!(fake.request_count() >= 2);
}

#[tokio::test]
async fn a_hung_attempt_is_abandoned_and_retried() {
    let fake = FakeLlm::openai().await;
    fake.script([Reply::hang(), Reply::text("ok")]);
    let reg = openai_registry(
        &fake,
        ProviderSettings {
            attempt_timeout_seconds: Some(0.2),
            ..fast()
        },
    );
    let r = reg
        .model("openai:gpt-4o")
        .expect("model")
        .chat(&ChatRequest::user("x"))
        .await
        .expect("the second attempt answers");
    assert_eq!(r.text.as_deref(), Some("ok"));
    assert_eq!(r.attempts, 2);
    assert_eq!(fake.request_count(), 2);
}

#[tokio::test]
async fn hung_attempts_use_up_max_attempts_with_a_timeout_error() {
    let fake = FakeLlm::openai().await;
    fake.set_default(Reply::hang());
    let reg = openai_registry(
        &fake,
        ProviderSettings {
            attempt_timeout_seconds: Some(0.1),
            max_attempts: 3,
            ..fast()
        },
    );
    let err = reg
        .model("openai:gpt-4o")
        .expect("model")
        .chat(&ChatRequest::user("x"))
        .await
        .expect_err("every attempt hangs");
    assert_eq!((err.kind, err.attempts), (ErrorKind::Timeout, 3));
    assert!(
        err.message.contains("attempt's time limit of 0.1 s"),
        "{err}"
    );
    assert_eq!(fake.request_count(), 3);
}

#[tokio::test]
async fn a_zero_retry_after_still_backs_off() {
    let fake = FakeLlm::openai().await;
    fake.script([
        Reply::rate_limited("0"),
        Reply::rate_limited("0"),
        Reply::text("ok"),
    ]);
    // Backoff 0.2 s then 0.4 s (at least): a `Retry-After: 0` must not shorten it.
    let reg = openai_registry(
        &fake,
        ProviderSettings {
            backoff_initial_seconds: 0.2,
            backoff_max_seconds: 10.0,
            ..fast()
        },
    );
    let started = Instant::now();
    let r = reg
        .model("openai:gpt-4o")
        .expect("model")
        .chat(&ChatRequest::user("x"))
        .await
        .expect("answer");
    assert_eq!(r.attempts, 3);
    assert!(
        started.elapsed() >= Duration::from_millis(600),
        "waited only {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_slow_answer_then_success_within_the_limit() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::delayed(
        Duration::from_millis(50),
        Reply::text("slow but fine"),
    ));
    let reg = openai_registry(&fake, fast());
    let r = reg
        .model("openai:gpt-4o")
        .expect("model")
        .chat(&ChatRequest::user("x").with_timeout(Duration::from_secs(5)))
        .await
        .expect("ok");
    assert_eq!(r.text.as_deref(), Some("slow but fine"));
}

/// A port nobody listens on.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

#[tokio::test]
async fn a_server_down_from_the_start_is_reported_at_once_with_what_to_do() {
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let reg = registry(
        vec![(
            "local",
            ProviderSettings {
                base_url: Some(url.clone()),
                // the default backoff: without the fast path these attempts would take ~15 s
                max_attempts: 6,
                ..ProviderSettings::default()
            },
        )],
        &[],
    );
    let model = reg.model("local:m").expect("model");
    let err = model
        .chat(&ChatRequest::user("x"))
        .await
        .expect_err("refused");
    // still a transport error (a fallback model may take over), with what to do
    assert_eq!(err.kind, ErrorKind::Transport);
    assert!(
        err.attempts >= 2,
        "a short grace for a starting server: {err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains(&format!(
            "nothing is listening at {url} (connection refused)"
        )) && msg.contains("[providers.local] base_url")
            && msg.contains("llama-server"),
        "{msg}"
    );
    // the provider is known to be down: the next call fails at its first attempt
    let err = model
        .chat(&ChatRequest::user("y"))
        .await
        .expect_err("still refused");
    assert_eq!(err.attempts, 1, "{err}");
    assert!(err.message.contains("nothing is listening"), "{err}");
}

#[tokio::test]
async fn a_server_that_goes_away_after_answering_is_retried_as_before() {
    // A server that answers one request, closes the connection and stops listening.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let served = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut s, _) = listener.accept().await.expect("accept");
        let mut buf = vec![0u8; 64 * 1024];
        let _ = s.read(&mut buf).await;
        let body = r#"{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}"#;
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).await.expect("write");
        s.write_all(body.as_bytes()).await.expect("write");
        // the listener is dropped here: nothing listens any more
    });
    let reg = registry(
        vec![(
            "local",
            ProviderSettings {
                base_url: Some(url),
                max_attempts: 3,
                ..fast()
            },
        )],
        &[],
    );
    let model = reg.model("local:m").expect("model");
    let r = model
        .chat(&ChatRequest::user("x"))
        .await
        .expect("the server answers");
    assert_eq!(r.text.as_deref(), Some("hello"));
    served.await.expect("served");
    let err = model.chat(&ChatRequest::user("x")).await.expect_err("gone");
    assert_eq!((err.kind, err.attempts), (ErrorKind::Transport, 3));
    let msg = err.to_string();
    assert!(
        msg.contains("error sending request") && !msg.contains("nothing is listening"),
        "{msg}"
    );
}

#[tokio::test]
async fn a_single_attempt_setting_is_kept_for_a_server_that_is_down() {
    let url = format!("http://127.0.0.1:{}/v1", closed_port());
    let reg = registry(
        vec![(
            "local",
            ProviderSettings {
                base_url: Some(url),
                max_attempts: 1,
                ..fast()
            },
        )],
        &[],
    );
    let err = reg
        .model("local:m")
        .expect("model")
        .chat(&ChatRequest::user("x"))
        .await
        .expect_err("refused");
    assert_eq!(err.attempts, 1, "{err}");
    assert!(err.message.contains("nothing is listening"), "{err}");
}

#[tokio::test]
async fn a_malformed_body_is_a_parse_error() {
    let fake = FakeLlm::openai().await;
    fake.push(Reply::malformed());
    let reg = openai_registry(&fake, fast());
    let err = reg
        .model("openai:gpt-4o")
        .expect("model")
        .chat(&ChatRequest::user("x"))
        .await
        .expect_err("parse");
    assert_eq!(err.kind, ErrorKind::Parse);
    assert!(err.message.contains("not JSON"), "{err}");
}

#[tokio::test]
async fn fallback_models_are_tried_in_order_and_attempts_add_up() {
    let primary = FakeLlm::openai().await;
    primary.set_default(Reply::status(500, "down"));
    let second = FakeLlm::anthropic().await;
    second.set_default(Reply::status(404, "model not found"));
    let third = FakeLlm::openai().await;
    third.push(Reply::text("from the third"));
    let reg = registry(
        vec![
            (
                "openai",
                ProviderSettings {
                    max_attempts: 2,
                    ..fast()
                },
            ),
            (
                "anthropic",
                ProviderSettings {
                    base_url: Some(second.base_url()),
                    ..fast()
                },
            ),
            (
                "backup",
                ProviderSettings {
                    base_url: Some(third.base_url()),
                    ..fast()
                },
            ),
        ],
        &[
            ("OPENAI_API_KEY", OPENAI_KEY),
            ("OPENAI_BASE_URL", primary.base_url().as_str()),
            ("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
        ],
    );
    let model = reg
        .model_with_fallbacks(
            "openai:gpt-4o",
            &[
                "anthropic:claude-haiku-4-5".to_string(),
                "backup:small".to_string(),
            ],
        )
        .expect("chain");
    assert_eq!(model.id(), "openai:gpt-4o");
    let r = model.chat(&ChatRequest::user("x")).await.expect("answer");
    assert_eq!(r.text.as_deref(), Some("from the third"));
    assert_eq!(r.model, "backup:small");
    assert_eq!(r.attempts, 2 + 1 + 1);
    assert_eq!(
        (
            primary.request_count(),
            second.request_count(),
            third.request_count()
        ),
        (2, 1, 1)
    );
    // The call is booked once, under the requested id, with every attempt.
    let e = reg.ledger().entry(None, None, None, None);
    assert_eq!((e.calls, e.attempts, e.failed_calls), (1, 4, 0));
}

#[tokio::test]
async fn when_every_fallback_fails_the_last_error_is_returned_with_all_attempts() {
    let a = FakeLlm::openai().await;
    a.set_default(Reply::status(400, "bad request"));
    let b = FakeLlm::openai().await;
    b.set_default(Reply::status(401, "bad key"));
    let reg = registry(
        vec![
            (
                "a",
                ProviderSettings {
                    base_url: Some(a.base_url()),
                    ..fast()
                },
            ),
            (
                "b",
                ProviderSettings {
                    base_url: Some(b.base_url()),
                    ..fast()
                },
            ),
        ],
        &[],
    );
    let err = reg
        .model_with_fallbacks("a:m", &["b:m".to_string()])
        .expect("chain")
        .chat(&ChatRequest::user("x"))
        .await
        .expect_err("all fail");
    assert_eq!(
        (err.status, err.attempts, err.provider.as_str()),
        (Some(401), 2, "b")
    );
    assert_eq!(reg.ledger().entry(None, None, None, None).failed_calls, 1);
}

#[tokio::test]
async fn in_flight_requests_are_limited_per_provider() {
    let fake = FakeLlm::openai().await;
    fake.set_default(Reply::delayed(Duration::from_millis(60), Reply::text("ok")));
    let reg = openai_registry(
        &fake,
        ProviderSettings {
            max_in_flight: 2,
            ..fast()
        },
    );
    let model = reg.model("openai:gpt-4o").expect("model");
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let m: Arc<dyn ChatModel> = model.clone();
        tasks.push(tokio::spawn(async move {
            m.chat(&ChatRequest::user("x")).await
        }));
    }
    for t in tasks {
        t.await.expect("join").expect("answer");
    }
    assert_eq!(fake.request_count(), 8);
    assert_eq!(fake.max_concurrent(), 2);
}

#[tokio::test]
async fn default_limits_let_many_calls_run_at_once() {
    let fake = FakeLlm::openai().await;
    fake.set_default(Reply::delayed(
        Duration::from_millis(100),
        Reply::text("ok"),
    ));
    let reg = openai_registry(&fake, fast());
    let model = reg.model("openai:gpt-4o").expect("model");
    let mut tasks = Vec::new();
    for _ in 0..40 {
        let m = model.clone();
        tasks.push(tokio::spawn(async move {
            m.chat(&ChatRequest::user("x")).await
        }));
    }
    for t in tasks {
        t.await.expect("join").expect("answer");
    }
    assert!(
        fake.max_concurrent() >= 32,
        "only {} in flight",
        fake.max_concurrent()
    );
}

#[tokio::test(start_paused = true)]
async fn output_tokens_count_against_the_tokens_per_minute_budget() {
    use mixseek_llm::estimate_tokens;
    use tokio::time::Instant as TokioInstant;
    // 10 tokens a minute: one token "costs" 6 s, a minute's worth may burst.
    let reg = registry(
        vec![(
            "mock",
            ProviderSettings {
                tokens_per_minute: Some(10),
                ..ProviderSettings::default()
            },
        )],
        &[],
    );
    let model = reg.model("mock:default").expect("model");
    let req = ChatRequest::user("x");
    let input = estimate_tokens(&req);
    let t0 = TokioInstant::now();
    let first = model.chat(&req).await.expect("answer");
    assert_eq!(TokioInstant::now(), t0, "the first call fits in the burst");
    // No max_tokens was reserved: the answer's output tokens are charged afterwards.
    let output = first.usage.output_tokens.min(10);
    assert!(
        2 * input + output > 10,
        "precondition: input {input}, output {output}"
    );
    model.chat(&req).await.expect("answer");
    assert_eq!(
        TokioInstant::now() - t0,
        Duration::from_secs(6 * (2 * input + output - 10)),
        "the second call waits for the first call's output tokens too"
    );
}
