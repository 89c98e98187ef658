//! Frame normalisation: repository-relative paths, in-app vs library
//! classification, and generated names made stable.
//!
//! Paths: a known repository root (from [`crate::ParseOptions::repo_roots`])
//! wins; otherwise CI and container prefixes (`/home/runner/work/r/r/`,
//! `/builds/group/repo/`, `/app/`, `C:\Users\x\proj\`, ...) are stripped;
//! library paths are cut after their marker (`site-packages/`,
//! `node_modules/`, `.cargo/registry/src/<index>/`, `pkg/mod/`, GOROOT `src/`).
//! Because no heuristic knows every layout, stack signatures use only the
//! last two path components ([`signature_path`]).

use crate::model::{Frame, Language};
use regex::Regex;
use std::sync::LazyLock;

/// Settings for normalising frames.
#[derive(Debug, Clone, Default)]
pub struct Normalizer {
    repo_roots: Vec<String>,
    in_app_prefixes: Vec<String>,
}

/// Directories that usually sit directly under a repository root.
const ANCHORS: &[&str] = &[
    "src",
    "lib",
    "app",
    "apps",
    "test",
    "tests",
    "spec",
    "pkg",
    "cmd",
    "internal",
    "crates",
    "packages",
    "__tests__",
    "services",
    "main",
    "server",
    "client",
];

static CI_PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?x)^(?:
            /home/runner/work/[^/]+/[^/]+/
          | [A-Za-z]:/a/[^/]+/[^/]+/
          | /github/workspace/
          | /builds/[^/]+/[^/]+/
          | /(?:var/lib|home)/jenkins/(?:agent/)?workspace/[^/]+/
          | /buildkite/builds/[^/]+/[^/]+/[^/]+/
          | /var/lib/buildkite-agent/builds/[^/]+/[^/]+/[^/]+/
          | /home/circleci/(?:project|repo)/
          | /drone/src/
          | /woodpecker/src/[^/]+/[^/]+/[^/]+/
          | /workspace/
          | /usr/src/app/
          | /opt/[^/]+/
          | /srv/[^/]+/
          | /code/
          | /app/
          | /src/
        )",
    )
    .unwrap()
});

static HOME_PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:/home/[^/]+/|/Users/[^/]+/|/root/|[A-Za-z]:/Users/[^/]+/|/tmp/[^/]+/|/private/tmp/[^/]+/|/mnt/[^/]+/|[A-Za-z]:/)").unwrap()
});

/// Library markers, most specific first: the path is a dependency or
/// runtime file; what follows the marker is kept.
static LIB_MARKERS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"(?:^|/)(?:site-packages|dist-packages)/",
        r"(?:^|/)node_modules/",
        r"(?:^|/)\.cargo/registry/src/[^/]+/",
        r"(?:^|/)\.cargo/git/checkouts/[^/]+/[^/]+/",
        r"^/rustc/[0-9a-f]+/",
        r"(?:^|/)pkg/mod/",
        r"(?:^|/)vendor/",
        r"(?:^|/)\.m2/repository/",
        r"(?:^|/)\.gradle/caches/",
        r"(?:^|/)lib/python\d(?:\.\d+)?/",
        // Windows: `…\Python312\Lib\`, the tool cache's `…\Python\3.12.3\x64\Lib\`.
        r"(?:^|/)(?:Python\d+|x64|x86)/Lib/",
        r"(?:^|/)lib/pypy\d?(?:\.\d+)?/",
        r"(?:^|/)(?:usr/local/go|usr/lib/go(?:-[\d.]+)?|opt/hostedtoolcache/go/[^/]+/[^/]+|sdk/go[\d.]*|usr/local/Cellar/go/[^/]+/libexec|Go)/src/",
    ]
    .into_iter()
    .map(|p| Regex::new(p).unwrap())
    .collect()
});

static GO_MOD_VERSION: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"@v[^/]+").unwrap());

impl Normalizer {
    pub fn new(repo_roots: &[String], in_app_prefixes: &[String]) -> Self {
        let mut roots: Vec<String> = repo_roots
            .iter()
            .map(|r| {
                let mut r = r.replace('\\', "/");
                if !r.ends_with('/') {
                    r.push('/');
                }
                r
            })
            .collect();
        roots.sort_by_key(|r| std::cmp::Reverse(r.len()));
        Self {
            repo_roots: roots,
            in_app_prefixes: in_app_prefixes.to_vec(),
        }
    }

