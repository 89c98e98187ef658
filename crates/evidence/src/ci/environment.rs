//! What a CI job's environment tells: the provider's variables read into
//! a [`CiContext`], the digest of each lockfile, and the tail of its log.

use super::report::CiJob;
use super::sanitize::sanitize_url;
use sha2::{Digest, Sha256};

/// CI facts read from the environment of a job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CiContext {
    pub repository: Option<String>,
    pub commit: Option<String>,
    pub branch: Option<String>,
    pub job: CiJob,
}

impl CiContext {
    /// Reads the variables of GitHub Actions, GitLab CI, Buildkite, CircleCI,
    /// Jenkins and Travis CI through `var` (the CLI passes `std::env::var`).
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Self {
        let get = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| var(n).filter(|v| !v.trim().is_empty()))
        };
        let provider = [
            ("GITHUB_ACTIONS", "github_actions"),
            ("GITLAB_CI", "gitlab_ci"),
            ("BUILDKITE", "buildkite"),
            ("CIRCLECI", "circleci"),
            ("JENKINS_URL", "jenkins"),
            ("TRAVIS", "travis"),
        ]
        .iter()
        .find(|(v, _)| var(v).is_some_and(|x| !x.is_empty()))
        .map(|(_, p)| (*p).to_owned());
        let github_url = match (get(&["GITHUB_SERVER_URL"]), get(&["GITHUB_REPOSITORY"])) {
            (Some(server), Some(repo)) => Some(format!("{}/{repo}", server.trim_end_matches('/'))),
            (None, Some(repo)) => Some(repo),
            _ => None,
        };
        let github_job_url = match (
            get(&["GITHUB_SERVER_URL"]),
            get(&["GITHUB_REPOSITORY"]),
            get(&["GITHUB_RUN_ID"]),
        ) {
            (Some(s), Some(r), Some(id)) => {
                Some(format!("{}/{r}/actions/runs/{id}", s.trim_end_matches('/')))
            }
            _ => None,
        };
        // GitHub: a pull request's branch is GITHUB_HEAD_REF; pushes use GITHUB_REF_NAME.
        let branch = get(&[
            "GITHUB_HEAD_REF",
            "GITHUB_REF_NAME",
            "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
            "CI_COMMIT_BRANCH",
            "CI_COMMIT_REF_NAME",
            "BUILDKITE_BRANCH",
            "CIRCLE_BRANCH",
            "TRAVIS_PULL_REQUEST_BRANCH",
            "TRAVIS_BRANCH",
            "BRANCH_NAME",
            "GIT_BRANCH",
        ])
        .map(|b| b.strip_prefix("origin/").map(str::to_owned).unwrap_or(b));
        CiContext {
            repository: github_url
                .or_else(|| {
                    get(&[
                        "CI_PROJECT_URL",
                        "BUILDKITE_REPO",
                        "CIRCLE_REPOSITORY_URL",
                        "GIT_URL",
                    ])
                })
                .or_else(|| get(&["TRAVIS_REPO_SLUG"]))
                .map(|u| sanitize_url(&u)),
            commit: get(&[
                "GITHUB_SHA",
                "CI_COMMIT_SHA",
                "BUILDKITE_COMMIT",
                "CIRCLE_SHA1",
                "GIT_COMMIT",
                "TRAVIS_COMMIT",
            ]),
            branch,
            job: CiJob {
                provider,
                id: get(&[
                    "GITHUB_RUN_ID",
                    "CI_JOB_ID",
                    "BUILDKITE_JOB_ID",
                    "CIRCLE_WORKFLOW_JOB_ID",
                    "BUILD_TAG",
                    "TRAVIS_JOB_ID",
                ])
                .map(|id| match get(&["GITHUB_RUN_ATTEMPT"]) {
                    Some(attempt) if var("GITHUB_RUN_ID").is_some() => format!("{id}/{attempt}"),
                    _ => id,
                }),
                name: get(&[
                    "GITHUB_JOB",
                    "CI_JOB_NAME",
                    "BUILDKITE_LABEL",
                    "CIRCLE_JOB",
                    "JOB_NAME",
                    "TRAVIS_JOB_NAME",
                ]),
                url: github_job_url
                    .or_else(|| {
                        get(&[
                            "CI_JOB_URL",
                            "BUILDKITE_BUILD_URL",
                            "CIRCLE_BUILD_URL",
                            "BUILD_URL",
                            "TRAVIS_JOB_WEB_URL",
                        ])
                    })
                    .map(|u| sanitize_url(&u)),
            },
        }
    }
}

