//! Redaction corpus: planted secrets and personal values of many kinds inside
//! realistic logs, traces and JSON lines. Every planted value must disappear,
//! benign identifiers must survive, and signatures must not change.

use std::collections::BTreeMap;
use tracelab_evidence::{ParseOptions, Redactor, error_signature, parse, stack_signature};
use tracelab_testkit::secrets::{planted, secrets_of};

#[test]
fn every_planted_value_is_redacted_and_benign_ids_survive() {
    let corpus = planted();
    let kinds: std::collections::BTreeSet<&str> = corpus.iter().map(|(k, _, _)| *k).collect();
    assert!(corpus.len() >= 100, "{} planted values", corpus.len());
    assert!(kinds.len() >= 15, "{} kinds", kinds.len());
    let redactor = Redactor::new(b"corpus-test-key").unwrap();
    let mut per_kind: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut survivors = Vec::new();
    for (kind, value, ctx) in &corpus {
        // Each value inside a realistic line, itself inside a log.
        let line = ctx.replace("{}", value);
        let log = format!(
            "2024-05-14T10:00:00.000Z INFO worker started pid=4121\n2024-05-14T10:00:01.118Z ERROR {line}\n2024-05-14T10:00:01.119Z INFO retrying in 5s\n"
        );
        let out = redactor.redact_text(&log);
        let e = per_kind.entry(kind).or_default();
        e.0 += 1;
        let leaked: Vec<String> = secrets_of(kind, value)
            .into_iter()
            .filter(|s| out.contains(s.as_str()))
            .collect();
        if leaked.is_empty() {
            e.1 += 1;
        } else {
            survivors.push(format!("{kind}: {leaked:?} in {out:?}"));
        }
        // Idempotent, and the surrounding log survives.
        assert_eq!(redactor.redact_text(&out), out);
        assert!(
            out.contains("worker started pid=4121") && out.contains("retrying in 5s"),
            "{out}"
        );
    }
    let caught: usize = per_kind.values().map(|(_, c)| c).sum();
    println!(
        "redaction recall: {caught}/{} = {:.3}",
        corpus.len(),
        caught as f64 / corpus.len() as f64
    );
    for (k, (n, c)) in &per_kind {
        println!("  {k:<16} {c}/{n}");
    }
    assert!(
        survivors.is_empty(),
        "planted values survived:\n{}",
        survivors.join("\n")
    );

    // Benign identifiers that the signatures and investigators need.
    let benign = [
        "commit 3f9d2c1ab7e04c55e1b2c3d4e5f60718293a4b5c",
        "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7",
        "request 3fa85f64-5717-4562-b3fc-2c963f66afa6 took 1843 ms",
        "at com.acme.billing.InvoiceService.create(InvoiceService.java:57)",
        "File \"/app/shop/orders.py\", line 58, in checkout",
        "Compiling geo-index v0.3.1",
        "tests/test_orders.py::TestCheckout::test_total_tax",
        "listening on 127.0.0.1:8080",
        "2024-05-14T10:00:01.118Z took 0.014s",
        "github.com/acme/ledger/internal/api.(*Server).handleTransfer(0xc0001a4000)",
        "test_user_signup_with_existing_email_address",
        "TestApplyDebit/overdraft",
        "assertion `left == right` failed",
    ];
    let mut kept = 0;
    for b in benign {
        let out = redactor.redact_text(b);
        if out == b {
            kept += 1;
        } else {
            println!("  false positive: {b:?} -> {out:?}");
        }
    }
    println!("benign strings kept: {kept}/{}", benign.len());
    assert_eq!(kept, benign.len());
}

#[test]
fn parse_output_has_no_planted_value_and_signatures_survive_redaction() {
    let corpus = planted();
    let raw = ParseOptions {
        redact: false,
        ..ParseOptions::default()
    };
    let redacted_opts = ParseOptions::default();
    for (kind, value, ctx) in corpus.iter().filter(|(k, _, _)| *k != "private_key") {
        let msg = ctx.replace("{}", value).replace('\n', " ");
        // The value in an exception message, a Java trace and a JSON log line.
        let inputs = [
            format!(
                "Traceback (most recent call last):\n  File \"/home/runner/work/shop/shop/shop/api.py\", line 12, in handle\n    process(req)\n  File \"/home/runner/work/shop/shop/shop/core.py\", line 40, in process\n    raise RuntimeError(msg)\nRuntimeError: {msg}\n"
            ),
            format!(
                "java.lang.IllegalStateException: {msg}\n\tat com.acme.api.Handler.handle(Handler.java:31)\n\tat java.base/java.lang.Thread.run(Thread.java:1583)\n"
            ),
            format!(
                "{}\n",
                serde_json::json!({"level": "error", "msg": msg, "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"})
            ),
        ];
        for input in &inputs {
            let a = parse(input.as_bytes(), &raw);
            let b = parse(input.as_bytes(), &redacted_opts);
            assert_eq!(a.failures.len(), 1, "{kind}: {input}");
            assert_eq!(b.failures.len(), 1);
            let (fa, fb) = (&a.failures[0], &b.failures[0]);
            assert_eq!(fa.stack_signature, fb.stack_signature, "{kind}");
            assert_eq!(
                fa.error_signature, fb.error_signature,
                "{kind}: {:?} vs {:?}",
                fa.message, fb.message
            );
            // Recomputed from the stored (redacted) failure: still the same.
            assert_eq!(
                error_signature(fb.exception_type.as_deref(), &fb.message),
                fb.error_signature,
                "{kind}: {:?}",
                fb.message
            );
            assert_eq!(stack_signature(&fb.frames, 5), fb.stack_signature);
            let json = serde_json::to_string(&b).unwrap();
            for s in secrets_of(kind, value) {
                let escaped = serde_json::to_string(&s).unwrap();
                assert!(
                    !json.contains(escaped.trim_matches('"')),
                    "{kind} {s:?} survived in {json}"
                );
            }
        }
    }
}

