#!/usr/bin/env python3
"""Mine real bugs from the git history of pure-Python projects (BugsInPy style).

A case is a **fix commit** of the project's history that

  (a) changes exactly one non-test `.py` source file, by at most --max-lines
      changed lines (added + deleted) in that file (other non-Python files such
      as a changelog may change too);
  (b) adds or changes at least one test module (TraceLab's test-path rule);
  (c) preferably has a message that suggests a fix (fix, bug, issue, #123,
      correct, wrong, ...): those are examined first, the others after them
      (only those with --fix-words-only), except those whose subject
      announces a feature or a clean-up (add, implement, support, refactor,
      performance, docs, ...); and a case whose every failing test
      fails because the API under test is missing (AttributeError "has no
      attribute", ImportError, NameError, unexpected keyword argument) is a
      feature, not a bug, and is dropped; a fix whose source change is that of
      a case already kept (the same fix on two branches) is dropped;

rebuilt as: the fix's parent ("buggy") with the fixing commit's test files
laid over it (`git checkout FIX -- <test files>`), committed as one new
commit "bench: the fixing commit's tests". It is kept when some test ids of
the changed test modules fail there and pass at FIX (twice), the first of them
fails alone twice in under --max-test-s seconds, and nothing but Debian's
python3 and pytest is needed (no pip install; `-o pythonpath=src` for a src/
layout).

    python3 bench/real-bugs/mine.py [--projects toolz,idna] [--max-commits 1500]
        [--max-cases 10] [--max-lines 6] [--fix-words-only] [--work DIR] [--out FILE]

Projects come from bare mirrors under /work/.mirror (`fetch github:owner/name`,
or $TRACELAB_MIRRORS). Every examined commit's outcome is cached in
~/.cache/tracelab/real-bugs/<project>/examined-v<RULES_VERSION>.json, so a second run only
examines what the first did not reach; --refresh forgets the cache.
Python 3.11 stdlib only.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import casekit as kit

# Bumped when the judging rules change: the cache of examined commits is then ignored.
RULES_VERSION = 4

# name, upstream. Pure-Python projects whose tests run with Debian's python3 and pytest 7 alone.
PROJECTS = [
    ("more-itertools", "more-itertools/more-itertools"),
    ("boltons", "mahmoud/boltons"),
    ("idna", "kjd/idna"),
    ("toolz", "pytoolz/toolz"),
    ("sortedcontainers", "grantjenks/python-sortedcontainers"),
    ("semver", "python-semver/python-semver"),
    ("parse", "r1chardj0n3s/parse"),
    ("jmespath", "jmespath/jmespath.py"),
    ("tomli", "hukkin/tomli"),
    ("toml", "uiri/toml"),
    ("cachetools", "tkem/cachetools"),
    ("tabulate", "astanin/python-tabulate"),
    ("itsdangerous", "pallets/itsdangerous"),
    ("click", "pallets/click"),
    ("schema", "keleshev/schema"),
    ("humanize", "python-humanize/humanize"),
]

FIX_WORDS = re.compile(
    r"\b(fix(e[sd])?|fixing|bug(fix)?|issue|correct(ly|s|ed)?|wrong(ly)?|incorrect(ly)?|broken|"
    r"crash(es)?|regression|off[- ]by[- ]one|typo|mistake|handle|prevent|avoid|error|fail(s|ed|ing|ure)?)\b"
    r"|#\d+", re.I)  # "(#123)", a squash merge's pull request, is removed first (strip_pr_refs)

# A subject that announces a feature (used only when the message has no fix word).
FEATURE_WORDS = re.compile(r"\b(add(s|ed|ing)?|implement(s|ed|ing)?|support(s|ed|ing)?|enh|new|allow(s|ed)?|"
                           r"introduc\w+|feature|expose[sd]?|optional|deprecat\w+|refactor\w*|speed\w*|faster|"
                           r"optimi[sz]\w+|performance|docs?|docstring|typing|type hints?|annotations?)\b", re.I)

# A subject that names a change no bug benchmark wants, whatever else the message says.
NOT_A_FIX = re.compile(r"\b(release|bump\w*|flit|poetry|packaging|metadata|pre-commit|flake8|lint\w*|pep ?8|"
                       r"black|isort|mypy|deprecat\w*)\b", re.I)

# Lines that are metadata, not behaviour.
METADATA_LINE = re.compile(r"^\s*(__version__|__all__|__author__|__copyright__|__license__|version_info)\b")

# A failure that says the API under test does not exist yet: the commit added a feature.
MISSING_API = re.compile(r"^(AttributeError: .*has no attribute|ImportError|ModuleNotFoundError|NameError|"
                         r"TypeError: .*(unexpected keyword argument|got an unexpected))")

# .py files that are not the project's library code.
NOT_SOURCE = re.compile(r"(^|/)(setup|conftest|noxfile|fabfile|tasks|conf)\.py$|^(docs?|examples?|benchmarks?|"
                        r"bench|scripts?|tools?|\.github|misc|contrib)/")


# --------------------------------------------------------------------------
# scanning the history


def scan(mirror: Path, max_commits: int, max_lines: int) -> tuple[list[dict], dict]:
    """Commits (newest first) that pass the structural rules (a) and (b), and counts of why others did not."""
    out = kit.git(mirror, "log", "--no-merges", "--no-renames", f"--max-count={max_commits}",
                  "--format=%x01%H%x02%P%x02%cI%x02%s", "--numstat", "HEAD", bare=True)
    why: dict[str, int] = {}
    found = []
    for record in out.split("\x01")[1:]:
        head, _, body = record.partition("\n")
        sha, parents, date, subject = head.split("\x02", 3)
        files = []
        for line in body.splitlines():
            if not line.strip():
                continue
            a, d, path = line.split("\t", 2)
            files.append((int(a) if a != "-" else 10**6, int(d) if d != "-" else 10**6, path))
        reason = structural_reject(parents.split(), files, max_lines)
        if reason:
            why[reason] = why.get(reason, 0) + 1
            continue
        src = next(f for f in files if f[2].endswith(".py") and not kit.is_test_path(f[2]))
        found.append({"fix": sha, "buggy": parents.split()[0], "date": date, "subject": subject,
                      "source_file": src[2], "diff_lines": {"added": src[0], "deleted": src[1]},
                      "test_paths": [f[2] for f in files if kit.is_test_path(f[2])]})
    return found, why


def structural_reject(parents: list[str], files: list, max_lines: int) -> str | None:
    if len(parents) != 1:
        return "not one parent"
    source = [f for f in files if f[2].endswith(".py") and not kit.is_test_path(f[2])]
    if len(source) != 1:
        return "not exactly one non-test .py file"
    if NOT_SOURCE.search(source[0][2]):
        return "the .py file is not library code"
    if source[0][0] + source[0][1] > max_lines:
        return "diff too large"
    if not any(kit.is_test_path(f[2]) and kit.is_test_module(f[2]) for f in files):
        return "no test module changed"
    return None


# --------------------------------------------------------------------------
# where the fix is


def change_key(repo: Path, buggy: str, fix: str, path: str) -> str:
    """The source change without its place: one fix cherry-picked to two branches is one bug."""
    diff = kit.git(repo, "diff", "-U0", "--no-renames", buggy, fix, "--", path, bare=True)
    lines = [l for l in diff.splitlines() if l[:1] in "+-" and not l.startswith(("+++", "---"))]
    return hashlib.sha1("\n".join([path, *lines]).encode()).hexdigest()


def changed_lines(repo: Path, buggy: str, fix: str, path: str) -> tuple[list[int], list[int], list[tuple]]:
    """Lines of `path` the fix removed or replaced (buggy side), added (fixed side),
    and (buggy line, count, fixed line, count) per hunk, from a zero-context diff."""
    diff = kit.git(repo, "diff", "-U0", "--no-renames", buggy, fix, "--", path, bare=True)
    old, new, hunks = [], [], []
    for m in re.finditer(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", diff, re.M):
        a, b = int(m.group(1)), int(m.group(2) or 1)
        c, d = int(m.group(3)), int(m.group(4) or 1)
        old += range(a, a + b)
        new += range(c, c + d)
        hunks.append((a, b, c, d))
    return old, new, hunks


def definitions(source: str) -> list[tuple[int, int, int, str]]:
    """(first line incl. decorators, last line, column, local qualified name) of every def and class."""
    tree = ast.parse(source)
    out = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                out.append((start, child.end_lineno, child.col_offset, name))
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def enclosing(defs: list, line: int, below_column: int | None = None) -> str | None:
    inside = [d for d in defs if d[0] <= line <= d[1] and (below_column is None or d[2] < below_column)]
    return max(inside, key=lambda d: d[0])[3] if inside else None


def indentation(text: str) -> int | None:
    return len(text) - len(text.lstrip()) if text.strip() else None


def fixed_functions(buggy_source: str, fixed_source: str, hunks: list[tuple]) -> list[str]:
    """The innermost definitions holding the changed buggy lines. Lines inserted
    after buggy line a belong to the innermost definition around the last
    non-blank line up to a whose column is left of the inserted code (a method
    added after another one belongs to the class); an inserted decorator
    belongs to the definition it decorates."""
    defs = definitions(buggy_source)
    buggy_lines = buggy_source.splitlines()
    fixed_lines = fixed_source.splitlines()
    names: list[str] = []
    for a, b, c, d in hunks:
        if b > 0:
            found = [enclosing(defs, line) for line in range(a, a + b)
                     if line <= len(buggy_lines) and buggy_lines[line - 1].strip()] or [enclosing(defs, a)]
        else:
            text = [t for t in fixed_lines[c - 1:c - 1 + d] if t.strip()]
            column = indentation(text[0]) if text else 0
            n = a + 1
            while n <= len(buggy_lines) and not buggy_lines[n - 1].strip():
                n += 1
            decorated = [x[3] for x in defs if x[0] == n and x[2] == column]
            if text and text[0].lstrip().startswith("@") and decorated:
                # A decorator added to the definition that follows.
                found = decorated[:1]
                for name in found:
                    if name not in names:
                        names.append(name)
                continue
            p = a
            while p > 0 and not buggy_lines[p - 1].strip():
                p -= 1
            found = [enclosing(defs, p, below_column=column) if p > 0 else None]
        for name in found:
            name = name or "<module>"
            if name not in names:
                names.append(name)
    return names


def python_module(path: str) -> str:
    """TraceLab's module part of a qualified name (crates/code-index/src/qualify.rs)."""
    stem = path[:-3] if path.endswith(".py") else path
    for prefix in ("src/", "lib/"):
        if stem.startswith(prefix):
            stem = stem[len(prefix):]
            break
    if stem.endswith("/__init__"):
        stem = stem[: -len("/__init__")]
    return stem.replace("/", ".")


