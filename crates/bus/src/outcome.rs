//! What a handler's result means for its message, decided once for every
//! consumer from the domain's closed set of error kinds.

use tracelab_domain::Error;
use tracelab_domain::error::Settlement;

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
    /// The outcome of a failed handler: the kind's one settlement
    /// ([`tracelab_domain::ErrorKind::settlement`], with the table of why), with a reason
    /// for the dead letter.
    pub fn from_error(error: &Error) -> Self {
        let reason = format!("{:?}: {}", error.kind, error.message);
        match error.kind.settlement() {
            Settlement::Reject => Outcome::Reject { reason },
            Settlement::Ack => Outcome::Ack,
            Settlement::Retry => Outcome::Retry { reason },
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
    use tracelab_domain::ErrorKind;

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
