#!/usr/bin/env python3
"""Generate multi-problem failing -> passing histories on real project code,
with ground truth, for the experience attribution benchmark (#16).

Each history is a new git repository whose first commit is the real
more-itertools tree at a pinned commit plus a small CI (four steps of one
job, run in order: lint, dependency check, configuration check, unit tests;
the scripts live in tools/ like a project's own CI scripts). Its second
commit is a "pull request" that introduces 2-4 problems from different
categories at once:

  lint      an over-long line in a real function           (step 1)
  deps      an optional import not declared in requirements (step 2)
  config    an invalid value in ci/settings.ini             (step 3)
  import    more.py imports helpers recipes.py lacks        (step 4, hides the tests)
  test      a real recipe broken (its real unit tests fail) (step 4)

Then the commits a developer makes: the repairs in the order CI shows the
problems, with wrong attempts that are reverted (an attempt that weakens
the configuration checker makes CI pass until it is reverted), repairs
split over two commits, two repairs in one commit, "while here" edits in a
repairing commit, and unrelated commits (README, a docstring elsewhere in a
repaired file, a new helper). Each edit is labelled with the problem it
repairs (or "unrelated") and the lines it leaves in the final tree: the
ground truth `run.py` scores hunks against.

Python 3 stdlib only; git via subprocess. Nothing is committed to this
repository: output goes under --work (default /tmp/tracelab-bench-experience).

    python3 bench/experience/generate.py [--work DIR] [--count N] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

MIRROR = "/work/.mirror/more-itertools+more-itertools/repo"
UPSTREAM = "https://github.com/more-itertools/more-itertools.git"
TIP = "2fe1b2eeb9d75f994113fe3ac76d14b6bcd6fb10"

UNIT_CLASSES = [
    "tests.test_recipes.TakeTests",
    "tests.test_recipes.TailTests",
    "tests.test_recipes.NthTests",
    "tests.test_recipes.QuantifyTests",
    "tests.test_recipes.NcyclesTests",
    "tests.test_recipes.FirstTrueTests",
    "tests.test_more.FirstTests",
    "tests.test_more.LastTests",
    "tests.test_more.ChunkedTests",
]
STEPS = [
    "python3 tools/lint.py",
    "python3 tools/check_deps.py",
    "python3 tools/check_config.py",
    "python3 -m unittest " + " ".join(UNIT_CLASSES),
]

LINT = '''"""Line length and whitespace of the package (the project's style check)."""
import pathlib
import sys

LIMIT = 120
bad = 0
for path in sorted(pathlib.Path("more_itertools").glob("*.py")):
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if len(line) > LIMIT:
            print(f"{path}:{n}: L001 line too long ({len(line)} > {LIMIT})")
            bad += 1
        if line != line.rstrip():
            print(f"{path}:{n}: L002 trailing whitespace")
            bad += 1
sys.exit(1 if bad else 0)
'''

CHECK_DEPS = '''"""Every third-party module the package imports is declared in requirements/runtime.txt."""
import ast
import pathlib
import re
import sys


class DependencyError(Exception):
    pass


declared = set()
for line in pathlib.Path("requirements/runtime.txt").read_text().splitlines():
    line = line.split("#")[0].strip()
    if line:
        declared.add(re.split(r"[<>=~!; \\[]", line)[0].lower().replace("-", "_"))
problems = []
for path in sorted(pathlib.Path("more_itertools").glob("*.py")):
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top in sys.stdlib_module_names or top in ("more_itertools", "__future__"):
                continue
            if top.lower() not in declared:
                problems.append(f"{path} imports '{top}', which requirements/runtime.txt does not declare")
if problems:
    raise DependencyError("; ".join(problems))
'''

CHECK_CONFIG = '''"""ci/settings.ini is valid: the test timeout is whole seconds, test modules exist."""
import configparser
import pathlib


class ConfigError(Exception):
    pass


config = configparser.ConfigParser()
config.read("ci/settings.ini")
timeout = config.get("tests", "timeout")
if not timeout.isdigit():
    raise ConfigError(f"ci/settings.ini: [tests] timeout must be whole seconds, got '{timeout}'")
for module in config.get("tests", "modules").split(","):
    module = module.strip()
    if not pathlib.Path(f"more_itertools/{module}.py").exists():
        raise ConfigError(f"ci/settings.ini: [tests] modules names '{module}', which does not exist")
'''

SETTINGS = "[tests]\ntimeout = 60\nmodules = more, recipes\n"
RUNTIME = "# Runtime dependencies of more-itertools (none required).\n"

# (anchor in recipes.py, broken line, wrong attempt, unittest class)
BUGS = [
    ("    return list(islice(iterable, n))\n", "    return list(islice(iterable, n + 1))\n",
     "    return list(islice(iterable, max(n - 1, 0) + 2))\n", "TakeTests"),
    ("        return islice(iterable, max(0, size - n), None)\n",
     "        return islice(iterable, max(0, size - n + 1), None)\n",
     "        return islice(iterable, max(1, size - n + 1), None)\n", "TailTests"),
    ("    return next(islice(iterable, n, None), default)\n",
     "    return next(islice(iterable, n + 1, None), default)\n",
     "    return next(islice(iterable, n + 2, None), default)\n", "NthTests"),
    ("    return sum(map(pred, iterable))\n", "    return max(0, sum(map(pred, iterable)) - 1)\n",
     "    return max(1, sum(map(pred, iterable)) - 1)\n", "QuantifyTests"),
    ("    return chain.from_iterable(repeat(tuple(iterable), n))\n",
     "    return chain.from_iterable(repeat(tuple(iterable), n - 1))\n",
     "    return chain.from_iterable(repeat(tuple(iterable), max(n - 1, 1)))\n", "NcyclesTests"),
    ("    return next(filter(pred, iterable), default)\n",
     "    return next(filter(pred, iterable), None)\n",
     "    return next(filter(pred, iterable), default or None)\n", "FirstTrueTests"),
]

# Functions of recipes.py whose body gets the over-long comment (first body line anchor).
LINT_SITES = [
    ("def tabulate(function, start=0):\n", "tabulate"),
    ("def consume(iterator, n=None):\n", "consume"),
    ("def all_equal(iterable, key=None):\n", "all_equal"),
    ("def pad_none(iterable):\n", "pad_none"),
    ("def flatten(list_of_lists):\n", "flatten"),
    ("def roundrobin(*iterables):\n", "roundrobin"),
]

# Where the first missing helper is added: far from every bug and lint site.
HELPER_ANCHOR = "def sieve(n):\n"
HELPERS = [("_window_sum", "_window_mean"), ("_chunk_total", "_chunk_average"),
           ("_run_length", "_run_width"), ("_span_sum", "_span_mean")]
OPTIONAL = ["sortedcontainers", "cytoolz", "bitarray", "blist", "regex_accel"]
BAD_CONFIG = [("timeout = 60\n", "timeout = 60s\n", "timeout = 60.0\n"),
              ("modules = more, recipes\n", "modules = more, recipes, windows\n",
               "modules = more, recipes, window\n")]
# Docstring sentences edited as unrelated work (anchor, replacement), far from every bug.
DOCSTRINGS = [
    ("more_itertools/recipes.py", "    Returns a 2-tuple of iterables derived from the input iterable.\n",
     "    Returns a 2-tuple of iterables derived from the input *iterable*.\n"),
    ("more_itertools/recipes.py", "    \"\"\"Yields all possible subsets of the iterable.\n",
     "    \"\"\"Yields all possible subsets of the iterable, smallest first.\n"),
    ("more_itertools/more.py", "    \"\"\"Return the first item of *iterable*, or *default* if *iterable* is\n",
     "    \"\"\"Return the first item of *iterable*, or *default* when *iterable* is\n"),
]


def git(repo: Path, *args: str, check: bool = True) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="Dev", GIT_AUTHOR_EMAIL="dev@example.com",
               GIT_COMMITTER_NAME="Dev", GIT_COMMITTER_EMAIL="dev@example.com")
    p = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env)
    if check and p.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {p.stderr}")
    return p.stdout.strip()


class History:
    """A repository being written, with the ground truth of its edits."""

    def __init__(self, repo: Path, rng: random.Random):
        self.repo = repo
        self.rng = rng
        self.edits: list[dict] = []
        self.commits: list[str] = []

    def read(self, path: str) -> str:
        return (self.repo / path).read_text()

    def write(self, path: str, text: str) -> None:
        (self.repo / path).parent.mkdir(parents=True, exist_ok=True)
        (self.repo / path).write_text(text)

    def replace(self, path: str, old: str, new: str, label: str | None = None) -> None:
        text = self.read(path)
        if text.count(old) != 1:
            raise RuntimeError(f"{path}: anchor occurs {text.count(old)} times: {old!r}")
        self.write(path, text.replace(old, new))
        if label:
            self.edits.append({"label": label, "path": path, "added": lines(new) - lines(old),
                               "removed": lines(old) - lines(new)})

    def commit(self, message: str) -> str:
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", message)
        sha = git(self.repo, "rev-parse", "HEAD")
        self.commits.append(f"{sha[:10]} {message}")
        return sha


def lines(text: str) -> set[str]:
    return {l.strip() for l in text.splitlines() if sum(c.isalnum() for c in l) >= 3}


def base_repo(work: Path) -> Path:
    """The real tree at TIP plus the CI scripts, as one commit (cached)."""
    base = work / "base"
    if (base / ".git").exists():
        return base
    source = MIRROR if os.path.isdir(MIRROR) else UPSTREAM
    tmp = work / "base-src"
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", "--no-checkout", source, str(tmp)], check=True)
    base.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(tmp), "archive", TIP], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
    shutil.rmtree(tmp)
    for path, text in [("tools/lint.py", LINT), ("tools/check_deps.py", CHECK_DEPS),
                       ("tools/check_config.py", CHECK_CONFIG), ("ci/settings.ini", SETTINGS),
                       ("requirements/runtime.txt", RUNTIME)]:
        (base / path).parent.mkdir(parents=True, exist_ok=True)
        (base / path).write_text(text)
    git(base, "init", "-q", "-b", "main")
    git(base, "add", "-A")
    git(base, "commit", "-q", "-m", f"more-itertools {TIP[:10]} with its CI scripts")
    for step in STEPS:
        p = subprocess.run(step.split(), cwd=base, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"the base fails {step}:\n{p.stdout}{p.stderr}")
    return base


def generate(work: Path, index: int, seed: int) -> dict:
    rng = random.Random(seed * 1000 + index)
    base = base_repo(work)
    repo = work / f"h{index:02d}"
    shutil.rmtree(repo, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", str(base), str(repo)], check=True)
    h = History(repo, rng)
    k = rng.choice([2, 3, 3, 4])
    categories = rng.sample(["lint", "deps", "config", "import", "test"], k)
    order = [c for c in ["lint", "deps", "config", "import", "test"] if c in categories]

    # The pull request's first commit: a feature plus every problem.
    problems = []
    more = "more_itertools/more.py"
    recipes = "more_itertools/recipes.py"
    feature = "\n\ndef window_totals(iterable, n):\n    \"\"\"Sum of each window of *n* items.\"\"\"\n    return [sum(w) for w in windowed(iterable, n)]\n"
    h.write(more, h.read(more) + feature)
    plan: dict = {}
    if "lint" in categories:
        site, name = rng.choice(LINT_SITES)
        long = ("    # Note: " + name + " is part of the documented recipes; keep it in line with the "
                "itertools documentation when the standard library changes its version of it.\n")
        text = h.read(recipes)
        start = text.index(site)
        body = text.index('"""', text.index('"""', start) + 3) + 4  # first line after the docstring
        h.write(recipes, text[:body] + long + text[body:])
        plan["lint"] = long
        problems.append({"id": "lint", "category": "lint", "match": {"step": STEPS[0]}})
    if "deps" in categories:
        pkg = rng.choice(OPTIONAL)
        h.replace(more, "from sys import maxsize\n",
                  f"from sys import maxsize\n\ntry:\n    import {pkg}  # optional speedup\nexcept ImportError:  # pragma: no cover\n    {pkg} = None\n")
        plan["deps"] = pkg
        problems.append({"id": "deps", "category": "dependency", "match": {"step": STEPS[1]}})
    if "config" in categories:
        good, bad, attempt = rng.choice(BAD_CONFIG)
        h.replace("ci/settings.ini", good, bad)
        plan["config"] = (good, bad, attempt)
        problems.append({"id": "config", "category": "configuration", "match": {"step": STEPS[2]}})
    if "import" in categories:
        names = rng.choice(HELPERS)
        h.replace(more, "from .recipes import (\n", f"from .recipes import {names[0]}, {names[1]}\nfrom .recipes import (\n")
        plan["import"] = names
        problems.append({"id": "import", "category": "import", "match": {"step": STEPS[3], "suffix": ": ImportError"}})
    if "test" in categories:
        bug = rng.choice(BUGS)
        h.replace(recipes, bug[0], bug[1])
        plan["test"] = bug
        # Every test the bug breaks (other recipes use it too) is this problem.
        problems.append({"id": "test", "category": "failing-test",
                         "match": {"step": STEPS[3], "contains": ": tests."}})
    first = h.commit("Add window_totals")

    # Unrelated commits, placed between repairs at random.
    unrelated = [u for u in ["readme", "docstring", "helper"] if rng.random() < 0.6] or ["readme"]
    slots: dict[int, list[str]] = {}
    for u in unrelated:
        slots.setdefault(rng.randrange(len(order) + 1), []).append(u)
    docstrings = rng.sample(DOCSTRINGS, len(DOCSTRINGS))

    def unrelated_commit(kind: str) -> None:
        if kind == "readme":
            h.write("README.rst", h.read("README.rst") + "\nSee docs/ for the window helpers.\n")
            h.edits.append({"label": "unrelated", "path": "README.rst",
                            "added": ["See docs/ for the window helpers."], "removed": []})
            h.commit("README: mention the window helpers")
        elif kind == "docstring":
            path, old, new = docstrings.pop()
            h.replace(path, old, new, "unrelated")
            h.commit("Docs: clarify a docstring")
        else:
            text = "\n\ndef window_count(iterable, n):\n    \"\"\"Number of windows of *n* items.\"\"\"\n    return max(0, len(list(iterable)) - n + 1)\n"
            h.write(more, h.read(more) + text)
            h.edits.append({"label": "unrelated", "path": more, "added": sorted(lines(text)), "removed": []})
            h.commit("Add window_count")

    def while_here(label_commit: list[str]) -> None:
        """An unrelated edit committed with a repair: in another file, or
        (harder) in recipes.py, the file most repairs touch."""
        if rng.random() < 0.5:
            h.write("docs/versions.rst", h.read("docs/versions.rst").replace(
                "Version History", "Version history", 1))
            h.edits.append({"label": "unrelated", "path": "docs/versions.rst",
                            "added": ["Version history"], "removed": ["Version History"]})
            label_commit.append("while here: fix a heading")
        else:
            h.replace(recipes,
                      '    """Yields results from a function repeatedly until an exception is raised.\n',
                      '    """Yield results from a function repeatedly until an exception is raised.\n',
                      "unrelated")
            label_commit.append("while here: imperative docstring")

    def repair(category: str, message: list[str]) -> None:
        if category == "lint":
            long = plan["lint"]
            short = long[:60].rstrip() + "\n    # " + long[60:].strip() + "\n"
            h.replace(recipes, long, short, "lint")
            message.append("Wrap a long comment")
        elif category == "deps":
            h.write("requirements/runtime.txt", h.read("requirements/runtime.txt") + f"{plan['deps']}>=1.0  # optional\n")
            h.edits.append({"label": "deps", "path": "requirements/runtime.txt",
                            "added": [f"{plan['deps']}>=1.0  # optional"], "removed": []})
            message.append(f"Declare {plan['deps']}")
        elif category == "config":
            good, bad, _ = plan["config"]
            h.replace("ci/settings.ini", bad, good, "config")
            message.append("Fix the CI settings")
        elif category == "import":
            a, b = plan["import"]
            h.write(recipes, h.read(recipes) + f"\n\ndef {b}(values):\n    values = list(values)\n    return {a}(values) / len(values)\n")
            h.edits.append({"label": "import", "path": recipes,
                            "added": [f"def {b}(values):", f"return {a}(values) / len(values)"], "removed": []})
            text = h.read(recipes)
            anchor = HELPER_ANCHOR
            h.replace(recipes, anchor, f"def {a}(values):\n    return sum(values)\n\n\n{anchor}")
            h.edits.append({"label": "import", "path": recipes, "added": [f"def {a}(values):"], "removed": []})
            message.append(f"Add {a} and {b}")
        elif category == "test":
            bug = plan["test"]
            h.replace(recipes, bug[1], bug[0], "test")
            message.append(f"Fix {bug[3].removesuffix('Tests').lower()}")

    def attempt(category: str) -> None:
        """A wrong attempt, committed and then reverted."""
        if category == "test":
            bug = plan["test"]
            h.replace(recipes, bug[1], bug[2])
            sha = h.commit(f"Try fixing {bug[3]}")
            git(repo, "revert", "--no-edit", sha)
            h.commits.append("revert")
        elif category == "config":
            # Weaken the checker (CI goes green), then take it back.
            h.replace("tools/check_config.py", "if not timeout.isdigit():", "if not timeout[:1].isdigit():")
            h.replace("tools/check_config.py", "    if not pathlib.Path(", "    if module != 'windows' and not pathlib.Path(")
            sha = h.commit("Relax the settings check")
            git(repo, "revert", "--no-edit", sha)
            h.commits.append("revert")
        elif category == "import":
            a, b = plan["import"]
            h.replace(more, f"from .recipes import {a}, {b}\n", f"from .more import {a}, {b}\n")
            sha = h.commit("Import the helpers from more")
            git(repo, "revert", "--no-edit", sha)
            h.commits.append("revert")
        elif category == "lint":
            h.replace(recipes, plan["lint"], plan["lint"].replace("    # Note: ", "  # Note: "))
            sha = h.commit("Shorten the comment's indent")
            git(repo, "revert", "--no-edit", sha)
            h.commits.append("revert")

    attempts = set(rng.sample([c for c in order if c != "deps"], min(len(order) - ("deps" in order), rng.choice([1, 1, 2]))))
    combine = len(order) >= 2 and rng.random() < 0.3
    mixed = rng.randrange(len(order)) if rng.random() < 0.35 else None
    split_import = "import" in order and rng.random() < 0.5
    i = 0
    while i < len(order):
        for u in slots.get(i, []):
            unrelated_commit(u)
        category = order[i]
        if category in attempts:
            attempt(category)
        message: list[str] = []
        if category == "import" and split_import:
            # The first helper alone: CI still fails on the second one.
            a, b = plan["import"]
            anchor = HELPER_ANCHOR
            h.replace(recipes, anchor, f"def {a}(values):\n    return sum(values)\n\n\n{anchor}")
            h.edits.append({"label": "import", "path": recipes, "added": [f"def {a}(values):"], "removed": []})
            h.commit(f"Add {a}")
            h.write(recipes, h.read(recipes) + f"\n\ndef {b}(values):\n    values = list(values)\n    return {a}(values) / len(values)\n")
            h.edits.append({"label": "import", "path": recipes,
                            "added": [f"def {b}(values):", f"return {a}(values) / len(values)"], "removed": []})
            message.append(f"Add {b}")
        else:
            repair(category, message)
        if combine and i + 1 < len(order) and order[i + 1] not in attempts:
            repair(order[i + 1], message)
            i += 1
            combine = False
        if mixed == i:
            while_here(message)
        h.commit("; ".join(message))
        i += 1
    for u in slots.get(len(order), []):
        unrelated_commit(u)
    last = git(repo, "rev-parse", "HEAD")
    for step in STEPS:
        p = subprocess.run(step.split(), cwd=repo, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"h{index:02d}: the last revision fails {step}:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    for e in h.edits:
        e["added"] = sorted(e["added"])
        e["removed"] = sorted(e["removed"])
    return {"name": f"h{index:02d}", "repo": str(repo), "from": first, "to": last, "steps": STEPS,
            "problems": problems, "edits": h.edits, "commits": h.commits,
            "variants": {"attempts": sorted(attempts), "split_import": split_import,
                         "while_here": mixed is not None, "unrelated": unrelated}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default="/tmp/tracelab-bench-experience")
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--seed", type=int, default=16)
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    cases = [generate(work, i, args.seed) for i in range(args.count)]
    (work / "cases.json").write_text(json.dumps(cases, indent=1))
    print(f"{len(cases)} histories in {work}", file=sys.stderr)


if __name__ == "__main__":
    main()
