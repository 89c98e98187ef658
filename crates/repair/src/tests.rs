use super::*;

fn target<'a>(path: &'a str, source: &'a str, hot: &'a [u32]) -> Target<'a> {
    let lines = source.lines().count() as u32;
    Target {
        path,
        source,
        symbol: "f",
        start_line: 1,
        end_line: lines,
        score: 1.0,
        hot_lines: hot,
    }
}

fn contents(candidates: &[Candidate]) -> Vec<&str> {
    candidates.iter().map(|c| c.content.as_str()).collect()
}

fn position(candidates: &[Candidate], fixed: &str) -> Option<usize> {
    candidates.iter().position(|c| c.content == fixed)
}

#[test]
fn python_comparison_off_by_one_and_bounds() {
    let src = "def last_items(xs, n):\n    if len(xs) < n:\n        return xs\n    return xs[len(xs) - n - 1:]\n";
    let c = propose(&[target("lib/items.py", src, &[4])], "", 500);
    let all = contents(&c);
    assert!(all.contains(&"def last_items(xs, n):\n    if len(xs) <= n:\n        return xs\n    return xs[len(xs) - n - 1:]\n"));
    let fixed = "def last_items(xs, n):\n    if len(xs) < n:\n        return xs\n    return xs[len(xs) - n - 0:]\n";
    let at = position(&c, fixed).expect("off-by-one on the slice literal");
    // The failure names line 4: its edits come before those of line 2.
    let first_line_2 = c.iter().position(|c| c.line == 2).unwrap();
    assert!(at < first_line_2, "{at} vs {first_line_2}");
    assert!(all.contains(&"def last_items(xs, n):\n    if len(xs) < n:\n        return xs\n    return xs[(len(xs) - n - 1) + 1:]\n"));
    for candidate in &c {
        assert!(parses_cleanly(&candidate.path, &candidate.content));
        assert_ne!(candidate.content, src);
    }
}

#[test]
fn python_operators_in_and_is_and_boolean() {
    let src =
        "def f(a, b, xs):\n    if a is None or b in xs:\n        return a + b\n    return not a\n";
    let c = propose(&[target("m.py", src, &[])], "", 500);
    let all = contents(&c);
    for fixed in [
        "def f(a, b, xs):\n    if a is not None or b in xs:\n        return a + b\n    return not a\n",
        "def f(a, b, xs):\n    if a is None and b in xs:\n        return a + b\n    return not a\n",
        "def f(a, b, xs):\n    if a is None or b not in xs:\n        return a + b\n    return not a\n",
        "def f(a, b, xs):\n    if a is None or b in xs:\n        return a - b\n    return not a\n",
        "def f(a, b, xs):\n    if not (a is None or b in xs):\n        return a + b\n    return not a\n",
    ] {
        assert!(all.contains(&fixed), "missing:\n{fixed}");
    }
}

#[test]
fn one_operand_of_a_condition_chain_is_negated() {
    // idna's UTS 46 remapping: `std3_rules` should have been `not std3_rules`
    // in one clause of a nested chain.
    let src = "def f(status, std3_rules, r):\n    if status == 'V' or (status == '3' and std3_rules and r is None):\n        return 1\n    return 0\n";
    let c = propose(&[target("m.py", src, &[])], "", 500);
    let all = contents(&c);
    for fixed in [
        "def f(status, std3_rules, r):\n    if status == 'V' or (status == '3' and not std3_rules and r is None):\n        return 1\n    return 0\n",
        "def f(status, std3_rules, r):\n    if not (status == 'V') or (status == '3' and std3_rules and r is None):\n        return 1\n    return 0\n",
    ] {
        assert!(all.contains(&fixed), "missing:\n{fixed}");
    }
    // A negated operand loses its negation; a lone condition is negated
    // whole only (no duplicate).
    let src = "def g(a, b):\n    while not a and b:\n        a = b\n    if a:\n        return a\n";
    let c = propose(&[target("m.py", src, &[])], "", 500);
    assert!(contents(&c).contains(
        &"def g(a, b):\n    while a and b:\n        a = b\n    if a:\n        return a\n"
    ));
    let whole: Vec<&Candidate> = c
        .iter()
        .filter(|c| c.operator == Operator::NegateCondition && c.line == 4)
        .collect();
    assert_eq!(whole.len(), 1, "{whole:?}");
    // C-like chains too.
    let js = "function h(a, b) {\n  if (a && !b) {\n    return 1;\n  }\n  return 0;\n}\n";
    let c = propose(&[target("m.js", js, &[])], "", 500);
    let all = contents(&c);
    assert!(
        all.contains(
            &"function h(a, b) {\n  if (!a && !b) {\n    return 1;\n  }\n  return 0;\n}\n"
        )
    );
    assert!(
        all.contains(&"function h(a, b) {\n  if (a && b) {\n    return 1;\n  }\n  return 0;\n}\n")
    );
    for candidate in &c {
        assert!(parses_cleanly(&candidate.path, &candidate.content));
    }
}

