#!/usr/bin/env bash
# nccl.example: install the build into a temporary prefix, build examples/nccl against
# find_package(msccl) there, and run it under mpirun -np 4 with MSCCL_BACKEND=cpu and a plan
# directory holding a stdlib AllReduce compiled by the installed mscclc; the program checks its
# sums and MSCCL_DEBUG must name the plan on every rank. Where the build has the CUDA executor,
# again on its process-per-rank path on the host implementation of the device layer
# (MSCCL_BACKEND=cuda MSCCL_CUDA_DEVICE=host) as 2 nodes of 2 ranks (MSCCL_RANKS_PER_NODE=2) with
# the hierarchical AllReduce: its port channels between the nodes host-staged over TCP.
# Usage: example_test.sh BUILD_DIR EXAMPLE_SOURCE_DIR MPIRUN
set -euo pipefail
build=$1 example=$2 mpirun=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
ls "$prefix"/lib*/libmsccl_nccl.so >/dev/null || { echo "FAIL: libmsccl_nccl.so is not installed"; exit 1; }
cmake -S "$example" -B "$tmp/example" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/example" >/dev/null
mkdir "$tmp/plans"
"$prefix/bin/mscclc" stdlib:allreduce/allpairs -D ranks=4 -D inplace=false -o "$tmp/plans/allreduce_allpairs.json"
export MSCCL_BACKEND=cpu MSCCL_PLANS=$tmp/plans MSCCL_DEBUG=INFO MSCCL_CACHE_DIR=$tmp/cache MSCCL_NCCL_LIB_PATH=$tmp/none.so
"$mpirun" --allow-run-as-root --oversubscribe -np 4 -x MSCCL_BACKEND -x MSCCL_PLANS -x MSCCL_DEBUG -x MSCCL_CACHE_DIR \
  -x MSCCL_NCCL_LIB_PATH "$tmp/example/msccl_nccl_example" > "$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt"; exit 1; }
cat "$tmp/out.txt"
[[ $(grep -c "allreduce of 65536 floats: correct" "$tmp/out.txt") == 4 ]] || { echo "FAIL: not every rank is correct"; exit 1; }
[[ $(grep -c "ncclAllReduce 262144 bytes float32: plan allreduce_allpairs" "$tmp/out.txt") == 4 ]] ||
  { echo "FAIL: MSCCL_DEBUG does not name the plan on every rank"; exit 1; }
if grep -q '^MSCCL_HAVE_CUDA:INTERNAL=ON' "$build/CMakeCache.txt"; then
  rm -rf "$tmp/plans" && mkdir "$tmp/plans"
  "$prefix/bin/mscclc" stdlib:allreduce/hierarchical -D ranks=4 -D ranks_per_node=2 -D inplace=false \
    -o "$tmp/plans/allreduce_hierarchical.json"
  export MSCCL_BACKEND=cuda MSCCL_CUDA_DEVICE=host MSCCL_RANKS_PER_NODE=2
  "$mpirun" --allow-run-as-root --oversubscribe -np 4 -x MSCCL_BACKEND -x MSCCL_CUDA_DEVICE -x MSCCL_RANKS_PER_NODE \
    -x MSCCL_PLANS -x MSCCL_DEBUG -x MSCCL_CACHE_DIR -x MSCCL_NCCL_LIB_PATH "$tmp/example/msccl_nccl_example" \
    > "$tmp/nodes.txt" 2>&1 || { cat "$tmp/nodes.txt"; exit 1; }
  cat "$tmp/nodes.txt"
  [[ $(grep -c "communicator ready (cuda backend, plans run, 2 ranks per node" "$tmp/nodes.txt") == 4 ]] ||
    { echo "FAIL: not every rank runs plans on the cuda backend with 2 ranks per node"; exit 1; }
  [[ $(grep -c "allreduce of 65536 floats: correct" "$tmp/nodes.txt") == 4 ]] ||
    { echo "FAIL: not every rank is correct across the two nodes"; exit 1; }
  [[ $(grep -c "ncclAllReduce 262144 bytes float32: plan allreduce_hierarchical" "$tmp/nodes.txt") == 4 ]] ||
    { echo "FAIL: MSCCL_DEBUG does not name the hierarchical plan on every rank"; exit 1; }
fi
echo "nccl example: all checks passed"
