//! The Sandbox port's conformance suite on the local sandbox: unhardened,
//! and under each hardening mechanism this host offers (a missing one is a
//! skip with its reason, a failure when `TRACELAB_REQUIRE_BACKENDS=1`).

use tracelab_domain::ports::SandboxProvider;
use tracelab_sandbox::conformance::{self, MISSING_PROGRAM};
use tracelab_sandbox::{HardenedConfig, Isolation, LocalConfig, LocalSandboxProvider, Mechanism};

fn config() -> LocalConfig {
    let mut config = LocalConfig {
        // The system's interpreters, not a toolchain in the service user's
        // home, which the hardened sandbox hides.
        path: "/usr/local/bin:/usr/bin:/bin".into(),
        ..LocalConfig::default()
    };
    config.allowlist.programs.push(MISSING_PROGRAM.into());
    config
}

#[tokio::test]
async fn the_local_sandbox_conforms() {
    let provider = LocalSandboxProvider::new(config());
    conformance::run(&provider, "conformance-local").await;
}

#[tokio::test]
async fn the_hardened_local_sandbox_conforms_under_each_mechanism() {
    let required = std::env::var("TRACELAB_REQUIRE_BACKENDS").is_ok_and(|v| v == "1");
    for mechanisms in [vec![Mechanism::Bwrap], vec![Mechanism::Unshare], vec![]] {
        let hardened = HardenedConfig {
            require_namespaces: !mechanisms.is_empty(),
            mechanisms: mechanisms.clone(),
            ..HardenedConfig::default()
        };
        let provider =
            match LocalSandboxProvider::with_isolation(config(), Isolation::Hardened(hardened)) {
                Ok(provider) => provider,
                Err(error) => {
                    assert!(
                        !required,
                        "TRACELAB_REQUIRE_BACKENDS=1 but {mechanisms:?} is not available: {error}"
                    );
                    eprintln!("skipped {mechanisms:?}: not available here: {error}");
                    continue;
                }
            };
        eprintln!("conformance of {}", provider.name());
        conformance::run(&provider, "conformance-hardened").await;
    }
}
