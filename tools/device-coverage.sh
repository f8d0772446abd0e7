#!/usr/bin/env bash
# Line coverage of the CUDA executor's device sources (Kernel.cu and the .cuh headers) under the
# device-host test suite: the host build of the same source (HostKernel.cpp) is instrumented
# with gcov (CMake option MSCCL_DEVICE_COVERAGE), `ctest -L device-host` runs, and gcov's line
# counts are printed per file. Lines only nvcc compiles (the CUDA half of DevicePrimitives.cuh,
# the launch functions of Kernel.cu) are not executable lines of the host build and do not count.
# usage: tools/device-coverage.sh [BUILD_DIR]   (default <repo>/build-cov; configured if needed)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-cov}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMSCCL_DEVICE_COVERAGE=ON >/dev/null
build=$(cd "$build" && pwd)
cmake --build "$build" --target msccl_cuda_gpu_tests msccl_cuda_proxy_tests msccl-run mscclc >/dev/null
obj=$(dirname "$(find "$build" -name 'HostKernel.cpp.o' | head -1)")
find "$build" -name '*.gcda' -delete
ctest --test-dir "$build" -L device-host --output-on-failure >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && gcov "$obj/HostKernel.cpp.gcda" >gcov.txt 2>&1) || true
echo "# line coverage of the device sources under ctest -L device-host (gcov, host build)"
printf '%-28s %8s %8s %7s\n' file lines executed percent
awk -v root="$root/runtime/lib/cuda/" '
  /^File / { f = $2; gsub(/\x27/, "", f) }
  /^Lines executed:/ && f != "" {
    split($2, a, ":"); pct = a[2]; sub(/%/, "", pct); n = $4
    if (index(f, root) == 1) { name = substr(f, length(root) + 1)
      if (name ~ /^(Kernel\.cu|.*\.cuh)$/) printf "%-28s %8d %8d %6.1f%%\n", name, n, int(n * pct / 100 + 0.5), pct }
    f = "" }' "$tmp/gcov.txt" | sort
