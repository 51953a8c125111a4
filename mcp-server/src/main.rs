//! `triage-mcp`: a standalone MCP server that lets an agent triage a workflow's
//! pending_failed jobs, over stdio (default) or streamable HTTP (`--http ADDR`).
//!
//! Thin by design: the tools parse arguments, call the `triage` engine, and render results.
//! stdout carries the protocol and nothing else; logs go to stderr.

mod approval;
mod args;
mod http;
mod lenient;
mod render;
mod resources;
mod server;
mod state;
mod tools;

use clap::Parser;
use rmcp::ServiceExt;

fn main() -> std::process::ExitCode {
    limit_malloc_arenas();
    let args = args::Args::parse();
    init_logging(args.log_level.as_deref());
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("triage-mcp: error: cannot start the async runtime: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("triage-mcp: error: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}

async fn run(args: args::Args) -> anyhow::Result<()> {
    let state = state::State::from_args(&args)?;
    release_freed_memory();
    // Compile what the first listing would (the patterns every scan and fingerprint runs) while
    // the client starts its session, not inside its first call. A tool call that comes first
    // waits for the patterns it needs (each compiles once); nothing else waits for this.
    let engine = state.engine.clone();
    tokio::task::spawn_blocking(move || {
        engine.warm_up();
        release_freed_memory();
    });
    let server = server::TriageServer::new(state);
    match args.http {
        Some(addr) => http::serve(addr, server, &args).await,
        None => {
            tracing::info!("serving MCP on stdio");
            let running = server.serve(rmcp::transport::stdio()).await?;
            running.waiting().await?;
            Ok(())
        }
    }
}

fn init_logging(level: Option<&str>) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let _ = tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(false))
        .with(triage::settings::log_filter(level))
        .try_init();
}

/// Keep glibc's allocator to one arena per core. By default every thread that allocates may
/// get an arena of its own (up to eight per core), and each arena keeps the memory it has
/// touched: a server whose work hops between tokio's worker threads and its blocking-pool
/// threads (stdio, file reads) then holds several copies of its high-water mark. One arena
/// per core is what the worker threads need to allocate without waiting on each other
/// (fewer, and a listing spread over the cores slows down on the arena's lock).
///
/// A limit set in the environment (`MALLOC_ARENA_MAX`, or `glibc.malloc.arena_max` in
/// `GLIBC_TUNABLES`) is left as it is.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let set = |k: &str, needle: &str| std::env::var(k).is_ok_and(|v| v.contains(needle));
        if set("MALLOC_ARENA_MAX", "") || set("GLIBC_TUNABLES", "arena_max") {
            return;
        }
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get()).max(2);
        let arenas = libc::c_int::try_from(cores).unwrap_or(libc::c_int::MAX);
        // SAFETY: `mallopt` only sets an allocator parameter; it runs first in `main`, before
        // this program starts any thread, and a value glibc does not accept is refused.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

/// Hand the allocator's free pages back to the kernel. Building the catalog (parsing its
/// patterns, finding their literals) and compiling the first regexes allocate several times
/// what they keep, and glibc keeps the pages of what was freed in the middle of its heap
/// resident: without this, a server that has listed nothing yet holds megabytes it will never
/// use again. Called after those one-time steps, not per request.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only returns free memory of glibc's own arenas to the kernel; it
    // takes each arena's lock, so it may run while other threads allocate.
    unsafe {
        libc::malloc_trim(0);
    }
}
