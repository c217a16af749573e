//! A tiny HTTP/1.1 server on 127.0.0.1 (random port) calling an async handler per request.
//! It stops accepting connections when dropped.
//!
//! Besides normal answers it can misbehave on the wire, as a [`Delivery`] says (for the
//! fake servers' hostile answers): a body sent in chunks without Content-Length, trickled
//! one byte at a time, broken off (connection closed or reset) after some bytes, or raw
//! bytes in place of an HTTP response.

use bytes::{Buf, Bytes};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A request as the handler sees it (body read in full).
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// The query string, if any (without `?`).
    pub query: Option<String>,
    /// Header names lower-case.
    pub headers: Vec<(String, String)>,
    /// The whole body.
    pub body: Bytes,
}

impl HttpRequest {
    /// The body as JSON (`Null` when it is not JSON). Parsed here, in the test kit's
    /// optimised code, rather than in the caller's: a benchmark's handler parses thousands of
    /// 100 kB request bodies.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// The value of header `name` (any case), if it was sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A response to send.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// The HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Bytes,
}

impl HttpResponse {
    /// A JSON body (`content-type: application/json`).
    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: Bytes::from(serde_json::to_vec(value).unwrap_or_default()),
        }
    }
    /// A plain-text body.
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: Bytes::from(body.into()),
        }
    }
    /// The response with one more header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
}

/// How a response goes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Delivery {
    /// As an ordinary HTTP/1.1 response with Content-Length.
    #[default]
    Normal,
    /// The body in 64 KiB chunks, without Content-Length (chunked transfer encoding).
    Chunked,
    /// The body one byte at a time, this long apart (chunked transfer encoding).
    Trickle(Duration),
    /// Content-Length of the whole body, but only its first `n` bytes are sent; then the
    /// connection is closed.
    CloseAfter(usize),
    /// The first `n` bytes of the body (Content-Length of the whole), then the connection
    /// is reset (TCP RST).
    ResetAfter(usize),
    /// The body's bytes written as they are in place of an HTTP response (status and
    /// headers are ignored), then the connection is closed.
    Raw,
}

/// A response with how to deliver it.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub(crate) response: HttpResponse,
    pub(crate) delivery: Delivery,
}

impl From<HttpResponse> for Answer {
    fn from(response: HttpResponse) -> Self {
        Self {
            response,
            delivery: Delivery::Normal,
        }
    }
}

/// How long a broken-off body waits after its last bytes before the connection goes, so
/// that those bytes reach the client first.
const BREAK_PAUSE: Duration = Duration::from_millis(100);

