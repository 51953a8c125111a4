//! HTTP to a Torc server: one `reqwest` client configured from Torc's own environment, a
//! timeout on every request, retries with backoff only where a retry cannot do harm, and
//! errors that name the URL and what to check.
//!
//! - Credentials as Torc's client takes them: HTTP Basic with `TORC_PASSWORD` and the user
//!   `TORC_USERNAME`, else `USER`, else `USERNAME`; the advisory `X-Torc-Client-User` header;
//!   `TORC_COOKIE_HEADER` as a default `Cookie`. Never from the command line (it shows in `ps`).
//! - TLS (rustls): `TORC_TLS_CA_CERT` adds a PEM root (an unreadable file is an error here,
//!   where Torc silently ignores it); `TORC_TLS_INSECURE=true` accepts any certificate.
//! - Retries ([`Safety::may_retry`]): a connect error (no connection, so not one byte of the
//!   request was sent) is retried for every request. A timeout, a connection lost after the
//!   request went out, a 5xx or a 429 is retried only for [`Safety::Idempotent`] requests,
//!   which end in the same state however often they are sent: GETs, PUTs that set a whole
//!   state (a job's status, its resource requirements row), and the `DELETE` that closes an
//!   intent (a 404 is as good). Everything else is [`Safety::Once`]: a POST that creates a
//!   row (an intent or audit event, a job's resource requirements row, a restored result)
//!   and a move step such as `retry` or `DELETE /results/{id}` (where a 404 means a rival
//!   won). The server may have committed such a request before the answer was lost;
//!   sending it again would create a second row (a duplicate intent, an orphan resources
//!   row), apply the move twice, or misread our own success as a rival's. The caller gets
//!   the error, and the move is undone or recovered like any other failed one.

use std::time::Duration;

use backon::Retryable;
use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::de::DeserializeOwned;

use super::wire::{Page, TORC_MAX_PAGE};
use crate::backend::BackendError;
use crate::resilience::Backoff;

/// Whether a request may be sent again when its answer did not come (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Safety {
    /// Sending it twice is the same as sending it once (a GET, a PUT of a whole state):
    /// retried after any transient failure.
    Idempotent,
    /// Creates something or moves a job: retried only when it provably never reached the
    /// server (a connect error).
    Once,
}

/// Why one attempt at a request got no usable answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// No connection (refused, unreachable, connect timeout, TLS handshake): nothing sent.
    Connect,
    /// No answer in time; the server may have received and committed the request.
    Timeout,
    /// Any other transport error, e.g. the connection closed while waiting for the answer.
    Transport,
    /// An answer with this status.
    Status(u16),
}

impl Fault {
    fn of(e: &reqwest::Error) -> Fault {
        if e.is_connect() {
            Fault::Connect
        } else if e.is_timeout() {
            Fault::Timeout
        } else {
            Fault::Transport
        }
    }

    /// A status worth another try, for a request that may be repeated.
    fn transient_status(status: u16) -> bool {
        status >= 500 || status == 429
    }
}

impl Safety {
    /// Whether a request of this kind may be sent again after `fault`.
    fn may_retry(self, fault: Fault) -> bool {
        match (self, fault) {
            (_, Fault::Connect) => true,
            (Safety::Idempotent, Fault::Timeout | Fault::Transport) => true,
            (Safety::Idempotent, Fault::Status(s)) => Fault::transient_status(s),
            (Safety::Once, _) => false,
        }
    }
}

/// A response: status and body (already read).
#[derive(Debug)]
pub(super) struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    pub url: String,
}

impl Answer {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// Torc's error message (`{"error":{"message":...}}`), else the body's start.
    pub fn message(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let json: Option<serde_json::Value> = serde_json::from_slice(&self.body).ok();
        let from_json = json.as_ref().and_then(|v| {
            let e = v.get("error")?;
            e.get("message").and_then(|m| m.as_str()).map(str::to_string).or_else(|| e.as_str().map(str::to_string))
        });
        let mut msg = from_json.unwrap_or_else(|| text.trim().to_string());
        if msg.len() > 300 {
            let cut = (0..=300).rev().find(|i| msg.is_char_boundary(*i)).unwrap_or(0);
            msg.truncate(cut);
            msg.push('…');
        }
        if msg.is_empty() { "(empty body)".into() } else { msg }
    }

