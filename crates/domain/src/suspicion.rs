//! Which commits of a culprit search the failure points at: a prior for
//! [`crate::bisect::CulpritSearch::with_prior`].
//!
//! The failure names code — the functions of its stack frames, the functions
//! the failing test calls, the test's own name — and each candidate commit
//! changed code. A commit whose changes name the same things (in the
//! function a hunk sits in, or on its changed lines) is more likely the
//! culprit, as in Microsoft's Orca ("Differential bug localization for
//! large-scale services", OSDI 2018), which ranks commits by the overlap of
//! their diffs with the symptom's terms. Terms are weighed by how directly
//! the evidence names them and by how rare they are among the candidates'
//! changes (a term every commit touches says nothing).
//!
//! The prior changes only the order of the probes, never the answer: the
//! search still ends where a good revision's child is bad.

use crate::identifier::split_identifier;
use std::collections::{BTreeMap, BTreeSet};

/// How strongly the evidence names a term.
pub mod strength {
    /// A function of an application stack frame outside the tests.
    pub const FRAME_FUNCTION: f64 = 1.0;
    /// A function or method the failing test calls.
    pub const TEST_CALLEE: f64 = 0.6;
    /// The failing test's own name, without its `test` prefix.
    pub const TEST_NAME: f64 = 0.4;
    /// The module (file stem) of an application frame.
    pub const FRAME_MODULE: f64 = 0.3;
}

/// A match in the function a hunk sits in counts this many times a match on
/// a changed line only: the hunk then changed the named function's body.
const IN_FUNCTION: f64 = 3.0;

/// A match on one word of the name of the function a hunk sits in
/// (`greater` of `matches_greater`) counts this share of a match of the
/// whole name; a failing test
/// named `test_greater_than` names the words `greater` and `than` with
/// this share of its strength. Identifiers split into words is how
/// IR-based bug localisation matches a report's terms to code (BugLocator,
/// Zhou et al., ICSE 2012).
const WORD_SHARE: f64 = 0.5;

/// The share of the prior mass the evidence may move (the rest is spread
/// evenly, so a misleading failure costs the search about one round).
const EVIDENCE_SHARE: f64 = 2.0 / 3.0;

/// The terms the failure points at, each with its strength (lowercase
/// identifiers).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Focus {
    terms: BTreeMap<String, f64>,
}

impl Focus {
    /// Adds `name` with `strength`, keeping the strongest mention. Names
    /// shorter than 3 characters or that are keywords say nothing.
    /// An identifier of several words also adds each word, at
    /// [`WORD_SHARE`] of `strength`.
    pub fn add(&mut self, name: &str, strength: f64) {
        let name = name.trim();
        for word in words(name) {
            self.add_term(word, strength * WORD_SHARE);
        }
        self.add_term(name.to_ascii_lowercase(), strength);
    }

    fn add_term(&mut self, name: String, strength: f64) {
        if name.len() < 3 || is_noise(&name) || !is_identifier(&name) {
            return;
        }
        let entry = self.terms.entry(name).or_insert(0.0);
        *entry = entry.max(strength);
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    pub fn terms(&self) -> impl Iterator<Item = (&str, f64)> {
        self.terms.iter().map(|(t, s)| (t.as_str(), *s))
    }
}

/// Each hop along the calls halves a term's strength.
const PER_CALL: f64 = 0.5;

/// Calls followed from a failing test's callees and the frames' functions.
const CALL_DEPTH: usize = 2;

/// The focus with what its functions call, [`CALL_DEPTH`] calls deep:
/// a test calls the API, the API calls the function that broke. `calls`
/// maps a function name (lowercase) to the names its definitions call, for
/// the code the candidates changed; only names defined there are added (a
/// builtin says nothing), each at half its caller's strength per hop.
pub fn through_calls(focus: &Focus, calls: &BTreeMap<String, Vec<String>>) -> Focus {
    let mut out = focus.clone();
    let mut frontier: Vec<(String, f64)> = focus.terms().map(|(t, s)| (t.to_string(), s)).collect();
    for _ in 0..CALL_DEPTH {
        let mut next = Vec::new();
        for (term, strength) in &frontier {
            for callee in calls.get(term).into_iter().flatten() {
                let callee = callee.to_ascii_lowercase();
                if callee == *term || !calls.contains_key(&callee) {
                    continue;
                }
                let s = strength * PER_CALL;
                if out.terms.get(&callee).is_none_or(|have| *have < s) {
                    out.add(&callee, s);
                    next.push((callee, s));
                }
            }
        }
        frontier = next;
    }
    out
}

/// What one candidate commit changed outside test files.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Change {
    /// Identifiers of the functions its hunks sit in (the hunk headers).
    pub in_functions: BTreeSet<String>,
    /// Identifiers on its added and removed lines, and its files' stems.
    pub on_lines: BTreeSet<String>,
    /// The words of identifiers of several words in `in_functions`
    /// (`matches_greater` → `matches`, `greater`). Changed lines give no
    /// words: they name every type and call they touch (`VersionReq` would
    /// match a test helper `req` in commits that only use the type).
    pub function_words: BTreeSet<String>,
    /// Added plus removed lines.
    pub lines: usize,
}