    /// Normalises one frame in place for `lang`.
    pub fn frame(&self, frame: &mut Frame, lang: Language) {
        let mut lib_path = false;
        if let Some(file) = frame.file.take() {
            let (rel, is_lib) = self.relativize(&file);
            lib_path = is_lib;
            frame.file = Some(rel);
        }
        let mut generated = false;
        if let Some(f) = frame.function.take() {
            // Proxies, CGLIB subclasses and reflection stubs are framework plumbing.
            generated = GENERATED_MARKERS.iter().any(|m| f.contains(m));
            frame.function = Some(normalize_function(&f, lang));
        }
        let explicit = self.matches_prefix(frame);
        frame.in_app = explicit || (!lib_path && !generated && !library_frame(frame, lang));
    }

    fn matches_prefix(&self, frame: &Frame) -> bool {
        self.in_app_prefixes.iter().any(|p| {
            frame
                .function
                .as_deref()
                .is_some_and(|f| f.starts_with(p.as_str()))
                || frame
                    .file
                    .as_deref()
                    .is_some_and(|f| f.starts_with(p.as_str()))
        })
    }

    /// Makes a path repository-relative; returns whether it is a library path.
    pub fn relativize(&self, path: &str) -> (String, bool) {
        let mut p = path.trim().replace('\\', "/");
        for scheme in ["file://", "webpack:///", "webpack://", "app:///"] {
            if let Some(rest) = p.strip_prefix(scheme) {
                p = rest.to_owned();
            }
        }
        // A browser's script URL: the path on the server is what the repository has.
        if let Some(rest) = p
            .strip_prefix("http://")
            .or_else(|| p.strip_prefix("https://"))
        {
            p = rest
                .split_once('/')
                .map_or(rest, |(_, path)| path)
                .to_owned();
        }
        // `file:///C:/x` leaves `/C:/x`.
        if p.len() > 3 && p.as_bytes()[0] == b'/' && p.as_bytes()[2] == b':' {
            p.remove(0);
        }
        // `C:\\Users\\x` escaped in a repr or a JSON string doubles every
        // separator; one path has one spelling.
        while p.contains("//") {
            p = p.replace("//", "/");
        }
        // Query strings and webpack loaders carry build hashes.
        if let Some(i) = p.find('?') {
            p.truncate(i);
        }
        // Node's own modules (`node:internal/...`; before Node 16 `internal/....js`).
        let node_internal =
            p.starts_with("internal/") && p.ends_with(".js") && !p.contains("/src/");
        if p.starts_with("node:")
            || node_internal
            || p == "<anonymous>"
            || p.starts_with("<frozen ")
        {
            return (p, true);
        }
        for root in &self.repo_roots {
            if let Some(rest) = p.strip_prefix(root.as_str()) {
                return (rest.to_owned(), false);
            }
        }
        if let Some(m) = LIB_MARKERS.iter().find_map(|re| re.find_iter(&p).last()) {
            let rest = &p[m.end()..];
            let rest = if m.as_str().contains("pkg/mod") {
                GO_MOD_VERSION.replace(rest, "").into_owned()
            } else {
                rest.to_owned()
            };
            return (rest, true);
        }
        if let Some(rest) = p.strip_prefix("./") {
            return (rest.to_owned(), false);
        }
        let windows_abs = p.len() > 2 && p.as_bytes()[1] == b':';
        if !p.starts_with('/') && !windows_abs {
            return (p, false);
        }
        if let Some(m) = CI_PREFIX.find(&p) {
            return (strip_to_anchor(&p[m.end()..], false), false);
        }
        if let Some(m) = HOME_PREFIX.find(&p) {
            return (strip_to_anchor(&p[m.end()..], true), false);
        }
        // Some other absolute path: try an anchor anywhere.
        let trimmed = p.trim_start_matches('/');
        (strip_to_anchor(trimmed, false), false)
    }
}

/// Under a home directory the first component is usually the project (or a
/// folder of projects): cut to the first anchor directory if there is one,
/// else drop the first component.
fn strip_to_anchor(rest: &str, home: bool) -> String {
    let parts: Vec<&str> = rest.split('/').collect();
    if parts.len() <= 1 {
        return rest.to_owned();
    }
    let dirs = &parts[..parts.len() - 1];
    let first_anchor = dirs.iter().position(|d| ANCHORS.contains(d));
    match first_anchor {
        Some(i) if i > 0 || !home => parts[i..].join("/"),
        _ if home && parts.len() > 2 => parts[1..].join("/"),
        _ => rest.to_owned(),
    }
}

