//! The LLM patch agent's model client (#12): plain OpenAI-compatible
//! `POST {base}/chat/completions`, no vendor SDK, so vLLM, Ollama, the
//! llama.cpp server and hosted APIs all answer it.
//!
//! Two promises, kept here because every prompt passes through here:
//!
//! - **No secret leaves in a prompt.** Every message is run through
//!   `tracelab-evidence`'s redactor before it is sent (the engine may not
//!   depend on `tracelab-evidence`, so the redaction sits in the one place all
//!   prompts go through, whoever built them). The pseudonym key is random
//!   per client: pseudonyms only need to agree within one investigation.
//! - **The API key goes only to the configured endpoint**, in the
//!   `Authorization` header: redirects are not followed, a key is refused
//!   over clear-text http except on loopback, and neither `Debug` nor any
//!   error message holds it.

#[cfg(feature = "fakes")]
pub mod fake;

use sha2::{Digest, Sha256};
use std::time::Duration;
use tracelab_domain::ports::{ChatMessage, ChatModel, ChatReply, ChatRequest};
use tracelab_domain::{Error, Result};
use tracelab_evidence::Redactor;

/// A bearer key. No `Display`; `Debug` shows nothing of it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// `None` for an empty (or all-whitespace) key.
    pub fn new(key: impl Into<String>) -> Option<Self> {
        let key = key.into().trim().to_string();
        (!key.is_empty()).then_some(Self(key))
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Where the model is and how long it may take.
#[derive(Debug, Clone)]
pub struct LlmSettings {
    /// The API root as the OpenAI clients take it (`http://127.0.0.1:8000/v1`,
    /// `http://localhost:11434/v1`, `https://api.example.com/v1`);
    /// `/chat/completions` is appended unless it is there already.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<ApiKey>,
    pub connect_timeout: Duration,
    /// The longest one request may take (the engine's wall budget may cut it shorter).
    pub request_timeout: Duration,
}

impl LlmSettings {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(120),
        }
    }
}

/// The model server as a service's settings file names it (the verifier's
/// `[repair.llm]`): the key comes from a mounted file
/// (`TRACELAB__REPAIR__LLM__API_KEY_FILE`), never a flag.
#[derive(Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LlmServer {
    /// The API root (`http://127.0.0.1:8000/v1`); empty: none configured.
    pub base_url: String,
    pub model: String,
    /// Empty: the server wants no key.
    pub api_key: String,
    /// The longest one request may take; 0: the client's default (120 s).
    pub timeout_seconds: u64,
}

impl std::fmt::Debug for LlmServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmServer")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field(
                "api_key",
                &(!self.api_key.is_empty()).then_some("<redacted>"),
            )
            .field("timeout_seconds", &self.timeout_seconds)
            .finish()
    }
}

impl LlmServer {
    /// The client for these settings; `what` names the settings in the
    /// error when the server is not configured (`repair.llm`).
    pub fn client(&self, what: &str) -> Result<LlmClient> {
        if self.base_url.trim().is_empty() || self.model.trim().is_empty() {
            return Err(Error::invalid(format!(
                "the LLM patch agent needs a model server: set {what}.base_url (the OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1) and {what}.model, and {what}.api_key from a file when the server wants a key"
            )));
        }
        let mut settings = LlmSettings::new(self.base_url.trim(), self.model.trim());
        settings.api_key = ApiKey::new(self.api_key.clone());
        if self.timeout_seconds > 0 {
            settings.request_timeout = Duration::from_secs(self.timeout_seconds);
        }
        LlmClient::new(settings)
    }
}

/// Bytes of a reply read at most: a chat completion is small, a hostile
/// server's endless body is not.
const MAX_REPLY_BYTES: usize = 4 * 1024 * 1024;

/// The chat-completions client.
#[derive(Clone)]
pub struct LlmClient {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    model: String,
    key: Option<ApiKey>,
    request_timeout: Duration,
    redactor: Redactor,
}

impl std::fmt::Debug for LlmClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmClient")
            .field("endpoint", &self.endpoint.as_str())
            .field("model", &self.model)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .field("request_timeout", &self.request_timeout)
            .finish()
    }
}

/// Installs ring as rustls' process-wide crypto provider, once (reqwest is
/// built without one); keeps a provider another crate installed first.
fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

