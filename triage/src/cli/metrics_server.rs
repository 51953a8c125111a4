//! `--metrics ADDR`: serve the Prometheus exposition at `http://ADDR/metrics` (axum), beside
//! whatever the command does. Read-only; the numbers carry no job ids or stderr.

use std::net::SocketAddr;

use anyhow::Context;
use triage::metrics::Metrics;

/// Bind `addr` now (so a bad address fails before any work) and serve in the background.
pub async fn spawn(addr: SocketAddr, metrics: Metrics) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
        format!("--metrics {addr}: cannot listen there (in use? give another port, or 127.0.0.1:0)")
    })?;
    let local = listener.local_addr()?;
    let app = metrics.router();
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::warn!("the metrics server stopped: {e}");
        }
    });
    // One line on stderr so scripts (and tests) find the port when ADDR used port 0.
    eprintln!("triage: metrics on http://{local}/metrics");
    Ok(local)
}
