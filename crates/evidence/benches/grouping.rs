//! Grouping quality on a generated, labelled set of stack traces.
//!
//! Each "bug" is an in-app call chain in one of five languages. Its
//! occurrences vary the way real ones do: other machines and checkout roots,
//! shifted line numbers, other library versions, other variable values in
//! the message (ids, amounts, emails, UUIDs), regenerated synthetic names
//! (Java lambda indices and CGLIB hashes, Go `funcN`, Rust symbol hashes),
//! and other callers beyond the signature's five frames. Near-misses are new
//! bugs derived from a bug by changing only the innermost in-app function, or
//! only the exception type. Every pair of traces is labelled "same bug" or
//! not; the bench prints precision and recall of "same group" for the ingest
//! group key and three baselines: `naive` (exception type + raw message),
//! `error-sig` (error signature alone) and `key+error` (group key and error
//! signature together: what splitting by message as well would give).
//!
//! Two sets: the core set varies only what should not matter; the hard set
//! adds known limits of a top-five-frames key (other callers within the five
//! frames, Python 3.12 inlining comprehensions, near-misses that differ only
//! in the message).
//!
//! Run: `cargo bench -p tracelab-evidence --bench grouping`

use std::collections::BTreeMap;
use tracelab_evidence::{Language, ParseOptions, parse};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const VERBS: &[&str] = &[
    "load", "save", "parse", "render", "handle", "apply", "compute", "sync", "fetch", "validate",
    "resolve", "build", "send", "close", "flush", "merge", "encode", "reserve", "settle",
    "refresh",
];
const NOUNS: &[&str] = &[
    "order", "invoice", "cart", "user", "session", "config", "index", "tile", "segment", "report",
    "payment", "token", "batch", "queue", "stock", "ledger", "profile", "export",
];
const MODULES: &[&str] = &[
    "orders",
    "billing",
    "cart",
    "users",
    "auth",
    "cache",
    "store",
    "api",
    "jobs",
    "reports",
    "payments",
    "inventory",
];
const LANGS: [Language; 5] = [
    Language::Python,
    Language::Java,
    Language::Javascript,
    Language::Go,
    Language::Rust,
];

#[derive(Clone)]
struct AppFrame {
    module: String,
    func: String,
}

#[derive(Clone)]
struct Bug {
    lang: Language,
    /// Outermost first.
    chain: Vec<AppFrame>,
    exc: String,
    msg: usize,
    lines: Vec<u32>,
    /// The innermost in-app frame is a lambda/closure (part of the code,
    /// so every occurrence has it; only its synthetic index changes per build).
    closure: bool,
    /// Python: the innermost frame runs in a list comprehension, which
    /// Python 3.12 inlines (no `<listcomp>` frame there).
    comprehension: bool,
}

fn roots(lang: Language) -> &'static [&'static str] {
    match lang {
        Language::Python => &[
            "/app",
            "/home/alice/work/shop",
            "/builds/acme/shop",
            "/home/runner/work/shop/shop",
            "/srv/shop",
            "C:\\Users\\bob\\code\\shop",
        ],
        Language::Java => &[""],
        Language::Javascript => &[
            "/app",
            "/home/runner/work/web/web",
            "/Users/carol/dev/web",
            "/usr/src/app",
            "file:///srv/web",
        ],
        Language::Go => &[
            "/go/src/app",
            "/home/runner/work/ledger/ledger",
            "/builds/acme/ledger",
            "/home/dave/ledger",
            "/app",
        ],
        _ => &[
            "/home/runner/work/tiles/tiles",
            "/builds/acme/tiles",
            "/home/erin/src/tiles",
            "/app",
            ".",
        ],
    }
}

fn exc_types(lang: Language) -> &'static [&'static str] {
    match lang {
        Language::Python => &[
            "KeyError",
            "ValueError",
            "TypeError",
            "AttributeError",
            "shop.errors.NotFound",
            "ZeroDivisionError",
        ],
        Language::Java => &[
            "java.lang.IllegalStateException",
            "java.lang.NullPointerException",
            "java.lang.IllegalArgumentException",
            "com.acme.errors.NotFoundException",
            "java.util.NoSuchElementException",
        ],
        Language::Javascript => &[
            "TypeError",
            "RangeError",
            "Error",
            "ValidationError",
            "ReferenceError",
        ],
        Language::Go => &["panic", "runtime error"],
        _ => &["panic"],
    }
}

