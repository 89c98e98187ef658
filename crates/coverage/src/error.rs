//! The crate's error type, one kind from the shared closed set
//! (`tracelab_domain::ErrorKind`) per error. The messages are the ones the
//! code index gave before the move, so `tracelab locate --test` and
//! `tracelab repro` print what they always printed.

use std::path::PathBuf;

/// The closed set of kinds every TraceLab crate shares, re-exported for
/// callers of this crate.
pub use tracelab_domain::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("io on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("coverage data: {0}")]
    Coverage(String),
    /// The sandbox's failure, with its kind.
    #[error(transparent)]
    Port(#[from] tracelab_domain::Error),
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                ErrorKind::NotFound
            }
            Error::Io { .. } => ErrorKind::Unavailable,
            Error::InvalidArgument(_) | Error::Coverage(_) => ErrorKind::InvalidArgument,
            Error::Port(e) => e.kind,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_cause() {
        let missing = Error::io("x", std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        assert_eq!(
            Error::Coverage("no contexts".into()).kind(),
            ErrorKind::InvalidArgument
        );
        let port = tracelab_domain::Error::new(ErrorKind::Timeout, "slow");
        assert_eq!(Error::from(port).kind(), ErrorKind::Timeout);
    }
}
