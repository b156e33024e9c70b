#!/usr/bin/env bash
# The install test: `cmake --install` the build into a temporary prefix, then build and run
# examples/c/hello.c against it three ways: find_package (shared and static targets),
# pkg-config (shared and --static), and add_subdirectory of the source tree.
# usage: tests/install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
B=$(cd "$1" && pwd)
S=$(cd "$2" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
P=$T/prefix
step() { echo "== $*"; }

step "cmake --install $B --prefix $P"
cmake --install "$B" --prefix "$P" >/dev/null
for f in include/nvfp4jit.h include/nvfp4jit_ext.h bin/nvfp4jit share/nvfp4jit/problems/gpumode.txt; do
  [ -f "$P/$f" ] || { echo "missing $P/$f"; exit 1; }
done
LIBDIR=$(dirname "$(find "$P" -name nvfp4jit.pc)")/..
"$P/bin/nvfp4jit" --version

step "find_package(nvfp4jit) (examples/c)"
cmake -S "$S/examples/c" -B "$T/fp" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$T/fp" -j2 >/dev/null
"$T/fp/hello"
"$T/fp/hello_static"

step "pkg-config nvfp4jit"
export PKG_CONFIG_PATH="$LIBDIR/pkgconfig"
want=$(sed -n 's/^#define NVFP4JIT_VERSION_STRING "\(.*\)"/\1/p' "$S/include/nvfp4jit.h")
[ "$(pkg-config --modversion nvfp4jit)" = "$want" ]
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror "$S/examples/c/hello.c" -o "$T/hello_pc" \
  $(pkg-config --cflags --libs nvfp4jit) -Wl,-rpath,"$(pkg-config --variable=libdir nvfp4jit)"
"$T/hello_pc"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror "$S/examples/c/hello.c" -o "$T/hello_pc_static" \
  $(pkg-config --cflags nvfp4jit) "$(pkg-config --variable=libdir nvfp4jit)/libnvfp4jit.a" \
  $(pkg-config --static --libs-only-other --libs-only-l nvfp4jit | sed 's/-lnvfp4jit//')
"$T/hello_pc_static"

step "add_subdirectory(nvfp4jit)"
mkdir -p "$T/sub"
cat > "$T/sub/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.22)
project(sub LANGUAGES C)
add_subdirectory("$S" nvfp4jit)
add_executable(hello "$S/examples/c/hello.c")
target_link_libraries(hello PRIVATE nvfp4jit::nvfp4jit)
EOT
cmake -S "$T/sub" -B "$T/sub/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$T/sub/build" -j2 --target hello >/dev/null
"$T/sub/build/hello"
echo "install: ok"
