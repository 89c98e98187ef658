//! The chat client against the scripted fake server: the key only in the
//! Authorization header, planted secrets never sent, and every bad answer a
//! clear error of the right kind without the key in it.

use std::time::{Duration, Instant};
use tracelab_domain::ErrorKind;
use tracelab_domain::ports::{ChatMessage, ChatModel, ChatRequest};
use tracelab_llm::fake::{Answer, FakeChat, down_url};
use tracelab_llm::{ApiKey, LlmClient, LlmSettings};
use tracelab_testkit::secrets::{planted, secrets_of};

const KEY: &str = "sk-test-4f1d9a7c2b8e6d3f0a5c9e1b7d4f2a8c";

fn client(base: &str) -> LlmClient {
    let mut s = LlmSettings::new(base, "fake-coder");
    s.api_key = ApiKey::new(KEY);
    s.request_timeout = Duration::from_secs(20);
    LlmClient::new(s).unwrap()
}

fn request(text: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage {
                role: "system".into(),
                content: "You fix bugs.".into(),
            },
            ChatMessage {
                role: "user".into(),
                content: text.into(),
            },
        ],
        max_tokens: 256,
        timeout: Duration::from_secs(20),
    }
}

#[tokio::test]
async fn a_reply_carries_content_tokens_and_the_prompt_digest_and_the_key_only_in_its_header() {
    let fake = FakeChat::start(vec![Answer::Reply("the fix".into())]).await;
    let c = client(&fake.base_url);
    let reply = c.chat(&request("a failing test")).await.unwrap();
    assert_eq!(reply.content, "the fix");
    assert_eq!(reply.model, "fake-coder");
    assert_eq!(reply.prompt_tokens, 1200);
    assert!(reply.completion_tokens > 0);
    assert!(!reply.truncated);
    assert_eq!(reply.prompt_sha256.len(), 64);
    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(!seen[0].body.contains(KEY), "the key is in the body");
    let body: serde_json::Value = serde_json::from_str(&seen[0].body).unwrap();
    assert_eq!(body["model"], "fake-coder");
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(body["messages"][1]["content"], "a failing test");
    // The same prompt, the same digest; another prompt, another one.
    let fake2 = FakeChat::start(vec![Answer::Reply("a".into()), Answer::Reply("b".into())]).await;
    let c2 = client(&fake2.base_url);
    let again = c2.chat(&request("a failing test")).await.unwrap();
    let other = c2.chat(&request("another failing test")).await.unwrap();
    assert_eq!(again.prompt_sha256, reply.prompt_sha256);
    assert_ne!(other.prompt_sha256, reply.prompt_sha256);
}

#[tokio::test]
async fn no_planted_secret_reaches_the_server() {
    let corpus = planted();
    assert!(corpus.len() >= 100);
    let prompt: String = corpus
        .iter()
        .map(|(_, value, ctx)| format!("E   {}\n", ctx.replace("{}", value)))
        .collect();
    let fake = FakeChat::start(vec![Answer::Reply("ok".into())]).await;
    client(&fake.base_url)
        .chat(&request(&format!(
            "Traceback (most recent call last):\n{prompt}AssertionError"
        )))
        .await
        .unwrap();
    let seen = fake.seen();
    let body: serde_json::Value = serde_json::from_str(&seen[0].body).unwrap();
    let sent = body["messages"][1]["content"].as_str().unwrap();
    assert!(sent.contains("AssertionError"), "the prompt itself is sent");
    let leaked: Vec<String> = corpus
        .iter()
        .flat_map(|(kind, value, _)| {
            secrets_of(kind, value)
                .into_iter()
                .filter(|s| sent.contains(s.as_str()))
                .map(move |s| format!("{kind}: {s}"))
        })
        .collect();
    assert!(leaked.is_empty(), "sent to the model: {leaked:?}");
}

#[tokio::test]
async fn bad_answers_are_clear_errors_without_the_key() {
    let cases: Vec<(Answer, ErrorKind, &str)> = vec![
        (
            Answer::Raw(200, "{\"choices\": [{\"message\": ".into()),
            ErrorKind::Internal,
            "not JSON",
        ),
        (
            Answer::Raw(200, "{\"choices\": []}".into()),
            ErrorKind::Internal,
            "no choices",
        ),
        (
            Answer::Raw(401, format!("{{\"error\": \"bad key {KEY}\"}}")),
            ErrorKind::PermissionDenied,
            "refused the API key",
        ),
        (
            Answer::Raw(503, "overloaded".into()),
            ErrorKind::Unavailable,
            "HTTP 503",
        ),
        (
            // A hostile server echoing the key in an error body.
            Answer::Raw(400, format!("{{\"error\": \"echo {KEY}\"}}")),
            ErrorKind::InvalidArgument,
            "HTTP 400",
        ),
    ];
    for (answer, kind, says) in cases {
        let fake = FakeChat::start(vec![answer.clone()]).await;
        let e = client(&fake.base_url)
            .chat(&request("x"))
            .await
            .unwrap_err();
        assert_eq!(e.kind, kind, "{answer:?}: {}", e.message);
        assert!(e.message.contains(says), "{answer:?}: {}", e.message);
        assert!(!e.message.contains(KEY), "{}", e.message);
        assert!(!format!("{e:?}").contains(KEY));
    }
}

#[tokio::test]
async fn a_truncated_reply_says_so() {
    let fake = FakeChat::start(vec![Answer::Truncated("<<<<<<< SEARCH\nx =".into())]).await;
    let reply = client(&fake.base_url).chat(&request("x")).await.unwrap();
    assert!(reply.truncated);
}

#[tokio::test]
async fn a_server_that_is_down_is_unavailable() {
    let e = client(&down_url().await)
        .chat(&request("x"))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unavailable, "{}", e.message);
    assert!(e.message.contains("cannot reach"), "{}", e.message);
    assert!(!e.message.contains(KEY));
}

#[tokio::test]
async fn a_slow_server_hits_the_request_timeout() {
    let fake = FakeChat::start(vec![Answer::Slow(
        Duration::from_secs(30),
        Box::new(Answer::Reply("late".into())),
    )])
    .await;
    let started = Instant::now();
    let mut r = request("x");
    r.timeout = Duration::from_millis(500);
    let e = client(&fake.base_url).chat(&r).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Timeout, "{}", e.message);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(!e.message.contains(KEY));
}
