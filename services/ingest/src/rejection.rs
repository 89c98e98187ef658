//! Why a submission was not taken, and what each answer is on each channel —
//! decided here once: HTTP status (+ `Retry-After`), gRPC code, and the
//! intake consumer's error kind (which `tracelab_fleet::worker` turns into a
//! nak with backoff or a dead letter).

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::time::Duration;
use tracelab_domain::Error;
use tracelab_evidence::Refusal;

#[derive(Debug)]
pub enum Rejection {
    /// Over a size limit or malformed: sending it again cannot succeed.
    Refused(Refusal),
    /// The source sent more than its quota; retry after the wait (HTTP 429).
    RateLimited { retry_after: Duration },
    /// The intake is full; retry after the wait (HTTP 429; the intake queue waits this long).
    Busy { retry_after: Duration },
    /// No or unknown bearer token.
    Unauthenticated(String),
    /// A content type or encoding the endpoint does not read.
    Unsupported(String),
    /// Storing or publishing failed (a backend is down): retry later.
    Failed(Error),
}

impl From<Refusal> for Rejection {
    fn from(r: Refusal) -> Self {
        Rejection::Refused(r)
    }
}

impl From<Error> for Rejection {
    fn from(e: Error) -> Self {
        Rejection::Failed(e)
    }
}

/// A group store error as a domain error of the same kind (the original kept as the source).
pub fn ingest_error(e: tracelab_evidence::Error) -> Error {
    Error::new(e.kind(), e.to_string()).with_source(e)
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejection::Refused(r) => r.fmt(f),
            Rejection::RateLimited { retry_after } => {
                write!(f, "rate limit reached; retry in {retry_after:?}")
            }
            Rejection::Busy { retry_after } => {
                write!(f, "intake is busy; retry in {retry_after:?}")
            }
            Rejection::Unauthenticated(m) | Rejection::Unsupported(m) => f.write_str(m),
            Rejection::Failed(e) => e.fmt(f),
        }
    }
}

impl Rejection {
    /// Short machine-readable name for the JSON error body and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Rejection::Refused(Refusal::TooLarge { .. }) => "too_large",
            Rejection::RateLimited { .. } => "rate_limited",
            Rejection::Busy { .. } => "busy",
            Rejection::Refused(Refusal::Invalid(_)) => "invalid_argument",
            Rejection::Unauthenticated(_) => "unauthenticated",
            Rejection::Unsupported(_) => "unsupported_media_type",
            Rejection::Failed(e) => e.kind.name(),
        }
    }

    pub fn http_status(&self) -> StatusCode {
        match self {
            Rejection::Refused(r) => {
                StatusCode::from_u16(r.http_status()).unwrap_or(StatusCode::BAD_REQUEST)
            }
            Rejection::RateLimited { .. } | Rejection::Busy { .. } => StatusCode::TOO_MANY_REQUESTS,
            Rejection::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Rejection::Unsupported(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Rejection::Failed(e) => StatusCode::from_u16(e.kind.http_status())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        }
    }

    /// The `Retry-After` header value: whole seconds, rounded up, at least 1.
    fn retry_after(&self) -> Option<String> {
        match self {
            Rejection::RateLimited { retry_after } | Rejection::Busy { retry_after } => {
                let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
                Some(secs.max(1).to_string())
            }
            Rejection::Failed(e) if e.kind.is_transient() => Some("1".into()),
            _ => None,
        }
    }

    pub fn grpc_status(&self) -> tonic::Status {
        let m = self.to_string();
        match self {
            Rejection::Refused(Refusal::Invalid(_)) => tonic::Status::invalid_argument(m),
            Rejection::Refused(Refusal::TooLarge { .. })
            | Rejection::RateLimited { .. }
            | Rejection::Busy { .. } => tonic::Status::resource_exhausted(m),
            Rejection::Unauthenticated(_) => tonic::Status::unauthenticated(m),
            Rejection::Unsupported(_) => tonic::Status::invalid_argument(m),
            Rejection::Failed(e) => tracelab_service::grpc::status_of(e.kind, m),
        }
    }

    /// For the intake consumer: busy or rate-limited → Unavailable (nak,
    /// redelivered with backoff); a bad or oversized message → InvalidArgument
    /// (dead letter with this reason); backend failures keep their kind.
    pub fn into_error(self) -> Error {
        match self {
            r @ (Rejection::Busy { .. } | Rejection::RateLimited { .. }) => {
                Error::unavailable(r.to_string())
            }
            Rejection::Failed(e) => e,
            other => Error::invalid(other.to_string()),
        }
    }
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let status = self.http_status();
        let retry_after = self.retry_after();
        let body = json!({"error": {"kind": self.kind(), "message": self.to_string()}});
        let mut response = (status, Json(body)).into_response();
        let headers = response.headers_mut();
        if let Some(v) = retry_after.and_then(|v| HeaderValue::from_str(&v).ok()) {
            headers.insert(header::RETRY_AFTER, v);
        }
        if status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracelab_domain::ErrorKind;

    #[test]
    fn each_refusal_has_its_answer_on_every_channel() {
        let limited = Rejection::RateLimited {
            retry_after: Duration::from_millis(1500),
        };
        assert_eq!(limited.http_status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(limited.retry_after().as_deref(), Some("2"));
        assert_eq!(limited.grpc_status().code(), tonic::Code::ResourceExhausted);
        assert_eq!(limited.into_error().kind, ErrorKind::Unavailable);

        let busy = Rejection::Busy {
            retry_after: Duration::from_millis(10),
        };
        assert_eq!(busy.http_status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            busy.retry_after().as_deref(),
            Some("1"),
            "at least a second"
        );
        assert_eq!(busy.grpc_status().code(), tonic::Code::ResourceExhausted);
        assert_eq!(busy.into_error().kind, ErrorKind::Unavailable);

        let invalid = Rejection::from(Refusal::Invalid("bad".into()));
        assert_eq!(invalid.http_status(), StatusCode::BAD_REQUEST);
        assert_eq!(invalid.grpc_status().code(), tonic::Code::InvalidArgument);
        assert_eq!(invalid.into_error().kind, ErrorKind::InvalidArgument);

        let big = Rejection::from(Refusal::TooLarge {
            what: "body".into(),
            size: 2,
            limit: 1,
        });
        assert_eq!(big.http_status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(big.retry_after(), None);
        assert_eq!(big.into_error().kind, ErrorKind::InvalidArgument);

        let down = Rejection::from(Error::unavailable("pg"));
        assert_eq!(down.http_status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(down.into_error().kind, ErrorKind::Unavailable);
    }
}