/// The last two components of a path: what stack signatures use, so
/// different checkout locations that the heuristics could not strip still agree.
pub fn signature_path(path: &str) -> &str {
    let mut idx = path.len();
    for _ in 0..2 {
        match path[..idx].rfind('/') {
            Some(i) => idx = i,
            None => return path,
        }
    }
    &path[idx + 1..]
}

const GENERATED_MARKERS: &[&str] = &[
    "$$EnhancerBy",
    "$$FastClassBy",
    "$$SpringCGLIB$$",
    "$HibernateProxy$",
    "$MockitoMock$",
    "$ByteBuddy$",
    "$$Lambda",
    "$Proxy",
    "GeneratedMethodAccessor",
];

static JAVA_LAMBDA: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"lambda\$([\w$]*?)\$\d+").unwrap());
/// Kotlin lambdas: `compact$lambda$2`, `compact$lambda-0`, `invokeSuspend$lambda$1`.
static KOTLIN_LAMBDA: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\$lambda[-$]\d+").unwrap());
static JAVA_GENERATED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\$\$(?:EnhancerBy(?:Spring)?CGLIB|FastClassBy(?:Spring)?CGLIB|SpringCGLIB|HibernateProxy|ByteBuddy|MockitoMock)\$\$[\w$]*?(?:\.|$)|\$HibernateProxy\$\w+|\$MockitoMock\$\w+|\$ByteBuddy\$\w+",
    )
    .unwrap()
});
static JAVA_PROXY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\$Proxy\d+|GeneratedMethodAccessor\d+|GeneratedConstructorAccessor\d+|GeneratedSerializationConstructorAccessor\d+").unwrap()
});
static JAVA_LAMBDA_CLASS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\$\$Lambda(?:\$\d+)?(?:/0x[0-9a-f]+)?(?:/\d+)?").unwrap());
static RUST_HASH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"::h[0-9a-f]{16}$|::\{\{closure\}\}|\{closure#\d+\}|\{async_(?:fn|block)#\d+\}")
        .unwrap()
});
static GO_FUNC_N: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\.(func|gowrap|deferwrap)\d+(?:\.\d+)*").unwrap());
static HEX_ADDR: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"0x[0-9a-fA-F]+").unwrap());

/// Makes a function name stable across builds: lambda and closure indices,
/// proxy and CGLIB class suffixes, symbol hashes, addresses removed.
pub fn normalize_function(f: &str, lang: Language) -> String {
    let f = f.trim();
    let out: String = match lang {
        Language::Java => {
            let s = KOTLIN_LAMBDA.replace_all(f, "$$lambda");
            let s = JAVA_LAMBDA.replace_all(&s, "lambda$$$1");
            let s = JAVA_GENERATED.replace_all(&s, |c: &regex::Captures| {
                if c[0].ends_with('.') { "." } else { "" }.to_owned()
            });
            let s = JAVA_LAMBDA_CLASS.replace_all(&s, "$$$$Lambda");
            JAVA_PROXY
                .replace_all(&s, |c: &regex::Captures| {
                    c[0].trim_end_matches(|ch: char| ch.is_ascii_digit())
                        .to_owned()
                })
                .into_owned()
        }
        Language::Rust => {
            let s = RUST_HASH.replace_all(f, |c: &regex::Captures| {
                if c[0].starts_with("::h") {
                    String::new()
                } else if c[0].starts_with("::") {
                    "::{{closure}}".into()
                } else {
                    "{{closure}}".into()
                }
            });
            s.into_owned()
        }
        Language::Go => {
            let s = GO_FUNC_N.replace_all(f, ".$1");
            // Arguments and addresses are not part of the name.
            let s = s.strip_suffix("(...)").unwrap_or(&s);
            s.to_owned()
        }
        Language::Javascript | Language::Typescript => {
            let mut s = f.to_owned();
            for p in ["async ", "new "] {
                if let Some(r) = s.strip_prefix(p) {
                    s = r.to_owned();
                }
            }
            if let Some(i) = s.find(" [as ") {
                s.truncate(i);
            }
            if s == "Object.<anonymous>" || s.is_empty() || s == "anonymous" {
                s = "<anonymous>".into();
            }
            s
        }
        _ => f.to_owned(),
    };
    HEX_ADDR.replace_all(&out, "").into_owned()
}

