//! Asking a running indexer instead of indexing in this process (what
//! `tracelab locate --indexer URL` does): the answer comes back as the
//! library's `Locations`, so it prints exactly like the in-process one.

use anyhow::Context as _;
use tracelab_code_index::Locations;
use tracelab_proto::index::v1 as pb;
use tracelab_proto::index::v1::retrieval_client::RetrievalClient;

/// `Locate` on the indexer at `url` (`http://host:8087`). `repository` must
/// be a path the indexer can read (and allows), on its machine.
/// `token` is sent as a bearer token when the indexer requires one.
pub async fn locate(
    url: &str,
    token: Option<&str>,
    request: pb::LocateRequest,
) -> anyhow::Result<Locations> {
    let mut client = RetrievalClient::connect(url.to_string())
        .await
        .with_context(|| format!("cannot reach the indexer at {url}"))?;
    let mut request = tonic::Request::new(request);
    if let Some(token) = token {
        let value = format!("Bearer {token}")
            .parse()
            .context("the token is not a valid header value")?;
        request.metadata_mut().insert("authorization", value);
    }
    let answer = client
        .locate(request)
        .await
        .map_err(|s| anyhow::anyhow!("indexer at {url}: {:?}: {}", s.code(), s.message()))?;
    crate::wire::locations_back(answer.into_inner())
        .map_err(|e| anyhow::anyhow!("indexer at {url} answered something unreadable: {e}"))
}
