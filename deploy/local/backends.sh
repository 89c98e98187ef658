#!/usr/bin/env bash
# Local backends for the fleet's tests: a JetStream-enabled nats-server and a
# throwaway PostgreSQL cluster, both on 127.0.0.1, both owned by this script.
#
#   backends.sh start              install if missing, start both (idempotent), wait until they answer
#   backends.sh stop               stop what `start` started
#   backends.sh env                print the `export TRACELAB_TEST_...=` lines for the tests
#   backends.sh restart-nats       stop and start nats-server (same store dir: streams survive)
#   backends.sh restart-postgres   fast restart of the PostgreSQL cluster (data survives)
#   backends.sh crash-nats         SIGKILL nats-server, then start it again (a crash, not a shutdown)
#   backends.sh reset-nats         stop nats-server, delete its store (every stream), start it again
#   backends.sh crash-postgres     immediate shutdown of PostgreSQL (no checkpoint: recovery on start), then start
#   (restart-nats and crash-nats fail when the running server was not started by this script)
#   backends.sh status             say what is running
#
# Knobs (environment): TRACELAB_BACKENDS_DIR (state dir, default
# /tmp/tracelab-backends), TRACELAB_NATS_PORT (14222), TRACELAB_PG_PORT (15432).
#
# The PostgreSQL cluster trusts every loopback connection and runs with
# fsync=off: it is for tests only and never holds data worth keeping. That
# survives a crash of the server process (the OS keeps its page cache), not
# of the machine. synchronous_commit stays on: with it off, a crash of the
# server (crash-postgres) loses commits it had already acknowledged, which
# the crash tests found as an investigation back in CREATED after the
# investigator had moved it on. The connection is plain TCP without TLS
# (loopback only).
set -euo pipefail

STATE_DIR="${TRACELAB_BACKENDS_DIR:-/tmp/tracelab-backends}"
NATS_PORT="${TRACELAB_NATS_PORT:-14222}"
PG_PORT="${TRACELAB_PG_PORT:-15432}"
PG_DB=tracelab_test
NATS_DIR="$STATE_DIR/nats"
PG_DATA="$STATE_DIR/pg/data"
PG_SOCK="$STATE_DIR/pg/sock"
PG_LOG="$STATE_DIR/pg/postgres.log"

log() { echo "backends: $*" >&2; }

apt_install() {
    log "installing $*"
    if [ -z "${_APT_UPDATED:-}" ]; then
        apt-get update -qq >&2
        _APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

pg_bin_dir() {
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then
        echo "$dir"
    elif command -v initdb >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
    fi
}

install_missing() {
    command -v nats-server >/dev/null 2>&1 || apt_install nats-server
    [ -n "$(pg_bin_dir)" ] || apt_install postgresql
    command -v psql >/dev/null 2>&1 || apt_install postgresql-client
}

# Runs a PostgreSQL tool as the cluster's owner: `postgres` when we are root
# (initdb refuses root), ourselves otherwise.
as_pg() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

nats_pid() {
    local pid
    pid="$(cat "$STATE_DIR/nats.pid" 2>/dev/null || true)"
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then echo "$pid"; fi
}

# True when a JetStream-enabled server answers on the port (its INFO line says so).
nats_answers() {
    local info
    info="$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$NATS_PORT && head -n 1 <&3" 2>/dev/null || true)"
    [[ "$info" == INFO* && "$info" == *'"jetstream":true'* ]]
}

start_nats() {
    if [ -n "$(nats_pid)" ] && nats_answers; then
        log "nats-server already running on 127.0.0.1:$NATS_PORT"
        return
    fi
    if nats_answers; then
        log "port $NATS_PORT already serves a JetStream nats-server that this script did not start; using it"
        return
    fi
    mkdir -p "$NATS_DIR"
    # setsid: the server outlives this script and does not get its signals.
    setsid nats-server -js -a 127.0.0.1 -p "$NATS_PORT" -sd "$NATS_DIR" \
        -l "$STATE_DIR/nats.log" -P "$STATE_DIR/nats.pid" </dev/null >/dev/null 2>&1 &
    for _ in $(seq 1 100); do
        if nats_answers; then
            log "nats-server started on 127.0.0.1:$NATS_PORT (store $NATS_DIR)"
            return
        fi
        sleep 0.1
    done
    log "nats-server did not answer on 127.0.0.1:$NATS_PORT; last log lines:"
    tail -n 20 "$STATE_DIR/nats.log" >&2 || true
    exit 1
}