const JAVA_LIB_PREFIXES: &[&str] = &[
    "java.",
    "javax.",
    "jakarta.",
    "jdk.",
    "sun.",
    "com.sun.",
    "kotlin.",
    "kotlinx.",
    "scala.",
    "org.junit.",
    "junit.",
    "org.springframework.",
    "org.apache.",
    "org.gradle.",
    "worker.org.gradle.",
    "org.hibernate.",
    "com.fasterxml.",
    "io.netty.",
    "reactor.",
    "org.mockito.",
    "org.assertj.",
    "org.testng.",
    "com.google.common.",
    "com.google.protobuf.",
    "okhttp3.",
    "org.eclipse.",
    "com.intellij.",
    "io.micronaut.",
    "io.quarkus.",
    "org.jboss.",
    "org.opentest4j.",
    "net.bytebuddy.",
    "groovy.",
    "org.codehaus.groovy.",
    "io.grpc.",
    "io.micrometer.",
    "ch.qos.logback.",
    "org.slf4j.",
];

const RUST_LIB_PREFIXES: &[&str] = &[
    "std::",
    "core::",
    "alloc::",
    "__rustc::",
    "test::",
    "<std::",
    "<core::",
    "<alloc::",
    "rust_begin_unwind",
    "__rust",
    "_start",
    "__libc_start",
    "start_thread",
    "clone",
    "__scrt_common_main",
    "BaseThreadInitThunk",
    "RtlUserThreadStart",
    "tokio::",
    "<tokio::",
    "futures_util::",
    "futures_executor::",
    "<futures_util::",
    "std_detect::",
];

/// Whether a normalised frame is library/runtime code by its names.
fn library_frame(frame: &Frame, lang: Language) -> bool {
    let func = frame.function.as_deref().unwrap_or("");
    let file = frame.file.as_deref().unwrap_or("");
    match lang {
        Language::Java => {
            JAVA_LIB_PREFIXES.iter().any(|p| func.starts_with(p))
                || func.contains("$$Lambda")
                || func.contains("$Proxy")
                || func.contains("GeneratedMethodAccessor")
        }
        Language::Rust => {
            RUST_LIB_PREFIXES.iter().any(|p| func.starts_with(p))
                || func == "main" && frame.file.is_none()
        }
        Language::Go => {
            let pkg = func.split(['.', '(']).next().unwrap_or("");
            let first = func.split('/').next().unwrap_or("");
            // Standard library packages have no dot in their first path element.
            matches!(pkg, "runtime" | "testing" | "reflect" | "sync" | "syscall")
                || (!first.contains('.') && func.contains('/') && !frame_in_repo(file))
                || func.starts_with("created by ")
        }
        // A frame without a file is a builtin (`Promise.all`, `Array.map`);
        // Node's own modules are `node:…`, `internal/…` or a bare core
        // module file (`events.js`, `net.js` before Node 16).
        Language::Javascript | Language::Typescript => {
            file.is_empty()
                || func.starts_with("node:")
                || file.starts_with("internal/") && !file.contains("/src/")
                || node_core_file(file)
        }
        Language::Python => file.starts_with('<') && file != "<stdin>",
        Language::C => file.starts_with("/usr/include") || file.starts_with("/usr/lib"),
        Language::Unknown => false,
    }
}

/// Node's core modules as old Node versions name their files in frames
/// (`events.js:377`, `_stream_readable.js`): a bare file name, no directory.
fn node_core_file(file: &str) -> bool {
    const CORE: &[&str] = &[
        "assert",
        "async_hooks",
        "buffer",
        "child_process",
        "cluster",
        "console",
        "constants",
        "crypto",
        "dgram",
        "diagnostics_channel",
        "dns",
        "domain",
        "events",
        "fs",
        "http",
        "http2",
        "https",
        "inspector",
        "module",
        "net",
        "os",
        "path",
        "perf_hooks",
        "process",
        "punycode",
        "querystring",
        "readline",
        "repl",
        "stream",
        "string_decoder",
        "sys",
        "timers",
        "tls",
        "trace_events",
        "tty",
        "url",
        "util",
        "v8",
        "vm",
        "wasi",
        "worker_threads",
        "zlib",
    ];
    let Some(name) = file.strip_suffix(".js") else {
        return false;
    };
    !name.contains('/')
        && (CORE.contains(&name)
            || ["_stream_", "_http_", "_tls_"]
                .iter()
                .any(|p| name.starts_with(p)))
}

