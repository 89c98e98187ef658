//! Server-side git credentials, chosen by URL prefix and handed to one git
//! process at a time.
//!
//! Nothing secret goes on a command line (other users can read any
//! process's argv in `/proc`): HTTPS passwords reach git through a tiny
//! credential helper configured with `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`
//! environment variables, which prints user and password from variables set
//! only on that git child. Inherited helpers are cleared first (an empty
//! `credential.helper` resets the list), so neither the service user's
//! stored credentials nor a prompt is ever used — unless
//! `ambient_credentials` (the one-machine CLI) keeps the user's own helpers
//! and ssh-agent where nothing is configured. SSH gets a pinned
//! known_hosts and `BatchMode`, so an unknown host key or a passphrase
//! fails instead of hanging.

use crate::settings::CredentialSetting;
use crate::url::{Parts, RepoUrl, Scheme, parse_parts};
use tracelab_domain::{Error, Result};

/// Prints the credentials git asks for (`get`); ignores `store`/`erase`.
const HELPER: &str = "!f() { test \"$1\" = get || return 0; printf 'username=%s\\npassword=%s\\n' \"$TRACELAB_GIT_USERNAME\" \"$TRACELAB_GIT_PASSWORD\"; }; f";

/// The deployment's git credentials, by URL prefix (also used to push:
/// `tracelab-codehost`).
#[derive(Debug, Clone)]
pub struct Credentials {
    entries: Vec<Entry>,
    /// Keep the user's own credential helpers where no entry matches.
    ambient: bool,
}

#[derive(Debug, Clone)]
struct Entry {
    prefix: Parts,
    setting: CredentialSetting,
}

/// What one git process needs to authenticate: environment variables, and
/// the secret to scrub from anything git prints.
#[derive(Debug, Default)]
pub struct Auth {
    pub env: Vec<(String, String)>,
    pub secret: Option<String>,
}