#[test]
fn structured_keys_are_redacted_whatever_their_value() {
    let r = Redactor::new(b"k").unwrap();
    let mut v = serde_json::json!({
        "user": {"name": "Ann", "password": "x", "apiKey": "short", "session_id": 123},
        "headers": {"Authorization": "Basic dXNlcjpwYXNz", "X-Api-Key": "k1", "Accept": "application/json"},
        "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
        "items": [{"token": "t"}, {"note": "call +1 415-555-0132"}]
    });
    r.redact_json(&mut v);
    let s = v.to_string();
    for gone in [
        "\"x\"",
        "short",
        "123",
        "dXNlcjpwYXNz",
        "\"k1\"",
        "\"t\"",
        "555-0132",
    ] {
        assert!(!s.contains(gone), "{gone} survived in {s}");
    }
    for kept in [
        "Ann",
        "application/json",
        "4bf92f3577b34da6a3ce929d0e0e4736",
    ] {
        assert!(s.contains(kept), "{kept} lost in {s}");
    }
}

/// Frame lines with real-looking paths from each OS and language: none of
/// them is a secret. Only the user name of a home directory is personal data
/// (`<user:…>`); everything else must come out unchanged.
const REAL_PATHS: &[&str] = &[
    // Python on Windows, macOS and Linux.
    r#"  File "C:\Users\dev\app\main.py", line 3, in <module>"#,
    r#"  File "C:\\Users\\dev\\app\\main.py", line 3, in <module>"#,
    r#"  File "C:\Users\dev\AppData\Local\Programs\Python\Python312\Lib\asyncio\base_events.py", line 687, in run_until_complete"#,
    r#"  File "C:\Users\dev\AppData\Local\Programs\Python\Python312\python.exe", line 1"#,
    r#"  File "D:\a\shop\shop\tests\test_orders.py", line 41, in test_refund"#,
    r#"  File "C:\hostedtoolcache\windows\Python\3.12.3\x64\Lib\site-packages\requests\sessions.py", line 589, in request"#,
    r#"  File "C:\Users\dev\AppData\Local\pypoetry\Cache\virtualenvs\shop-Xk3jP9aQ-py3.12\Lib\site-packages\django\db\models\query.py", line 649, in get"#,
    r#"  File "/Users/dev/Library/Caches/pypoetry/virtualenvs/shop-Xk3jP9aQ-py3.12/lib/python3.12/site-packages/httpx/_client.py", line 1014, in send"#,
    r#"  File "/opt/homebrew/Cellar/python@3.12/3.12.3/Frameworks/Python.framework/Versions/3.12/lib/python3.12/json/decoder.py", line 355, in raw_decode"#,
    r#"  File "/Library/Frameworks/Python.framework/Versions/3.11/lib/python3.11/unittest/case.py", line 589, in _callTestMethod"#,
    r#"  File "/private/var/folders/7x/k2j3h4g5f6d7s8a9q0w1e2r3t4y5u6/T/pytest-of-dev/pytest-12/test_export0/conftest.py", line 8, in fixture"#,
    r#"  File "/home/runner/.cache/pypoetry/virtualenvs/shop-Xk3jP9aQ-py3.12/lib/python3.12/site-packages/sqlalchemy/engine/base.py", line 1967, in _exec_single_context"#,
    r#"  File "/nix/store/9krlzvny65gdc8s7kpb6lkx8cd02c25b-python3-3.12.3/lib/python3.12/subprocess.py", line 571, in run"#,
    // Java / Kotlin.
    r"	at org.springframework.boot.SpringApplication.run(SpringApplication.java:335) ~[spring-boot-3.3.0.jar!/:3.3.0]",
    r"	at com.acme.shop.MainActivity.onCreate(MainActivity.kt:42)",
    r"jar:file:/C:/Users/dev/.m2/repository/org/springframework/spring-core/6.1.8/spring-core-6.1.8.jar!/org/springframework/core/io/ClassPathResource.class",
    r"C:\Users\dev\.gradle\caches\modules-2\files-2.1\com.google.guava\guava\33.2.0-jre\5e64ec7e056456bef3a4bc4c6fdaef71e8ab6318\guava-33.2.0-jre.jar",
    r"/Users/dev/AndroidStudioProjects/ShopApp/app/src/main/java/com/acme/shop/CheckoutViewModel.kt",
    // JavaScript / TypeScript.
    r"    at Object.<anonymous> (C:\Users\dev\projects\web\node_modules\.pnpm\@babel+core@7.24.7\node_modules\@babel\core\lib\index.js:12:3)",
    r"    at render (/Users/dev/proj/node_modules/.pnpm/react-dom@18.3.1_react@18.3.1/node_modules/react-dom/cjs/react-dom.development.js:16081:7)",
    r"    at eval (webpack-internal:///./src/components/CartSummary.tsx:27:19)",
    r"renderProfile@http://localhost:5173/node_modules/.vite/deps/chunk-XK3JP9AQ.js?v=3f2a1b9c:1021:9",
    r"    at Module._compile (node:internal/modules/cjs/loader:1469:14)",
    // Go.
    r"	C:/Users/dev/go/pkg/mod/github.com/gin-gonic/gin@v1.10.0/context.go:185 +0x7a",
    r"	/home/dev/go/pkg/mod/golang.org/x/net@v0.26.0/http2/server.go:2171 +0x2f",
    r"	/opt/hostedtoolcache/go/1.22.3/x64/src/runtime/panic.go:770 +0x132",
    r"	/Users/dev/sdk/go1.22.3/src/net/http/server.go:3142 +0x1ae",
    // Rust.
    r"             at C:\Users\dev\.cargo\registry\src\index.crates.io-6f17d22bba15001f\tokio-1.38.0\src\runtime\park.rs:281:63",
    r"             at /rustc/129f3b9964af4d4a709d1383930ade12dfe7c081/library/core/src/panicking.rs:72:14",
    r"             at /Users/dev/.rustup/toolchains/stable-aarch64-apple-darwin/lib/rustlib/src/rust/library/std/src/panicking.rs:652:5",
    r"             at /home/dev/.cargo/git/checkouts/tower-http-3f2a1b9c8d7e6f5a/0b1c2d3/src/trace/service.rs:90:17",
    // .NET and C.
    r"   at Acme.Billing.InvoiceService.Create(Invoice invoice) in C:\src\Acme.Billing\Services\InvoiceService.cs:line 57",
    r"/usr/lib/gcc/x86_64-linux-gnu/13/include/stddef.h:214:23",
    r"C:\Program Files\Microsoft Visual Studio\2022\Enterprise\VC\Tools\MSVC\14.40.33807\include\vector(1875): error C2039",
];

