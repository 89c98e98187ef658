//! The crate's error type. Parsing never fails (partial results are data);
//! errors come from configuration and from group stores.

/// An ingest error. Each variant maps onto one kind of TraceLab's closed set
/// (see [`Error::kind`]), which the services map to HTTP/gRPC/JetStream.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A caller-supplied value is unusable (empty redaction key, unknown format name).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A failure group (or other record) does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// A group store could not be reached or failed.
    #[error("group store unavailable: {0}")]
    Unavailable(String),
    /// A concurrent writer changed a group first (optimistic concurrency).
    #[error("conflict: {0}")]
    Conflict(String),
    /// A group store did not answer in time (pool exhausted, lock wait).
    #[error("timed out: {0}")]
    Timeout(String),
    /// A bug or corrupt stored data; retrying will not help.
    #[error("internal error: {0}")]
    Internal(String),
    /// Reading the input failed.
    #[error("reading input: {0}")]
    Io(#[from] std::io::Error),
    /// An error from a store or other port speaking the domain's errors; keeps its kind.
    #[error(transparent)]
    Domain(#[from] tracelab_domain::Error),
}

/// The closed set of kinds every TraceLab crate shares (with its HTTP,
/// gRPC and ack mappings), re-exported for callers of this crate.
pub use tracelab_domain::ErrorKind;

impl Error {
    /// The closed-set kind this error maps to.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::NotFound(_) => ErrorKind::NotFound,
            Error::Conflict(_) => ErrorKind::Conflict,
            Error::Timeout(_) => ErrorKind::Timeout,
            Error::Internal(_) => ErrorKind::Internal,
            Error::Unavailable(_) | Error::Io(_) => ErrorKind::Unavailable,
            Error::Domain(e) => e.kind,
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