impl LlmClient {
    pub fn new(settings: LlmSettings) -> Result<Self> {
        let base = settings.base_url.trim();
        let refuse = |why: &str| {
            Err(Error::invalid(format!(
                "the model server URL {base:?} {why}"
            )))
        };
        let Ok(mut url) = reqwest::Url::parse(base) else {
            return refuse("is not a URL");
        };
        if !url.username().is_empty() || url.password().is_some() {
            // Not echoed: the URL itself may be the secret.
            return Err(Error::invalid(
                "the model server URL holds credentials; give the API key as TRACELAB_LLM_API_KEY or a key file",
            ));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return refuse("has a query or fragment");
        }
        if settings.model.trim().is_empty() {
            return Err(Error::invalid("the model name is empty"));
        }
        let loopback = matches!(
            url.host_str(),
            Some("localhost" | "127.0.0.1" | "[::1]" | "::1")
        );
        match url.scheme() {
            "https" => {}
            "http" if loopback || settings.api_key.is_none() => {}
            "http" => {
                return refuse(
                    "is http:// on another host and an API key is set: the key would travel in clear text (use https://)",
                );
            }
            _ => return refuse("must be http:// or https://"),
        }
        if !url
            .path()
            .trim_end_matches('/')
            .ends_with("/chat/completions")
            && let Ok(mut segments) = url.path_segments_mut()
        {
            segments.pop_if_empty().push("chat").push("completions");
        }
        if settings.request_timeout.is_zero() || settings.connect_timeout.is_zero() {
            return Err(Error::invalid("the model server timeouts must be positive"));
        }
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .timeout(settings.request_timeout)
            // The key goes to the configured endpoint and nowhere else.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("tracelab-llm/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::internal(format!("cannot build the HTTP client: {e}")))?;
        let mut key = [0u8; 32];
        let random = uuid::Uuid::now_v7();
        let mut h = Sha256::new();
        h.update(random.as_bytes());
        h.update(std::process::id().to_le_bytes());
        h.update(
            std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), 0u8)
                .to_le_bytes(),
        );
        key.copy_from_slice(&h.finalize());
        let redactor = Redactor::new(&key)
            .map_err(|e| Error::internal(format!("cannot build the redactor: {e}")))?;
        Ok(Self {
            client,
            endpoint: url,
            model: settings.model.trim().to_string(),
            key: settings.api_key,
            request_timeout: settings.request_timeout,
            redactor,
        })
    }

    /// Where requests go (holds no credentials).
    pub fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    /// The messages as they will be sent: each content redacted.
    pub fn redacted(&self, messages: &[ChatMessage]) -> Vec<ChatMessage> {
        messages
            .iter()
            .map(|m| ChatMessage {
                role: m.role.clone(),
                content: self.redactor.redact_text(&m.content).into_owned(),
            })
            .collect()
    }

    /// Any message that reaches a caller: without the key, whatever the
    /// server or the HTTP stack put in it.
    fn scrub(&self, message: String) -> String {
        match &self.key {
            Some(ApiKey(k)) if message.contains(k.as_str()) => {
                message.replace(k.as_str(), "<redacted>")
            }
            _ => message,
        }
    }

    fn error(&self, e: Error) -> Error {
        Error::new(e.kind, self.scrub(e.message))
    }

    async fn send(&self, request: &ChatRequest) -> Result<ChatReply> {
        let messages = self.redacted(&request.messages);
        let digest = hex(&Sha256::digest(
            serde_json::to_vec(&messages).unwrap_or_default(),
        ));
        let body = serde_json::json!({
            "model": self.model,
            "messages": messages,
            "max_tokens": request.max_tokens,
            "temperature": 0,
            "stream": false,
        });
        let timeout = request.timeout.min(self.request_timeout);
        let mut builder = self
            .client
            .post(self.endpoint.clone())
            .timeout(timeout)
            .json(&body);
        if let Some(ApiKey(key)) = &self.key {
            builder = builder.bearer_auth(key);
        }
        let endpoint = self.endpoint.as_str();
        let transport = |e: reqwest::Error| {
            if e.is_timeout() {
                Error::timeout(format!(
                    "the model server at {endpoint} did not answer within {:.0} s",
                    timeout.as_secs_f64()
                ))
            } else if e.is_connect() {
                Error::unavailable(format!(
                    "cannot reach the model server at {endpoint} (connection failed)"
                ))
            } else {
                Error::unavailable(format!(
                    "the request to the model server at {endpoint} failed: {}",
                    e.without_url()
                ))
            }
        };
        let mut response = builder.send().await.map_err(transport)?;
        let status = response.status();
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            if bytes.len() + chunk.len() > MAX_REPLY_BYTES {
                return Err(Error::internal(format!(
                    "the model server's reply is longer than {MAX_REPLY_BYTES} bytes"
                )));
            }
            bytes.extend_from_slice(&chunk);
        }
        match status.as_u16() {
            200..=299 => {}
            401 | 403 => {
                return Err(Error::permission_denied(format!(
                    "the model server refused the API key (HTTP {})",
                    status.as_u16()
                )));
            }
            429 | 500..=599 => {
                return Err(Error::unavailable(format!(
                    "the model server answered HTTP {}",
                    status.as_u16()
                )));
            }
            code => {
                return Err(Error::invalid(format!(
                    "the model server answered HTTP {code}: {}",
                    excerpt(&bytes)
                )));
            }
        }
        let reply = parse_completion(&bytes)?;
        let estimate = |text: usize| (text as u64).div_ceil(4);
        let prompt_chars: usize = messages.iter().map(|m| m.content.len()).sum();
        Ok(ChatReply {
            model: reply.model.unwrap_or_else(|| self.model.clone()),
            prompt_sha256: digest,
            prompt_tokens: reply
                .prompt_tokens
                .unwrap_or_else(|| estimate(prompt_chars)),
            completion_tokens: reply
                .completion_tokens
                .unwrap_or_else(|| estimate(reply.content.len())),
            truncated: reply.finish_reason.as_deref() == Some("length"),
            content: reply.content,
        })
    }
}

