//! The identifier swap, bound shift and null guard in the languages beside
//! Python, on real-looking code.

use super::*;

fn method<'a>(path: &'a str, source: &'a str, lines: (u32, u32), hot: &'a [u32]) -> Target<'a> {
    Target {
        start_line: lines.0,
        end_line: lines.1,
        ..target(path, source, hot)
    }
}

fn of(candidates: &[Candidate], operator: Operator) -> Vec<&str> {
    candidates
        .iter()
        .filter(|c| c.operator == operator)
        .map(|c| c.content.as_str())
        .collect()
}

#[test]
fn javascript_identifier_swap_reads_params_patterns_and_never_binding_sites() {
    // `rest` is read twice: a swap never leaves a name unread.
    let src = "function inRange(values, lower, upper) {\n  const [first, ...rest] = values;\n  return rest.filter((v) => v >= lower && v <= lower) || rest;\n}\n";
    let c = propose(&[target("src/range.js", src, &[3])], "", 1000);
    let swaps = of(&c, Operator::IdentifierSwap);
    let fixed = "function inRange(values, lower, upper) {\n  const [first, ...rest] = values;\n  return rest.filter((v) => v >= lower && v <= upper) || rest;\n}\n";
    assert!(swaps.contains(&fixed), "{swaps:#?}");
    // Names bound by the array pattern and the arrow's parameter are locals.
    assert!(swaps.iter().any(|s| s.contains("return first.filter")));
    // Binding sites and callees are never replaced.
    for s in &swaps {
        assert!(
            s.starts_with("function inRange(values, lower, upper) {\n  const [first, ...rest] = "),
            "{s}"
        );
        assert!(s.contains(".filter(("), "{s}");
    }
    let ts = "class Box {\n  scale(width: number, height: number): number {\n    return this.factor * width * width;\n  }\n}\n";
    let c = propose(&[method("src/box.ts", ts, (2, 4), &[3])], "", 1000);
    let swaps = of(&c, Operator::IdentifierSwap);
    assert!(
        swaps
            .iter()
            .any(|s| s.contains("this.factor * width * height")),
        "{swaps:#?}"
    );
    assert!(
        swaps.iter().all(|s| s.contains("this.factor")),
        "`this` is never swapped"
    );
}

#[test]
fn go_identifier_swap_reads_grouped_parameters_and_short_declarations() {
    let src = "package geo\n\nfunc Scale(w, h int, factor int) (int, int) {\n\tsw := w * factor\n\treturn sw, w * factor\n}\n";
    let c = propose(&[method("geo/scale.go", src, (3, 6), &[5])], "", 1000);
    let swaps = of(&c, Operator::IdentifierSwap);
    assert!(
        swaps.iter().any(|s| s.contains("return sw, h * factor")),
        "{swaps:#?}"
    );
    // `sw :=` and the callee-free left side stay as they are.
    assert!(swaps.iter().all(|s| s.contains("\tsw := ")), "{swaps:#?}");
}

#[test]
fn rust_identifier_swap_reads_patterns_and_never_self() {
    let src = "impl Rect {\n    fn area(&self, width: u32, height: u32) -> u32 {\n        let (w, _) = (width, self.depth);\n        w * width\n    }\n}\n";
    let c = propose(&[method("src/rect.rs", src, (2, 5), &[4])], "", 1000);
    let swaps = of(&c, Operator::IdentifierSwap);
    assert!(
        swaps.iter().any(|s| s.contains("        w * height\n")),
        "{swaps:#?}"
    );
    assert!(
        swaps.iter().all(|s| s.contains("let (w, _) =")),
        "{swaps:#?}"
    );
    assert!(swaps.iter().all(|s| s.contains("self.depth")), "{swaps:#?}");
}

#[test]
fn java_identifier_swap_never_touches_this_or_method_names() {
    let src = "class Rect {\n  int area(int width, int height) {\n    int w = this.width(width);\n    return w * width;\n  }\n}\n";
    let c = propose(
        &[method("src/main/java/Rect.java", src, (2, 5), &[4])],
        "",
        1000,
    );
    let swaps = of(&c, Operator::IdentifierSwap);
    assert!(
        swaps.iter().any(|s| s.contains("return w * height;")),
        "{swaps:#?}"
    );
    assert!(
        swaps.iter().all(|s| s.contains("this.width(")),
        "{swaps:#?}"
    );
}