impl Credentials {
    /// Validates every entry: a parseable prefix, a password file for
    /// http(s), an SSH key *and* a known_hosts file for ssh.
    pub fn new(settings: &[CredentialSetting], ambient: bool) -> Result<Self> {
        let entries = settings
            .iter()
            .enumerate()
            .map(|(i, setting)| {
                let bad = |why: String| {
                    Error::invalid(format!("fleet.repositories.credentials[{i}]: {why}"))
                };
                let prefix = parse_parts(&setting.prefix, true)
                    .map_err(|e| bad(format!("prefix: {}", e.message)))?;
                match prefix.scheme {
                    Scheme::Https | Scheme::Http => {
                        if setting.password_file.is_empty() {
                            return Err(bad("an http(s) prefix needs password_file".into()));
                        }
                        if !setting.ssh_key_file.is_empty() {
                            return Err(bad("ssh_key_file is for ssh:// or user@host: prefixes".into()));
                        }
                    }
                    Scheme::Ssh => {
                        if setting.ssh_key_file.is_empty() {
                            return Err(bad("an ssh prefix needs ssh_key_file".into()));
                        }
                        if setting.known_hosts_file.is_empty() {
                            return Err(bad(
                                "ssh_key_file needs known_hosts_file (host keys are pinned, never trusted on first use)".into(),
                            ));
                        }
                        if !setting.password_file.is_empty() {
                            return Err(bad("password_file is for http(s) prefixes".into()));
                        }
                    }
                    Scheme::Git => return Err(bad("git:// has no authentication".into())),
                }
                Ok(Entry {
                    prefix,
                    setting: setting.clone(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { entries, ambient })
    }

    /// The most specific entry whose prefix covers `url`: same scheme, host
    /// and port, same user if the prefix names one, and whole leading path
    /// segments.
    fn entry(&self, url: &RepoUrl) -> Option<&Entry> {
        self.entries
            .iter()
            .filter(|e| {
                let p = &e.prefix;
                p.scheme == url.scheme()
                    && p.authority == url.authority()
                    && p.user.as_deref().is_none_or(|u| Some(u) == url.user())
                    && p.segments.len() <= url.segments().count()
                    && p.segments
                        .iter()
                        .map(String::as_str)
                        .eq(url.segments().take(p.segments.len()))
            })
            // Longest prefix wins; `max_by_key` keeps the last of equals, so reverse to keep the first.
            .rev()
            .max_by_key(|e| (e.prefix.segments.len(), e.prefix.user.is_some()))
    }

    /// The environment a git process fetching `url` gets. Reads the
    /// password file now, so a rotated secret is used at once.
    pub fn auth(&self, url: &RepoUrl) -> Result<Auth> {
        let mut auth = Auth::default();
        let allow = match url.scheme() {
            Scheme::Https => "https",
            // A redirect to https is fine; the reverse is not allowed.
            Scheme::Http => "http:https",
            Scheme::Ssh => "ssh",
            Scheme::Git => "git",
        };
        auth.env.push(("GIT_ALLOW_PROTOCOL".into(), allow.into()));
        let entry = self.entry(url);
        let mut config = Vec::new();
        if entry.is_some() || !self.ambient {
            config.push(("credential.helper", String::new()));
        }
        match (url.scheme(), entry) {
            (Scheme::Https | Scheme::Http, Some(entry)) => {
                let password = read_secret(&entry.setting.password_file, url)?;
                let user = if entry.setting.username.is_empty() {
                    "git"
                } else {
                    &entry.setting.username
                };
                config.push(("credential.helper", HELPER.into()));
                auth.env.push(("TRACELAB_GIT_USERNAME".into(), user.into()));
                auth.env
                    .push(("TRACELAB_GIT_PASSWORD".into(), password.clone()));
                auth.secret = Some(password);
            }
            (Scheme::Ssh, entry) => {
                let mut ssh = "ssh -o BatchMode=yes".to_string();
                if let Some(entry) = entry {
                    ssh = format!(
                        "ssh -i {} -o IdentitiesOnly=yes -o UserKnownHostsFile={} -o StrictHostKeyChecking=yes -o BatchMode=yes",
                        sh_quote(&entry.setting.ssh_key_file),
                        sh_quote(&entry.setting.known_hosts_file)
                    );
                }
                auth.env.push(("GIT_SSH_COMMAND".into(), ssh));
                auth.env.push(("GIT_SSH_VARIANT".into(), "ssh".into()));
            }
            _ => {}
        }
        auth.env
            .push(("GIT_CONFIG_COUNT".into(), config.len().to_string()));
        for (i, (key, value)) in config.into_iter().enumerate() {
            auth.env.push((format!("GIT_CONFIG_KEY_{i}"), key.into()));
            auth.env.push((format!("GIT_CONFIG_VALUE_{i}"), value));
        }
        Ok(auth)
    }
}

/// The trimmed content of a secret file. Its path may be named in errors;
/// its content never is.
fn read_secret(path: &str, url: &RepoUrl) -> Result<String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::unavailable(format!(
            "cannot read the password file {path} configured for {url}: {}",
            e.kind()
        ))
    })?;
    let secret = text.trim();
    if secret.is_empty() || secret.contains(['\n', '\r', '\0']) {
        return Err(Error::unavailable(format!(
            "the password file {path} configured for {url} must hold one non-empty line"
        )));
    }
    Ok(secret.to_string())
}

/// `s` as one word for `sh`.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(prefix: &str, password_file: &str) -> CredentialSetting {
        CredentialSetting {
            prefix: prefix.into(),
            password_file: password_file.into(),
            ..Default::default()
        }
    }

    fn ssh(prefix: &str, key: &str) -> CredentialSetting {
        CredentialSetting {
            prefix: prefix.into(),
            ssh_key_file: key.into(),
            known_hosts_file: "/k/known_hosts".into(),
            ..Default::default()
        }
    }

    /// Which entry (by its password file or key) serves `url`.
    fn chosen(creds: &Credentials, url: &str) -> Option<String> {
        creds
            .entry(&RepoUrl::parse(url).unwrap())
            .map(|e| format!("{}{}", e.setting.password_file, e.setting.ssh_key_file))
    }

    #[test]
    fn the_longest_matching_prefix_wins_and_spellings_match() {
        let creds = Credentials::new(
            &[
                setting("https://GitHub.com/", "host"),
                setting("https://github.com/acme", "acme"),
                setting("https://github.com/acme/shop.git", "shop"),
                setting("https://github.com/acme/", "acme-again"),
                ssh("git@github.com:", "key"),
                ssh("ssh://github.com/acme", "acme-key"),
            ],
            false,
        )
        .unwrap();
        let table = [
            ("https://github.com/other/x", Some("host")),
            ("https://github.com/acme/x.git", Some("acme")),
            ("https://github.com:443/acme/shop/", Some("shop")),
            ("https://github.com/acme-evil/x", Some("host")),
            ("http://github.com/acme/x", None),
            ("https://gitlab.com/acme/x", None),
            ("git@github.com:other/x", Some("key")),
            ("ssh://git@github.com/acme/x", Some("acme-key")),
            ("ssh://bob@github.com/other/x", None),
            ("git://github.com/acme/x", None),
        ];
        for (url, expected) in table {
            assert_eq!(chosen(&creds, url).as_deref(), expected, "{url}");
        }
    }

    #[test]
    fn settings_are_validated() {
        let bad = [
            setting("https://h/", ""),
            ssh("git@h:", "").clone(),
            CredentialSetting {
                known_hosts_file: String::new(),
                ..ssh("git@h:", "/k/id")
            },
            setting("git://h/", "/p"),
            setting("https://user:pw@h/", "/p"),
            CredentialSetting {
                ssh_key_file: "/k".into(),
                ..setting("https://h/", "/p")
            },
        ];
        for s in bad {
            let e = Credentials::new(std::slice::from_ref(&s), false).unwrap_err();
            assert!(
                e.message.starts_with("fleet.repositories.credentials[0]"),
                "{s:?}: {e}"
            );
        }
    }

    #[test]
    fn https_auth_goes_through_the_environment_and_ssh_is_pinned() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "s3cret-token\n").unwrap();
        let creds = Credentials::new(
            &[
                setting("https://h/", file.to_str().unwrap()),
                ssh("git@h:", "/keys/it's"),
            ],
            false,
        )
        .unwrap();
        let auth = creds
            .auth(&RepoUrl::parse("https://h/a/b").unwrap())
            .unwrap();
        assert_eq!(auth.secret.as_deref(), Some("s3cret-token"));
        let env: std::collections::HashMap<_, _> = auth.env.into_iter().collect();
        assert_eq!(env["GIT_CONFIG_COUNT"], "2");
        assert_eq!(
            env["GIT_CONFIG_VALUE_0"], "",
            "inherited helpers cleared first"
        );
        assert_eq!(env["GIT_CONFIG_VALUE_1"], HELPER);
        assert_eq!(env["TRACELAB_GIT_PASSWORD"], "s3cret-token");
        assert_eq!(env["TRACELAB_GIT_USERNAME"], "git");
        assert_eq!(env["GIT_ALLOW_PROTOCOL"], "https");

        let auth = creds.auth(&RepoUrl::parse("git@h:a/b").unwrap()).unwrap();
        let env: std::collections::HashMap<_, _> = auth.env.into_iter().collect();
        assert_eq!(
            env["GIT_SSH_COMMAND"],
            "ssh -i '/keys/it'\\''s' -o IdentitiesOnly=yes -o UserKnownHostsFile='/k/known_hosts' -o StrictHostKeyChecking=yes -o BatchMode=yes"
        );
        assert_eq!(env["GIT_CONFIG_COUNT"], "1");

        // The user's own helpers stay where nothing is configured, if asked for.
        let ambient =
            Credentials::new(&[setting("https://h/", file.to_str().unwrap())], true).unwrap();
        let env: std::collections::HashMap<_, _> = ambient
            .auth(&RepoUrl::parse("https://other/a").unwrap())
            .unwrap()
            .env
            .into_iter()
            .collect();
        assert_eq!(env["GIT_CONFIG_COUNT"], "0");
        let env: std::collections::HashMap<_, _> = ambient
            .auth(&RepoUrl::parse("https://h/a").unwrap())
            .unwrap()
            .env
            .into_iter()
            .collect();
        assert_eq!(env["GIT_CONFIG_COUNT"], "2");

        let missing =
            Credentials::new(&[setting("https://h/", "/nonexistent/token")], false).unwrap();
        let e = missing
            .auth(&RepoUrl::parse("https://h/a").unwrap())
            .unwrap_err();
        assert!(e.message.contains("/nonexistent/token"), "{e}");
    }
}
