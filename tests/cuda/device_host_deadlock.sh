#!/usr/bin/env bash
# A deadlocked plan on the host implementation of the device layer ends with the timeout report
# (rank, threadblock, op of the wait that gave up) and a non-zero exit, never a hang: each
# tests/runtime/plans/deadlock_*.json (a wait before any signal, semaphores that are never
# released, packets that never arrive) runs with a 1 s wait timeout under a 60 s guard.
# usage: device_host_deadlock.sh MSCCL_RUN PLAN.json...
set -uo pipefail
run=$1
shift
status=0
for plan in "$@"; do
  out=$(MSCCL_CUDA_TIMEOUT=1 timeout 60 "$run" "$plan" --backend cuda-host --size 1M -n 1 -w 0 2>&1)
  rc=$?
  name=$(basename "$plan")
  if ((rc == 124)); then
    echo "FAIL $name: still running after 60 s (a hang)"; status=1
  elif ((rc == 0)); then
    echo "FAIL $name: msccl-run succeeded on a deadlocked plan"; status=1
  elif ! grep -Eq '^  rank [0-9]+ tb [0-9]+ op [0-9]+ \([a-z_]+\): a wait did not complete within 1 s' <<<"$out"; then
    echo "FAIL $name: no timeout report naming rank, threadblock and op:"; echo "$out" | tail -5; status=1
  else
    echo "ok   $name: $(grep -E '^  rank ' <<<"$out" | head -1)"
  fi
done
exit $status
