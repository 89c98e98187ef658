//! The crate dependency rules of ARCHITECTURE.md, checked against the
//! manifests (`cargo metadata --no-deps`), so the map cannot drift from the
//! code again. Only normal dependencies count: tests may use anything.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// The layer each workspace package is in. A new package must be added here.
fn layer(name: &str) -> Option<Layer> {
    use Layer::*;
    Some(match name {
        "tracelab-domain" | "tracelab-testkit" | "tracelab-proto" => Core,
        "tracelab-sandbox"
        | "tracelab-sandbox-docker"
        | "tracelab-bus"
        | "tracelab-embed"
        | "tracelab-vector-qdrant"
        | "tracelab-service"
        | "tracelab-code-index"
        | "tracelab-coverage"
        | "tracelab-evidence"
        | "tracelab-store"
        | "tracelab-engine"
        | "tracelab-repair"
        | "tracelab-index-client"
        | "tracelab-syntax"
        | "tracelab-repos"
        | "tracelab-dashboard"
        | "tracelab-codehost"
        | "tracelab-experience"
        | "tracelab-llm"
        | "tracelab-notify"
        | "tracelab-fleet" => Library,
        "tracelab-investigator"
        | "tracelab-verifier"
        | "tracelab-arbiter"
        | "tracelab-ingest"
        | "tracelab-indexer" => Service,
        "tracelab" => Cli,
        "tracelab-e2e" | "tracelab-loadtest" => Harness,
        _ => return None,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layer {
    /// Depends on no TraceLab crate.
    Core,
    /// Ports' adapters and the pipeline; only the libraries listed in `LIBRARY_DEPS`.
    Library,
    /// Thin wiring of libraries into one process; never another service.
    Service,
    /// The one-machine binary.
    Cli,
    /// End-to-end tests and the load generator: anything.
    Harness,
}

/// What each library may depend on (TraceLab crates, normal dependencies).
/// Adapters reach the domain's ports and nothing else; `store` also holds
/// the group stores of `evidence`'s model; `fleet` is the services' shared wiring.
const LIBRARY_DEPS: &[(&str, &[&str])] = &[
    ("tracelab-sandbox", &["tracelab-domain"]),
    // The Docker sandbox reuses the local runner's worktree hand-over walker.
    (
        "tracelab-sandbox-docker",
        &["tracelab-domain", "tracelab-sandbox"],
    ),
    ("tracelab-bus", &["tracelab-domain"]),
    ("tracelab-embed", &["tracelab-domain"]),
    ("tracelab-vector-qdrant", &["tracelab-domain"]),
    ("tracelab-service", &["tracelab-domain"]),
    ("tracelab-syntax", &["tracelab-domain"]),
    ("tracelab-repos", &["tracelab-domain"]),
    ("tracelab-dashboard", &["tracelab-domain"]),
    // Webhooks, Jira comments and the Jira intake for the investigator and
    // `tracelab serve` alike (#13): its port is implemented on both stores.
    ("tracelab-notify", &["tracelab-domain", "tracelab-store"]),
    // Pushes with the deployment's git credentials settings.
    ("tracelab-codehost", &["tracelab-domain", "tracelab-repos"]),
    // The evidence parsers are the one reader of failure text (#17): the
    // index reads a locate query's frames through them. Ingest is pure (no
    // IO) and depends on the domain only.
    (
        "tracelab-code-index",
        &["tracelab-domain", "tracelab-syntax", "tracelab-evidence"],
    ),
    // Coverage-based localisation's IO and Repro Packs (#17): runs a suite
    // in the domain's `Sandbox`, reads its failing tests with the evidence
    // parsers and hands the index the runs its Ochiai ranks; the index never
    // depends on it.
    (
        "tracelab-coverage",
        &[
            "tracelab-domain",
            "tracelab-evidence",
            "tracelab-code-index",
        ],
    ),
    ("tracelab-evidence", &["tracelab-domain"]),
    // Pure reconstruction of repair experience (#16): diffs and the oracle's
    // test-path rule come from the domain, a step's output is read by the
    // evidence parsers (the one reader of failure text, #17); mining's IO is
    // the CLI's.
    (
        "tracelab-experience",
        &["tracelab-domain", "tracelab-evidence"],
    ),
    ("tracelab-repair", &["tracelab-domain", "tracelab-syntax"]),
    // The LLM patch agent's chat client (#12) implements the domain's
    // `ChatModel` port and runs the evidence crate's redactor over every message it
    // sends: the client is the one place every prompt passes.
    ("tracelab-llm", &["tracelab-domain", "tracelab-evidence"]),
    (
        "tracelab-index-client",
        &["tracelab-domain", "tracelab-code-index", "tracelab-proto"],
    ),
    // The store also keeps repair experience records (#16): pure data and
    // logic of `tracelab-experience`, which depends on the domain and evidence.
    (
        "tracelab-store",
        &[
            "tracelab-domain",
            "tracelab-evidence",
            "tracelab-experience",
        ],
    ),
    // The experience agent (#16) retrieves and re-applies records with
    // `tracelab-experience`'s pure logic. A probe's output is read by the
    // evidence parsers (`tracelab_evidence::test_run`, #17): its failure
    // signature, failing tests and frames come from the one reader of
    // failure text, not from patterns of the engine's own.
    (
        "tracelab-engine",
        &[
            "tracelab-domain",
            "tracelab-code-index",
            // The repair's neighbour tests by coverage.
            "tracelab-coverage",
            "tracelab-evidence",
            "tracelab-repair",
            "tracelab-experience",
        ],
    ),
    (
        "tracelab-fleet",
        &[
            "tracelab-domain",
            "tracelab-bus",
            // The investigator's draft pull requests, pushed with the same
            // repository credentials the fleet fetches with.
            "tracelab-codehost",
            "tracelab-engine",
            "tracelab-proto",
            "tracelab-repos",
            "tracelab-sandbox",
            "tracelab-sandbox-docker",
            "tracelab-service",
            "tracelab-store",
        ],
    ),
];

/// Known breaks of the rules, each as (from, to, why and the issue that
/// removes it). None today: the CLI's indexer client, the last one, became
/// `tracelab-index-client`. An entry whose edge is gone fails the test.
const EXCEPTIONS: &[(&str, &str, &str)] = &[];

/// `cargo metadata --no-deps` of the workspace.
fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .args(["--manifest-path", manifest])
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("metadata JSON")
}

/// Normal TraceLab dependencies of every workspace package.
fn workspace_graph() -> BTreeMap<String, BTreeSet<String>> {
    let meta = metadata();
    let mut graph = BTreeMap::new();
    for package in meta["packages"].as_array().expect("packages") {
        let deps = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].is_null() && d["path"].is_string())
            .map(|d| d["name"].as_str().expect("name").to_string())
            .collect();
        graph.insert(package["name"].as_str().expect("name").to_string(), deps);
    }
    graph
}

