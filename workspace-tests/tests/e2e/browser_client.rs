//! The WebDriver client (`workspace_tests::browser`) against a tiny page served on 127.0.0.1:
//! typing, clicking, waiting for text, scripts, dialogs, cookies and screenshots, in a real
//! headless Chromium. Skipped (loudly) when Chromium or chromedriver is missing, unless
//! `MIXSEEK_REQUIRE_BROWSER=1`.

use mixseek_testkit::{HttpResponse, HttpServer};
use serde_json::json;
use std::time::Duration;
use workspace_tests::browser::{Browser, browser_available, screenshot_dir};

/// The page: the greeting appears 300 ms after the click, so the test has to wait for it.
const PAGE: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>Browser client</title></head>
<body>
  <input id="name" value="placeholder">
  <button id="go" onclick="setTimeout(() => {
      document.getElementById('out').textContent = 'Hello, ' + document.getElementById('name').value;
    }, 300)">Greet</button>
  <p id="out" class="line">waiting</p>
  <button id="ask" onclick="document.getElementById('answer').textContent = confirm('Sure?') ? 'yes' : 'no'">Ask</button>
  <p id="answer" class="line"></p>
</body></html>
"#;

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_client_drives_a_page_in_headless_chromium() {
    if !browser_available("browser_client_drives_a_page_in_headless_chromium") {
        return;
    }
    let server = HttpServer::start(0, |_req| async {
        HttpResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/html; charset=utf-8".into())],
            body: PAGE.into(),
        }
    })
    .await
    .expect("start the page server");
    let url = format!("{}/page", server.uri());

    let browser = Browser::start().await.expect("start the browser");
    browser.goto(&url).await.expect("goto");
    assert_eq!(browser.current_url().await.expect("url"), url);
    assert_eq!(browser.title().await.expect("title"), "Browser client");

    browser.type_into("#name", "Ada").await.expect("type");
    let input = browser.find("#name").await.expect("find the input");
    assert_eq!(input.property("value").await.expect("value"), json!("Ada"));
    assert_eq!(
        input.attr("id").await.expect("attr").as_deref(),
        Some("name")
    );
    browser.click("#go").await.expect("click");
    let text = browser
        .wait_for_text("#out", "Hello, Ada", WAIT)
        .await
        .expect("the greeting appears");
    assert_eq!(text, "Hello, Ada");
    assert_eq!(browser.find_all("p.line").await.expect("find_all").len(), 2);

    // A wait that cannot succeed says what it saw.
    let err = browser
        .wait_for_text("#out", "Goodbye", Duration::from_millis(300))
        .await
        .expect_err("no goodbye");
    assert!(err.to_string().contains("Hello, Ada"), "{err}");
    let err = browser
        .wait_for("#missing", Duration::from_millis(300))
        .await
        .expect_err("no such element");
    assert!(err.to_string().contains("#missing"), "{err}");

    let sum = browser
        .execute(
            "return arguments[0] + arguments[1].id.length;",
            vec![json!(40), input.as_arg()],
        )
        .await
        .expect("execute");
    assert_eq!(sum, json!(44));

    // confirm() dialogs
    browser.click("#ask").await.expect("click ask");
    assert_eq!(browser.alert_text().await.expect("alert text"), "Sure?");
    browser.accept_alert().await.expect("accept");
    browser
        .wait_for_text("#answer", "yes", WAIT)
        .await
        .expect("accepted");
    browser.click("#ask").await.expect("click ask");
    browser.dismiss_alert().await.expect("dismiss");
    browser
        .wait_for_text("#answer", "no", WAIT)
        .await
        .expect("dismissed");

    browser
        .set_cookie("flavour", "oat")
        .await
        .expect("set cookie");
    let cookies = browser.get_cookies().await.expect("cookies");
    assert!(
        cookies.contains(&("flavour".to_string(), "oat".to_string())),
        "{cookies:?}"
    );
    assert!(
        browser
            .page_source()
            .await
            .expect("source")
            .contains("id=\"answer\"")
    );

    let shot = screenshot_dir().join("browser_client.png");
    let _ = std::fs::remove_file(&shot);
    browser.screenshot(&shot).await.expect("screenshot");
    let png = std::fs::read(&shot).expect("read the screenshot");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{} is not a PNG",
        shot.display()
    );

    browser.quit().await.expect("quit");
}
