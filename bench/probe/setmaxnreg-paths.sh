#!/usr/bin/env bash
# Build and run bench/probe/setmaxnreg-paths.c (CPU only; the CUDA toolkit in /usr/local/cuda),
# then count USETMAXREG in each path's SASS (nvdisasm from $NVFP4JIT_NVDISASM or PATH).
set -eu
CUDA=${CUDA_HOME:-/usr/local/cuda}; D=$(mktemp -d); cd "$D"
cc -std=c11 -O1 -o paths "$OLDPWD/bench/probe/setmaxnreg-paths.c" -I"$CUDA/include" -L"$CUDA/lib64" \
  -lnvrtc -lnvJitLink -Wl,-rpath,"$CUDA/lib64"
./paths
ND=${NVFP4JIT_NVDISASM:-$(command -v nvdisasm || true)}
[ -n "$ND" ] || { echo "no nvdisasm: set NVFP4JIT_NVDISASM"; exit 1; }
for f in path1 path2 path3; do echo "$f.cubin: $("$ND" $f.cubin | grep -c USETMAXREG) USETMAXREG"; done
echo "path4.ptx: $(grep -c setmaxnreg path4.ptx) setmaxnreg lines"
rm -rf "$D"