# --------------------------------------------------------------------------
# judging one candidate


def checkout(repo: Path, rev: str) -> None:
    kit.git(repo, "checkout", "-q", "-f", "--detach", rev)
    kit.git(repo, "clean", "-q", "-ffdx")


def strip_pr_refs(message: str) -> str:
    """Without "(#123)": squash merges name their pull request, which says nothing about a fix."""
    return re.sub(r"\(#\d+\)", "", message)


def describe(project: str, upstream: str, cand: dict, mirror: Path, args) -> dict:
    """The case's metadata from the history alone (cheap, never cached), or {"rejected": reason}."""
    fix, buggy = cand["fix"], cand["buggy"]
    message = kit.git(mirror, "show", "-s", "--format=%B", fix, bare=True)
    suggests_fix = bool(FIX_WORDS.search(strip_pr_refs(message)))
    if NOT_A_FIX.search(cand["subject"]):
        return {"rejected": "the subject names a release, packaging, lint or deprecation change"}
    if not suggests_fix and args.fix_words_only:
        return {"rejected": "message does not suggest a fix"}
    if not suggests_fix and FEATURE_WORDS.search(cand["subject"]):
        return {"rejected": "message describes a feature or a clean-up, not a fix"}
    status = kit.git(mirror, "diff", "--name-status", "--no-renames", buggy, fix, "--",
                     *cand["test_paths"], bare=True)
    test_changes = [{"status": line.split("\t")[0][0], "path": line.split("\t")[1]}
                    for line in status.splitlines() if line.strip()]
    modules = [t["path"] for t in test_changes if t["status"] != "D" and kit.is_test_module(t["path"])]
    if not modules:
        return {"rejected": "no test module left at the fix"}
    old, new, hunks = changed_lines(mirror, buggy, fix, cand["source_file"])
    try:
        buggy_source = kit.git(mirror, "show", f"{buggy}:{cand['source_file']}", bare=True)
        fixed_source = kit.git(mirror, "show", f"{fix}:{cand['source_file']}", bare=True)
        functions = fixed_functions(buggy_source, fixed_source, hunks)
    except (SyntaxError, RuntimeError) as e:
        return {"rejected": f"buggy source does not parse with this Python: {e}"[:200]}
    changed = [buggy_source.splitlines()[i - 1] for i in old if i <= len(buggy_source.splitlines())] \
        + [fixed_source.splitlines()[i - 1] for i in new if i <= len(fixed_source.splitlines())]
    if all(METADATA_LINE.match(t) or not t.strip() for t in changed):
        return {"rejected": "the fix changes only metadata (__version__, __all__, ...)"}
    return {
        "name": f"{project}-{fix[:8]}",
        "project": project,
        "upstream": upstream,
        "fix": fix,
        "buggy": buggy,
        "date": cand["date"],
        "subject": cand["subject"],
        "message_suggests_fix": suggests_fix,
        "source_file": cand["source_file"],
        "diff_lines": cand["diff_lines"],
        "buggy_lines": old,
        "fixed_lines": new,
        "functions": functions,
        "symbols": [f"py:{python_module(cand['source_file'])}" + ("" if f == "<module>" else f".{f}")
                    for f in functions],
        "test_changes": test_changes,
        "test_files": modules,
        "change_key": change_key(mirror, buggy, fix, cand["source_file"]),
    }