impl Change {
    /// Records the identifiers of a hunk's function context.
    pub fn add_function_context(&mut self, header: &str) {
        self.in_functions.extend(identifiers(header));
        self.function_words.extend(words(header));
    }

    /// The functions its hunks really sit in (parsed), replacing what the
    /// hunk headers said.
    pub fn place_in_functions<'a>(&mut self, names: impl IntoIterator<Item = &'a str>) {
        self.in_functions.clear();
        self.function_words.clear();
        for name in names {
            self.add_function_context(name);
        }
    }

    /// Records a changed line.
    pub fn add_line(&mut self, line: &str) {
        self.on_lines.extend(identifiers(line));
        self.lines += 1;
    }

    /// Records a changed file: its stem counts as a term on its lines
    /// (`more_itertools/more.py` names `more`).
    pub fn add_file(&mut self, path: &str) {
        let name = path.rsplit('/').next().unwrap_or(path);
        let stem = name.split('.').next().unwrap_or(name);
        self.on_lines.extend(identifiers(stem));
    }

    fn mentions(&self, term: &str) -> bool {
        self.in_functions.contains(term)
            || self.on_lines.contains(term)
            || self.function_words.contains(term)
    }

    /// How much a match of `term` here counts: the whole identifier in a
    /// hunk's function, on a changed line, then a word of one.
    fn match_weight(&self, term: &str) -> f64 {
        if self.in_functions.contains(term) {
            IN_FUNCTION
        } else if self.on_lines.contains(term) {
            1.0
        } else if self.function_words.contains(term) {
            IN_FUNCTION * WORD_SHARE
        } else {
            0.0
        }
    }
}

/// The prior over the candidates and the evidence behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitPrior {
    /// One positive weight per candidate, in the candidates' order.
    pub weights: Vec<f64>,
    /// Each candidate's score (0 where nothing matched).
    pub scores: Vec<f64>,
}

impl CommitPrior {
    /// The candidates that scored, best first (ties by position), with the
    /// share of the evidence each got.
    pub fn ranked(&self) -> Vec<(usize, f64)> {
        let total: f64 = self.scores.iter().map(|s| s * s).sum();
        let mut ranked: Vec<(usize, f64)> = self
            .scores
            .iter()
            .enumerate()
            .filter(|(_, s)| **s > 0.0)
            .map(|(i, s)| (i, s * s / total))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }
}

/// Scores every candidate's change against the focus; `None` when nothing
/// matched (the search then splits by counts).
///
/// A term counts `strength × idf × (3 in a hunk's function, else 1)`,
/// where `idf = ln((N + 1) / (df + 0.5))` over the N candidates; a large
/// commit's sum is damped by `1 + ln(1 + lines / 200)`, as it mentions more
/// names by chance. The evidence's half of the mass goes to the candidates
/// in proportion to their squared scores, which sharpens a clear leader.
pub fn commit_prior(focus: &Focus, changes: &[Change]) -> Option<CommitPrior> {
    let n = changes.len();
    if n == 0 || focus.is_empty() {
        return None;
    }
    // Each term's strength × idf, once (df over all the candidates).
    let terms: Vec<(&str, f64)> = focus
        .terms()
        .map(|(term, strength)| {
            let df = changes.iter().filter(|c| c.mentions(term)).count();
            let idf = ((n as f64 + 1.0) / (df as f64 + 0.5)).ln().max(0.0);
            (term, strength * idf)
        })
        .collect();
    let scores: Vec<f64> = changes
        .iter()
        .map(|change| {
            let sum: f64 = terms
                .iter()
                .map(|&(term, weighed)| weighed * change.match_weight(term))
                .sum();
            sum / (1.0 + (1.0 + change.lines as f64 / 200.0).ln())
        })
        .collect();
    let squares: f64 = scores.iter().map(|s| s * s).sum();
    if squares <= 0.0 {
        return None;
    }
    // Uniform mass n·(1 - share) and evidence mass n·share, before normalising.
    let uniform = 1.0 - EVIDENCE_SHARE;
    let evidence = n as f64 * EVIDENCE_SHARE;
    let weights = scores
        .iter()
        .map(|s| uniform + evidence * s * s / squares)
        .collect();
    Some(CommitPrior { weights, scores })
}

