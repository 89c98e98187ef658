//! `tracelab.index.v1.Retrieval`: every request's repository is a path
//! under `fleet.repositories.local_roots` or a URL the deployment allows (fetched into
//! this indexer's mirror cache), runs its git and CPU work through [`Workers`], and is
//! one span that continues the caller's W3C trace (`traceparent` metadata).

use crate::past;
use crate::repos::{Filters, Repositories};
use crate::wire;
use crate::work::{Workers, deadline};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::net::TcpListener;
use tonic::{Request, Response, Status};
use tracelab_code_index::Language;
use tracelab_domain::Error;
use tracelab_fleet::repositories::Checkout;
use tracelab_proto::index::v1 as pb;
use tracelab_proto::index::v1::retrieval_server::{Retrieval, RetrievalServer};
use tracelab_service::Shutdown;
use tracelab_service::tokens::TokenTable;
use tracelab_store::{PgGroupStore, PgStore};
use tracing::Instrument;

/// Results per list when the request says 0; and the most it may ask for.
pub const DEFAULT_TOP: usize = 10;
pub const MAX_TOP: usize = 1000;

/// What the gRPC service needs.
#[derive(Debug, Clone)]
pub struct Service {
    /// Repositories named by URL: the deployment's allow-list and this
    /// indexer's own mirror cache.
    pub sources: tracelab_fleet::repositories::Repositories,
    pub repos: Arc<Repositories>,
    pub workers: Workers,
    pub groups: PgGroupStore,
    /// Investigations started from a group's evidence (how it was fixed).
    pub investigations: PgStore,
}

fn traced<T>(request: &Request<T>, method: &'static str, repository: &str) -> tracing::Span {
    let span = tracing::info_span!("grpc", method, repository);
    tracelab_service::grpc::continue_trace(&span, request);
    span
}