# What judge() measures, cached per fix commit.
MEASURED = ("pytest_options", "bench_head", "failing_tests", "failures_at_buggy", "flaky_at_buggy",
            "fixed_failures", "test_command", "check_command", "timing")


def judge(case: dict, clone: Path, mirror: Path, args, home: Path) -> dict:
    """Runs the changed test modules at the fix and at the rebuilt buggy revision:
    the measured fields (MEASURED), or {"rejected": reason}."""
    fix, modules = case["fix"], case["test_files"]
    opts = {"pytest_options": ["pythonpath=src"] if case["source_file"].startswith("src/") else []}
    checkout(clone, fix)
    fixed1 = kit.run_pytest(clone, kit.pytest_argv(opts, *modules), args.timeout, home)
    if not fixed1["outcomes"] and "unrecognized arguments" in fixed1["tail"]:
        # addopts naming a plugin Debian's pytest lacks (--cov, ...): drop them.
        opts["pytest_options"].append("addopts=")
        fixed1 = kit.run_pytest(clone, kit.pytest_argv(opts, *modules), args.timeout, home)
    if fixed1["timed_out"]:
        return {"rejected": "test modules time out at the fix"}
    if not passed(fixed1):
        return {"rejected": "nothing passes at the fix", "tail": fixed1["tail"][-600:]}
    with tempfile.TemporaryDirectory(prefix="real-bug-") as tmp:
        case_repo = Path(tmp) / "repo"
        bench_head = kit.build_case(case, case_repo, source=mirror)
        bug1 = kit.run_pytest(case_repo, kit.pytest_argv(opts, *modules), args.timeout, home)
        if bug1["timed_out"]:
            return {"rejected": "test modules time out at the buggy revision"}
        ids = [t for t in bug1["outcomes"] if t in kit.failed(bug1["outcomes"]) and t in passed(fixed1)]
        if not ids:
            return {"rejected": "no test fails at buggy and passes at the fix",
                    "buggy_tail": bug1["tail"][-400:]}
        failures = {t: bug1["messages"].get(t, "") for t in ids}
        if all(MISSING_API.search(m) for m in failures.values()):
            return {"rejected": "every failure names a missing API (a feature, not a bug): "
                    + next(iter(failures.values()))[:120]}
        fixed2 = kit.run_pytest(clone, kit.pytest_argv(opts, *modules), args.timeout, home)
        ids = [t for t in ids if t in passed(fixed2)]
        bug2 = kit.run_pytest(case_repo, kit.pytest_argv(opts, *ids), args.timeout, home)
        flaky = [t for t in ids if t not in kit.failed(bug2["outcomes"])]
        ids = [t for t in ids if t in kit.failed(bug2["outcomes"])]
        if not ids:
            return {"rejected": "the failures do not repeat (flaky at buggy or fix)"}
        # The one test TraceLab is given: the first failing id whose name is plain, alone, twice.
        first = next((t for t in ids if re.fullmatch(r"[\w./\-:\[\]]+", t)), ids[0])
        argv = kit.pytest_argv(opts, first, stop_first=True)
        alone = [kit.run_pytest(case_repo, argv, args.timeout, home) for _ in range(2)]
        if not all(first in kit.failed(r["outcomes"]) for r in alone):
            return {"rejected": "the first failing test does not fail alone, twice"}
        slowest = max(r["wall_s"] for r in alone)
        if slowest > args.max_test_s:
            return {"rejected": f"the failing test takes {slowest} s alone"}
    return {
        "pytest_options": opts["pytest_options"],
        "bench_head": bench_head,
        "failing_tests": ids,
        "failures_at_buggy": {t: failures.get(t, "") for t in ids},
        "flaky_at_buggy": flaky,
        "fixed_failures": sorted(kit.failed(fixed1["outcomes"]) | kit.failed(fixed2["outcomes"])),
        "test_command": kit.command_string(argv),
        "check_command": kit.command_string(kit.pytest_argv(opts, *modules)),
        "timing": {"failing_test_s": slowest, "test_files_at_fix_s": fixed1["wall_s"]},
    }


