//! A probe slot moving between revisions keeps Python's bytecode caches of
//! the modules a checkout leaves alone, and never runs a stale one: Python
//! trusts a cache while its source's mtime (whole seconds) and size match,
//! and the slot here moves between two same-size versions of a module many
//! times a second; nor does it leave a package behind that the revision
//! does not have. Runs real `python3` in the local sandbox.

use std::path::Path;
use std::sync::Arc;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::ports::CommandSpec;
use tracelab_engine::git::Git;
use tracelab_engine::overlay::Overlay;
use tracelab_engine::pool::Pool;
use tracelab_engine::workspace::Workspace;
use tracelab_sandbox::{LocalConfig, LocalSandboxProvider};
use tracelab_testkit::FixtureRepo;

const CHECK: &str = "import importlib.util, pkg.core, pkg.table
extra = importlib.util.find_spec('extra') is not None
if extra:
    __import__('extra.mod')
print('limit', pkg.core.limit(), len(pkg.table.ROWS), 'extra', extra)
";

fn table() -> String {
    let rows: Vec<String> = (0..2000)
        .map(|i| format!("    ({i}, 'row {i}'),"))
        .collect();
    format!("ROWS = [\n{}\n]\n", rows.join("\n"))
}

fn limit(n: u32) -> String {
    format!("def limit():\n    return {n}\n")
}

/// The modification time of the table's cache, which no checkout changes.
fn table_cache(worktree: &Path) -> Option<std::time::SystemTime> {
    let dir = worktree.join("pkg/__pycache__");
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("table."))
        .and_then(|e| e.metadata().ok()?.modified().ok())
}

/// The pool's one slot's worktree.
fn slot(root: &Path) -> std::path::PathBuf {
    std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("probe-0"))
        })
        .expect("the slot's worktree")
}

#[tokio::test]
async fn a_slot_keeps_unchanged_modules_caches_and_never_runs_a_stale_one() {
    let mut repo = FixtureRepo::new();
    let table = table();
    let at_63 = repo.commit(
        "limit 63",
        &[
            ("pkg/__init__.py", ""),
            ("pkg/core.py", &limit(63)),
            ("pkg/table.py", &table),
            ("check.py", CHECK),
        ],
    );
    // The same size: only Python's mtime-and-size check stands between
    // the two.
    let at_64 = repo.commit("limit 64", &[("pkg/core.py", &limit(64))]);
    // A namespace package (no `__init__.py`) that only this commit has:
    // after it, a directory left behind would still import.
    let with_extra = repo.commit("extra", &[("extra/mod.py", "X = 1\n")]);
    let git = Git::open(repo.path()).await.unwrap();
    let id = InvestigationId::generate();
    let workspace = Arc::new(Workspace::create(git, id.short()).unwrap());
    let pool = Pool::new(
        workspace,
        Arc::new(LocalSandboxProvider::new(LocalConfig::default())),
        &id.0,
        1,
    );
    let spec = CommandSpec {
        argv: vec!["python3".into(), "check.py".into()],
        env: Vec::new(),
        timeout: std::time::Duration::from_secs(60),
        output_limit: 64 * 1024,
    };

    let mut table_cached = None;
    for round in 0..6 {
        for (rev, want) in [
            (&at_63, "limit 63 2000 extra False"),
            (&at_64, "limit 64 2000 extra False"),
            (&with_extra, "limit 64 2000 extra True"),
        ] {
            let run = pool.run(rev, &spec).await.unwrap();
            let out = &run.result.output;
            assert!(out.contains(want), "round {round}, wanted {want}: {out}");
            let cached = table_cache(&slot(pool.workspace().root()));
            assert!(cached.is_some(), "the table's cache is written and kept");
            match table_cached {
                None => table_cached = cached,
                Some(first) => assert_eq!(
                    cached,
                    Some(first),
                    "the unchanged table is never recompiled"
                ),
            }
        }
    }

    // An overlay changes a module under its cache too.
    let overlay = Overlay {
        rev: at_64.clone(),
        files: vec!["pkg/core.py".into()],
    };
    for _ in 0..3 {
        let run = pool.run(&at_63, &spec).await.unwrap();
        assert!(run.result.output.contains("limit 63 2000 extra False"));
        let run = pool
            .run_overlaid(&at_63, &spec, Some(&overlay))
            .await
            .unwrap();
        assert!(
            run.result.output.contains("limit 64 2000 extra False"),
            "the overlaid module runs: {}",
            run.result.output
        );
    }
    pool.close().await;
}
