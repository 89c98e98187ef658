#!/usr/bin/env python3
"""Build benchmark cases from real public project histories.

For each project we take a window of its real first-parent history, replay the
window's trees as a linear chain of new commits (`git commit-tree`, original
authors, dates and messages kept), and inject a known defect while replaying.
The injected defect gives us ground truth (the expected culprit) while the
rest of every commit stays the project's real content.

Case kinds (see docs/benchmarks.md, "Real histories against git bisect run"):

  regression   a real source function breaks at commit C and stays broken; a
               synthetic commit a few commits later edits the neighbouring
               function of the same file, so restoring the whole file from
               C^ would throw that later work away.
  untestable   as `regression`, plus a range of earlier commits where the test
               cannot be collected / compiled (an unrelated module is broken
               and later fixed). `git bisect run` calls those commits bad.
  test-edit    as `regression`, plus C also adds an unrelated test to the
               failing test's file: a fix must not revert test files.
  flaky        the test fails with probability p_low before F and p_high from
               F on (unseeded `random`): the expected culprit is F.

Python 3 stdlib only; git via subprocess. Histories are never committed: the
input is a local mirror (from the `fetch` tool) or any clone URL/path, the
output goes under --work (default /tmp/tracelab-bench).

    python3 bench/real-histories/build_cases.py [--work DIR] [--only NAME ...] [--no-verify]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from projects import PROJECTS, Project  # noqa: E402


# --------------------------------------------------------------------------
# git helpers


def git(repo: Path, *args: str, input: bytes | None = None, env: dict | None = None,
        check: bool = True) -> str:
    """Runs git in `repo` and returns stdout as text (raises on failure when `check`)."""
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.run(["git", "-C", str(repo), *args], input=input,
                          capture_output=True, env=full_env)
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode(errors="replace")


class BlobReader:
    """One long-lived `git cat-file --batch`: reading ~1,000 blobs by spawning git each time is slow."""

    def __init__(self, repo: Path):
        self.proc = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def read(self, rev: str, path: str) -> str | None:
        self.proc.stdin.write(f"{rev}:{path}\n".encode())
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().decode()
        if header.endswith("missing\n"):
            return None
        size = int(header.split()[2])
        data = self.proc.stdout.read(size + 1)[:-1]
        return data.decode()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def edit_tree(repo: Path, tree: str, files: dict[str, str]) -> str:
    """Returns a tree equal to `tree` with `files` (path -> text) replaced, via a private index."""
    if not files:
        return tree
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        git(repo, "read-tree", tree, env=env)
        for path, text in files.items():
            blob = git(repo, "hash-object", "-w", "--stdin", input=text.encode()).strip()
            # Keep the file's mode (more-itertools' modules are 100755): a mode
            # change would be one more injected difference.
            listed = git(repo, "ls-tree", tree, "--", path).split()
            mode = listed[0] if listed else "100644"
            git(repo, "update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}", env=env)
        return git(repo, "write-tree", env=env).strip()


@dataclass
class Original:
    """One commit of the real first-parent window."""
    sha: str
    tree: str
    message: str
    author: tuple[str, str, str]
    committer: tuple[str, str, str]


def read_window(repo: Path, tip: str, size: int) -> list[Original]:
    """The `size` first-parent commits ending at `tip`, oldest first."""
    fmt = "%H%x00%T%x00%an%x00%ae%x00%ad%x00%cn%x00%ce%x00%cd%x00%B%x1e"
    out = git(repo, "log", "--first-parent", f"-n{size}", "--date=raw", f"--format={fmt}", tip)
    commits = []
    for record in out.split("\x1e"):
        record = record.lstrip("\n")
        if not record:
            continue
        sha, tree, an, ae, ad, cn, ce, cd, msg = record.split("\x00")
        commits.append(Original(sha, tree, msg.strip(), (an, ae, ad), (cn, ce, cd)))
    commits.reverse()
    if len(commits) < size:
        raise RuntimeError(f"window wants {size} commits, history has {len(commits)}")
    return commits


def commit_tree(repo: Path, tree: str, parent: str | None, message: str,
                author: tuple[str, str, str], committer: tuple[str, str, str]) -> str:
    """Creates one commit with the given identity (dates kept, so history looks real)."""
    env = {"GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1], "GIT_AUTHOR_DATE": author[2],
           "GIT_COMMITTER_NAME": committer[0], "GIT_COMMITTER_EMAIL": committer[1],
           "GIT_COMMITTER_DATE": committer[2]}
    args = ["commit-tree", tree, "-m", message]
    if parent:
        args += ["-p", parent]
    return git(repo, *args, env=env).strip()


# --------------------------------------------------------------------------
# text edits


def replace_once(text: str, old: str, new: str, where: str) -> str:
    """Replaces `old` exactly once; a missing or repeated anchor means the case is ill-defined."""
    count = text.count(old)
    if count != 1:
        raise RuntimeError(f"{where}: anchor {old!r} found {count} times (want 1)")
    return text.replace(old, new)


def replace_all(text: str, old: str, new: str, where: str) -> str:
    """Replaces every `old` (at least one), for defects spread over several lines."""
    if old not in text:
        raise RuntimeError(f"{where}: anchor {old!r} not found")
    return text.replace(old, new)


def strip_cargo_deps(toml: str) -> str:
    """Drops every dependency table, [[bench]] target and feature that names a dependency.

    The machine cannot download crates; the chosen crates' library and tests
    need none of them (optional deps, criterion benches)."""
    out, skipping, in_features = [], False, False
    for line in toml.splitlines(keepends=True):
        header = re.match(r"^\s*\[\[?([^\]]+)\]\]?\s*$", line)
        if header:
            name = header.group(1)
            skipping = "dependencies" in name or line.strip() == "[[bench]]"
            in_features = name.strip() == "features"
        if skipping:
            continue
        if in_features and ("dep:" in line or re.match(r'^\s*(serde|no-panic)\s*=', line)):
            continue
        out.append(line)
    return "".join(out)


# --------------------------------------------------------------------------
# cases


@dataclass
class CaseSpec:
    """Where the defects go, as indices into the real window."""
    kind: str
    culprit_index: int
    broken_range: tuple[int, int] | None = None
    test_edit: bool = False
    neighbour_after: int | None = None  # synthetic neighbour-edit commit after this index
    flaky_rates: tuple[float, float] | None = None


@dataclass
class Emitted:
    """One commit of the rewritten chain and what was injected into it."""
    sha: str
    index: int
    synthetic: bool
    notes: list[str] = field(default_factory=list)


def case_specs(p: Project, n: int, revertible) -> list[CaseSpec]:
    """The cases one project gets; positions vary per kind so culprits are not all in one place.

    `revertible(i)` says whether window commit i's own change reverts cleanly
    at the window's tip. The culprit is the nearest such commit to the
    target position: a commit whose real changes conflict with later real
    work can be fixed by no revert at all, which would measure the project's
    history rather than the tools."""
    def near(target: int) -> int:
        for d in range(0, n // 4):
            for i in (target + d, target - d):
                if 0 < i < n - 8 and not {i - 1, i} & set(p.natural_untestable) and revertible(i):
                    return i
        raise RuntimeError(f"{p.name}: no cleanly revertible commit near {target}")

    specs = []
    for kind in p.kinds:
        if kind == "regression":
            c = near(int(n * 0.62))
            specs.append(CaseSpec(kind, c, neighbour_after=c + 6))
        elif kind == "untestable":
            c = near(int(n * 0.71))
            # Just before C, where bisection's last probes land: a range far
            # from C is often never probed and would test nothing.
            specs.append(CaseSpec(kind, c, broken_range=(c - 14, c - 2), neighbour_after=c + 4))
        elif kind == "test-edit":
            c = near(int(n * 0.47))
            specs.append(CaseSpec(kind, c, test_edit=True, neighbour_after=c + 5))
        elif kind == "flaky":
            specs.append(CaseSpec(kind, int(n * 0.55), flaky_rates=p.flaky_rates))
    return specs


class RevertProbe:
    """Answers "does window commit i revert cleanly at the tip?" in one scratch checkout."""

    def __init__(self, work: Path, window: list[Original], scratch: Path):
        self.window, self.co = window, scratch / "revert-probe"
        subprocess.run(["git", "clone", "-q", "--no-tags", "--no-checkout", str(work), str(self.co)], check=True)
        self.cache: dict[int, bool] = {}

    def __call__(self, i: int) -> bool:
        if i not in self.cache:
            git(self.co, "checkout", "-q", "--force", "--detach", self.window[-1].sha)
            rc = subprocess.run(["git", "-C", str(self.co), "revert", "--no-commit", self.window[i].sha],
                                capture_output=True).returncode
            git(self.co, "reset", "-q", "--hard", check=False)
            self.cache[i] = rc == 0
        return self.cache[i]


def transform(p: Project, spec: CaseSpec, reader: BlobReader, orig: Original,
              i: int, neighbour_on: bool) -> tuple[dict[str, str], list[str]]:
    """The files to change in window commit `i` and a note for each injection."""
    files: dict[str, str] = {}
    notes: list[str] = []

    def get(path: str) -> str:
        if path not in files:
            text = reader.read(orig.sha, path)
            if text is None:
                raise RuntimeError(f"{p.name}@{orig.sha[:10]}: {path} missing")
            files[path] = text
        return files[path]

    where = f"{p.name}@{orig.sha[:10]}"
    if p.lang == "rust":
        files["Cargo.toml"] = strip_cargo_deps(get("Cargo.toml"))
    if p.go_module and reader.read(orig.sha, "go.mod") is None:
        # Commits from before the project had a go.mod: module mode (the
        # only mode without a GOPATH) needs one; the code is unchanged.
        files["go.mod"] = f"module {p.go_module}\n"
    if spec.kind != "flaky" and i >= spec.culprit_index:
        path, old, new = p.bug
        files[path] = (replace_all if p.bug_all else replace_once)(get(path), old, new, where)
        if i == spec.culprit_index:
            notes.append(f"bug: {path}")
    if neighbour_on:
        path, old, new = p.neighbour
        files[path] = replace_once(get(path), old, new, where)
    if spec.test_edit and i >= spec.culprit_index:
        files[p.test_file] = get(p.test_file).rstrip("\n") + "\n" + p.test_addition
        if i == spec.culprit_index:
            notes.append(f"test edit: {p.test_file}")
    if spec.broken_range and spec.broken_range[0] <= i < spec.broken_range[1]:
        path, addition = p.breakage
        files[path] = get(path).rstrip("\n") + "\n" + addition
        if i == spec.broken_range[0]:
            notes.append(f"breaks {path}")
    if spec.flaky_rates:
        rate = spec.flaky_rates[1] if i >= spec.culprit_index else spec.flaky_rates[0]
        path = p.flaky[0]
        text = get(path)
        for old, new in p.flaky[1:]:
            text = replace_once(text, old, new.replace("RATE", f"{rate:.2f}"), where)
        files[path] = text
        if i == spec.culprit_index:
            notes.append(f"flaky rate {spec.flaky_rates[0]} -> {spec.flaky_rates[1]}: {path}")
    return files, notes


def build_chain(work: Path, p: Project, spec: CaseSpec, window: list[Original],
                reader: BlobReader) -> list[Emitted]:
    """Replays the window with the case's injections; returns the new commits oldest first."""
    emitted: list[Emitted] = []
    parent = None
    for i, orig in enumerate(window):
        neighbour_on = spec.neighbour_after is not None and i > spec.neighbour_after
        files, notes = transform(p, spec, reader, orig, i, neighbour_on)
        tree = edit_tree(work, orig.tree, files)
        message = f"{orig.message}\n\n[bench replay of {p.repo}@{orig.sha}]"
        parent = commit_tree(work, tree, parent, message, orig.author, orig.committer)
        emitted.append(Emitted(parent, i, False, notes))
        if spec.neighbour_after == i:
            files, _ = transform(p, spec, reader, orig, i, True)
            tree = edit_tree(work, orig.tree, files)
            message = f"{p.neighbour_message}\n\n[bench: synthetic commit]"
            parent = commit_tree(work, tree, parent, message, orig.author, orig.committer)
            emitted.append(Emitted(parent, i, True, ["neighbour edit"]))
    return emitted


