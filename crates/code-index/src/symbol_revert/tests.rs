use super::*;

/// Restores `file` (optionally only `only`), checks the content and that
/// it parses no worse than `current`, and returns the result for the
/// test's own checks.
fn check(path: &str, [before, culprit, current]: [&str; 3], only: &[&str], want: &str) -> Restored {
    let filter: Option<BTreeSet<String>> =
        (!only.is_empty()).then(|| only.iter().map(|s| s.to_string()).collect());
    let file = FileVersions {
        path,
        before,
        culprit,
        current,
    };
    let got = restore_symbols(&file, filter.as_ref()).expect("the culprit changed something");
    assert_eq!(got.path, path);
    assert_eq!(got.content, want, "restored {path}: {got:#?}");
    let language = Language::from_path(path).expect("indexed language");
    assert!(
        syntax_errors(language, path, &got.content) <= syntax_errors(language, path, current),
        "restoring added syntax errors"
    );
    assert_eq!(got.changes_file(), got.content != current);
    got
}

/// What `git revert <culprit>` does to one file: a three-way merge with
/// the culprit as base, the current file as ours and its parent as
/// theirs. `None` when it conflicts.
fn textual_revert(before: &str, culprit: &str, current: &str) -> Option<String> {
    // `merge_file` does not initialise libgit2 itself; `Buf::new` does.
    drop(git2::Buf::new());
    let mut base = git2::MergeFileInput::new();
    base.content(culprit.as_bytes());
    let mut ours = git2::MergeFileInput::new();
    ours.content(current.as_bytes());
    let mut theirs = git2::MergeFileInput::new();
    theirs.content(before.as_bytes());
    let merged = git2::merge_file(&base, &ours, &theirs, None).expect("merge runs");
    merged
        .is_automergeable()
        .then(|| String::from_utf8_lossy(merged.content()).into_owned())
}

fn reasons(r: &Restored) -> Vec<(&str, &str)> {
    r.skipped
        .iter()
        .map(|(n, why)| (n.as_str(), why.as_str()))
        .collect()
}

const PY_BEFORE: &str = "\
RATE = 0.2


def discount(price):
    return price * RATE
def total(items):
    return sum(items)
";
const PY_CULPRIT: &str = "\
RATE = 0.2


def discount(price):
    return price * RATE * 2
def total(items):
    return sum(items)
";

#[test]
fn python_function_restored_while_its_neighbour_was_edited_later() {
    // Later: an import above (every line moves down) and `total`, whose
    // first line is right under the culprit's line, rewritten.
    let current = "\
import math

RATE = 0.2


def discount(price):
    return price * RATE * 2
def total(items, start=0.0):
    return math.fsum(items) + start
";
    assert_eq!(textual_revert(PY_BEFORE, PY_CULPRIT, current), None);
    let got = check(
        "src/shop/prices.py",
        [PY_BEFORE, PY_CULPRIT, current],
        &[],
        "\
import math

RATE = 0.2


def discount(price):
    return price * RATE
def total(items, start=0.0):
    return math.fsum(items) + start
",
    );
    assert_eq!(got.symbols, ["py:shop.prices.discount"]);
    assert!(got.notes.is_empty() && got.skipped.is_empty(), "{got:#?}");
}

#[test]
fn python_method_not_its_class() {
    let before = "\
class Cart:
    def __init__(self):
        self.items = []

    def total(self):
        return sum(self.items)
";
    let culprit = before.replace("sum(self.items)", "sum(self.items[1:])");
    let current = "\
class Cart:
    def __init__(self, items=None):
        self.items = list(items or [])

    def total(self):
        return sum(self.items[1:])
";
    let got = check(
        "shop/cart.py",
        [before, &culprit, current],
        &[],
        "\
class Cart:
    def __init__(self, items=None):
        self.items = list(items or [])

    def total(self):
        return sum(self.items)
",
    );
    assert_eq!(got.symbols, ["py:shop.cart.Cart.total"]);
    assert_eq!(
        changed_symbols("shop/cart.py", before, &culprit),
        ["py:shop.cart.Cart.total"]
    );
}

#[test]
fn python_decorator_is_part_of_the_definition() {
    let before = "\
import functools


@functools.lru_cache(maxsize=128)
def rate(region):
    return lookup(region)


def lookup(region):
    return 0.2
";
    let culprit = before.replace("maxsize=128", "maxsize=None");
    let current = culprit.replace("return 0.2", "return 0.25");
    let got = check(
        "rates.py",
        [before, &culprit, &current],
        &[],
        &before.replace("return 0.2", "return 0.25"),
    );
    assert_eq!(got.symbols, ["py:rates.rate"]);
}

