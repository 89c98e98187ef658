#!/usr/bin/env python3
"""Run TraceLab and `git bisect run` on every case of cases.json and compare them.

Per case, in this one process and one after the other (so both see the same
machine): (a) `git bisect start BAD GOOD && git bisect run CMD` in a fresh
clone, as a user would type it (no `exit 125` wrapper); (b) `tracelab
investigate ... --parallel 2 --format json` in another fresh clone, with every
stderr line timestamped as it arrives so the moment the culprit is announced
can be measured, not only the end.

    python3 bench/real-histories/run.py [--work DIR] [--tracelab BIN] [--only ID-PREFIX ...] [--out FILE]

Python 3 stdlib only. Both tools get the same PATH: the pinned Rust
toolchain's bin directory, then /usr/local/bin:/usr/bin:/bin (the system
python3, no version-manager shim).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

DEFAULT_BIN = Path.home() / ".cache/tracelab/target-bench/release/tracelab"
# The line that names the culprit: today "verifying the revert of SHA"; the
# engine is expected to print "culprit found: SHA" — either counts.
# "culprit candidate: SHA" is the early search's answer, printed before the
# re-runs at bad have confirmed the failure is deterministic.
CANDIDATE_LINE = re.compile(r"culprit candidate", re.I)
CULPRIT_LINE = re.compile(r"culprit found|culprit:|verifying the revert of|culprit\b.*\b[0-9a-f]{7,40}\b", re.I)
SHA = re.compile(r"\b[0-9a-f]{7,40}\b")


def bench_env(path_prefix: list[str]) -> dict:
    """Our PATH; no PYTHON* variables (this session sets PYTHONDONTWRITEBYTECODE, which
    TraceLab's sandbox clears; `git bisect run` should not get different Python behaviour)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PATH"] = os.pathsep.join([*path_prefix, "/usr/local/bin", "/usr/bin", "/bin"])
    return env


def fresh_clone(case: dict, parent: Path, name: str) -> Path:
    """A new clone of the case's branch only, so neither tool sees the other's state."""
    dest = parent / name
    subprocess.run(["git", "clone", "-q", "--no-tags", "--single-branch", "-b", case["branch"],
                    case["repo"], str(dest)], check=True)
    return dest


def same_commit(a: str | None, b: str) -> bool:
    return bool(a) and len(a) >= 7 and (b.startswith(a) or a.startswith(b))


# --------------------------------------------------------------------------
# git bisect run


def run_git_bisect(case: dict, clone: Path, env: dict) -> dict:
    """Plain `git bisect run CMD`; returns the commit it names, steps and wall time."""
    start = time.monotonic()
    subprocess.run(["git", "-C", str(clone), "bisect", "start", case["bad"], case["good"]],
                   check=True, capture_output=True, env=env)
    proc = subprocess.run(["git", "-C", str(clone), "bisect", "run", *case["argv"]],
                          capture_output=True, text=True, env=env, cwd=clone)
    wall = time.monotonic() - start
    out = proc.stdout + proc.stderr
    named = re.search(r"^([0-9a-f]{40}) is the first bad commit", out, re.M)
    # git prints "running  'prog' 'arg' ..." per step; cargo's "running 10 tests" must not count.
    steps = len(re.findall(r"^running\s+'?" + re.escape(case["argv"][0]) + r"\b", out, re.M))
    return {
        "named": named.group(1) if named else None,
        "right": bool(named) and named.group(1) == case["culprit"],
        "wall_s": round(wall, 2),
        "steps": steps,
        "exit": proc.returncode,
        "tail": None if named else out[-400:],
    }


# --------------------------------------------------------------------------
# tracelab investigate


def stream_lines(pipe, sink: list, start: float) -> None:
    """Collects (seconds since start, line) as each stderr line arrives."""
    for raw in iter(pipe.readline, ""):
        sink.append((time.monotonic() - start, raw.rstrip("\n")))
    pipe.close()


def run_tracelab(case: dict, clone: Path, env: dict, binary: Path, db: Path) -> dict:
    """One investigation; times the culprit announcement and the end, reads the JSON report."""
    argv = [str(binary), "--db", str(db), "investigate", "--repo", str(clone), "--test", case["test"],
            "--good", case["good"], "--bad", case["bad"], "--parallel", "2", "--format", "json"]
    for program in case.get("allow", []):
        argv += ["--allow", program]
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[tuple[float, str]] = []
    reader = threading.Thread(target=stream_lines, args=(proc.stderr, lines, start))
    reader.start()
    stdout = proc.stdout.read()
    proc.wait()
    reader.join()
    wall = time.monotonic() - start
    result = {"command": shlex.join(argv), "exit": proc.returncode, "wall_s": round(wall, 2),
              "stderr": [f"[{t:7.2f}] {line}" for t, line in lines]}
    announced = next(((t, line) for t, line in lines
                      if CULPRIT_LINE.search(line) and not CANDIDATE_LINE.search(line)), None)
    candidate = next(((t, line) for t, line in lines if CANDIDATE_LINE.search(line)), None)
    result["candidate_s"] = round(candidate[0], 2) if candidate else None
    result["culprit_line"] = announced[1] if announced else None
    result["culprit_s"] = round(announced[0], 2) if announced else None
    # The search alone, from its first round to the announcement (reproduction
    # and the code index come before it).
    search_start = next((t for t, line in lines if "culprit search round 1" in line), None)
    first_answer = candidate or announced
    result["search_s"] = (round(first_answer[0] - search_start, 2)
                          if first_answer and search_start is not None else None)
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError:
        result["error"] = (stdout[-300:] + "\n" + "\n".join(l for _, l in lines[-5:])).strip()
        return result
    result.update(read_report(report, case, announced))
    return result


def read_report(report: dict, case: dict, announced) -> dict:
    """The fields the benchmark scores: culprit, verdict, winner, patch hygiene."""
    culprit = (report.get("culprit") or {}).get("commit")
    source = "culprit.commit"
    if not culprit:
        # Unverified culprits only appear in the revert hypothesis / the progress line.
        for h in report.get("hypotheses", []):
            m = h.get("kind") == "revert" and re.search(r"commit ([0-9a-f]{7,40})", h.get("summary", ""))
            if m:
                culprit, source = m.group(1), "revert hypothesis"
                break
    if not culprit and announced:
        m = SHA.search(announced[1])
        culprit, source = (m.group(0), "progress line") if m else (None, None)
    bisect = report.get("bisect") or {}
    winner = find_winner(report)
    patch = (winner or {}).get("patch") or ""
    files = re.findall(r"^diff --git a/(\S+) b/", patch, re.M)
    test_re = re.compile(case["test_files_pattern"])
    marker = case.get("neighbour_marker")
    return {
        "culprit": culprit,
        "culprit_source": source,
        "right": same_commit(culprit, case["culprit"]),
        "verdict": report.get("verdict"),
        "state": report.get("state"),
        "flaky": report.get("flaky"),
        "bisect": {k: bisect.get(k) for k in ("candidates", "rounds", "test_runs", "untestable",
                                                "ambiguous", "confidence")},
        # The search's trail, compact: [round, position, result, runs] per
        # judgement (how many probes each round spent on untestable commits).
        "probes": [[p.get("round"), p.get("position"), p.get("result"), p.get("runs")]
                   for p in bisect.get("probes") or []],
        "pointed_at": [[p.get("commit", "")[:12], p.get("share")] for p in bisect.get("pointed_at") or []],
        "winner": (winner or {}).get("id"),
        "winner_kind": (winner or {}).get("kind"),
        "verified": bool(winner) and winner.get("status") == "VERIFIED",
        "patch_files": files,
        "patch_touches_tests": any(test_re.search(f) for f in files),
        # A fix should keep the later synthetic edit of the neighbouring function.
        "patch_drops_later_edit": bool(marker) and f"\n-{marker}" in patch,
        "hypotheses": [{"id": h.get("id"), "kind": h.get("kind"), "status": h.get("status"),
                        "reason": h.get("status_reason")} for h in report.get("hypotheses", [])],
        "notes": report.get("notes"),
        "duration_ms": report.get("duration_ms"),
    }


def find_winner(report: dict) -> dict | None:
    """`winner` may be a hypothesis id or the hypothesis itself."""
    w = report.get("winner")
    if isinstance(w, dict):
        return w
    if isinstance(w, str):
        return next((h for h in report.get("hypotheses", []) if h.get("id") == w), None)
    return None


# --------------------------------------------------------------------------
# reporting


def ratio(a, b):
    return round(a / b, 2) if a is not None and b else None


def table(rows: list[dict]) -> str:
    """The per-case Markdown table used in docs/benchmarks.md."""
    head = ("| case | commits | culprit at | bisect run: steps / wall / right | TraceLab: culprit at / end / right "
            "| search ÷ bisect | candidate ÷ bisect | culprit ÷ bisect | end ÷ bisect | verdict | fix VERIFIED | patch touches tests |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    out = []
    for r in rows:
        b, t = r["bisect_run"], r["tracelab"]
        out.append(
            f"| {r['id']} | {r['commits']} | {r['culprit_position']} "
            f"| {b['steps']} / {b['wall_s']:.1f} s / {right(b['right'], b.get('named_position'))} "
            f"| {fmt_s(t.get('culprit_s'))} / {t['wall_s']:.1f} s / {right(t.get('right'), t.get('culprit_position'))} "
            f"| {fmt(r['search_ratio'])} | {fmt(r.get('candidate_ratio'))} | {fmt(r['culprit_ratio'])} | {fmt(r['end_ratio'])} | {t.get('verdict', 'error')} "
            f"| {'yes' if t.get('verified') else 'no'} | {'YES' if t.get('patch_touches_tests') else 'no'} |")
    return head + "\n".join(out)


def right(ok, pos):
    """"yes", or where the wrong answer landed ("NO (71)"; "NO (none)" without an answer)."""
    return "yes" if ok else f"NO ({'none' if pos is None else pos})"


def fmt(x):
    return "–" if x is None else f"{x:.2f}"


def fmt_s(x):
    return "–" if x is None else f"{x:.1f} s"


def summary(rows: list[dict]) -> dict:
    """Overall numbers: time ratios, culprits right by kind, fixes verified without test edits."""
    def count(pred, subset):
        return f"{sum(1 for r in subset if pred(r))}/{len(subset)}"

    det = [r for r in rows if r["kind"] != "flaky"]
    flaky = [r for r in rows if r["kind"] == "flaky"]
    cr = [r["culprit_ratio"] for r in rows if r["culprit_ratio"] is not None]
    er = [r["end_ratio"] for r in rows if r["end_ratio"] is not None]
    sr = [r["search_ratio"] for r in rows if r["search_ratio"] is not None]
    dr = [r["candidate_ratio"] for r in rows if r.get("candidate_ratio") is not None]
    return {
        "cases": len(rows),
        "search_over_bisect_median": round(statistics.median(sr), 2) if sr else None,
        "candidate_over_bisect_median": round(statistics.median(dr), 2) if dr else None,
        "culprit_over_bisect_mean": round(statistics.mean(cr), 2) if cr else None,
        "culprit_over_bisect_median": round(statistics.median(cr), 2) if cr else None,
        "end_over_bisect_mean": round(statistics.mean(er), 2) if er else None,
        "end_over_bisect_median": round(statistics.median(er), 2) if er else None,
        "bisect_right_deterministic": count(lambda r: r["bisect_run"]["right"], det),
        "tracelab_right_deterministic": count(lambda r: r["tracelab"].get("right"), det),
        "bisect_right_flaky": count(lambda r: r["bisect_run"]["right"], flaky),
        "tracelab_right_flaky": count(lambda r: r["tracelab"].get("right"), flaky),
        "verified_fix_without_test_edit": count(
            lambda r: r["tracelab"].get("verified") and not r["tracelab"].get("patch_touches_tests")
            and r["tracelab"].get("winner_kind") == "revert", det),
        "verified_any_winner": count(lambda r: r["tracelab"].get("verified"), rows),
        "patch_touches_tests": count(lambda r: r["tracelab"].get("patch_touches_tests"), rows),
        "patch_drops_later_edit": count(lambda r: r["tracelab"].get("patch_drops_later_edit"), rows),
        "bisect_wall_total_s": round(sum(r["bisect_run"]["wall_s"] for r in rows), 1),
        "tracelab_wall_total_s": round(sum(r["tracelab"]["wall_s"] for r in rows), 1),
    }


# --------------------------------------------------------------------------


def run_case(case: dict, env: dict, binary: Path, scratch: Path) -> dict:
    print(f"== {case['id']} ({case['commits']} commits, culprit at {case['culprit_position']})", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="case-", dir=scratch) as tmp:
        tmp = Path(tmp)
        bisect = run_git_bisect(case, fresh_clone(case, tmp, "bisect"), env)
        print(f"   git bisect run: {bisect['steps']} steps, {bisect['wall_s']} s, "
              f"{'right' if bisect['right'] else 'WRONG ' + str(bisect['named'])}", file=sys.stderr)
        clone = fresh_clone(case, tmp, "tracelab")
        order = git_order(clone, case["bad"])
        tl = run_tracelab(case, clone, env, binary, scratch / "tracelab.db")
        bisect["named_position"] = position(order, bisect["named"])
        tl["culprit_position"] = position(order, tl.get("culprit"))
        print(f"   tracelab: culprit at {tl.get('culprit_s')} s, end {tl['wall_s']} s, "
              f"{'right' if tl.get('right') else 'WRONG ' + str(tl.get('culprit'))}, verdict {tl.get('verdict')}, "
              f"verified {tl.get('verified')}, patch {tl.get('patch_files')}", file=sys.stderr)
    return {
        "id": case["id"], "kind": case["kind"], "project": case["project"],
        "commits": case["commits"], "culprit_position": case["culprit_position"],
        "expected": case["culprit"], "bisect_run": bisect, "tracelab": tl,
        "search_ratio": ratio(tl.get("search_s"), bisect["wall_s"]),
        "culprit_ratio": ratio(tl.get("culprit_s"), bisect["wall_s"]),
        "candidate_ratio": ratio(tl.get("candidate_s"), bisect["wall_s"]),
        "end_ratio": ratio(tl["wall_s"], bisect["wall_s"]),
    }


def git_order(clone: Path, bad: str) -> list[str]:
    """The case's commits oldest first, to say where a wrong answer landed."""
    out = subprocess.run(["git", "-C", str(clone), "rev-list", "--first-parent", "--reverse", bad],
                         capture_output=True, text=True, check=True).stdout
    return out.split()


def position(order: list[str], sha: str | None) -> int | None:
    if not sha:
        return None
    return next((i for i, c in enumerate(order) if same_commit(sha, c)), None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/tmp/tracelab-bench", type=Path)
    ap.add_argument("--tracelab", default=DEFAULT_BIN, type=Path)
    ap.add_argument("--only", nargs="*", help="case id prefixes, e.g. idna/ or itoa/regression")
    ap.add_argument("--out", type=Path, help="results JSON (default WORK/results-<time>.json)")
    args = ap.parse_args()
    spec = json.loads((args.work / "cases.json").read_text())
    env = bench_env(spec["path_prefix"])
    cases = [c for c in spec["cases"] if not args.only or any(c["id"].startswith(o) for o in args.only)]
    scratch = args.work / "runs"
    scratch.mkdir(parents=True, exist_ok=True)
    db = scratch / "tracelab.db"
    if db.exists():
        db.unlink()
    started = time.time()
    rows = [run_case(c, env, args.tracelab, scratch) for c in cases]
    result = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "total_s": round(time.time() - started, 1),
        "tracelab": str(args.tracelab),
        "machine": machine(),
        "summary": summary(rows),
        "rows": rows,
    }
    out = args.out or args.work / f"results-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2))
    print(table(rows))
    print()
    for k, v in result["summary"].items():
        print(f"{k}: {v}")
    print(f"total {result['total_s']} s; results in {out}")
    return 0


def machine() -> dict:
    """Enough to tell runs on different machines or under different load apart."""
    info = {"cpus": os.cpu_count(), "loadavg_start": os.getloadavg()}
    for cmd in (["git", "--version"], ["python3", "--version"]):
        info[cmd[0]] = subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
    return info


if __name__ == "__main__":
    sys.exit(main())