/// Lowercase identifiers of a line of code (letters, digits, `_`; not
/// starting with a digit), keywords and short words left out.
pub fn identifiers(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.len() >= 3 && !w.as_bytes()[0].is_ascii_digit())
        .map(|w| w.to_ascii_lowercase())
        .filter(|w| !is_noise(w))
}

/// The words of each identifier of several words in `text`, lowercase
/// ([`split_identifier`]: `matches_greater`, `parseIntList` and
/// `HTTPServer` → `matches greater`, `parse int list`, `http server`);
/// short words, numbers and keywords left out, as in [`identifiers`]. A
/// one-word identifier has no words apart from itself.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty() && !w.as_bytes()[0].is_ascii_digit())
        .flat_map(|identifier| {
            let parts = split_identifier(identifier);
            let several = parts.len() > 1;
            parts.into_iter().filter(move |_| several)
        })
        .filter(|w| w.len() >= 3 && !w.as_bytes()[0].is_ascii_digit() && !is_noise(w))
}

/// Whether a failing test's id names the definition `symbol` by a word of
/// either name: `TestCount` names `go:pflag.countValue.Set` (`count`),
/// `tests/t.py::test_first` names `py:more_itertools.more.first`,
/// `test_greater_than` names `rs:crate::eval::matches_greater`. A test is
/// named after what it tests; its `test` affix and keywords say nothing,
/// and neither do the symbol's language prefix and module path (`pflag`
/// would match every test of the package `pflag_test`).
pub fn test_names_symbol(test_id: &str, symbol: &str) -> bool {
    let symbol = symbol.split_once(':').map_or(symbol, |(_, rest)| rest);
    let mut parts: Vec<&str> = symbol
        .split(['.', ':', '#', '/'])
        .filter(|p| !p.is_empty())
        .collect();
    // The definition and its container (`countValue.Set`), not the
    // modules above them.
    let named = parts.split_off(parts.len().saturating_sub(2));
    let terms = |text: &str| -> BTreeSet<String> { identifiers(text).chain(words(text)).collect() };
    let symbol_terms: BTreeSet<String> = named.iter().flat_map(|p| terms(p)).collect();
    let test = test_id.rsplit("::").next().unwrap_or(test_id);
    terms(test).iter().any(|t| symbol_terms.contains(t))
}

