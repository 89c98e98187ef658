//! Repository URLs: what a request may name, and the key that identifies a
//! repository however it is spelled. Pure; no IO.
//!
//! The parser is deliberately stricter than git: anything that could smuggle
//! a secret into stored investigations (`https://token@host/…`), reach the
//! local disk (`file://`), be read as an option by git or ssh (a leading
//! `-`), or climb out of the path the allow-list matched (`..`, `%2e%2e`)
//! is refused with the reason, before git ever sees it.

use tracelab_domain::{Error, Result};

/// A parsed, accepted repository URL. Contains nothing secret (URLs with a
/// password or, for http(s), any user part are refused), so it may be
/// logged, stored and shown.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RepoUrl {
    scheme: Scheme,
    user: Option<String>,
    key: String,
    /// Length of `host[:port]` at the start of `key`.
    host_len: usize,
    fetch_url: String,
}

/// Transport; scp-like `user@host:path` is ssh.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    Https,
    Http,
    Ssh,
    Git,
}

impl Scheme {
    fn default_port(self) -> u16 {
        match self {
            Scheme::Https => 443,
            Scheme::Http => 80,
            Scheme::Ssh => 22,
            Scheme::Git => 9418,
        }
    }
}

/// The parts every accepted spelling reduces to. `path` is normalised:
/// segments without empty ones, no trailing `.git`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parts {
    pub scheme: Scheme,
    pub user: Option<String>,
    /// Lower-cased host, with `:port` unless it is the scheme's default.
    pub authority: String,
    pub segments: Vec<String>,
}

const CREDENTIALS_REFUSED: &str = "give credentials in the server's configuration, not in the URL";

impl RepoUrl {
    /// Accepts `https://`, `http://`, `ssh://`, scp-like `user@host:path`
    /// and `git://`. Refuses, saying why (InvalidArgument): a password or
    /// token in the URL, `file://` and other schemes, a leading `-`,
    /// whitespace or control characters, an empty host or path, `..` path
    /// segments, queries and fragments.
    pub fn parse(s: &str) -> Result<RepoUrl> {
        let parts = parse_parts(s, false)?;
        let host_len = parts.authority.len();
        let key = format!("{}/{}", parts.authority, parts.segments.join("/"));
        Ok(RepoUrl {
            scheme: parts.scheme,
            user: parts.user,
            key,
            host_len,
            fetch_url: s.to_string(),
        })
    }

    /// `host[:port]/path`: host lower-cased, default ports dropped (443
    /// https, 80 http, 22 ssh, 9418 git), no `.git`, no trailing slash, no
    /// user. The identity of a repository: `git@github.com:acme/shop.git`
    /// and `https://GitHub.com/acme/shop/` have the same key. Path case is
    /// kept (servers differ on whether it matters).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The URL git is given: as the request wrote it (it holds nothing
    /// secret, or parsing would have refused it).
    pub fn fetch_url(&self) -> &str {
        &self.fetch_url
    }

    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    pub(crate) fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// `host[:port]`.
    pub(crate) fn authority(&self) -> &str {
        &self.key[..self.host_len]
    }

    /// [`key`](Self::key) with the port always spelled out (`host:443/path`),
    /// so that an allow-list pattern naming the port (`host:*/**`,
    /// `host:443/**`) also admits a URL that leaves the default port out.
    pub(crate) fn key_with_port(&self) -> String {
        let authority = self.authority();
        let has_port = match authority.rfind(']') {
            Some(close) => authority[close..].contains(':'),
            None => authority.contains(':'),
        };
        if has_port {
            return self.key.clone();
        }
        let port = self.scheme.default_port();
        format!("{authority}:{port}{}", &self.key[self.host_len..])
    }

    /// The path's segments, normalised as in [`key`](Self::key).
    pub(crate) fn segments(&self) -> impl Iterator<Item = &str> {
        self.key[self.host_len + 1..].split('/')
    }
}

impl std::fmt::Display for RepoUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.fetch_url)
    }
}

/// Whether a request's `repository` string is meant as a URL: it has `://`,
/// or is scp-like (`x@host:path`, `host:path`: a `:` before any `/`, and no
/// leading `/` or `.`), so that a local path is never mistaken for one.
pub fn looks_like_url(s: &str) -> bool {
    if s.contains("://") {
        return true;
    }
    if s.starts_with('/') || s.starts_with('.') {
        return false;
    }
    match s.find(':') {
        Some(i) if i > 0 => !s[..i].contains('/'),
        _ => false,
    }
}

