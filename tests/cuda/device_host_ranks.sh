#!/usr/bin/env bash
# The CUDA executor with one process per rank (CudaRankSession.h) on the host implementation of
# the device layer (ctest label device-host): the stdlib matrix of tools/gpu-check.sh (every
# algorithm at 2, 4 and 8 ranks, in place and out of place, Simple and LL) compiled once, then
#   1. every plan through `mpirun -np N msccl-run --backend cuda-host`, verified at its two
#      smallest manifest sizes: each process maps its peers' buffers, scratch and counters from
#      POSIX shared memory objects, port channels through each process's proxy (the multi-node
#      plans' "nodes" all on this machine's one);
#   1b. the multi-node plans again as the nodes they were written for (MSCCL_RANKS_PER_NODE from
#      their labels: 2 nodes of 1, 2 and 4 ranks, 4 nodes of 2): no rank maps a rank of another
#      node, their port channels between nodes go host-staged over TCP (EthernetPort.h), verified;
#      a memory-channel plan across nodes is refused (invalid plan) with the reason;
#   2. the 2- and 4-rank plans again with torchrun's environment (RANK, WORLD_SIZE,
#      MASTER_ADDR: the unique-id bootstrap, as on the GPU machine, which has no mpirun), and
#      the 2- and 4-rank multi-node plans as their nodes;
#   3. a plan that deadlocks ends within its 1 s wait timeout on every rank, naming rank, tb, op
#      of a blocked wait.
# usage: device_host_ranks.sh GPU_CHECK_SH MSCCLC MSCCL_RUN DEADLOCK_PLAN
set -uo pipefail
[[ $# -eq 4 ]] || { echo "usage: $0 GPU_CHECK_SH MSCCLC MSCCL_RUN DEADLOCK_PLAN" >&2; exit 2; }
check=$1 mscclc=$2 run=$3 deadlock=$4
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$check" plans "$tmp" "$mscclc" || { echo "FAIL: compiling the stdlib matrix"; exit 1; }
status=0
echo "== mpirun -np N msccl-run --backend cuda-host, every plan of the manifest"
"$check" verify-ranks "$tmp" "$run" cuda-host mpi >"$tmp/mpi.log" 2>&1 || status=1
grep -v '^ok' "$tmp/mpi.log"
total=$(wc -l <"$tmp/stdlib.tsv")
grep -q "^$total passed, 0 failed, 0 refused" "$tmp/mpi.log" || { echo "FAIL: not all $total plans passed"; status=1; }
echo "== the multi-node plans as their nodes (MSCCL_RANKS_PER_NODE), port channels between nodes over TCP"
GPU_CHECK_NODES=1 "$check" verify-ranks "$tmp" "$run" cuda-host mpi '_n[0-9]+x|_r2-port_' >"$tmp/nodes.log" 2>&1 || status=1
grep -v '^ok' "$tmp/nodes.log"
multi=$(grep -cE '_n[0-9]+x|_r2-port_' "$tmp/stdlib.tsv")
((multi >= 35)) || { echo "FAIL: only $multi multi-node plans in the matrix"; status=1; }
grep -q "^$multi passed, 0 failed, 0 refused" "$tmp/nodes.log" || { echo "FAIL: not all $multi multi-node plans passed"; status=1; }
grep -q "(8 processes, 4 nodes)" "$tmp/nodes.log" || { echo "FAIL: no plan ran on 4 nodes"; status=1; }
echo "== a memory-channel plan between two nodes (MSCCL_RANKS_PER_NODE=1): refused"
MSCCL_RANKS_PER_NODE=1 timeout -k 5 60 mpirun --allow-run-as-root --oversubscribe -x MSCCL_RANKS_PER_NODE -np 2 "$run" \
  "$tmp/stdlib/allreduce_allpairs_r2_out.json" --backend cuda-host --size 4K -n 1 -w 0 --check >"$tmp/memory.log" 2>&1 </dev/null
if ! grep -q "invalid plan: rank 0.s memory or switch channels reach rank 1, which is on another node (2 nodes" "$tmp/memory.log"; then
  echo "FAIL: the memory-channel plan between nodes was not refused with the reason:"; tail -5 "$tmp/memory.log"; status=1
fi
echo "== torchrun's environment (unique-id bootstrap), 2 and 4 ranks"
if ! "$check" verify-ranks "$tmp" "$run" cuda-host env '_r[24]_' >"$tmp/env.log" 2>&1; then
  if grep -q "ZeroMQ" "$tmp/env.log"; then echo "skipped: this build has no unique-id bootstrap (ZeroMQ)"; else status=1; fi
fi
grep -v '^ok' "$tmp/env.log" | head -30
if ! grep -q "ZeroMQ" "$tmp/env.log"; then
  GPU_CHECK_NODES=1 "$check" verify-ranks "$tmp" "$run" cuda-host env '_n2x1_|_n4x2_|_r2-port_' >"$tmp/env-nodes.log" 2>&1 || status=1
  grep -v '^ok' "$tmp/env-nodes.log" | head -30
  grep -q "(4 processes, 2 nodes)" "$tmp/env-nodes.log" || { echo "FAIL: no multi-node plan ran through torchrun's environment"; status=1; }
fi
echo "== a deadlocking plan, one process per rank"
MSCCL_CUDA_TIMEOUT=1 timeout -k 5 60 mpirun --allow-run-as-root --oversubscribe -np 2 "$run" "$deadlock" \
  --backend cuda-host --size 1K -n 1 -w 0 --check >"$tmp/deadlock.log" 2>&1 </dev/null
rc=$?
# Each rank reports its own blocked wait, or (when its wait was released by a peer whose timed-out
# wait went on to signal: the ranks start up to a second apart under load) that another rank
# timed out; at least one reports the blocked wait.
blocked=0
for r in 0 1; do
  if grep -q "rank $r tb 0 op 0 (wait): a wait did not complete within 1 s" "$tmp/deadlock.log"; then
    blocked=$((blocked + 1))
  elif ! grep -q "rank $r: finished launch 1, but another rank timed out" "$tmp/deadlock.log"; then
    echo "FAIL: rank $r reported neither its blocked wait nor the other rank's timeout"; status=1
  fi
done
((blocked > 0)) || { echo "FAIL: no rank reported its blocked wait"; status=1; }
if ((rc == 0 || rc == 124 || rc == 137)); then
  echo "FAIL: the deadlocking run ended with status $rc"; status=1
fi
grep -m1 "deadlock:" "$tmp/deadlock.log"
exit $status
