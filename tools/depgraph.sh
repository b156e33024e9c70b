#!/usr/bin/env bash
# depgraph.sh - the dependency graph of the library's source (src/), and a check that it has
# no circles (STYLE.md "Layers": a module is either below another or above it).
#
# A module is a file stem: src/cache.c and src/cache.h are the module "cache"; a header
# without a .c of its name (family.h, kernel.h) is a module of its own. Two kinds of edge:
#   include   a.c or a.h has  #include "b.h"                          (read from the source)
#   call      a.o references a symbol that b.o defines                 (read with nm from the
#             objects, so it sees every cross-file call and data use, macros included)
# An edge a -> b means "a uses b": b is below a. A cycle means neither is below the other.
#
# usage: tools/depgraph.sh [--dot] [--allow FILE] SRC_DIR [OBJECT...]
#   SRC_DIR     the src/ directory
#   OBJECT      the library's object files (CMake: $<TARGET_OBJECTS:nvfp4jit_obj>; an argument
#               may hold several separated by ';'); a directory stands for every *.o under it
#               (build/CMakeFiles/nvfp4jit_obj.dir, which may hold stale objects of deleted
#               sources). Without objects only the include edges are drawn.
#   --dot       print the graph in Graphviz dot (include edges solid, call edges dashed)
#               instead of the plain "a -> b (include|call: symbols)" list
#   --allow F   edges "a b" listed in F (one per line, '#' comments) are left out of the
#               cycle check (a known circle someone is removing; the list should be empty)
# @return 0 when the graph has no cycle, 1 when it has one (the cycle is printed), 2 on bad
# usage.
set -euo pipefail
dot=0
allow=
while [ $# -gt 0 ]; do
  case $1 in
    --dot) dot=1; shift ;;
    --allow) allow=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "depgraph: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] && [ -d "$1" ] || { echo "usage: depgraph.sh [--dot] [--allow FILE] SRC_DIR [OBJECT...]" >&2; exit 2; }
src=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

stem() { local b=${1##*/}; b=${b%.o}; b=${b%.c}; echo "${b%.h}"; }

# include edges: "a b include"
for f in "$src"/*.c "$src"/*.h; do
  [ -e "$f" ] || continue
  a=$(stem "$f")
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
    while read -r inc; do
      b=$(stem "$inc")
      # only headers of src/ (the public header and generated files are not modules here)
      if [ -e "$src/$inc" ] && [ "$a" != "$b" ]; then echo "$a $b include"; fi
    done
done > "$tmp/edges"

# call edges: "a b call symbol"
if [ $# -gt 0 ]; then
  for a in "$@"; do
    IFS=';' read -r -a parts <<< "$a"
    for p in "${parts[@]}"; do
      if [ -d "$p" ]; then find "$p" -name '*.o'; elif [ -n "$p" ]; then echo "$p"; fi
    done
  done | sort > "$tmp/objs"
  [ -s "$tmp/objs" ] || { echo "depgraph: no objects given" >&2; exit 2; }
  objs=$(cat "$tmp/objs")
  for o in $objs; do
    m=$(stem "$o")
    nm --defined-only -g "$o" | awk -v m="$m" 'NF >= 3 {print $3, m}'
  done | sort -u > "$tmp/defs"
  for o in $objs; do
    m=$(stem "$o")
    nm -u "$o" | awk -v m="$m" '{print $NF, m}'
  done | sort -u > "$tmp/uses"
  # join on the symbol: user definer symbol
  join "$tmp/uses" "$tmp/defs" | awk '$2 != $3 {print $2, $3, "call", $1}' >> "$tmp/edges"
fi

if [ $dot = 1 ]; then
  echo "digraph src {"
  echo "  rankdir=BT; node [shape=box, fontname=monospace];"
  awk '{k = $1 " " $2 " " $3; if (!(k in seen)) {seen[k] = 1;
        printf "  \"%s\" -> \"%s\"%s;\n", $1, $2, $3 == "call" ? " [style=dashed]" : ""}}' \
    "$tmp/edges"
  echo "}"
else
  # one line per edge, the symbols of a call edge listed
  sort -k1,1 -k2,2 -k3,3 "$tmp/edges" | awk '
    {k = $1 " -> " $2 " (" $3}
    k != last {if (last != "") print last (syms != "" ? ": " syms : "") ")"; last = k; syms = ""}
    $4 != "" {syms = syms (syms != "" ? " " : "") $4}
    END {if (last != "") print last (syms != "" ? ": " syms : "") ")"}'
fi

# the cycle check: tsort fails on a loop and names its members
awk '{print $1, $2}' "$tmp/edges" | sort -u > "$tmp/pairs"
if [ -n "$allow" ]; then
  sed 's/#.*//' "$allow" | awk 'NF == 2 {print $1, $2}' | sort -u > "$tmp/allow"
  comm -23 "$tmp/pairs" "$tmp/allow" > "$tmp/checked"
else
  cp "$tmp/pairs" "$tmp/checked"
fi
if ! tsort "$tmp/checked" > /dev/null 2> "$tmp/loops"; then
  echo "depgraph: the graph of $src has a cycle; each loop below lists modules of which each" >&2
  echo "uses the next and the last uses the first (the edges are listed above):" >&2
  sed -e 's/^tsort: .*input contains a loop:$/  loop:/' -e 's/^tsort: /    /' "$tmp/loops" >&2
  exit 1
fi
[ $dot = 1 ] || echo "depgraph: no cycles ($(wc -l < "$tmp/checked") module edges)"
