//! Failure text → suspects, end to end on a small repository.

mod common;

use common::TestRepo;
use std::sync::Arc;
use tracelab_code_index::embed::HashingEmbedder;
use tracelab_code_index::locate::{LocateOptions, Locator, locate};
use tracelab_code_index::score::Component;
use tracelab_code_index::{Indexer, Language};

const PRICING: &str = "def discount(total, code):\n    if code == 'HALF':\n        return total / 2\n    return total\n\n\ndef tax(total):\n    return total * 1.2\n";
const PRICING_BUG: &str = "def discount(total, code):\n    if code == 'HALF':\n        return total / 0\n    return total\n\n\ndef tax(total):\n    return total * 1.2\n";
const CART: &str = "from shop.pricing import discount, tax\n\n\nclass Cart:\n    def __init__(self):\n        self.items = []\n\n    def checkout(self, code):\n        subtotal = sum(self.items)\n        return tax(discount(subtotal, code))\n";
const TEST: &str = "from shop.cart import Cart\n\n\ndef test_checkout_half():\n    c = Cart()\n    c.items = [10]\n    assert c.checkout('HALF') == 6\n";

fn repo() -> (TestRepo, String) {
    let repo = TestRepo::new();
    repo.write("shop/__init__.py", "");
    repo.write("shop/pricing.py", PRICING);
    repo.write("shop/cart.py", CART);
    repo.write("tests/test_cart.py", TEST);
    repo.write("web/app.js", "function render(x) {\n  return x;\n}\n");
    repo.commit("initial");
    repo.write("shop/pricing.py", PRICING_BUG);
    let bug = repo.commit("Tweak discount rounding");
    repo.write("README.md", "docs\n");
    repo.commit("docs");
    (repo, bug)
}

const TRACEBACK: &str = "Traceback (most recent call last):\n  File \"/ci/build/tests/test_cart.py\", line 7, in test_checkout_half\n    assert c.checkout('HALF') == 6\n  File \"/ci/build/shop/cart.py\", line 10, in checkout\n    return tax(discount(subtotal, code))\n  File \"/ci/build/shop/pricing.py\", line 3, in discount\n    return total / 0\nZeroDivisionError: division by zero\n";

#[test]
fn locate_ranks_the_crash_site_and_the_culprit_commit() {
    let (repo, bug) = repo();
    let opts = LocateOptions {
        cache_dir: Some(repo.cache_dir()),
        top: 5,
        ..LocateOptions::default()
    };
    let loc = locate(repo.path(), TRACEBACK, &opts).unwrap();
    assert_eq!(loc.symbols[0].symbol, "py:shop.pricing.discount");
    assert_eq!((loc.symbols[0].start_line, loc.symbols[0].end_line), (1, 4));
    assert_eq!(loc.files[0].path, "shop/pricing.py");
    assert_eq!(loc.commits[0].commit, bug);
    // Tests seed the failing path but are not suspects by default.
    assert!(loc.symbols.iter().all(|s| !s.path.starts_with("tests/")));
    // No embedder: four components, weights renormalised to 1.
    let r = &loc.symbols[0].reasons;
    assert_eq!(r.len(), 4);
    assert!(r.iter().all(|x| x.component != Component::Embedding));
    assert!((r.iter().map(|x| x.weight).sum::<f64>() - 1.0).abs() < 1e-9);
    assert!((r.iter().map(|x| x.contribution).sum::<f64>() - loc.symbols[0].score).abs() < 1e-9);
    let so = r
        .iter()
        .find(|x| x.component == Component::SymbolOverlap)
        .unwrap();
    assert!(so.detail.contains("stack frame #0"), "{}", so.detail);
    // Best first.
    assert!(loc.symbols.windows(2).all(|w| w[0].score >= w[1].score));

    let json = serde_json::to_value(&loc).unwrap();
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&json), vec!["commits", "files", "symbols"]);
    assert_eq!(keys(&json["files"][0]), vec!["path", "reasons", "score"]);
    assert_eq!(
        keys(&json["symbols"][0]),
        vec![
            "end_line",
            "path",
            "reasons",
            "score",
            "start_line",
            "symbol"
        ]
    );
    assert_eq!(
        keys(&json["commits"][0]),
        vec!["commit", "reasons", "score"]
    );
}