/// Lockfiles fingerprinted when present at the repository root.
pub const LOCKFILES: &[&str] = &[
    "Cargo.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "bun.lockb",
    "poetry.lock",
    "Pipfile.lock",
    "uv.lock",
    "pdm.lock",
    "requirements.txt",
    "go.sum",
    "Gemfile.lock",
    "composer.lock",
    "gradle.lockfile",
    "packages.lock.json",
    "mix.lock",
    "flake.lock",
];

/// `sha256:<hex>` of a lockfile's bytes.
pub fn lockfile_digest(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The last at most `max` bytes of `bytes`, starting after a newline when
/// one is in the kept part (so the tail starts with a whole line).
pub fn log_tail(bytes: &[u8], max: usize) -> (&[u8], u64) {
    if bytes.len() <= max {
        return (bytes, 0);
    }
    let mut start = bytes.len() - max;
    if let Some(nl) = bytes[start..].iter().position(|b| *b == b'\n')
        && start + nl + 1 < bytes.len()
    {
        start += nl + 1;
    }
    (&bytes[start..], start as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn github_actions_pull_request() {
        let ctx = CiContext::from_env(env(&[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_SHA", "abc123"),
            ("GITHUB_REF_NAME", "42/merge"),
            ("GITHUB_HEAD_REF", "fix/login"),
            ("GITHUB_RUN_ID", "9001"),
            ("GITHUB_RUN_ATTEMPT", "2"),
            ("GITHUB_JOB", "test"),
            ("GITHUB_SERVER_URL", "https://github.com"),
            ("GITHUB_REPOSITORY", "acme/shop"),
        ]));
        assert_eq!(
            ctx,
            CiContext {
                repository: Some("https://github.com/acme/shop".into()),
                commit: Some("abc123".into()),
                branch: Some("fix/login".into()),
                job: CiJob {
                    provider: Some("github_actions".into()),
                    id: Some("9001/2".into()),
                    name: Some("test".into()),
                    url: Some("https://github.com/acme/shop/actions/runs/9001".into()),
                },
            }
        );
    }

    #[test]
    fn gitlab_and_jenkins() {
        let ctx = CiContext::from_env(env(&[
            ("GITLAB_CI", "true"),
            ("CI_COMMIT_SHA", "def"),
            ("CI_COMMIT_REF_NAME", "main"),
            ("CI_JOB_ID", "77"),
            ("CI_JOB_NAME", "pytest"),
            (
                "CI_PROJECT_URL",
                "https://gitlab-ci-token:glcbt-x@gitlab.example.com/g/r",
            ),
        ]));
        assert_eq!(ctx.job.provider.as_deref(), Some("gitlab_ci"));
        assert_eq!(
            (ctx.commit.as_deref(), ctx.branch.as_deref()),
            (Some("def"), Some("main"))
        );
        assert_eq!(
            ctx.repository.as_deref(),
            Some("https://gitlab.example.com/g/r")
        );
        let ctx = CiContext::from_env(env(&[
            ("JENKINS_URL", "http://ci/"),
            ("GIT_COMMIT", "f00"),
            ("GIT_BRANCH", "origin/release/2"),
            ("BUILD_TAG", "jenkins-shop-12"),
        ]));
        assert_eq!(ctx.branch.as_deref(), Some("release/2"));
        assert_eq!(ctx.job.id.as_deref(), Some("jenkins-shop-12"));
        assert_eq!(CiContext::from_env(env(&[])), CiContext::default());
    }

    #[test]
    fn tails_start_at_a_line() {
        assert_eq!(log_tail(b"abc", 10), (&b"abc"[..], 0));
        assert_eq!(log_tail(b"line1\nline2\nline3\n", 9), (&b"line3\n"[..], 12));
        // No newline in the kept part: cut mid-line rather than send nothing.
        assert_eq!(log_tail(b"aaaaaaaaaa", 4), (&b"aaaa"[..], 6));
        assert_eq!(
            lockfile_digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