#[test]
fn python_class_attribute_and_method_restored_between_its_methods() {
    let before = "\
class Config:
    timeout = 30

    def retries(self):
        return 3

    def backoff(self):
        return 1.5
";
    let culprit = before
        .replace("timeout = 30", "timeout = 3")
        .replace("return 3\n", "return 0\n");
    // Later: `backoff` edited; it must survive the class's restore.
    let current = culprit.replace("return 1.5", "return 2.0");
    let got = check(
        "config.py",
        [before, &culprit, &current],
        &[],
        &before.replace("return 1.5", "return 2.0"),
    );
    assert_eq!(
        got.symbols,
        ["py:config.Config", "py:config.Config.retries"]
    );
    // The class's own text was not edited after the culprit.
    assert!(got.notes.is_empty(), "{got:#?}");
}

#[test]
fn class_whose_methods_changed_since_is_left_to_a_person() {
    let before = "\
class Config:
    timeout = 30

    def retries(self):
        return 3
";
    let culprit = before.replace("timeout = 30", "timeout = 3");
    let current = format!("{culprit}\n    def backoff(self):\n        return 1.5\n");
    let file = FileVersions {
        path: "config.py",
        before,
        culprit: &culprit,
        current: &current,
    };
    let got = restore_symbols(&file, None).expect("reported");
    assert!(!got.changes_file());
    assert_eq!(got.content, current);
    assert_eq!(reasons(&got), [("py:config.Config", REBUILT)]);
}

#[test]
fn rust_fn_with_attribute_and_impl_method() {
    let before = "\
/// Adds two numbers.
#[inline]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

pub struct Cart {
    items: Vec<i64>,
}

impl Cart {
    pub fn new() -> Self {
        Cart { items: Vec::new() }
    }

    /// The sum of the items.
    pub fn total(&self) -> i64 {
        self.items.iter().sum()
    }
}
";
    let culprit = before
        .replace("#[inline]\n", "#[inline(never)]\n")
        .replace("a + b", "a + b + 1")
        .replace("self.items.iter().sum()", "self.items.iter().skip(1).sum()");
    let current = culprit
        .replace("Cart { items: Vec::new() }", "Cart { items: vec![] }")
        .replace("pub struct Cart", "#[derive(Default)]\npub struct Cart");
    let want = before
        .replace("Cart { items: Vec::new() }", "Cart { items: vec![] }")
        .replace("pub struct Cart", "#[derive(Default)]\npub struct Cart");
    let got = check("src/lib.rs", [before, &culprit, &current], &[], &want);
    assert_eq!(got.symbols, ["rs:crate::add", "rs:crate::Cart::total"]);
}

#[test]
fn javascript_function_and_exported_arrow() {
    let before = "\
/** Adds. */
function add(a, b) {
  return a + b;
}

export const mul = (a, b) => a * b;

export function sub(a, b) {
  return a - b;
}
";
    let culprit = before
        .replace("return a + b;", "return a + b + 0.1;")
        .replace("a * b;", "a * b * 1;");
    let current = culprit.replace("return a - b;", "return b - a;");
    let got = check(
        "src/math.js",
        [before, &culprit, &current],
        &[],
        &before.replace("return a - b;", "return b - a;"),
    );
    assert_eq!(got.symbols, ["js:src/math#add", "js:src/math#mul"]);
}

#[test]
fn go_func_and_method() {
    let before = "\
package store

// Store keeps values.
type Store struct {
	m map[string]int
}

// Get returns a value.
func (s *Store) Get(k string) int {
	return s.m[k]
}

func Size(s *Store) int {
	return len(s.m)
}
";
    let culprit = before
        .replace("return s.m[k]", "return s.m[k] + 1")
        .replace("return len(s.m)", "return len(s.m) - 1");
    let current = culprit.replace("m map[string]int", "m map[string]int\n\tn int");
    let got = check(
        "internal/store/store.go",
        [before, &culprit, &current],
        &[],
        &before.replace("m map[string]int", "m map[string]int\n\tn int"),
    );
    assert_eq!(
        got.symbols,
        ["go:internal/store.Store.Get", "go:internal/store.Size"]
    );
}

#[test]
fn java_method_and_ambiguous_overloads() {
    let before = "\
package com.shop;

public class Cart {
    private int count;

    /** The total. */
    public int total() {
        return count * 2;
    }

    public int add(int n) {
        count += n;
        return count;
    }

    public int add(int n, int m) {
        return add(n + m);
    }
}
";
    let culprit = before
        .replace("return count * 2;", "return count * 3;")
        .replace("return add(n + m);", "return add(n - m);");
    let current = culprit.replace("private int count;", "private int count = 0;");
    let got = check(
        "src/main/java/com/shop/Cart.java",
        [before, &culprit, &current],
        &[],
        &before
            .replace("private int count;", "private int count = 0;")
            .replace("return add(n + m);", "return add(n - m);"),
    );
    assert_eq!(got.symbols, ["java:com.shop.Cart.total"]);
    assert_eq!(got.skipped.len(), 1);
    assert_eq!(got.skipped[0].0, "java:com.shop.Cart.add");
    assert!(got.skipped[0].1.contains("defined 2 times"), "{got:#?}");
}

