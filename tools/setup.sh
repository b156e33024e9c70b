#!/usr/bin/env bash
# Install the build dependencies that a fresh Debian/Ubuntu machine lacks (the CUDA toolkit
# is expected in /usr/local/cuda): Lua 5.4 and xxHash headers, CMake, a C compiler, a C++
# compiler (emu tests), pkg-config, Python 3 with venv (for the Python package's tests).
set -euo pipefail
need=()
[ -f /usr/include/lua5.4/lua.h ] || need+=(liblua5.4-dev)
[ -f /usr/include/xxhash.h ] || need+=(libxxhash-dev)
command -v cmake >/dev/null || need+=(cmake)
command -v cc >/dev/null || need+=(gcc make)
command -v c++ >/dev/null || need+=(g++) # the emu tests build the rendered sm_100a kernel for the host
command -v pkg-config >/dev/null || need+=(pkg-config)   # the install test
# the Python tests (ctypes, no torch) and the pip install . test (a venv)
command -v python3 >/dev/null || need+=(python3)
command -v python3 >/dev/null && python3 -c 'import ensurepip' 2>/dev/null || need+=(python3-venv)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "missing: ${need[*]} (install them, e.g. sudo apt-get install ${need[*]})" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