#[test]
fn real_paths_from_each_os_and_language_are_not_secrets() {
    use tracelab_evidence::SecretKind;
    let redactor = Redactor::new(b"corpus-test-key").unwrap();
    let mut wrong = Vec::new();
    // As printed; with `/` separators, as frames carry them after
    // normalisation (where the long runs of path characters are); and with
    // the home directory cut off, as normalisation does (`AppData/Local/…`).
    let mut lines: Vec<String> = Vec::new();
    for l in REAL_PATHS {
        let slashed = l.replace('\\', "/");
        if let Some(i) = slashed.find("Users/") {
            let after_user = slashed[i + 6..].split_once('/').map(|(_, rest)| rest);
            lines.extend(after_user.map(str::to_owned));
        }
        lines.push(l.to_string());
        lines.push(slashed);
    }
    for line in &lines {
        let (out, findings) = redactor.redact_text_report(line);
        let not_users: Vec<_> = findings
            .iter()
            .filter(|f| f.kind != SecretKind::Username)
            .map(|f| (f.kind, &line[f.start..f.end]))
            .collect();
        if !not_users.is_empty() {
            wrong.push(format!("{line}\n  -> {out}\n  {not_users:?}"));
        }
    }
    println!(
        "real paths kept: {}/{}",
        lines.len() - wrong.len(),
        lines.len()
    );
    assert!(
        wrong.is_empty(),
        "paths redacted as secrets:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_windows_path_in_a_python_frame_survives_parse() {
    let text = "Traceback (most recent call last):\n  File \"C:\\Users\\dev\\AppData\\Local\\Programs\\Python\\Python312\\Lib\\runpy.py\", line 198, in _run_module_as_main\n    return _run_code(code, main_globals, None,\n  File \"C:\\Users\\dev\\app\\main.py\", line 3, in <module>\n    main()\nValueError: bad input\n";
    let out = parse(text.as_bytes(), &ParseOptions::default());
    let frames: Vec<(&str, bool)> = out.failures[0]
        .frames
        .iter()
        .map(|f| (f.file.as_deref().unwrap_or(""), f.in_app))
        .collect();
    assert_eq!(frames, [("runpy.py", false), ("app/main.py", true)]);
}
