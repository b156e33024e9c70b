#!/usr/bin/env bash
# check_symbols.sh - every global symbol a library defines carries the library's prefix, so that
# nothing of ours collides with a name in someone's application (issue 10: libnvfp4jit.a used to
# export cache_store, drv_get, fam_get, nvrtc_compile, Lua's lua_*...).
#
# usage: tools/check_symbols.sh LIBRARY...   (a static archive .a, or a shared object .so)
# Allowed: nvfp4jit_* and NVFP4JIT_* (the public API and the extension API of
# include/nvfp4jit_ext.h). For a shared object only the dynamic symbol table counts (what the
# loader exports); for an archive every global defined symbol of every member. Names the
# compiler and the sanitizers make (__asan_*, __odr_asan*, __sancov*, __ubsan*) are ignored.
# @return 0 when every library is clean, 1 after listing the offending symbols, 2 on bad usage.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: check_symbols.sh LIBRARY..." >&2; exit 2; }
rc=0
for lib in "$@"; do
  [ -f "$lib" ] || { echo "check_symbols: $lib: no such file" >&2; exit 2; }
  case $lib in
    *.a) syms=$(nm -g --defined-only "$lib" 2>/dev/null | awk 'NF >= 3 {print $3}') ;;
    *) syms=$(nm -D --defined-only "$lib" | awk 'NF >= 3 {print $3}') ;;
  esac
  bad=$(printf '%s\n' "$syms" | sed 's/@.*//' | grep -v -E '^$|^(nvfp4jit_|NVFP4JIT_)' |
        grep -v -E '^(__asan_|__odr_asan|__sancov|__ubsan_)' | sort -u || true)
  n=$(printf '%s\n' "$syms" | grep -c . || true)
  if [ -n "$bad" ]; then
    echo "check_symbols: $lib exports $(printf '%s\n' "$bad" | wc -l) unprefixed global symbols:"
    printf '%s\n' "$bad" | sed 's/^/  /'
    rc=1
  else
    echo "check_symbols: $lib: $n global symbols, all prefixed"
  fi
done
exit $rc
