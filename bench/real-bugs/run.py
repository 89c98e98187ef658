#!/usr/bin/env python3
"""Run `tracelab investigate` on every real bug of cases.json and score it.

Per case, one at a time: rebuild the buggy repository (the fix's parent with
the fixing commit's tests committed on top) in a temporary folder, run

    tracelab --db TMP/tracelab.db investigate --repo DIR --bad HEAD \
        --test "<the case's one failing test>" --parallel 2 --format json

under a wall limit (5 minutes), and score the report:

- localised: the 1-based rank of the fixed function (and of the fixed file)
  among the report's `suspects`, None when absent;
- plausible: the winner is VERIFIED, carries a patch, and the patch touches
  no test file (TraceLab's test-path rule);
- correct: the winner's patch, applied to a fresh copy of the buggy
  repository, makes every failing test of the fix pass, and the changed test
  files fail nothing that does not also fail at the fix (correct_at_fix_lines:
  and it edits a line the upstream fix edited).

    python3 bench/real-bugs/run.py [--only NAME ...] [--limit N] [--tracelab PATH]
        [--label LABEL] [--wall SECS] [--parallel K] [--cases FILE] [--resume]
    python3 bench/real-bugs/run.py --self-check   # the scorer against the upstream fixes, no TraceLab

Writes bench/real-bugs/results/<date>-<label>.json and prints a table and the
totals. Python 3.11 stdlib only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import casekit as kit

RESULTS = kit.HERE / "results"


def default_binary() -> Path:
    """$CARGO_TARGET_DIR/release, then ~/.cache/tracelab/target/release, then .../debug."""
    options = []
    if os.environ.get("CARGO_TARGET_DIR"):
        options.append(Path(os.environ["CARGO_TARGET_DIR"]) / "release" / "tracelab")
    base = Path.home() / ".cache" / "tracelab" / "target"
    options += [base / "release" / "tracelab", base / "debug" / "tracelab"]
    return next((p for p in options if p.exists()), options[-1])


def tool_env() -> dict:
    """This session's environment without PYTHON* variables and with the system PATH first
    (TraceLab's sandbox sets its own PATH for the test; git comes from here)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PATH"] = os.pathsep.join([kit.SANDBOX_PATH, env.get("PATH", "")])
    return env


# --------------------------------------------------------------------------
# one investigation


def investigate(case: dict, repo: Path, binary: Path, db: Path, wall: float, parallel: int,
                log: Path) -> dict:
    argv = [str(binary), "--db", str(db), "investigate", "--repo", str(repo), "--bad", "HEAD",
            "--test", case["test_command"], "--parallel", str(parallel), "--format", "json",
            "--issue-id", case["name"]]
    start = time.monotonic()
    with open(log, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, env=tool_env(),
                                start_new_session=True)
        try:
            stdout, _ = proc.communicate(timeout=wall)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                stdout, _ = proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                stdout, _ = proc.communicate()
            timed_out = True
    result = {"command": kit.command_string(argv), "exit": proc.returncode, "timed_out": timed_out,
              "wall_s": round(time.monotonic() - start, 1)}
    stderr = log.read_text(errors="replace").splitlines()
    result["stderr_tail"] = stderr[-12:]
    try:
        result["report"] = json.loads(stdout)
    except json.JSONDecodeError:
        result["report"] = None
        result["error"] = "timed out" if timed_out else (stdout[-300:] + " | " + " / ".join(stderr[-3:])).strip()
    return result


# --------------------------------------------------------------------------
# scoring


def patch_files(patch: str) -> list[str]:
    files = []
    for m in re.finditer(r"^diff --git a/(\S+) b/(\S+)", patch, re.M):
        files += [m.group(1)] if m.group(1) == m.group(2) else [m.group(1), m.group(2)]
    for m in re.finditer(r"^\+\+\+ b/(\S+)", patch, re.M):
        files.append(m.group(1))
    return sorted(set(files))


def edited_lines(diff: str, path: str) -> set[int]:
    """Old-side lines a diff edits in `path`: each removed line, and for an insertion the
    lines on both sides of it."""
    lines: set[int] = set()
    current, old, header = None, 0, True
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            current, header = None, True
        elif header and line.startswith("--- "):
            current = line[6:] if line.startswith("--- a/") else None
        elif header and line.startswith("+++ "):
            continue  # the new side's name, not an added line
        elif line.startswith("@@"):
            header = False
            m = re.match(r"^@@ -(\d+)(?:,(\d+))?", line)
            # "-a,0" is an insertion after line a: the next old line is a + 1.
            old = int(m.group(1)) + (1 if m.group(2) == "0" else 0) if m else 0
        elif current != path:
            continue
        elif line.startswith("-"):
            lines.add(old)
            old += 1
        elif line.startswith("+"):
            lines.update((old - 1, old))
        elif line.startswith(" "):
            old += 1
    return lines


def at_fix_lines(patch: str, case: dict) -> bool:
    """Whether the patch edits where the upstream fix did (a line the fix removed, or the
    place it inserted code), on the buggy side of the fixed file."""
    fix = kit.git(kit.mirror_of(case["upstream"]), "diff", "-U0", case["buggy"], case["fix"], "--",
                  case["source_file"], bare=True)
    return bool(edited_lines(patch, case["source_file"]) & edited_lines(fix, case["source_file"]))


def python_module(path: str) -> str:
    """TraceLab's module part of a qualified name (crates/code-index/src/qualify.rs)."""
    stem = path[:-3] if path.endswith(".py") else path
    for prefix in ("src/", "lib/"):
        if stem.startswith(prefix):
            stem = stem[len(prefix):]
            break
    return stem.removesuffix("/__init__").replace("/", ".")


def symbol_matches(symbol: str, path: str, case: dict) -> bool:
    """A suspect in the fixed file names a fixed definition or one inside it: its local
    name (the qualified name without `py:<module>.`) is a fixed definition's (`Class.method`)
    or starts with it plus a dot (a method of the class the fix added a method to)."""
    if path != case["source_file"]:
        return False
    if symbol in case["symbols"]:
        return True
    prefix = f"py:{python_module(path)}."
    local = symbol[len(prefix):] if symbol.startswith(prefix) else symbol.split(":", 1)[-1]
    return any(f != "<module>" and (local == f or local.startswith(f + ".")) for f in case["functions"])


def ranks_of(suspects: list[dict], case: dict) -> dict:
    function_rank = next((i for i, s in enumerate(suspects, 1)
                          if symbol_matches(s.get("symbol", ""), s.get("path", ""), case)), None)
    file_rank = next((i for i, s in enumerate(suspects, 1) if s.get("path") == case["source_file"]), None)
    return {"function_rank": function_rank, "file_rank": file_rank, "suspects": len(suspects)}


def ranks(report: dict, case: dict) -> dict:
    suspects = report.get("suspects") or []
    return {**ranks_of(suspects, case),
            "top_suspects": [f"{s.get('symbol')} ({s.get('path')}:{s.get('start_line')})" for s in suspects[:5]],
            "suspect_list": [{k: s.get(k) for k in ("symbol", "path", "start_line", "end_line", "score")}
                             for s in suspects]}


def rescore(path: Path, cases_file: Path) -> int:
    """Recomputes the ranks and totals of a results file with this file's rules (no TraceLab run)."""
    result = json.loads(path.read_text())
    cases = {c["name"]: c for c in json.loads(cases_file.read_text())["cases"]}
    dropped = [r["case"] for r in result["rows"] if r["case"] not in cases]
    if dropped:
        print(f"dropping rows of cases no longer in {cases_file}: {', '.join(dropped)}", file=sys.stderr)
    result["rows"] = [r for r in result["rows"] if r["case"] in cases]
    for row in result["rows"]:
        suspects = row.get("suspect_list")
        if suspects is None:  # rows written before suspect_list: "symbol (path:line)"
            suspects = [{"symbol": m.group(1), "path": m.group(2)} for m in
                        (re.match(r"^(\S+) \((.+):\d+\)$", t) for t in row.get("top_suspects", [])) if m]
        row.update(ranks_of(suspects, cases[row["case"]]))
        row["patch_at_fix_lines"] = bool(row.get("patch")) and at_fix_lines(row["patch"], cases[row["case"]])
    result["totals"] = totals(result["rows"])
    path.write_text(json.dumps(result, indent=1) + "\n")
    print_summary(result["rows"], path)
    return 0


def describe(h: dict | None) -> dict | None:
    """What the benchmark prints of a hypothesis: kind, agent, status, and whatever names
    the fix's origin (a repair operator in `detail`, the culprit of a revert)."""
    if not h:
        return None
    detail = h.get("detail")
    source = None
    if isinstance(detail, dict):
        source = next((str(detail[k]) for k in ("operator", "template", "repair", "mutation", "source", "origin")
                       if detail.get(k)), None)
    if not source and h.get("culprit"):
        source = "revert of " + h["culprit"].get("commit", "")[:10]
    return {"id": h.get("id"), "agent": h.get("agent"), "kind": h.get("kind"), "status": h.get("status"),
            "source": source, "summary": (h.get("summary") or "")[:200],
            "reason": (h.get("status_reason") or "")[:300], "detail": detail,
            "patch_files": patch_files(h.get("patch") or "")}


def check_patch(case: dict, patch: str, scratch: Path, home: Path, timeout: float) -> dict:
    """The winner's patch on a fresh buggy copy: every failing test of the fix, then the
    changed test files (no failure beyond those that also fail at the fix)."""
    repo = scratch / "check"
    kit.build_case(case, repo)
    (scratch / "winner.patch").write_text(patch)
    proc = subprocess.run(["git", "-C", str(repo), "apply", "--whitespace=nowarn", str(scratch / "winner.patch")],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return {"correct": False, "why": "the patch does not apply: " + proc.stderr.strip()[:200]}
    ids = kit.run_pytest(repo, kit.pytest_argv(case, *case["failing_tests"]), timeout, home)
    still = [t for t in case["failing_tests"] if ids["outcomes"].get(t) not in ("PASSED", "XFAIL")]
    if still:
        return {"correct": False, "why": f"{len(still)} of the fix's failing tests still fail or did not run",
                "still_failing": still}
    files = kit.run_pytest(repo, kit.pytest_argv(case, *case["test_files"]), timeout, home)
    if files["timed_out"]:
        return {"correct": False, "why": "the changed test files time out"}
    new = sorted(kit.failed(files["outcomes"]) - set(case.get("fixed_failures", [])))
    if new or not files["outcomes"]:
        return {"correct": False, "why": f"the changed test files fail {len(new)} tests the fix passes",
                "new_failures": new[:10]}
    return {"correct": True, "why": "all the fix's failing tests pass; the changed test files as at the fix"}


def score(case: dict, run: dict, scratch: Path, home: Path, timeout: float) -> dict:
    report = run.get("report") or {}
    winner = report.get("winner")
    if isinstance(winner, str):
        winner = next((h for h in report.get("hypotheses", []) if h.get("id") == winner), None)
    patch = (winner or {}).get("patch") or ""
    files = patch_files(patch)
    verified = bool(winner) and winner.get("status") == "VERIFIED"
    touches_tests = any(kit.is_test_path(f) for f in files)
    plausible = verified and bool(patch.strip()) and not touches_tests
    row = {
        "verdict": report.get("verdict"),
        "state": report.get("state"),
        "culprit": (report.get("culprit") or {}).get("commit"),
        **(ranks(report, case) if report else {"function_rank": None, "file_rank": None, "suspects": 0,
                                               "top_suspects": []}),
        "winner": describe(winner),
        "verified": verified,
        "patch_touches_tests": touches_tests,
        "patch_touches_fixed_file": case["source_file"] in files,
        "patch_at_fix_lines": bool(patch) and at_fix_lines(patch, case),
        "plausible": plausible,
        "correct": False,
        "hypotheses": [describe(h) for h in report.get("hypotheses", [])],
        "notes": report.get("notes"),
        "bisect": {k: (report.get("bisect") or {}).get(k) for k in ("good", "culprit", "oracle", "oracle_note",
                                                                    "note", "rounds", "probes")},
        "duration_ms": report.get("duration_ms"),
    }
    if plausible:
        row["check"] = check_patch(case, patch, scratch, home, timeout)
        row["correct"] = row["check"]["correct"]
        row["patch"] = patch
    return row


# --------------------------------------------------------------------------
# reporting


def fmt_rank(r):
    return "–" if r is None else str(r)


def table(rows: list[dict]) -> str:
    out = ["| case | verdict | fn rank | file rank | winner (kind / agent / source) | plausible | correct | wall |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        w = r.get("winner")
        winner = "–" if not w else f"{w['kind']} / {w['agent']} / {w['source'] or '–'} ({w['status']})"
        verdict = r.get("verdict") or ("timeout" if r.get("timed_out") else "error")
        out.append(f"| {r['case']} | {verdict} | {fmt_rank(r.get('function_rank'))} | {fmt_rank(r.get('file_rank'))} "
                   f"| {winner} | {'yes' if r.get('plausible') else 'no'} | {'yes' if r.get('correct') else 'no'} "
                   f"| {r['wall_s']:.0f} s |")
    return "\n".join(out)


def totals(rows: list[dict]) -> dict:
    n = len(rows)

    def share(k):
        c = sum(1 for r in rows if k(r))
        return {"count": c, "of": n, "percent": round(100 * c / n, 1) if n else None}

    walls = [r["wall_s"] for r in rows]
    return {
        "cases": n,
        "projects": len({r["project"] for r in rows}),
        "localised_at_1": share(lambda r: r.get("function_rank") == 1),
        "localised_at_5": share(lambda r: r.get("function_rank") is not None and r["function_rank"] <= 5),
        "file_at_1": share(lambda r: r.get("file_rank") == 1),
        "file_at_5": share(lambda r: r.get("file_rank") is not None and r["file_rank"] <= 5),
        "plausible": share(lambda r: r.get("plausible")),
        "correct": share(lambda r: r.get("correct")),
        "correct_at_fix_lines": share(lambda r: r.get("correct") and r.get("patch_at_fix_lines")),
        "verified_winner_any_kind": share(lambda r: r.get("verified")),
        "timed_out": share(lambda r: r.get("timed_out")),
        "errors": share(lambda r: r.get("error") and not r.get("timed_out")),
        "verdicts": {v: sum(1 for r in rows if r.get("verdict") == v)
                     for v in sorted({str(r.get("verdict")) for r in rows})},
        "median_wall_s": round(statistics.median(walls), 1) if walls else None,
        "total_wall_s": round(sum(walls), 1),
    }


def describe_binary(binary: Path) -> dict:
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.strip()
    stat = binary.stat()
    return {"path": str(binary), "version": version,
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stat.st_mtime)), "bytes": stat.st_size}


def self_check(cases: list[dict], timeout: float) -> int:
    """The scorer against the truth: the upstream fix's source diff must score correct on
    every case, and the buggy repository unchanged (an empty patch) must not."""
    bad = 0
    with kit.scratch_home() as home:
        for case in cases:
            fix_patch = kit.git(kit.mirror_of(case["upstream"]), "diff", case["buggy"], case["fix"], "--",
                                case["source_file"], bare=True)
            with tempfile.TemporaryDirectory(prefix="real-bug-check-") as tmp:
                right = check_patch(case, fix_patch, Path(tmp), Path(home), timeout)
            with tempfile.TemporaryDirectory(prefix="real-bug-check-") as tmp:
                wrong = unpatched(case, Path(tmp), Path(home), timeout)
            ok = right["correct"] and not wrong["correct"]
            bad += not ok
            print(f"{'ok ' if ok else 'BAD'} {case['name']}: fix -> {right['why']}; unpatched -> {wrong['why']}")
    print(f"{len(cases) - bad}/{len(cases)} cases score the upstream fix correct and the buggy code not")
    return 1 if bad else 0


def unpatched(case: dict, scratch: Path, home: Path, timeout: float) -> dict:
    """check_patch's verdict on the buggy repository as it is."""
    repo = scratch / "check"
    kit.build_case(case, repo)
    ids = kit.run_pytest(repo, kit.pytest_argv(case, *case["failing_tests"]), timeout, home)
    still = [t for t in case["failing_tests"] if ids["outcomes"].get(t) not in ("PASSED", "XFAIL")]
    return {"correct": not still, "why": f"{len(still)} of {len(case['failing_tests'])} failing tests fail"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=Path, default=kit.CASES)
    ap.add_argument("--only", nargs="*", help="case names or prefixes (toolz-, idna-1a2b3c4d)")
    ap.add_argument("--limit", type=int, help="the first N cases only")
    ap.add_argument("--tracelab", type=Path, default=None, help="the binary (default: see default_binary)")
    ap.add_argument("--label", help="results file label (default: the TraceLab repository's short HEAD)")
    ap.add_argument("--wall", type=float, default=300.0, help="wall limit per investigation, seconds")
    ap.add_argument("--parallel", type=int, default=2, help="tracelab investigate --parallel")
    ap.add_argument("--timeout", type=float, default=120.0, help="per pytest run of the correctness check")
    ap.add_argument("--out", type=Path, help="results JSON (default results/<date>-<label>.json)")
    ap.add_argument("--resume", action="store_true",
                    help="keep the rows already in the results file and run only the other cases")
    ap.add_argument("--self-check", action="store_true",
                    help="no TraceLab: check that the scorer calls the upstream fix correct and the buggy code not")
    ap.add_argument("--rescore", type=Path, metavar="RESULTS",
                    help="recompute ranks and totals of a results file (no TraceLab run)")
    args = ap.parse_args()
    if args.rescore:
        return rescore(args.rescore, args.cases)
    if args.self_check:
        spec = json.loads(args.cases.read_text())
        cases = [c for c in spec["cases"] if not args.only or any(c["name"].startswith(o) for o in args.only)]
        return self_check(cases[: args.limit] if args.limit else cases, args.timeout)
    binary = args.tracelab or default_binary()
    if not binary.exists():
        print(f"error: no tracelab binary at {binary} (build it, or pass --tracelab)", file=sys.stderr)
        return 2
    spec = json.loads(args.cases.read_text())
    cases = [c for c in spec["cases"] if not args.only or any(c["name"].startswith(o) for o in args.only)]
    if args.limit:
        cases = cases[: args.limit]
    head = subprocess.run(["git", "-C", str(kit.HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    label = args.label or head or "run"
    out = args.out or RESULTS / f"{time.strftime('%Y-%m-%d')}-{label}.json"
    started = time.time()
    rows = []
    if args.resume and out.exists():
        previous = json.loads(out.read_text())
        rows = [r for r in previous["rows"] if any(r["case"] == c["name"] for c in cases)]
        started -= previous.get("total_s", 0)
        print(f"resuming {out}: {len(rows)} cases already measured", file=sys.stderr)
    done = {r["case"] for r in rows}
    with kit.scratch_home() as home:
        for i, case in enumerate(cases, 1):
            if case["name"] in done:
                continue
            print(f"== [{i}/{len(cases)}] {case['name']}: {case['subject'][:70]}", file=sys.stderr)
            with tempfile.TemporaryDirectory(prefix=f"real-bug-{case['name']}-") as tmp:
                tmp = Path(tmp)
                repo = tmp / "repo"
                built = kit.build_case(case, repo)
                run = investigate(case, repo, binary, tmp / "tracelab.db", args.wall, args.parallel,
                                  tmp / "stderr.log")
                row = {"case": case["name"], "project": case["project"], "fix": case["fix"],
                       "rebuilt_as_mined": built == case.get("bench_head"),
                       **{k: run[k] for k in ("exit", "timed_out", "wall_s", "stderr_tail")},
                       **({"error": run["error"]} if run.get("error") else {}),
                       **score(case, run, tmp, Path(home), args.timeout)}
            rows.append(row)
            w = row.get("winner") or {}
            print(f"   {row.get('verdict') or row.get('error', '')[:80]}; fn rank {fmt_rank(row.get('function_rank'))}, "
                  f"file rank {fmt_rank(row.get('file_rank'))}; winner {w.get('kind')}/{w.get('status')}; "
                  f"plausible {row['plausible']}, correct {row['correct']}; {row['wall_s']} s", file=sys.stderr)
            # Written after every case, so an interrupted run keeps what it measured.
            RESULTS.mkdir(parents=True, exist_ok=True)
            result = {"label": label, "tracelab_commit": head,
                      "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
                      "total_s": round(time.time() - started, 1), "binary": describe_binary(binary),
                      "settings": {"wall_s": args.wall, "parallel": args.parallel},
                      "machine": {"cpus": os.cpu_count(), "loadavg_at_end": os.getloadavg()},
                      "cases_file": str(args.cases), "totals": totals(rows), "rows": rows}
            out.write_text(json.dumps(result, indent=1) + "\n")
    print_summary(rows, out)
    return 0


def print_summary(rows: list[dict], out: Path) -> None:
    print(table(rows))
    print()
    for k, v in totals(rows).items():
        if isinstance(v, dict) and "count" in v:
            v = f"{v['count']}/{v['of']} ({v['percent']}%)"
        print(f"{k}: {v}")
    print(f"results in {out}")


if __name__ == "__main__":
    sys.exit(main())
