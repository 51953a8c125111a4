//! Streamable HTTP at `http://ADDR/mcp`: loopback by default; a non-loopback address only
//! with a bearer token (read from an environment variable named by `--token-env`, never from
//! the command line); Host and Origin checked against allow lists (DNS-rebinding protection);
//! an unauthenticated call gets 401. `/metrics` serves the Prometheus exposition behind the
//! same checks.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::args::Args;
use crate::server::TriageServer;

pub async fn serve(addr: SocketAddr, server: TriageServer, args: &Args) -> anyhow::Result<()> {
    let token = match &args.token_env {
        Some(var) => {
            let value = std::env::var(var).with_context(|| format!("--token-env {var}: the environment variable {var} is not set; export it with the bearer token clients must send"))?;
            if value.trim().len() < 16 {
                bail!(
                    "--token-env {var}: the token in {var} is shorter than 16 characters; use a long random token (e.g. `openssl rand -hex 32`)"
                );
            }
            Some(value.trim().to_string())
        }
        None => None,
    };
    if !addr.ip().is_loopback() && token.is_none() {
        bail!(
            "refusing to serve {addr} without authentication: a non-loopback address needs a bearer token; set --token-env VAR with VAR holding the token, or bind 127.0.0.1"
        );
    }
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into(), "[::1]".into()];
    if !addr.ip().is_loopback() && !addr.ip().is_unspecified() {
        hosts.push(addr.ip().to_string());
    }
    hosts.extend(args.allowed_hosts.iter().cloned());
    let mut origins: Vec<String> =
        vec!["http://localhost:*".into(), "http://127.0.0.1:*".into(), "http://[::1]:*".into()];
    origins.extend(args.allowed_origins.iter().cloned());

    let cancel = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .with_cancellation_token(cancel.child_token())
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins);
    let for_sessions = server.clone();
    let service: StreamableHttpService<TriageServer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(for_sessions.clone()), Arc::new(LocalSessionManager::default()), config);
    let mut app = Router::new().nest_service("/mcp", service).merge(server.state.metrics.router());
    if let Some(t) = token {
        app = app.layer(middleware::from_fn_with_state(Arc::new(t), require_bearer));
    }
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    // One line on stderr so scripts (and tests) can find the port when ADDR used port 0.
    eprintln!("triage-mcp: listening on http://{local}/mcp");
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            cancel.cancel();
        })
        .await?;
    Ok(())
}

async fn require_bearer(State(expected): State<Arc<String>>, req: Request, next: Next) -> Response {
    let given =
        req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    match given {
        Some(t) if constant_time_eq(t.trim().as_bytes(), expected.as_bytes()) => next.run(req).await,
        Some(_) => unauthorized("invalid bearer token"),
        None => unauthorized("missing bearer token: send `Authorization: Bearer <token>`"),
    }
}

fn unauthorized(why: &'static str) -> Response {
    (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], why).into_response()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
