//! A scripted OpenAI-compatible server on loopback, for tests: each request
//! to `POST /v1/chat/completions` is recorded (its `Authorization` header and
//! body) and answered with the next scripted answer; once the script is
//! spent, HTTP 500.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A chat completion with `content`, `finish_reason` "stop" and usage.
    Reply(String),
    /// A chat completion cut at the token limit (`finish_reason` "length").
    Truncated(String),
    /// Any status and body, verbatim.
    Raw(u16, String),
    /// Waits, then answers.
    Slow(Duration, Box<Answer>),
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub authorization: Option<String>,
    pub body: String,
}

#[derive(Clone)]
struct App {
    script: Arc<Mutex<VecDeque<Answer>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

pub struct FakeChat {
    /// The API root, as `LlmSettings::base_url` takes it (`http://127.0.0.1:P/v1`).
    pub base_url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeChat {
    pub async fn start(script: Vec<Answer>) -> Self {
        let app = App {
            script: Arc::new(Mutex::new(script.into())),
            seen: Arc::new(Mutex::new(Vec::new())),
        };
        let seen = app.seen.clone();
        let router = Router::new()
            .route("/v1/chat/completions", post(complete))
            .with_state(app);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake model server");
        let addr = listener.local_addr().expect("fake server address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Self {
            base_url: format!("http://{addr}/v1"),
            seen,
            task,
        }
    }

    /// Every request so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("fake server requests").clone()
    }
}

impl Drop for FakeChat {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A loopback URL where nothing listens (a server that is down).
pub async fn down_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    drop(listener);
    format!("http://{addr}/v1")
}

/// A chat completion body with `content`.
pub fn completion(content: &str, finish_reason: &str) -> String {
    serde_json::json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": "fake-coder",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": finish_reason,
        }],
        "usage": {
            "prompt_tokens": 1200,
            "completion_tokens": content.len().div_ceil(4),
            "total_tokens": 1200 + content.len().div_ceil(4),
        },
    })
    .to_string()
}

async fn complete(State(app): State<App>, headers: HeaderMap, body: String) -> Response {
    app.seen.lock().expect("fake server requests").push(Seen {
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        body,
    });
    let next = app.script.lock().expect("fake server script").pop_front();
    let mut answer = match next {
        Some(a) => a,
        None => return (StatusCode::INTERNAL_SERVER_ERROR, "script spent").into_response(),
    };
    loop {
        match answer {
            Answer::Slow(delay, then) => {
                tokio::time::sleep(delay).await;
                answer = *then;
            }
            Answer::Reply(content) => return json(200, completion(&content, "stop")),
            Answer::Truncated(content) => return json(200, completion(&content, "length")),
            Answer::Raw(status, body) => return json(status, body),
        }
    }
}

fn json(status: u16, body: String) -> Response {
    (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        [("content-type", "application/json")],
        body,
    )
        .into_response()
}
