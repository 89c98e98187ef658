//! "This error signature → its past failures": failure groups from
//! PostgreSQL (`failure_groups`, written by ingest), optionally narrowed to
//! the groups seen at a commit of one repository.

use std::path::Path;
use tonic::Status;
use tracelab_evidence::FailureGroup;

/// Groups asked for when none is said; and the most one request gets.
pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 200;

pub fn status(e: tracelab_evidence::Error) -> Status {
    tracelab_service::grpc::status_of(e.kind(), e.to_string())
}

/// The effective limit for a request's `limit` (0 = default).
pub fn limit(requested: u32) -> Result<usize, Status> {
    match requested as usize {
        0 => Ok(DEFAULT_LIMIT),
        n if n > MAX_LIMIT => Err(Status::invalid_argument(format!(
            "limit {n} is more than {MAX_LIMIT}"
        ))),
        n => Ok(n),
    }
}

/// Keeps the groups with a recorded commit that `repo` has (blocking: git).
pub fn in_repository(repo: &Path, groups: Vec<FailureGroup>) -> Result<Vec<FailureGroup>, Status> {
    let git = tracelab_code_index::indexer::open_repo(repo).map_err(crate::repos::status)?;
    // Commit ids only (full or abbreviated): a stored "main" must not
    // match the repository's branch of that name.
    let has = |c: &str| {
        c.len() >= 7
            && c.bytes().all(|b| b.is_ascii_hexdigit())
            && git
                .revparse_single(c)
                .ok()
                .and_then(|o| o.peel_to_commit().ok())
                .is_some()
    };
    Ok(groups
        .into_iter()
        .filter(|g| g.commits.iter().any(|c| has(c)))
        .collect())
}