#[test]
fn bound_shift_on_go_slices_and_rust_ranges() {
    let go = "package text\n\nfunc Window(s []byte, start, end int) []byte {\n\treturn s[start:end]\n}\n";
    let c = propose(&[method("text/window.go", go, (3, 5), &[4])], "", 1000);
    let shifts = of(&c, Operator::BoundShift);
    assert!(
        shifts.iter().any(|s| s.contains("return s[start:end + 1]")),
        "{shifts:#?}"
    );
    assert!(
        shifts.iter().any(|s| s.contains("return s[start - 1:end]")),
        "{shifts:#?}"
    );

    let rs = "pub fn window(xs: &[i32], lo: usize, hi: usize) -> i32 {\n    let mut sum = 0;\n    for i in lo..hi {\n        sum += xs[i];\n    }\n    sum + xs[lo..=hi].len() as i32\n}\n";
    let c = propose(&[target("src/window.rs", rs, &[])], "", 1000);
    let shifts = of(&c, Operator::BoundShift);
    assert!(
        shifts.iter().any(|s| s.contains("for i in lo..hi + 1 {")),
        "{shifts:#?}"
    );
    assert!(
        shifts.iter().any(|s| s.contains("xs[lo..=hi - 1]")),
        "{shifts:#?}"
    );
    // An integer bound is the off-by-one's, not shifted again.
    let literal = "fn f(xs: &[u8]) -> &[u8] {\n    &xs[0..4]\n}\n";
    let c = propose(&[target("src/f.rs", literal, &[])], "", 100);
    assert!(of(&c, Operator::BoundShift).is_empty());
    assert!(contents(&c).contains(&"fn f(xs: &[u8]) -> &[u8] {\n    &xs[0..5]\n}\n"));
}

#[test]
fn bound_shift_on_javascript_slice_and_java_substring_and_sublist() {
    let js = "function excerpt(text, start, end) {\n  return text.slice(start, end).trim() + text.substring(start, end);\n}\n";
    let c = propose(&[target("lib/excerpt.js", js, &[])], "", 1000);
    let shifts = of(&c, Operator::BoundShift);
    assert!(
        shifts
            .iter()
            .any(|s| s.contains("text.slice(start, end + 1).trim()")),
        "{shifts:#?}"
    );
    assert!(
        shifts
            .iter()
            .any(|s| s.contains("text.substring(start - 1, end)")),
        "{shifts:#?}"
    );
    // Other calls' arguments are not bounds.
    let other = "function f(a, b) {\n  return g(a, b);\n}\n";
    assert!(
        of(
            &propose(&[target("f.js", other, &[])], "", 100),
            Operator::BoundShift
        )
        .is_empty()
    );

    let java = "class Names {\n  String initials(String name, int n, java.util.List<String> parts) {\n    return name.substring(0, n) + parts.subList(1, n).size();\n  }\n}\n";
    let c = propose(
        &[method("src/main/java/Names.java", java, (2, 4), &[])],
        "",
        1000,
    );
    let shifts = of(&c, Operator::BoundShift);
    assert!(
        shifts
            .iter()
            .any(|s| s.contains("name.substring(0, n + 1)")),
        "{shifts:#?}"
    );
    assert!(
        shifts.iter().any(|s| s.contains("parts.subList(1, n - 1)")),
        "{shifts:#?}"
    );
}

#[test]
fn javascript_null_guard_and_optional_chaining_for_the_property_the_error_names() {
    let src = "function displayName(user) {\n  const profile = user.profile;\n  return profile.name.toUpperCase();\n}\n";
    let failure = "TypeError: Cannot read properties of undefined (reading 'name')\n    at displayName (/app/src/users.js:3:18)";
    let c = propose(&[target("src/users.js", src, &[3])], failure, 1000);
    let guards = of(&c, Operator::NoneGuard);
    assert!(guards.contains(&"function displayName(user) {\n  const profile = user.profile;\n  if (profile == null) { return null; }\n  return profile.name.toUpperCase();\n}\n"), "{guards:#?}");
    assert!(guards.contains(&"function displayName(user) {\n  const profile = user.profile;\n  return profile?.name.toUpperCase();\n}\n"), "{guards:#?}");
    assert_eq!(
        guards.len(),
        2,
        "only the access the error names: {guards:#?}"
    );
    assert!(
        of(
            &propose(&[target("src/users.js", src, &[3])], "", 1000),
            Operator::NoneGuard
        )
        .is_empty()
    );
}