/// Every rule broken by `graph`, as readable lines.
fn violations(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let allowed: BTreeMap<&str, &[&str]> = LIBRARY_DEPS.iter().copied().collect();
    let excepted = |from: &str, to: &str| EXCEPTIONS.iter().any(|(f, t, _)| *f == from && *t == to);
    let mut broken = Vec::new();
    for (package, deps) in graph {
        let Some(own) = layer(package) else {
            broken.push(format!("{package} has no layer in crate_rules.rs"));
            continue;
        };
        for dep in deps {
            let Some(theirs) = layer(dep) else { continue };
            let ok = match (own, theirs) {
                (Layer::Harness, _) => true,
                (_, Layer::Cli | Layer::Harness) => false,
                (Layer::Core, _) => false,
                (Layer::Library, _) => allowed
                    .get(package.as_str())
                    .is_some_and(|a| a.contains(&dep.as_str())),
                (Layer::Service, Layer::Service) => false,
                (Layer::Service, _) => dep != "tracelab-testkit",
                (Layer::Cli, Layer::Service) => excepted(package, dep),
                (Layer::Cli, _) => true,
            };
            if !ok {
                broken.push(format!(
                    "{package} ({own:?}) must not depend on {dep} ({theirs:?})"
                ));
            }
        }
        if own == Layer::Library && !allowed.contains_key(package.as_str()) {
            broken.push(format!("library {package} has no entry in LIBRARY_DEPS"));
        }
    }
    broken
}