fn is_identifier(s: &str) -> bool {
    !s.as_bytes()[0].is_ascii_digit() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Keywords and names of the common languages that every change mentions.
fn is_noise(word: &str) -> bool {
    const NOISE: &[&str] = &[
        "and",
        "as",
        "assert",
        "async",
        "await",
        "bool",
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "def",
        "del",
        "elif",
        "else",
        "enum",
        "except",
        "export",
        "extends",
        "false",
        "final",
        "finally",
        "fn",
        "for",
        "from",
        "func",
        "function",
        "global",
        "if",
        "impl",
        "import",
        "in",
        "int",
        "interface",
        "is",
        "lambda",
        "let",
        "match",
        "mod",
        "mut",
        "new",
        "none",
        "nil",
        "nonlocal",
        "not",
        "null",
        "or",
        "package",
        "pass",
        "private",
        "protected",
        "pub",
        "public",
        "raise",
        "return",
        "self",
        "static",
        "str",
        "string",
        "struct",
        "super",
        "switch",
        "this",
        "throw",
        "throws",
        "trait",
        "true",
        "try",
        "type",
        "use",
        "var",
        "void",
        "where",
        "while",
        "with",
        "yield",
        "usize",
        "isize",
        "u8",
        "u16",
        "u32",
        "u64",
        "u128",
        "i8",
        "i16",
        "i32",
        "i64",
        "i128",
        "f32",
        "f64",
        "vec",
        "option",
        "result",
        "some",
        "err",
        "len",
        "test",
        "tests",
        // Standard-library calls every test and change makes.
        "unwrap",
        "unwrap_err",
        "clone",
        "into",
        "to_owned",
        "to_string",
        "collect",
        "format",
        "println",
    ];
    NOISE.contains(&word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_names_the_definitions_its_name_mentions() {
        assert!(test_names_symbol("TestCount", "go:pflag.countValue.Set"));
        assert!(!test_names_symbol("TestCount", "go:pflag.ipValue.Set"));
        assert!(test_names_symbol(
            "tests/test_more.py::FirstTests::test_first",
            "py:more_itertools.more.first"
        ));
        assert!(test_names_symbol(
            "test_greater_than",
            "rs:crate::eval::matches_greater"
        ));
        assert!(
            !test_names_symbol("test_parse", "py:parse.helpers.strip"),
            "a module of the same name is not the definition"
        );
        assert!(
            !test_names_symbol("test_thing", "py:app.test_suite.run"),
            "the test affix says nothing"
        );
    }

    fn change(header: &str, lines: &[&str]) -> Change {
        let mut c = Change::default();
        c.add_function_context(header);
        for l in lines {
            c.add_line(l);
        }
        c
    }

    #[test]
    fn the_commit_that_changed_the_failing_function_leads() {
        let mut focus = Focus::default();
        focus.add("first", strength::FRAME_FUNCTION);
        focus.add("default", strength::TEST_NAME);
        let changes = vec![
            change(
                "class sized_iterator:",
                &["    \"\"\"Wrapper for iterable\"\"\""],
            ),
            change(
                "def first(iterable, default=_marker):",
                &[
                    "    if default is _marker:",
                    "    if default is not _marker:",
                ],
            ),
            // A neighbour that mentions the name on a line only.
            change(
                "def last(iterable, default=_marker):",
                &["    # last() mirrors first()"],
            ),
            change("", &["version = '10.8.0'"]),
        ];
        let prior = commit_prior(&focus, &changes).unwrap();
        let ranked = prior.ranked();
        assert_eq!(ranked[0].0, 1, "{ranked:?}");
        assert!(ranked[0].1 > 0.7, "{ranked:?}");
        assert_eq!(ranked[1].0, 2);
        assert!(prior.weights[1] > prior.weights[2] && prior.weights[2] > prior.weights[3]);
        // The evidence moves at most half the mass.
        let total: f64 = prior.weights.iter().sum();
        assert!(prior.weights[1] / total <= EVIDENCE_SHARE + (1.0 - EVIDENCE_SHARE) / 4.0);
        assert!((prior.weights[0] - prior.weights[3]).abs() < 1e-12);
    }

    #[test]
    fn a_term_every_commit_touches_says_nothing() {
        let mut focus = Focus::default();
        focus.add("parse", strength::FRAME_FUNCTION);
        let changes: Vec<Change> = (0..5)
            .map(|i| change("def parse(text):", &[&format!("x = {i}")]))
            .collect();
        let prior = commit_prior(&focus, &changes).unwrap();
        assert!(
            prior
                .scores
                .iter()
                .all(|s| (s - prior.scores[0]).abs() < 1e-12)
        );
    }

    #[test]
    fn nothing_matched_is_no_prior() {
        let mut focus = Focus::default();
        focus.add("valid_label_length", strength::TEST_CALLEE);
        let changes = vec![change("def encode(s):", &["return s.encode()"])];
        assert_eq!(commit_prior(&focus, &changes), None);
        assert_eq!(commit_prior(&Focus::default(), &changes), None);
        assert_eq!(commit_prior(&focus, &[]), None);
    }

    #[test]
    fn a_large_commit_is_damped() {
        let mut focus = Focus::default();
        focus.add("tokenize", strength::FRAME_FUNCTION);
        let small = change("fn tokenize(s: &str) {", &["let x = 1;"]);
        let mut large = change("fn tokenize(s: &str) {", &["let x = 1;"]);
        for _ in 0..5000 {
            large.add_line("let y = 2;");
        }
        let prior = commit_prior(&focus, &[small, large, Change::default()]).unwrap();
        assert!(
            prior.scores[0] > 2.0 * prior.scores[1],
            "{:?}",
            prior.scores
        );
    }

    #[test]
    fn calls_lead_from_the_api_a_test_calls_to_what_it_calls() {
        let mut focus = Focus::default();
        focus.add("encode", strength::TEST_CALLEE);
        let calls: BTreeMap<String, Vec<String>> = [
            ("encode", vec!["alabel", "len", "uts46_remap"]),
            ("alabel", vec!["valid_label_length", "encode"]),
            ("valid_label_length", vec!["len", "deep_helper"]),
            ("deep_helper", vec![]),
            ("uts46_remap", vec![]),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.into_iter().map(str::to_string).collect()))
        .collect();
        let expanded = through_calls(&focus, &calls);
        let terms: BTreeMap<&str, f64> = expanded.terms().collect();
        assert_eq!(terms["encode"], strength::TEST_CALLEE);
        assert_eq!(terms["alabel"], strength::TEST_CALLEE * 0.5);
        assert_eq!(terms["valid_label_length"], strength::TEST_CALLEE * 0.25);
        // Two calls deep at most; builtins are not defined in the changed code.
        assert!(!terms.contains_key("deep_helper"));
        assert!(!terms.contains_key("len"));
    }

    #[test]
    fn focus_keeps_identifiers_and_their_strongest_mention() {
        let mut focus = Focus::default();
        focus.add("First", strength::TEST_NAME);
        focus.add("first", strength::FRAME_FUNCTION);
        focus.add("if", strength::FRAME_FUNCTION);
        focus.add("a.b", strength::FRAME_FUNCTION);
        focus.add("<module>", strength::FRAME_FUNCTION);
        let terms: Vec<(&str, f64)> = focus.terms().collect();
        assert_eq!(terms, vec![("first", strength::FRAME_FUNCTION)]);
        let ids: Vec<String> = identifiers("if self.x_1 >= 10 and foo(bar_baz):").collect();
        assert_eq!(ids, vec!["x_1", "foo", "bar_baz"]);
    }

    #[test]
    fn identifiers_of_several_words_give_their_words() {
        let of = |t: &str| words(t).collect::<Vec<_>>();
        assert_eq!(of("matches_greater"), ["matches", "greater"]);
        assert_eq!(
            of("parseIntList(x)"),
            ["parse", "list"],
            "`int` is a keyword"
        );
        assert_eq!(of("HTTPServer"), ["http", "server"]);
        assert_eq!(of("uts46_remap"), ["uts", "remap"]);
        assert!(
            of("first").is_empty(),
            "a one-word identifier is its own word"
        );
        assert!(of("_marker").is_empty());
    }

    #[test]
    fn a_test_name_points_at_the_function_named_by_its_words() {
        // `test_greater_than` failed; commit 1 broke `matches_greater`.
        let mut focus = Focus::default();
        focus.add("greater_than", strength::TEST_NAME);
        focus.add("req", strength::TEST_CALLEE);
        let changes = vec![
            change(
                "fn parse_version(input: &str)",
                &["    let major = digits(input)?;"],
            ),
            change(
                "fn matches_greater(cmp: &Comparator, ver: &Version) -> bool",
                &["        return ver.major < cmp.major;"],
            ),
            change(
                "fn fmt(&self, f: &mut Formatter)",
                &["        write!(f, \"{}\", self.major)?;"],
            ),
        ];
        let prior = commit_prior(&focus, &changes).expect("a word matched");
        assert_eq!(prior.ranked()[0].0, 1, "{:?}", prior.ranked());
        assert_eq!(prior.ranked().len(), 1);
    }

    #[test]
    fn a_whole_identifier_outweighs_a_word_of_one() {
        // The frame names `first`: the commit that changed `first` leads
        // the one that changed `first_true`.
        let mut focus = Focus::default();
        focus.add("first", strength::FRAME_FUNCTION);
        let changes = vec![
            change("def first_true(iterable):", &["    return next(x)"]),
            change("def first(iterable):", &["    return next(x)"]),
        ];
        let prior = commit_prior(&focus, &changes).unwrap();
        let ranked = prior.ranked();
        assert_eq!(ranked[0].0, 1, "{ranked:?}");
        assert!(ranked[0].1 > 3.0 * ranked[1].1, "{ranked:?}");
    }
}
