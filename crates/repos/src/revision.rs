//! Revisions as requests name them, and where to look for each in a mirror.
//!
//! A mirror keeps the server's branches as `refs/remotes/origin/*` and its
//! tags as `refs/tags/*`; `refs/heads/*` belongs to callers (their own
//! branches, worktrees). So a name is looked up as a tag, then as the
//! server's branch — the order `git rev-parse` uses in a clone — and never
//! among the callers' branches.

use tracelab_domain::{Error, Result};

/// One requested revision and the object names that may resolve it, best
/// first (each gets `^{commit}` when looked up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Revision {
    pub text: String,
    pub candidates: Vec<String>,
    /// A full 40- or 64-hex sha: can be checked without the network, and
    /// fetched by itself if no ref has it.
    pub full_sha: bool,
    /// Names the server's default branch (`HEAD`).
    pub wants_head: bool,
}

impl Revision {
    /// Refuses what git could read as an option, or that could split the
    /// line-based lookup: a leading `-`, whitespace, control characters.
    pub(crate) fn parse(text: &str) -> Result<Revision> {
        if text.is_empty() {
            return Err(Error::invalid("a revision is empty"));
        }
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(Error::invalid(format!(
                "the revision {text:?} contains whitespace or control characters"
            )));
        }
        if text.starts_with('-') {
            return Err(Error::invalid(format!(
                "the revision {text:?} starts with '-', which git would read as an option"
            )));
        }
        if text.len() > 256 {
            return Err(Error::invalid("a revision is longer than 256 characters"));
        }
        // `main~3`, `v1^{}`, `main@{…}`: the name, then what to do with it.
        let split = text
            .find(['~', '^', ':'])
            .into_iter()
            .chain(text.find("@{"))
            .min()
            .unwrap_or(text.len());
        let (base, suffix) = text.split_at(split);
        let hex = !base.is_empty() && base.chars().all(|c| c.is_ascii_hexdigit());
        let full_sha = hex && (base.len() == 40 || base.len() == 64);
        let with = |name: String| format!("{name}{suffix}");
        let candidates = if base == "HEAD" {
            vec![with("refs/remotes/origin/HEAD".into())]
        } else if full_sha {
            vec![text.to_string()]
        } else if let Some(branch) = base.strip_prefix("refs/heads/") {
            vec![with(format!("refs/remotes/origin/{branch}"))]
        } else if base.starts_with("refs/tags/") || base.starts_with("refs/remotes/origin/") {
            vec![text.to_string()]
        } else if base.starts_with("refs/") {
            Vec::new()
        } else if let Some(branch) = base.strip_prefix("origin/") {
            vec![with(format!("refs/remotes/origin/{branch}"))]
        } else {
            let mut names = vec![
                with(format!("refs/tags/{base}")),
                with(format!("refs/remotes/origin/{base}")),
            ];
            if hex && base.len() >= 4 {
                names.push(text.to_string());
            }
            names
        };
        Ok(Revision {
            text: text.to_string(),
            candidates,
            full_sha: full_sha && suffix.is_empty(),
            wants_head: base == "HEAD",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: &[&str]) {
        let r = Revision::parse(text).unwrap();
        assert_eq!(r.candidates, expected, "{text}");
    }

    #[test]
    fn names_map_to_the_servers_refs() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        check("main", &["refs/tags/main", "refs/remotes/origin/main"]);
        check(
            "main~3",
            &["refs/tags/main~3", "refs/remotes/origin/main~3"],
        );
        check(
            "feature/x^2",
            &["refs/tags/feature/x^2", "refs/remotes/origin/feature/x^2"],
        );
        check(
            "v1.0^{}",
            &["refs/tags/v1.0^{}", "refs/remotes/origin/v1.0^{}"],
        );
        check("HEAD", &["refs/remotes/origin/HEAD"]);
        check("HEAD~2", &["refs/remotes/origin/HEAD~2"]);
        check("origin/dev", &["refs/remotes/origin/dev"]);
        check("refs/heads/dev", &["refs/remotes/origin/dev"]);
        check("refs/tags/v1", &["refs/tags/v1"]);
        check("refs/stash", &[]);
        check(
            "abc1234",
            &[
                "refs/tags/abc1234",
                "refs/remotes/origin/abc1234",
                "abc1234",
            ],
        );
        check(sha, &[sha]);
        check(&format!("{sha}~1"), &[&format!("{sha}~1")]);
        assert!(Revision::parse(sha).unwrap().full_sha);
        assert!(!Revision::parse(&format!("{sha}~1")).unwrap().full_sha);
        assert!(!Revision::parse("abc1234").unwrap().full_sha);
        assert!(Revision::parse("HEAD").unwrap().wants_head);
    }

    #[test]
    fn dangerous_revisions_are_refused() {
        for bad in [
            "",
            "-c",
            "--upload-pack=x",
            "main branch",
            "main\n",
            "a\u{7}",
        ] {
            assert!(Revision::parse(bad).is_err(), "{bad:?}");
        }
    }
}
