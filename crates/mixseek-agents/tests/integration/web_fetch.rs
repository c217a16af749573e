//! `web_fetch`: the fetcher against a local HTTP server (refusals with the private-network
//! flag off, limits with it on) and the member's `fetch_url` loop against a fake LLM.

use crate::common;

use common::{ctx, deps, messages, registry};
use mixseek_agents::FINAL_ANSWER_REQUEST;
use mixseek_agents::build_member;
use mixseek_agents::{FetchError, FetchSettings, fetch};
use mixseek_config::MemberSettings;
use mixseek_core::MemberStatus;
use mixseek_testkit::{FakeLlm, HttpResponse, HttpServer, Reply, Wire};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const PAGE: &str = "<html><head><title>Chip News</title><script>alert(1)</script></head><body><h1>Fab output</h1><p>Output rose 5&percnt; &amp; prices fell.</p></body></html>";

/// A Japanese news page encoded in Shift_JIS (bytes written out: no encoder needed), with
/// its charset declared in a `<meta>` tag when `meta`.
fn shift_jis_page(meta: bool) -> Vec<u8> {
    let mut page = b"<html><head>".to_vec();
    if meta {
        page.extend_from_slice(
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\">",
        );
    }
    page.extend_from_slice(b"<title>");
    // 「半導体ニュース」
    page.extend_from_slice(&[
        0x94, 0xbc, 0x93, 0xb1, 0x91, 0xcc, 0x83, 0x6a, 0x83, 0x85, 0x81, 0x5b, 0x83, 0x58,
    ]);
    page.extend_from_slice(b"</title></head><body><p>");
    // 「生産が5&percnt;増加」: 生産が 5 &percnt; 増加
    page.extend_from_slice(&[0x90, 0xb6, 0x8e, 0x59, 0x82, 0xaa]);
    page.extend_from_slice(b"5&percnt;");
    page.extend_from_slice(&[0x91, 0x9d, 0x89, 0xc1]);
    page.extend_from_slice(b"</p></body></html>");
    page
}

struct Site {
    server: HttpServer,
    hits: Arc<AtomicUsize>,
}

impl Site {
    async fn start() -> Self {
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        let server = HttpServer::start(0, move |req| {
            let h = h.clone();
            async move {
                h.fetch_add(1, Ordering::SeqCst);
                match req.path.as_str() {
                    "/page" => HttpResponse {
                        status: 200,
                        headers: vec![("content-type".into(), "text/html; charset=utf-8".into())],
                        body: PAGE.into(),
                    },
                    "/big" => HttpResponse::text(200, "a".repeat(100_000)),
                    "/sjis" => HttpResponse {
                        status: 200,
                        headers: vec![(
                            "content-type".into(),
                            "text/html; charset=Shift_JIS".into(),
                        )],
                        body: shift_jis_page(false).into(),
                    },
                    "/sjis-meta" => HttpResponse {
                        status: 200,
                        headers: vec![("content-type".into(), "text/html".into())],
                        body: shift_jis_page(true).into(),
                    },
                    "/slow" => {
                        tokio::time::sleep(Duration::from_secs(5)).await;
                        HttpResponse::text(200, "late")
                    }
                    "/redirect" => HttpResponse::text(302, "").with_header("location", "/page"),
                    "/to-localhost" => {
                        let port = req
                            .header("host")
                            .and_then(|h| h.rsplit(':').next())
                            .unwrap_or("80")
                            .to_string();
                        HttpResponse::text(302, "")
                            .with_header("location", &format!("http://localhost:{port}/page"))
                    }
                    "/loop" => HttpResponse::text(302, "").with_header("location", "/loop"),
                    "/binary" => HttpResponse {
                        status: 200,
                        headers: vec![("content-type".into(), "image/png".into())],
                        body: vec![0u8, 1, 2].into(),
                    },
                    _ => HttpResponse::text(404, "not found"),
                }
            }
        })
        .await
        .expect("server");
        Self { server, hits }
    }
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.uri())
    }
    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

fn open() -> FetchSettings {
    FetchSettings {
        allow_private_network: true,
        ..FetchSettings::default()
    }
}

