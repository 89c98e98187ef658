//! The one error vocabulary of TraceLab: the closed set of kinds every crate
//! maps its errors onto, and what each kind means at every edge — HTTP
//! status, gRPC code, and how a message consumer settles the delivery. Each
//! mapping is written once, here, and tested once; adapters translate their
//! library's errors into a kind and keep the original as the source.

use std::sync::Arc;

/// What kind of failure an error is; decides HTTP/gRPC status and ack policy at the edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The request or message itself is unusable; retrying cannot help.
    InvalidArgument,
    /// What it refers to does not exist (or is not committed yet).
    NotFound,
    /// The state changed first: a stale transition or a duplicate.
    Conflict,
    /// The deployment does not allow it (a repository outside the allow-list,
    /// a path outside the configured roots); asking again cannot help.
    PermissionDenied,
    /// A dependency is down or refused; try again later.
    Unavailable,
    /// A dependency did not answer in time.
    Timeout,
    /// A bug or corrupt data.
    Internal,
}

/// gRPC's canonical status codes that [`ErrorKind`] maps to, with their wire
/// numbers, so this crate needs no gRPC library (`tonic::Code::from_i32(code as i32)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum GrpcCode {
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    PermissionDenied = 7,
    FailedPrecondition = 9,
    Internal = 13,
    Unavailable = 14,
}

/// How a message consumer settles a delivery whose handler failed with a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement {
    /// The effect already happened (duplicate, stale transition): acknowledge.
    Ack,
    /// Maybe transient: nak with backoff, dead-letter after the last delivery.
    Retry,
    /// Poison: dead-letter now and terminate.
    Reject,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 7] = [
        ErrorKind::InvalidArgument,
        ErrorKind::NotFound,
        ErrorKind::Conflict,
        ErrorKind::PermissionDenied,
        ErrorKind::Unavailable,
        ErrorKind::Timeout,
        ErrorKind::Internal,
    ];

    /// The stable snake_case name used in JSON error bodies (`"not_found"`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::PermissionDenied => "permission_denied",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Internal => "internal",
        }
    }

    /// The HTTP status of a REST answer failing with this kind.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::InvalidArgument => 400,
            ErrorKind::NotFound => 404,
            ErrorKind::Conflict => 409,
            ErrorKind::PermissionDenied => 403,
            ErrorKind::Unavailable => 503,
            ErrorKind::Timeout => 504,
            ErrorKind::Internal => 500,
        }
    }

    /// The gRPC code of an answer failing with this kind. A conflict is
    /// `FAILED_PRECONDITION` (gRPC's guidance for "the system is not in the
    /// state the operation needs", which is what a stale transition is).
    pub fn grpc_code(self) -> GrpcCode {
        match self {
            ErrorKind::InvalidArgument => GrpcCode::InvalidArgument,
            ErrorKind::NotFound => GrpcCode::NotFound,
            ErrorKind::Conflict => GrpcCode::FailedPrecondition,
            ErrorKind::PermissionDenied => GrpcCode::PermissionDenied,
            ErrorKind::Unavailable => GrpcCode::Unavailable,
            ErrorKind::Timeout => GrpcCode::DeadlineExceeded,
            ErrorKind::Internal => GrpcCode::Internal,
        }
    }

    /// How a consumer settles a delivery that failed with this kind:
    ///
    /// | kind | settlement | why |
    /// |---|---|---|
    /// | InvalidArgument | Reject | the message itself is bad; retrying cannot help |
    /// | PermissionDenied | Reject | the deployment forbids it; retrying cannot help |
    /// | Conflict | Ack | the effect already happened (duplicate, stale transition): idempotent |
    /// | NotFound | Retry | what it refers to may not be committed yet (ordering across streams) |
    /// | Unavailable, Timeout | Retry | a dependency is down or slow; back off |
    /// | Internal | Retry | maybe transient; bounded by max deliveries, then dead-lettered |
    pub fn settlement(self) -> Settlement {
        match self {
            ErrorKind::InvalidArgument | ErrorKind::PermissionDenied => Settlement::Reject,
            ErrorKind::Conflict => Settlement::Ack,
            ErrorKind::NotFound
            | ErrorKind::Unavailable
            | ErrorKind::Timeout
            | ErrorKind::Internal => Settlement::Retry,
        }
    }

    /// Whether a caller may succeed by trying again later (REST answers say
    /// `Retry-After`).
    pub fn is_transient(self) -> bool {
        matches!(self, ErrorKind::Unavailable | ErrorKind::Timeout)
    }
}

/// A TraceLab error: a kind, a one-line human-readable reason, and the
/// underlying error when there is one (kept for `Error::source` chains, not
/// flattened into the message).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    #[source]
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

/// Errors are equal when kind and message are; the source is context.
impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.message == other.message
    }
}

impl Eq for Error {}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
        }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, message)
    }
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::PermissionDenied, message)
    }
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unavailable, message)
    }
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Timeout, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// Keeps `source` as the cause (`std::error::Error::source`).
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn every_kind_has_one_answer_on_every_edge() {
        let table: Vec<_> = ErrorKind::ALL
            .iter()
            .map(|k| {
                (
                    k.name(),
                    k.http_status(),
                    k.grpc_code() as i32,
                    k.settlement(),
                )
            })
            .collect();
        assert_eq!(
            table,
            vec![
                ("invalid_argument", 400, 3, Settlement::Reject),
                ("not_found", 404, 5, Settlement::Retry),
                ("conflict", 409, 9, Settlement::Ack),
                ("permission_denied", 403, 7, Settlement::Reject),
                ("unavailable", 503, 14, Settlement::Retry),
                ("timeout", 504, 4, Settlement::Retry),
                ("internal", 500, 13, Settlement::Retry),
            ]
        );
        for k in ErrorKind::ALL {
            assert_eq!(
                serde_json::to_value(k).unwrap(),
                k.name(),
                "serde name is name()"
            );
        }
        assert!(ErrorKind::Timeout.is_transient() && !ErrorKind::Internal.is_transient());
    }

    #[test]
    fn the_source_is_kept_and_ignored_by_equality() {
        let io = std::io::Error::other("disk gone");
        let e = Error::unavailable("store unreachable").with_source(io);
        assert_eq!(
            e.source().map(|s| s.to_string()).as_deref(),
            Some("disk gone")
        );
        assert_eq!(e, Error::unavailable("store unreachable"));
        assert_eq!(e.clone().to_string(), "store unreachable");
    }
}
