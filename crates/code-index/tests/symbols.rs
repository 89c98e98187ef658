//! Symbols, qualified names, line ranges, doc comments and call edges for
//! each supported language, on small repositories built here.

mod common;

use common::TestRepo;
use tracelab_code_index::model::Resolution;
use tracelab_code_index::{Indexer, Snapshot, SymbolKind};

fn index(files: &[(&str, &str)]) -> Snapshot {
    let repo = TestRepo::new();
    for (p, c) in files {
        repo.write(p, c);
    }
    repo.commit("initial");
    let r = git2::Repository::open(repo.path()).unwrap();
    Indexer::in_memory().index(&r, None).unwrap().0
}

/// `(qualified name, kind, start, end)` must all be present.
fn check(snap: &Snapshot, expected: &[(&str, SymbolKind, u32, u32)]) {
    for (name, kind, start, end) in expected {
        let s = snap.by_qualified_name(name).unwrap_or_else(|| {
            let all: Vec<_> = snap
                .symbols
                .iter()
                .map(|s| s.qualified_name.as_str())
                .collect();
            panic!("{name} missing; have {all:#?}")
        });
        assert_eq!(
            (s.kind, s.start_line, s.end_line),
            (*kind, *start, *end),
            "{name}"
        );
    }
}

fn has_edge(snap: &Snapshot, from: &str, to: &str) -> Option<Resolution> {
    let a = snap.by_qualified_name(from)?.id;
    let b = snap.by_qualified_name(to)?.id;
    snap.edges()
        .iter()
        .find(|e| e.caller == a && e.callee == b)
        .map(|e| e.resolution)
}

const PY_CART: &str = r#"from shop.pricing import discount as disc
import shop.tax


class Cart:
    """A shopping cart."""

    def __init__(self):
        self.items = []

    def total(self):
        subtotal = sum(i.price for i in self.items)
        return shop.tax.apply(disc(subtotal))

    def add(self, item):
        self.items.append(item)
        self.total()


def helper():
    return Cart().total()
"#;

#[test]
fn python_symbols_and_import_aware_calls() {
    let snap = index(&[
        ("src/shop/__init__.py", ""),
        ("src/shop/cart.py", PY_CART),
        (
            "src/shop/pricing.py",
            "def discount(x):\n    return x * 0.9\n",
        ),
        ("src/shop/tax.py", "def apply(x):\n    return x * 1.2\n"),
        (
            "src/shop/broken.py",
            "def ok():\n    return 1\n\ndef broken(:\n    pass\n",
        ),
    ]);
    check(
        &snap,
        &[
            ("py:shop.cart.Cart", SymbolKind::Class, 5, 17),
            ("py:shop.cart.Cart.__init__", SymbolKind::Method, 8, 9),
            ("py:shop.cart.Cart.total", SymbolKind::Method, 11, 13),
            ("py:shop.cart.helper", SymbolKind::Function, 20, 21),
            ("py:shop.pricing.discount", SymbolKind::Function, 1, 2),
            ("py:shop.broken.ok", SymbolKind::Function, 1, 2),
        ],
    );
    let cart = snap.by_qualified_name("py:shop.cart.Cart").unwrap();
    assert_eq!(cart.doc.as_deref(), Some("A shopping cart."));
    assert_eq!(cart.signature, "class Cart:");
    assert_eq!(
        has_edge(&snap, "py:shop.cart.Cart.total", "py:shop.pricing.discount"),
        Some(Resolution::Import)
    );
    assert_eq!(
        has_edge(&snap, "py:shop.cart.Cart.total", "py:shop.tax.apply"),
        Some(Resolution::Import)
    );
    assert_eq!(
        has_edge(&snap, "py:shop.cart.Cart.add", "py:shop.cart.Cart.total"),
        Some(Resolution::SameClass)
    );
    assert_eq!(
        has_edge(&snap, "py:shop.cart.helper", "py:shop.cart.Cart"),
        Some(Resolution::SameModule)
    );
    // A syntax error is a diagnostic, and the rest of the file still indexes.
    assert!(
        snap.diagnostics
            .iter()
            .any(|d| d.path == "src/shop/broken.py"),
        "{:?}",
        snap.diagnostics
    );
}

const RS_LIB: &str = r#"pub mod money;

/// An invoice.
/// With lines.
pub struct Invoice {
    lines: Vec<u64>,
}

impl Invoice {
    pub fn new() -> Self {
        Invoice { lines: Vec::new() }
    }

    /// Sum of the lines.
    pub fn total(&self) -> u64 {
        money::round(self.lines.iter().sum())
    }
}

pub trait Render {
    fn render(&self) -> String;
}

impl Render for Invoice {
    fn render(&self) -> String {
        self.total().to_string()
    }
}
"#;