#[test]
fn python_identifier_swap_prefers_close_names_and_never_self() {
    let src = "class C:\n    def area(self, width, height):\n        widths = width\n        return width * width\n";
    let t = Target {
        start_line: 2,
        end_line: 4,
        ..target("shapes.py", src, &[4])
    };
    let c = propose(&[t], "", 500);
    let fixed = "class C:\n    def area(self, width, height):\n        widths = width\n        return width * height\n";
    assert!(position(&c, fixed).is_some());
    assert!(
        c.iter()
            .filter(|c| c.operator == Operator::IdentifierSwap)
            .all(|c| !c.description.contains("`self`"))
    );
}

#[test]
fn python_identifier_swap_never_repeats_a_sibling_nor_leaves_a_name_unread() {
    // Seen on real bugs: `isinstance(other, kinds)` → `isinstance(kinds, kinds)`
    // (always true) and `return info` → `return version` (the parsed value
    // computed for nothing) passed the failing test and broke untested behaviour.
    let src = "def compare(version, other, kinds):\n    info = parse(version, kinds)\n    if not isinstance(other, kinds):\n        raise TypeError(other)\n    return info\n";
    let c = propose(&[target("semver.py", src, &[3, 5])], "", 500);
    let swaps: Vec<&str> = c
        .iter()
        .filter(|c| c.operator == Operator::IdentifierSwap)
        .map(|c| c.description.as_str())
        .collect();
    assert!(!swaps.is_empty(), "other swaps remain");
    assert!(
        !c.iter()
            .any(|c| c.content.contains("isinstance(kinds, kinds)")),
        "an argument made the same as its sibling: {swaps:?}"
    );
    assert!(
        !c.iter().any(|c| c.content.contains("parse(kinds, kinds)")),
        "{swaps:?}"
    );
    assert!(
        !swaps.iter().any(|d| d.starts_with("`info` →")),
        "`info` is read once: swapping it away leaves it unread: {swaps:?}"
    );
    // Seen on toolz's `nth`: `seq[n]` → `n[n]` raises TypeError, so the
    // `except TypeError` path ran for every input and the tests passed.
    let src = "def nth(n, seq, default):\n    try:\n        return seq[n]\n    except TypeError:\n        return next(islice(seq, n, None), default or default)\n";
    let c = propose(&[target("toolz.py", src, &[3])], "", 500);
    assert!(
        !c.iter().any(|c| c.content.contains("n[n]")),
        "a subscript indexed by itself"
    );
    assert!(
        c.iter()
            .any(|c| c.operator == Operator::IdentifierSwap && c.line == 3),
        "other swaps on the line remain (`default[n]`, `seq[default]`)"
    );
    // A name read twice may still be swapped (the usual wrong-variable fix).
    assert!(
        swaps.iter().any(|d| d.starts_with("`other` →")),
        "{swaps:?}"
    );
}

#[test]
fn python_none_guard_before_the_named_attribute() {
    let src = "def name_of(user):\n    profile = user.profile\n    return profile.name.title()\n";
    let failure = "AttributeError: 'NoneType' object has no attribute 'name'";
    let c = propose(&[target("users.py", src, &[3])], failure, 500);
    let fixed = "def name_of(user):\n    profile = user.profile\n    if profile is None:\n        return None\n    return profile.name.title()\n";
    let at = position(&c, fixed).expect("a None guard");
    assert_eq!(c[at].operator, Operator::NoneGuard);
    assert!(
        propose(&[target("users.py", src, &[3])], "", 500)
            .iter()
            .all(|c| c.operator != Operator::NoneGuard)
    );
}