/// Message templates: `{n}` a number, `{id}` an id, `{e}` an email, `{u}` a UUID, `{q}` a quoted value.
const MESSAGES: &[&str] = &[
    "{q} not found for order {n}",
    "cannot settle {n} units: balance {n} < {n}",
    "user {e} has no active session",
    "request {u} timed out after {n}ms",
    "invalid state transition from {q} to {q}",
    "index out of range [{n}] with length {n}",
    "expected {n} items, got {n}",
    "duplicate key {q} for tenant {id}",
];

fn fill(template: &str, r: &mut Rng) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let end = rest[i..].find('}').unwrap() + i;
        match &rest[i + 1..end] {
            "n" => out.push_str(&(r.next() % 100_000).to_string()),
            "id" => out.push_str(&format!("t_{:x}", r.next() % 0xfffff)),
            "e" => out.push_str(&format!(
                "{}{}@example.com",
                r.pick(&["ann", "bo", "cy", "di"]),
                r.next() % 100
            )),
            "u" => out.push_str(&format!(
                "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
                r.next() as u32,
                r.next() as u16,
                r.next() % 0xfff,
                r.next() % 0xfff,
                r.next() % 0xffff_ffff_ffff
            )),
            "q" => out.push_str(&format!("'{}{}'", r.pick(NOUNS), r.next() % 10)),
            other => out.push_str(other),
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

fn new_bug(r: &mut Rng, lang: Language) -> Bug {
    let depth = 3 + r.below(6);
    let chain = (0..depth)
        .map(|_| AppFrame {
            module: r.pick(MODULES).to_owned(),
            func: format!("{}_{}", r.pick(VERBS), r.pick(NOUNS)),
        })
        .collect();
    Bug {
        lang,
        chain,
        exc: r.pick(exc_types(lang)).to_owned(),
        msg: r.below(MESSAGES.len()),
        lines: (0..depth).map(|_| 10 + r.below(400) as u32).collect(),
        closure: r.below(2) == 0,
        comprehension: r.below(3) == 0,
    }
}

fn camel(s: &str) -> String {
    s.split('_')
        .map(|w| w[..1].to_uppercase() + &w[1..])
        .collect()
}

/// Renders one occurrence of a bug as the runtime would print it.
fn render(bug: &Bug, r: &mut Rng, hard: bool) -> String {
    let root = r.pick(roots(bug.lang));
    let shift = r.below(30) as u32;
    let msg = fill(MESSAGES[bug.msg], r);
    // Another caller: extra outer frames (never within the top five in-app frames).
    let mut chain = bug.chain.clone();
    let mut lines = bug.lines.clone();
    // Hard mode: shallow chains are also reached from other callers, which
    // then fall inside the five signature frames.
    if (chain.len() > 5 || hard) && r.below(3) == 0 {
        chain[0] = AppFrame {
            module: "cli".into(),
            func: format!("main_{}", r.below(3)),
        };
        lines[0] = 5;
    }
    let n = |i: usize| lines[i] + shift;
    match bug.lang {
        Language::Python => {
            let pyver = r.pick(&["3.10", "3.11", "3.12"]);
            let listcomp = bug.comprehension && (!hard || pyver != "3.12");
            let sep = if root.contains('\\') { "\\" } else { "/" };
            let mut s = String::from("Traceback (most recent call last):\n");
            for (i, f) in chain.iter().enumerate() {
                s += &format!(
                    "  File \"{root}{sep}shop{sep}{}.py\", line {}, in {}\n    x = y()\n",
                    f.module,
                    n(i),
                    f.func
                );
            }
            if listcomp {
                let last = chain.len() - 1;
                s += &format!(
                    "  File \"{root}{sep}shop{sep}{}.py\", line {}, in <listcomp>\n    return [g(x) for x in xs]\n",
                    chain[last].module,
                    n(last)
                );
            }
            s += &format!(
                "  File \"/usr/local/lib/python{pyver}/site-packages/sqlalchemy/orm/session.py\", line {}, in execute\n    raise\n",
                1000 + r.below(900)
            );
            s + &format!("{}: {msg}\n", bug.exc)
        }
        Language::Java => {
            let mut s = format!("{}: {msg}\n", bug.exc);
            for (i, f) in chain.iter().enumerate().rev() {
                let class = camel(&f.module) + "Service";
                let method = camel(&f.func);
                let method = method[..1].to_lowercase() + &method[1..];
                if i == chain.len() - 1 && bug.closure {
                    s += &format!(
                        "\tat com.acme.{}.{class}.lambda${method}${}({class}.java:{})\n",
                        f.module,
                        r.below(4),
                        n(i)
                    );
                    s += &format!(
                        "\tat java.base/java.util.Optional.map(Optional.java:{})\n",
                        260 + r.below(3)
                    );
                }
                s += &format!(
                    "\tat com.acme.{}.{class}.{method}({class}.java:{})\n",
                    f.module,
                    n(i)
                );
                if r.below(3) == 0 {
                    s += &format!(
                        "\tat com.acme.{}.{class}$$SpringCGLIB$${}.{method}(<generated>)\n",
                        f.module,
                        r.below(9)
                    );
                }
            }
            s += &format!(
                "\tat org.springframework.web.servlet.FrameworkServlet.service(FrameworkServlet.java:{})\n",
                880 + r.below(10)
            );
            s + "\tat java.base/java.lang.Thread.run(Thread.java:1583)\n"
        }
        Language::Javascript => {
            let mut s = format!("{}: {msg}\n", bug.exc);
            for (i, f) in chain.iter().enumerate().rev() {
                let func = camel(&f.func);
                let func = func[..1].to_lowercase() + &func[1..];
                let shown = if r.below(4) == 0 {
                    format!("async {func}")
                } else {
                    func
                };
                s += &format!(
                    "    at {shown} ({root}/src/{}/{}.js:{}:{})\n",
                    f.module,
                    f.module,
                    n(i),
                    1 + r.below(40)
                );
            }
            s += &format!(
                "    at Layer.handle [as handle_request] ({root}/node_modules/express/lib/router/layer.js:95:5)\n"
            );
            s + "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)\n"
        }
        Language::Go => {
            let mut s = if bug.exc == "runtime error" {
                format!("panic: runtime error: {msg}\n\n")
            } else {
                format!("panic: {msg}\n\n")
            };
            s += &format!("goroutine {} [running]:\n", 1 + r.below(200));
            for (i, f) in chain.iter().enumerate().rev() {
                let func = camel(&f.func);
                let suffix = if i == chain.len() - 1 && bug.closure {
                    format!(".func{}", 1 + r.below(3))
                } else {
                    String::new()
                };
                s += &format!(
                    "github.com/acme/ledger/internal/{}.(*{}).{func}{suffix}(0xc{:09x}, 0x{:x})\n\t{root}/internal/{}/{}.go:{} +0x{:x}\n",
                    f.module,
                    camel(&f.module),
                    r.next() % 0xfffffffff,
                    r.next() % 0xffff,
                    f.module,
                    f.module,
                    n(i),
                    r.next() % 0xfff
                );
            }
            let v = r.pick(&["v5.0.10", "v5.0.12", "v5.1.0"]);
            s += &format!(
                "github.com/go-chi/chi/v5.(*Mux).routeHTTP(0xc000126060, {{0x8a3e40, 0xc0002b61c0}})\n\t/root/go/pkg/mod/github.com/go-chi/chi/v5@{v}/mux.go:{} +0x216\n",
                440 + r.below(30)
            );
            s + "net/http.(*conn).serve(0xc0001c6000, {0x8a4a18, 0xc0001b2990})\n\t/usr/local/go/src/net/http/server.go:2039 +0x5e8\ncreated by net/http.(*Server).Serve in goroutine 1\n\t/usr/local/go/src/net/http/server.go:3285 +0x4b4\n"
        }
        _ => {
            let last = chain.len() - 1;
            let file = |f: &AppFrame| {
                if root == "." {
                    format!("./src/{}.rs", f.module)
                } else {
                    format!("{root}/src/{}.rs", f.module)
                }
            };
            let mut s = format!(
                "thread 'tokio-runtime-worker' panicked at src/{}.rs:{}:{}:\n{msg}\nstack backtrace:\n",
                chain[last].module,
                n(last),
                5 + r.below(30)
            );
            s += "   0: __rustc::rust_begin_unwind\n             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5\n";
            s += "   1: core::panicking::panic_fmt\n             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:80:14\n";
            for (k, (i, f)) in chain.iter().enumerate().rev().enumerate() {
                let closure = if i == last && bug.closure {
                    "::{{closure}}"
                } else {
                    ""
                };
                s += &format!(
                    "  {:>2}:     0x55e4c1d0{:04x} - tiles::{}::{}{closure}::h{:016x}\n                               at {}:{}:{}\n",
                    k + 2,
                    r.next() % 0xffff,
                    f.module,
                    f.func,
                    r.next(),
                    file(f),
                    n(i),
                    9
                );
            }
            let tv = r.pick(&["1.37.0", "1.38.1", "1.40.0"]);
            s + &format!(
                "  {:>2}: tokio::runtime::task::harness::Harness<T,S>::poll\n             at /home/ci/.cargo/registry/src/index.crates.io-6f17d22bba15001f/tokio-{tv}/src/runtime/task/harness.rs:151:15\n",
                chain.len() + 2
            )
        }
    }
}

struct Scores {
    tp: u64,
    fp: u64,
    fn_: u64,
}

fn score(labels: &[usize], keys: &[String]) -> Scores {
    let mut s = Scores {
        tp: 0,
        fp: 0,
        fn_: 0,
    };
    for i in 0..labels.len() {
        for j in i + 1..labels.len() {
            match (labels[i] == labels[j], keys[i] == keys[j]) {
                (true, true) => s.tp += 1,
                (false, true) => s.fp += 1,
                (true, false) => s.fn_ += 1,
                _ => {}
            }
        }
    }
    s
}

fn pr(s: &Scores) -> (f64, f64) {
    let p = if s.tp + s.fp == 0 {
        1.0
    } else {
        s.tp as f64 / (s.tp + s.fp) as f64
    };
    let r = if s.tp + s.fn_ == 0 {
        1.0
    } else {
        s.tp as f64 / (s.tp + s.fn_) as f64
    };
    (p, r)
}

fn main() {
    for hard in [false, true] {
        evaluate(hard);
    }
}

fn evaluate(hard: bool) {
    println!(
        "== {} ==",
        if hard {
            "with hard cases (other callers within the top five frames, Python 3.12 inlined comprehensions, near-misses differing only in the message)"
        } else {
            "core set"
        }
    );
    let mut r = Rng(0x2545_F491_4F6C_DD1D);
    const BUGS_PER_LANG: usize = 12;
    const OCCURRENCES: usize = 6;
    const NEAR_MISS_OCCURRENCES: usize = 3;
    let mut bugs: Vec<Bug> = Vec::new();
    for lang in LANGS {
        for _ in 0..BUGS_PER_LANG {
            bugs.push(new_bug(&mut r, lang));
        }
    }
    // Near-misses: same chain, another innermost function; or another exception type.
    let mut near = Vec::new();
    for b in &bugs {
        let mut inner = b.clone();
        let last = inner.chain.len() - 1;
        inner.chain[last].func = format!("{}_{}", r.pick(VERBS), "other");
        near.push(inner);
        let types = exc_types(b.lang);
        if types.len() > 1 {
            let mut ty = b.clone();
            while ty.exc == b.exc {
                ty.exc = r.pick(types).to_owned();
            }
            near.push(ty);
        }
        if hard {
            // Same code path and type, another root cause: only the message tells.
            let mut msg = b.clone();
            msg.msg = (b.msg + 1 + r.below(MESSAGES.len() - 1)) % MESSAGES.len();
            near.push(msg);
        }
    }
    let mut labels = Vec::new();
    let mut langs = Vec::new();
    let mut texts = Vec::new();
    for (label, bug) in bugs.iter().chain(near.iter()).enumerate() {
        let count = if label < bugs.len() {
            OCCURRENCES
        } else {
            NEAR_MISS_OCCURRENCES
        };
        for _ in 0..count {
            labels.push(label);
            langs.push(bug.lang);
            texts.push(render(bug, &mut r, hard));
        }
    }
    let opts = ParseOptions::default();
    let raw_opts = ParseOptions {
        redact: false,
        ..ParseOptions::default()
    };
    let start = std::time::Instant::now();
    let mut keys = Vec::new();
    let mut naive = Vec::new();
    let mut error_only = Vec::new();
    let mut strict = Vec::new();
    for t in &texts {
        let out = parse(t.as_bytes(), &opts);
        assert_eq!(out.failures.len(), 1, "{t}\n{:?}", out.diagnostics);
        let f = &out.failures[0];
        keys.push(f.group_key().0);
        error_only.push(f.error_signature.clone());
        strict.push(format!("{}|{}", f.group_key().0, f.error_signature));
        let raw = parse(t.as_bytes(), &raw_opts);
        naive.push(format!(
            "{:?}|{}",
            raw.failures[0].exception_type, raw.failures[0].message
        ));
    }
    let took = start.elapsed();
    let bugs_n = bugs.len() + near.len();
    println!(
        "labelled traces: {} occurrences of {} bugs ({} base bugs x {OCCURRENCES}, {} near-misses x {NEAR_MISS_OCCURRENCES}), {} pairs",
        texts.len(),
        bugs_n,
        bugs.len(),
        near.len(),
        texts.len() * (texts.len() - 1) / 2
    );
    let groups: std::collections::BTreeSet<&String> = keys.iter().collect();
    println!("groups formed: {} (ideal {bugs_n})", groups.len());
    let (p, rc) = pr(&score(&labels, &keys));
    let (np, nr) = pr(&score(&labels, &naive));
    println!(
        "{:<12} {:>9} {:>9} {:>9}",
        "key", "precision", "recall", "F1"
    );
    println!(
        "{:<12} {:>9.4} {:>9.4} {:>9.4}",
        "ingest",
        p,
        rc,
        2.0 * p * rc / (p + rc)
    );
    println!(
        "{:<12} {:>9.4} {:>9.4} {:>9.4}",
        "naive",
        np,
        nr,
        2.0 * np * nr / (np + nr).max(f64::EPSILON)
    );
    for (name, k) in [("error-sig", &error_only), ("key+error", &strict)] {
        let (p, rc) = pr(&score(&labels, k));
        println!(
            "{name:<12} {p:>9.4} {rc:>9.4} {:>9.4}",
            2.0 * p * rc / (p + rc).max(f64::EPSILON)
        );
    }
    let mut per: BTreeMap<String, (Vec<usize>, Vec<String>)> = BTreeMap::new();
    for i in 0..labels.len() {
        let e = per.entry(format!("{:?}", langs[i])).or_default();
        e.0.push(labels[i]);
        e.1.push(keys[i].clone());
    }
    for (lang, (l, k)) in &per {
        let (p, rc) = pr(&score(l, k));
        println!("  {lang:<12} precision {p:.4} recall {rc:.4}");
    }
    if std::env::var_os("GROUPING_DEBUG").is_some() {
        let mut shown = 0;
        for i in 0..labels.len() {
            for j in i + 1..labels.len() {
                if labels[i] == labels[j] && keys[i] != keys[j] && shown < 4 {
                    shown += 1;
                    for k in [i, j] {
                        let f = &parse(texts[k].as_bytes(), &opts).failures[0];
                        let fr: Vec<String> = f
                            .frames
                            .iter()
                            .filter(|f| f.in_app)
                            .map(|f| format!("{:?}:{:?}", f.file, f.function))
                            .collect();
                        println!("MISS {} {:?} {:?}", keys[k], f.exception_type, fr);
                    }
                }
            }
        }
    }
    println!(
        "parse + sign + key for {} traces in {took:?}",
        texts.len() * 2
    );
}