/// The request's hard filters; an unknown language is an error, not "no filter".
fn filters(r: &pb::LocateRequest) -> Result<Filters, Status> {
    let languages = r
        .languages
        .iter()
        .map(|name| {
            Language::parse(name).ok_or_else(|| {
                Status::invalid_argument(format!(
                    "unknown language {name:?}: python, rust, javascript, typescript, go or java"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Filters {
        languages,
        path_prefix: rev(&r.path_prefix),
        since_rev: rev(&r.since_rev),
        max_commits: r.max_commits as usize,
        include_tests: r.include_tests,
    })
}

/// The local repository a request names, and the revision to read: a URL
/// the deployment allows is fetched into this indexer's mirror cache and
/// the revision resolved there; a path must lie under the local roots. The
/// checkout is held while the request works on it.
async fn repository(
    service: &Service,
    requested: &str,
    rev: Option<String>,
) -> Result<(PathBuf, Option<String>, Option<Checkout>), Status> {
    if !tracelab_repos::looks_like_url(requested) {
        // A local path: only under `fleet.repositories.local_roots`.
        let checkout = service
            .sources
            .checkout(requested, &[])
            .await
            .map_err(tracelab_service::grpc::status)?;
        return Ok((checkout.path.clone(), rev, Some(checkout)));
    }
    let wanted = rev.as_deref().unwrap_or("HEAD");
    let checkout = service
        .sources
        .checkout(requested, &[wanted])
        .await
        .map_err(tracelab_service::grpc::status)?;
    let resolved = checkout.resolved.first().cloned();
    Ok((checkout.path.clone(), resolved, Some(checkout)))
}

fn rev(r: &str) -> Option<String> {
    Some(r.trim().to_string()).filter(|r| !r.is_empty())
}

/// Logs a refused or failed request once, with its code.
fn logged<T>(result: Result<T, Status>) -> Result<T, Status> {
    if let Err(e) = &result {
        tracing::info!(code = ?e.code(), message = e.message(), "request failed");
    }
    result
}

#[tonic::async_trait]
impl Retrieval for Service {
    async fn index(
        &self,
        request: Request<pb::IndexRequest>,
    ) -> Result<Response<pb::IndexSummary>, Status> {
        let span = traced(&request, "Index", &request.get_ref().repository);
        let deadline = deadline(&request);
        let r = request.into_inner();
        let work = async {
            let (repo, at, _checkout) = repository(self, &r.repository, rev(&r.rev)).await?;
            let repos = self.repos.clone();
            let summary = self
                .workers
                .run(deadline, move || repos.index(&repo, at.as_deref()))
                .await?;
            tracing::info!(
                commit = %summary.commit,
                parsed = summary.parsed_files,
                reused = summary.cached_files,
                "indexed"
            );
            Ok(Response::new(wire::summary(&summary)))
        };
        logged(work.instrument(span).await)
    }

    async fn locate(
        &self,
        request: Request<pb::LocateRequest>,
    ) -> Result<Response<pb::Locations>, Status> {
        let span = traced(&request, "Locate", &request.get_ref().repository);
        let deadline = deadline(&request);
        let r = request.into_inner();
        let work = async {
            if r.evidence.trim().is_empty() {
                return Err(Status::invalid_argument(
                    "evidence is empty: give the failure output (test output, traceback or log)",
                ));
            }
            let top = match r.top as usize {
                0 => DEFAULT_TOP,
                n if n > MAX_TOP => {
                    return Err(Status::invalid_argument(format!(
                        "top {n} is more than {MAX_TOP}"
                    )));
                }
                n => n,
            };
            let filters = filters(&r)?;
            let (repo, at, _checkout) = repository(self, &r.repository, rev(&r.rev)).await?;
            let repos = self.repos.clone();
            let found = self
                .workers
                .run(deadline, move || {
                    repos.locate(&repo, &r.evidence, at.as_deref(), top, &filters)
                })
                .await?;
            Ok(Response::new(wire::locations(&found)))
        };
        logged(work.instrument(span).await)
    }

    async fn neighbourhood(
        &self,
        request: Request<pb::NeighbourhoodRequest>,
    ) -> Result<Response<pb::NeighbourhoodReply>, Status> {
        let span = traced(&request, "Neighbourhood", &request.get_ref().repository);
        let deadline = deadline(&request);
        let r = request.into_inner();
        let work = async {
            let (repo, at, _checkout) = repository(self, &r.repository, rev(&r.rev)).await?;
            let repos = self.repos.clone();
            let (commit, n) = self
                .workers
                .run(deadline, move || {
                    repos.neighbourhood(&repo, at.as_deref(), &r.symbol, r.depth)
                })
                .await?;
            Ok(Response::new(wire::neighbourhood(commit, &n)))
        };
        logged(work.instrument(span).await)
    }

    async fn past_failures(
        &self,
        request: Request<pb::PastFailuresRequest>,
    ) -> Result<Response<pb::PastFailuresReply>, Status> {
        let span = traced(&request, "PastFailures", &request.get_ref().repository);
        let deadline = deadline(&request);
        let r = request.into_inner();
        let work = async {
            let limit = past::limit(r.limit)?;
            // Check the repository before touching the database.
            let (repo, _checkout) = match r.repository.is_empty() {
                true => (None, None),
                false => {
                    let (path, _, checkout) = repository(self, &r.repository, None).await?;
                    (Some(path), checkout)
                }
            };
            // With a repository filter, read more so the filter still fills the page.
            let fetch = if repo.is_some() {
                past::MAX_LIMIT * 5
            } else {
                limit
            };
            let groups = self
                .groups
                .find_by_signature(&r.error_signature, &r.stack_signature, fetch)
                .await
                .map_err(past::status)?;
            let mut groups = match repo {
                None => groups,
                Some(repo) => {
                    self.workers
                        .run(deadline, move || past::in_repository(&repo, groups))
                        .await?
                }
            };
            groups.truncate(limit);
            let keys: Vec<String> = groups.iter().map(|g| g.key.0.clone()).collect();
            let investigations = self
                .investigations
                .investigations_of_groups(&keys)
                .await
                .map_err(tracelab_service::grpc::status)?;
            Ok(Response::new(pb::PastFailuresReply {
                failures: groups
                    .iter()
                    .map(|g| wire::past_failure(g, &investigations))
                    .collect(),
            }))
        };
        logged(work.instrument(span).await)
    }
}

/// Serves the Retrieval API on `listener` until `shutdown`.
pub async fn serve(
    listener: TcpListener,
    service: Service,
    tokens: TokenTable<String>,
    shutdown: Shutdown,
) -> tracelab_domain::Result<()> {
    tracing::info!(addr = ?listener.local_addr().ok(), "serving gRPC");
    let incoming = tracelab_service::grpc::incoming_nodelay(listener);
    let authenticated = move |request: Request<()>| {
        if tokens.is_open() {
            return Ok(request);
        }
        let header = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        match tokens.bearer(header) {
            Ok(_) => Ok(request),
            Err(why) => Err(Status::unauthenticated(why)),
        }
    };
    tonic::transport::Server::builder()
        .add_service(RetrievalServer::with_interceptor(service, authenticated))
        .serve_with_incoming_shutdown(incoming, async move { shutdown.requested().await })
        .await
        .map_err(|e| Error::internal(format!("gRPC server failed: {e}")))
}
