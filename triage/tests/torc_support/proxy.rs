//! A loopback HTTP/1.1 proxy in front of `torc-server`: counts and logs requests, can be
//! pointed at a restarted server, can kill the server right after a chosen request has been
//! answered (the answer still reaches the client, as when a server dies just after
//! committing), and can hold a chosen request until the test lets it go (to put a rival's
//! whole move inside one mover's window), and can lose the answer to a chosen request after
//! the server committed it (a 503 in its place, or the connection closed), as when a gateway
//! or the network fails on the way back. While "down" it closes every connection.
//!
//! Each request is forwarded on a fresh upstream connection with `Connection: close`, so the
//! response is simply read to its end.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Kill the process `pid` right after the first request whose method is `method` and whose
/// path contains `path_contains` has been answered by it.
#[derive(Debug, Clone)]
pub struct Hook {
    pub method: String,
    pub path_contains: String,
    pub pid: u32,
}

/// Holds the first request matching `method` and `path_contains` until [`Gate::open`].
#[derive(Debug, Default)]
pub struct Gate {
    method: String,
    path_contains: String,
    hit: AtomicBool,
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    /// Wait (at most 20 s) until a request is held at the gate.
    pub fn wait_hit(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.hit.load(Ordering::SeqCst) {
            assert!(Instant::now() < deadline, "no {} {} reached the gate", self.method, self.path_contains);
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Let the held request (and any later one) through.
    pub fn open(&self) {
        *self.open.lock().expect("lock") = true;
        self.opened.notify_all();
    }

    fn hold(&self) {
        self.hit.store(true, Ordering::SeqCst);
        let mut open = self.open.lock().expect("lock");
        while !*open {
            open = self.opened.wait(open).expect("wait");
        }
    }
}

/// What the client gets instead of the server's answer (see [`Proxy::lose_answer`]).
#[derive(Debug, Clone, Copy)]
pub enum Lost {
    /// An answer with this status (e.g. 503 from a gateway).
    Status(u16),
    /// The connection closed, no answer at all.
    Drop,
}

#[derive(Debug, Clone)]
struct Loss {
    method: String,
    path_contains: String,
    instead: Lost,
}

#[derive(Default)]
struct State {
    upstream: Mutex<u16>,
    down: AtomicBool,
    count: AtomicUsize,
    log: Mutex<Vec<String>>,
    hook: Mutex<Option<Hook>>,
    gate: Mutex<Option<Arc<Gate>>>,
    loss: Mutex<Option<Loss>>,
}

pub struct Proxy {
    pub port: u16,
    state: Arc<State>,
}

impl Proxy {
    pub fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(State { upstream: Mutex::new(upstream), ..State::default() });
        let s = state.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let s = s.clone();
                std::thread::spawn(move || serve(conn, &s));
            }
        });
        Proxy { port, state }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/torc-service/v1", self.port)
    }

    pub fn repoint(&self, upstream: u16) {
        *self.state.upstream.lock().expect("lock") = upstream;
        self.state.down.store(false, Ordering::SeqCst);
    }

    pub fn kill_after(&self, hook: Hook) {
        *self.state.hook.lock().expect("lock") = Some(hook);
    }

    /// Hold the next request matching `method` and `path_contains` until the gate opens.
    pub fn gate(&self, method: &str, path_contains: &str) -> Arc<Gate> {
        let gate = Arc::new(Gate { method: method.into(), path_contains: path_contains.into(), ..Gate::default() });
        *self.state.gate.lock().expect("lock") = Some(gate.clone());
        gate
    }

    /// Forward the next request matching `method` and `path_contains` to the server, then
    /// give the client `instead` of the server's answer.
    pub fn lose_answer(&self, method: &str, path_contains: &str, instead: Lost) {
        *self.state.loss.lock().expect("lock") =
            Some(Loss { method: method.into(), path_contains: path_contains.into(), instead });
    }

    pub fn is_down(&self) -> bool {
        self.state.down.load(Ordering::SeqCst)
    }

    pub fn count(&self) -> usize {
        self.state.count.load(Ordering::SeqCst)
    }

    /// `METHOD path?query` of every request so far; clears the log.
    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.state.log.lock().expect("lock"))
    }
}

fn serve(client: TcpStream, state: &State) {
    let Ok(mut writer) = client.try_clone() else { return };
    let mut reader = BufReader::new(client);
    loop {
        let mut head = Vec::new();
        let mut content_length = 0usize;
        let mut first = String::new();
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if first.is_empty() {
                first = line.trim_end().to_string();
            }
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                content_length = v.trim().parse().unwrap_or(0);
            }
            if line == "\r\n" || line == "\n" {
                head.extend_from_slice(b"Connection: close\r\n\r\n");
                break;
            }
            if !lower.starts_with("connection:") {
                head.extend_from_slice(line.as_bytes());
            }
        }
        let mut body = vec![0u8; content_length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let mut parts = first.split_whitespace();
        let (method, path) =
            (parts.next().unwrap_or_default().to_string(), parts.next().unwrap_or_default().to_string());
        state.count.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut log) = state.log.lock() {
            log.push(format!("{method} {path}"));
        }
        let held = state.gate.lock().ok().and_then(|mut g| {
            let hit = g.as_ref().is_some_and(|g| g.method == method && path.contains(&g.path_contains));
            if hit { g.take() } else { None }
        });
        if let Some(gate) = held {
            gate.hold();
        }
        if state.down.load(Ordering::SeqCst) {
            let _ = writer.shutdown(Shutdown::Both);
            return;
        }
        let port = *state.upstream.lock().expect("lock");
        let Ok(mut up) = TcpStream::connect(("127.0.0.1", port)) else {
            let _ = writer.shutdown(Shutdown::Both);
            return;
        };
        if up.write_all(&head).and_then(|_| up.write_all(&body)).is_err() {
            let _ = writer.shutdown(Shutdown::Both);
            return;
        }
        let mut response = Vec::new();
        if up.read_to_end(&mut response).is_err() {
            let _ = writer.shutdown(Shutdown::Both);
            return;
        }
        if let Ok(mut hook) = state.hook.lock()
            && hook.as_ref().is_some_and(|h| h.method == method && path.contains(&h.path_contains))
            && let Some(h) = hook.take()
        {
            state.down.store(true, Ordering::SeqCst);
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(h.pid as i32), nix::sys::signal::Signal::SIGKILL);
        }
        let lost = state.loss.lock().ok().and_then(|mut l| {
            let hit = l.as_ref().is_some_and(|l| l.method == method && path.contains(&l.path_contains));
            if hit { l.take() } else { None }
        });
        if let Some(loss) = lost {
            if let Lost::Status(code) = loss.instead {
                let body = r#"{"error":{"message":"lost on the way back (test proxy)"}}"#;
                let _ = writer.write_all(
                    format!(
                        "HTTP/1.1 {code} Lost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                );
            }
            let _ = writer.shutdown(Shutdown::Both);
            return;
        }
        if writer.write_all(&response).is_err() {
            return;
        }
        // The upstream said `Connection: close`; the client may still reuse its connection.
    }
}
