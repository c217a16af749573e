//! The HTTP fetcher behind `web_fetch` members: a real GET of an `http`/`https` URL, with a
//! time limit, a size limit, redirects followed by hand (each hop checked again), the
//! resolved address pinned for the connection (no DNS rebinding between check and use),
//! private and loopback addresses refused unless `allow_private_network = true`, optional
//! allowed/blocked domain lists, the body decoded from its charset (byte-order mark, then
//! the `Content-Type` charset, then an HTML `<meta charset>` / `http-equiv`, else UTF-8 — the
//! WHATWG order), and HTML turned into text.

pub(crate) mod address;

use mixseek_config::MemberSettings;
use reqwest::Url;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// The limits and rules of one member's fetches (`[tool_settings.web_fetch]`).
#[derive(Debug, Clone, PartialEq)]
pub struct FetchSettings {
    /// Connect to private, loopback and link-local addresses too (member key
    /// `allow_private_network`).
    pub allow_private_network: bool,
    /// Bytes of a response body read at most (`max_bytes`, default 2 000 000); the rest is cut.
    pub max_bytes: usize,
    /// Characters of page text given to the model at most (`max_chars`, default 20 000, or
    /// 4 × `max_content_tokens`).
    pub max_chars: usize,
    /// Time limit of one fetch, redirects included (`timeout_seconds`, default 20).
    pub timeout: Duration,
    /// Redirects followed at most (`max_redirects`, default 5).
    pub max_redirects: u32,
    /// Only these domains (and their subdomains) may be fetched (`allowed_domains`).
    pub allowed_domains: Vec<String>,
    /// These domains (and their subdomains) may not be fetched (`blocked_domains`).
    pub blocked_domains: Vec<String>,
    /// Fetches per task (`max_uses`, default 5).
    pub max_uses: u32,
}

impl Default for FetchSettings {
    fn default() -> Self {
        Self {
            allow_private_network: false,
            max_bytes: 2_000_000,
            max_chars: 20_000,
            timeout: Duration::from_secs(20),
            max_redirects: 5,
            allowed_domains: Vec::new(),
            blocked_domains: Vec::new(),
            max_uses: 5,
        }
    }
}

impl FetchSettings {
    /// From a member's settings: `allow_private_network` and `tool_settings.web_fetch`.
    pub fn from_member(settings: &MemberSettings) -> Self {
        let mut s = Self {
            allow_private_network: settings.allow_private_network,
            ..Self::default()
        };
        let ts = settings.effective_tool_settings();
        let Some(wf) = ts.get("web_fetch").and_then(|v| v.as_object()) else {
            return s;
        };
        let num = |k: &str| wf.get(k).and_then(serde_json::Value::as_u64);
        let list = |k: &str| -> Vec<String> {
            wf.get(k)
                .and_then(|v| v.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|d| d.as_str())
                        .map(|d| d.trim().trim_start_matches('.').to_ascii_lowercase())
                        .collect()
                })
                .unwrap_or_default()
        };
        if let Some(n) = num("max_bytes").filter(|n| *n > 0) {
            s.max_bytes = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(n) = num("max_content_tokens").filter(|n| *n > 0) {
            s.max_chars = usize::try_from(n.saturating_mul(4)).unwrap_or(usize::MAX);
        }
        if let Some(n) = num("max_chars").filter(|n| *n > 0) {
            s.max_chars = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(t) = wf
            .get("timeout_seconds")
            .and_then(serde_json::Value::as_f64)
            .filter(|t| *t > 0.0)
        {
            s.timeout = Duration::from_secs_f64(t.min(3600.0));
        }
        if let Some(n) = num("max_redirects") {
            s.max_redirects = u32::try_from(n).unwrap_or(u32::MAX);
        }
        if let Some(n) = num("max_uses").filter(|n| *n > 0) {
            s.max_uses = u32::try_from(n).unwrap_or(u32::MAX);
        }
        s.allowed_domains = list("allowed_domains");
        s.blocked_domains = list("blocked_domains");
        s
    }
}

