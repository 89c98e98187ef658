#!/usr/bin/env bash
# Stops what deploy/local/up.sh started: the services (SIGTERM, so in-flight
# work drains), then NATS and PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/../.."

FLEET_DIR="${TRACELAB_FLEET_DIR:-/tmp/tracelab-fleet}"
export TRACELAB_BACKENDS_DIR="$FLEET_DIR/backends"
export TRACELAB_NATS_PORT="${TRACELAB_NATS_PORT:-24222}"
export TRACELAB_PG_PORT="${TRACELAB_PG_PORT:-25432}"

if [ -f "$FLEET_DIR/pids" ]; then
    while read -r pid name _; do
        kill -TERM "$pid" 2>/dev/null && echo "down: stopping $name (pid $pid)" >&2 || true
    done < "$FLEET_DIR/pids"
    while read -r pid name _; do
        for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$pid" 2>/dev/null && echo "down: $name did not drain in 60 s; killed" >&2 || true
    done < "$FLEET_DIR/pids"
    rm -f "$FLEET_DIR/pids"
fi
deploy/local/backends.sh stop
