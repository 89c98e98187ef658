#!/usr/bin/env bash
# Checks the runtime stage of deploy/docker/Dockerfile where base images
# cannot be pulled: builds that stage FROM the locally built sandbox base
# (tracelab-sandbox-base:bookworm, Debian bookworm like debian:bookworm-slim;
# deploy/sandbox/build-base-image.sh makes it) around a service binary built
# on this (bookworm) machine, then runs it as the Helm chart does — read-only
# root, writable /tmp only, all capabilities dropped — and checks the user,
# the read-only root and that /healthz answers.
#
#   deploy/docker/smoke-runtime.sh SERVICE BINARY PORT [--set key=value ...]
#   deploy/docker/smoke-runtime.sh arbiter target/release/tracelab-arbiter 18280 \
#       --set fleet.nats_url=nats://127.0.0.1:14222 --set fleet.postgres_url=postgres://...
#
# The container uses the host network so it reaches loopback NATS and PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/../.."

service="${1:?usage: smoke-runtime.sh SERVICE BINARY PORT [--set key=value ...]}"
binary="${2:?binary}"
port="${3:?port}"
shift 3
base=tracelab-sandbox-base:bookworm
image="tracelab-smoke-$service:local"
name="tracelab-smoke-$service-$$"

docker image inspect "$base" >/dev/null 2>&1 || { echo "smoke: $base missing (deploy/sandbox/build-base-image.sh)" >&2; exit 1; }
ctx="$(mktemp -d)"
cleanup() { docker rm -f "$name" >/dev/null 2>&1 || true; rm -rf "$ctx"; }
trap cleanup EXIT
cp "$binary" "$ctx/tracelab-service"
# The runtime stage as written, with the base and the binary's source swapped.
{
    echo "FROM $base"
    # The sandbox base runs as its own uid 10001 user; start from root without it, as debian:slim does.
    echo "USER root"
    echo "RUN userdel sandbox && (groupdel sandbox 2>/dev/null || true)"
    sed -n '/^FROM debian:/,$p' deploy/docker/Dockerfile | tail -n +2 \
        | sed 's|^COPY --from=build /out/tracelab-service |COPY tracelab-service |'
} > "$ctx/Dockerfile"
docker build -q --build-arg SERVICE="$service" -t "$image" "$ctx" >/dev/null

docker run -d --name "$name" --network host --read-only --tmpfs /tmp \
    --cap-drop ALL --security-opt no-new-privileges \
    "$image" --set "listen=127.0.0.1:$port" "$@" >/dev/null

fail() { echo "smoke: $service: $*" >&2; docker logs "$name" 2>&1 | tail -20 >&2; exit 1; }
for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    [ "$(docker inspect -f '{{.State.Running}}' "$name")" = true ] || fail "exited"
    sleep 0.2
done
curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null || fail "/healthz does not answer"
[ "$(docker exec "$name" id -u)" = 10001 ] || fail "not running as uid 10001"
if docker exec "$name" sh -c 'touch /usr/local/bin/x' 2>/dev/null; then fail "root file system is writable"; fi
docker exec "$name" sh -c 'touch /tmp/x' || fail "/tmp is not writable"
pid1="$(docker exec "$name" cat /proc/1/comm)"
[ "$pid1" = tini ] || fail "PID 1 is $pid1, not tini"
tools="$(docker exec "$name" sh -c 'for t in git python3; do command -v $t; done; true' | tr '\n' ' ')"
echo "smoke: $service ok (uid 10001, read-only root, tini, /healthz answers; tools: ${tools:-none})"
docker stop -t 30 "$name" >/dev/null
