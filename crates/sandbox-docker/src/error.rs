//! Maps bollard's errors onto the domain's closed set of kinds, once.

use bollard::errors::Error as Bollard;
use tracelab_domain::{Error, ErrorKind};

/// `context` says what we were doing ("create container", "start exec").
pub(crate) fn docker(context: &str, error: Bollard) -> Error {
    let kind = kind_of(&error);
    let detail = match &error {
        Bollard::DockerResponseServerError {
            status_code,
            message,
        } => format!("{message} (HTTP {status_code})"),
        Bollard::RequestTimeoutError => "the Docker daemon did not answer in time".to_string(),
        other => other.to_string(),
    };
    let message = if kind == ErrorKind::Unavailable {
        format!("docker {context}: the Docker daemon does not answer: {detail}")
    } else {
        format!("docker {context}: {detail}")
    };
    Error::new(kind, message)
}

fn kind_of(error: &Bollard) -> ErrorKind {
    match error {
        Bollard::DockerResponseServerError { status_code, .. } => match status_code {
            400 => ErrorKind::InvalidArgument,
            404 => ErrorKind::NotFound,
            409 => ErrorKind::Conflict,
            503 => ErrorKind::Unavailable,
            _ => ErrorKind::Internal,
        },
        Bollard::RequestTimeoutError => ErrorKind::Timeout,
        Bollard::IOError { .. }
        | Bollard::HyperResponseError { .. }
        | Bollard::HyperLegacyError { .. }
        | Bollard::SocketNotFoundError(_)
        | Bollard::HttpClientError { .. } => ErrorKind::Unavailable,
        _ => ErrorKind::Internal,
    }
}

/// True when Docker answered 404 (the object is gone).
pub(crate) fn is_not_found(error: &Bollard) -> bool {
    matches!(
        error,
        Bollard::DockerResponseServerError {
            status_code: 404,
            ..
        }
    )
}

pub(crate) fn is_conflict(error: &bollard::errors::Error) -> bool {
    matches!(
        error,
        bollard::errors::Error::DockerResponseServerError {
            status_code: 409,
            ..
        }
    )
}

pub(crate) fn is_removal_in_progress(error: &bollard::errors::Error) -> bool {
    matches!(error, bollard::errors::Error::DockerResponseServerError { status_code: 409, message } if message.contains("already in progress"))
}

/// Force-removes a container and its volumes, reading "no such container"
/// and "removal already in progress" as done: `Ok(true)` when this call
/// removed it, `Ok(false)` when it was gone or going.
pub(crate) async fn force_remove(docker: &bollard::Docker, id: &str) -> Result<bool, Bollard> {
    let options = bollard::query_parameters::RemoveContainerOptions {
        force: true,
        v: true,
        link: false,
    };
    match docker.remove_container(id, Some(options)).await {
        Ok(()) => Ok(true),
        Err(error) if is_not_found(&error) || is_removal_in_progress(&error) => Ok(false),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_status() {
        let e = |status_code| Bollard::DockerResponseServerError {
            status_code,
            message: "m".into(),
        };
        assert_eq!(docker("x", e(404)).kind, ErrorKind::NotFound);
        assert_eq!(docker("x", e(409)).kind, ErrorKind::Conflict);
        assert_eq!(docker("x", e(500)).kind, ErrorKind::Internal);
        assert_eq!(
            docker("x", Bollard::RequestTimeoutError).kind,
            ErrorKind::Timeout
        );
        let gone = docker("ping", Bollard::SocketNotFoundError("/nope.sock".into()));
        assert_eq!(gone.kind, ErrorKind::Unavailable);
        assert!(gone.message.contains("does not answer"));
        assert!(is_not_found(&e(404)) && !is_not_found(&e(409)));
    }
}