    /// The body as `T`, or an error naming the URL and what was asked.
    pub fn json<T: DeserializeOwned>(&self, what: &str) -> Result<T, BackendError> {
        serde_json::from_slice(&self.body).map_err(|e| BackendError::Remote {
            url: self.url.clone(),
            what: what.to_string(),
            why: format!("the answer is not the JSON Torc 1.0 sends ({e}); is this a Torc 1.x server?"),
            transient: false,
        })
    }
}

/// The environment a client is configured from (Torc's variable names).
#[derive(Clone, Default)]
pub(super) struct ClientEnv {
    pub user: String,
    pub password: Option<String>,
    pub ca_cert: Option<String>,
    pub insecure: bool,
    pub cookie: Option<String>,
}

impl std::fmt::Debug for ClientEnv {
    /// The password is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientEnv")
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<set>"))
            .field("ca_cert", &self.ca_cert)
            .field("insecure", &self.insecure)
            .field("cookie", &self.cookie.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl ClientEnv {
    pub fn from_env() -> ClientEnv {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        ClientEnv {
            user: var("TORC_USERNAME").or_else(|| var("USER")).or_else(|| var("USERNAME")).unwrap_or("unknown".into()),
            password: var("TORC_PASSWORD"),
            ca_cert: var("TORC_TLS_CA_CERT"),
            insecure: var("TORC_TLS_INSECURE")
                .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes")),
            cookie: var("TORC_COOKIE_HEADER"),
        }
    }
}

/// A client for one Torc API base URL (up to and including `/torc-service/v1`).
#[derive(Debug, Clone)]
pub(super) struct Client {
    http: reqwest::Client,
    base: String,
    env: ClientEnv,
    backoff: Backoff,
    timeout: Duration,
}

enum Failure {
    Transport(reqwest::Error),
    Server(Answer),
}

/// Whether `base` names a server spoken to without TLS (`http://`, any case).
fn is_plain_http(base: &str) -> bool {
    base.get(..7).is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
}

impl Client {
    pub fn new(base: &str, env: ClientEnv, timeout: Duration, backoff: Backoff) -> Result<Client, BackendError> {
        let config = |why: String| BackendError::Remote {
            url: base.to_string(),
            what: "setting up the HTTP client".into(),
            why,
            transient: false,
        };
        // reqwest is built with `rustls-no-provider`: install ring once (an error only means
        // some other part of the process installed a provider first, which is as good).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut headers = HeaderMap::new();
        if let Ok(v) = HeaderValue::from_str(&env.user) {
            headers.insert(HeaderName::from_static("x-torc-client-user"), v);
        }
        if let Some(c) = &env.cookie {
            let v = HeaderValue::from_str(c)
                .map_err(|_| config("TORC_COOKIE_HEADER is not a valid header value; check its characters".into()))?;
            headers.insert(reqwest::header::COOKIE, v);
        }
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .default_headers(headers)
            .user_agent(concat!("triage/", env!("CARGO_PKG_VERSION")));
        if let Some(path) = &env.ca_cert {
            let pem = std::fs::read(path).map_err(|e| {
                config(format!("cannot read TORC_TLS_CA_CERT={path}: {e}; point it at the PEM file of the CA that signed the server's certificate"))
            })?;
            let cert = reqwest::Certificate::from_pem(&pem)
                .map_err(|e| config(format!("TORC_TLS_CA_CERT={path} is not a PEM certificate: {e}")))?;
            builder = builder.tls_certs_merge([cert]);
        }
        if env.insecure {
            tracing::warn!("TORC_TLS_INSECURE is set: the server's certificate is not checked");
            builder = builder.tls_danger_accept_invalid_certs(true);
        }
        // A plain-HTTP server (a Torc on localhost or inside the cluster) is never spoken to
        // over TLS: leave out the system's CA roots, which the client would otherwise read and
        // parse at once (about 150 certificates, a few hundred KB of a small listing's memory).
        if is_plain_http(base) && env.ca_cert.is_none() && !env.insecure {
            builder = builder.tls_certs_only([]);
        }
        let http = builder.build().map_err(|e| config(e.to_string()))?;
        Ok(Client { http, base: base.trim_end_matches('/').to_string(), env, backoff, timeout })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// Send one request (retrying as `safety` allows) and read the whole answer. Non-2xx
    /// statuses come back as answers for the caller to judge, except 401 and 403, which no
    /// caller can do anything with.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&serde_json::Value>,
        safety: Safety,
        what: &str,
    ) -> Result<Answer, BackendError> {
        let url = format!("{}{path}", self.base);
        let once = || async {
            let mut req = self.http.request(method.clone(), &url).query(query);
            if let Some(pw) = &self.env.password {
                req = req.basic_auth(&self.env.user, Some(pw));
            }
            if let Some(b) = body {
                req = req.json(b);
            }
            let resp = req.send().await.map_err(Failure::Transport)?;
            let status = resp.status().as_u16();
            let bytes = resp.bytes().await.map_err(Failure::Transport)?;
            // Without a copy where `bytes` owns its buffer alone (a listing's body is megabytes).
            let answer = Answer { status, body: Vec::from(bytes), url: url.clone() };
            if Fault::transient_status(status) {
                return Err(Failure::Server(answer));
            }
            Ok(answer)
        };
        let retryable = |f: &Failure| {
            safety.may_retry(match f {
                Failure::Transport(e) => Fault::of(e),
                Failure::Server(a) => Fault::Status(a.status),
            })
        };
        let result = once
            .retry(self.backoff.clone())
            .sleep(tokio::time::sleep)
            .when(retryable)
            .notify(|f: &Failure, d: Duration| {
                let why = match f {
                    Failure::Transport(e) => e.to_string(),
                    Failure::Server(a) => format!("{} {}", a.status, a.message()),
                };
                tracing::warn!(url = %url, "{what}: {why}; retrying in {} ms", d.as_millis());
            })
            .await;
        let answer = match result {
            Ok(a) | Err(Failure::Server(a)) => a,
            Err(Failure::Transport(e)) => return Err(self.transport_error(&url, what, e)),
        };
        match answer.status {
            401 | 403 => Err(self.denied(&answer, what)),
            _ => Ok(answer),
        }
    }

    /// GET and parse a 2xx answer; anything else is an error naming the URL.
    pub async fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
        what: &str,
    ) -> Result<T, BackendError> {
        let a = self.call(Method::GET, path, query, None, Safety::Idempotent, what).await?;
        if !a.ok() {
            return Err(self.unexpected(&a, what));
        }
        a.json(what)
    }

    /// Every item of a paged list endpoint, `TORC_MAX_PAGE` per request.
    pub async fn get_all<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
        what: &str,
    ) -> Result<Vec<T>, BackendError> {
        let mut out = Vec::new();
        let mut offset: i64 = 0;
        loop {
            let mut q = query.to_vec();
            q.push(("offset", offset.to_string()));
            q.push(("limit", TORC_MAX_PAGE.to_string()));
            let page: Page<T> = self.get(path, &q, what).await?;
            let n = page.items.len() as i64;
            out.extend(page.items);
            if !page.has_more || n == 0 {
                return Ok(out);
            }
            offset += page.count.max(n);
        }
    }

