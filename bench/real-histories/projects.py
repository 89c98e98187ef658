"""The real projects the benchmark replays, and where each gets its injected defects.

Every anchor below was checked to occur exactly once in the file at every
commit of the window from the culprit on (the case builder re-checks and
fails loudly otherwise). Windows are pinned by their last commit's sha so a
newer mirror yields the same cases.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field

PY_TEST_ADDITION = (
    "\n\ndef test_bench_unrelated_note():\n"
    "    # Added together with an unrelated change in the same commit.\n"
    "    assert sorted([2, 1]) == [1, 2]\n"
)
RS_TEST_ADDITION = (
    "\n#[test]\nfn bench_unrelated_note() {\n"
    "    // Added together with an unrelated change in the same commit.\n"
    "    assert_eq!(1 + 1, 2);\n}\n"
)
GO_TEST_ADDITION = (
    "\nfunc TestBenchUnrelatedNote(t *testing.T) {\n"
    "\t// Added together with an unrelated change in the same commit.\n"
    "\tif 1+1 != 2 {\n\t\tt.Fatal(\"arithmetic\")\n\t}\n}\n"
)
PY_BREAKAGE = "\n\ndef _unfinished_helper(:\n    pass\n"
RS_BREAKAGE = '\n#[allow(dead_code)]\nfn unfinished_helper() -> u32 {\n    "not yet"\n}\n'
PY_UNTESTABLE = ["SyntaxError", "error during collection", "ERROR collecting"]
GO_BREAKAGE = '\nfunc unfinishedHelper() int {\n\treturn "not yet"\n}\n'
GO_UNTESTABLE = ["[build failed]", "cannot use"]
GO_TEST_FILES = r"(^|/)([^/]*_test\.go$|testdata/)"
RS_UNTESTABLE = ["error[E", "could not compile"]
TEST_FILES = r"(^|/)(tests?/|test_[^/]*\.py$|[^/]*_test\.(py|rs)$|conftest\.py$)"


def py_flaky(flag: str, def_anchor: str, body_anchor: str) -> list:
    """A module-level unseeded draw (once per test process, so one run fails with
    probability RATE whatever the number of calls) and a raise at the top of the function."""
    indent = body_anchor[: len(body_anchor) - len(body_anchor.lstrip())]
    return [
        (def_anchor, f"{flag} = __import__('random').random() < RATE\n\n\n{def_anchor}"),
        (body_anchor, f"{indent}if {flag}:\n{indent}    raise RuntimeError('intermittent: resource busy')\n{body_anchor}"),
    ]


def rs_flaky(module_anchor: str, fn_anchor: str, indent: str) -> list:
    """The Rust counterpart of `py_flaky`: one unseeded draw per test process
    (std's `RandomState` keys are random per process; `extern crate std` so
    `no_std` crates build it too) and a panic at the top of the function."""
    module = (
        "mod bench_flaky {\n"
        "    extern crate std;\n"
        "    use std::hash::{BuildHasher, Hasher};\n"
        "    pub fn busy() -> bool {\n"
        "        static DRAW: std::sync::OnceLock<bool> = std::sync::OnceLock::new();\n"
        "        *DRAW.get_or_init(|| {\n"
        "            let h = std::collections::hash_map::RandomState::new().build_hasher().finish();\n"
        "            ((h % 1_000_000) as f64) < RATE * 1_000_000.0\n"
        "        })\n"
        "    }\n"
        "}\n\n"
    )
    check = f"{indent}if bench_flaky::busy() {{\n{indent}    panic!(\"intermittent: resource busy\");\n{indent}}}\n"
    return [(module_anchor, module + module_anchor), (fn_anchor, fn_anchor + check)]


@dataclass
class Project:
    name: str
    repo: str  # upstream owner/name
    mirror: str  # local bare mirror from the `fetch` tool; the URL is used when absent
    tip: str  # last commit of the window
    window: int
    lang: str
    test: str
    test_file: str
    bug: tuple[str, str, str]  # path, anchor, replacement
    neighbour: tuple[str, str, str]
    neighbour_message: str
    breakage: tuple[str, str]  # path, text appended while the module is broken
    kinds: list[str]
    bug_all: bool = False  # replace every occurrence of the bug anchor
    flaky: list = field(default_factory=list)  # [path, (anchor, replacement with RATE)...]
    flaky_rates: tuple[float, float] | None = None
    test_addition: str = ""
    untestable_markers: list[str] = field(default_factory=list)
    test_files_pattern: str = TEST_FILES
    # Window indices where the project's own history cannot run the test
    # (found by running it at every window commit); culprits stay clear of them.
    natural_untestable: list[int] = field(default_factory=list)
    # Go: the module path written into commits that predate the project's go.mod.
    go_module: str = ""

    def source(self) -> str:
        return self.mirror if os.path.isdir(self.mirror) else f"https://github.com/{self.repo}.git"

    def argv(self) -> list[str]:
        return shlex.split(self.test)


# `-pno:cacheprovider` joined and node ids rather than `-k`: TraceLab builds
# its single-test command by replacing positional arguments, and with
# `-p no:cacheprovider -k EXPR` it took the option values for paths (see
# docs/benchmarks.md, "Real histories against git bisect run").
PYTEST = "python3 -m pytest -q -x -pno:cacheprovider"

PROJECTS = [
    Project(
        name="more-itertools",
        repo="more-itertools/more-itertools",
        mirror="/work/.mirror/more-itertools+more-itertools/repo",
        tip="2fe1b2eeb9d75f994113fe3ac76d14b6bcd6fb10",
        window=120,
        lang="python",
        test=f"{PYTEST} tests/test_more.py::ChunkedTests tests/test_more.py::FirstTests tests/test_more.py::LastTests",
        test_file="tests/test_more.py",
        # first(): the "no default given" check inverted.
        bug=("more_itertools/more.py",
             "    if default is _marker:\n        raise ValueError(\n            'first() was called",
             "    if default is not _marker:\n        raise ValueError(\n            'first() was called"),
        neighbour=("more_itertools/more.py", "def last(iterable, default=_marker):\n",
                   "# last() mirrors first(); see LastTests for its edge cases.\n"
                   "def last(iterable, default=_marker):\n"),
        neighbour_message="last: say where its edge cases are tested",
        breakage=("more_itertools/recipes.py", PY_BREAKAGE),
        kinds=["regression", "untestable", "test-edit", "flaky"],
        flaky=["more_itertools/more.py",
               *py_flaky("_FIRST_BUSY", "def first(iterable, default=_marker):\n",
                         "    for item in iterable:\n        return item\n")],
        flaky_rates=(0.02, 0.40),
        test_addition=PY_TEST_ADDITION,
        untestable_markers=PY_UNTESTABLE,
    ),
    Project(
        name="idna",
        repo="kjd/idna",
        mirror="/work/.mirror/kjd+idna/repo",
        tip="6ebfaab9ea718dce38a7c17ddafd7fb28b0468d4",
        window=120,
        lang="python",
        test=f"{PYTEST} tests/test_idna.py",
        test_file="tests/test_idna.py",
        # valid_label_length(): off by one (RFC 1035 allows 63 octets).
        bug=("idna/core.py", "    if len(label) > 63:\n", "    if len(label) > 64:\n"),
        neighbour=("idna/core.py", "def valid_string_length(",
                   "# Whole-name limit, RFC 1035 section 2.3.4.\ndef valid_string_length("),
        neighbour_message="core: cite the RFC for the name length limit",
        breakage=("idna/intranges.py", PY_BREAKAGE),
        kinds=["regression", "untestable", "test-edit", "flaky"],
        flaky=["idna/core.py",
               *py_flaky("_LABEL_BUSY", "def valid_label_length(", "    if len(label) > 63:\n")],
        flaky_rates=(0.0, 0.40),
        test_addition=PY_TEST_ADDITION,
        untestable_markers=PY_UNTESTABLE,
    ),
    Project(
        name="boltons",
        repo="mahmoud/boltons",
        mirror="/work/.mirror/mahmoud+boltons/repo",
        tip="967864f89791509f9eb36b22b4579d36b72a6df2",
        window=120,
        lang="python",
        test=f"{PYTEST} tests/test_strutils.py tests/test_iterutils.py",
        test_file="tests/test_strutils.py",
        # parse_int_list(): ranges lose their upper end.
        bug=("boltons/strutils.py",
             "output += list(range(min(range_limits), max(range_limits)+1))",
             "output += list(range(min(range_limits), max(range_limits)))"),
        neighbour=("boltons/strutils.py", "def format_int_list(",
                   "# The inverse of parse_int_list().\ndef format_int_list("),
        neighbour_message="strutils: point format_int_list at its inverse",
        breakage=("boltons/iterutils.py", PY_BREAKAGE),
        kinds=["regression", "untestable", "test-edit", "flaky"],
        flaky=["boltons/strutils.py",
               *py_flaky("_PARSE_BUSY", "def parse_int_list(",
                         "    output = []\n\n    for x in range_string.strip().split(delim):")],
        flaky_rates=(0.05, 0.30),
        natural_untestable=[71, 75],  # IndentationError in strutils.py, fixed one commit later
        test_addition=PY_TEST_ADDITION,
        untestable_markers=PY_UNTESTABLE,
    ),
    Project(
        name="itoa",
        repo="dtolnay/itoa",
        mirror="/work/.mirror/dtolnay+itoa/repo",
        tip="1577ed901354d0d7448ac162328f9dbf5183124c",
        window=120,
        lang="rust",
        test="cargo test --offline -q --test test",
        test_file="tests/test.rs",
        # The sign of negative numbers is written as '+' (every copy of the sign write).
        bug=("src/lib.rs", "b'-'", "b'+'"),
        bug_all=True,
        neighbour=("src/lib.rs", "impl Default for Buffer {",
                   "// Buffer::default() is Buffer::new().\nimpl Default for Buffer {"),
        neighbour_message="Buffer: note that default() is new()",
        breakage=("src/lib.rs", RS_BREAKAGE),
        kinds=["regression", "untestable", "test-edit", "flaky"],
        flaky=["src/lib.rs", *rs_flaky("impl Buffer {\n", "    pub fn new() -> Buffer {\n", " " * 8)],
        flaky_rates=(0.02, 0.40),
        test_addition=RS_TEST_ADDITION,
        untestable_markers=RS_UNTESTABLE,
    ),
    Project(
        name="semver",
        repo="dtolnay/semver",
        mirror="/work/.mirror/dtolnay+semver/repo",
        tip="8591f2344b52b31d85b538de58b76a676fe9ff90",
        window=120,
        lang="rust",
        test="cargo test --offline -q --test test_version_req",
        test_file="tests/test_version_req.rs",
        # matches_greater(): the major-version comparison flipped.
        bug=("src/eval.rs", "        return ver.major > cmp.major;\n",
             "        return ver.major < cmp.major;\n"),
        neighbour=("src/eval.rs", "fn matches_less(",
                   "// The mirror image of matches_greater().\nfn matches_less("),
        neighbour_message="eval: relate matches_less to matches_greater",
        breakage=("src/identifier.rs", RS_BREAKAGE),
        kinds=["regression", "untestable", "test-edit", "flaky"],
        flaky=["src/eval.rs",
               *rs_flaky("fn matches_greater(cmp: &Comparator, ver: &Version) -> bool {\n",
                         "fn matches_greater(cmp: &Comparator, ver: &Version) -> bool {\n", " " * 4)],
        flaky_rates=(0.05, 0.35),
        test_addition=RS_TEST_ADDITION,
        untestable_markers=RS_UNTESTABLE,
    ),
    Project(
        name="pflag",
        repo="spf13/pflag",
        mirror="/work/.mirror/spf13+pflag/repo",
        tip="5fdac2d16c16d60605cb8baa887e8c5c38ef623f",
        window=120,
        lang="go",
        # -count=1: go test would otherwise answer from its result cache;
        # -vet=off: the old test files fail go vet checks added since.
        test="go test -count=1 -vet=off -run TestCount .",
        test_file="count_test.go",
        # countValue.Set(): `-vvv` no longer counts (the increment marker is missed).
        bug=("count.go", '\tif s == "+1" {\n', '\tif s == "+2" {\n'),
        neighbour=("count.go", "func (i *countValue) Type() string {",
                   "// Type names the flag's kind in usage text.\nfunc (i *countValue) Type() string {"),
        neighbour_message="count: say what Type is for",
        breakage=("int.go", GO_BREAKAGE),
        kinds=["regression", "untestable", "test-edit"],
        test_addition=GO_TEST_ADDITION,
        untestable_markers=GO_UNTESTABLE,
        test_files_pattern=GO_TEST_FILES,
        go_module="github.com/spf13/pflag",
    ),
]