#[test]
fn java_null_guard_returns_the_methods_default_for_the_object_the_npe_names() {
    let src = "class Users {\n  static String clean(String name, String fallback) {\n    String trimmed = name.trim();\n    return trimmed.isEmpty() ? fallback.trim() : trimmed;\n  }\n\n  static int count(java.util.List<String> xs) {\n    return xs.size();\n  }\n}\n";
    let failure = "java.lang.NullPointerException: Cannot invoke \"String.trim()\" because \"name\" is null\n\tat Users.clean(Users.java:3)";
    let path = "src/main/java/Users.java";
    let c = propose(&[method(path, src, (2, 5), &[3])], failure, 1000);
    let guards = of(&c, Operator::NoneGuard);
    assert_eq!(
        guards.len(),
        1,
        "only `name.trim()`, not `fallback.trim()`: {guards:#?}"
    );
    assert!(guards[0].contains("  static String clean(String name, String fallback) {\n    if (name == null) { return null; }\n    String trimmed = name.trim();\n"), "{}", guards[0]);
    // Compiled without names: every `size()` receiver is guarded, with the
    // zero of an int method.
    let failure = "Exception in thread \"main\" java.lang.NullPointerException: Cannot invoke \"java.util.List.size()\" because \"<local0>\" is null";
    let c = propose(&[method(path, src, (7, 9), &[8])], failure, 1000);
    let guards = of(&c, Operator::NoneGuard);
    assert_eq!(guards.len(), 1, "{guards:#?}");
    assert!(
        guards[0].contains("    if (xs == null) { return 0; }\n    return xs.size();"),
        "{}",
        guards[0]
    );
}

#[test]
fn go_nil_guard_on_the_line_the_panic_names_returns_zero_values() {
    let src = "package store\n\ntype Item struct{ Name string }\n\nfunc NameOf(items map[string]*Item, key string) (string, error) {\n\titem := items[key]\n\treturn item.Name, nil\n}\n";
    let failure = "panic: runtime error: invalid memory address or nil pointer dereference [recovered]\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x5e1d2f]\n\ngoroutine 19 [running]:\nexample.com/store.NameOf(...)\n\t/src/store/store.go:7";
    let t = method("store/store.go", src, (5, 8), &[7]);
    let c = propose(std::slice::from_ref(&t), failure, 1000);
    let guards = of(&c, Operator::NoneGuard);
    assert_eq!(
        guards,
        [
            "package store\n\ntype Item struct{ Name string }\n\nfunc NameOf(items map[string]*Item, key string) (string, error) {\n\titem := items[key]\n\tif item == nil { return \"\", nil }\n\treturn item.Name, nil\n}\n"
        ]
    );
    // Not on a line the panic names, or not a nil dereference: no guard.
    let elsewhere = method("store/store.go", src, (5, 8), &[6]);
    assert!(of(&propose(&[elsewhere], failure, 1000), Operator::NoneGuard).is_empty());
    assert!(
        of(
            &propose(&[t], "--- FAIL: TestNameOf", 1000),
            Operator::NoneGuard
        )
        .is_empty()
    );
}

#[test]
fn rust_has_no_null_to_guard() {
    let src = "fn first_name(names: &[String]) -> String {\n    let first = names.get(0);\n    first.unwrap().to_uppercase()\n}\n";
    let failure = "thread 'tests::first' panicked at src/names.rs:3:11:\ncalled `Option::unwrap()` on a `None` value";
    let c = propose(&[target("src/names.rs", src, &[3])], failure, 1000);
    assert!(!c.is_empty());
    assert!(of(&c, Operator::NoneGuard).is_empty());
}