    /// The error for an answer the caller did not expect.
    pub fn unexpected(&self, a: &Answer, what: &str) -> BackendError {
        match a.status {
            401 | 403 => self.denied(a, what),
            404 if serde_json::from_slice::<serde_json::Value>(&a.body).is_err() => BackendError::NoRoute {
                url: a.url.clone(),
                what: what.to_string(),
                hint: "no such API route; the URL in `--backend torc:URL` must include Torc's API prefix, e.g. http://127.0.0.1:8080/torc-service/v1 (try `curl URL/ping`)".into(),
            },
            s => BackendError::Remote {
                url: a.url.clone(),
                what: what.to_string(),
                why: format!("HTTP {s}: {}", a.message()),
                transient: s >= 500 || s == 429,
            },
        }
    }

    fn denied(&self, a: &Answer, what: &str) -> BackendError {
        let hint = if a.status == 401 {
            match &self.env.password {
                None => "the server requires a login: set TORC_PASSWORD (and TORC_USERNAME if your Torc user is not $USER) in the environment".to_string(),
                Some(_) => format!("the server refused user `{}` with the password in TORC_PASSWORD; check both (TORC_USERNAME overrides $USER) against the server's htpasswd file", self.env.user),
            }
        } else {
            format!(
                "user `{}` is not allowed this; ask the workflow's owner or an admin for access (the server enforces access groups): {}",
                self.env.user,
                a.message()
            )
        };
        BackendError::Denied { url: a.url.clone(), status: a.status, what: what.to_string(), hint }
    }

