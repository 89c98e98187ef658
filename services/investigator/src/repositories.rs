//! Where the fleet keeps the repositories that evidence names by URL. CI
//! reports say `https://github.com/acme/shop`; verification needs a local
//! checkout the services share (the Helm chart's repositories volume). The
//! `repositories` setting maps one to the other; URLs are compared without
//! credentials, scheme, `.git`, trailing slashes or host case, so
//! `git@github.com:acme/shop.git` and `https://github.com/acme/shop/` are
//! the same repository.

use std::collections::BTreeMap;

/// Repository URL → local path, as configured.
#[derive(Debug, Clone, Default)]
pub struct RepositoryMap {
    by_key: BTreeMap<String, String>,
}

impl RepositoryMap {
    pub fn new(configured: &BTreeMap<String, String>) -> Self {
        Self {
            by_key: configured
                .iter()
                .filter_map(|(url, path)| Some((key(url)?, path.clone())))
                .collect(),
        }
    }

    /// The local checkout of `url`, when one is configured.
    pub fn local_path(&self, url: &str) -> Option<&str> {
        self.by_key.get(&key(url)?).map(String::as_str)
    }
}

/// `host/owner/name` with the host lower-cased; `None` for something that is not a remote URL.
fn key(url: &str) -> Option<String> {
    let url = url.trim();
    let (host, path) = if let Some((_, rest)) = url.split_once("://") {
        // https://user:pass@host:port/owner/name.git
        let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
        let (authority, path) = rest.split_once('/')?;
        (authority.split(':').next()?, path)
    } else {
        // scp-like: git@host:owner/name.git
        let rest = url.rsplit_once('@').map_or(url, |(_, r)| r);
        let (host, path) = rest.split_once(':')?;
        if host.contains('/') {
            return None;
        }
        (host, path)
    };
    let path = path.trim_matches('/');
    let path = path
        .strip_suffix(".git")
        .unwrap_or(path)
        .trim_end_matches('/');
    if host.is_empty() || path.is_empty() {
        return None;
    }
    Some(format!("{}/{path}", host.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> RepositoryMap {
        RepositoryMap::new(&BTreeMap::from([
            (
                "https://github.com/acme/shop".to_string(),
                "/repos/shop".to_string(),
            ),
            (
                "git@gitlab.example.com:group/sub/ledger.git".to_string(),
                "/repos/ledger".to_string(),
            ),
        ]))
    }

    #[test]
    fn the_spellings_of_one_remote_find_the_same_checkout() {
        let m = map();
        for url in [
            "https://github.com/acme/shop",
            "https://github.com/acme/shop.git",
            "https://GitHub.com/acme/shop/",
            "http://x-access-token:ghs_abc@github.com/acme/shop.git",
            "ssh://git@github.com:22/acme/shop.git",
            "git@github.com:acme/shop.git",
        ] {
            assert_eq!(m.local_path(url), Some("/repos/shop"), "{url}");
        }
        assert_eq!(
            m.local_path("https://gitlab.example.com/group/sub/ledger"),
            Some("/repos/ledger")
        );
    }

    #[test]
    fn other_repositories_and_non_urls_are_not_mapped() {
        let m = map();
        assert_eq!(m.local_path("https://github.com/acme/shop-api"), None);
        assert_eq!(m.local_path("https://github.com/other/shop"), None);
        assert_eq!(m.local_path("/srv/checkouts/shop"), None);
        assert_eq!(m.local_path(""), None);
    }
}
