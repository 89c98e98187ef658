//! Qualified names: the per-language scheme that turns a repository path and
//! a file-local name into a stable, human-readable identifier.
//!
//! | language | scheme | example |
//! |---|---|---|
//! | Python | `py:<module>.<local>`; module from the path, a leading `src/` or `lib/` dropped, `__init__` = package | `py:shop.cart.Cart.total` |
//! | Rust | `rs:<crate>::<modules>::<local>`; crate = directory holding `src/` (`crate` at the root), `lib.rs`/`main.rs`/`mod.rs` name their directory | `rs:billing::invoice::Invoice::total` |
//! | JavaScript / TypeScript | `js:<path without extension>#<local>` | `ts:src/cart#Cart.total` |
//! | Go | `go:<package directory>.<local>`; methods are `Type.Method` | `go:internal/store.Store.Get` |
//! | Java | `java:<package>.<local>` (package from the file's `package` line) | `java:com.shop.Cart.total` |

use crate::lang::Language;
use crate::model::ParsedFile;

/// The module part of qualified names for a file at `path`.
pub fn module_of(language: Language, path: &str, parsed: &ParsedFile) -> String {
    match language {
        Language::Python => python_module(path),
        Language::Rust => rust_module(path),
        Language::Javascript | Language::Typescript => strip_ext(path).to_string(),
        Language::Go => match path.rsplit_once('/') {
            Some((dir, _)) => dir.to_string(),
            None => parsed.module_hint.clone().unwrap_or_else(|| "main".into()),
        },
        Language::Java => parsed.module_hint.clone().unwrap_or_default(),
        // Never indexed (no grammar): the path is the only name there is.
        Language::C | Language::Unknown => strip_ext(path).to_string(),
    }
}

/// `module` + `local` joined per the scheme above.
pub fn qualified_name(language: Language, module: &str, local: &str) -> String {
    let prefix = language.prefix();
    match language {
        Language::Rust => format!("{prefix}:{module}::{local}"),
        Language::Javascript | Language::Typescript => format!("{prefix}:{module}#{local}"),
        _ if module.is_empty() => format!("{prefix}:{local}"),
        _ => format!("{prefix}:{module}.{local}"),
    }
}

fn strip_ext(path: &str) -> &str {
    match path.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem,
        _ => path,
    }
}

/// `src/shop/cart.py` → `shop.cart`; `shop/__init__.py` → `shop`.
pub fn python_module(path: &str) -> String {
    let stem = strip_ext(path);
    let stem = stem
        .strip_prefix("src/")
        .or_else(|| stem.strip_prefix("lib/"))
        .unwrap_or(stem);
    let stem = stem.strip_suffix("/__init__").unwrap_or(stem);
    stem.replace('/', ".")
}

/// `crates/billing-core/src/invoice/mod.rs` → `billing_core::invoice`.
pub fn rust_module(path: &str) -> String {
    let parts: Vec<&str> = strip_ext(path).split('/').collect();
    let src = parts.iter().rposition(|p| *p == "src");
    let (krate, rest) = match src {
        Some(0) | None => ("crate".to_string(), &parts[src.map_or(0, |_| 1)..]),
        Some(i) => (parts[i - 1].replace('-', "_"), &parts[i + 1..]),
    };
    let mut out = krate;
    for (i, p) in rest.iter().enumerate() {
        let last = i + 1 == rest.len();
        if last && matches!(*p, "lib" | "main" | "mod") {
            continue;
        }
        out.push_str("::");
        out.push_str(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_modules() {
        assert_eq!(python_module("src/shop/cart.py"), "shop.cart");
        assert_eq!(python_module("shop/__init__.py"), "shop");
        assert_eq!(python_module("app.py"), "app");
    }

    #[test]
    fn rust_modules() {
        assert_eq!(rust_module("src/lib.rs"), "crate");
        assert_eq!(rust_module("src/a/b.rs"), "crate::a::b");
        assert_eq!(
            rust_module("crates/billing-core/src/invoice/mod.rs"),
            "billing_core::invoice"
        );
        assert_eq!(rust_module("build.rs"), "crate::build");
    }
}
