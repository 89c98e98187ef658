//! The mirror cache against real git servers on loopback: `git daemon`
//! and git's smart HTTP behind Basic auth. Nothing is mocked.

mod common;

use common::*;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tracelab_repos::{CredentialSetting, ErrorKind, RepoCache};
use tracelab_testkit::git_server::{GitDaemon, GitHttp};

#[tokio::test]
async fn a_clone_over_git_resolves_names_tags_short_shas_and_ancestry() {
    let h = history(4);
    let served = tempfile::tempdir().unwrap();
    serve(h.repo.path(), served.path(), "shop.git");
    let daemon = GitDaemon::start(served.path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = cache(dir.path());

    let short = &h.commits[0][..8];
    let mirror = cache
        .ensure(
            &url(&daemon.url("shop.git")),
            &[
                "main",
                "HEAD",
                "v1",
                short,
                "main~2",
                &h.commits[2],
                "origin/main^",
            ],
        )
        .await
        .unwrap();
    let c = &h.commits;
    assert_eq!(
        mirror.resolved,
        owned(&[&c[3], &c[3], &c[1], &c[0], &c[1], &c[2], &c[2]])
    );
    assert!(mirror.fetched);
    let name = mirror
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.ends_with("-shop.git"), "{name}");
    assert_eq!(name.len(), "0123456789abcdef-shop.git".len(), "{name}");

    // The mirror is an ordinary bare repository: callers add worktrees and
    // branches of their own.
    assert_eq!(
        git(&mirror.path, &["rev-parse", "refs/remotes/origin/main"]),
        c[3]
    );
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("wt");
    git(
        &mirror.path,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "ai-debug/x",
            tree.to_str().unwrap(),
            &c[1],
        ],
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("file.txt")).unwrap(),
        "version 2\n"
    );

    // Full shas it has: a cache hit.
    let again = cache
        .ensure(&url(&daemon.url("shop")), &[&c[0], &c[3]])
        .await
        .unwrap();
    assert!(!again.fetched);
    assert_eq!(again.resolved, owned(&[&c[0], &c[3]]));
    assert_eq!(
        again.path, mirror.path,
        "spellings of one repository share a mirror"
    );

    // A fetch leaves the callers' branch alone.
    drop((mirror, again));
    let fetched = cache
        .ensure(&url(&daemon.url("shop")), &["main"])
        .await
        .unwrap();
    assert!(fetched.fetched);
    assert_eq!(
        git(&fetched.path, &["rev-parse", "refs/heads/ai-debug/x"]),
        c[1]
    );
    assert_eq!(mirrors(dir.path()).len(), 1);
}

#[tokio::test]
async fn http_with_basic_auth_and_cache_hits_that_make_no_request() {
    let h = history(3);
    let served = tempfile::tempdir().unwrap();
    serve(h.repo.path(), served.path(), "ledger.git");
    let http = GitHttp::start(served.path(), Some(("ci-bot", "s3cret-t0ken"))).unwrap();
    let secrets = tempfile::tempdir().unwrap();
    let token = secrets.path().join("token");
    std::fs::write(&token, "s3cret-t0ken\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings(dir.path());
    settings.credentials = vec![CredentialSetting {
        prefix: format!("http://127.0.0.1:{}/", http.port()),
        username: "ci-bot".into(),
        password_file: token.display().to_string(),
        ..Default::default()
    }];
    let cache = RepoCache::new(&settings).unwrap();
    let repo = url(&http.url("ledger"));

    let mirror = cache.ensure(&repo, &["main", "HEAD", "v1"]).await.unwrap();
    assert_eq!(
        mirror.resolved,
        owned(&[&h.commits[2], &h.commits[2], &h.commits[1]])
    );
    let requests = http.requests();
    assert!(requests > 0);

    let started = std::time::Instant::now();
    let hit = cache
        .ensure(&repo, &[&h.commits[0], &h.commits[2]])
        .await
        .unwrap();
    eprintln!("cache hit (2 full shas): {:?}", started.elapsed());
    assert!(!hit.fetched);
    assert_eq!(http.requests(), requests, "a cache hit makes no request");

    // Without credentials the server's 401 is PermissionDenied, not a prompt.
    let other = tempfile::tempdir().unwrap();
    let e = common::cache(other.path())
        .ensure(&repo, &["main"])
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::PermissionDenied, "{e}");
    assert!(e.message.contains("none are configured"), "{e}");
    assert!(mirrors(other.path()).is_empty());
}

