//! HTTP to a Torc server: one `reqwest` client configured from Torc's own environment, a
//! timeout on every request, retries with backoff only where a retry cannot do harm, and
//! errors that name the URL and what to check.
//!
//! - Credentials as Torc's client takes them: HTTP Basic with `TORC_PASSWORD` and the user
//!   `TORC_USERNAME`, else `USER`, else `USERNAME`; the advisory `X-Torc-Client-User` header;
//!   `TORC_COOKIE_HEADER` as a default `Cookie`. Never from the command line (it shows in `ps`).
//! - TLS (rustls): `TORC_TLS_CA_CERT` adds a PEM root (an unreadable file is an error here,
//!   where Torc silently ignores it); `TORC_TLS_INSECURE=true` accepts any certificate.
//! - Retries: connection errors (the request never reached the server) always; timeouts,
//!   5xx and 429 only for idempotent requests ([`Safety::Idempotent`]). A move step such as
//!   `retry` or `DELETE /results/{id}` is sent once: repeating it after a lost answer could
//!   apply it twice, or misread our own success as a rival's.

use std::time::Duration;

use backon::Retryable;
use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::de::DeserializeOwned;

use super::wire::{Page, TORC_MAX_PAGE};
use crate::backend::BackendError;
use crate::resilience::Backoff;

/// Whether a request may be repeated after a timeout or a 5xx.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Safety {
    Idempotent,
    Once,
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
            let answer = Answer { status, body: bytes.to_vec(), url: url.clone() };
            if safety == Safety::Idempotent && (status >= 500 || status == 429) {
                return Err(Failure::Server(answer));
            }
            Ok(answer)
        };
        let retryable = |f: &Failure| match f {
            Failure::Transport(e) => e.is_connect() || safety == Safety::Idempotent,
            Failure::Server(_) => true,
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

#[cfg(test)]
mod tests {
    use super::*;

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