#[async_trait::async_trait]
impl ChatModel for LlmClient {
    fn model(&self) -> &str {
        &self.model
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatReply> {
        let result = self.send(request).await.map_err(|e| self.error(e));
        match &result {
            Ok(r) => tracing::debug!(
                model = %r.model,
                prompt_sha256 = %r.prompt_sha256,
                prompt_tokens = r.prompt_tokens,
                completion_tokens = r.completion_tokens,
                truncated = r.truncated,
                "model replied"
            ),
            Err(e) => tracing::debug!(error = %e.message, "model request failed"),
        }
        result
    }
}

#[derive(Debug)]
struct Completion {
    content: String,
    model: Option<String>,
    finish_reason: Option<String>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

/// `choices[0].message.content` of a chat completion, strictly.
fn parse_completion(bytes: &[u8]) -> Result<Completion> {
    let garbage = |why: &str| {
        Err(Error::internal(format!(
            "the model server's reply is not a chat completion ({why}): {}",
            excerpt(bytes)
        )))
    };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) else {
        return garbage("not JSON");
    };
    let Some(choice) = value["choices"].as_array().and_then(|c| c.first()) else {
        return garbage("no choices");
    };
    let Some(content) = choice["message"]["content"].as_str() else {
        return garbage("no message content");
    };
    let usage = &value["usage"];
    Ok(Completion {
        content: content.to_string(),
        model: value["model"]
            .as_str()
            .filter(|m| !m.is_empty())
            .map(str::to_string),
        finish_reason: choice["finish_reason"].as_str().map(str::to_string),
        prompt_tokens: usage["prompt_tokens"].as_u64(),
        completion_tokens: usage["completion_tokens"].as_u64(),
    })
}

/// The start of a body for an error message, on one line.
fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let one_line: String = text
        .chars()
        .take(160)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().count() > 160 {
        format!("{one_line}…")
    } else {
        one_line
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_the_base_with_chat_completions() {
        for (base, endpoint) in [
            (
                "http://127.0.0.1:8000/v1",
                "http://127.0.0.1:8000/v1/chat/completions",
            ),
            (
                "http://localhost:11434/v1/",
                "http://localhost:11434/v1/chat/completions",
            ),
            (
                "https://api.example.com/v1/chat/completions",
                "https://api.example.com/v1/chat/completions",
            ),
        ] {
            let c = LlmClient::new(LlmSettings::new(base, "m")).unwrap();
            assert_eq!(c.endpoint(), endpoint);
        }
    }

    #[test]
    fn a_key_is_refused_over_clear_text_to_another_host() {
        let mut s = LlmSettings::new("http://models.internal:8000/v1", "m");
        assert!(LlmClient::new(s.clone()).is_ok(), "no key, http is allowed");
        s.api_key = ApiKey::new("sk-secret-value");
        let e = LlmClient::new(s).unwrap_err();
        assert!(e.message.contains("clear text"), "{}", e.message);
        let e = LlmClient::new(LlmSettings::new("https://u:p@h/v1", "m")).unwrap_err();
        assert!(!e.message.contains("u:p"), "{}", e.message);
        assert!(LlmClient::new(LlmSettings::new("ftp://h/v1", "m")).is_err());
        assert!(LlmClient::new(LlmSettings::new("https://h/v1", " ")).is_err());
    }

    #[test]
    fn debug_output_holds_no_key() {
        let mut s = LlmSettings::new("https://h/v1", "m");
        s.api_key = ApiKey::new("sk-live-1234567890abcdef");
        assert!(!format!("{s:?}").contains("1234567890"));
        let c = LlmClient::new(s).unwrap();
        assert!(!format!("{c:?}").contains("1234567890"));
        assert_eq!(ApiKey::new("  "), None);
    }

    #[test]
    fn a_completion_is_parsed_strictly() {
        let ok = br#"{"model":"m1","choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#;
        let c = parse_completion(ok).unwrap();
        assert_eq!(
            (
                c.content.as_str(),
                c.prompt_tokens,
                c.finish_reason.as_deref()
            ),
            ("hi", Some(3), Some("length"))
        );
        for bad in [
            &b"{\"choices\": [{\"message\": "[..],
            br#"{"choices":[]}"#,
            br#"{"choices":[{"message":{"content":null}}]}"#,
            b"<html>502</html>",
        ] {
            let e = parse_completion(bad).unwrap_err();
            assert_eq!(e.kind, tracelab_domain::ErrorKind::Internal);
        }
    }
}