#[tokio::test]
async fn a_wrong_password_is_permission_denied_and_never_shown() {
    let h = history(1);
    let served = tempfile::tempdir().unwrap();
    serve(h.repo.path(), served.path(), "ledger.git");
    let http = GitHttp::start(served.path(), Some(("ci-bot", "the-right-one"))).unwrap();
    let secrets = tempfile::tempdir().unwrap();
    let token = secrets.path().join("token");
    std::fs::write(&token, "wr0ng-passw0rd-123").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings(dir.path());
    settings.credentials = vec![CredentialSetting {
        prefix: format!("http://127.0.0.1:{}/ledger", http.port()),
        username: "ci-bot".into(),
        password_file: token.display().to_string(),
        ..Default::default()
    }];
    let cache = RepoCache::new(&settings).unwrap();
    let e = cache
        .ensure(&url(&http.url("ledger.git")), &["main"])
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::PermissionDenied, "{e}");
    assert!(e.message.contains("refused the credentials"), "{e}");
    let shown = format!("{e} {e:?} {:?}", std::error::Error::source(&e));
    for secret in ["wr0ng-passw0rd-123", "the-right-one"] {
        assert!(!shown.contains(secret), "{shown}");
    }
    assert!(!e.message.contains('\n'), "one line: {e}");
    assert!(mirrors(dir.path()).is_empty());
}

#[tokio::test]
async fn a_vanished_repository_still_serves_cached_commits() {
    let h = history(3);
    let served = tempfile::tempdir().unwrap();
    serve(h.repo.path(), served.path(), "gone.git");
    let daemon = GitDaemon::start(served.path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = cache(dir.path());
    let repo = url(&daemon.url("gone.git"));
    drop(cache.ensure(&repo, &["main"]).await.unwrap());

    std::fs::remove_dir_all(served.path().join("gone.git")).unwrap();
    let cached = cache
        .ensure(&repo, &[&h.commits[0], &h.commits[2]])
        .await
        .unwrap();
    assert_eq!(cached.resolved, owned(&[&h.commits[0], &h.commits[2]]));
    assert!(!cached.fetched);

    let unknown = "0123456789abcdef0123456789abcdef01234567";
    let e = cache.ensure(&repo, &[unknown]).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound, "{e}");
    assert!(e.message.contains(&daemon.url("gone.git")), "{e}");
    let e = cache.ensure(&repo, &["main"]).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound, "a name needs the server: {e}");

    // The server is down altogether: a name is Unavailable, cached shas still served.
    drop(daemon);
    let e = cache.ensure(&repo, &["main"]).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unavailable, "{e}");
    assert!(cache.ensure(&repo, &[&h.commits[1]]).await.is_ok());
}

#[tokio::test]
async fn unknown_and_malformed_revisions_and_urls_say_what_is_wrong() {
    let h = history(2);
    let served = tempfile::tempdir().unwrap();
    serve(h.repo.path(), served.path(), "shop.git");
    let daemon = GitDaemon::start(served.path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = cache(dir.path());
    let repo = url(&daemon.url("shop.git"));

    let e = cache
        .ensure(&repo, &["main", "no-such-branch"])
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound);
    assert!(
        e.message.contains("no-such-branch") && e.message.contains(repo.fetch_url()),
        "{e}"
    );
    let e = cache.ensure(&repo, &["main~9"]).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound, "{e}");
    for bad in ["--upload-pack=touch /tmp/x", "-x", "main branch", ""] {
        let e = cache.ensure(&repo, &[bad]).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument, "{bad:?}: {e}");
    }
    // The mirror survived the failures (they were not the mirror's fault).
    assert_eq!(
        cache.ensure(&repo, &["main"]).await.unwrap().resolved,
        owned(&[&h.commits[1]])
    );

    let elsewhere = url("https://github.com/acme/shop");
    let e = cache.ensure(&elsewhere, &["main"]).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::PermissionDenied, "{e}");

    let refused = url(&format!(
        "git://127.0.0.1:{}/x",
        tracelab_testkit::ports::free_port()
    ));
    let e = cache.ensure(&refused, &["main"]).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unavailable, "{e}");
}

