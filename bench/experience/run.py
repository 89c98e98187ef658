#!/usr/bin/env python3
"""Score `tracelab experience mine` on the generated histories (#16).

For every history of cases.json (from generate.py) this runs

    tracelab experience mine --repo H --from F --to T --job ci --test STEP... --format json --dry-run

which re-runs the four CI steps at every commit in the local sandbox and
prints the reconstruction. Each net hunk is labelled from the ground truth
(the edit whose final lines it carries: a problem, or "unrelated"); each
reconstructed problem is mapped to a ground-truth problem by its key (the
step, and the test class or error type). Pairs (problem, hunk) are then
compared for three attributions read from the same reconstruction:

  endpoint     every hunk the endpoint view links to the problem
  development  the surviving hunks changed between its last failure and first pass
  reconciled   the hunks the reconciliation keeps

Precision = correct pairs / predicted pairs; recall = correct pairs / true
pairs, micro-averaged over all histories. A ground-truth problem that CI
never showed failing cannot be attributed and is reported apart.

    python3 bench/experience/run.py [--work DIR] [--tracelab PATH] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def meaningful(line: str) -> str | None:
    t = line.strip()
    return t if sum(c.isalnum() for c in t) >= 3 else None


def label_hunks(case: dict, hunks: list[dict]) -> list[set[str]]:
    """The ground-truth labels of each net hunk."""
    labels = []
    for h in hunks:
        added = {m for l in h["added"] if (m := meaningful(l))}
        removed = {m for l in h["removed"] if (m := meaningful(l))}
        found = set()
        for e in case["edits"]:
            if e["path"] != h["path"]:
                continue
            if added & set(e["added"]) or removed & set(e["removed"]):
                found.add(e["label"])
        labels.append(found)
    return labels


def truth_problem(case: dict, key: str) -> str | None:
    for p in case["problems"]:
        m = p["match"]
        if not key.startswith(f"ci/{m['step']}"):
            continue
        if "suffix" in m and not key.endswith(m["suffix"]):
            continue
        if "contains" in m and m["contains"] not in key:
            continue
        return p["id"]
    return None


def score(case: dict, r: dict) -> dict:
    hunks = r["hunks"]
    labels = label_hunks(case, hunks)
    unlabelled = [h["path"] for h, l in zip(hunks, labels) if not l]
    ambiguous = [h["path"] for h, l in zip(hunks, labels) if len(l) > 1]
    mapped = [truth_problem(case, p["key"]) for p in r["problems"]]
    observed = {m for m in mapped if m}
    truth = {(lab, i) for i, ls in enumerate(labels) for lab in ls
             if lab != "unrelated" and lab in observed}
    predicted: dict[str, set] = {"endpoint": set(), "development": set(), "reconciled": set()}
    for link in r["endpoint"]["links"]:
        predicted["endpoint"].add((mapped[link["problem"]] or f"spurious:{link['problem']}", link["hunk"]))
    for p, hs in enumerate(r["development"]["attribution"]):
        for h in hs:
            predicted["development"].add((mapped[p] or f"spurious:{p}", h))
    for a in r["attributions"]:
        for h in a["kept"]:
            predicted["reconciled"].add((mapped[a["problem"]] or f"spurious:{a['problem']}", h))
    return {
        "name": case["name"],
        "problems": [p["id"] for p in case["problems"]],
        "unobserved": sorted({p["id"] for p in case["problems"]} - observed),
        "spurious_problems": [p["key"] for p, m in zip(r["problems"], mapped) if not m],
        "hunks": len(hunks),
        "unlabelled": unlabelled,
        "ambiguous": ambiguous,
        "truth": len(truth),
        "views": {v: {"predicted": len(s), "correct": len(s & truth)} for v, s in predicted.items()},
        "agreements": [a["agreement"] for a in r["attributions"]],
        "notes": [n["kind"] for n in r["notes"]],
        "records": len(r["records"]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default="/tmp/tracelab-bench-experience")
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    ap.add_argument("--tracelab", default=f"{target}/debug/tracelab")
    ap.add_argument("--out", help="write per-history results and totals as JSON")
    args = ap.parse_args()
    work = Path(args.work)
    cases = json.loads((work / "cases.json").read_text())
    results = []
    started = time.time()
    for case in cases:
        argv = [args.tracelab, "--quiet", "--db", str(work / "unused.db"), "experience", "mine",
                "--repo", case["repo"], "--from", case["from"], "--to", case["to"], "--job", "ci",
                "--format", "json", "--dry-run"]
        for step in case["steps"]:
            argv += ["--test", step]
        t0 = time.time()
        p = subprocess.run(argv, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"{case['name']}: tracelab failed: {p.stderr}")
        res = score(case, json.loads(p.stdout))
        res["seconds"] = round(time.time() - t0, 1)
        results.append(res)
        v = res["views"]
        print(f"{case['name']}: {'+'.join(res['problems']):28} hunks {res['hunks']:2} truth {res['truth']:2} "
              + "  ".join(f"{k[:3]} {x['correct']}/{x['predicted']}" for k, x in v.items())
              + (f"  unobserved {res['unobserved']}" if res["unobserved"] else "")
              + (f"  ambiguous {res['ambiguous']}" if res["ambiguous"] else "")
              + (f"  unlabelled {res['unlabelled']}" if res["unlabelled"] else ""), file=sys.stderr)
    totals = {}
    truth = sum(r["truth"] for r in results)
    for view in ["endpoint", "development", "reconciled"]:
        pred = sum(r["views"][view]["predicted"] for r in results)
        corr = sum(r["views"][view]["correct"] for r in results)
        totals[view] = {"precision": round(corr / pred, 3) if pred else None,
                        "recall": round(corr / truth, 3) if truth else None,
                        "correct": corr, "predicted": pred, "truth": truth}
    summary = {
        "histories": len(results),
        "problems": sum(len(r["problems"]) for r in results),
        "unobserved_problems": sum(len(r["unobserved"]) for r in results),
        "spurious_problems": sum(len(r["spurious_problems"]) for r in results),
        "hunks": sum(r["hunks"] for r in results),
        "records": sum(r["records"] for r in results),
        "seconds": round(time.time() - started, 1),
        "views": totals,
    }
    print(json.dumps(summary, indent=1))
    print("\n| view | precision | recall | correct / predicted / true pairs |\n|---|---|---|---|")
    for view, t in totals.items():
        print(f"| {view} | {t['precision']} | {t['recall']} | {t['correct']} / {t['predicted']} / {t['truth']} |")
    if args.out:
        Path(args.out).write_text(json.dumps({"summary": summary, "histories": results}, indent=1))


if __name__ == "__main__":
    main()
