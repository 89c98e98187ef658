#!/usr/bin/env bash
# Builds the five service images from deploy/docker/Dockerfile, where images
# can be pulled (not in the development sandbox).
#
#   deploy/docker/build.sh REGISTRY/PREFIX [TAG] [--push]
#   deploy/docker/build.sh registry.example.com/tracelab 0.1.0 --push
#
# Images: PREFIX/tracelab-<service>:TAG (the Helm chart's image.repository
# is PREFIX). Needs BuildKit (docker buildx or DOCKER_BUILDKIT=1). A service
# built from another cargo package than tracelab-<service> is named with
# PACKAGE_<SERVICE>=..., e.g. PACKAGE_INGEST=my-ingest.
set -euo pipefail
cd "$(dirname "$0")/../.."

prefix="${1:?usage: deploy/docker/build.sh REGISTRY/PREFIX [TAG] [--push]}"
tag="${2:-$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)}"
push="${3:-}"

for service in investigator verifier arbiter ingest indexer; do
    image="$prefix/tracelab-$service:$tag"
    package_var="PACKAGE_${service^^}"
    default_package="tracelab-$service"
    package="${!package_var:-$default_package}"
    echo "build.sh: $image" >&2
    DOCKER_BUILDKIT=1 docker build -f deploy/docker/Dockerfile \
        --build-arg SERVICE="$service" --build-arg PACKAGE="$package" -t "$image" .
    if [ "$push" = "--push" ]; then
        docker push "$image"
    fi
done
