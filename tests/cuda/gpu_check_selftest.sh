#!/usr/bin/env bash
# Both halves of tools/gpu-check.sh on a machine without a GPU: `bundle` builds a self-contained
# folder within 60 MiB (programs, their non-system shared libraries, the stdlib matrix as JSON,
# a `run` entry point), and its `run` says in one line that there is no GPU and exits 1.
# Skipped (77) where nvidia-smi finds a GPU: there `run` would run the whole check.
# usage: gpu_check_selftest.sh GPU_CHECK_SH BUILD_DIR
set -uo pipefail
check=$1 build=$2
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: a GPU is present; run the check itself (docs/cuda.md)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! BUILD_DIR=$build "$check" bundle "$tmp/bundle" >"$tmp/bundle.log" 2>&1; then
  echo "FAIL: bundle failed:"; cat "$tmp/bundle.log"; exit 1
fi
cat "$tmp/bundle.log"
status=0
mib=$(du -sm "$tmp/bundle" | cut -f1)
((mib <= 60)) || { echo "FAIL: the bundle is $mib MiB"; status=1; }
for f in run gpu-check.sh bin/msccl-run bin/msccl_cuda_gpu_tests bin/msccl-bench-cuda plans/stdlib.tsv \
         stdlib/allreduce/ring.msccl topologies/hgx-h100.json; do
  [[ -e $tmp/bundle/$f ]] || { echo "FAIL: the bundle has no $f"; status=1; }
done
n=$(wc -l <"$tmp/bundle/plans/stdlib.tsv")
((n >= 100)) || { echo "FAIL: only $n stdlib plans in the manifest"; status=1; }
# Every library the programs need is in the bundle or part of the base system.
missing=$(LD_LIBRARY_PATH=$tmp/bundle/lib ldd "$tmp"/bundle/bin/* | grep 'not found' || true)
[[ -z $missing ]] || { echo "FAIL: unresolved libraries: $missing"; status=1; }
# The bench step's tuner from the bundle alone (its stdlib, its topologies), on the host
# implementation of the device layer; the bundle carries it when it fits (a build for sm_90 alone).
if [[ -e $tmp/bundle/bin/msccl-tune ]]; then
  tune=$(cd "$tmp" && LD_LIBRARY_PATH=$tmp/bundle/lib MSCCL_TOPOLOGY_PATH=$tmp/bundle/topologies \
         "$tmp/bundle/bin/msccl-tune" --stdlib "$tmp/bundle/stdlib" --backend cuda-host --collective allreduce --quick \
         --min-bytes 1K --max-bytes 2K 2>&1)
  [[ $? -eq 0 && $tune == *"measured on backend cuda-host"* ]] || { echo "FAIL: the bundled msccl-tune: $tune"; status=1; }
elif ! grep -q "msccl-tune left out of the bundle" "$tmp/bundle.log"; then
  echo "FAIL: the bundle has no msccl-tune and does not say why"; status=1
fi
# The torch step's shim when it fits (a build for sm_90 alone): its libraries resolve in the bundle.
if [[ -e $tmp/bundle/lib/libmsccl_nccl.so ]]; then
  missing=$(LD_LIBRARY_PATH=$tmp/bundle/lib ldd "$tmp/bundle/lib/libmsccl_nccl.so" | grep 'not found' || true)
  [[ -z $missing ]] || { echo "FAIL: the shim's unresolved libraries: $missing"; status=1; }
  ls "$tmp"/bundle/plans/shim/allreduce_ring_r2.json "$tmp/bundle/gpu_check_torch.py" >/dev/null ||
    { echo "FAIL: the shim travels without its plans or script"; status=1; }
elif ! grep -q "the torch step's shim left out of the bundle" "$tmp/bundle.log"; then
  echo "FAIL: the bundle has no shim and does not say why"; status=1
fi
out=$(OUT=$tmp/out "$tmp/bundle/run" 2>&1)
rc=$?
echo "run: exit $rc: $out"
((rc == 1)) || { echo "FAIL: run exited $rc without a GPU (want 1)"; status=1; }
[[ $(wc -l <<<"$out") -eq 1 && $out == *"no NVIDIA GPU"* ]] || { echo "FAIL: want one line saying there is no GPU"; status=1; }
exit $status