/// A relative path was stripped from an absolute in-repo path (or was relative already).
fn frame_in_repo(file: &str) -> bool {
    !file.is_empty() && !file.starts_with('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(p: &str) -> (String, bool) {
        Normalizer::new(&[], &[]).relativize(p)
    }

    #[test]
    fn paths_become_repo_relative() {
        assert_eq!(rel("/home/alice/proj/src/app.py").0, "src/app.py");
        assert_eq!(rel("/builds/acme/shop/src/app.py").0, "src/app.py");
        assert_eq!(
            rel("/home/runner/work/shop/shop/tests/test_x.py").0,
            "tests/test_x.py"
        );
        assert_eq!(rel(r"C:\Users\bob\code\shop\src\app.py").0, "src/app.py");
        assert_eq!(rel("/app/src/app.py").0, "src/app.py");
        assert_eq!(rel("/app/shop/models.py").0, "shop/models.py");
        assert_eq!(rel("./src/main.rs").0, "src/main.rs");
        assert_eq!(rel("file:///srv/app/src/index.js").0, "src/index.js");
        assert_eq!(
            rel("/usr/lib/python3/dist-packages/requests/api.py"),
            ("requests/api.py".to_owned(), true)
        );
        assert_eq!(
            rel(
                "/home/u/.cargo/registry/src/index.crates.io-6f17d22bba15001f/tokio-1.38.0/src/runtime/park.rs"
            ),
            ("tokio-1.38.0/src/runtime/park.rs".to_owned(), true)
        );
        assert_eq!(
            rel("/root/go/pkg/mod/github.com/lib/pq@v1.10.9/conn.go"),
            ("github.com/lib/pq/conn.go".to_owned(), true)
        );
        assert_eq!(
            rel("/usr/local/go/src/runtime/panic.go"),
            ("runtime/panic.go".to_owned(), true)
        );
        assert!(rel("node:internal/modules/cjs/loader").1);
        assert!(rel("internal/modules/cjs/loader.js").1);
        assert_eq!(
            rel("internal/report/monthly.go"),
            ("internal/report/monthly.go".to_owned(), false)
        );
        assert_eq!(
            rel("/srv/inventory/inventory/reserve.py").0,
            "inventory/reserve.py"
        );
        let n = Normalizer::new(&["/opt/build/x".into()], &[]);
        assert_eq!(n.relativize("/opt/build/x/pkg/a.go").0, "pkg/a.go");
    }

    #[test]
    fn signature_path_keeps_two_components() {
        assert_eq!(signature_path("a/b/c/d.py"), "c/d.py");
        assert_eq!(signature_path("c/d.py"), "c/d.py");
        assert_eq!(signature_path("d.py"), "d.py");
    }

    #[test]
    fn generated_names_are_stable() {
        use Language::*;
        assert_eq!(
            normalize_function("com.acme.Main.lambda$main$0", Java),
            "com.acme.Main.lambda$main"
        );
        assert_eq!(
            normalize_function("com.acme.Compactor.compact$lambda$2", Java),
            "com.acme.Compactor.compact$lambda"
        );
        assert_eq!(
            normalize_function("com.acme.Svc$$EnhancerBySpringCGLIB$$a1b2c3.run", Java),
            "com.acme.Svc.run"
        );
        assert_eq!(
            normalize_function("com.sun.proxy.$Proxy12.save", Java),
            "com.sun.proxy.$Proxy.save"
        );
        assert_eq!(
            normalize_function(
                "jdk.internal.reflect.GeneratedMethodAccessor42.invoke",
                Java
            ),
            "jdk.internal.reflect.GeneratedMethodAccessor.invoke"
        );
        assert_eq!(
            normalize_function("app::run::{{closure}}::h0123456789abcdef", Rust),
            "app::run::{{closure}}"
        );
        assert_eq!(
            normalize_function("app::run::h0123456789abcdef", Rust),
            "app::run"
        );
        assert_eq!(
            normalize_function("main.serve.func1.2", Go),
            "main.serve.func"
        );
        assert_eq!(
            normalize_function("Object.<anonymous>", Javascript),
            "<anonymous>"
        );
        assert_eq!(
            normalize_function("async Router.handle [as handle]", Javascript),
            "Router.handle"
        );
    }
}