/// The body of a response as [`Delivery`] plans it.
struct PlannedBody {
    data: Bytes,
    plan: Delivery,
    /// A pause before the next frame (trickling, or before breaking off).
    pause: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl PlannedBody {
    fn new(data: Bytes, plan: Delivery) -> Self {
        let data = match plan {
            Delivery::CloseAfter(n) | Delivery::ResetAfter(n) => data.slice(..n.min(data.len())),
            Delivery::Raw => Bytes::new(),
            _ => data,
        };
        Self {
            data,
            plan,
            pause: None,
        }
    }
}

impl Body for PlannedBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        if let Some(p) = this.pause.as_mut() {
            if p.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.pause = None;
        }
        let frame = |b: Bytes| Poll::Ready(Some(Ok(Frame::data(b))));
        match this.plan {
            Delivery::Normal => {
                if this.data.is_empty() {
                    Poll::Ready(None)
                } else {
                    frame(std::mem::take(&mut this.data))
                }
            }
            Delivery::Chunked => {
                if this.data.is_empty() {
                    Poll::Ready(None)
                } else {
                    let n = this.data.len().min(64 * 1024);
                    frame(this.data.split_to(n))
                }
            }
            Delivery::Trickle(every) => {
                if this.data.is_empty() {
                    return Poll::Ready(None);
                }
                this.pause = Some(Box::pin(tokio::time::sleep(every)));
                frame(this.data.split_to(1))
            }
            Delivery::CloseAfter(_) | Delivery::ResetAfter(_) | Delivery::Raw => {
                if !this.data.is_empty() {
                    this.pause = Some(Box::pin(tokio::time::sleep(BREAK_PAUSE)));
                    return frame(std::mem::take(&mut this.data));
                }
                if this.pause.is_none() && this.plan == Delivery::Raw {
                    // Give the raw bytes time to leave before the connection goes.
                    this.pause = Some(Box::pin(tokio::time::sleep(BREAK_PAUSE)));
                    this.plan = Delivery::CloseAfter(0);
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Poll::Ready(Some(Err(io::Error::other(
                    "the test server breaks the connection off",
                ))))
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self.plan {
            Delivery::Normal => SizeHint::with_exact(self.data.len() as u64),
            _ => SizeHint::default(),
        }
    }
}

/// What the handler of a request tells the connection it runs on.
#[derive(Default)]
struct ConnControl {
    /// Reset (TCP RST) the connection when it is dropped.
    reset: AtomicBool,
    /// `raw` holds bytes (checked without the lock on every write).
    raw_pending: AtomicBool,
    /// Bytes to write in place of the next response.
    raw: Mutex<Option<Bytes>>,
}

/// A TCP connection that can be reset when dropped, or write raw bytes in place of what
/// hyper writes.
struct Conn {
    stream: TcpStream,
    control: Arc<ConnControl>,
    /// Raw bytes still to write; once set, whatever hyper writes is dropped.
    raw: Option<Bytes>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        if self.control.reset.load(Ordering::SeqCst) {
            let _ = self.stream.set_zero_linger();
        }
    }
}

impl Conn {
    /// Writes the pending raw bytes, if raw mode is on (`None`: it is off).
    fn poll_raw(&mut self, cx: &mut Context<'_>) -> Option<Poll<io::Result<()>>> {
        if self.raw.is_none() {
            if !self.control.raw_pending.load(Ordering::SeqCst) {
                return None;
            }
            let pending = match self.control.raw.lock() {
                Ok(mut g) => g.take(),
                Err(p) => p.into_inner().take(),
            };
            self.raw = Some(pending?);
        }
        let raw = self.raw.as_mut()?;
        while !raw.is_empty() {
            match Pin::new(&mut self.stream).poll_write(cx, raw) {
                Poll::Ready(Ok(n)) => raw.advance(n),
                Poll::Ready(Err(e)) => return Some(Poll::Ready(Err(e))),
                Poll::Pending => return Some(Poll::Pending),
            }
        }
        Some(Poll::Ready(Ok(())))
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match this.poll_raw(cx) {
            Some(Poll::Ready(Ok(()))) => Poll::Ready(Ok(buf.len())),
            Some(Poll::Ready(Err(e))) => Poll::Ready(Err(e)),
            Some(Poll::Pending) => Poll::Pending,
            None => Pin::new(&mut this.stream).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match this.poll_raw(cx) {
            Some(Poll::Ready(Ok(()))) => Poll::Ready(Ok(bufs.iter().map(|b| b.len()).sum())),
            Some(Poll::Ready(Err(e))) => Poll::Ready(Err(e)),
            Some(Poll::Pending) => Poll::Pending,
            None => Pin::new(&mut this.stream).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// A running server.
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl HttpServer {
    /// Binds 127.0.0.1 on `port` (0: a random free port) and serves `handler`.
    pub async fn start<F, Fut>(port: u16, handler: F) -> std::io::Result<Self>
    where
        F: Fn(HttpRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HttpResponse> + Send + 'static,
    {
        Self::start_with_delivery(port, move |req| {
            let fut = handler(req);
            async move { Answer::from(fut.await) }
        })
        .await
    }

    /// [`HttpServer::start`] with a handler that also says how each response goes on the
    /// wire ([`Delivery`]).
    pub(crate) async fn start_with_delivery<F, Fut>(port: u16, handler: F) -> std::io::Result<Self>
    where
        F: Fn(HttpRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Answer> + Send + 'static,
    {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let handler = Arc::new(handler);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let handler = handler.clone();
                let control = Arc::new(ConnControl::default());
                let conn = Conn {
                    stream,
                    control: control.clone(),
                    raw: None,
                };
                tokio::spawn(async move {
                    let svc = service_fn(move |req: Request<Incoming>| {
                        let handler = handler.clone();
                        let control = control.clone();
                        async move {
                            let (parts, body) = req.into_parts();
                            let body = body
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            let request = HttpRequest {
                                method: parts.method.to_string(),
                                path: parts.uri.path().to_string(),
                                query: parts.uri.query().map(str::to_string),
                                headers: parts
                                    .headers
                                    .iter()
                                    .map(|(k, v)| {
                                        (
                                            k.as_str().to_ascii_lowercase(),
                                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                                        )
                                    })
                                    .collect(),
                                body,
                            };
                            let Answer {
                                response: r,
                                delivery,
                            } = handler(request).await;
                            // Raw bytes replace the response: its status does not matter (and
                            // hyper would not send a 1xx as a final response).
                            let status = if delivery == Delivery::Raw {
                                200
                            } else {
                                r.status
                            };
                            let mut builder = Response::builder().status(status);
                            for (k, v) in &r.headers {
                                builder = builder.header(k, v);
                            }
                            match delivery {
                                Delivery::CloseAfter(_) | Delivery::ResetAfter(_) => {
                                    builder = builder.header("content-length", r.body.len());
                                }
                                _ => {}
                            }
                            if let Delivery::ResetAfter(_) = delivery {
                                control.reset.store(true, Ordering::SeqCst);
                            }
                            if let Delivery::Raw = delivery {
                                let mut g = match control.raw.lock() {
                                    Ok(g) => g,
                                    Err(p) => p.into_inner(),
                                };
                                *g = Some(r.body.clone());
                                control.raw_pending.store(true, Ordering::SeqCst);
                            }
                            let resp = builder
                                .body(PlannedBody::new(r.body, delivery))
                                .unwrap_or_else(|_| {
                                    Response::new(PlannedBody::new(
                                        Bytes::from_static(b"bad response"),
                                        Delivery::Normal,
                                    ))
                                });
                            Ok::<_, Infallible>(resp)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(conn), svc)
                        .await;
                });
            }
        });
        Ok(Self { addr, task })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn uri(&self) -> String {
        format!("http://{}", self.addr)
    }
}
