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

#[tokio::test]
async fn connection_failures_are_transient() {
    // A port nobody listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let url = format!("http://127.0.0.1:{port}/v1");
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
    let err = reg
        .model("local:m")
        .expect("model")
        .chat(&ChatRequest::user("x"))
        .await
        .expect_err("refused");
    assert_eq!((err.kind, err.attempts), (ErrorKind::Transport, 3));
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("127.0.0.1:{port}/v1")) && msg.contains("error sending request"),
        "{msg}"
    );
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
