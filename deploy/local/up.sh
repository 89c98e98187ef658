#!/usr/bin/env bash
# Starts a whole TraceLab fleet on this machine for a person to try:
# NATS with JetStream and PostgreSQL (installed from Debian packages when
# missing, state under $TRACELAB_FLEET_DIR), then the service binaries
# (built in release mode). The services refuse to run without tokens, so it
# makes one (kept in $TRACELAB_FLEET_DIR/tokens.env, mode 600) that the API
# (as admin), ingest and the indexer accept, and prints
# `TRACELAB_TOKEN=<token>` on the line before the API URL, which stays the
# last line (`eval "$(deploy/local/up.sh | tail -n 2 | head -n 1 | sed 's/^/export /')"`).
#
#   deploy/local/up.sh                 # then: tracelab --server http://127.0.0.1:8080 investigate …
#   deploy/local/down.sh               # stops what up.sh started
#
# Knobs: TRACELAB_FLEET_DIR (default /tmp/tracelab-fleet), TRACELAB_VERIFIERS
# (default 2), TRACELAB_API_PORT (8080), CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."

FLEET_DIR="${TRACELAB_FLEET_DIR:-/tmp/tracelab-fleet}"
VERIFIERS="${TRACELAB_VERIFIERS:-2}"
API_PORT="${TRACELAB_API_PORT:-8080}"
export TRACELAB_BACKENDS_DIR="$FLEET_DIR/backends"
export TRACELAB_NATS_PORT="${TRACELAB_NATS_PORT:-24222}"
export TRACELAB_PG_PORT="${TRACELAB_PG_PORT:-25432}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tracelab/target}"

log() { echo "up: $*" >&2; }

mkdir -p "$FLEET_DIR/logs"
# One token for this machine's fleet, made once.
if [ ! -s "$FLEET_DIR/tokens.env" ]; then
    (umask 077; echo "TRACELAB_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$FLEET_DIR/tokens.env")
fi
FLEET_TOKEN="$(sed -n 's/^TRACELAB_TOKEN=//p' "$FLEET_DIR/tokens.env")"

if [ -s "$FLEET_DIR/pids" ]; then
    log "a fleet is already running from $FLEET_DIR (deploy/local/down.sh stops it)"
    echo "TRACELAB_TOKEN=$FLEET_TOKEN"
    echo "http://127.0.0.1:$API_PORT"
    exit 0
fi

# Settings files holding the token (mode 600; never on a command line).
(
    umask 077
    printf '[[tokens]]\nname = "local"\ntoken = "%s"\nrole = "admin"\n' "$FLEET_TOKEN" > "$FLEET_DIR/investigator.toml"
    printf '[[tokens]]\nname = "local"\ntoken = "%s"\n' "$FLEET_TOKEN" > "$FLEET_DIR/ingest.toml"
    cp "$FLEET_DIR/ingest.toml" "$FLEET_DIR/indexer.toml"
)
deploy/local/backends.sh start
eval "$(deploy/local/backends.sh env)"

PACKAGES=(tracelab-ingest tracelab-indexer tracelab-investigator tracelab-verifier tracelab-arbiter)
log "building ${PACKAGES[*]} (release)"
cargo build --release --locked $(printf -- '-p %s ' "${PACKAGES[@]}") >&2
BIN="$CARGO_TARGET_DIR/release"

COMMON=(
    --set "fleet.nats_url=$TRACELAB_TEST_NATS"
    --set "fleet.postgres_url=$TRACELAB_TEST_POSTGRES"
    # One machine, one user: any repository URL, and local paths under the
    # home folder and /tmp. A deployment lists its URL patterns instead.
    --set 'fleet.repositories.allow=["**"]'
    --set "fleet.repositories.local_roots=[\"$HOME\", \"/tmp\"]"
)

: > "$FLEET_DIR/pids"
start() { # name binary health-port settings...
    local name="$1" binary="$2" port="$3"
    shift 3
    setsid "$BIN/$binary" "${COMMON[@]}" --set "listen=127.0.0.1:$port" "$@" \
        >"$FLEET_DIR/logs/$name.log" 2>&1 < /dev/null &
    echo "$! $name $port" >> "$FLEET_DIR/pids"
}

# Ports from the API port: +1 investigations gRPC, +2 ingest HTTP, +3 OTLP
# logs gRPC, +4 arbiter health, +6 indexer health, +7 indexer gRPC, +10+i verifiers.
# Tests run in the services' default sandbox, the hardened local runner
# (bubblewrap or unshare namespaces where this kernel allows them; the log
# says which). `--set sandbox.kind=docker` for containers.
start investigator tracelab-investigator "$API_PORT" --config "$FLEET_DIR/investigator.toml" \
    --set "grpc_listen=127.0.0.1:$((API_PORT + 1))"
start ingest tracelab-ingest $((API_PORT + 2)) --config "$FLEET_DIR/ingest.toml" \
    --set "grpc_listen=127.0.0.1:$((API_PORT + 3))"
# Local repositories under the roots every service shares (fleet.toml's
# [fleet.repositories] local_roots), as for the API.
start indexer tracelab-indexer $((API_PORT + 6)) --config "$FLEET_DIR/indexer.toml" \
    --set "grpc_listen=127.0.0.1:$((API_PORT + 7))"
start arbiter tracelab-arbiter $((API_PORT + 4))
for i in $(seq 1 "$VERIFIERS"); do
    # Each verifier fetches into its own mirror cache, as on separate machines.
    start "verifier-$i" tracelab-verifier $((API_PORT + 10 + i)) --set "name=verifier-$i" \
        --set "fleet.repositories.cache_dir=$FLEET_DIR/repos/verifier-$i"
done

while read -r pid name port; do
    for _ in $(seq 1 300); do
        if curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then
            log "$name ready (pid $pid, health http://127.0.0.1:$port/readyz, log $FLEET_DIR/logs/$name.log)"
            continue 2
        fi
        kill -0 "$pid" 2>/dev/null || { log "$name exited; last log lines:"; tail -20 "$FLEET_DIR/logs/$name.log" >&2; exit 1; }
        sleep 0.2
    done
    log "$name did not become ready; see $FLEET_DIR/logs/$name.log"
    exit 1
done < "$FLEET_DIR/pids"

log "gRPC investigations API: 127.0.0.1:$((API_PORT + 1))"
log "ingest: http://127.0.0.1:$((API_PORT + 2)) (POST /v1/ci-failures, /v1/logs); OTLP logs gRPC 127.0.0.1:$((API_PORT + 3))"
log "indexer gRPC (tracelab.index.v1.Retrieval): 127.0.0.1:$((API_PORT + 7))"
log "the API, ingest and the indexer want the token below (the CLI reads TRACELAB_TOKEN)"
echo "TRACELAB_TOKEN=$FLEET_TOKEN"
echo "http://127.0.0.1:$API_PORT"