#[test]
fn python_range_end_and_argument_swap() {
    let src = "def total(xs, n):\n    s = 0\n    for i in range(1, n):\n        s += pow(xs[i], 2)\n    return s\n";
    let c = propose(&[target("sum.py", src, &[])], "", 1000);
    let all = contents(&c);
    assert!(all.contains(&"def total(xs, n):\n    s = 0\n    for i in range(1, n + 1):\n        s += pow(xs[i], 2)\n    return s\n"));
    assert!(all.contains(&"def total(xs, n):\n    s = 0\n    for i in range(0, n):\n        s += pow(xs[i], 2)\n    return s\n"));
    assert!(all.contains(&"def total(xs, n):\n    s = 0\n    for i in range(n, 1):\n        s += pow(xs[i], 2)\n    return s\n"));
    assert!(all.contains(&"def total(xs, n):\n    s = 0\n    for i in range(1, n):\n        s -= pow(xs[i], 2)\n    return s\n"));
}

#[test]
fn edits_stay_inside_the_suspect_function() {
    let src = "def a(x):\n    return x < 1\n\n\ndef b(y):\n    return y > 2\n";
    let t = Target {
        start_line: 5,
        end_line: 6,
        ..target("two.py", src, &[])
    };
    let c = propose(&[t], "", 500);
    assert!(!c.is_empty());
    assert!(c.iter().all(|c| c.line >= 5), "{c:?}");
}

#[test]
fn higher_scored_suspects_come_first_and_limit_holds() {
    let src = "def f(x):\n    return x < 1\n";
    let mut low = target("low.py", src, &[]);
    low.score = 0.1;
    let high = target("high.py", src, &[]);
    let c = propose(&[low, high], "", 3);
    assert_eq!(c.len(), 3);
    assert!(c.iter().all(|c| c.path == "high.py"));
}

#[test]
fn negation_is_removed_rather_than_doubled() {
    let src = "def f(ok):\n    if not ok:\n        return 1\n    return 2\n";
    let c = propose(&[target("n.py", src, &[])], "", 500);
    assert!(contents(&c).contains(&"def f(ok):\n    if ok:\n        return 1\n    return 2\n"));
    assert!(!contents(&c).iter().any(|s| s.contains("not (not ok)")));
}

#[test]
fn other_languages_get_the_operator_templates() {
    let js = "function within(a, n) {\n  if (a.length > n && n != 0) { return a[n - 1]; }\n  return null;\n}\n";
    let c = propose(&[target("src/w.js", js, &[])], "", 500);
    let all = contents(&c);
    assert!(all.iter().any(|s| s.contains("a.length >= n &&")));
    assert!(
        all.iter()
            .any(|s| s.contains("n != 0) ||") || s.contains("|| n != 0"))
    );
    assert!(
        all.iter()
            .any(|s| s.contains("a[n - 0]") || s.contains("a[n - 2]"))
    );
    assert!(
        all.iter()
            .any(|s| s.contains("if (!(a.length > n && n != 0))"))
    );

    let go = "package m\n\nfunc Clamp(x int, max int) int {\n\tif x > max {\n\t\treturn max\n\t}\n\treturn x\n}\n";
    let t = Target {
        start_line: 3,
        end_line: 8,
        ..target("m.go", go, &[])
    };
    assert!(
        contents(&propose(&[t], "", 500))
            .iter()
            .any(|s| s.contains("if x >= max {"))
    );

    let rs = "fn mid(lo: usize, hi: usize) -> usize {\n    (lo + hi) / 2 + 1\n}\n";
    let c = propose(&[target("src/lib.rs", rs, &[])], "", 500);
    assert!(
        contents(&c)
            .iter()
            .any(|s| s.contains("(lo + hi) / 2 + 0") || s.contains("(lo + hi) / 2 - 1"))
    );

    let java = "class A {\n  int f(int a, int b) {\n    return Math.max(a, b) - 1;\n  }\n}\n";
    let t = Target {
        start_line: 2,
        end_line: 4,
        ..target("src/main/java/A.java", java, &[])
    };
    let c = propose(&[t], "", 500);
    assert!(contents(&c).iter().any(|s| s.contains("Math.max(b, a)")));
    assert!(
        contents(&c)
            .iter()
            .any(|s| s.contains("Math.max(a, b) + 1"))
    );
}

