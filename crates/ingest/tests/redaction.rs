//! Redaction corpus: planted secrets and personal values of many kinds inside
//! realistic logs, traces and JSON lines. Every planted value must disappear,
//! benign identifiers must survive, and signatures must not change.

use std::collections::BTreeMap;
use tracelab_ingest::{ParseOptions, Redactor, error_signature, parse, stack_signature};
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
