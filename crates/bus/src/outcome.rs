//! What a handler's result means for its message, decided once for every
//! consumer from the domain's closed set of error kinds.

use tracelab_domain::{Error, ErrorKind};

/// How a delivery is settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Done (or already done): acknowledge.
    Ack,
    /// Transient failure: nak with backoff; dead-letter after the last delivery.
    Retry { reason: String },
    /// The message can never succeed (poison): dead-letter now and terminate.
    Reject { reason: String },
}

impl Outcome {
    /// The one mapping from [`ErrorKind`] to ack policy:
    ///
    /// | kind | outcome | why |
    /// |---|---|---|
    /// | InvalidArgument | Reject | the message itself is bad; retrying cannot help |
    /// | Conflict | Ack | the effect already happened (duplicate, stale transition): idempotent |
    /// | NotFound | Retry | what it refers to may not be committed yet (ordering across streams) |
    /// | Unavailable, Timeout | Retry | a dependency is down or slow; back off |
    /// | Internal | Retry | maybe transient; bounded by max deliveries, then dead-lettered |
    pub fn from_error(error: &Error) -> Self {
        let reason = format!("{:?}: {}", error.kind, error.message);
        match error.kind {
            ErrorKind::InvalidArgument => Outcome::Reject { reason },
            ErrorKind::Conflict => Outcome::Ack,
            ErrorKind::NotFound
            | ErrorKind::Unavailable
            | ErrorKind::Timeout
            | ErrorKind::Internal => Outcome::Retry { reason },
        }
    }

    pub fn from_result<T>(result: &Result<T, Error>) -> Self {
        match result {
            Ok(_) => Outcome::Ack,
            Err(e) => Self::from_error(e),
        }
    }
}

/// What settling did, for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    Acked,
    /// Nak'ed; the message comes back after `delay`.
    Retrying {
        delay: std::time::Duration,
    },
    /// Published to the dead-letter subject and terminated.
    DeadLettered {
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(kind: ErrorKind, expected: &str) {
        let outcome = Outcome::from_error(&Error::new(kind, "x"));
        let got = match outcome {
            Outcome::Ack => "ack",
            Outcome::Retry { .. } => "retry",
            Outcome::Reject { .. } => "reject",
        };
        assert_eq!(got, expected, "{kind:?}");
    }

    #[test]
    fn each_kind_maps_once() {
        check(ErrorKind::InvalidArgument, "reject");
        check(ErrorKind::Conflict, "ack");
        check(ErrorKind::NotFound, "retry");
        check(ErrorKind::Unavailable, "retry");
        check(ErrorKind::Timeout, "retry");
        check(ErrorKind::Internal, "retry");
        assert_eq!(Outcome::from_result(&Ok::<(), Error>(())), Outcome::Ack);
    }

    #[test]
    fn the_reason_names_the_kind_and_the_message() {
        let o = Outcome::from_error(&Error::invalid("bad json"));
        assert_eq!(
            o,
            Outcome::Reject {
                reason: "InvalidArgument: bad json".into()
            }
        );
    }
}
