//! Asking a running indexer instead of indexing in this process (what
//! `tracelab locate --indexer URL` does). The answer comes back as the
//! library's `Locations`, so it prints exactly like the in-process one.
//!
//! A crate of its own so that the one-machine binary can talk to the indexer
//! without linking the indexer service (and through it the whole fleet).

pub mod wire;

use tracelab_code_index::Locations;
use tracelab_domain::{Error, ErrorKind};
use tracelab_proto::index::v1 as pb;
use tracelab_proto::index::v1::retrieval_client::RetrievalClient;

/// `Locate` on the indexer at `url` (`http://host:8087`). `repository` must
/// be a path the indexer can read (and allows), on its machine.
/// `token` is sent as a bearer token when the indexer requires one.
pub async fn locate(
    url: &str,
    token: Option<&str>,
    request: pb::LocateRequest,
) -> Result<Locations, Error> {
    let mut client = RetrievalClient::connect(url.to_string())
        .await
        .map_err(|e| {
            Error::unavailable(format!("cannot reach the indexer at {url}")).with_source(e)
        })?;
    let mut request = tonic::Request::new(request);
    if let Some(token) = token {
        let value = format!("Bearer {token}")
            .parse()
            .map_err(|e| Error::invalid("the token is not a valid header value").with_source(e))?;
        request.metadata_mut().insert("authorization", value);
    }
    let answer = client.locate(request).await.map_err(|s| {
        Error::new(
            kind_of(s.code()),
            format!("indexer at {url}: {:?}: {}", s.code(), s.message()),
        )
    })?;
    wire::locations_back(answer.into_inner()).map_err(|e| {
        Error::internal(format!(
            "indexer at {url} answered something unreadable: {e}"
        ))
    })
}

/// The kind a gRPC status stands for: the inverse of `ErrorKind::grpc_code`
/// for the codes the services send, `Internal` for the rest.
fn kind_of(code: tonic::Code) -> ErrorKind {
    use tonic::Code;
    match code {
        Code::InvalidArgument | Code::Unauthenticated => ErrorKind::InvalidArgument,
        Code::PermissionDenied => ErrorKind::PermissionDenied,
        Code::NotFound => ErrorKind::NotFound,
        Code::FailedPrecondition | Code::AlreadyExists | Code::Aborted => ErrorKind::Conflict,
        Code::Unavailable => ErrorKind::Unavailable,
        Code::DeadlineExceeded => ErrorKind::Timeout,
        _ => ErrorKind::Internal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_survives_its_grpc_code() {
        for kind in ErrorKind::ALL {
            let code = tonic::Code::from_i32(kind.grpc_code() as i32);
            assert_eq!(kind_of(code), kind, "{kind:?} → {code:?}");
        }
    }
}
