//! Whether a provider's server is there at all.
//!
//! A server that refuses connections before any call to it has succeeded is not running (or
//! the base URL points to the wrong place): retrying it for minutes, as for a server that
//! went away in the middle of a run, only delays the error. The runtime gives such a
//! provider a short grace ([`DOWN_GRACE`], for a server that is still starting), then fails
//! its calls with [`down_message`]; `mixseek exec --dry-run` probes every local server the
//! run would call ([`probe`]).

use std::time::Duration;

/// How long calls to a provider that has refused every connection so far keep retrying (a
/// server that is still starting) before the provider is reported as down.
pub(crate) const DOWN_GRACE: Duration = Duration::from_secs(3);

/// The longest wait between two attempts during [`DOWN_GRACE`].
pub(crate) const DOWN_RETRY_WAIT: Duration = Duration::from_millis(500);

/// How long `--dry-run` waits for a local server's answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Whether `e` (or an error it wraps) is a refused TCP connection: nothing listens at the
/// address.
pub(crate) fn is_connection_refused(e: &reqwest::Error) -> bool {
    if !e.is_connect() {
        return false;
    }
    let mut src: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        src = s.source();
    }
    false
}

/// The message of a provider found down during a run: what happened and what to do.
pub(crate) fn down_message(provider: &str, base_url: &str) -> String {
    format!(
        "nothing is listening at {base_url} (connection refused), and no call to provider \
         `{provider}` has succeeded in this run: {}",
        start_hint(provider)
    )
}

/// The message of a refused probe.
fn refused_message(provider: &str, base_url: &str) -> String {
    format!(
        "nothing is listening at {base_url} (connection refused): {}",
        start_hint(provider)
    )
}

/// What to do about a provider whose server does not answer.
fn start_hint(provider: &str) -> String {
    let variable = match provider {
        "openai" => " (or OPENAI_BASE_URL)",
        "anthropic" => " (or ANTHROPIC_BASE_URL)",
        "google-gla" => " (or GOOGLE_GLA_BASE_URL)",
        _ => "",
    };
    format!(
        "start the server (for example `llama-server -m MODEL.gguf --port PORT`, `ollama serve` \
         or `vllm serve MODEL`) or point `[providers.{provider}] base_url`{variable} at the \
         address where it runs"
    )
}

/// Whether `base_url` points to this machine or the local network (loopback, private and
/// link-local addresses, `localhost`, `*.local`, `*.internal`, and single-label host names
/// such as a container's service name): the servers `--dry-run` probes. Public endpoints
/// are not contacted by a dry run.
pub fn is_local_url(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => {
            ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified()
        }
        Ok(std::net::IpAddr::V6(ip)) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || ip.is_unique_local()
                || ip.is_unicast_link_local()
        }
        Err(_) => {
            let d = host.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost"
                || d.ends_with(".localhost")
                || d.ends_with(".local")
                || d.ends_with(".internal")
                || !d.contains('.')
        }
    }
}

/// Asks the server at `base_url` for its model list (`GET {base_url}/models`, the
/// OpenAI-compatible listing llama.cpp, Ollama and vLLM serve). Any HTTP answer, even an
/// error status, shows a server is there; a refused connection or no answer within a few
/// seconds is the `Err`, with what to do.
pub async fn probe(provider: &str, base_url: &str) -> Result<(), String> {
    let http = reqwest::Client::builder()
        .timeout(PROBE_TIMEOUT)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let url = format!("{}/models", base_url.trim_end_matches('/'));
    match http.get(&url).send().await {
        Ok(_) => Ok(()),
        Err(e) if is_connection_refused(&e) => Err(refused_message(provider, base_url)),
        Err(e) if e.is_timeout() => Err(format!(
            "no answer from {base_url} within {} s: {}",
            PROBE_TIMEOUT.as_secs(),
            start_hint(provider)
        )),
        Err(e) => Err(format!(
            "cannot reach {base_url} ({}): {}",
            e.without_url(),
            start_hint(provider)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_urls_are_told_apart_from_public_ones() {
        for local in [
            "http://localhost:8080/v1",
            "http://127.0.0.1:11434/v1",
            "http://[::1]:8000/v1",
            "http://192.168.1.20:8000/v1",
            "http://10.0.0.5/v1",
            "http://vllm:8000/v1",
            "http://gpu-box.local:8000/v1",
            "http://0.0.0.0:8000",
        ] {
            assert!(is_local_url(local), "{local}");
        }
        for public in [
            "https://api.openai.com/v1",
            "https://api.x.ai/v1",
            "http://8.8.8.8/v1",
            "not a url",
        ] {
            assert!(!is_local_url(public), "{public}");
        }
    }

    #[tokio::test]
    async fn a_closed_port_is_refused_and_named_with_what_to_do() {
        // a port that was just free: nothing listens there
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let base = format!("http://127.0.0.1:{port}/v1");
        let err = probe("llama", &base).await.expect_err("nothing listens");
        assert!(err.contains("connection refused"), "{err}");
        assert!(err.contains(&base), "{err}");
        assert!(err.contains("[providers.llama] base_url"), "{err}");
    }

    #[tokio::test]
    async fn any_http_answer_is_a_server() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            if let Ok((mut s, _)) = listener.accept().await {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    .await;
            }
        });
        probe("x", &format!("http://{addr}/v1"))
            .await
            .expect("a 404 is an answer");
    }
}
