#!/usr/bin/env python3
"""Reuse benchmark for the experience agent (#16).

For each history generate.py wrote (a repository of its own on the real
more-itertools tree), mine it with `tracelab experience mine` into a store
of its own, then make a *later* state of the same repository that meets one
of its problems again, and investigate it twice with the history's unit
step as the test command: with the mined records (the experience agent)
and with `--no-experience` (the baseline). No LLM in either: `--repair
templates`, the default.

The later state: the history's passing revision, with code moved (a new
helper at the top of recipes.py, so no recorded hunk applies at its line)
and the problem back:

  test    the same recipe broken the same way again
  import  the helpers more.py imports removed from recipes.py again

It is committed as an orphan root on a branch of the same repository, so no
earlier revision passes: a revert of a culprit cannot explain the failure
and the agents must repair it (with a culprit, the revert would be verified
first and the experience agent would not run at all).

    python3 bench/experience/reuse.py --work DIR --tracelab PATH [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import generate  # noqa: E402

RECIPES = "more_itertools/recipes.py"
MOVED = "def _later_identity(value):\n    \"\"\"Added after the history: moves every recipe down.\"\"\"\n    return value\n\n\n"


def git(repo: Path, *args: str) -> str:
    return generate.git(repo, *args)


def later_state(repo: Path, case: dict, category: str) -> str | None:
    """The orphan commit meeting `category` again, or None when the
    history's repair cannot be found in its files."""
    first, last = case["from"], case["to"]
    recipes_first = git(repo, "show", f"{first}:{RECIPES}") + "\n"
    recipes = git(repo, "show", f"{last}:{RECIPES}") + "\n"
    if category == "test":
        bug = next((b for b in generate.BUGS if b[1] in recipes_first and b[0] in recipes), None)
        if bug is None:
            return None
        recipes = recipes.replace(bug[0], bug[1], 1)
    elif category == "import":
        more_first = git(repo, "show", f"{first}:more_itertools/more.py")
        names = next((n for n in generate.HELPERS if f"from .recipes import {n[0]}, {n[1]}" in more_first), None)
        if names is None:
            return None
        a, b = names
        recipes = recipes.replace(f"def {a}(values):\n    return sum(values)\n\n\n", "", 1)
        recipes = recipes.replace(
            f"\n\ndef {b}(values):\n    values = list(values)\n    return {a}(values) / len(values)\n", "\n", 1)
        if f"def {a}(" in recipes or f"def {b}(" in recipes:
            return None
    anchor = recipes.index("\ndef ") + 1
    recipes = recipes[:anchor] + MOVED + recipes[anchor:]
    with tempfile.TemporaryDirectory() as tmp:
        wt = Path(tmp) / "later"
        git(repo, "worktree", "add", "-q", "--detach", str(wt), last)
        try:
            branch = f"later-{category}"
            git(repo, "branch", "-D", branch) if branch in git(repo, "branch", "--list", branch) else None
            git(wt, "checkout", "-q", "--orphan", branch)
            (wt / RECIPES).write_text(recipes)
            git(wt, "add", "-A")
            git(wt, "commit", "-q", "-m", f"Import the project ({category} again)")
            return git(wt, "rev-parse", "HEAD")
        finally:
            git(repo, "worktree", "remove", "--force", str(wt))


def investigate(tracelab: str, db: Path, repo: Path, bad: str, test: str, extra: list[str]) -> dict:
    started = time.time()
    p = subprocess.run(
        [tracelab, "--quiet", "--db", str(db), "investigate", "--repo", str(repo), "--bad", bad,
         "--test", test, "--format", "json", "--timeout", "300", *extra],
        capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": p.stderr[-2000:], "seconds": time.time() - started}
    report = json.loads(p.stdout)
    hs = report.get("hypotheses", [])
    exp = [h for h in hs if h.get("agent") == "experience"]
    return {
        "seconds": round(time.time() - started, 1),
        "verdict": report.get("verdict"),
        "verified": any(h["status"] == "VERIFIED" for h in hs),
        "experience": exp[0]["status"] if exp else None,
        "experience_verified": any(h["status"] == "VERIFIED" for h in exp),
        "record": exp[0].get("detail", {}).get("experience", {}).get("record") if exp else None,
        "merge": exp[0].get("detail", {}).get("experience", {}).get("merge") if exp else None,
        "winner_agent": next((h["agent"] for h in hs if report.get("winner") and h["id"] == report["winner"]["id"]), None),
        "notes": [n for n in report.get("notes", []) if "experience" in n],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--tracelab", required=True)
    ap.add_argument("--out")
    args = ap.parse_args()
    work = Path(args.work)
    cases = json.loads((work / "cases.json").read_text())
    results = []
    for case in cases:
        repo = Path(case["repo"])
        wanted = [p["id"] for p in case["problems"] if p["id"] in ("test", "import")]
        if not wanted:
            continue
        db = work / f"{case['name']}-reuse.db"
        db.unlink(missing_ok=True)
        mine = [args.tracelab, "--quiet", "--db", str(db), "experience", "mine", "--repo", str(repo),
                "--from", case["from"], "--to", case["to"]]
        for step in case["steps"]:
            mine += ["--test", step]
        p = subprocess.run(mine, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{case['name']}: mining failed: {p.stderr[-500:]}", file=sys.stderr)
            continue
        unit = case["steps"][-1]
        for category in wanted:
            bad = later_state(repo, case, category)
            if bad is None:
                print(f"{case['name']} {category}: the repair is not in the files; skipped", file=sys.stderr)
                continue
            with_exp = investigate(args.tracelab, db, repo, bad, unit, [])
            baseline = investigate(args.tracelab, db, repo, bad, unit, ["--no-experience"])
            row = {"history": case["name"], "problem": category, "experience": with_exp, "baseline": baseline}
            results.append(row)
            print(f"{case['name']} {category}: experience agent {with_exp.get('experience')} "
                  f"({with_exp.get('seconds')} s), baseline verified {baseline.get('verified')} "
                  f"({baseline.get('seconds')} s)", file=sys.stderr)
    n = len(results)
    by_agent = sum(1 for r in results if r["experience"].get("experience_verified"))
    base = sum(1 for r in results if r["baseline"].get("verified"))
    summary = {"cases": n, "verified_by_experience_agent": by_agent, "verified_baseline": base}
    for cat in ("test", "import"):
        rows = [r for r in results if r["problem"] == cat]
        summary[cat] = {"cases": len(rows),
                        "experience": sum(1 for r in rows if r["experience"].get("experience_verified")),
                        "baseline": sum(1 for r in rows if r["baseline"].get("verified"))}
    print(json.dumps(summary, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps({"summary": summary, "results": results}, indent=1))


if __name__ == "__main__":
    main()