#[tokio::test]
async fn private_and_loopback_addresses_are_refused_by_default() {
    let site = Site::start().await;
    let closed = FetchSettings::default();
    let port = site.server.addr().port();
    for url in [
        site.url("/page"),
        format!("http://localhost:{port}/page"),
        format!("http://[::1]:{port}/page"),
        "http://10.1.2.3/x".into(),
        "http://169.254.169.254/latest/meta-data".into(),
    ] {
        let err = fetch(&url, &closed).await.expect_err("refused");
        assert!(
            matches!(err, FetchError::PrivateAddress { .. }),
            "{url}: {err}"
        );
        assert!(
            err.to_string().contains("allow_private_network = true"),
            "{err}"
        );
    }
    assert_eq!(site.hits(), 0, "nothing reached the server");
    for url in ["file:///etc/passwd", "ftp://example.com/x", "gopher://x"] {
        assert!(
            matches!(fetch(url, &closed).await, Err(FetchError::Scheme { .. })),
            "{url}"
        );
    }
    assert!(matches!(
        fetch("not a url", &closed).await,
        Err(FetchError::InvalidUrl { .. })
    ));
    let only_page = FetchSettings {
        allowed_domains: vec!["example.org".into()],
        ..open()
    };
    assert!(matches!(
        fetch(&site.url("/page"), &only_page).await,
        Err(FetchError::Domain { .. })
    ));
    let blocked = FetchSettings {
        blocked_domains: vec!["127.0.0.1".into()],
        ..open()
    };
    assert!(matches!(
        fetch(&site.url("/page"), &blocked).await,
        Err(FetchError::Domain { .. })
    ));
    assert_eq!(site.hits(), 0);
    // Every redirect hop is checked again: the first hop is allowed, the redirect target is not.
    let only_ip = FetchSettings {
        allowed_domains: vec!["127.0.0.1".into()],
        ..open()
    };
    let err = fetch(&site.url("/to-localhost"), &only_ip)
        .await
        .expect_err("second hop refused");
    assert!(
        matches!(err, FetchError::Domain { ref host, .. } if host == "localhost"),
        "{err}"
    );
    assert_eq!(site.hits(), 1);
}

#[tokio::test]
async fn other_spellings_of_private_addresses_are_refused_too() {
    let site = Site::start().await;
    let closed = FetchSettings::default();
    let port = site.server.addr().port();
    for url in [
        format!("http://127.1:{port}/page"),
        format!("http://2130706433:{port}/page"),
        format!("http://0x7f000001:{port}/page"),
        format!("http://0177.0.0.1:{port}/page"),
        format!("http://LOCALHOST:{port}/page"),
        format!("http://[::ffff:127.0.0.1]:{port}/page"),
        format!("http://[0:0:0:0:0:ffff:7f00:1]:{port}/page"),
        format!("http://0.0.0.0:{port}/page"),
        format!("https://127.0.0.1:{port}/page"),
        "http://192.168.1.10/router".into(),
        "http://172.16.0.1/".into(),
        "http://100.64.0.1/".into(),
        "http://[fd00::1]/".into(),
        "http://[fe80::1]/".into(),
    ] {
        let err = fetch(&url, &closed).await.expect_err("refused");
        assert!(
            matches!(err, FetchError::PrivateAddress { .. }),
            "{url}: {err}"
        );
    }
    // A trailing-dot host is refused or unresolvable, never fetched.
    assert!(
        fetch(&format!("http://localhost.:{port}/page"), &closed)
            .await
            .is_err()
    );
    assert_eq!(site.hits(), 0, "nothing reached the server");
}

#[tokio::test]
async fn pages_are_fetched_as_text_with_their_title() {
    let site = Site::start().await;
    let page = fetch(&site.url("/page"), &open()).await.expect("page");
    assert_eq!(page.title.as_deref(), Some("Chip News"));
    assert_eq!(page.text, "# Fab output\n\nOutput rose 5% & prices fell.");
    assert_eq!(page.content_type, "text/html");
    assert!(!page.truncated);
    let redirected = fetch(&site.url("/redirect"), &open())
        .await
        .expect("redirect followed");
    assert_eq!(redirected.url, site.url("/page"));
    assert_eq!(redirected.title.as_deref(), Some("Chip News"));
}

