//! What may leave a CI job: URLs without their credentials, and the names
//! (never the values) of environment variables that do not look secret.

use std::collections::BTreeSet;

/// Removes `user:password@` from a URL (a remote like
/// `https://x-access-token:ghs_…@github.com/acme/shop.git`).
pub fn sanitize_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let host_end = rest.find('/').unwrap_or(rest.len());
    match rest[..host_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// Name parts (split on `_`, upper-cased) that make a variable name look secret.
const SECRET_NAME_PARTS: &[&str] = &[
    "KEY",
    "KEYS",
    "PASS",
    "PASSWORD",
    "PASSWD",
    "PWD",
    "AUTH",
    "CERT",
    "CERTIFICATE",
    "PRIVATE",
    "CREDENTIAL",
    "CREDENTIALS",
    "CREDS",
    "DSN",
    "SALT",
    "PAT",
    "SSH",
    "GPG",
    "PGP",
    "SIGNING",
    "WEBHOOK",
    "OTP",
    "TOTP",
    "PIN",
    "SESSION",
    "COOKIE",
    "JWT",
    "BEARER",
    "SECRET",
    "SECRETS",
    "TOKEN",
    "TOKENS",
    "APIKEY",
    "KEYSTORE",
    "TRUSTSTORE",
    "HTPASSWD",
    "NETRC",
];

/// Whether an environment variable's NAME suggests its value is a secret
/// (`AWS_SECRET_ACCESS_KEY`, `NPM_TOKEN`, `DATABASE_URL`, `SENTRY_DSN`).
pub fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    crate::redact::is_sensitive_key(name)
        || upper
            .split(['_', '-', '.'])
            .any(|part| SECRET_NAME_PARTS.contains(&part))
        // Connection strings carry passwords.
        || upper.ends_with("DATABASE_URL")
        || upper.ends_with("_DB_URL")
        || upper.contains("CONNECTION_STRING")
        || upper.starts_with("INPUT_") // GitHub action inputs: arbitrary, often tokens
}

/// Sorted, de-duplicated, valid variable names with secret-looking names
/// removed, at most `max` (the first in sort order).
pub fn env_names<I: IntoIterator<Item = String>>(names: I, max: usize) -> Vec<String> {
    let valid = |n: &str| {
        !n.is_empty()
            && n.len() <= 128
            && !n.starts_with(|c: char| c.is_ascii_digit())
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    names
        .into_iter()
        .filter(|n| valid(n) && !is_secret_env_name(n))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .take(max)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_names_are_dropped() {
        let names = [
            "PATH",
            "HOME",
            "CARGO_HOME",
            "RUSTUP_TOOLCHAIN",
            "CI",
            "GITHUB_SHA",
            "LANG",
            "TZ",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "NPM_TOKEN",
            "GITHUB_TOKEN",
            "DATABASE_URL",
            "SENTRY_DSN",
            "PGPASSWORD",
            "MY_API_KEY",
            "SSH_AUTH_SOCK",
            "GPG_PRIVATE_KEY",
            "SLACK_WEBHOOK_URL",
            "INPUT_TOKEN",
            "DOCKER_AUTH_CONFIG",
            "CODECOV_TOKEN",
            "TWINE_PASSWORD",
            "KEYCHAIN",
            "bad name",
            "1X",
            "PATH",
        ]
        .map(str::to_owned);
        assert_eq!(
            env_names(names, 100),
            [
                "CARGO_HOME",
                "CI",
                "GITHUB_SHA",
                "HOME",
                "KEYCHAIN",
                "LANG",
                "PATH",
                "RUSTUP_TOOLCHAIN",
                "TZ"
            ]
        );
    }

    #[test]
    fn urls_lose_credentials() {
        assert_eq!(
            sanitize_url("https://x-access-token:ghs_abc@github.com/acme/shop.git"),
            "https://github.com/acme/shop.git"
        );
        assert_eq!(
            sanitize_url("git@github.com:acme/shop.git"),
            "git@github.com:acme/shop.git"
        );
        assert_eq!(sanitize_url("https://h/p@q"), "https://h/p@q");
    }
}
