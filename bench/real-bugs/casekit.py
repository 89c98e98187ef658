"""What mine.py and run.py share: where a project's history is, how a case's
buggy repository is rebuilt, how pytest runs and how its outcomes are read.

Python 3.11 stdlib only.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases.json"
WORK = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tracelab" / "real-bugs"
MIRRORS = Path(os.environ.get("TRACELAB_MIRRORS", "/work/.mirror"))

# TraceLab's local sandbox runs commands with this PATH (crates/sandbox/src/process.rs),
# so `python3` is Debian's /usr/bin/python3, never a version manager's shim.
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"

# The commit that lays the fixing commit's tests over the buggy parent is made
# with a fixed identity and date, so a rebuilt case has the same sha every time.
BENCH_IDENTITY = {
    "GIT_AUTHOR_NAME": "tracelab bench",
    "GIT_AUTHOR_EMAIL": "bench@tracelab.invalid",
    "GIT_COMMITTER_NAME": "tracelab bench",
    "GIT_COMMITTER_EMAIL": "bench@tracelab.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}
BENCH_MESSAGE = "bench: the fixing commit's tests"

# The same rule as TraceLab's oracle (crates/domain/src/oracle.rs, is_test_path), for Python.
TEST_DIRS = {"test", "tests", "__tests__", "spec", "specs", "testdata", "test-data", "test_data",
             "fixtures", "__fixtures__", "__snapshots__", "__mocks__"}


def is_test_path(path: str) -> bool:
    parts = [p for p in path.replace("\\", "/").split("/") if p and p != "."]
    if not parts:
        return False
    *dirs, name = parts
    if any(d.lower() in TEST_DIRS for d in dirs):
        return True
    stem, _, ext = name.lower().rpartition(".")
    if ext != "py":
        return False
    return stem.startswith("test_") or stem.endswith("_test") or stem in ("conftest", "tests", "test")


def is_test_module(path: str) -> bool:
    """A file pytest collects by default (python_files = test_*.py *_test.py), or tests.py/test.py."""
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")
                                     or name in ("tests.py", "test.py"))


def mirror_of(upstream: str) -> Path:
    """The bare mirror `fetch github:owner/name` brings: /work/.mirror/owner+name/repo."""
    return MIRRORS / upstream.replace("/", "+") / "repo"


def git(repo: Path | str, *args: str, check: bool = True, env: dict | None = None,
        bare: bool = False) -> str:
    flag = "--git-dir" if bare else "-C"
    proc = subprocess.run(["git", flag, str(repo), *args], capture_output=True, text=True,
                          check=False, env=env)
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def sandbox_env(home: Path) -> dict:
    """The environment TraceLab's local sandbox gives a command: PATH, a private HOME, LANG, TZ;
    plus a wide terminal so pytest's summary lines keep the error message (display only)."""
    return {"PATH": SANDBOX_PATH, "HOME": str(home), "LANG": "C.UTF-8", "TZ": "UTC", "COLUMNS": "400"}


def build_case(case: dict, dest: Path, source: Path | None = None) -> str:
    """A fresh clone at the buggy parent with the fixing commit's test files laid over it,
    committed as one new commit on branch `bench`. Returns the new HEAD sha."""
    source = source or mirror_of(case["upstream"])
    subprocess.run(["git", "clone", "-q", "--no-tags", "--no-checkout", str(source), str(dest)],
                   check=True, capture_output=True)
    git(dest, "remote", "remove", "origin")
    git(dest, "checkout", "-q", "-B", "bench", case["buggy"])
    present = [f for f in case["test_changes"] if f["status"] != "D"]
    if present:
        git(dest, "checkout", case["fix"], "--", *[f["path"] for f in present])
    removed = [f["path"] for f in case["test_changes"] if f["status"] == "D"]
    if removed:
        git(dest, "rm", "-q", "--", *removed)
    env = {**os.environ, **BENCH_IDENTITY}
    git(dest, "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", BENCH_MESSAGE, env=env)
    return git(dest, "rev-parse", "HEAD").strip()


# --------------------------------------------------------------------------
# pytest

OUTCOME = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)\s+(\S.*?)(?:\s+-\s+(.*))?$")


def pytest_argv(case_or_opts: dict, *targets: str, stop_first: bool = False) -> list[str]:
    """`python3 -m pytest -q -p no:cacheprovider [-o pythonpath=src] TARGETS`.

    `-o pythonpath=src` (pytest >= 7) stands for PYTHONPATH=src: TraceLab runs
    the command without a shell and with a fixed environment, and its
    allowlist has no `env`, so an environment variable cannot be passed."""
    argv = ["python3", "-m", "pytest"]
    if stop_first:
        argv.append("-x")
    argv += ["-q", "-p", "no:cacheprovider"]
    for opt in case_or_opts.get("pytest_options", []):
        argv += ["-o", opt]
    return argv + list(targets)


def run_pytest(repo: Path, argv: list[str], timeout: float, home: Path) -> dict:
    """Runs pytest with -rA and reads every test id's outcome from the summary."""
    start = time.monotonic()
    try:
        proc = subprocess.run([*argv, "-rA", "--color=no"], cwd=repo, env=sandbox_env(home),
                              capture_output=True, text=True, timeout=timeout)
        out, code, timed_out = proc.stdout + proc.stderr, proc.returncode, False
    except subprocess.TimeoutExpired as e:
        out = ((e.stdout or b"") + (e.stderr or b"")).decode("utf-8", "replace") if isinstance(e.stdout, bytes) \
            else (e.stdout or "") + (e.stderr or "")
        code, timed_out = None, True
    wall = time.monotonic() - start
    outcomes: dict[str, str] = {}
    messages: dict[str, str] = {}
    in_summary = False
    for line in out.splitlines():
        if re.match(r"^=+ short test summary info =+$", line):
            in_summary = True
            continue
        if in_summary:
            m = OUTCOME.match(line)
            if m:
                test_id = m.group(2).strip()
                if m.group(1) == "SKIPPED":
                    continue  # "SKIPPED [1] file:line: reason" names no id
                # A test that fails in its call and errors in teardown shows twice; failing wins.
                if outcomes.get(test_id) not in ("FAILED", "ERROR"):
                    outcomes[test_id] = m.group(1)
                    if m.group(3):
                        messages[test_id] = m.group(3)[:300]
    return {"exit": code, "timed_out": timed_out, "wall_s": round(wall, 2), "outcomes": outcomes,
            "messages": messages, "tail": out[-1500:]}


def failed(outcomes: dict[str, str]) -> set[str]:
    return {t for t, o in outcomes.items() if o in ("FAILED", "ERROR")}


def passed(outcomes: dict[str, str]) -> set[str]:
    return {t for t, o in outcomes.items() if o in ("PASSED", "XFAIL")}


def command_string(argv: list[str]) -> str:
    return shlex.join(argv)


def scratch_home() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="tracelab-bench-home-")