#[test]
fn hard_filters_and_the_embedding_component() {
    let (repo, _) = repo();
    let r = git2::Repository::open(repo.path()).unwrap();
    let indexer = Indexer::in_memory();
    let js_only = LocateOptions {
        languages: vec![Language::Javascript],
        ..LocateOptions::default()
    };
    let loc = Locator::build(&r, &indexer, &js_only)
        .unwrap()
        .locate(TRACEBACK)
        .unwrap();
    assert!(loc.symbols.iter().all(|s| s.path.ends_with(".js")));
    let prefix = LocateOptions {
        path_prefix: Some("shop/cart".into()),
        ..LocateOptions::default()
    };
    let loc = Locator::build(&r, &indexer, &prefix)
        .unwrap()
        .locate(TRACEBACK)
        .unwrap();
    assert_eq!(
        loc.symbols
            .iter()
            .map(|s| s.symbol.as_str())
            .collect::<Vec<_>>(),
        vec!["py:shop.cart.Cart.checkout", "py:shop.cart.Cart.__init__"]
    );
    let with_tests = LocateOptions {
        include_tests: true,
        ..LocateOptions::default()
    };
    let loc = Locator::build(&r, &indexer, &with_tests)
        .unwrap()
        .locate(TRACEBACK)
        .unwrap();
    assert!(loc.symbols.iter().any(|s| s.path.starts_with("tests/")));

    let embed = LocateOptions {
        embedder: Some(Arc::new(HashingEmbedder::new(64))),
        ..LocateOptions::default()
    };
    let loc = Locator::build(&r, &indexer, &embed)
        .unwrap()
        .locate(TRACEBACK)
        .unwrap();
    let reasons = &loc.symbols[0].reasons;
    assert_eq!(reasons.len(), 5);
    let e = reasons
        .iter()
        .find(|x| x.component == Component::Embedding)
        .unwrap();
    assert!((e.weight - 0.2).abs() < 1e-9);
    // The hashing embedder is lexical, not semantic: it only has to keep the
    // culprit near the top here.
    assert!(
        loc.symbols
            .iter()
            .take(2)
            .any(|s| s.symbol == "py:shop.pricing.discount")
    );
}

#[test]
fn a_window_that_excludes_the_culprit_cannot_rank_it() {
    let (repo, bug) = repo();
    let r = git2::Repository::open(repo.path()).unwrap();
    let opts = LocateOptions {
        since_rev: Some(bug.clone()),
        ..LocateOptions::default()
    };
    let loc = Locator::build(&r, &Indexer::in_memory(), &opts)
        .unwrap()
        .locate(TRACEBACK)
        .unwrap();
    assert_eq!(loc.commits.len(), 1);
    assert_ne!(loc.commits[0].commit, bug);
}

#[test]
fn wrong_value_without_a_crash_in_the_faulty_function() {
    // The assertion fails in the test; the fault is two calls away.
    let (repo, _) = repo();
    let r = git2::Repository::open(repo.path()).unwrap();
    let loc = Locator::build(&r, &Indexer::in_memory(), &LocateOptions::default()).unwrap();
    let text = "tests/test_cart.py:7: in test_checkout_half\n    assert c.checkout('HALF') == 6\nE   AssertionError: assert 12.0 == 6\nFAILED tests/test_cart.py::test_checkout_half - AssertionError\n";
    let got = loc.locate(text).unwrap();
    let top3: Vec<&str> = got
        .symbols
        .iter()
        .take(3)
        .map(|s| s.symbol.as_str())
        .collect();
    assert!(top3.contains(&"py:shop.cart.Cart.checkout"), "{top3:?}");
    let n = tracelab_code_index::callgraph::neighbourhood(
        &loc.snapshot,
        loc.snapshot
            .by_qualified_name("py:shop.cart.Cart.checkout")
            .unwrap()
            .id,
        2,
    );
    let mut callees: Vec<&str> = n.callees.iter().map(|c| c.symbol.as_str()).collect();
    callees.sort_unstable();
    assert_eq!(
        callees,
        vec!["py:shop.pricing.discount", "py:shop.pricing.tax"]
    );
    assert_eq!(n.callers[0].symbol, "py:tests.test_cart.test_checkout_half");
}

#[test]
fn suspects_alone_leave_the_test_files_of_the_history_unparsed() {
    let (repo, _) = repo();
    // A later commit changes the failing test's file and the code beside it.
    repo.write(
        "tests/test_cart.py",
        &format!("{TEST}\n\ndef test_tax():\n    assert True\n"),
    );
    repo.write(
        "shop/cart.py",
        &format!("{CART}\n\ndef empty():\n    return Cart()\n"),
    );
    repo.commit("Add an empty cart");
    let r = git2::Repository::open(repo.path()).unwrap();
    let run = |test_history: bool| {
        let indexer = Indexer::in_memory();
        let opts = LocateOptions {
            test_history,
            ..LocateOptions::default()
        };
        let locator = Locator::build(&r, &indexer, &opts).unwrap();
        let touched: Vec<String> = locator
            .window()
            .iter()
            .flat_map(|c| c.touched_symbols())
            .collect();
        let located = locator.locate(TRACEBACK).unwrap();
        (located.symbols, touched, indexer.cache().parse_count())
    };
    let (all_symbols, all_touched, all_parses) = run(true);
    let (symbols, touched, parses) = run(false);
    assert!(
        all_touched.iter().any(|t| t.contains("test_tax")),
        "{all_touched:?}"
    );
    assert!(touched.iter().all(|t| !t.contains("test_")), "{touched:?}");
    assert!(
        touched.iter().any(|t| t.ends_with("cart.empty")),
        "{touched:?}"
    );
    assert!(parses < all_parses, "{parses} < {all_parses}");
    // The suspects (never test code by default) are the same.
    assert_eq!(symbols, all_symbols);
}