#[test]
fn helper_added_by_the_culprit_is_kept() {
    let before = "\
def parse(text):
    return text.split(',')
";
    let culprit = "\
def clean(text):
    return text.strip()


def parse(text):
    return clean(text).split(';')
";
    let got = check(
        "io/csv.py",
        [before, culprit, culprit],
        &[],
        "\
def clean(text):
    return text.strip()


def parse(text):
    return text.split(',')
",
    );
    assert_eq!(got.symbols, ["py:io.csv.parse"]);
    assert_eq!(reasons(&got), [("py:io.csv.clean", ADDED)]);
    assert_eq!(
        changed_symbols("io/csv.py", before, culprit),
        ["py:io.csv.parse"]
    );
}

#[test]
fn deleted_definition_is_not_put_back() {
    let before = "\
def a():
    return 1


def b():
    return 2
";
    let culprit = "\
def a():
    return 10
";
    let got = check(
        "m.py",
        [before, culprit, culprit],
        &[],
        "\
def a():
    return 1
",
    );
    assert_eq!(reasons(&got), [("py:m.b", DELETED)]);
}

#[test]
fn filter_limits_the_restore() {
    let before = "\
class Cart:
    def total(self):
        return 1

    def count(self):
        return 2


def helper():
    return 3
";
    let culprit = before
        .replace("return 1", "return 10")
        .replace("return 2", "return 20")
        .replace("return 3", "return 30");
    let files = [before, culprit.as_str(), culprit.as_str()];
    let only_total = check(
        "cart.py",
        files,
        &["Cart.total"],
        &culprit.replace("return 10", "return 1"),
    );
    assert_eq!(only_total.symbols, ["py:cart.Cart.total"]);
    let by_full_name = check(
        "cart.py",
        files,
        &["py:cart.helper"],
        &culprit.replace("return 30", "return 3"),
    );
    assert_eq!(by_full_name.symbols, ["py:cart.helper"]);
    // A class names its methods.
    let by_class = check(
        "cart.py",
        files,
        &["Cart"],
        &before.replace("return 3", "return 30"),
    );
    assert_eq!(
        by_class.symbols,
        ["py:cart.Cart.total", "py:cart.Cart.count"]
    );
    // Only at a boundary: `otal` is not `total`.
    let file = FileVersions {
        path: "cart.py",
        before,
        culprit: &culprit,
        current: &culprit,
    };
    let only: BTreeSet<String> = ["otal".to_string()].into();
    assert_eq!(restore_symbols(&file, Some(&only)), None);
}

#[test]
fn names_match_whole_or_at_a_boundary() {
    assert!(name_matches(
        "py:pkg.mod.Class.method",
        "py:pkg.mod.Class.method"
    ));
    assert!(name_matches("py:pkg.mod.Class.method", "Class.method"));
    assert!(name_matches("py:pkg.mod.Class.method", "method"));
    assert!(name_matches("rs:crate::Cart::total", "Cart::total"));
    assert!(name_matches("js:src/math#add", "add"));
    assert!(name_matches("py:add", "add"));
    assert!(!name_matches("py:pkg.madd", "add"));
    assert!(!name_matches("py:pkg.add", ""));
}

#[test]
fn already_restored_definition_is_skipped() {
    let before = "\
def a():
    return 1


def b():
    return 2
";
    let culprit = before
        .replace("return 1", "return 10")
        .replace("return 2", "return 20");
    // Someone fixed `a` by hand already.
    let current = culprit.replace("return 10", "return 1");
    let got = check("m.py", [before, &culprit, &current], &[], before);
    assert_eq!(got.symbols, ["py:m.b"]);
    assert_eq!(reasons(&got), [("py:m.a", ALREADY)]);

    let file = FileVersions {
        path: "m.py",
        before,
        culprit: &culprit,
        current: before,
    };
    let nothing = restore_symbols(&file, None).expect("reported");
    assert!(!nothing.changes_file());
    assert_eq!(nothing.skipped.len(), 2);
}

#[test]
fn later_edit_to_the_same_function_is_undone_with_a_note() {
    let before = "\
def total(items):
    subtotal = sum(items)
    return subtotal
";
    let culprit = before.replace("sum(items)", "sum(items[1:])");
    let current = culprit.replace("return subtotal", "return round(subtotal, 2)");
    assert_eq!(textual_revert(before, &culprit, &current), None);
    let got = check("calc.py", [before, &culprit, &current], &[], before);
    assert_eq!(got.symbols, ["py:calc.total"]);
    assert_eq!(got.notes.len(), 1);
    assert!(
        got.notes[0].starts_with("py:calc.total: edited again"),
        "{got:#?}"
    );
}