#[test]
fn the_workspace_follows_the_crate_rules() {
    let graph = workspace_graph();
    assert!(
        graph.contains_key("tracelab-domain"),
        "read the workspace: {graph:?}"
    );
    let broken = violations(&graph);
    assert!(
        broken.is_empty(),
        "crate rules broken:\n{}",
        broken.join("\n")
    );
    for (from, to, why) in EXCEPTIONS {
        assert!(
            graph.get(*from).is_some_and(|d| d.contains(*to)),
            "exception {from} -> {to} is gone ({why}): remove it from EXCEPTIONS"
        );
    }
}

#[test]
fn the_rules_catch_what_they_forbid() {
    let graph = |edges: &[(&str, &[&str])]| -> BTreeMap<String, BTreeSet<String>> {
        edges
            .iter()
            .map(|(p, d)| (p.to_string(), d.iter().map(|s| s.to_string()).collect()))
            .collect()
    };
    let cases: &[(&str, &[&str])] = &[
        ("tracelab-domain", &["tracelab-evidence"]),
        ("tracelab-embed", &["tracelab-code-index"]),
        ("tracelab-code-index", &["tracelab-coverage"]),
        ("tracelab-verifier", &["tracelab-arbiter"]),
        ("tracelab-engine", &["tracelab"]),
        ("tracelab-bus", &["tracelab-testkit"]),
        ("tracelab-new-crate", &[]),
        ("tracelab", &["tracelab-indexer"]),
    ];
    for case in cases {
        assert_eq!(
            violations(&graph(std::slice::from_ref(case))).len(),
            1,
            "{case:?} breaks a rule"
        );
    }
    assert!(violations(&graph(&[("tracelab-store", &["tracelab-evidence"])])).is_empty());
    assert!(violations(&graph(&[("tracelab-coverage", &["tracelab-code-index"])])).is_empty());
}

/// Every workspace package as (name, folder relative to the workspace root).
fn workspace_packages() -> Vec<(String, String)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../");
    let root = std::fs::canonicalize(root).expect("workspace root");
    metadata()["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            let manifest = std::path::PathBuf::from(p["manifest_path"].as_str().expect("path"));
            let dir = manifest.parent().expect("package folder");
            let dir = dir.strip_prefix(&root).unwrap_or(dir);
            let name = p["name"].as_str().expect("name").to_string();
            (name, dir.to_string_lossy().into_owned())
        })
        .collect()
}

/// The packages without a row `| `folder` | `name` ...` in ARCHITECTURE.md's
/// code map.
fn missing_from_code_map(map: &str, packages: &[(String, String)]) -> Vec<String> {
    packages
        .iter()
        .filter(|(name, dir)| {
            let row = format!("| `{dir}` | `{name}`");
            !map.lines().any(|l| l.starts_with(&row))
        })
        .map(|(name, dir)| format!("{name} ({dir})"))
        .collect()
}

#[test]
fn every_package_is_on_the_code_map() {
    let map = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../ARCHITECTURE.md"))
        .expect("read ARCHITECTURE.md");
    let packages = workspace_packages();
    assert!(
        packages
            .iter()
            .any(|(n, d)| n == "tracelab-domain" && d == "crates/domain"),
        "read the workspace: {packages:?}"
    );
    let missing = missing_from_code_map(&map, &packages);
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's code map has no row for: {}",
        missing.join(", ")
    );
    let a_new_crate = [("tracelab-new".to_string(), "crates/new".to_string())];
    assert_eq!(missing_from_code_map(&map, &a_new_crate).len(), 1);
}
