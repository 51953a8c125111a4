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
        release_start_up_code();
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

/// Drop the pages of machine code from the resident set once start-up is over. Parsing the
/// arguments, the settings and the catalog, building the prefilter and compiling the first
/// regexes run code no listing runs again, and the kernel maps a program's code in blocks of
/// pages around each one touched (fault-around): after start-up most of the executable's and
/// the C library's code stays resident for the life of the server, although a listing uses a
/// fraction of it. Dropped, the pages a listing needs come back on first use, from the page
/// cache (a page fault each, no disk read).
///
/// Only executable, private, file-backed mappings (`r-xp` with a path in `/proc/self/maps`)
/// are dropped: their pages are never written (no text relocations in a Rust executable or in
/// the system's libraries), so `MADV_DONTNEED` only unmaps them and the next read maps the same
/// bytes again. Writable and read-only data mappings are left alone: the read-only ones
/// include relocated data (RELRO), which dropping would turn back into the file's bytes.
fn release_start_up_code() {
    #[cfg(target_os = "linux")]
    {
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return };
        for line in maps.lines() {
            let mut fields = line.split_ascii_whitespace();
            let (Some(range), Some("r-xp")) = (fields.next(), fields.next()) else { continue };
            if !fields.nth(3).is_some_and(|path| path.starts_with('/')) {
                continue;
            }
            let Some((start, end)) = range.split_once('-') else { continue };
            let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16)) else {
                continue;
            };
            if end > start {
                // SAFETY: the range is one whole mapping, page-aligned by the kernel, of
                // executable code that is never written (see above); `MADV_DONTNEED` on it
                // only unmaps its pages until their next use. An error leaves them resident.
                unsafe {
                    libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
                }
            }
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
