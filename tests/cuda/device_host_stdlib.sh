#!/usr/bin/env bash
# The stdlib on the host implementation of the CUDA executor's device layer (ctest label
# device-host): the matrix of tools/gpu-check.sh (every algorithm at 2, 4 and 8 ranks, in place
# and out of place, Simple and LL, LL8 and LL16) compiled once, then
#   1. every plan but the AllToAllV ones against the CPU executor, bitwise, with every data type
#      and reduce operator (msccl_cuda_gpu_tests --device host), virtual ranks and one rank per
#      emulated device;
#   2. every plan through msccl-run on cuda-host, verified over its manifest's four sizes (the
#      AllToAllV plans with their count matrices: resolved plans on the device).
# usage: device_host_stdlib.sh GPU_CHECK_SH MSCCLC MSCCL_RUN DEVICE_TESTS
set -uo pipefail
[[ $# -eq 4 ]] || { echo "usage: $0 GPU_CHECK_SH MSCCLC MSCCL_RUN DEVICE_TESTS" >&2; exit 2; }
check=$1 mscclc=$2 run=$3 tests=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$check" plans "$tmp" "$mscclc" || { echo "FAIL: compiling the stdlib matrix"; exit 1; }
mapfile -t fixed < <(ls "$tmp"/stdlib/*.json | grep -v alltoallv)
status=0
for placement in virtual gpus; do
  echo "== device tests, placement $placement (${#fixed[@]} plans)"
  "$tests" --device host --placement "$placement" "${fixed[@]}" >"$tmp/tests.log" 2>&1 || status=1
  grep -E '^(FAIL|#)' "$tmp/tests.log" | head -20
  tail -1 "$tmp/tests.log"
done
echo "== msccl-run --backend cuda-host, every plan of the manifest"
"$check" verify "$tmp" "$run" cuda-host >"$tmp/verify.log" 2>&1 || status=1
grep -v '^ok' "$tmp/verify.log"
exit $status
