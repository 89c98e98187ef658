//! Who is looking: the host's token check, and the dashboard's own browser
//! sessions (in memory, with expiry) with their CSRF tokens.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// A signed-in person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Viewer {
    /// Shown on pages and passed to [`DashboardSource::review`](crate::DashboardSource::review).
    pub name: String,
    /// Whether they may approve or reject; without it the review buttons are
    /// not shown and review posts are refused with 403.
    pub can_review: bool,
}

/// The host's check of a sign-in token (an API token, a shared secret from
/// config). The dashboard never stores the token: it keeps the [`Viewer`]
/// in a session. Compare secrets in constant time.
pub trait Authenticator: Send + Sync + 'static {
    fn check(&self, token: &str) -> Option<Viewer>;
}

/// The session cookie's name.
pub(crate) const SESSION_COOKIE: &str = "tracelab_session";
/// The cookie that ties the sign-in form to the browser that loaded it
/// (double-submit), so another site cannot sign a browser in as someone else.
pub(crate) const LOGIN_COOKIE: &str = "tracelab_login";
/// How long a sign-in form stays usable.
pub(crate) const LOGIN_FORM_TTL: Duration = Duration::from_secs(30 * 60);

/// 32 random bytes from the operating system, hex-encoded.
pub(crate) fn random_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Equality that takes the same time wherever the inputs first differ.
pub(crate) fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub viewer: Viewer,
    /// Every state-changing form of this session carries it.
    pub csrf: String,
    expires: Instant,
}

impl Session {
    /// The session of one request signed with `Authorization: Bearer` (a
    /// script, a health check, a link checker): it reads pages. Its CSRF
    /// token is fresh and never stored, so a review cannot be posted this
    /// way; reviews go through the sign-in form and its cookie.
    pub(crate) fn for_one_request(viewer: Viewer) -> Option<Self> {
        Some(Self {
            viewer,
            csrf: random_token().ok()?,
            expires: Instant::now(),
        })
    }
}

/// Sessions by id. Bounded: past `max`, signing in evicts the session that
/// would expire first.
pub(crate) struct Sessions {
    by_id: Mutex<HashMap<String, Session>>,
    ttl: Duration,
    max: usize,
}

impl Sessions {
    pub fn new(ttl: Duration, max: usize) -> Self {
        Self {
            by_id: Mutex::new(HashMap::new()),
            ttl,
            max: max.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        // A panic while holding the lock leaves the map consistent (every
        // operation is a single insert or remove), so poisoning is ignored.
        self.by_id
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new session for `viewer`: its id (the cookie value) and the session.
    pub fn create(&self, viewer: Viewer) -> Result<(String, Session), getrandom::Error> {
        let id = random_token()?;
        let session = Session {
            viewer,
            csrf: random_token()?,
            expires: Instant::now() + self.ttl,
        };
        let now = Instant::now();
        let mut map = self.lock();
        map.retain(|_, s| s.expires > now);
        while map.len() >= self.max {
            let Some(oldest) = map
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            map.remove(&oldest);
        }
        map.insert(id.clone(), session.clone());
        Ok((id, session))
    }

    /// The live session with this id; an expired one is dropped.
    pub fn get(&self, id: &str) -> Option<Session> {
        let mut map = self.lock();
        match map.get(id) {
            Some(s) if s.expires > Instant::now() => Some(s.clone()),
            Some(_) => {
                map.remove(id);
                None
            }
            None => None,
        }
    }

    pub fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }
}

/// The value of cookie `name` in a `Cookie` request header.
pub(crate) fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Strict, always.
pub(crate) fn set_cookie(
    name: &str,
    value: &str,
    path: &str,
    max_age: Duration,
    secure: bool,
) -> String {
    format!(
        "{name}={value}; HttpOnly; SameSite=Strict; Path={path}; Max-Age={}{}",
        max_age.as_secs(),
        if secure { "; Secure" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn viewer() -> Viewer {
        Viewer {
            name: "ana".into(),
            can_review: true,
        }
    }

    #[test]
    fn tokens_are_long_random_and_distinct() {
        let a = random_token().unwrap();
        let b = random_token().unwrap();
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn secrets_compare_by_value() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
        assert!(!same_secret("", "a"));
    }

    #[test]
    fn cookies_are_found_by_exact_name() {
        let h = "a=1; tracelab_session_x=2; tracelab_session=3";
        assert_eq!(cookie(h, SESSION_COOKIE), Some("3"));
        assert_eq!(cookie(h, "b"), None);
        assert_eq!(
            set_cookie("s", "v", "/", Duration::from_secs(60), true),
            "s=v; HttpOnly; SameSite=Strict; Path=/; Max-Age=60; Secure"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn sessions_expire() {
        let sessions = Sessions::new(Duration::from_secs(60), 10);
        let (id, s) = sessions.create(viewer()).unwrap();
        assert_eq!(sessions.get(&id).unwrap().csrf, s.csrf);
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(sessions.get(&id).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn the_cap_evicts_the_oldest() {
        let sessions = Sessions::new(Duration::from_secs(60), 2);
        let (first, _) = sessions.create(viewer()).unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
        let (second, _) = sessions.create(viewer()).unwrap();
        let (third, _) = sessions.create(viewer()).unwrap();
        assert!(sessions.get(&first).is_none());
        assert!(sessions.get(&second).is_some() && sessions.get(&third).is_some());
        sessions.remove(&second);
        assert!(sessions.get(&second).is_none());
    }
}