/// `s` fit to quote in an error: whatever precedes the last `@` (a user,
/// a password, a token — even one holding `/`, `?` or `#`) becomes `***`,
/// and a query or fragment is cut, so a refused URL never echoes a secret.
pub(crate) fn redact(s: &str) -> String {
    let start = s.find("://").map_or(0, |i| i + 3);
    let mut shown = match s.rfind('@') {
        Some(at) if at >= start => format!("{}***{}", &s[..start], &s[at..]),
        _ => s.to_string(),
    };
    shown.truncate(shown.find(['?', '#']).unwrap_or(shown.len()));
    if shown.len() > 200 {
        let mut end = 200;
        while !shown.is_char_boundary(end) {
            end -= 1;
        }
        shown.truncate(end);
        shown.push('…');
    }
    shown
}

/// Parses any accepted spelling into its [`Parts`]. `prefix` allows an
/// empty path (credential prefixes such as `https://git.example.com/`).
pub(crate) fn parse_parts(s: &str, prefix: bool) -> Result<Parts> {
    let refuse = |why: &str| {
        Err(Error::invalid(format!(
            "{:?} is not an accepted repository URL: {why}",
            redact(s)
        )))
    };
    if s.is_empty() {
        return Err(Error::invalid("the repository URL is empty"));
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        // Not echoed: it might be a pasted secret with a line break.
        return Err(Error::invalid(
            "the repository URL contains whitespace or control characters",
        ));
    }
    if s.starts_with('-') {
        return refuse("it starts with '-', which git would read as an option");
    }
    if s.contains('?') || s.contains('#') {
        return refuse("queries and fragments are not part of a repository URL");
    }
    let (scheme, user_host, path) = if let Some((scheme, rest)) = s.split_once("://") {
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "https" => Scheme::Https,
            "http" => Scheme::Http,
            "ssh" => Scheme::Ssh,
            "git" => Scheme::Git,
            "file" => {
                return refuse(
                    "file:// URLs are not fetched; name a local repository by its path (allowed under the configured local roots)",
                );
            }
            other => {
                return refuse(&format!(
                    "the scheme {other:?} is not supported (use https://, http://, ssh://, git:// or user@host:path)"
                ));
            }
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        (scheme, authority, path.to_string())
    } else if looks_like_url(s) {
        // scp-like: the first ':' outside an IPv6 literal ends the host.
        let colon = if let Some(close) = s.find("]:") {
            close + 1
        } else {
            s.find(':').expect("looks_like_url found a colon")
        };
        let (authority, path) = (&s[..colon], &s[colon + 1..]);
        if path.contains('@') {
            // `user:password@host:path`, which git would read as host `user`.
            return refuse(&format!(
                "it looks like user:password@host; {CREDENTIALS_REFUSED}"
            ));
        }
        (Scheme::Ssh, authority, format!("/{path}"))
    } else {
        return refuse("it is neither a URL nor user@host:path");
    };

    let (user, host_port) = match user_host.rfind('@') {
        Some(at) => (Some(&user_host[..at]), &user_host[at + 1..]),
        None => (None, user_host),
    };
    if let Some(user) = user {
        if user.contains(':') {
            return refuse(&format!("it holds a password; {CREDENTIALS_REFUSED}"));
        }
        match scheme {
            Scheme::Https | Scheme::Http => {
                return refuse(&format!(
                    "a user name or token in an http(s) URL is refused; {CREDENTIALS_REFUSED}"
                ));
            }
            Scheme::Git => return refuse("git:// URLs have no user"),
            Scheme::Ssh => {}
        }
        if user.is_empty()
            || user.starts_with('-')
            || !user
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c))
        {
            return refuse("the user name has characters a user name cannot have");
        }
    }
    let (host, port) = match split_port(host_port) {
        Ok(split) => split,
        Err(why) => return refuse(why),
    };
    if host.is_empty() {
        return refuse("the host is empty");
    }
    let host_ok = if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        !inner.is_empty()
            && inner
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
    } else {
        !host.starts_with('-')
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_')
    };
    if !host_ok {
        return refuse("the host name is malformed");
    }
    let host = host.to_ascii_lowercase();
    let authority = match port {
        Some(p) if p != scheme.default_port() => format!("{host}:{p}"),
        _ => host,
    };
    let segments = match normalise_path(&path) {
        Ok(segments) => segments,
        Err(why) => return refuse(&why),
    };
    if segments.is_empty() && !prefix {
        return refuse("it names no repository path");
    }
    Ok(Parts {
        scheme,
        user: user.map(str::to_string),
        authority,
        segments,
    })
}

