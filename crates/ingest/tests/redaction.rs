//! Redaction corpus: planted secrets and personal values of many kinds inside
//! realistic logs, traces and JSON lines. Every planted value must disappear,
//! benign identifiers must survive, and signatures must not change.

use std::collections::BTreeMap;
use tracelab_ingest::{ParseOptions, Redactor, error_signature, parse, stack_signature};

/// Deterministic generator (xorshift) so the corpus is the same every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n)
            .map(|_| alphabet[(self.next() % alphabet.len() as u64) as usize] as char)
            .collect()
    }
}

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_NUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const DIGITS: &[u8] = b"0123456789";

fn luhn_complete(prefix: &str) -> String {
    // Append the check digit that makes `prefix + d` Luhn-valid.
    for d in 0..10 {
        let candidate = format!("{prefix}{d}");
        let sum: u32 = candidate
            .chars()
            .rev()
            .enumerate()
            .map(|(i, c)| {
                let v = c.to_digit(10).unwrap();
                if i % 2 == 1 {
                    if v * 2 > 9 { v * 2 - 9 } else { v * 2 }
                } else {
                    v
                }
            })
            .sum();
        if sum.is_multiple_of(10) {
            return candidate;
        }
    }
    unreachable!()
}

fn iban(country: &str, bban: &str) -> String {
    let rearranged = format!("{bban}{country}00");
    let mut rem: u64 = 0;
    for c in rearranged.chars() {
        let v = c.to_digit(36).unwrap() as u64;
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    format!("{country}{:02}{bban}", 98 - rem)
}

/// (kind, value, context line with `{}` where the value goes).
fn planted() -> Vec<(&'static str, String, &'static str)> {
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let mut v: Vec<(&'static str, String, &'static str)> = Vec::new();
    let names = [
        "alice.nguyen",
        "bob",
        "c.okafor",
        "dmitri.petrov+ci",
        "eva_lindqvist",
        "f.oliveira",
    ];
    let domains = [
        "example.com",
        "corp.acme.io",
        "mail.example.org",
        "gmail.com",
        "uni-heidelberg.de",
        "example.co.uk",
    ];
    for i in 0..6 {
        let ctx = [
            "user {} not found",
            "sending receipt to {}",
            "{\"level\":\"error\",\"msg\":\"bounce\",\"to\":\"{}\"}",
            "KeyError: '{}'",
            "From: {}",
            "invite failed for <{}>",
        ][i];
        v.push(("email", format!("{}@{}", names[i], domains[i]), ctx));
    }
    for (i, prefix) in ["4539", "5425", "3714", "6011", "4000", "2221"]
        .iter()
        .enumerate()
    {
        let len = if prefix.starts_with("37") { 14 } else { 15 };
        let raw = luhn_complete(&format!("{prefix}{}", r.pick(DIGITS, len - prefix.len())));
        let shown = if i % 2 == 0 {
            raw.clone()
        } else {
            raw.as_bytes()
                .chunks(4)
                .map(|c| std::str::from_utf8(c).unwrap())
                .collect::<Vec<_>>()
                .join(" ")
        };
        v.push((
            "card",
            shown,
            [
                "charge declined for card {}",
                "card={} cvv=***",
                "PaymentError: card {} expired",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let jwt = format!(
            "eyJ{}.eyJ{}.{}",
            r.pick(B64URL, 20),
            r.pick(B64URL, 40),
            r.pick(B64URL, 43)
        );
        v.push((
            "jwt",
            jwt,
            [
                "session={}",
                "invalid token {} (expired)",
                "\"id_token\": \"{}\"",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        v.push((
            "aws_access_key",
            format!("AKIA{}", r.pick(UPPER_NUM, 16)),
            [
                "using credentials {} for s3",
                "InvalidAccessKeyId: The AWS Access Key Id {} does not exist",
                "export AWS_ACCESS_KEY_ID={}",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        v.push((
            "aws_secret_key",
            r.pick(B64, 40),
            [
                "aws_secret_access_key = {}",
                "AWS_SECRET_ACCESS_KEY={}",
                "\"aws_secret_access_key\": \"{}\"",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let t = match i % 3 {
            0 => format!("ghp_{}", r.pick(ALNUM, 36)),
            1 => format!("gho_{}", r.pick(ALNUM, 36)),
            _ => format!("github_pat_{}_{}", r.pick(ALNUM, 22), r.pick(ALNUM, 59)),
        };
        v.push((
            "github_token",
            t,
            [
                "remote: Invalid username or token {}",
                "git clone https://x-access-token:{}@github.com/acme/api.git",
                "GITHUB_TOKEN={}",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        v.push((
            "gitlab_token",
            format!("glpat-{}", r.pick(B64URL, 20)),
            [
                "PRIVATE-TOKEN: {}",
                "curl --header 'PRIVATE-TOKEN: {}' https://gitlab.example.com/api/v4/projects",
                "CI_JOB_TOKEN fallback {}",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let kind = ["xoxb", "xoxp", "xoxa"][i % 3];
        v.push((
            "slack_token",
            format!(
                "{kind}-{}-{}-{}",
                r.pick(DIGITS, 12),
                r.pick(DIGITS, 13),
                r.pick(ALNUM, 24)
            ),
            [
                "slack notify failed token={}",
                "SLACK_BOT_TOKEN: {}",
                "posting with {}",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let k = if i % 2 == 0 { "sk_live_" } else { "rk_live_" };
        v.push((
            "stripe_key",
            format!("{k}{}", r.pick(ALNUM, 24)),
            [
                "stripe.api_key = '{}'",
                "Invalid API Key provided: {}",
                "STRIPE_SECRET={}",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        v.push((
            "google_api_key",
            format!("AIza{}", r.pick(B64URL, 35)),
            [
                "https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key={}",
                "GOOGLE_API_KEY={}",
                "firebase init with apiKey \"{}\"",
            ][i % 3],
        ));
    }
    for _ in 0..3 {
        let body: Vec<String> = (0..4).map(|_| r.pick(B64, 64)).collect();
        v.push((
            "private_key",
            format!(
                "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
                body.join("\n")
            ),
            "loaded key:\n{}\n",
        ));
    }
    for i in 0..6 {
        let pw = format!("{}{}!", r.pick(ALNUM, 10), r.pick(DIGITS, 2));
        v.push((
            "url_password",
            pw,
            [
                "connecting to postgres://app:{}@db.internal:5432/shop",
                "redis://default:{}@cache:6379/0",
                "amqp://guest:{}@rabbit.example.com/",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        v.push((
            "bearer",
            r.pick(B64URL, 32),
            [
                "Authorization: Bearer {}",
                "sending request with bearer {}",
                "401 Unauthorized for token {}",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let pw = [
            "hunter2",
            "Winter2024!",
            "correct-horse-battery",
            "P@ssw0rd",
            "s3cr3t",
            "letmein99",
        ][i];
        v.push((
            "password",
            pw.to_owned(),
            [
                "login failed: password={} for admin",
                "DB_PASSWORD={}",
                "{\"password\": \"{}\", \"user\": \"x\"}",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let ip = format!(
            "{}.{}.{}.{}",
            10 + r.next() % 200,
            r.next() % 256,
            r.next() % 256,
            1 + r.next() % 254
        );
        v.push((
            "ipv4",
            ip,
            [
                "connection from {} refused",
                "X-Forwarded-For: {}",
                "dial tcp {}:443: i/o timeout",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let p = [
            "+49 30 901820",
            "+1 415-555-0132",
            "(212) 555-0187",
            "+44 20 7946 0958",
            "+33 1 42 68 53 00",
            "646-555-0199",
        ][i];
        v.push((
            "phone",
            p.to_owned(),
            [
                "sms to {} failed",
                "customer phone: {}",
                "callback number {} invalid",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let (c, b) = [
            ("DE", "370400440532013000"),
            ("GB", "WEST12345698765432"),
            ("FR", "20041010050500013M02606"),
            ("NL", "ABNA0417164300"),
            ("ES", "21000418450200051332"),
            ("IT", "X0542811101000000123456"),
        ][i];
        let val = iban(c, b);
        v.push((
            "iban",
            val,
            [
                "SEPA transfer to {} rejected",
                "iban={}",
                "payout account {} closed",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        let t = format!(
            "{}{}{}",
            r.pick(ALNUM, 14),
            r.pick(DIGITS, 3),
            r.pick(ALNUM, 15)
        );
        v.push((
            "high_entropy",
            t,
            ["x-session {}", "upload signature {} mismatch", "nonce={}"][i % 3],
        ));
    }
    for i in 0..6 {
        let u = [
            "maria",
            "jdoe",
            "kwame.mensah",
            "li.wei",
            "s.kowalski",
            "tanaka",
        ][i];
        v.push((
            "username",
            u.to_owned(),
            [
                "open /home/{}/.config/app.toml: permission denied",
                "File \"/Users/{}/src/app/main.py\", line 3",
                "C:\\Users\\{}\\AppData\\Local\\app.log",
            ][i % 3],
        ));
    }
    for i in 0..6 {
        v.push((
            "cookie",
            format!("sid={}; csrftoken={}", r.pick(ALNUM, 24), r.pick(ALNUM, 32)),
            ["Cookie: {}", "Set-Cookie: {}", "> cookie: {}"][i % 3],
        ));
    }
    v
}

/// The values that matter in a planted context (a cookie header's pieces).
fn secrets_of(kind: &str, value: &str) -> Vec<String> {
    match kind {
        "cookie" => value
            .split("; ")
            .map(|kv| kv.split_once('=').unwrap().1.to_owned())
            .collect(),
        "card" => vec![value.to_owned(), value.replace(' ', "")],
        _ => vec![value.to_owned()],
    }
}

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
