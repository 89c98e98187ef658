//! The deployment's repository settings, embedded by every service as
//! `[fleet.repositories]`. Nothing here is secret: credentials are named by
//! the files that hold them (Kubernetes Secrets mounted as files), which are
//! read when a fetch needs them, so a rotated token is picked up without a
//! restart and printing the settings leaks nothing.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RepositorySettings {
    /// Where mirrors live; empty = `$XDG_CACHE_HOME/tracelab/repos` (or
    /// `~/.cache/tracelab/repos`).
    pub cache_dir: String,
    /// Size budget of all mirrors together; least-recently-used mirrors not
    /// in use are evicted beyond it. Default 20 GiB.
    pub cache_max_bytes: u64,
    /// URL patterns a request may name, matched against the normalised key
    /// `host[:port]/path` (`github.com/acme/*`, `git.example.com/**`,
    /// `127.0.0.1:*/**`). `*` stays within one path segment, `**` crosses
    /// segments. Empty = no URL is allowed.
    pub allow: Vec<String>,
    /// Local directories under which a request may name a local path
    /// (checked lexically and after canonicalisation, so `..` and symlinks
    /// cannot climb out). Empty = local paths refused.
    pub local_roots: Vec<String>,
    /// Credentials by URL prefix (the longest matching prefix wins).
    pub credentials: Vec<CredentialSetting>,
    /// Longest a clone or fetch may take, in seconds; beyond it the git
    /// process group is killed and the error is Timeout.
    pub fetch_timeout_seconds: u64,
    /// Also use the credentials of the user running the process — their git
    /// credential helpers, ssh-agent (`SSH_AUTH_SOCK`) and `~/.ssh` keys —
    /// where no entry of `credentials` matches. For the one-machine CLI; a
    /// service leaves it off, so only configured credentials are ever sent.
    /// Prompts stay disabled either way.
    pub ambient_credentials: bool,
}

impl Default for RepositorySettings {
    fn default() -> Self {
        Self {
            cache_dir: String::new(),
            cache_max_bytes: 20 << 30,
            allow: Vec::new(),
            local_roots: Vec::new(),
            credentials: Vec::new(),
            fetch_timeout_seconds: 600,
            ambient_credentials: false,
        }
    }
}

/// How to authenticate to the repositories under one URL prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CredentialSetting {
    /// `https://git.example.com/`, `https://github.com/acme/`,
    /// `ssh://git@github.com/`, `git@github.com:` (scp-like). Compared with
    /// the normalised URL (scheme, host, port, whole path segments), so
    /// spelling variants match and `…/acme` does not match `…/acme-evil`.
    /// A credential is only ever sent over the scheme its prefix names.
    pub prefix: String,
    /// HTTPS user name (`x-access-token` for GitHub App tokens). Default `git`.
    pub username: String,
    /// File holding the HTTPS token or password, read (and trimmed) at each
    /// use. Never taken from a URL.
    pub password_file: String,
    /// SSH private key (mode 0400/0600, or ssh refuses it).
    pub ssh_key_file: String,
    /// Pinned known_hosts for SSH (`StrictHostKeyChecking=yes`); required
    /// with `ssh_key_file`.
    pub known_hosts_file: String,
}

impl Default for CredentialSetting {
    fn default() -> Self {
        Self {
            prefix: String::new(),
            username: "git".into(),
            password_file: String::new(),
            ssh_key_file: String::new(),
            known_hosts_file: String::new(),
        }
    }
}
