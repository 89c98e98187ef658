//! A fake HTTP receiver on loopback for tests of what TraceLab sends out:
//! signed webhooks (a receiver) and Jira's comment API (a fake Jira). It
//! records every request as it arrived (method, target, headers, raw
//! body) and answers with the statuses a test scripts (`answer_next`), a
//! default otherwise, and `{}` as the body. The test then checks the
//! requests itself (the signature with the receiver's recipe, the auth
//! header, the body). Std only, like [`crate::git_server`]; stops on drop.

use crate::git_server::{Request, read_request, respond};
use std::collections::VecDeque;
use std::io::{self, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// One request as the recorder received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The status it was answered with.
    pub status: u16,
}

impl Recorded {
    /// A header's value (names compared without case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

#[derive(Default)]
struct Script {
    next: VecDeque<u16>,
    default: u16,
    seen: Vec<Recorded>,
}

/// The fake receiver; every path answers.
pub struct HttpRecorder {
    addr: SocketAddr,
    script: Arc<Mutex<Script>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl HttpRecorder {
    /// Starts on a free loopback port, answering `default` (e.g. 204 for a
    /// webhook receiver, 201 for Jira's comment API) unless scripted.
    pub fn start(default: u16) -> io::Result<HttpRecorder> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let script = Arc::new(Mutex::new(Script {
            default,
            ..Script::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (script.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    return;
                }
                if let Ok(stream) = stream {
                    let s = s.clone();
                    std::thread::spawn(move || {
                        let _ = serve(&s, stream);
                    });
                }
            }
        });
        Ok(HttpRecorder {
            addr,
            script,
            stop,
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Answers the next request with `status` (queued in order).
    pub fn answer_next(&self, status: u16) {
        self.script.lock().unwrap().next.push_back(status);
    }

    /// Answers `status` from now on, unless scripted.
    pub fn answer_always(&self, status: u16) {
        self.script.lock().unwrap().default = status;
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.script.lock().unwrap().seen.clone()
    }
}

impl Drop for HttpRecorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn serve(script: &Mutex<Script>, mut stream: TcpStream) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let Request {
        method,
        target,
        headers,
        body,
    } = read_request(&mut reader, &mut stream)?;
    let status = {
        let mut s = script.lock().unwrap();
        let status = s.next.pop_front().unwrap_or(s.default);
        s.seen.push(Recorded {
            method,
            target,
            headers,
            body,
            status,
        });
        status
    };
    let body: &[u8] = if status == 204 { b"" } else { b"{}" };
    respond(
        &mut stream,
        &format!("{status} {}", reason(status)),
        &[("Content-Type".into(), "application/json".into())],
        body,
    )
}