def passed(run: dict) -> set[str]:
    return kit.passed(run["outcomes"])


# --------------------------------------------------------------------------


def mine_project(project: str, upstream: str, args, home: Path) -> list[dict]:
    mirror = kit.mirror_of(upstream)
    if not mirror.exists():
        print(f"== {project}: no mirror at {mirror} (fetch github:{upstream})", file=sys.stderr)
        return []
    work = args.work / project
    work.mkdir(parents=True, exist_ok=True)
    cache_file = work / f"examined-v{RULES_VERSION}.json"
    cache = {} if args.refresh or not cache_file.exists() else json.loads(cache_file.read_text())
    clone = work / "repo"
    if not (clone / ".git").exists():
        shutil.rmtree(clone, ignore_errors=True)
        subprocess.run(["git", "clone", "-q", "--no-tags", str(mirror), str(clone)], check=True)
    cands, why = scan(mirror, args.max_commits, args.max_lines)
    # Messages that say "fix" first; newest first within each group.
    cands.sort(key=lambda c: 0 if FIX_WORDS.search(c["subject"]) else 1)
    print(f"== {project}: {len(cands)} candidates in the last {args.max_commits} commits "
          f"(others: {', '.join(f'{k} {v}' for k, v in sorted(why.items(), key=lambda kv: -kv[1]))})",
          file=sys.stderr)
    kept: list[dict] = []
    started = time.monotonic()
    for cand in cands:
        if len(kept) >= args.max_cases:
            break
        if time.monotonic() - started > args.max_project_s:
            print(f"   {project}: time cap of {args.max_project_s} s reached", file=sys.stderr)
            break
        case = describe(project, upstream, cand, mirror, args)
        if "rejected" in case:
            print(f"   {cand['fix'][:8]} {cand['subject'][:60]!r}: {case['rejected'][:90]}", file=sys.stderr)
            continue
        twin = next((k for k in kept if k["change_key"] == case["change_key"]), None)
        if twin:
            print(f"   {cand['fix'][:8]} {cand['subject'][:60]!r}: the same change as {twin['name']}", file=sys.stderr)
            continue
        key = cand["fix"]
        cached = cache.get(key)
        if cached is None or str(cached.get("rejected", "")).startswith("message"):
            t0 = time.monotonic()
            try:
                cached = judge(case, clone, mirror, args, home)
            except (RuntimeError, subprocess.CalledProcessError, OSError) as e:
                cached = {"rejected": f"error: {e}"[:300]}
            cached["examined_s"] = round(time.monotonic() - t0, 1)
            cache[key] = cached
            cache_file.write_text(json.dumps(cache, indent=1))
        if "rejected" in cached:
            print(f"   {key[:8]} {cand['subject'][:60]!r}: {cached['rejected'][:90]}", file=sys.stderr)
            continue
        case.update({k: cached[k] for k in MEASURED})
        kept.append(case)
        print(f"   {key[:8]} KEPT {case['name']}: {len(case['failing_tests'])} failing, "
              f"{case['functions']} in {case['source_file']}", file=sys.stderr)
    return kept