#[test]
fn rust_symbols() {
    let snap = index(&[
        ("crates/billing-core/src/lib.rs", RS_LIB),
        (
            "crates/billing-core/src/money.rs",
            "pub fn round(x: u64) -> u64 {\n    x\n}\n",
        ),
    ]);
    check(
        &snap,
        &[
            ("rs:billing_core::Invoice", SymbolKind::Struct, 5, 7),
            ("rs:billing_core::<impl Invoice>", SymbolKind::Impl, 9, 18),
            ("rs:billing_core::Invoice::new", SymbolKind::Method, 10, 12),
            (
                "rs:billing_core::Invoice::total",
                SymbolKind::Method,
                15,
                17,
            ),
            ("rs:billing_core::Render", SymbolKind::Trait, 20, 22),
            (
                "rs:billing_core::Render::render",
                SymbolKind::Method,
                21,
                21,
            ),
            (
                "rs:billing_core::<Invoice as Render>",
                SymbolKind::Impl,
                24,
                28,
            ),
            (
                "rs:billing_core::Invoice::render",
                SymbolKind::Method,
                25,
                27,
            ),
            ("rs:billing_core::money::round", SymbolKind::Function, 1, 3),
        ],
    );
    let inv = snap.by_qualified_name("rs:billing_core::Invoice").unwrap();
    assert_eq!(inv.doc.as_deref(), Some("An invoice.\nWith lines."));
    let total = snap
        .by_qualified_name("rs:billing_core::Invoice::total")
        .unwrap();
    assert_eq!(total.signature, "pub fn total(&self) -> u64 {");
    assert!(
        has_edge(
            &snap,
            "rs:billing_core::Invoice::total",
            "rs:billing_core::money::round"
        )
        .is_some()
    );
    assert_eq!(
        has_edge(
            &snap,
            "rs:billing_core::Invoice::render",
            "rs:billing_core::Invoice::total"
        ),
        Some(Resolution::SameClass)
    );
}

const JS_CART: &str = r#"import { round } from './util';

/** A cart. */
export class Cart {
  constructor() {
    this.items = [];
  }

  total() {
    return round(this.items.reduce((a, b) => a + b, 0));
  }
}

export const makeCart = () => {
  return new Cart();
};

function unused() {}
"#;

#[test]
fn javascript_symbols() {
    let snap = index(&[
        ("src/cart.js", JS_CART),
        (
            "src/util.js",
            "export function round(x) {\n  return Math.round(x);\n}\n",
        ),
    ]);
    check(
        &snap,
        &[
            ("js:src/cart#Cart", SymbolKind::Class, 4, 12),
            ("js:src/cart#Cart.constructor", SymbolKind::Method, 5, 7),
            ("js:src/cart#Cart.total", SymbolKind::Method, 9, 11),
            ("js:src/cart#makeCart", SymbolKind::Function, 14, 16),
            ("js:src/cart#unused", SymbolKind::Function, 18, 18),
            ("js:src/util#round", SymbolKind::Function, 1, 3),
        ],
    );
    assert_eq!(
        snap.by_qualified_name("js:src/cart#Cart")
            .unwrap()
            .doc
            .as_deref(),
        Some("A cart.")
    );
    assert_eq!(
        has_edge(&snap, "js:src/cart#Cart.total", "js:src/util#round"),
        Some(Resolution::Import)
    );
    assert_eq!(
        has_edge(&snap, "js:src/cart#makeCart", "js:src/cart#Cart"),
        Some(Resolution::SameModule)
    );
}

const TS_STORE: &str = r#"export interface Repo {
  get(id: string): Item;
}

export enum Color { Red, Blue }

export class Store implements Repo {
  private cache = new Map<string, Item>();

  get(id: string): Item {
    return this.load(id);
  }

  load = (id: string): Item => {
    return fetchItem(id);
  };
}

export function fetchItem(id: string): Item {
  return { id };
}
"#;

#[test]
fn typescript_symbols() {
    let snap = index(&[("web/store.ts", TS_STORE)]);
    check(
        &snap,
        &[
            ("ts:web/store#Repo", SymbolKind::Interface, 1, 3),
            ("ts:web/store#Color", SymbolKind::Enum, 5, 5),
            ("ts:web/store#Store", SymbolKind::Class, 7, 17),
            ("ts:web/store#Store.get", SymbolKind::Method, 10, 12),
            ("ts:web/store#Store.load", SymbolKind::Method, 14, 16),
            ("ts:web/store#fetchItem", SymbolKind::Function, 19, 21),
        ],
    );
    assert_eq!(
        has_edge(&snap, "ts:web/store#Store.get", "ts:web/store#Store.load"),
        Some(Resolution::SameClass)
    );
    assert_eq!(
        has_edge(&snap, "ts:web/store#Store.load", "ts:web/store#fetchItem"),
        Some(Resolution::SameModule)
    );
}

const GO_STORE: &str = r#"package store

// Store keeps items.
type Store struct {
	items map[string]int
}

type Getter interface {
	Get(key string) int
}

// Get returns an item.
// Missing keys give zero.
func (s *Store) Get(key string) int {
	return s.items[normalize(key)]
}

func New() *Store {
	return &Store{}
}
"#;

