//! Evidence the ingest load sends: a CI failure report carrying pytest
//! output (`POST /v1/ci-failures`, schema 1 of docs/ingest.md) and a JSON log
//! line with a Python traceback (`POST /v1/logs`). Built from an event number
//! and a run seed only, so a run is reproducible; a few fields vary (module,
//! test, exception, values, line numbers, commit, trace ids) so the ingest
//! sees a handful of failure groups with many occurrences each, as in life.

use serde_json::{Value, json};

/// Which endpoint an event goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    CiFailure,
    LogLine,
}

impl Kind {
    pub fn path(self) -> &'static str {
        match self {
            Kind::CiFailure => "/v1/ci-failures",
            Kind::LogLine => "/v1/logs",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Kind::CiFailure => "application/json",
            Kind::LogLine => "application/x-ndjson",
        }
    }
}

/// One request body.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub kind: Kind,
    pub body: String,
}

const MODULES: &[&str] = &["orders", "cart", "users", "billing", "search"];
const SERVICES: &[&str] = &["checkout", "catalog", "accounts"];

/// SplitMix64: a well-mixed 64-bit value from a counter (no RNG crate needed
/// for fixture variety).
fn mix(seed: u64, n: u64) -> u64 {
    let mut z = seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn hex(seed: u64, n: u64, chars: usize) -> String {
    let mut out = String::with_capacity(chars + 16);
    let mut k = 0;
    while out.len() < chars {
        out.push_str(&format!(
            "{:016x}",
            mix(seed, n.wrapping_mul(8).wrapping_add(k))
        ));
        k += 1;
    }
    out.truncate(chars);
    out
}

/// Event `n` of a run: even numbers are CI reports, odd ones log lines
/// (`only` forces one kind). `now_ms` is the wall clock in unix milliseconds.
pub fn event(n: u64, seed: u64, only: Option<Kind>, now_ms: u64) -> Event {
    let kind = only.unwrap_or(if n.is_multiple_of(2) {
        Kind::CiFailure
    } else {
        Kind::LogLine
    });
    let body = match kind {
        Kind::CiFailure => ci_failure(n, seed, now_ms / 1000).to_string(),
        Kind::LogLine => format!("{}\n", log_line(n, seed, now_ms)),
    };
    Event { kind, body }
}

/// A GitHub Actions job whose pytest run failed in one test.
pub fn ci_failure(n: u64, seed: u64, now_s: u64) -> Value {
    let r = mix(seed, n);
    let module = MODULES[(r % MODULES.len() as u64) as usize];
    let commit = hex(seed, n, 40);
    let line = 20 + (r >> 8) % 60;
    let (test, failure, short) = if (r >> 16).is_multiple_of(2) {
        let expected = 100 + (r >> 20) % 50;
        let actual = expected - 1 - (r >> 28) % 9;
        let test = format!("test_{module}_total");
        let failure = format!(
            "_________________________________ {test} _________________________________\n\n    \
             def {test}():\n        {module} = make_{module}(quantity=3)\n>       assert {module}.total() == {expected}\n\
             E       assert {actual} == {expected}\n\
             E        +  where {actual} = <bound method total of {module}>()\n\n\
             tests/test_{module}.py:{line}: AssertionError\n"
        );
        (test, failure, format!("assert {actual} == {expected}"))
    } else {
        let value = (r >> 24) % 1000;
        let test = format!("test_{module}_parse");
        let failure = format!(
            "_________________________________ {test} _________________________________\n\n    \
             def {test}():\n>       assert {module}.parse_amount(\"{value}x\") == {value}\n\n\
             tests/test_{module}.py:{line}: \n\
             _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ \n\n\
             text = '{value}x'\n\n    def parse_amount(text):\n>       return int(text)\n\
             E       ValueError: invalid literal for int() with base 10: '{value}x'\n\n\
             shop/{module}.py:{l2}: ValueError\n",
            l2 = 10 + (r >> 40) % 30
        );
        let short = format!("ValueError: invalid literal for int() with base 10: '{value}x'");
        (test, failure, short)
    };
    let passed = 23 + (r >> 32) % 40;
    let log = format!(
        "##[group]Run python -m pytest -q\n\
         ============================= test session starts ==============================\n\
         platform linux -- Python 3.11.9, pytest-8.2.0, pluggy-1.5.0\n\
         rootdir: /home/runner/work/shop/shop\n\
         collected {total} items\n\n\
         tests/test_{module}.py ..F.....                                         [100%]\n\n\
         =================================== FAILURES ===================================\n\
         {failure}\
         =========================== short test summary info ============================\n\
         FAILED tests/test_{module}.py::{test} - {short}\n\
         ========================= 1 failed, {passed} passed in 0.{ms:02}s =========================\n\
         ##[error]Process completed with exit code 1.\n",
        total = passed + 1,
        ms = (r >> 48) % 100,
    );
    json!({
        "schema": 1,
        "repository": "https://github.com/acme/shop",
        "commit": commit,
        "branch": if r.is_multiple_of(5) { "main".to_string() } else { format!("feature/{module}-{}", r % 97) },
        "job": {
            "provider": "github_actions",
            "id": format!("{}/{}", 9000 + n / 4, n % 4 + 1),
            "name": "test",
            "url": format!("https://github.com/acme/shop/actions/runs/{}", 9000 + n / 4),
        },
        "reports": [],
        "log": {"path": "ci.log", "content": log},
        "environment": {
            "os": "linux",
            "arch": "x86_64",
            "toolchains": {"python3": "Python 3.11.9"},
            "lockfiles": {"poetry.lock": format!("sha256:{}", hex(seed ^ 1, 0, 64))},
            "env_names": ["CI", "GITHUB_ACTIONS", "HOME", "PATH"],
        },
        "created_at": now_s,
    })
}

/// An error line as a Python service logs it (structlog/json-logging style).
pub fn log_line(n: u64, seed: u64, now_ms: u64) -> Value {
    let r = mix(seed ^ 0x5eed, n);
    let service = SERVICES[(r % SERVICES.len() as u64) as usize];
    let (function, statement, error) = match (r >> 8) % 4 {
        0 => (
            "reserve",
            "stock = inventory[sku]".to_string(),
            format!("KeyError: 'sku-{}'", (r >> 16) % 5000),
        ),
        1 => (
            "average_price",
            "return total / len(items)".to_string(),
            "ZeroDivisionError: division by zero".to_string(),
        ),
        2 => (
            "apply_discount",
            "return price - discount".to_string(),
            "TypeError: unsupported operand type(s) for -: 'Decimal' and 'NoneType'".to_string(),
        ),
        _ => (
            "parse_quantity",
            "return int(raw)".to_string(),
            format!(
                "ValueError: invalid literal for int() with base 10: '{}x'",
                (r >> 16) % 100
            ),
        ),
    };
    let traceback = format!(
        "Traceback (most recent call last):\n  \
         File \"/app/{service}/handlers.py\", line {l1}, in handle\n    \
         return {function}(payload)\n  \
         File \"/app/{service}/domain.py\", line {l2}, in {function}\n    \
         {statement}\n{error}",
        l1 = 40 + (r >> 24) % 40,
        l2 = 10 + (r >> 32) % 90,
    );
    json!({
        "time": now_ms,
        "level": "error",
        "service": service,
        "logger": format!("{service}.handlers"),
        "msg": "unhandled exception while handling request",
        "trace_id": hex(seed ^ 2, n, 32),
        "span_id": hex(seed ^ 3, n, 16),
        "request_id": format!("req-{n}"),
        "exc_info": traceback,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_alternate_unless_forced() {
        assert_eq!(event(0, 1, None, 0).kind, Kind::CiFailure);
        assert_eq!(event(1, 1, None, 0).kind, Kind::LogLine);
        assert_eq!(event(1, 1, Some(Kind::CiFailure), 0).kind, Kind::CiFailure);
        let line = event(3, 1, None, 0).body;
        assert!(
            line.ends_with('\n') && line.matches('\n').count() == 1,
            "{line}"
        );
    }

    #[test]
    fn ci_report_has_the_schema_fields_and_a_pytest_failure() {
        for n in 0..20 {
            let v = ci_failure(n, 42, 1_700_000_000);
            assert_eq!(v["schema"], 1);
            assert_eq!(v["commit"].as_str().unwrap().len(), 40);
            assert_eq!(v["created_at"], 1_700_000_000);
            let log = v["log"]["content"].as_str().unwrap();
            assert!(log.contains("= FAILURES ="), "{log}");
            assert!(log.contains("FAILED tests/test_"), "{log}");
            assert!(
                log.contains(": AssertionError") || log.contains(": ValueError"),
                "{log}"
            );
        }
    }

    #[test]
    fn log_line_is_one_json_error_with_a_traceback() {
        let v = log_line(7, 42, 1_700_000_000_123);
        assert_eq!(v["level"], "error");
        assert_eq!(v["time"], 1_700_000_000_123u64);
        let tb = v["exc_info"].as_str().unwrap();
        assert!(
            tb.starts_with("Traceback (most recent call last):\n"),
            "{tb}"
        );
        assert_eq!(v["trace_id"].as_str().unwrap().len(), 32);
        assert!(!v.to_string().contains('\n'), "one line");
    }

    #[test]
    fn fields_vary_but_runs_repeat() {
        let commits: std::collections::BTreeSet<_> = (0..50)
            .map(|n| ci_failure(n, 9, 0)["commit"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(commits.len(), 50);
        let errors: std::collections::BTreeSet<_> = (0..50)
            .map(|n| {
                let tb = log_line(n, 9, 0)["exc_info"].as_str().unwrap().to_string();
                tb.lines()
                    .last()
                    .unwrap()
                    .split(':')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert!(errors.len() >= 3, "{errors:?}");
        assert_eq!(event(5, 9, None, 1), event(5, 9, None, 1));
        assert_ne!(event(5, 9, None, 1), event(5, 10, None, 1));
    }
}