def pytest_version() -> str:
    proc = subprocess.run(["/usr/bin/python3", "-m", "pytest", "--version"], capture_output=True, text=True)
    return (proc.stdout + proc.stderr).strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--projects", help="comma-separated names (default: all of PROJECTS)")
    ap.add_argument("--max-commits", type=int, default=1500, help="newest commits examined per project")
    ap.add_argument("--max-cases", type=int, default=10, help="kept cases per project")
    ap.add_argument("--max-lines", type=int, default=6, help="changed lines (added + deleted) in the source file")
    ap.add_argument("--max-test-s", type=float, default=10.0, help="the failing test alone must run in this time")
    ap.add_argument("--max-project-s", type=float, default=900.0, help="mining time cap per project")
    ap.add_argument("--timeout", type=float, default=60.0, help="per pytest run")
    ap.add_argument("--fix-words-only", action="store_true",
                    help="only commits whose message suggests a fix (default: those first, then any)")
    ap.add_argument("--refresh", action="store_true", help="forget the cache of examined commits")
    ap.add_argument("--work", type=Path, default=kit.WORK)
    ap.add_argument("--out", type=Path, default=kit.CASES)
    args = ap.parse_args()
    chosen = set(args.projects.split(",")) if args.projects else None
    started = time.time()
    cases: list[dict] = []
    with kit.scratch_home() as home:
        for project, upstream in PROJECTS:
            if chosen and project not in chosen:
                continue
            cases += mine_project(project, upstream, args, Path(home))
    if chosen and args.out.exists():
        # Keep the other projects' cases when only some were mined again.
        old = json.loads(args.out.read_text())["cases"]
        cases = [c for c in old if c["project"] not in chosen] + cases
    order = {p: i for i, (p, _) in enumerate(PROJECTS)}
    cases.sort(key=lambda c: (order.get(c["project"], 99), c["date"]))
    spec = {
        "about": "Real bugs mined from fix commits by bench/real-bugs/mine.py; see README.md there.",
        "rules": {"max_commits": args.max_commits, "max_cases": args.max_cases, "max_lines": args.max_lines,
                  "max_test_s": args.max_test_s, "fix_words_only": args.fix_words_only, "timeout_s": args.timeout},
        "python": subprocess.run(["/usr/bin/python3", "--version"], capture_output=True, text=True).stdout.strip(),
        "pytest": pytest_version(),
        "cases": cases,
    }
    args.out.write_text(json.dumps(spec, indent=1) + "\n")
    projects = sorted({c["project"] for c in cases})
    print(f"{len(cases)} cases from {len(projects)} projects in {time.time() - started:.0f} s: "
          + ", ".join(f"{p} {sum(1 for c in cases if c['project'] == p)}" for p in projects)
          + f"; written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