#[test]
fn crlf_line_endings_are_kept() {
    let crlf = |s: &str| s.replace('\n', "\r\n");
    let before = "\
def a(x):
    y = x + 1
    return y


def b():
    return 2
";
    let culprit = before.replace("x + 1", "x - 1");
    let current = culprit.replace("return 2", "return 3");
    let want = before.replace("return 2", "return 3");
    let got = check(
        "w.py",
        [&crlf(before), &crlf(&culprit), &crlf(&current)],
        &[],
        &crlf(&want),
    );
    assert_eq!(got.symbols, ["py:w.a"]);
    assert!(got.notes.is_empty(), "{got:#?}");
    // The file was converted to CRLF after the culprit: restored text follows it.
    let got = check(
        "w.py",
        [before, &culprit, &crlf(&current)],
        &[],
        &crlf(&want),
    );
    assert_eq!(got.symbols, ["py:w.a"]);
    assert!(got.notes.is_empty(), "{got:#?}");
}

#[test]
fn textual_conflict_on_adjacent_lines_is_solved() {
    // `git revert` of the culprit fails here: `Tax`, edited later, sits on
    // the line right under the culprit's change to `Fee`.
    let before = "\
package fees

func Fee(x int) int { return x / 10 }
func Tax(x int) int { return x / 5 }
";
    let culprit = before.replace("x / 10", "x / 100");
    let current = format!(
        "{}\n// Total is fee plus tax.\nfunc Total(x int) int {{ return Fee(x) + Tax(x) }}\n",
        culprit.replace("x / 5", "x * 2 / 10")
    );
    assert_eq!(textual_revert(before, &culprit, &current), None);
    let want = current.replace("x / 100", "x / 10");
    let got = check("fees.go", [before, &culprit, &current], &[], &want);
    assert_eq!(got.symbols, ["go:fees.Fee"]);
    assert!(got.notes.is_empty() && got.skipped.is_empty(), "{got:#?}");
}

#[test]
fn restore_that_breaks_the_syntax_is_dropped() {
    // `a` had a syntax error before the culprit; putting it back would
    // break the current file, which parses.
    let before = "\
def a():
    return (1 +


def b():
    return 2
";
    let culprit = "\
def a():
    return 1


def b():
    return 20
";
    let got = check(
        "s.py",
        [before, culprit, culprit],
        &[],
        "\
def a():
    return 1


def b():
    return 2
",
    );
    assert_eq!(got.symbols, ["py:s.b"]);
    assert_eq!(got.skipped.len(), 1, "{got:#?}");
    assert_eq!(got.skipped[0].0, "py:s.a");
    assert!(got.skipped[0].1.contains("syntax errors"), "{got:#?}");
}

#[test]
fn nested_function_is_the_unit() {
    let before = "\
def outer(xs):
    def key(x):
        return x.price

    return sorted(xs, key=key)
";
    let culprit = before.replace("x.price", "-x.price");
    assert_eq!(
        changed_symbols("n.py", before, &culprit),
        ["py:n.outer.key"]
    );
    let current = culprit.replace("sorted(xs, key=key)", "sorted(list(xs), key=key)");
    let got = check(
        "n.py",
        [before, &culprit, &current],
        &[],
        &before.replace("sorted(xs, key=key)", "sorted(list(xs), key=key)"),
    );
    assert_eq!(got.symbols, ["py:n.outer.key"]);

    // The culprit changed `outer` itself too, and later a second nested
    // function was added, so `outer`'s nested definitions no longer pair
    // up: it is restored whole, `key` with it, and the reviewer is told.
    let culprit = culprit.replace("sorted(xs, key=key)", "sorted(xs, key=key)[1:]");
    let current = culprit.replace(
        "    return sorted",
        "    def unused(x):\n        return x\n\n    return sorted",
    );
    let got = check("n.py", [before, &culprit, &current], &[], before);
    assert_eq!(got.symbols, ["py:n.outer", "py:n.outer.key"]);
    assert_eq!(got.notes.len(), 1, "{got:#?}");
}

#[test]
fn nothing_to_restore() {
    let same = FileVersions {
        path: "m.py",
        before: "def a():\n    return 1\n",
        culprit: "def a():\n    return 1\n\nX = 2\n",
        current: "def a():\n    return 1\n",
    };
    assert_eq!(restore_symbols(&same, None), None);
    let unknown = FileVersions {
        path: "notes.txt",
        before: "a",
        culprit: "b",
        current: "b",
    };
    assert_eq!(restore_symbols(&unknown, None), None);
    assert!(changed_symbols("notes.txt", "a", "b").is_empty());
}
