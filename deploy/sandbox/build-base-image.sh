#!/usr/bin/env bash
# Builds the Debian base image that TraceLab sandboxes run in, from Debian's
# mirror via debootstrap (the Docker engine here cannot pull images).
# Idempotent: does nothing when the image already exists.
#
#   deploy/sandbox/build-base-image.sh [IMAGE]   (default tracelab-sandbox-base:bookworm)
set -euo pipefail
image="${1:-tracelab-sandbox-base:bookworm}"
# What a sandbox needs from the image: python3 with pytest and coverage.py
# (the repair's neighbour tests by coverage, docs/sandbox.md), kill (procps)
# and the unprivileged user.
smoke='python3 -m pytest --version >/dev/null && python3 -c "import coverage" && command -v kill >/dev/null && test "$(id -u)" = 10001'
if docker image inspect "$image" >/dev/null 2>&1; then
  if docker run --rm --network none "$image" sh -c "$smoke" >/dev/null 2>&1; then
    echo "image $image exists: $(docker image inspect --format '{{.Id}}' "$image")"
    exit 0
  fi
  echo "image $image lacks what a sandbox needs (an older build?): rebuilding it" >&2
fi
command -v debootstrap >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; }
root="$(mktemp -d /var/tmp/tracelab-rootfs.XXXXXX)"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include=python3,python3-pytest,python3-coverage,git,ca-certificates,procps \
  bookworm "$root" http://deb.debian.org/debian >/dev/null
# An unprivileged user for sandboxed commands (uid 10001, no login shell needed).
chroot "$root" useradd --uid 10001 --create-home --shell /usr/sbin/nologin sandbox
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | docker import \
  --change 'USER 10001' --change 'WORKDIR /work' --change 'ENV LANG=C.UTF-8 TZ=UTC' \
  - "$image" >/dev/null
docker run --rm --network none "$image" sh -c "$smoke" \
  || { echo "image $image is missing python3-pytest, python3-coverage, procps or the sandbox user" >&2; exit 1; }
echo "built $image: $(docker image inspect --format '{{.Id}}' "$image")"
