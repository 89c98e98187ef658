#!/usr/bin/env bash
# The fleet benchmark of docs/benchmarks/fleet.md: for each verifier count
# (1, 2, 4) start a fleet on this machine with deploy/local/up.sh, submit
# LOAD_COUNT investigations with LOAD_CONCURRENCY undecided at once, stop the
# fleet with deploy/local/down.sh; with the last fleet still up, post
# LOAD_EVIDENCE_COUNT evidence events to its ingest once. JSON reports go to
# $LOAD_OUT, a Markdown table to stdout.
#
#   loadtest/run-fleet.sh
#   LOAD_VERIFIERS="1 2" LOAD_COUNT=8 loadtest/run-fleet.sh
#
# Knobs: LOAD_VERIFIERS ("1 2 4"), LOAD_COUNT (24), LOAD_CONCURRENCY (8),
# LOAD_COMMITS (16), LOAD_TEST_SECONDS (0.05), LOAD_EVIDENCE_COUNT (2000),
# LOAD_EVIDENCE_CONCURRENCY (16), LOAD_REPOS (/tmp/tracelab-loadtest-repos),
# LOAD_OUT (/tmp/tracelab-loadtest-results), TRACELAB_INGEST_URL (default:
# API port + 2 on 127.0.0.1), and up.sh's own (TRACELAB_FLEET_DIR,
# TRACELAB_API_PORT, TRACELAB_NATS_PORT, TRACELAB_PG_PORT, CARGO_TARGET_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."

VERIFIER_COUNTS="${LOAD_VERIFIERS:-1 2 4}"
COUNT="${LOAD_COUNT:-24}"
CONCURRENCY="${LOAD_CONCURRENCY:-8}"
COMMITS="${LOAD_COMMITS:-16}"
TEST_SECONDS="${LOAD_TEST_SECONDS:-0.05}"
EVIDENCE_COUNT="${LOAD_EVIDENCE_COUNT:-2000}"
EVIDENCE_CONCURRENCY="${LOAD_EVIDENCE_CONCURRENCY:-16}"
REPOS="${LOAD_REPOS:-/tmp/tracelab-loadtest-repos}"
OUT="${LOAD_OUT:-/tmp/tracelab-loadtest-results}"
FLEET_DIR="${TRACELAB_FLEET_DIR:-/tmp/tracelab-fleet}"
API_PORT="${TRACELAB_API_PORT:-8080}"
INGEST_URL="${TRACELAB_INGEST_URL:-http://127.0.0.1:$((API_PORT + 2))}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tracelab/target}"

log() { echo "run-fleet: $*" >&2; }

# up.sh reuses a running fleet whatever its verifier count; that would
# measure the wrong fleet, so start from nothing.
if [ -s "$FLEET_DIR/pids" ]; then
    log "a fleet is already running from $FLEET_DIR; stop it first (deploy/local/down.sh)"
    exit 1
fi

mkdir -p "$OUT"
log "building tracelab-loadtest (release)"
cargo build --release --locked -p tracelab-loadtest >&2
LOADTEST="$CARGO_TARGET_DIR/release/tracelab-loadtest"

fleet_up=""
stop_fleet() {
    if [ -n "$fleet_up" ]; then
        deploy/local/down.sh >&2 || log "down.sh failed"
        fleet_up=""
    fi
}
trap stop_fleet EXIT

# Runs the loadtest; exit 3 means "finished with errors" (the report counts
# them), which must not stop the series.
load() { # output-file args...
    local out="$1" status=0
    shift
    "$LOADTEST" --json "$@" > "$out" || status=$?
    if [ "$status" != 0 ] && [ "$status" != 3 ]; then
        log "tracelab-loadtest $1 failed (exit $status)"
        return "$status"
    fi
}

verifier_list=($VERIFIER_COUNTS)
last="${verifier_list[-1]}"
evidence_done=""
for v in "${verifier_list[@]}"; do
    log "fleet with $v verifier(s)"
    fleet_up=1
    up="$(TRACELAB_VERIFIERS="$v" deploy/local/up.sh)"
    api="$(tail -n 1 <<<"$up")"
    # The fleet refuses callers without its token (the line before the URL).
    TRACELAB_TOKEN="$(sed -n 's/^TRACELAB_TOKEN=//p' <<<"$up" | tail -n 1)"
    export TRACELAB_TOKEN
    log "API at $api; $COUNT investigations, $CONCURRENCY at once"
    load "$OUT/investigations-v$v.json" investigations --api "$api" \
        --count "$COUNT" --concurrency "$CONCURRENCY" --repos "$REPOS" \
        --commits "$COMMITS" --test-seconds "$TEST_SECONDS"
    if [ "$v" = "$last" ]; then
        if curl -fsS "$INGEST_URL/healthz" >/dev/null 2>&1; then
            log "ingest at $INGEST_URL; $EVIDENCE_COUNT events, $EVIDENCE_CONCURRENCY in flight"
            load "$OUT/evidence.json" evidence --ingest "$INGEST_URL" \
                --count "$EVIDENCE_COUNT" --concurrency "$EVIDENCE_CONCURRENCY"
            evidence_done=1
        else
            log "no ingest answers at $INGEST_URL/healthz; evidence scenario skipped"
        fi
    fi
    stop_fleet
done

python3 - "$OUT" "$evidence_done" $VERIFIER_COUNTS <<'EOF'
import json, sys
out, evidence, counts = sys.argv[1], sys.argv[2], sys.argv[3:]
print("| verifiers | completed | investigations/min | p50 | p90 | p99 | max | errors |")
print("|---|---|---|---|---|---|---|---|")
for v in counts:
    r = json.load(open(f"{out}/investigations-v{v}.json"))
    l = r["latency"]
    s = lambda ms: f"{ms / 1000:.1f} s"
    print(f"| {v} | {r['completed']}/{r['count']} | {r['per_minute']:.1f} | {s(l['p50_ms'])} | "
          f"{s(l['p90_ms'])} | {s(l['p99_ms'])} | {s(l['max_ms'])} | {r['error_total']} |")
if evidence:
    r = json.load(open(f"{out}/evidence.json"))
    l = r["latency"]
    print()
    print("| events | accepted | events/s | p50 | p90 | p99 | max | 429 (retried) | other non-2xx |")
    print("|---|---|---|---|---|---|---|---|---|")
    other = sum(r["non_2xx"].values())
    print(f"| {r['count']} | {r['accepted']} | {r['per_second']:.0f} | {l['p50_ms']:.1f} ms | {l['p90_ms']:.1f} ms | "
          f"{l['p99_ms']:.1f} ms | {l['max_ms']:.1f} ms | {r['rate_limited']} | {other} |")
EOF
