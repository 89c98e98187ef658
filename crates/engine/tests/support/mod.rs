//! What the engine's end-to-end tests on the local sandbox share: an
//! engine with an in-memory store, and one investigation with it.

use std::path::Path;
use std::sync::Arc;
use tracelab_domain::report::Report;
use tracelab_engine::investigate::Aborted;
use tracelab_engine::{Engine, EngineConfig, InvestigateRequest, Silent};
use tracelab_sandbox::{LocalConfig, LocalSandboxProvider};
use tracelab_store::SqliteStore;

/// Investigates `test_command` in `repo` (its own good and bad) with
/// `config`, each command run by the local sandbox with `path` as its
/// `PATH`; the allowlist is the config's.
pub async fn investigate_locally(
    config: EngineConfig,
    path: &str,
    repo: &Path,
    test_command: &str,
    issue_id: &str,
) -> Result<Report, Aborted> {
    let local = LocalConfig {
        path: path.to_string(),
        allowlist: config.allowlist.clone(),
    };
    let engine = Engine {
        config,
        store: Arc::new(SqliteStore::in_memory().await.unwrap()),
        sandboxes: Arc::new(LocalSandboxProvider::new(local)),
        progress: Arc::new(Silent),
    };
    engine
        .investigate(InvestigateRequest {
            repo: repo.to_path_buf(),
            test_command: test_command.into(),
            good: None,
            bad: None,
            issue_id: Some(issue_id.into()),
        })
        .await
}
