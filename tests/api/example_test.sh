#!/usr/bin/env bash
# examples/cpp as a user gets it: `cmake --install` into a temporary prefix, the example project
# configured against find_package(msccl) from that prefix only, built, and run under mpirun with
# 4 processes (twice: the second run compiles nothing, its plans come from the cache).
# Usage: example_test.sh BUILD_DIR EXAMPLE_SOURCE_DIR MPIEXEC
set -euo pipefail
build=$1 example=$2 mpiexec=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S "$example" -B "$tmp/example" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/example" >/dev/null
libs=$(ldd "$tmp/example/msccl_allreduce_example")
grep -q "$prefix/lib.*/libmsccl.so" <<<"$libs" ||
  { echo "FAIL: the example does not load the installed libmsccl.so"; echo "$libs"; exit 1; }
unset MSCCL_STDLIB_PATH
export MSCCL_CACHE_DIR=$tmp/cache
for run in 1 2; do
  out=$("$mpiexec" --allow-run-as-root --oversubscribe -np 4 "$tmp/example/msccl_allreduce_example" 2>&1) ||
    { echo "$out"; echo "FAIL: run $run"; exit 1; }
  echo "$out"
  [[ $(grep -c ": ok$" <<<"$out") == 8 ]] || { echo "FAIL: run $run: not 8 ok lines"; exit 1; }
  grep -q '^  \* allpairs-small .*: chosen' <<<"$out" || { echo "FAIL: explain does not show allpairs-small chosen"; exit 1; }
  grep -q '^  \* ring-large .*: chosen' <<<"$out" || { echo "FAIL: explain does not show ring-large chosen"; exit 1; }
done
[[ $(ls "$MSCCL_CACHE_DIR" | grep -c '\.plan$') == 2 ]] || { echo "FAIL: expected 2 cache entries"; ls -la "$MSCCL_CACHE_DIR"; exit 1; }
echo "example cpp: all checks passed"