#[test]
fn go_symbols() {
    let snap = index(&[
        ("internal/store/store.go", GO_STORE),
        (
            "internal/store/util.go",
            "package store\n\nfunc normalize(k string) string {\n\treturn k\n}\n",
        ),
    ]);
    check(
        &snap,
        &[
            ("go:internal/store.Store", SymbolKind::Struct, 4, 6),
            ("go:internal/store.Getter", SymbolKind::Interface, 8, 10),
            ("go:internal/store.Getter.Get", SymbolKind::Method, 9, 9),
            ("go:internal/store.Store.Get", SymbolKind::Method, 14, 16),
            ("go:internal/store.New", SymbolKind::Function, 18, 20),
            ("go:internal/store.normalize", SymbolKind::Function, 3, 5),
        ],
    );
    let get = snap
        .by_qualified_name("go:internal/store.Store.Get")
        .unwrap();
    assert_eq!(
        get.doc.as_deref(),
        Some("Get returns an item.\nMissing keys give zero.")
    );
    assert_eq!(
        has_edge(
            &snap,
            "go:internal/store.Store.Get",
            "go:internal/store.normalize"
        ),
        Some(Resolution::SameModule)
    );
}

const JAVA_CART: &str = r#"package com.shop;

import com.shop.util.Money;

/** A cart. */
public class Cart {
    private int total;

    public Cart() {
        this.total = 0;
    }

    /** Adds a price. */
    public void add(int price) {
        total += Money.round(price);
        log();
    }

    private void log() {}

    static class Line {
        int qty() { return 1; }
    }
}
"#;

#[test]
fn java_symbols() {
    let snap = index(&[
        ("src/main/java/com/shop/Cart.java", JAVA_CART),
        (
            "src/main/java/com/shop/util/Money.java",
            "package com.shop.util;\n\npublic class Money {\n    public static int round(int p) { return p; }\n}\n",
        ),
    ]);
    check(
        &snap,
        &[
            ("java:com.shop.Cart", SymbolKind::Class, 6, 24),
            ("java:com.shop.Cart.Cart", SymbolKind::Method, 9, 11),
            ("java:com.shop.Cart.add", SymbolKind::Method, 14, 17),
            ("java:com.shop.Cart.log", SymbolKind::Method, 19, 19),
            ("java:com.shop.Cart.Line", SymbolKind::Class, 21, 23),
            ("java:com.shop.Cart.Line.qty", SymbolKind::Method, 22, 22),
            ("java:com.shop.util.Money.round", SymbolKind::Method, 4, 4),
        ],
    );
    assert_eq!(
        snap.by_qualified_name("java:com.shop.Cart.add")
            .unwrap()
            .doc
            .as_deref(),
        Some("Adds a price.")
    );
    assert_eq!(
        has_edge(&snap, "java:com.shop.Cart.add", "java:com.shop.Cart.log"),
        Some(Resolution::SameModule)
    );
    assert!(
        has_edge(
            &snap,
            "java:com.shop.Cart.add",
            "java:com.shop.util.Money.round"
        )
        .is_some()
    );
}

#[test]
fn innermost_symbol_at_a_line() {
    let snap = index(&[("src/shop/cart.py", PY_CART)]);
    assert_eq!(
        snap.innermost_at("src/shop/cart.py", 12)
            .unwrap()
            .qualified_name,
        "py:shop.cart.Cart.total"
    );
    assert_eq!(
        snap.innermost_at("src/shop/cart.py", 6)
            .unwrap()
            .qualified_name,
        "py:shop.cart.Cart"
    );
    assert!(snap.innermost_at("src/shop/cart.py", 2).is_none());
}

#[test]
fn rust_calls_inside_macros_are_edges() {
    let snap = index(&[
        (
            "src/lib.rs",
            "pub fn mean(v: &[u64]) -> u64 {\n    v[0]\n}\n",
        ),
        (
            "tests/usage.rs",
            "use meter::mean;\n\n#[test]\nfn mean_of_one() {\n    assert_eq!(mean(&[3]), 3);\n    println!(\"{}\", w.len());\n}\n",
        ),
    ]);
    assert_eq!(
        has_edge(
            &snap,
            "rs:crate::tests::usage::mean_of_one",
            "rs:crate::mean"
        ),
        Some(Resolution::Name)
    );
}

#[test]
fn javascript_test_callbacks_are_functions() {
    let snap = index(&[
        (
            "src/money.js",
            "export function sum(xs) {\n  return 0;\n}\n",
        ),
        (
            "test/money.test.js",
            "import { sum } from '../src/money.js';\n\ndescribe('money', () => {\n  it('sums', () => {\n    expect(sum([1])).toBe(1);\n  });\n});\n",
        ),
    ]);
    check(
        &snap,
        &[
            ("js:test/money.test#money", SymbolKind::Function, 3, 7),
            ("js:test/money.test#money.sums", SymbolKind::Function, 4, 6),
        ],
    );
    assert_eq!(
        has_edge(&snap, "js:test/money.test#money.sums", "js:src/money#sum"),
        Some(Resolution::Import)
    );
}
