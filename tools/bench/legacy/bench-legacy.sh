#!/usr/bin/env bash
# bench-legacy.sh BUILD_DIR MSCCLPP [RUNS]: compile time of the MSCCLPPLang examples, mscclc
# (the mscclpplang style, --plan-format=legacy) against the old Python compiler, in the same run
# on the same machine. MSCCLPP is a clone (or bare git dir) of microsoft/mscclpp; the Python
# compiler (python/mscclpp/language and python/examples at be6a941f~1, the last commit with
# MSCCLPPLang) runs with /usr/bin/python3 from a temporary `mscclpp` package holding only
# `language/`. For each example and arguments: the best of RUNS (default 3) wall seconds of
# each, the speed-up, and whether both wrote the same bytes. Prints a table; never fails on time
# (a benchmark, not a test).
set -u
build=${1:?usage: bench-legacy.sh BUILD_DIR MSCCLPP [RUNS]}
src=${2:?usage: bench-legacy.sh BUILD_DIR MSCCLPP [RUNS]}
runs=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
examples=$here/../../../tests/compiler/legacy
mscclc=$build/tools/mscclc/mscclc
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
commit=$(git -C "$src" rev-parse be6a941f~1 2>/dev/null) || { echo "error: $src has no commit be6a941f~1" >&2; exit 2; }
git -C "$src" archive "$commit" python/mscclpp/language python/examples | tar -x -C "$tmp" || exit 2
mkdir -p "$tmp/pkg/mscclpp"
cp -r "$tmp/python/mscclpp/language" "$tmp/pkg/mscclpp/"
touch "$tmp/pkg/mscclpp/__init__.py"
best() { # best wall seconds of RUNS runs of "$@" (stdout to $tmp/out)
  local b=""
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(date +%s.%N)
    "$@" > "$tmp/out" 2> "$tmp/err" || { echo "FAILED"; return; }
    t1=$(date +%s.%N)
    b=$(echo "$t1 - $t0" | bc | awk -v b="$b" '{ if (b == "" || $1 < b) print $1; else print b }')
  done
  printf "%.3f\n" "$b"
}
echo "MSCCLPPLang examples at ${commit:0:10}; best of $runs runs; $(nproc) cores; $(uname -m)"
printf "%-40s %-8s | %9s %9s | %8s | %s\n" example args "python s" "mscclc s" speed-up "same plan"
# example | positional arguments | the .msccl params they set
for entry in "allreduce_allpairs_get|8 8|gpus instances" "allreduce_allpairs|8 8|gpus instances" \
             "allreduce_ring|8 8|size instances" "allreduce_allpairs_packet|8 8|gpus instances" \
             "allgather_allpairs_multinodes_packets|16 8 1|gpus gpus_per_node instances"; do
  IFS='|' read -r ex args params <<< "$entry"
  read -r -a a <<< "$args"
  read -r -a p <<< "$params"
  defs=()
  for i in "${!p[@]}"; do defs+=(-D "${p[$i]}=${a[$i]}"); done
  tp=$(cd "$tmp" && PYTHONPATH="$tmp/pkg" best "$py" "python/examples/$ex.py" "${a[@]}")
  cp "$tmp/out" "$tmp/py.json"
  tm=$(best "$mscclc" "$examples/$ex.msccl" --plan-format=legacy "${defs[@]}")
  same=$(cmp -s "$tmp/out" "$tmp/py.json" && echo yes || echo NO)
  speed=$(awk -v p="$tp" -v m="$tm" 'BEGIN { if (m > 0 && p > 0) printf "%.1fx", p / m; else print "-" }')
  printf "%-40s %-8s | %9s %9s | %8s | %s\n" "$ex" "$args" "$tp" "$tm" "$speed" "$same"
done