#[tokio::test]
async fn shift_jis_pages_are_decoded_from_their_declared_charset() {
    let site = Site::start().await;
    for path in ["/sjis", "/sjis-meta"] {
        let page = fetch(&site.url(path), &open()).await.expect("page");
        assert_eq!(page.encoding, "Shift_JIS", "{path}");
        assert_eq!(page.title.as_deref(), Some("半導体ニュース"), "{path}");
        assert_eq!(page.text, "生産が5%増加", "{path}");
    }
}

#[tokio::test]
async fn size_time_and_redirect_limits_hold() {
    let site = Site::start().await;
    let small = FetchSettings {
        max_bytes: 1000,
        ..open()
    };
    let page = fetch(&site.url("/big"), &small).await.expect("cut");
    assert_eq!(page.text.len(), 1000);
    assert!(page.truncated);
    assert!(
        page.to_tool_result()
            .ends_with("[truncated: the page is longer than the fetch limit]")
    );

    let few_chars = FetchSettings {
        max_chars: 100,
        ..open()
    };
    let page = fetch(&site.url("/big"), &few_chars).await.expect("cut");
    assert_eq!((page.text.len(), page.truncated), (100, true));

    let quick = FetchSettings {
        timeout: Duration::from_millis(500),
        ..open()
    };
    let started = Instant::now();
    let err = fetch(&site.url("/slow"), &quick)
        .await
        .expect_err("timeout");
    assert!(matches!(err, FetchError::Timeout { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3));

    let few_hops = FetchSettings {
        max_redirects: 3,
        ..open()
    };
    assert!(matches!(
        fetch(&site.url("/loop"), &few_hops).await,
        Err(FetchError::TooManyRedirects { max: 3, .. })
    ));
    assert!(matches!(
        fetch(&site.url("/binary"), &open()).await,
        Err(FetchError::UnsupportedContent { .. })
    ));
    assert!(matches!(
        fetch(&site.url("/missing"), &open()).await,
        Err(FetchError::Status { status: 404, .. })
    ));
}

#[test]
fn settings_come_from_the_member_table() {
    let m: MemberSettings = toml::from_str(
        "name = \"f\"\ntype = \"web_fetch\"\nmodel = \"mock:x\"\nallow_private_network = true\n[tool_settings.web_fetch]\nmax_uses = 2\nmax_content_tokens = 50\nmax_bytes = 4096\ntimeout_seconds = 3\nblocked_domains = [\".Example.com\"]\n",
    )
    .expect("member");
    let s = FetchSettings::from_member(&m);
    assert!(s.allow_private_network);
    assert_eq!(
        (s.max_uses, s.max_chars, s.max_bytes, s.timeout),
        (2, 200, 4096, Duration::from_secs(3))
    );
    assert_eq!(s.blocked_domains, ["example.com"]);
    assert_eq!(
        FetchSettings::from_member(&MemberSettings::default()),
        FetchSettings::default()
    );
}

fn fetch_member(extra: &str) -> MemberSettings {
    toml::from_str(&format!(
        "name = \"reader\"\ntype = \"web_fetch\"\nmodel = \"llm:x\"\n{extra}"
    ))
    .expect("member")
}

#[tokio::test]
async fn the_member_fetches_what_the_model_asks_for() {
    let site = Site::start().await;
    let llm = FakeLlm::openai().await;
    llm.push(Reply::tool_call(
        "fetch_url",
        json!({"url": site.url("/page")}),
    ));
    llm.push(Reply::text("Output rose 5%."));
    let m = build_member(
        &fetch_member("allow_private_network = true"),
        &deps(registry(&[("llm", &llm, Wire::OpenAi)])),
        None,
    )
    .expect("build");
    let out = m.execute("What happened to fab output?", &ctx()).await;
    assert_eq!(
        (out.status, out.content.as_str()),
        (MemberStatus::Success, "Output rose 5%.")
    );
    assert_eq!(out.usage.requests, 2);
    let reqs = llm.requests();
    assert_eq!(reqs[0].body["tools"][0]["function"]["name"], "fetch_url");
    let tool = messages(&reqs[1].body)
        .into_iter()
        .find(|m| m["role"] == "tool")
        .expect("tool result");
    assert_eq!(
        tool["content"],
        format!(
            "URL: {}\nTitle: Chip News\nContent-Type: text/html\n\n# Fab output\n\nOutput rose 5% & prices fell.",
            site.url("/page")
        )
    );
    assert_eq!(site.hits(), 1);
}

#[tokio::test]
async fn the_member_reports_refusals_to_the_model_and_stops_at_max_uses() {
    let site = Site::start().await;
    let llm = FakeLlm::openai().await;
    llm.push(Reply::tool_call(
        "fetch_url",
        json!({"url": site.url("/page")}),
    ));
    llm.push(Reply::text("I could not read it."));
    let m = build_member(
        &fetch_member(""),
        &deps(registry(&[("llm", &llm, Wire::OpenAi)])),
        None,
    )
    .expect("build");
    let out = m.execute("read it", &ctx()).await;
    assert_eq!(out.status, MemberStatus::Success);
    let tool = messages(&llm.requests()[1].body)
        .into_iter()
        .find(|m| m["role"] == "tool")
        .expect("tool result");
    assert!(
        tool["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("Error: refused to fetch") && c.contains("loopback")),
        "{tool}"
    );
    assert_eq!(site.hits(), 0);

    // max_uses = 1: the second fetch of a turn is refused and the final answer is asked for.
    let llm = FakeLlm::openai().await;
    llm.push(Reply::ToolCalls(vec![
        ("fetch_url".into(), json!({"url": site.url("/page")})),
        ("fetch_url".into(), json!({"url": site.url("/big")})),
    ]));
    llm.push(Reply::text("done"));
    let m = build_member(
        &fetch_member("allow_private_network = true\n[tool_settings.web_fetch]\nmax_uses = 1"),
        &deps(registry(&[("llm", &llm, Wire::OpenAi)])),
        None,
    )
    .expect("build");
    let out = m.execute("read both", &ctx()).await;
    assert_eq!(out.content, "done");
    assert_eq!(site.hits(), 1);
    let second = messages(&llm.requests()[1].body);
    let tools: Vec<&str> = second
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        tools[1].starts_with("Error: fetch limit reached (1 fetches per task)"),
        "{}",
        tools[1]
    );
    assert_eq!(
        second.last().map(|m| m["content"].clone()),
        Some(json!(FINAL_ANSWER_REQUEST))
    );
}

#[tokio::test]
async fn invalid_fetch_calls_fail_the_task_after_max_retries() {
    let llm = FakeLlm::openai().await;
    // Two invalid calls (no url, then an unknown tool), then a third invalid `fetch_url`.
    llm.push(Reply::tool_call("fetch_url", json!({})));
    llm.push(Reply::tool_call("fetch_url", json!({"url": "  "})));
    llm.push(Reply::text("never reached"));
    let m = build_member(
        &fetch_member("max_retries = 1"),
        &deps(registry(&[("llm", &llm, Wire::OpenAi)])),
        None,
    )
    .expect("build");
    let out = m.execute("read it", &ctx()).await;
    assert_eq!(out.status, MemberStatus::Error);
    assert_eq!(
        out.error_message.as_deref(),
        Some(
            "Tool 'fetch_url' exceeded max retries count of 1: Error: the `url` argument (a non-empty string) is required"
        )
    );
    assert_eq!(llm.request_count(), 2);
    assert_eq!(out.usage.requests, 2, "the usage of the calls made is kept");

    // Within the limit (default 3), invalid calls are tool errors the model can correct.
    let llm = FakeLlm::openai().await;
    llm.push(Reply::tool_call("fetch_url", json!({})));
    llm.push(Reply::tool_call("no_such_tool", json!({})));
    llm.push(Reply::tool_call("fetch_url", json!({"url": 5})));
    llm.push(Reply::text("gave up fetching"));
    let m = build_member(
        &fetch_member(""),
        &deps(registry(&[("llm", &llm, Wire::OpenAi)])),
        None,
    )
    .expect("build");
    let out = m.execute("read it", &ctx()).await;
    assert_eq!(
        (out.status, out.content.as_str()),
        (MemberStatus::Success, "gave up fetching")
    );
}