# --------------------------------------------------------------------------
# verification (ground truth must hold before anyone is measured against it)


def bench_env() -> dict:
    """PATH with the pinned Rust toolchain and the system python3 first (no version-manager shims)."""
    path = os.pathsep.join([*PROJECT_PATH_PREFIX, "/usr/local/bin", "/usr/bin", "/bin"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PATH"] = path
    return env


PROJECT_PATH_PREFIX: list[str] = []


def run_test(checkout: Path, command: list[str], rev: str) -> tuple[int, str]:
    """Checks out `rev` and runs the test command; returns (exit code, output tail)."""
    git(checkout, "checkout", "-q", "--force", rev)
    git(checkout, "clean", "-q", "-fdx", "-e", "target")
    proc = subprocess.run(command, cwd=checkout, capture_output=True, text=True,
                          env=bench_env(), timeout=300)
    return proc.returncode, (proc.stdout + proc.stderr)[-6000:]


def verify_case(work: Path, branch: str, p: Project, case: dict, chain: list[Emitted]) -> list[str]:
    """Runs the test where the ground truth says pass/fail/untestable; returns problems found."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="tlb-verify-") as tmp:
        co = Path(tmp) / "co"
        subprocess.run(["git", "clone", "-q", "--no-tags", "--single-branch", "-b", branch,
                        str(work), str(co)], check=True)
        cmd = case["argv"]
        if case["kind"] == "flaky":
            return verify_flaky(co, cmd, case)
        checks = [("good", case["good"], "pass"), ("bad", case["bad"], "fail")]
        if True:
            c = case["culprit"]
            checks += [("culprit^", git(co, "rev-parse", c + "^").strip(), "pass"), ("culprit", c, "fail")]
        for label, rev in case.get("broken", [])[:1]:
            checks.append((f"broken {label}", rev, "error"))
        for label, rev, want in checks:
            code, tail = run_test(co, cmd, rev)
            got = "pass" if code == 0 else "fail"
            if want == "error":
                ok = code != 0 and any(m in tail for m in p.untestable_markers)
            else:
                ok = got == want
            if not ok:
                problems.append(f"{label} {rev[:10]}: want {want}, exit {code}: {tail[-300:]}")
        if case["kind"] != "flaky":
            git(co, "checkout", "-q", "--force", case["bad"])
            rv = subprocess.run(["git", "-C", str(co), "revert", "--no-commit", case["culprit"]],
                                capture_output=True, text=True)
            case["revert_applies_cleanly"] = rv.returncode == 0
            if rv.returncode == 0:
                code, tail = subprocess.run(cmd, cwd=co, capture_output=True, text=True,
                                            env=bench_env()).returncode, ""
                case["revert_passes"] = code == 0
            git(co, "reset", "-q", "--hard")
    return problems


def verify_flaky(co: Path, cmd: list[str], case: dict, runs: int = 20) -> list[str]:
    """Measures the failure rate just before F, at F and at the tip (recorded in the case)."""
    f = case["culprit"]
    points = {"before": git(co, "rev-parse", f + "^").strip(), "culprit": f, "bad": case["bad"]}
    measured = {}
    for label, rev in points.items():
        measured[label] = sum(run_test(co, cmd, rev)[0] != 0 for _ in range(runs)) / runs
    case["measured_failure_rate"] = measured
    low, high = case["flaky_rates"]
    problems = []
    if measured["bad"] == 0 or measured["culprit"] == 0:
        problems.append(f"no failure in {runs} runs at F or the tip: {measured}")
    if low == 0 and measured["before"] > 0:
        problems.append(f"failures before F with p=0: {measured}")
    return problems


# --------------------------------------------------------------------------


def build_project(work_root: Path, p: Project, verify: bool) -> list[dict]:
    """Makes the project's work repository and all its cases as branches in it."""
    work = work_root / "repos" / f"{p.name}.git"
    if work.exists():
        shutil.rmtree(work)
    work.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", "--bare", "--no-tags", p.source(), str(work)], check=True)
    window = read_window(work, p.tip, p.window)
    reader = BlobReader(work)
    cases = []
    scratch = Path(tempfile.mkdtemp(prefix="tlb-build-"))
    try:
        for spec in case_specs(p, len(window), RevertProbe(work, window, scratch)):
            chain = build_chain(work, p, spec, window, reader)
            branch = f"bench/{spec.kind}"
            git(work, "update-ref", f"refs/heads/{branch}", chain[-1].sha)
            culprit = next(e for e in chain if e.index == spec.culprit_index and not e.synthetic)
            case = {
                "id": f"{p.name}/{spec.kind}",
                "project": p.name,
                "upstream": p.repo,
                "language": p.lang,
                "kind": spec.kind,
                "repo": str(work),
                "branch": branch,
                "test": p.test,
                "argv": p.argv(),
                "allow": [],
                "good": chain[0].sha,
                "bad": chain[-1].sha,
                "culprit": culprit.sha,
                "culprit_upstream": window[spec.culprit_index].sha,
                "commits": len(chain),
                "culprit_position": chain.index(culprit),
                "window": {"first": window[0].sha, "last": window[-1].sha},
                "natural_untestable": [chain_sha(chain, i) for i in p.natural_untestable],
                "test_file": p.test_file,
                "test_files_pattern": p.test_files_pattern,
                "neighbour_marker": p.neighbour[2].split("\n")[0] if spec.neighbour_after is not None else None,
            }
            if spec.broken_range:
                case["broken"] = [[f"index {spec.broken_range[0]}", chain_sha(chain, spec.broken_range[0])]]
                case["broken_count"] = spec.broken_range[1] - spec.broken_range[0]
            if spec.flaky_rates:
                case["flaky_rates"] = list(spec.flaky_rates)
            if verify:
                problems = verify_case(work, branch, p, case, chain)
                case["verify_problems"] = problems
                status = "ok" if not problems else "PROBLEMS:\n  " + "\n  ".join(problems)
                print(f"  {case['id']}: {status}", file=sys.stderr)
            cases.append(case)
    finally:
        reader.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return cases


def chain_sha(chain: list[Emitted], index: int) -> str:
    """The rewritten commit for window index `index` (never the synthetic one)."""
    return next(e.sha for e in chain if e.index == index and not e.synthetic)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/tmp/tracelab-bench", type=Path)
    ap.add_argument("--only", nargs="*", help="project names to build")
    ap.add_argument("--no-verify", action="store_true", help="skip running tests at the key commits")
    ap.add_argument("--rust-toolchain-bin", default=str(Path.home() / ".rustup/toolchains/1.95.0-x86_64-unknown-linux-gnu/bin"))
    args = ap.parse_args()
    PROJECT_PATH_PREFIX.append(args.rust_toolchain_bin)
    args.work.mkdir(parents=True, exist_ok=True)
    all_cases = []
    for p in PROJECTS:
        if args.only and p.name not in args.only:
            continue
        print(f"{p.name}: window of {p.window} first-parent commits ending at {p.tip[:12]}", file=sys.stderr)
        all_cases += build_project(args.work, p, not args.no_verify)
    out = args.work / "cases.json"
    if args.only and out.exists():  # rebuilding some projects keeps the others' cases
        kept = [c for c in json.loads(out.read_text())["cases"] if c["project"] not in args.only]
        all_cases = kept + all_cases
    out.write_text(json.dumps({"path_prefix": PROJECT_PATH_PREFIX, "cases": all_cases}, indent=2))
    bad = [c["id"] for c in all_cases if c.get("verify_problems")]
    print(f"wrote {len(all_cases)} cases to {out}" + (f"; verification problems: {bad}" if bad else ""),
          file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