/// A fetched page.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchedPage {
    /// The final URL (after redirects).
    pub url: String,
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` header.
    pub content_type: String,
    /// The encoding the body was decoded from (e.g. `Shift_JIS`, `UTF-8`).
    pub encoding: String,
    /// The HTML `<title>`, when there is one.
    pub title: Option<String>,
    /// The page as text (HTML turned into text).
    pub text: String,
    /// The body or the text was cut at a limit.
    pub truncated: bool,
}

impl FetchedPage {
    /// The tool result the model reads.
    pub fn to_tool_result(&self) -> String {
        let mut s = format!("URL: {}\n", self.url);
        if let Some(t) = &self.title {
            s.push_str(&format!("Title: {t}\n"));
        }
        s.push_str(&format!(
            "Content-Type: {}\n\n{}",
            self.content_type, self.text
        ));
        if self.truncated {
            s.push_str("\n\n[truncated: the page is longer than the fetch limit]");
        }
        s
    }
}

/// Why a page could not be fetched (the member's tool result says so).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FetchError {
    /// The URL does not parse.
    #[error("invalid URL `{url}`: {message}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// Why it does not parse.
        message: String,
    },
    /// Not an http or https URL.
    #[error("only http and https URLs can be fetched, not `{scheme}:`")]
    Scheme {
        /// The scheme given.
        scheme: String,
    },
    /// The host is a private, loopback or otherwise non-public address.
    #[error(
        "refused to fetch {url}: {host} is {reason} (set allow_private_network = true on the member to allow it)"
    )]
    PrivateAddress {
        /// The URL.
        url: String,
        /// The host or address.
        host: String,
        /// What kind of address it is.
        reason: &'static str,
    },
    /// The domain is blocked or not in `allowed_domains`.
    #[error("refused to fetch {url}: the domain `{host}` is {why}")]
    Domain {
        /// The URL.
        url: String,
        /// The host.
        host: String,
        /// Why it is refused.
        why: &'static str,
    },
    /// The host name does not resolve.
    #[error("cannot resolve `{host}`: {message}")]
    Resolve {
        /// The host.
        host: String,
        /// The resolver's error.
        message: String,
    },
    /// No answer within the time limit.
    #[error("no answer from {url} within {seconds} s")]
    Timeout {
        /// The URL.
        url: String,
        /// The time limit, in seconds.
        seconds: f64,
    },
    /// The HTTP exchange failed.
    #[error("fetching {url} failed: {message}")]
    Http {
        /// The URL.
        url: String,
        /// The HTTP client's error.
        message: String,
    },
    /// The server answered with an error status.
    #[error("{url} answered HTTP {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
    },
    /// Too many redirects.
    #[error("more than {max} redirects starting at {url}")]
    TooManyRedirects {
        /// The first URL.
        url: String,
        /// The redirects allowed.
        max: u32,
    },
    /// The page is neither text nor HTML.
    #[error("{url} is `{content_type}`, not text or HTML")]
    UnsupportedContent {
        /// The URL.
        url: String,
        /// Its content type.
        content_type: String,
    },
}

fn domain_matches(host: &str, domain: &str) -> bool {
    host == domain || host.ends_with(&format!(".{domain}"))
}

/// The host of `url` without IPv6 brackets, lower-case.
fn host_of(url: &Url) -> Option<String> {
    url.host_str().map(|h| {
        h.trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase()
    })
}

/// Checks scheme, domain lists and the addresses `url` resolves to; returns the host and
/// the address to connect to.
async fn checked_target(
    url: &Url,
    settings: &FetchSettings,
) -> Result<(String, SocketAddr), FetchError> {
    let scheme = url.scheme();
    if scheme != "http" && scheme != "https" {
        return Err(FetchError::Scheme {
            scheme: scheme.to_string(),
        });
    }
    let host = host_of(url)
        .filter(|h| !h.is_empty())
        .ok_or_else(|| FetchError::InvalidUrl {
            url: url.to_string(),
            message: "no host".into(),
        })?;
    if !settings.allowed_domains.is_empty()
        && !settings
            .allowed_domains
            .iter()
            .any(|d| domain_matches(&host, d))
    {
        return Err(FetchError::Domain {
            url: url.to_string(),
            host,
            why: "not in allowed_domains",
        });
    }
    if settings
        .blocked_domains
        .iter()
        .any(|d| domain_matches(&host, d))
    {
        return Err(FetchError::Domain {
            url: url.to_string(),
            host,
            why: "in blocked_domains",
        });
    }
    let port = url
        .port_or_known_default()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|e| FetchError::Resolve {
                host: host.clone(),
                message: e.to_string(),
            })?
            .collect(),
    };
    let first = *addrs.first().ok_or_else(|| FetchError::Resolve {
        host: host.clone(),
        message: "no address".into(),
    })?;
    if !settings.allow_private_network {
        // Every address must be public: the connection could use any of them.
        if let Some(reason) = addrs
            .iter()
            .find_map(|a| address::non_public_reason(a.ip()))
        {
            return Err(FetchError::PrivateAddress {
                url: url.to_string(),
                host,
                reason,
            });
        }
    }
    Ok((host, first))
}

/// Fetches `url` under `settings` (see the module docs).
pub async fn fetch(url: &str, settings: &FetchSettings) -> Result<FetchedPage, FetchError> {
    let parsed = Url::parse(url.trim()).map_err(|e| FetchError::InvalidUrl {
        url: url.to_string(),
        message: e.to_string(),
    })?;
    match tokio::time::timeout(settings.timeout, fetch_following(parsed, settings)).await {
        Ok(r) => r,
        Err(_) => Err(FetchError::Timeout {
            url: url.trim().to_string(),
            seconds: settings.timeout.as_secs_f64(),
        }),
    }
}

async fn fetch_following(start: Url, settings: &FetchSettings) -> Result<FetchedPage, FetchError> {
    let mut url = start.clone();
    for _ in 0..=settings.max_redirects {
        let (host, addr) = checked_target(&url, settings).await?;
        let http_err = |e: reqwest::Error| FetchError::Http {
            url: url.to_string(),
            message: e.to_string(),
        };
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(concat!("mixseek-web-fetch/", env!("CARGO_PKG_VERSION")));
        if host.parse::<IpAddr>().is_err() {
            builder = builder.resolve(&host, addr);
        }
        let client = builder.build().map_err(http_err)?;
        let mut resp = client
            .get(url.clone())
            .header("accept", "text/html,text/plain;q=0.9,*/*;q=0.5")
            .send()
            .await
            .map_err(http_err)?;
        let status = resp.status();
        if status.is_redirection() {
            let location = resp
                .headers()
                .get("location")
                .and_then(|l| l.to_str().ok())
                .map(str::to_string);
            let Some(location) = location else {
                return Err(FetchError::Status {
                    url: url.to_string(),
                    status: status.as_u16(),
                });
            };
            url = url.join(&location).map_err(|e| FetchError::InvalidUrl {
                url: location.clone(),
                message: e.to_string(),
            })?;
            continue;
        }
        if !status.is_success() {
            return Err(FetchError::Status {
                url: url.to_string(),
                status: status.as_u16(),
            });
        }
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|c| c.to_str().ok())
            .unwrap_or("")
            .to_string();
        let mime = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let is_html = mime.is_empty() || mime == "text/html" || mime == "application/xhtml+xml";
        let is_text = mime.starts_with("text/")
            || mime.ends_with("json")
            || mime.ends_with("xml")
            || mime.ends_with("+json");
        if !is_html && !is_text {
            return Err(FetchError::UnsupportedContent {
                url: url.to_string(),
                content_type: mime,
            });
        }
        let mut body: Vec<u8> = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = resp.chunk().await.map_err(http_err)? {
            let room = settings.max_bytes.saturating_sub(body.len());
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let (raw, encoding) = decode_body(&body, &content_type, is_html);
        let (title, mut text) = if is_html {
            let page = mixseek_attach::html::html_to_text(&raw);
            (page.title, page.text)
        } else {
            (None, raw.trim().to_string())
        };
        if let Some((cut, _)) = text.char_indices().nth(settings.max_chars) {
            text.truncate(cut);
            truncated = true;
        }
        return Ok(FetchedPage {
            url: url.to_string(),
            status: status.as_u16(),
            content_type: mime,
            encoding: encoding.name().to_string(),
            title,
            text,
            truncated,
        });
    }
    Err(FetchError::TooManyRedirects {
        url: start.to_string(),
        max: settings.max_redirects,
    })
}

/// How far into an HTML body a `<meta>` charset declaration is looked for (the WHATWG
/// prescan reads 1024 bytes; pages in the wild often declare it a little later).
const META_PRESCAN_BYTES: usize = 4096;

/// Decodes a response body: a byte-order mark wins, then the `charset` parameter of
/// `content_type`, then (HTML) a `<meta>` declaration near the start, else UTF-8. Bytes that
/// are invalid in the chosen encoding become U+FFFD.
pub(crate) fn decode_body(
    body: &[u8],
    content_type: &str,
    is_html: bool,
) -> (String, &'static encoding_rs::Encoding) {
    if let Some((encoding, bom_len)) = encoding_rs::Encoding::for_bom(body) {
        let rest = body.get(bom_len..).unwrap_or_default();
        return (
            encoding.decode_without_bom_handling(rest).0.into_owned(),
            encoding,
        );
    }
    let declared = header_charset(content_type)
        .and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes()))
        .or_else(|| {
            is_html
                .then(|| meta_charset(body))
                .flatten()
                .and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes()))
                // A page cannot declare UTF-16 in its own (ASCII-compatible) markup.
                .map(|e| {
                    if e == encoding_rs::UTF_16BE || e == encoding_rs::UTF_16LE {
                        encoding_rs::UTF_8
                    } else {
                        e
                    }
                })
        });
    let encoding = declared.unwrap_or(encoding_rs::UTF_8);
    (
        encoding.decode_without_bom_handling(body).0.into_owned(),
        encoding,
    )
}

/// The `charset` parameter of a `Content-Type` value.
fn header_charset(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|param| {
        let (k, v) = param.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| {
                v.trim()
                    .trim_matches(|c: char| c == '"' || c == '\'')
                    .trim()
                    .to_string()
            })
            .filter(|v| !v.is_empty())
    })
}

/// The charset of the first `<meta charset=...>` or `<meta http-equiv="Content-Type"
/// content="...; charset=...">` near the start of an HTML body.
fn meta_charset(body: &[u8]) -> Option<String> {
    let head = body.get(..META_PRESCAN_BYTES.min(body.len()))?;
    let lower: Vec<u8> = head.iter().map(u8::to_ascii_lowercase).collect();
    let mut from = 0;
    while let Some(pos) = find(&lower[from..], b"<meta") {
        let start = from + pos + 5;
        let end = find(&lower[start..], b">").map_or(lower.len(), |e| start + e);
        let tag = &lower[start..end];
        if let Some(c) = find(tag, b"charset") {
            let mut rest = &tag[c + 7..];
            rest = trim_ascii_start(rest);
            if let Some(r) = rest.strip_prefix(b"=") {
                let r = trim_ascii_start(r);
                let r = r
                    .strip_prefix(b"\"")
                    .or_else(|| r.strip_prefix(b"'"))
                    .unwrap_or(r);
                let value: Vec<u8> = r
                    .iter()
                    .copied()
                    .take_while(|&b| {
                        !matches!(b, b'"' | b'\'' | b';' | b'/' | b'>') && !b.is_ascii_whitespace()
                    })
                    .collect();
                if !value.is_empty() {
                    return String::from_utf8(value).ok();
                }
            }
        }
        from = end;
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn trim_ascii_start(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    &b[n..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_charset_comes_from_bom_header_meta_then_utf8() {
        // 「日本語」 in Shift_JIS.
        let sjis = [0x93, 0xfa, 0x96, 0x7b, 0x8c, 0xea];
        let (text, enc) = decode_body(&sjis, "text/html; charset=Shift_JIS", true);
        assert_eq!((text.as_str(), enc.name()), ("日本語", "Shift_JIS"));
        let (text, _) = decode_body(&sjis, "text/plain; charset=\"shift_jis\"", false);
        assert_eq!(text, "日本語");

        let mut page = b"<html><head><META http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\"></head><body>".to_vec();
        page.extend_from_slice(&sjis);
        let (text, enc) = decode_body(&page, "text/html", true);
        assert!(text.ends_with("<body>日本語"), "{text}");
        assert_eq!(enc.name(), "Shift_JIS");

        // 「日本」 in EUC-JP, declared with <meta charset>.
        let mut page = b"<meta charset='euc-jp'>".to_vec();
        page.extend_from_slice(&[0xc6, 0xfc, 0xcb, 0xdc]);
        assert_eq!(
            decode_body(&page, "", true).0,
            "<meta charset='euc-jp'>日本"
        );
        // The header wins over the meta declaration; a BOM wins over both.
        assert_eq!(
            decode_body(&page, "text/html; charset=utf-8", true).1,
            encoding_rs::UTF_8
        );
        let bom = [0xef, 0xbb, 0xbf, b'h', b'i'];
        let (text, enc) = decode_body(&bom, "text/html; charset=Shift_JIS", true);
        assert_eq!((text.as_str(), enc), ("hi", encoding_rs::UTF_8));
        // Meta is only read in HTML; unknown labels fall back to UTF-8; bad bytes become U+FFFD.
        assert_eq!(
            decode_body(&page, "text/plain", false).1,
            encoding_rs::UTF_8
        );
        assert_eq!(
            decode_body("é".as_bytes(), "text/html; charset=nonsense", true).0,
            "é"
        );
        assert_eq!(decode_body(&[b'a', 0xff], "", true).0, "a\u{fffd}");
        // A page that claims UTF-16 in its markup is read as UTF-8.
        assert_eq!(
            decode_body(b"<meta charset=utf-16>x", "", true).1,
            encoding_rs::UTF_8
        );
    }
}
