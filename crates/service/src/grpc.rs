//! What the gRPC servers share: domain errors as gRPC statuses, and accepted
//! connections with `TCP_NODELAY`.

use tokio::net::TcpListener;
use tracelab_domain::{Error, ErrorKind};

/// The gRPC status for a domain error (the kind's one mapping,
/// [`ErrorKind::grpc_code`]; REST uses [`ErrorKind::http_status`]).
pub fn status(e: Error) -> tonic::Status {
    status_of(e.kind, e.message)
}

/// The gRPC status for an error of `kind` (for crates whose errors carry a
/// kind but are not domain errors).
pub fn status_of(kind: ErrorKind, message: impl Into<String>) -> tonic::Status {
    tonic::Status::new(tonic::Code::from_i32(kind.grpc_code() as i32), message)
}

/// The accepted connections of `listener` with `TCP_NODELAY` set, for a
/// tonic server's `serve_with_incoming_shutdown`. Without it a small answer
/// waits for the client's delayed ACK (Nagle): ~40 ms per call on Linux,
/// measured on the indexer. tonic sets it only on listeners it binds itself.
pub fn incoming_nodelay(
    listener: TcpListener,
) -> impl futures_core::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    use tokio_stream::StreamExt as _;
    tokio_stream::wrappers::TcpListenerStream::new(listener).map(|conn| {
        if let Ok(c) = &conn {
            let _ = c.set_nodelay(true);
        }
        conn
    })
}

/// Makes `span` continue the caller's W3C trace from the request's `traceparent` metadata.
pub fn continue_trace<T>(span: &tracing::Span, request: &tonic::Request<T>) {
    let parent = request
        .metadata()
        .get("traceparent")
        .and_then(|v| v.to_str().ok());
    crate::telemetry::continue_trace(span, parent);
}