#[test]
fn a_file_that_does_not_parse_or_an_unknown_language_yields_nothing_silly() {
    assert!(propose(&[target("notes.txt", "x < 1\n", &[])], "", 10).is_empty());
    let broken = "def f(:\n    return 1 < 2\n";
    assert!(propose(&[target("b.py", broken, &[])], "", 50).is_empty());
    let empty = Target {
        start_line: 40,
        end_line: 50,
        ..target("e.py", "def f():\n    return 1\n", &[])
    };
    assert!(propose(&[empty], "", 10).is_empty());
}

#[test]
fn none_attributes_reads_each_name_once() {
    let text = "AttributeError: 'NoneType' object has no attribute 'name'\n... 'NoneType' object has no attribute 'name' ... 'NoneType' object has no attribute 'id'";
    assert_eq!(none_attributes(text), vec!["name", "id"]);
    assert!(none_attributes("'NoneType' object has no attribute '").is_empty());
}

fn of_operator(candidates: &[Candidate], operator: Operator) -> Vec<&str> {
    candidates
        .iter()
        .filter(|c| c.operator == operator)
        .map(|c| c.content.as_str())
        .collect()
}

#[test]
fn python_index_guard_returns_early_or_checks_the_length_where_the_error_names() {
    // A generator: the early return is a bare `return` (it yields nothing).
    let src = "def spread(xs):\n    order = sorted(xs)\n    first, rest = order[0], order[1:]\n    yield first\n";
    let failure = "    first, rest = order[0], order[1:]\nIndexError: list index out of range";
    let c = propose(&[target("m.py", src, &[3])], failure, 500);
    let fixed = "def spread(xs):\n    order = sorted(xs)\n    if not order:\n        return\n    first, rest = order[0], order[1:]\n    yield first\n";
    let at = position(&c, fixed).expect("an early return when `order` is empty");
    assert_eq!(c[at].operator, Operator::IndexGuard);
    // Without the error, or on a line the traceback does not name, none.
    assert!(
        of_operator(
            &propose(&[target("m.py", src, &[3])], "", 500),
            Operator::IndexGuard
        )
        .is_empty()
    );
    assert!(
        of_operator(
            &propose(&[target("m.py", src, &[2])], failure, 500),
            Operator::IndexGuard
        )
        .is_empty()
    );

    // The index read under a condition: the length check joins the
    // condition around it (not the one that reads the index itself, whose
    // `elif` would still read it).
    let src = "def base_of(s):\n    base = 10\n    if s[0] == '0':\n        if s[1] in 'xX':\n            base = 16\n        elif s[1] in 'oO':\n            base = 8\n    return base\n";
    let failure = "IndexError: string index out of range";
    let c = propose(&[target("p.py", src, &[4])], failure, 500);
    let guards = of_operator(&c, Operator::IndexGuard);
    let outer = "def base_of(s):\n    base = 10\n    if s[0] == '0' and len(s) > 1:\n        if s[1] in 'xX':\n            base = 16\n        elif s[1] in 'oO':\n            base = 8\n    return base\n";
    assert!(guards.contains(&outer), "{guards:#?}");
    assert!(guards.contains(&"def base_of(s):\n    base = 10\n    if s[0] == '0':\n        if len(s) > 1 and s[1] in 'xX':\n            base = 16\n        elif s[1] in 'oO':\n            base = 8\n    return base\n"));
    // A function returns None early; `s[0]` is on another line.
    assert!(guards.contains(&"def base_of(s):\n    base = 10\n    if s[0] == '0':\n        if len(s) <= 1:\n            return None\n        if s[1] in 'xX':\n            base = 16\n        elif s[1] in 'oO':\n            base = 8\n    return base\n"));
    assert_eq!(guards.len(), 3, "{guards:#?}");

    // A write out of range is fixed by appending, never by skipping it.
    let src = "def reset(lists, items):\n    del lists[:]\n    lists[0] = items\n";
    let failure = "IndexError: list assignment index out of range";
    assert!(
        of_operator(
            &propose(&[target("l.py", src, &[3])], failure, 500),
            Operator::IndexGuard
        )
        .is_empty()
    );
}

