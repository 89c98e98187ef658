//! What a request may name: the allow-list for URLs and the local roots for
//! paths, through `RepoCache::classify` (no network).

use std::path::Path;
use tracelab_repos::{CredentialSetting, ErrorKind, RepoCache, RepositorySettings, Source};

fn make(allow: &[&str], roots: &[&Path]) -> (tempfile::TempDir, RepoCache) {
    let dir = tempfile::tempdir().unwrap();
    let settings = RepositorySettings {
        cache_dir: dir.path().join("cache").display().to_string(),
        allow: allow.iter().map(|s| s.to_string()).collect(),
        local_roots: roots.iter().map(|p| p.display().to_string()).collect(),
        ..Default::default()
    };
    let cache = RepoCache::new(&settings).unwrap();
    (dir, cache)
}

fn classify(cache: &RepoCache, repository: &str) -> Result<Source, (ErrorKind, String)> {
    cache.classify(repository).map_err(|e| (e.kind, e.message))
}

#[test]
fn urls_are_admitted_by_the_allow_list_in_any_spelling() {
    let (_dir, cache) = make(
        &["github.com/acme/*", "git.example.com/**", "127.0.0.1:*/**"],
        &[],
    );
    for admitted in [
        "https://github.com/acme/shop",
        "git@github.com:acme/shop.git",
        "https://GitHub.com/acme/shop/",
        "ssh://git@git.example.com/team/sub/repo.git",
        "git://127.0.0.1:9418/x",
        "git://127.0.0.1/x",
        "http://127.0.0.1:8080/a/b",
    ] {
        match classify(&cache, admitted) {
            Ok(Source::Url(url)) => assert_eq!(url.fetch_url(), admitted),
            other => panic!("{admitted}: {other:?}"),
        }
    }
    for (refused, expected) in [
        ("https://github.com/other/shop", ErrorKind::PermissionDenied),
        (
            "https://github.com/acme/shop/deeper",
            ErrorKind::PermissionDenied,
        ),
        (
            "https://github.com.evil.io/acme/shop",
            ErrorKind::PermissionDenied,
        ),
        ("git://127.0.0.2/x", ErrorKind::PermissionDenied),
        (
            "https://git.example.com:8443/x",
            ErrorKind::PermissionDenied,
        ),
        (
            "https://tok@github.com/acme/shop",
            ErrorKind::InvalidArgument,
        ),
        ("file:///srv/acme/shop", ErrorKind::InvalidArgument),
    ] {
        let (kind, message) = classify(&cache, refused).unwrap_err();
        assert_eq!(kind, expected, "{refused}: {message}");
        if kind == ErrorKind::PermissionDenied {
            assert!(message.contains("fleet.repositories.allow"), "{message}");
        }
    }
    let (_dir, closed) = make(&[], &[]);
    let (kind, message) = classify(&closed, "https://github.com/acme/shop").unwrap_err();
    assert_eq!(kind, ErrorKind::PermissionDenied);
    assert!(message.contains("allow is empty"), "{message}");
}

#[test]
fn local_paths_must_stay_under_a_root() {
    let place = tempfile::tempdir().unwrap();
    let root = place.path().join("repos");
    let outside = place.path().join("secret");
    std::fs::create_dir_all(root.join("shop/.git")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("escape")).unwrap();
    std::os::unix::fs::symlink(root.join("shop"), root.join("alias")).unwrap();
    let (_dir, cache) = make(&[], &[&root]);

    let canonical = root.join("shop").canonicalize().unwrap();
    for inside in [
        root.join("shop"),
        root.join("alias"),
        root.join("shop/../shop/."),
    ] {
        assert_eq!(
            classify(&cache, inside.to_str().unwrap()),
            Ok(Source::Local(canonical.clone())),
            "{}",
            inside.display()
        );
    }
    for escaping in [
        root.join("../secret"),
        root.join("shop/../../secret"),
        root.join("escape"),
        outside.clone(),
        "/etc".into(),
        place.path().join("repos-evil"),
    ] {
        let (kind, message) = classify(&cache, escaping.to_str().unwrap()).unwrap_err();
        assert_eq!(kind, ErrorKind::PermissionDenied, "{}", escaping.display());
        assert!(message.contains("local_roots"), "{message}");
    }
    let (kind, _) = classify(&cache, root.join("missing").to_str().unwrap()).unwrap_err();
    assert_eq!(kind, ErrorKind::NotFound);

    let (_dir, no_roots) = make(&["**"], &[]);
    let (kind, message) = classify(&no_roots, root.join("shop").to_str().unwrap()).unwrap_err();
    assert_eq!(kind, ErrorKind::PermissionDenied);
    assert!(message.contains("local_roots is empty"), "{message}");
}

#[test]
fn settings_are_validated_when_the_cache_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let base = RepositorySettings {
        cache_dir: dir.path().display().to_string(),
        ..Default::default()
    };
    let invalid = [
        RepositorySettings {
            credentials: vec![CredentialSetting {
                prefix: "git@github.com:".into(),
                ssh_key_file: "/keys/id_ed25519".into(),
                ..Default::default()
            }],
            ..base.clone()
        },
        RepositorySettings {
            allow: vec!["https://github.com/*".into()],
            ..base.clone()
        },
        RepositorySettings {
            local_roots: vec!["relative/root".into()],
            ..base.clone()
        },
        RepositorySettings {
            fetch_timeout_seconds: 0,
            ..base.clone()
        },
    ];
    for settings in invalid {
        let e = RepoCache::new(&settings).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument, "{settings:?}");
        assert!(e.message.starts_with("fleet.repositories."), "{e}");
    }
    let defaults = RepositorySettings::default();
    assert_eq!(
        (defaults.cache_max_bytes, defaults.fetch_timeout_seconds),
        (20 << 30, 600)
    );
    assert_eq!(CredentialSetting::default().username, "git");
}