#[tokio::test]
async fn a_force_pushed_branch_resolves_to_its_new_commit() {
    let h = history(3);
    let served = tempfile::tempdir().unwrap();
    serve(h.repo.path(), served.path(), "shop.git");
    let daemon = GitDaemon::start(served.path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = cache(dir.path());
    let repo = url(&daemon.url("shop.git"));
    assert_eq!(
        cache.ensure(&repo, &["main"]).await.unwrap().resolved,
        owned(&[&h.commits[2]])
    );

    // Rewrite main: drop the last commit, add another.
    h.repo.git(&["reset", "-q", "--hard", &h.commits[1]]);
    h.repo.write("file.txt", "rewritten\n");
    h.repo.git(&["commit", "-q", "-am", "rewritten"]);
    let rewritten = h.repo.head();
    let bare = served.path().join("shop.git");
    git(
        h.repo.path(),
        &["push", "-q", "--force", bare.to_str().unwrap(), "main"],
    );

    let after = cache.ensure(&repo, &["main", "main~1"]).await.unwrap();
    assert_eq!(after.resolved, owned(&[&rewritten, &h.commits[1]]));
    // The old tip is still in the mirror for whoever asked for it by sha.
    assert!(!cache.ensure(&repo, &[&h.commits[2]]).await.unwrap().fetched);
}

/// A git:// server that accepts connections and never answers.
struct Hanging {
    port: u16,
    connections: Arc<std::sync::atomic::AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Hanging {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (stopping, counted) = (stop.clone(), connections.clone());
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                counted.fetch_add(1, Ordering::SeqCst);
                held.push(stream);
            }
        });
        Self {
            port,
            connections,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Hanging {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
        let _ = self.thread.take().unwrap().join();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_clone_cut_by_the_timeout_leaves_no_mirror_and_the_next_ensure_succeeds() {
    let h = history(2);
    let served = tempfile::tempdir().unwrap();
    serve(h.repo.path(), served.path(), "slow.git");
    let hanging = Hanging::start();
    let port = hanging.port;
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings(dir.path());
    settings.fetch_timeout_seconds = 1;
    let cache = RepoCache::new(&settings).unwrap();
    let repo = url(&format!("git://127.0.0.1:{port}/slow.git"));

    // Four callers at once: one attempt times out, the others waited for it
    // and share its answer instead of each waiting out the timeout again.
    let started = std::time::Instant::now();
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let (cache, repo) = (cache.clone(), repo.clone());
            tokio::spawn(async move { cache.ensure(&repo, &["main"]).await })
        })
        .collect();
    for task in tasks {
        let e = task.await.unwrap().unwrap_err();
        assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(hanging.connections.load(Ordering::SeqCst), 1, "one attempt");
    assert!(mirrors(dir.path()).is_empty());
    assert!(
        !entries(dir.path()).iter().any(|n| n.contains(".tmp-")),
        "{:?}",
        entries(dir.path())
    );

    // A process that died mid-clone left a temporary directory behind.
    let mirror_stem = entries(dir.path())
        .into_iter()
        .find_map(|n| n.strip_suffix(".lock").map(str::to_string))
        .unwrap();
    let leftover = dir.path().join(format!("{mirror_stem}.tmp-999999-1-0"));
    std::fs::create_dir_all(leftover.join("objects")).unwrap();
    std::fs::write(leftover.join("HEAD"), "ref: refs/heads/main\n").unwrap();

    // The server comes back on the same port.
    drop(hanging);
    let _daemon = GitDaemon::start_on(served.path(), port).unwrap();
    let mirror = cache.ensure(&repo, &["main"]).await.unwrap();
    assert_eq!(mirror.resolved, owned(&[&h.commits[1]]));
    assert!(!leftover.exists(), "the leftover was swept");
    assert_eq!(mirrors(dir.path()).len(), 1);
}

#[tokio::test]
async fn a_damaged_mirror_is_detected_and_cloned_again() {
    let h = history(3);
    let served = tempfile::tempdir().unwrap();
    serve(h.repo.path(), served.path(), "shop.git");
    let daemon = GitDaemon::start(served.path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = cache(dir.path());
    let repo = url(&daemon.url("shop.git"));
    let tip = &h.commits[2];
    let path = cache.ensure(&repo, &["main"]).await.unwrap().path.clone();

    // Garbage in the tip's loose object.
    let object = path.join("objects").join(&tip[..2]).join(&tip[2..]);
    assert!(object.exists(), "small fetches keep loose objects");
    std::fs::remove_file(&object).unwrap();
    std::fs::write(&object, b"this is not zlib").unwrap();
    let repaired = cache.ensure(&repo, &[tip]).await.unwrap();
    assert_eq!(repaired.resolved, owned(&[tip]));
    assert!(repaired.fetched);
    git(&path, &["fsck", "--connectivity-only"]);
    drop(repaired);

    // Every object gone (the fetch or a fresh clone brings them back).
    for entry in std::fs::read_dir(path.join("objects")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.len() == 2 || name == "pack" {
            std::fs::remove_dir_all(entry.path()).unwrap();
        }
    }
    let repaired = cache.ensure(&repo, &["main", &h.commits[0]]).await.unwrap();
    assert_eq!(repaired.resolved, owned(&[tip, &h.commits[0]]));
    git(&path, &["fsck", "--connectivity-only"]);
    drop(repaired);

    // Not a repository any more.
    std::fs::remove_dir_all(path.join("objects")).unwrap();
    let repaired = cache.ensure(&repo, &["main"]).await.unwrap();
    assert_eq!(repaired.resolved, owned(&[tip]));
    git(&path, &["fsck", "--connectivity-only"]);
    assert_eq!(mirrors(dir.path()).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_ensures_of_one_repository_clone_once_across_processes() {
    let h = history(3);
    let served = tempfile::tempdir().unwrap();
    serve(h.repo.path(), served.path(), "busy.git");
    let http = GitHttp::start(served.path(), None).unwrap();
    let repo = url(&http.url("busy.git"));

    // What one clone costs in requests.
    let alone = tempfile::tempdir().unwrap();
    cache(alone.path()).ensure(&repo, &["main"]).await.unwrap();
    let one_clone = http.requests();

    // Two caches on one directory stand for two processes: only the file
    // lock is shared between them.
    let dir = tempfile::tempdir().unwrap();
    let caches = [cache(dir.path()), cache(dir.path())];
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (cache, repo) = (caches[i % 2].clone(), repo.clone());
            tokio::spawn(async move { cache.ensure(&repo, &["main"]).await })
        })
        .collect();
    let mut fetched = 0;
    for task in tasks {
        let mirror = task.await.unwrap().unwrap();
        assert_eq!(mirror.resolved, owned(&[&h.commits[2]]));
        fetched += usize::from(mirror.fetched);
    }
    assert_eq!(fetched, 1, "one task fetched, the others shared its result");
    assert_eq!(
        http.requests(),
        2 * one_clone,
        "exactly one more clone's requests"
    );
    assert_eq!(mirrors(dir.path()).len(), 1);
}

#[tokio::test]
async fn lru_eviction_keeps_the_newest_and_the_leased() {
    let big = history(4);
    let small = history(1);
    let served = tempfile::tempdir().unwrap();
    for name in ["a", "b", "c"] {
        serve(big.repo.path(), served.path(), name);
    }
    serve(small.repo.path(), served.path(), "d");
    let daemon = GitDaemon::start(served.path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut tiny = settings(dir.path());
    tiny.cache_max_bytes = 1;
    let cache = RepoCache::new(&tiny).unwrap();
    let ensure = |name: &'static str| {
        let cache = cache.clone();
        let repo = url(&daemon.url(name));
        async move { cache.ensure(&repo, &["main"]).await.unwrap() }
    };
    let names = |dir: &std::path::Path| -> Vec<String> {
        mirrors(dir)
            .iter()
            .map(|m| {
                m.trim_end_matches(".git")
                    .rsplit('-')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };

    let a = ensure("a").await; // leased until dropped
    drop(ensure("b").await);
    drop(ensure("c").await); // evicts b; a is leased
    let mut present = names(dir.path());
    present.sort();
    assert_eq!(present, ["a", "c"]);
    drop(a);
    drop(ensure("b").await); // evicts a and c
    assert_eq!(names(dir.path()), ["b"]);

    // Least recently used first: with room for all but one, the one not used longest goes.
    let roomy = tempfile::tempdir().unwrap();
    let cache = common::cache(roomy.path());
    for name in ["a", "b", "c"] {
        cache
            .ensure(&url(&daemon.url(name)), &["main"])
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A cache hit counts as a use.
    cache
        .ensure(&url(&daemon.url("a")), &[&big.commits[3]])
        .await
        .unwrap();
    let mut budget = settings(roomy.path());
    budget.cache_max_bytes = cache.used_bytes();
    let cache = RepoCache::new(&budget).unwrap();
    cache
        .ensure(&url(&daemon.url("d")), &["main"])
        .await
        .unwrap(); // smaller than b
    let mut present = names(roomy.path());
    present.sort();
    assert_eq!(present, ["a", "c", "d"]);
    assert!(cache.used_bytes() <= budget.cache_max_bytes);
}

#[tokio::test]
async fn a_commit_on_no_branch_or_tag_is_fetched_by_its_sha() {
    let mut h = history(2);
    h.repo.branch("review");
    let review = h.repo.commit("under review", &[("file.txt", "proposed\n")]);
    h.repo.checkout("main");
    let served = tempfile::tempdir().unwrap();
    serve(h.repo.path(), served.path(), "shop.git");
    let bare = served.path().join("shop.git");
    // Like a pull request: reachable only from a ref outside heads and tags.
    git(&bare, &["update-ref", "refs/pull/1/head", &review]);
    git(&bare, &["branch", "-q", "-D", "review"]);
    let daemon = GitDaemon::start(served.path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mirror = cache(dir.path())
        .ensure(&url(&daemon.url("shop")), &["main", &review])
        .await
        .unwrap();
    assert_eq!(mirror.resolved, owned(&[&h.commits[1], &review]));
}