#[test]
fn python_init_local_for_the_name_the_unbound_local_error_names() {
    let src = "def update(self, src, **kw):\n    \"\"\"Update.\"\"\"\n    if isinstance(src, dict):\n        pairs = list(src.items())\n    pairs.extend(kw.items())\n    return pairs\n";
    let t = target("d.py", src, &[5]);
    for failure in [
        "UnboundLocalError: cannot access local variable 'pairs' where it is not associated with a value",
        "UnboundLocalError: local variable 'pairs' referenced before assignment",
    ] {
        let c = propose(std::slice::from_ref(&t), failure, 500);
        let fixed = "def update(self, src, **kw):\n    \"\"\"Update.\"\"\"\n    pairs = []\n    if isinstance(src, dict):\n        pairs = list(src.items())\n    pairs.extend(kw.items())\n    return pairs\n";
        let at = position(&c, fixed).expect("`pairs = []` after the docstring");
        assert_eq!(c[at].operator, Operator::InitLocal);
    }
    // A name with no telling use starts as None; a parameter is never
    // re-initialised (the error cannot be about it).
    let src = "def pick(flag, default):\n    if flag:\n        found = default\n    return found\n";
    let failure = "UnboundLocalError: cannot access local variable 'found' where it is not associated with a value\nUnboundLocalError: local variable 'default' referenced before assignment";
    let inits = of_operator(
        &propose(&[target("p.py", src, &[4])], failure, 500),
        Operator::InitLocal,
    )
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    assert_eq!(
        inits,
        vec![
            "def pick(flag, default):\n    found = None\n    if flag:\n        found = default\n    return found\n"
        ]
    );
    assert!(
        of_operator(
            &propose(&[target("p.py", src, &[4])], "", 500),
            Operator::InitLocal
        )
        .is_empty()
    );
}

#[test]
fn python_unwrap_a_conversion_builtin_unless_a_local_shadows_it() {
    let src = "def bump(version, part):\n    if part == 'major':\n        return str(version.bump(part))\n    return n * int(a + b)\n";
    let c = propose(&[target("v.py", src, &[])], "", 500);
    let unwraps = of_operator(&c, Operator::UnwrapCall);
    assert!(unwraps.contains(&"def bump(version, part):\n    if part == 'major':\n        return version.bump(part)\n    return n * int(a + b)\n"));
    // Inside an expression the argument keeps its precedence.
    assert!(unwraps.contains(&"def bump(version, part):\n    if part == 'major':\n        return str(version.bump(part))\n    return n * (a + b)\n"));
    assert_eq!(unwraps.len(), 2);
    let shadowed = "def f(str, x):\n    return str(x)\n";
    assert!(
        of_operator(
            &propose(&[target("s.py", shadowed, &[])], "", 500),
            Operator::UnwrapCall
        )
        .is_empty()
    );
    let two = "def g(x):\n    return int(x, 16) + str(x, encoding='ascii')\n";
    assert!(
        of_operator(
            &propose(&[target("s.py", two, &[])], "", 500),
            Operator::UnwrapCall
        )
        .is_empty()
    );
}

