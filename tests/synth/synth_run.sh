#!/usr/bin/env bash
# msccl-synth's programs compute what they claim: each is written for a topology, compiled in
# place and out of place (and with a small pipeline window, so a chunk spans several windows), and
# run on the CPU executor with every output element checked and the race checker on.
# Usage: synth_run.sh MSCCL_SYNTH MSCCLC MSCCL_RUN [all|quick]   (quick: the PCIe tree's AllGather
# and AllReduce only, for the sanitizer build)
set -euo pipefail
synth=$1 mscclc=$2 run=$3 which=${4:-all}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
status=0
cases="pcie-tree:allgather pcie-tree:reducescatter pcie-tree:allreduce torus-4x4:allgather torus-4x4:allreduce
       hgx-h100:allreduce"
[ "$which" = quick ] && cases="pcie-tree:allgather pcie-tree:allreduce"
for case in $cases; do
  topo=${case%%:*} coll=${case#*:}
  prog="$dir/$topo-$coll.msccl"
  "$synth" --topology "$topo" --collective "$coll" -o "$prog" 2>"$dir/log" || { cat "$dir/log"; exit 1; }
  for inplace in true false; do
    plan="$dir/$topo-$coll-$inplace.json"
    "$mscclc" "$prog" -Dinplace=$inplace -Dunit=256 -o "$plan"
    if out=$("$run" --backend cpu --race-check -b 4K -e 64K -w 1 -n 2 "$plan" 2>&1); then
      echo "ok   $topo $coll inplace=$inplace"
    else
      echo "FAIL $topo $coll inplace=$inplace"
      echo "$out" | tail -20
      status=1
    fi
  done
done
exit $status
