#!/usr/bin/env bash
# pip install . into a fresh venv (PyPI for scikit-build-core), then import the package with
# no torch and no GPU: the "done when" check. Slow-ish (a venv and a Release build of
# the library, ~15 s): runs only with NVFP4JIT_TEST_WHEEL=1 (.ci/run sets it).
# usage: python/tests/wheel.sh SOURCE_DIR PYTHON
set -euo pipefail
if [ "${NVFP4JIT_TEST_WHEEL:-0}" != 1 ]; then
  echo "SKIP python_wheel: skipped: pip install . runs with NVFP4JIT_TEST_WHEEL=1 (as .ci/run does)"
  exit 0
fi
S=$1
PY=${2:-python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$PY" -m venv "$T/venv"
start=$(date +%s)
"$T/venv/bin/pip" install -q --disable-pip-version-check "$S"
echo "pip install . took $(( $(date +%s) - start )) s"
cd "$T"  # not the source tree: the installed package must be the one imported
env -u NVFP4JIT_LIBRARY -u NVFP4JIT_TOOL -u PYTHONPATH "$T/venv/bin/python" -c "
import sys, nvfp4jit
print(nvfp4jit.__version__, nvfp4jit.variants('sm_90a')[:2])
assert 'torch' not in sys.modules
assert nvfp4jit.library_path.startswith('$T/venv'), nvfp4jit.library_path
assert nvfp4jit.tool_path().startswith('$T/venv'), nvfp4jit.tool_path()
print(nvfp4jit.explain([(80, 4096, 7168)], 'sm_90a', top=1).splitlines()[-1])
print(nvfp4jit.compile('sm90a:128x64x64:s4:swap:act16'))
"
echo "python_wheel: ok"
