#!/usr/bin/env bash
# Installs the build into a temporary prefix and checks the package as a user gets it:
#  - the layout (tools, headers, libraries, CMake package, stdlib);
#  - the installed mscclc finds the stdlib relative to itself, also after the prefix is moved
#    (a probe program exists only in the installed stdlib); msccl-run finds the topologies likewise;
#  - a project outside the tree builds against find_package(msccl) and its program compiles a stdlib
#    AllReduce in-process and verifies it on the CPU executor.
# Usage: install_test.sh BUILD_DIR CONSUMER_SOURCE_DIR
set -euo pipefail
build=$1 consumer=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/mscclc bin/msccl-run bin/plan-diff bin/msccl-lsp include/msccl/plan/Plan.h include/msccl/plan/PlanEnums.def \
         include/msccl/runtime/CpuExecutor.h include/msccl/driver/Driver.h include/msccl/msccl.hpp include/msccl/msccl.h lib/cmake/msccl/mscclConfig.cmake \
         lib/cmake/msccl/mscclConfigVersion.cmake lib/cmake/msccl/mscclTargets.cmake \
         share/msccl/stdlib/allreduce/ring.msccl share/doc/msccl/README.md; do
  [[ -e $prefix/$f ]] || { echo "FAIL: $f is not installed"; exit 1; }
done
ls "$prefix"/lib*/libmsccl_plan.a >/dev/null || { echo "FAIL: libmsccl_plan.a is not installed"; exit 1; }
ls "$prefix"/lib*/libmsccl.so >/dev/null || { echo "FAIL: libmsccl.so is not installed"; exit 1; }
echo "ok: installed layout"

# The stdlib beside the installed tool: the probe exists only there.
cat > "$prefix/share/msccl/stdlib/install_probe.msccl" <<'MSCCL'
program install_probe(collective = AllGather(2, 1, false)) {
    let ch = MemoryChannel(1, 0)
    ch.put(Rank(1).get_output_buffer()[0:1], Rank(0).get_input_buffer()[0:1], tb = 0)
}
MSCCL
unset MSCCL_STDLIB_PATH
mv "$prefix" "$tmp/moved"; prefix=$tmp/moved
(cd "$tmp" && "$prefix/bin/mscclc" stdlib:install_probe -o probe.json --no-verify 2>/dev/null ||
              "$prefix/bin/mscclc" stdlib:install_probe -o probe.json)
grep -q '"name": "install_probe"' "$tmp/probe.json" || { echo "FAIL: the moved mscclc did not find its stdlib"; exit 1; }
list=$("$prefix/bin/mscclc" --list-stdlib)
grep -q "install_probe" <<<"$list" || { echo "FAIL: --list-stdlib misses the installed stdlib"; exit 1; }
echo "ok: the installed (and moved) mscclc finds share/msccl/stdlib"

# The performance model's topologies beside the installed msccl-run.
[[ -e $prefix/share/msccl/topologies/hgx-h100.json ]] || { echo "FAIL: share/msccl/topologies is not installed"; exit 1; }
unset MSCCL_TOPOLOGY_PATH
sim=$("$prefix/bin/msccl-run" "$tmp/probe.json" --backend sim --topology pcie-l40s --size 4K) || true
grep -q "topology pcie-l40s" <<<"$sim" || { echo "FAIL: the moved msccl-run did not find share/msccl/topologies"; exit 1; }
echo "ok: the installed (and moved) msccl-run finds share/msccl/topologies"

# A consumer project against find_package(msccl).
cmake -S "$consumer" -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer" "$tmp/consumer_plan.json"
echo "install: all checks passed"