stop_nats() {
    local pid
    pid="$(nats_pid)"
    [ -n "$pid" ] || return 0
    kill -TERM "$pid"
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || { log "nats-server stopped"; rm -f "$STATE_DIR/nats.pid"; return 0; }
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$STATE_DIR/nats.pid"
    log "nats-server killed"
}

pg_running() {
    [ -f "$PG_DATA/PG_VERSION" ] && as_pg "$(pg_bin_dir)/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1
}

start_pg() {
    local bin
    bin="$(pg_bin_dir)"
    mkdir -p "$STATE_DIR/pg" "$PG_SOCK"
    chmod 755 "$STATE_DIR"
    if [ "$(id -u)" = 0 ]; then chown -R postgres: "$STATE_DIR/pg"; fi
    if [ ! -f "$PG_DATA/PG_VERSION" ]; then
        as_pg "$bin/initdb" -D "$PG_DATA" -U postgres -A trust -E UTF8 --no-sync >/dev/null
        log "initialised a PostgreSQL cluster in $PG_DATA"
    fi
    if pg_running; then
        log "PostgreSQL already running on 127.0.0.1:$PG_PORT"
    else
        as_pg "$bin/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t 60 \
            -o "-p $PG_PORT -c listen_addresses=127.0.0.1 -k $PG_SOCK -c fsync=off -c full_page_writes=off -c max_connections=300" \
            start >/dev/null || { tail -n 20 "$PG_LOG" >&2; exit 1; }
        log "PostgreSQL started on 127.0.0.1:$PG_PORT"
    fi
    for _ in $(seq 1 100); do
        "$bin/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && break
        sleep 0.1
    done
    if ! "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -tAc \
        "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'" | grep -q 1; then
        "$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres "$PG_DB"
        log "created database $PG_DB"
    fi
}

stop_pg() {
    if pg_running; then
        as_pg "$(pg_bin_dir)/pg_ctl" -D "$PG_DATA" -m fast -w stop >/dev/null
        log "PostgreSQL stopped"
    fi
}

# SIGKILL of the nats-server this script started (fails when there is none).
crash_nats() {
    local pid
    pid="$(nats_pid)"
    [ -n "$pid" ] || { log "no nats-server started by this script is running"; exit 1; }
    kill -KILL "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    rm -f "$STATE_DIR/nats.pid"
    log "nats-server killed (SIGKILL)"
}

crash_pg() {
    pg_running || { log "PostgreSQL is not running"; exit 1; }
    as_pg "$(pg_bin_dir)/pg_ctl" -D "$PG_DATA" -m immediate -w stop >/dev/null
    log "PostgreSQL stopped without a checkpoint (-m immediate)"
    start_pg
}

restart_pg() {
    as_pg "$(pg_bin_dir)/pg_ctl" -D "$PG_DATA" -m fast -w stop >/dev/null
    start_pg
}

print_env() {
    echo "export TRACELAB_TEST_NATS=nats://127.0.0.1:$NATS_PORT"
    echo "export TRACELAB_TEST_POSTGRES=postgres://postgres@127.0.0.1:$PG_PORT/$PG_DB"
}

case "${1:-}" in
    start)
        install_missing
        mkdir -p "$STATE_DIR"
        start_nats
        start_pg
        ;;
    stop)
        stop_nats
        [ -z "$(pg_bin_dir)" ] || stop_pg
        ;;
    env) print_env ;;
    restart-nats)
        [ -n "$(nats_pid)" ] || { log "no nats-server started by this script is running"; exit 1; }
        stop_nats
        start_nats
        ;;
    restart-postgres) restart_pg ;;
    crash-nats)
        crash_nats
        start_nats
        ;;
    crash-postgres) crash_pg ;;
    reset-nats)
        stop_nats
        rm -rf "$NATS_DIR"
        start_nats
        ;;
    status)
        if [ -n "$(nats_pid)" ]; then echo "nats-server: running (pid $(nats_pid))"; else echo "nats-server: stopped"; fi
        if pg_running; then echo "postgres: running"; else echo "postgres: stopped"; fi
        ;;
    *)
        echo "usage: $0 start|stop|env|restart-nats|restart-postgres|crash-nats|crash-postgres|reset-nats|status" >&2
        exit 2
        ;;
esac
