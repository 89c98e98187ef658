//! Real git servers on loopback for tests: `git daemon` (git://) and git's
//! smart HTTP (`git http-backend` as CGI behind a tiny HTTP/1.1 server with
//! optional Basic auth). They serve the bare repositories under a base
//! directory (`base/name` is `url(name)`), count requests so a test can
//! assert that a cache hit did not touch the server, and stop on drop.
//! Std only: no HTTP library for a server that must stay this small.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `git daemon` serving `base` read-only on a loopback port; killed on drop.
#[derive(Debug)]
pub struct GitDaemon {
    child: Child,
    port: u16,
}

impl GitDaemon {
    /// Starts on a free port (retrying if another process takes it first)
    /// and returns once the daemon accepts connections.
    pub fn start(base: &Path) -> io::Result<GitDaemon> {
        let mut last = None;
        for _ in 0..5 {
            match Self::start_on(base, crate::ports::free_port()) {
                Ok(daemon) => return Ok(daemon),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("at least one attempt"))
    }

    /// Starts on `port`: for a test that needs the same URL to stop and
    /// start answering (a server that hung, then came back).
    pub fn start_on(base: &Path, port: u16) -> io::Result<GitDaemon> {
        // `git-daemon` itself, not `git daemon`: the `git` wrapper runs it as
        // a child, which would outlive a killed wrapper.
        let child = Command::new(exec_path()?.join("git-daemon"))
            .arg("--reuseaddr")
            .arg(format!("--base-path={}", base.display()))
            .arg("--export-all")
            .arg("--informative-errors")
            .arg("--listen=127.0.0.1")
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let mut daemon = GitDaemon { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = daemon.child.try_wait()? {
                return Err(io::Error::other(format!(
                    "git daemon on port {port} exited: {status}"
                )));
            }
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(daemon);
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!(
                    "git daemon on port {port} did not start listening"
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `git://127.0.0.1:PORT/name`.
    pub fn url(&self, name: &str) -> String {
        format!("git://127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Git's smart HTTP for the repositories under `base`, on a loopback port,
/// optionally behind Basic auth. Every response closes its connection.
#[derive(Debug)]
pub struct GitHttp {
    addr: SocketAddr,
    requests: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

/// What every connection handler needs.
#[derive(Debug)]
struct Backend {
    program: PathBuf,
    root: PathBuf,
    /// The expected `Authorization` header value and the user it names.
    auth: Option<(String, String)>,
    requests: Arc<AtomicUsize>,
}

impl GitHttp {
    /// Starts the server; with `basic_auth = Some((user, password))` every
    /// request without those credentials gets `401` and
    /// `WWW-Authenticate: Basic realm="git"`.
    pub fn start(base: &Path, basic_auth: Option<(&str, &str)>) -> io::Result<GitHttp> {
        let program = exec_path()?.join("git-http-backend");
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let requests = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let backend = Arc::new(Backend {
            program,
            root: base.to_path_buf(),
            auth: basic_auth.map(|(user, password)| {
                (
                    format!("Basic {}", base64(format!("{user}:{password}").as_bytes())),
                    user.to_string(),
                )
            }),
            requests: requests.clone(),
        });
        let stopping = stop.clone();
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let backend = backend.clone();
                std::thread::spawn(move || {
                    let _ = backend.serve(stream);
                });
            }
        });
        Ok(GitHttp {
            addr,
            requests,
            stop,
            accept: Some(accept),
        })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT/name`.
    pub fn url(&self, name: &str) -> String {
        format!("http://{}/{name}", self.addr)
    }

    /// HTTP requests received so far (refused ones included).
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for GitHttp {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// Where git keeps its programs (`git --exec-path`).
fn exec_path() -> io::Result<PathBuf> {
    let out = Command::new("git").arg("--exec-path").output()?;
    if !out.status.success() {
        return Err(io::Error::other("git --exec-path failed"));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// A parsed request (also `crate::http_recorder`'s).
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) target: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl Backend {
    fn serve(&self, mut stream: TcpStream) -> io::Result<()> {
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut reader = BufReader::new(stream.try_clone()?);
        let request = read_request(&mut reader, &mut stream)?;
        self.requests.fetch_add(1, Ordering::SeqCst);
        if let Some((expected, _)) = &self.auth
            && request.header("authorization") != Some(expected.as_str())
        {
            return respond(
                &mut stream,
                "401 Unauthorized",
                &[("WWW-Authenticate".into(), "Basic realm=\"git\"".into())],
                b"authentication required\n",
            );
        }
        let (path, query) = request
            .target
            .split_once('?')
            .unwrap_or((&request.target, ""));
        let mut cgi = Command::new(&self.program);
        cgi.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("GIT_PROJECT_ROOT", &self.root)
            .env("GIT_HTTP_EXPORT_ALL", "1")
            .env("GATEWAY_INTERFACE", "CGI/1.1")
            .env("SERVER_PROTOCOL", "HTTP/1.1")
            .env("REMOTE_ADDR", "127.0.0.1")
            .env("REQUEST_METHOD", &request.method)
            .env("PATH_INFO", path)
            .env("QUERY_STRING", query)
            .env("CONTENT_LENGTH", request.body.len().to_string());
        for (header, var) in [
            ("content-type", "CONTENT_TYPE"),
            ("content-encoding", "HTTP_CONTENT_ENCODING"),
            ("git-protocol", "GIT_PROTOCOL"),
        ] {
            if let Some(value) = request.header(header) {
                cgi.env(var, value);
            }
        }
        if let Some((_, user)) = &self.auth {
            cgi.env("REMOTE_USER", user);
        }
        let mut child = cgi
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        let body = request.body;
        let writer = std::thread::spawn(move || stdin.write_all(&body));
        let mut output = Vec::new();
        child
            .stdout
            .take()
            .expect("piped stdout")
            .read_to_end(&mut output)?;
        child.wait()?;
        let _ = writer.join();

        let (head, body) = split_cgi(&output);
        let mut status = "200 OK".to_string();
        let mut headers = Vec::new();
        for line in String::from_utf8_lossy(head).lines() {
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("status") {
                    status = value.trim().to_string();
                } else {
                    headers.push((name.trim().to_string(), value.trim().to_string()));
                }
            }
        }
        respond(&mut stream, &status, &headers, body)
    }
}

pub(crate) fn read_request(
    reader: &mut BufReader<TcpStream>,
    stream: &mut TcpStream,
) -> io::Result<Request> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(bad("no request line"));
    };
    let (method, target) = (method.to_string(), target.to_string());
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(bad("headers cut short"));
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((k, v)) = trimmed.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut request = Request {
        method,
        target,
        headers,
        body: Vec::new(),
    };
    if request
        .header("expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    {
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    if let Some(length) = request.header("content-length") {
        let length: usize = length.parse().map_err(|_| bad("bad Content-Length"))?;
        request.body = vec![0; length];
        reader.read_exact(&mut request.body)?;
    } else if request
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let size = line.trim().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size, 16).map_err(|_| bad("bad chunk size"))?;
            if size == 0 {
                // Trailers, up to the empty line.
                loop {
                    line.clear();
                    if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = request.body.len();
            request.body.resize(start + size, 0);
            reader.read_exact(&mut request.body[start..])?;
            line.clear();
            reader.read_line(&mut line)?;
        }
    }
    Ok(request)
}

/// CGI output split into its header block and body.
fn split_cgi(output: &[u8]) -> (&[u8], &[u8]) {
    for (separator, len) in [(&b"\r\n\r\n"[..], 4), (&b"\n\n"[..], 2)] {
        if let Some(at) = output.windows(len).position(|w| w == separator) {
            return (&output[..at], &output[at + len..]);
        }
    }
    (&[], output)
}

pub(crate) fn respond(
    stream: &mut TcpStream,
    status: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

fn base64(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in input.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (*b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648() {
        for (input, expected) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("ci-bot:s3cret", "Y2ktYm90OnMzY3JldA=="),
        ] {
            assert_eq!(base64(input.as_bytes()), expected, "{input}");
        }
    }
}
