//! The command that re-runs one failed test, from the test id a report gave
//! and the language it was in: what lets an investigation start from
//! evidence instead of a hand-written test command.
//!
//! Only ids whose runner is unambiguous get a command: a pytest node id, a
//! dotted unittest id, a Rust test path, a Go `package.TestName[/sub]`.
//! Java ids (Maven or Gradle?) and JavaScript ids (jest, vitest or
//! `node --test`?) do not say how the project runs its tests, so they get
//! `None` and the caller asks for a command.
//!
//! This module only says which runner an id names and what the base command
//! is; how that runner runs one test is the domain's [`runner::isolate`],
//! the same narrowing the investigation's order-dependence check uses.

use crate::Language;
use tracelab_domain::runner::{self, Runner};

/// The command line of `base` narrowed to `test_id` by the domain's runner rules.
fn one_test(runner: Runner, base: &[&str], test_id: &str) -> Option<String> {
    let base: Vec<String> = base.iter().map(|w| w.to_string()).collect();
    let argv = runner::isolate(runner, &base, test_id)?;
    Some(argv.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" "))
}

/// The command re-running `test_id`, or `None` when the id does not say how.
pub fn rerun_command(test_id: &str, language: Language) -> Option<String> {
    let id = test_id.trim();
    if id.is_empty() || id.contains('\n') {
        return None;
    }
    match language {
        Language::Python => python(id),
        Language::Rust => rust(id),
        Language::Go => go(id),
        _ => None,
    }
}

fn python(id: &str) -> Option<String> {
    if let Some((file, _)) = id.split_once("::") {
        return file
            .ends_with(".py")
            .then(|| one_test(Runner::Pytest, &["python3", "-m", "pytest", "-q"], id))
            .flatten();
    }
    // unittest: `pkg.module.Class.test_name (params)`; the subtest parameters are not part of the id.
    let dotted = id.split_once(" (").map_or(id, |(name, _)| name);
    let valid = dotted.contains('.')
        && dotted
            .split('.')
            .all(|part| !part.is_empty() && part.chars().all(is_identifier_char));
    valid
        .then(|| one_test(Runner::Unittest, &["python3", "-m", "unittest"], dotted))
        .flatten()
}

fn rust(id: &str) -> Option<String> {
    let valid = id
        .split("::")
        .all(|part| !part.is_empty() && part.chars().all(is_identifier_char));
    valid
        .then(|| one_test(Runner::CargoTest, &["cargo", "test"], id))
        .flatten()
}

fn go(id: &str) -> Option<String> {
    // `github.com/acme/ledger/internal/balance.TestApplyDebit/overdraft`
    let (name_start, _) = id.match_indices(".Test").last()?;
    let package = &id[..name_start];
    let mut parts = id[name_start + 1..].split('/');
    let test = parts.next()?;
    if package.is_empty() || !test.chars().all(is_identifier_char) {
        return None;
    }
    let mut pattern = format!("^{test}$");
    for sub in parts {
        pattern.push_str(&format!("/^{}$", regex_escape(sub)));
    }
    Some(format!(
        "go test -run {} {}",
        quote(&pattern),
        quote(package)
    ))
}

fn is_identifier_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Go's `-run` takes a regular expression per level; subtest names may hold anything.
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// POSIX single quotes when the word needs them (the allowlist parses commands with shell rules).
fn quote(word: &str) -> String {
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytest_node_ids_run_under_pytest() {
        assert_eq!(
            rerun_command(
                "tests/test_orders.py::TestCheckout::test_total_tax",
                Language::Python
            )
            .as_deref(),
            Some("python3 -m pytest -q tests/test_orders.py::TestCheckout::test_total_tax")
        );
        assert_eq!(
            rerun_command("tests/test_x.py::test_a[big value]", Language::Python).as_deref(),
            Some("python3 -m pytest -q 'tests/test_x.py::test_a[big value]'")
        );
    }

    #[test]
    fn unittest_ids_drop_subtest_parameters() {
        assert_eq!(
            rerun_command(
                "tests.test_protocol.FrameTests.test_roundtrip (size=1024)",
                Language::Python
            )
            .as_deref(),
            Some("python3 -m unittest tests.test_protocol.FrameTests.test_roundtrip")
        );
        assert_eq!(
            rerun_command("rejects invalid input", Language::Python),
            None
        );
    }

    #[test]
    fn rust_paths_run_exactly() {
        assert_eq!(
            rerun_command("tree::tests::split_node_balances", Language::Rust).as_deref(),
            Some("cargo test tree::tests::split_node_balances -- --exact")
        );
        assert_eq!(rerun_command("tree::tests::bad name", Language::Rust), None);
    }

    #[test]
    fn go_ids_split_package_and_anchored_subtests() {
        assert_eq!(
            rerun_command(
                "github.com/acme/ledger/internal/balance.TestApplyDebit/overdraft",
                Language::Go
            )
            .as_deref(),
            Some(
                "go test -run '^TestApplyDebit$/^overdraft$' github.com/acme/ledger/internal/balance"
            )
        );
        assert_eq!(
            rerun_command("example.com/fx.TestConvert/rate (1.5)", Language::Go).as_deref(),
            Some("go test -run '^TestConvert$/^rate \\(1\\.5\\)$' example.com/fx")
        );
        assert_eq!(rerun_command("TestConvert", Language::Go), None);
    }

    #[test]
    fn runners_that_an_id_does_not_name_get_none() {
        assert_eq!(
            rerun_command(
                "com.acme.billing.InvoiceServiceTest.appliesVat",
                Language::Java
            ),
            None
        );
        assert_eq!(
            rerun_command(
                "src/cart.test.ts › cart › applies coupon codes",
                Language::Javascript
            ),
            None
        );
        assert_eq!(rerun_command("a.py::t\nrm -rf /", Language::Python), None);
        assert_eq!(
            rerun_command("x.py::t'; rm -rf / #", Language::Python).as_deref(),
            Some("python3 -m pytest -q 'x.py::t'\\''; rm -rf / #'")
        );
    }
}