#[test]
fn python_materialise_a_value_iterated_more_than_once() {
    let src = "def merge_with(fn, *dicts):\n    if len(dicts) == 1:\n        dicts = dicts[0]\n    keys = set(k for d in dicts for k in d)\n    return {k: fn([d[k] for d in dicts if k in d]) for k in keys}\n";
    let c = propose(&[target("t.py", src, &[])], "", 500);
    let wraps = of_operator(&c, Operator::WrapCall);
    assert_eq!(
        wraps,
        vec![
            "def merge_with(fn, *dicts):\n    if len(dicts) == 1:\n        dicts = list(dicts[0])\n    keys = set(k for d in dicts for k in d)\n    return {k: fn([d[k] for d in dicts if k in d]) for k in keys}\n"
        ],
        "`*dicts` itself is a tuple and `keys` is iterated once"
    );
    // Read inside a nested function: every call iterates it again.
    let src = "def juxt(*funcs):\n    if len(funcs) == 1:\n        funcs = funcs[0]\n    def inner(x):\n        return tuple(f(x) for f in funcs)\n    return inner\n";
    let wraps = of_operator(
        &propose(&[target("t.py", src, &[])], "", 500),
        Operator::WrapCall,
    )
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    assert_eq!(
        wraps,
        vec![src.replace("funcs = funcs[0]", "funcs = list(funcs[0])")]
    );
    // A parameter iterated twice is made a list first; a list display or a
    // `sorted()` value needs nothing, and one pass needs nothing.
    let src = "def spread(items):\n    \"\"\"Doc.\"\"\"\n    low = min(items)\n    order = sorted(items)\n    for x in order:\n        low += x\n    return low, max(items)\n";
    let wraps = of_operator(
        &propose(&[target("t.py", src, &[])], "", 500),
        Operator::WrapCall,
    )
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    assert_eq!(
        wraps,
        vec![
            "def spread(items):\n    \"\"\"Doc.\"\"\"\n    items = list(items)\n    low = min(items)\n    order = sorted(items)\n    for x in order:\n        low += x\n    return low, max(items)\n"
        ]
    );
}

#[test]
fn python_operand_wrapped_like_its_sibling_on_the_type_error_line() {
    let src = "class Signer:\n    def sign(self, value):\n        return value + want_bytes(self.sep) + self.signature(value)\n";
    let t = Target {
        start_line: 2,
        end_line: 3,
        ..target("s.py", src, &[3])
    };
    let failure = "TypeError: can only concatenate str (not \"bytes\") to str";
    let wraps = of_operator(
        &propose(std::slice::from_ref(&t), failure, 500),
        Operator::WrapCall,
    )
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    assert_eq!(
        wraps,
        vec![src.replace("return value +", "return want_bytes(value) +")]
    );
    // Not without the TypeError, nor off the line it names.
    assert!(
        of_operator(
            &propose(std::slice::from_ref(&t), "AssertionError", 500),
            Operator::WrapCall
        )
        .is_empty()
    );
    let elsewhere = Target {
        hot_lines: &[2],
        ..t.clone()
    };
    assert!(of_operator(&propose(&[elsewhere], failure, 500), Operator::WrapCall).is_empty());
    // Beside a string literal: `str()`; never beside a bytes literal.
    let src = "def part(path):\n    return path + '.part', path + b'~'\n";
    let failure = "TypeError: unsupported operand type(s) for +: 'PosixPath' and 'str'";
    let wraps = of_operator(
        &propose(&[target("f.py", src, &[2])], failure, 500),
        Operator::WrapCall,
    )
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    assert_eq!(
        wraps,
        vec!["def part(path):\n    return str(path) + '.part', path + b'~'\n"]
    );
}

#[test]
fn python_format_operand_made_a_one_tuple_when_formatting_fails() {
    let src = "def message(key):\n    return \"Key '%s' error:\" % key\n";
    let failure = "TypeError: not enough arguments for format string";
    let c = propose(&[target("e.py", src, &[2])], failure, 500);
    assert!(
        of_operator(&c, Operator::WrapCall)
            .contains(&"def message(key):\n    return \"Key '%s' error:\" % (key,)\n")
    );
    assert!(
        of_operator(
            &propose(&[target("e.py", src, &[2])], "TypeError: boom", 500),
            Operator::WrapCall
        )
        .is_empty()
    );
}

#[test]
fn the_python_templates_stay_out_of_other_languages() {
    let js = "function f(xs) {\n  return String(xs[0]) + '.part';\n}\n";
    let failure = "TypeError: x\nIndexError: list index out of range";
    let c = propose(&[target("f.js", js, &[2])], failure, 500);
    for operator in [
        Operator::IndexGuard,
        Operator::InitLocal,
        Operator::WrapCall,
        Operator::UnwrapCall,
    ] {
        assert!(of_operator(&c, operator).is_empty(), "{operator:?}");
    }
}

mod languages;
