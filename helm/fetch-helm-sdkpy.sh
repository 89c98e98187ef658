#!/usr/bin/env bash
# Puts the Helm library shipped in the helm-sdkpy wheel (PyPI; Debian has no
# helm binary) where helm/check-chart.py can load it, and prints that folder
# on stdout. Pinned by version and sha256; idempotent.
#
#   HELM_SDKPY="$(helm/fetch-helm-sdkpy.sh)" helm/check-chart.py
set -euo pipefail

dest="${TRACELAB_HELM_SDKPY_DIR:-$HOME/.cache/tracelab/helm-sdkpy}"
version="0.1.32"
wheel="helm_sdkpy-${version}-py3-none-any.whl"
wheel_sha256="bcf5bf73cacc373bebedfb9c988969aa12a9eda86a140deba658fbf28eb789c5"

if [[ -f "$dest/lib/.complete-$version" ]]; then
    echo "$dest/lib"
    exit 0
fi
mkdir -p "$dest"
if [[ ! -f "$dest/$wheel" ]] || [[ "$(sha256sum "$dest/$wheel" | cut -d' ' -f1)" != "$wheel_sha256" ]]; then
    rm -f "$dest/$wheel"
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
        --python-version 3.12 --platform manylinux2014_x86_64 \
        "helm-sdkpy==$version" -d "$dest" >&2
fi
got="$(sha256sum "$dest/$wheel" | cut -d' ' -f1)"
if [[ "$got" != "$wheel_sha256" ]]; then
    echo "fetch-helm-sdkpy: $wheel has sha256 $got, expected $wheel_sha256" >&2
    exit 1
fi
rm -rf "$dest/lib"
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$dest/$wheel" "$dest/lib"
touch "$dest/lib/.complete-$version"
echo "$dest/lib"