    fn transport_error(&self, url: &str, what: &str, e: reqwest::Error) -> BackendError {
        let e = e.without_url();
        let why = if e.is_connect() {
            format!("cannot connect ({}); is torc-server running and listening there?", source_chain(&e))
        } else if e.is_timeout() {
            format!(
                "no answer within {} s (the policy's backend_timeout_secs); the server may be overloaded",
                self.timeout.as_secs()
            )
        } else {
            source_chain(&e)
        };
        BackendError::Remote { url: url.to_string(), what: what.to_string(), why, transient: true }
    }
}

fn source_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        cur = s.source();
    }
    parts.join(": ")
}

/// A loopback HTTP server that treats every request alike, for the retry tests here and in
/// the modules that call [`Client::call`].
#[cfg(test)]
pub(super) mod test_server {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use crate::resilience::Backoff;
    use crate::resilience::Resilience;

    /// How the server treats every request it reads.
    #[derive(Debug, Clone, Copy)]
    pub enum Serve {
        /// Answer with this status.
        Status(u16),
        /// Read the request, then close the connection without an answer.
        Drop,
        /// Read the request, then say nothing for this long.
        Stall(Duration),
    }

    /// Start a server; returns its API base URL and the count of requests it read in full.
    pub fn start(serve: Serve) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let count = Arc::new(AtomicUsize::new(0));
        let seen = count.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let seen = seen.clone();
                std::thread::spawn(move || answer_request(conn, serve, &seen));
            }
        });
        (base(port), count)
    }

    pub fn base(port: u16) -> String {
        format!("http://127.0.0.1:{port}/torc-service/v1")
    }

    /// Read one request off `conn` and treat it as `serve` says; the connection then closes.
    pub fn answer_request(conn: TcpStream, serve: Serve, seen: &AtomicUsize) {
        let mut writer = conn.try_clone().unwrap();
        let mut reader = BufReader::new(conn);
        let mut content_length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                content_length = v.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; content_length];
        reader.read_exact(&mut body).unwrap();
        seen.fetch_add(1, Ordering::SeqCst);
        match serve {
            Serve::Status(s) => {
                let body = r#"{"id":1}"#;
                let head = format!("HTTP/1.1 {s} X\r\nconnection: close\r\ncontent-length: {}\r\n\r\n", body.len());
                let _ = writer.write_all(format!("{head}{body}").as_bytes());
            }
            Serve::Drop => {}
            Serve::Stall(d) => std::thread::sleep(d),
        }
    }

    /// A backend for `url` that may try a request 3 times, 20 ms apart, 300 ms each.
    pub fn backend(url: &str) -> crate::backend::torc::TorcBackend {
        let opts = crate::backend::torc::TorcOptions {
            timeout: Duration::from_millis(300),
            backoff: backoff(3),
            ..Default::default()
        };
        crate::backend::torc::TorcBackend::open(url, opts).unwrap()
    }

    /// `attempts` attempts in all, 20 ms apart.
    pub fn backoff(attempts: u32) -> Backoff {
        let r = Resilience {
            retry_attempts: attempts,
            retry_initial_ms: 20,
            retry_multiplier: 1.0,
            retry_max_ms: 20,
            retry_jitter: 0.0,
            ..Resilience::default()
        };
        Backoff::new(&r, 0)
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::test_server::{Serve, answer_request, backoff, base};
    use super::*;

    #[test]
    fn only_an_http_url_goes_without_the_systems_ca_roots() {
        assert!(is_plain_http("http://localhost:8080/torc-service/v1"));
        assert!(is_plain_http("HTTP://torc.cluster:8080"));
        assert!(!is_plain_http("https://torc.example.org/torc-service/v1"));
        assert!(!is_plain_http("http"));
        assert!(!is_plain_http(""));
    }

    #[test]
    fn only_a_connect_error_lets_a_once_request_be_sent_again() {
        use Fault::*;
        let faults = [Connect, Timeout, Transport, Status(500), Status(502), Status(503), Status(429), Status(404)];
        let retried = |safety: Safety| faults.iter().filter(|f| safety.may_retry(**f)).copied().collect::<Vec<_>>();
        assert_eq!(retried(Safety::Once), [Connect]);
        assert_eq!(
            retried(Safety::Idempotent),
            [Connect, Timeout, Transport, Status(500), Status(502), Status(503), Status(429)]
        );
        for s in [200, 201, 204, 400, 401, 403, 404, 409, 422] {
            assert!(!Safety::Idempotent.may_retry(Status(s)), "{s}");
        }
    }

    /// A client allowing `attempts` attempts, 20 ms apart, each with a 300 ms timeout.
    fn client(base: &str, attempts: u32) -> Client {
        Client::new(base, ClientEnv::default(), Duration::from_millis(300), backoff(attempts)).unwrap()
    }

    async fn post(c: &Client, safety: Safety) -> Result<Answer, BackendError> {
        c.call(Method::POST, "/events", &[], Some(&serde_json::json!({"x": 1})), safety, "posting").await
    }

    /// Whatever became of the answer (a 5xx, a dropped connection, a timeout), a `Once`
    /// request reached the server once; an `Idempotent` one was sent again.
    #[tokio::test]
    async fn a_once_request_that_reached_the_server_is_never_sent_again() {
        for serve in [Serve::Status(503), Serve::Status(500), Serve::Drop, Serve::Stall(Duration::from_secs(2))] {
            let (url, count) = test_server::start(serve);
            let c = client(&url, 3);
            let once = post(&c, Safety::Once).await;
            assert_eq!(count.swap(0, Ordering::SeqCst), 1, "{serve:?}, Once: {once:?}");
            match serve {
                Serve::Status(s) => assert_eq!(once.unwrap().status, s),
                _ => assert!(once.unwrap_err().is_transient()),
            }
            let again = post(&c, Safety::Idempotent).await;
            assert_eq!(count.load(Ordering::SeqCst), 3, "{serve:?}, Idempotent: {again:?}");
        }
    }

    /// A refused connection sent nothing: a `Once` request is retried, and gets through once
    /// the server is up.
    #[tokio::test]
    async fn a_once_request_is_retried_after_a_refused_connection() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let refused = post(&client(&base(port), 3), Safety::Once).await.unwrap_err();
        assert!(refused.to_string().contains("cannot connect"), "{refused}");
        // The server comes up while the client waits between attempts.
        let c = client(&base(port), 50);
        let late = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
            let (conn, _) = listener.accept().unwrap();
            let seen = AtomicUsize::new(0);
            answer_request(conn, Serve::Status(201), &seen);
            seen.load(Ordering::SeqCst)
        });
        let a = post(&c, Safety::Once).await.unwrap();
        assert_eq!(a.status, 201);
        assert_eq!(late.join().unwrap(), 1, "the request reached the server once");
    }

    fn answer(status: u16, body: &str) -> Answer {
        Answer { status, body: body.as_bytes().to_vec(), url: "http://h/torc-service/v1/x".into() }
    }

    #[test]
    fn torc_error_bodies_become_their_message() {
        assert_eq!(answer(422, r#"{"error":{"message":"Run ID mismatch"}}"#).message(), "Run ID mismatch");
        assert_eq!(answer(500, r#"{"error":"boom"}"#).message(), "boom");
        assert_eq!(answer(400, "Invalid query").message(), "Invalid query");
        assert_eq!(answer(404, "").message(), "(empty body)");
        let long = answer(500, &"é".repeat(400)).message();
        assert!(long.ends_with('…') && long.len() <= 304, "{long}");
    }

    #[test]
    fn errors_name_the_url_and_the_fix() {
        let env = ClientEnv { user: "alice".into(), password: Some("pw".into()), ..ClientEnv::default() };
        let c = Client::new("http://h:1/torc-service/v1", env, Duration::from_secs(1), Backoff::none()).unwrap();
        let e = c.unexpected(&answer(401, ""), "reading workflow 1").to_string();
        assert!(
            e.contains("http://h/torc-service/v1/x") && e.contains("`alice`") && e.contains("TORC_PASSWORD"),
            "{e}"
        );
        let e = c.unexpected(&answer(404, ""), "reading workflow 1").to_string();
        assert!(e.contains("/torc-service/v1") && e.contains("API prefix"), "{e}");
        let e = c.unexpected(&answer(404, r#"{"error":{"message":"nope"}}"#), "x");
        assert!(matches!(e, BackendError::Remote { transient: false, .. }), "{e}");
        assert!(c.unexpected(&answer(503, ""), "x").is_transient());
        assert!(!format!("{:?}", c).contains("pw"), "the password never shows in Debug output");
    }
}