/// `host[:port]`, with `[v6]:port`. A port must be 1–65535.
fn split_port(host_port: &str) -> std::result::Result<(&str, Option<u16>), &'static str> {
    let colon = if host_port.starts_with('[') {
        match host_port.find(']') {
            Some(close) if host_port.len() > close + 1 => Some(close + 1),
            Some(_) => None,
            None => return Err("the IPv6 address is not closed with ']'"),
        }
    } else {
        host_port.rfind(':')
    };
    let Some(colon) = colon else {
        return Ok((host_port, None));
    };
    if &host_port[colon..colon + 1] != ":" {
        return Err("the host name is malformed");
    }
    let port = &host_port[colon + 1..];
    match port.parse::<u16>() {
        Ok(p) if p > 0 && port.chars().all(|c| c.is_ascii_digit()) => {
            Ok((&host_port[..colon], Some(p)))
        }
        _ => Err("the port is not a number from 1 to 65535"),
    }
}

/// Path segments without empty ones and without a trailing `.git`; refuses
/// `.`/`..` segments, also percent-encoded, and encoded separators, which a
/// server would decode after the allow-list matched the encoded form.
fn normalise_path(path: &str) -> std::result::Result<Vec<String>, String> {
    if path.contains('\\') {
        return Err("backslashes are not allowed in the path".into());
    }
    let mut segments: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    for segment in &segments {
        let decoded = percent_decode(segment);
        if decoded == ".." || decoded == "." {
            return Err("'..' and '.' path segments are not allowed".into());
        }
        if decoded.contains('/') || decoded.contains('\\') || decoded.contains('\0') {
            return Err("encoded separators are not allowed in the path".into());
        }
    }
    if let Some(last) = segments.last_mut() {
        if let Some(stem) = last.strip_suffix(".git") {
            *last = stem.to_string();
        }
        if last.is_empty() {
            segments.pop();
        }
    }
    Ok(segments)
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracelab_domain::ErrorKind;

    /// `input` parses, and has `key` (and a fetch URL equal to the input).
    fn check(input: &str, key: &str) {
        let url = RepoUrl::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(url.key(), key, "{input}");
        assert_eq!(url.fetch_url(), input);
        assert_eq!(url.to_string(), input);
        assert!(looks_like_url(input), "{input} looks like a URL");
    }

    /// `input` is refused as InvalidArgument with a message containing `why`.
    fn refused(input: &str, why: &str) {
        let e = RepoUrl::parse(input).expect_err(input);
        assert_eq!(e.kind, ErrorKind::InvalidArgument, "{input}");
        assert!(e.message.contains(why), "{input}: {}", e.message);
    }

    #[test]
    fn spellings_of_one_repository_share_a_key() {
        for input in [
            "https://github.com/acme/shop",
            "https://github.com/acme/shop.git",
            "https://GitHub.com/acme/shop/",
            "https://github.com:443/acme/shop.git/",
            "https://github.com//acme/shop",
            "HTTPS://github.com/acme/shop",
            "http://github.com:80/acme/shop",
            "ssh://git@github.com/acme/shop.git",
            "ssh://git@github.com:22/acme/shop",
            "ssh://github.com/acme/shop",
            "git@github.com:acme/shop.git",
            "git@github.com:/acme/shop.git",
            "github.com:acme/shop",
            "git://github.com/acme/shop.git",
            "git://github.com:9418/acme/shop",
        ] {
            check(input, "github.com/acme/shop");
        }
    }

    #[test]
    fn ports_hosts_and_paths() {
        check("git://127.0.0.1:9419/shop", "127.0.0.1:9419/shop");
        check("http://127.0.0.1:8080/a/b/c.git", "127.0.0.1:8080/a/b/c");
        check(
            "https://git.example.com:8443/Team/Repo",
            "git.example.com:8443/Team/Repo",
        );
        check("ssh://git@[::1]:2222/srv/repo.git", "[::1]:2222/srv/repo");
        check("git@[::1]:srv/repo.git", "[::1]/srv/repo");
        check(
            "https://dev.azure.com/org/My%20Project/_git/repo",
            "dev.azure.com/org/My%20Project/_git/repo",
        );
        check("ssh://git@host/~alice/repo.git", "host/~alice/repo");
        check("alice@host.internal:repos/x", "host.internal/repos/x");
    }

    #[test]
    fn refusals_say_why() {
        refused(
            "https://user:hunter2@github.com/a/b",
            "credentials in the server's configuration",
        );
        refused(
            "https://ghp_token123@github.com/a/b",
            "credentials in the server's configuration",
        );
        refused("ssh://git:pw@github.com/a/b", "password");
        refused("file:///srv/repo", "file:// URLs are not fetched");
        refused("ftp://host/repo", "scheme \"ftp\" is not supported");
        refused("ext::sh -c touch% /tmp/x", "whitespace");
        refused("-oProxyCommand=x:y", "starts with '-'");
        refused("ssh://-oProxyCommand=x/y", "host name is malformed");
        refused("https://github.com/a b", "whitespace");
        refused("https://github.com/a\tb", "whitespace");
        refused("https://github.com/a\nb", "whitespace");
        refused("https:///a/b", "host is empty");
        refused("https://github.com", "no repository path");
        refused("https://github.com/", "no repository path");
        refused("git@github.com:", "no repository path");
        refused("https://github.com/acme/../secret", "'..'");
        refused("https://github.com/acme/%2e%2E/secret", "'..'");
        refused("https://github.com/acme/a%2Fb", "encoded separators");
        refused("https://github.com/a/b?x=1", "queries");
        refused("https://github.com:0/a", "port");
        refused("https://github.com:99999/a", "port");
        refused("https://github.com:x/a", "port");
        refused("git://git@host/a", "no user");
        refused("", "empty");
    }

    #[test]
    fn refusals_never_echo_a_secret() {
        for input in [
            "https://host/a\nsecret-token",
            "https://ci-bot:secret-token@127.0.0.1:8080/x",
            "https://secret-token@github.com/a/b",
            "https://ci-bot:secret/token@host/x",
            "https://ci-bot:secret?token@host/x",
            "https://host/a/b?access_token=secret-token",
            "http://host/x#secret-token",
            "ci-bot:secret-token@127.0.0.1:x",
            "ftp://ci-bot:secret-token@host/x",
        ] {
            let e = RepoUrl::parse(input).unwrap_err();
            assert!(!e.message.contains("secret"), "{input}: {}", e.message);
        }
        assert_eq!(redact("https://u:p@h/x?q"), "https://***@h/x");
        assert_eq!(redact("git@h:x"), "***@h:x");
        assert_eq!(redact("https://h/x"), "https://h/x");
    }

    #[test]
    fn local_paths_are_not_urls() {
        for path in [
            "/srv/repo",
            "./repo",
            "../repo",
            "repo",
            "/srv/a:b",
            "./a:b",
            "dir/a:b",
            ":x",
            "",
        ] {
            assert!(!looks_like_url(path), "{path}");
        }
        for url in ["https://h/x", "git@h:x", "h:x", "git://h/x", "file:///x"] {
            assert!(looks_like_url(url), "{url}");
        }
    }

    #[test]
    fn parts_expose_scheme_user_and_segments() {
        let url = RepoUrl::parse("git@GitHub.com:acme/shop.git").unwrap();
        assert_eq!(url.scheme(), Scheme::Ssh);
        assert_eq!(url.user(), Some("git"));
        assert_eq!(url.authority(), "github.com");
        assert_eq!(url.segments().collect::<Vec<_>>(), ["acme", "shop"]);
        assert_eq!(url.key_with_port(), "github.com:22/acme/shop");
        let url = RepoUrl::parse("https://[::1]:8443/a").unwrap();
        assert_eq!(url.key_with_port(), "[::1]:8443/a");
        let url = RepoUrl::parse("https://[::1]/a").unwrap();
        assert_eq!(url.key_with_port(), "[::1]:443/a");
        let prefix = parse_parts("https://git.example.com/", true).unwrap();
        assert!(prefix.segments.is_empty());
    }
}
