#!/usr/bin/env bash
# The GPU check, in two halves (docs/cuda.md, "The GPU check"):
#
#   tools/gpu-check.sh bundle DIR   on the build machine: builds what the GPU machine needs
#                                   (msccl-run, the gpu tests, msccl-bench-cuda; sm_90 code),
#                                   compiles the stdlib plans to JSON, copies the golden plans
#                                   and every shared library those programs need that is not
#                                   part of the base system, into one self-contained folder
#                                   (<= 60 MiB) with a `run` entry point.
#   tools/gpu-check.sh plans DIR MSCCLC  only the stdlib matrix, compiled with MSCCLC into DIR
#                                   (the device-host tests run the same plans on host threads);
#   tools/gpu-check.sh verify DIR MSCCL_RUN BACKEND  every plan of that matrix through msccl-run
#                                   on BACKEND, verified (the check's stdlib-run step).
#   DIR/run                         on the GPU machine (needs only a driver; no compiler, no
#   tools/gpu-check.sh run DIR      Debian packages, no network): prints what the machine has,
#                                   then runs each step under its own timeout within a total
#                                   budget, and writes OUT/summary.txt (device, driver, CUDA,
#                                   pass/fail per step, figures) and one log per step.
#
# Environment: BUILD_DIR (bundle; default <repo>/build), OUT (run; default DIR/out),
# GPU_CHECK_BUDGET (run; seconds for all steps, default 330), GPU_CHECK_STEPS (run; the steps to
# run, space separated, default all: info gpu-quick ranks torch stdlib-cpu stdlib-run golden sanitizer bench;
# bench also runs msccl-tune on the GPU).
# Without a usable GPU, `run` says so in one line and exits 1. For a dry run of the harness on a
# machine without a GPU (nvidia-smi faked): GPU_CHECK_BACKEND=cuda-host and
# GPU_CHECK_DEVICE_FLAGS="--device host" and GPU_CHECK_RANKS_BACKEND=cuda-host run the steps on the
# host implementation.
set -uo pipefail

die() { echo "gpu-check: $*" >&2; exit 2; }

# ------------------------------------------------------------------------------------------
# bundle
# ------------------------------------------------------------------------------------------

# The stdlib matrix that travels: algorithm, plan label, -D defines, msccl-run arguments.
# Every algorithm at 2, 4 and 8 ranks (the hierarchical and multi-node ones as 2 nodes of 1, 2
# nodes of 2, 4 nodes of 2 and 2 nodes of 4; hierarchical_nvls, a switch channel per node, not
# at 1 rank per node), Simple and LL (LL16, and LL8 where named), several
# data types.
stdlib_matrix() {
  local r
  for r in 2 4 8; do
    echo "allreduce/allpairs r$r ranks=$r -d float32"
    echo "allreduce/allpairs_packet r$r ranks=$r -d float16"
    echo "allreduce/allpairs_packet r$r-ll8 ranks=$r -d int32 --packet LL8"
    echo "allreduce/ring r$r ranks=$r -d bfloat16"
    echo "allreduce/pipelined r$r ranks=$r,unit=4096 -d float32"
    echo "allreduce/nvls r$r ranks=$r -d float32"
    echo "allgather/allpairs r$r ranks=$r -d float32"
    echo "allgather/ring r$r ranks=$r -d int32"
    echo "allgather/packet r$r ranks=$r -d float32"
    echo "allgather/packet r$r-ll8 ranks=$r -d float32 --packet LL8"
    echo "allgather/nvls r$r ranks=$r -d float16"
    echo "reducescatter/allpairs r$r ranks=$r -d float32"
    echo "reducescatter/ring r$r ranks=$r -d int32"
    echo "reducescatter/packet r$r ranks=$r -d float16"
    echo "reducescatter/nvls r$r ranks=$r -d bfloat16"
    echo "alltoall/allpairs r$r ranks=$r -d float32"
    echo "alltoallv/allpairs r$r ranks=$r -d float32 --counts random:7"
    echo "sendrecv/pairs r$r ranks=$r,ranks_per_node=$r -d float32"
  done
  echo "sendrecv/pairs r2-port ranks=2,ranks_per_node=1 -d float32"
  for s in 2x1 4x2 8x4 8x2; do
    local n=${s%x*} p=${s#*x}
    echo "allreduce/hierarchical n$s ranks=$n,ranks_per_node=$p -d float32"
    echo "allgather/hierarchical n$s ranks=$n,ranks_per_node=$p -d int32"
    ((p < 2)) || echo "allreduce/hierarchical_nvls n$s ranks=$n,ranks_per_node=$p -d float32"
    echo "alltoall/multinode n$s ranks=$n,ranks_per_node=$p -d float32"
    echo "alltoallv/multinode n$s ranks=$n,ranks_per_node=$p -d float32 --counts skewed"
  done
}

# Copies the shared libraries `ldd` lists for $@ into $lib, except the base system's (the C and
# C++ runtimes, the loader) and the driver's (libcuda: the GPU machine has its own).
copy_libs() {
  local lib=$1; shift
  ldd "$@" 2>/dev/null | awk '/=> \//{print $3}' | sort -u | while read -r so; do
    case $(basename "$so") in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
      libcuda.so*|libnvidia*) ;;
      *) cp -L "$so" "$lib/" ;;
    esac
  done
}

# compile_plans DIR MSCCLC: the stdlib matrix compiled to DIR/stdlib/*.json (the GPU side needs
# no compiler) and DIR/stdlib.tsv, one line per plan: name, JSON path relative to DIR, msccl-run
# arguments (mode, sizes the plan accepts: chunk multiples of its alignment, and any extra ones).
compile_plans() {
  local out=$1 mscclc=$2 manifest=$1/stdlib.tsv
  mkdir -p "$out/stdlib"
  : >"$manifest"
  local algo label defs args
  while read -r algo label defs args; do
    local mode
    for mode in in-place out-of-place; do
      local name=${algo//\//_}_${label}_${mode%%-*} json inplace=true
      [[ $mode == in-place ]] || inplace=false
      json=$out/stdlib/$name.json
      local dflags=(-D "inplace=$inplace")
      IFS=, read -ra kv <<<"$defs"
      for d in "${kv[@]}"; do dflags+=(-D "$d"); done
      if ! "$mscclc" "stdlib:$algo" "${dflags[@]}" -o "$json" 2>"$out/$name.err"; then
        # A program without `param inplace` (AllToAllV) is out of place only: compiled once so.
        if grep -q "no \`param inplace\`" "$out/$name.err"; then
          [[ $inplace == true ]] && { rm -f "$out/$name.err"; continue; }
          "$mscclc" "stdlib:$algo" "${dflags[@]:2}" -o "$json" 2>"$out/$name.err" ||
            die "mscclc stdlib:$algo ${dflags[*]:2} failed: $(head -3 "$out/$name.err")"
        else
          # An algorithm that has no in-place (or out-of-place) form says so; others are errors.
          grep -qi "in-place\|inplace\|out-of-place" "$out/$name.err" && { rm -f "$out/$name.err"; continue; }
          die "mscclc stdlib:$algo ${dflags[*]} failed: $(head -3 "$out/$name.err")"
        fi
      fi
      rm -f "$out/$name.err"
      local sizes
      sizes=$(python3 - "$json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
g = p["gpus"][0]
a = int(p.get("buffer_alignment", 16))
base = a * max(g["input_chunks"], g["output_chunks"], 1)
# four sizes: the smallest the plan takes, two middle ones, one of several MiB
print("-b %d -e %d -f 32" % (base, base * 32 ** 3))
PY
)
      printf '%s\t%s\t%s\n' "$name" "stdlib/$name.json" "--$mode $sizes $args" >>"$manifest"
    done
  done < <(stdlib_matrix)

}

bundle() {
  local dir=${1:-}
  [[ -n $dir ]] || die "usage: $0 bundle DIR"
  local root build
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  build=${BUILD_DIR:-$root/build}
  [[ -f $build/CMakeCache.txt ]] || die "no build in $build: configure it first (tools/quickstart.sh demo, or cmake -S . -B build -G Ninja)"
  grep -q '^MSCCL_HAVE_CUDA:INTERNAL=ON' "$build/CMakeCache.txt" || die "the build in $build has no CUDA executor (no CUDA toolkit found?)"
  grep -Eq '^MSCCL_CUDA_ARCHITECTURES:INTERNAL=(.*;)?90' "$build/CMakeCache.txt" ||
    die "the build in $build has no sm_90 code (CMAKE_CUDA_ARCHITECTURES: $(sed -n 's/^MSCCL_CUDA_ARCHITECTURES:INTERNAL=//p' "$build/CMakeCache.txt"))"
  cmake --build "$build" --target mscclc msccl-run msccl-tune msccl_cuda_gpu_tests msccl-bench-cuda msccl_nccl >/dev/null ||
    die "building the bundle's programs failed (cmake --build $build)"

  rm -rf "$dir"
  mkdir -p "$dir/bin" "$dir/lib" "$dir/plans/stdlib" "$dir/plans/golden"
  dir=$(cd "$dir" && pwd)
  local bins=("$build/tools/msccl-run/msccl-run" "$build/tests/cuda/msccl_cuda_gpu_tests"
              "$build/tools/bench/cuda/msccl-bench-cuda")
  local b
  for b in "${bins[@]}"; do
    [[ -x $b ]] || die "missing $b"
    cp "$b" "$dir/bin/"
    strip --strip-debug "$dir/bin/$(basename "$b")"
  done
  copy_libs "$dir/lib" "${bins[@]}"

  compile_plans "$dir/plans" "$build/tools/mscclc/mscclc"
  local manifest=$dir/plans/stdlib.tsv
  # The tuner compiles the stdlib in-process and reads the topologies.
  cp -r "$root/stdlib" "$dir/stdlib"
  cp -r "$root/share/topologies" "$dir/topologies"

  # Golden plans (MSCCL++'s own, from ../shared; they travel in the bundle, never into git).
  local shared=${MSCCL_SHARED_DIR:-$root/../shared}
  local sub
  for sub in golden legacy; do
    if [[ -d $shared/$sub ]]; then
      (cd "$shared/$sub" && find . -name '*.json' | while read -r f; do
        mkdir -p "$dir/plans/$sub/$(dirname "$f")"; cp "$f" "$dir/plans/$sub/$f"; done)
    else
      echo "gpu-check: no plans under $shared/$sub; the bundle carries the stdlib plans without them" >&2
    fi
  done

  # Plans travel minified (the reference plans are pretty-printed: 11 of 17 MiB).
  find "$dir/plans" -name '*.json' -print0 | xargs -0 python3 -c '
import json, sys
for f in sys.argv[1:]:
    with open(f) as h: p = json.load(h)
    with open(f, "w") as h: json.dump(p, h, separators=(",", ":"))' || die "minifying the plans failed"

  cp "${BASH_SOURCE[0]}" "$dir/gpu-check.sh"
  cat >"$dir/run" <<'EOF'
#!/usr/bin/env bash
# The GPU check's entry point: runs every step and writes $OUT/summary.txt (see gpu-check.sh).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec bash "$here/gpu-check.sh" run "$here" "$@"
EOF
  chmod +x "$dir/run" "$dir/gpu-check.sh"
  git -C "$root" rev-parse HEAD >"$dir/COMMIT" 2>/dev/null || echo unknown >"$dir/COMMIT"
  # The torch step: the NCCL shim and libmsccl (stripped), its plans (in place AllReduce as
  # torch's all_reduce, out of place AllGather/ReduceScatter as its *_tensor calls) and the script,
  # when they fit in 55 MiB (the device tool carries at most 64 MiB with the working tree).
  local shim=$build/nccl/libmsccl_nccl.so before
  before=$(ls "$dir/lib")
  if [[ -f $shim ]]; then
    cp "$shim" "$dir/lib/" && strip --strip-debug "$dir/lib/libmsccl_nccl.so"
    copy_libs "$dir/lib" "$shim"
    for f in "$dir"/lib/libmsccl.so*; do [[ -f $f ]] && strip --strip-debug "$f"; done
    mkdir -p "$dir/plans/shim"
    local r
    for r in 2 4; do
      "$build/tools/mscclc/mscclc" stdlib:allreduce/ring -D ranks=$r -D inplace=true -o "$dir/plans/shim/allreduce_ring_r$r.json" &&
      "$build/tools/mscclc/mscclc" stdlib:allgather/ring -D ranks=$r -D inplace=false -o "$dir/plans/shim/allgather_ring_r$r.json" &&
      "$build/tools/mscclc/mscclc" stdlib:reducescatter/ring -D ranks=$r -D inplace=false -o "$dir/plans/shim/reducescatter_ring_r$r.json" ||
        die "compiling the shim's plans failed"
    done
    cp "$root/tools/gpu_check_torch.py" "$dir/"
    local with
    with=$(du -sm "$dir" | cut -f1)
    if ((with > 55)); then
      (cd "$dir/lib" && for f in *; do grep -qxF "$f" <<<"$before" || rm -f "$f"; done)
      rm -rf "$dir/plans/shim" "$dir/gpu_check_torch.py"
      echo "gpu-check: the torch step's shim left out of the bundle ($with MiB with it; build for sm_90 alone to carry it)" >&2
    fi
  fi
  local mib
  # msccl-tune (the bench step's tune) when it fits in 55 MiB (the device tool carries at most
  # 64 MiB with the working tree): with code for two GPU architectures (MSCCL_CUDA_ARCHITECTURES
  # 80;90), or with the shim and libmsccl, the programs are too large for both.
  cp "$build/tools/msccl-tune/msccl-tune" "$dir/bin/" && strip --strip-debug "$dir/bin/msccl-tune"
  mib=$(du -sm "$dir" | cut -f1)
  if ((mib > 55)); then
    rm -f "$dir/bin/msccl-tune"
    echo "gpu-check: msccl-tune left out of the bundle ($mib MiB with it; build for sm_90 alone to carry it)" >&2
  fi
  mib=$(du -sm "$dir" | cut -f1)
  ((mib <= 60)) || die "the bundle is $mib MiB (limit 60)"
  echo "gpu-check: bundle in $dir ($mib MiB, $(wc -l <"$manifest") stdlib plans, $(find "$dir/plans/golden" -name '*.json' | wc -l) golden plans, commit $(cat "$dir/COMMIT"))"
}

# ------------------------------------------------------------------------------------------
# run
# ------------------------------------------------------------------------------------------

step_names=()
step_results=()
summary_lines=()
deadline=0

note() { summary_lines+=("$*"); echo "$*"; }

# run_step NAME TIMEOUT FUNCTION: runs FUNCTION with its output in $OUT/NAME.log under a timeout
# (the smaller of TIMEOUT and what is left of the budget); records pass/fail/timeout.
run_step() {
  local name=$1 limit=$2 fn=$3
  if [[ " $steps " != *" $name "* ]]; then return; fi
  local left=$((deadline - $(date +%s)))
  if ((left < 5)); then
    step_names+=("$name"); step_results+=("not run (budget spent)"); return
  fi
  ((limit > left)) && limit=$left
  local t0=$(date +%s) rc
  echo "== $name (timeout ${limit}s)"
  timeout -k 5 "$limit" bash -c "$(declare -f "$fn" device_tests reference_plans verify_plans verify_ranks launch_ranks); $(declare -p bin dir OUT); export LD_LIBRARY_PATH; $fn" \
    >"$OUT/$name.log" 2>&1
  rc=$?
  local took=$(($(date +%s) - t0)) result
  case $rc in
    0) result="pass" ;;
    77) result="skip" ;;
    124|137) result="TIMEOUT after ${took}s" ;;
    *) result="FAIL (exit $rc)" ;;
  esac
  step_names+=("$name"); step_results+=("$result (${took}s)")
  echo "   $result in ${took}s; last lines:"
  tail -n 4 "$OUT/$name.log" | sed 's/^/   | /'
}

# What the machine has; exits non-zero when no GPU is usable.
step_info() {
  echo "host: $(uname -srm)"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,pci.bus_id --format=csv,noheader || echo "nvidia-smi: failed"
  nvidia-smi topo -m 2>/dev/null | head -12
  command -v nvcc >/dev/null && nvcc --version | tail -2
  command -v compute-sanitizer >/dev/null && compute-sanitizer --version | head -2
  python3 - <<'EOF'
import ctypes, sys
try:
    cu = ctypes.CDLL("libcuda.so.1")
except OSError as e:
    print("libcuda: not loadable:", e); sys.exit(1)
if cu.cuInit(0) != 0:
    print("cuInit failed"); sys.exit(1)
n = ctypes.c_int(); cu.cuDeviceGetCount(ctypes.byref(n))
v = ctypes.c_int(); cu.cuDriverGetVersion(ctypes.byref(v))
print("driver CUDA version: %d.%d, devices: %d" % (v.value // 1000, v.value % 1000 // 10, n.value))
attrs = {"cc major": 75, "cc minor": 76, "SMs": 16, "cooperative launch": 95,
         "virtual memory management": 102, "POSIX fd handles": 103, "multicast": 132}
for d in range(n.value):
    dev = ctypes.c_int(); cu.cuDeviceGet(ctypes.byref(dev), d)
    name = ctypes.create_string_buffer(128); cu.cuDeviceGetName(name, 128, dev)
    vals = []
    for k, a in attrs.items():
        x = ctypes.c_int(-1); cu.cuDeviceGetAttribute(ctypes.byref(x), a, dev); vals.append("%s=%d" % (k, x.value))
    print("GPU %d: %s: %s" % (d, name.value.decode(), ", ".join(vals)))
    for e in range(n.value):
        if e != d:
            p = ctypes.c_int(); cu.cuDeviceCanAccessPeer(ctypes.byref(p), dev, e); print("  peer access %d->%d: %d" % (d, e, p.value))
EOF
}

# device_tests [--quick] PLAN...: msccl_cuda_gpu_tests over the plans in 4 processes at once (the
# CPU reference is the slow half; the GPU is shared), then one summary line.
device_tests() {
  local flags=(${GPU_CHECK_DEVICE_FLAGS:-}) plans=() i
  [[ ${1:-} == --quick ]] && { flags+=(--quick); shift; }
  plans=("$@")
  local tmp
  tmp=$(mktemp -d)
  for i in 0 1 2 3; do
    local part=()
    local k
    for ((k = i; k < ${#plans[@]}; k += 4)); do part+=("${plans[$k]}"); done
    "$bin/msccl_cuda_gpu_tests" "${flags[@]}" "${part[@]}" >"$tmp/$i.log" 2>&1 &
  done
  wait
  cat "$tmp"/*.log | grep -v '^[0-9]* passed'
  cat "$tmp"/*.log | awk '/^[0-9]+ passed/ {p+=$1; f+=$3; r+=$5; s+=$9} END {printf "%d passed, %d failed, %d racy (not compared), %d skipped (refused)\n", p, f, r, s; exit (f > 0 || NR == 0)}'
  local rc=$?
  rm -rf "$tmp"
  return $rc
}
reference_plans() { find "$dir/plans/golden" "$dir/plans/legacy" -name '*.json' 2>/dev/null | sort; }
step_gpu_quick() { device_tests --quick $(reference_plans); }
step_golden() { device_tests $(reference_plans); }
# The stdlib plans against the CPU executor, bitwise, every data type and reduce operator
# (AllToAllV plans need counts: msccl-run covers them).
step_stdlib_cpu() { device_tests $(ls "$dir"/plans/stdlib/*.json | grep -v alltoallv); }
# verify_plans DIR MSCCL_RUN BACKEND: every plan of DIR/stdlib.tsv through msccl-run on BACKEND,
# verified over its manifest sizes, four at a time; one line per plan, then a summary; fails
# when any plan fails.
verify_plans() {
  local pdir=$1 msccl_run=$2 backend=$3 tmp
  tmp=$(mktemp -d)
  while IFS=$'\t' read -r name json args; do echo "$name $json $args"; done <"$pdir/stdlib.tsv" >"$tmp/cases"
  xargs -P 4 -L 1 bash -c 'n=$0 j=$1; shift 1
    if out=$("'"$msccl_run"'" "'"$pdir"'/$j" --backend '"$backend"' -n 2 -w 1 --check "$@" 2>&1); then
      echo "ok   $n"; else echo "FAIL $n: $(echo "$out" | tail -3 | tr "\n" " ")"; echo "$out" | sed "s/^/     /" | tail -20; fi' \
    <"$tmp/cases" | tee "$tmp/results"
  local total failed
  total=$(grep -c '^ok\|^FAIL' "$tmp/results")
  failed=$(grep -c '^FAIL' "$tmp/results")
  echo "$((total - failed)) passed, $failed failed of $total runs"
  rm -rf "$tmp"
  ((failed == 0))
}
# verify_ranks DIR MSCCL_RUN BACKEND LAUNCHER [FILTER]: every plan of DIR/stdlib.tsv (whose name
# matches the extended regex FILTER) through msccl-run with one process per rank on BACKEND
# (CudaRankSession.h), verified at its two smallest manifest sizes. LAUNCHER: "mpi" (mpirun
# -np N) or "env" (N processes with torchrun's RANK/WORLD_SIZE/MASTER_ADDR, for machines without
# mpirun). With GPU_CHECK_NODES=1 the multi-node plans run as the nodes they were written for
# (MSCCL_RANKS_PER_NODE from the plan's label: n<ranks>x<per node>, r2-port one rank per node):
# their port channels between nodes host-staged (EthernetPort.h). A build that cannot carry
# those (no ZeroMQ) refuses them: counted apart, not failures.
launch_ranks() {
  local launcher=$1 n=$2 out=$3; shift 3
  if [[ $launcher == mpi ]]; then
    local pass=()
    [[ -n ${MSCCL_RANKS_PER_NODE:-} ]] && pass=(-x MSCCL_RANKS_PER_NODE)
    timeout -k 5 "${GPU_CHECK_CASE_TIMEOUT:-180}" mpirun --allow-run-as-root --oversubscribe "${pass[@]}" -np "$n" "$@" \
      >"$out" 2>&1 </dev/null
    return
  fi
  # A port another program holds (rank 0 cannot bind it): again with another port, twice.
  local try port r rc pids
  for try in 1 2 3; do
    port=$((20000 + RANDOM % 20000)) rc=0 pids=()
    for ((r = 0; r < n; r++)); do
      RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port MSCCL_BOOTSTRAP_SECRET=gpu-check-$port \
        timeout -k 5 "${GPU_CHECK_CASE_TIMEOUT:-180}" "$@" >"$out.$r" 2>&1 </dev/null &
      pids+=($!)
    done
    for r in "${pids[@]}"; do wait "$r" || rc=1; done
    cat "$out".* >"$out"; rm -f "$out".*
    ((rc != 0)) && grep -q "Address already in use" "$out" && continue
    return $rc
  done
  return $rc
}
verify_ranks() {
  local pdir=$1 msccl_run=$2 backend=$3 launcher=$4 filter=${5:-.} tmp ok=0 failed=0 refused=0
  tmp=$(mktemp -d)
  while IFS=$'\t' read -r name json args; do
    [[ $name =~ $filter ]] || continue
    local n a=($args) i b=0
    n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["gpus"]))' "$pdir/$json")
    for ((i = 0; i < ${#a[@]}; i++)); do [[ ${a[$i]} == -b ]] && b=${a[$((i + 1))]}; done
    for ((i = 0; i < ${#a[@]}; i++)); do [[ ${a[$i]} == -e ]] && a[$((i + 1))]=$((b * 32)); done
    local per_node='' nodes=''
    if [[ ${GPU_CHECK_NODES:-0} == 1 ]]; then
      [[ $name =~ _n[0-9]+x([0-9]+)_ ]] && per_node=${BASH_REMATCH[1]}
      [[ $name =~ _r2-port_ ]] && per_node=1
      [[ -n $per_node ]] && nodes=", $((n / per_node)) nodes"
    fi
    if MSCCL_RANKS_PER_NODE=$per_node launch_ranks "$launcher" "$n" "$tmp/out" "$msccl_run" "$pdir/$json" --backend "$backend" \
      -n 2 -w 1 --check "${a[@]}"; then
      echo "ok   $name ($n processes$nodes)"; ok=$((ok + 1))
    elif grep -q "port channels between nodes are host-staged over TCP, which needs" "$tmp/out"; then
      echo "node $name: refused (channels between nodes)"; refused=$((refused + 1))
    else
      echo "FAIL $name ($n processes)"; sed 's/^/     /' "$tmp/out" | grep -v '^     #' | head -20; failed=$((failed + 1))
    fi
  done <"$pdir/stdlib.tsv"
  echo "$ok passed, $failed failed, $refused refused (channels between nodes) of $((ok + failed + refused)) plans, one process per rank ($launcher)"
  rm -rf "$tmp"
  ((failed == 0))
}
# One process per rank on the one GPU (no mpirun there: torchrun's environment, the unique-id
# bootstrap): the 2- and 4-rank plans verified (port channels through each process's proxy
# included: the hierarchical and multi-node plans, their "nodes" all on this one), then the time per launch of an 8 KiB LL and a
# 1 MiB Simple AllReduce over 2 and 4 processes (kernels of different processes share the GPU by
# time slices without MPS: a figure of this path, not of NVLink).
step_ranks() {
  GPU_CHECK_CASE_TIMEOUT=${GPU_CHECK_CASE_TIMEOUT:-40} verify_ranks "$dir/plans" "$bin/msccl-run" \
    "${GPU_CHECK_RANKS_BACKEND:-cuda}" env '_r[24]_|_r2-port_|_n2x1_|_n4x2_'
  local rc=$? n p=$dir/plans/stdlib
  # The multi-node ones again as their nodes: port channels between nodes host-staged over TCP
  # (device -> message -> socket -> message -> device), the GPU's copies on non-blocking streams.
  GPU_CHECK_NODES=1 GPU_CHECK_CASE_TIMEOUT=${GPU_CHECK_CASE_TIMEOUT:-40} verify_ranks "$dir/plans" "$bin/msccl-run" \
    "${GPU_CHECK_RANKS_BACKEND:-cuda}" env '_r2-port_|_n2x1_|_n4x2_' || rc=1
  for n in 2 4; do
    launch_ranks env $n "$OUT/ranks-time.log" "$bin/msccl-run" "$p/allreduce_allpairs_packet_r${n}_out.json" \
      --backend "${GPU_CHECK_RANKS_BACKEND:-cuda}" --size 8K -n 20 -w 5 --check -d float16
    grep -E '^ +[0-9]' "$OUT/ranks-time.log" | sed "s/^/$n processes, LL all-pairs: /"
    launch_ranks env $n "$OUT/ranks-time.log" "$bin/msccl-run" "$p/allreduce_allpairs_r${n}_out.json" \
      --backend "${GPU_CHECK_RANKS_BACKEND:-cuda}" --size 1M -n 20 -w 5 --check
    grep -E '^ +[0-9]' "$OUT/ranks-time.log" | sed "s/^/$n processes, Simple all-pairs: /"
  done
  return $rc
}
# PyTorch's NCCL process group on CUDA tensors with the shim preloaded (gpu_check_torch.py): 2 and
# 4 processes on the one GPU, every result compared with torch's own. Skipped without torch or
# without the shim in the bundle.
step_torch() {
  [[ -f $dir/lib/libmsccl_nccl.so ]] || { echo "the bundle has no libmsccl_nccl.so"; return 77; }
  python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null || { echo "no CUDA torch here"; return 77; }
  local n rc=0
  for n in 2 4; do
    launch_ranks env $n "$OUT/torch-$n.log" env LD_PRELOAD="$dir/lib/libmsccl_nccl.so" MSCCL_PLANS="$dir/plans/shim" \
      MSCCL_BACKEND=cuda MSCCL_DEBUG=INFO python3 "$dir/gpu_check_torch.py" || rc=1
    grep -E "torch-check|MSCCL WARN|Error|error" "$OUT/torch-$n.log" | head -20
    grep -m4 "MSCCL INFO rank 0: ncclAllReduce\|MSCCL INFO rank 0 of" "$OUT/torch-$n.log"
    [[ $(grep -c "torch-check rank .*: PASS" "$OUT/torch-$n.log") -eq $n ]] || rc=1
  done
  return $rc
}
# Every stdlib plan through msccl-run on cuda-virtual, verified.
step_stdlib_run() { verify_plans "$dir/plans" "$bin/msccl-run" "${GPU_CHECK_BACKEND:-cuda-virtual}"; }
step_sanitizer() {
  local rc=0 p=$dir/plans/stdlib
  compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/msccl-run" "$p/allreduce_ring_r4_in.json" \
    --backend cuda-virtual --size 64K -n 1 -w 0 --check || rc=1
  compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/msccl-run" "$p/allreduce_allpairs_packet_r4_out.json" \
    --backend cuda-virtual --size 8K -n 2 -w 0 --check || rc=1
  compute-sanitizer --tool racecheck --error-exitcode 9 "$bin/msccl-run" "$p/allgather_packet_r2_in.json" \
    --backend cuda-virtual --size 4K -n 1 -w 0 --check || rc=1
  # Through the device-test harness (fresh buffers and contexts per case), LL8 and a switch plan.
  compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 4 "$bin/msccl_cuda_gpu_tests" --quick \
    "$p/allgather_packet_r8-ll8_out.json" $(find "$dir/plans/golden" -name single_node__allreduce_nvls_zero_copy.json) |
    grep -v '^racy' || rc=1
  return $rc
}
# The benchmark, then msccl-tune timing the stdlib AllReduce candidates on the GPU (measured; the
# bound is model output), both into bench.log (the device tool brings back at most 8 files).
step_bench() {
  "$bin/msccl-bench-cuda" || return 1
  [[ -x $bin/msccl-tune ]] || { echo "msccl-tune: not in this bundle"; return 0; }
  echo; echo "msccl-tune (times measured on the GPU; bounds: model output):"
  MSCCL_TOPOLOGY_PATH=$dir/topologies timeout 60 "$bin/msccl-tune" --stdlib "$dir/stdlib" \
    --topology "${GPU_CHECK_TOPOLOGY:-hgx-h100}" --backend "${GPU_CHECK_BACKEND:-cuda-virtual}" --collective allreduce \
    --quick --min-bytes 1K --max-bytes 16M | grep -v '^#   '
}

run() {
  dir=$(cd "${1:?usage: $0 run DIR}" && pwd)
  OUT=${OUT:-$dir/out}
  mkdir -p "$OUT"
  bin=$dir/bin
  export LD_LIBRARY_PATH=$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PATH=$PATH:/usr/local/cuda/bin
  steps=${GPU_CHECK_STEPS:-info gpu-quick ranks torch stdlib-cpu stdlib-run golden sanitizer bench}
  local budget=${GPU_CHECK_BUDGET:-300}
  deadline=$(($(date +%s) + budget))
  if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu-check: no NVIDIA GPU here (nvidia-smi $(command -v nvidia-smi >/dev/null && echo failed || echo 'not found')); nothing run"
    exit 1
  fi
  run_step info 30 step_info
  run_step gpu-quick 60 step_gpu_quick
  run_step ranks 180 step_ranks
  run_step torch 150 step_torch
  run_step stdlib-run 90 step_stdlib_run
  run_step sanitizer 60 step_sanitizer
  run_step bench 120 step_bench
  run_step stdlib-cpu 90 step_stdlib_cpu
  run_step golden 90 step_golden

  {
    echo "# msccl GPU check, commit $(cat "$dir/COMMIT" 2>/dev/null), $(date -u +%FT%TZ)"
    grep -E '^GPU |^driver|^host|release|Version' "$OUT/info.log" 2>/dev/null | head -8
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/nvidia-smi: /'
    echo
    local i
    for i in "${!step_names[@]}"; do printf '%-12s %s\n' "${step_names[$i]}" "${step_results[$i]}"; done
    echo
    for f in gpu-quick stdlib-cpu golden; do
      [[ -f $OUT/$f.log ]] && echo "$f: $(grep -E 'passed, .* failed' "$OUT/$f.log" | tail -1)"
    done
    [[ -f $OUT/stdlib-run.log ]] && echo "stdlib-run: $(tail -1 "$OUT/stdlib-run.log")"
    [[ -f $OUT/torch.log ]] && grep "torch-check" "$OUT/torch.log"
    [[ -f $OUT/ranks.log ]] && { echo "ranks: $(grep 'passed, .* failed' "$OUT/ranks.log")"; grep ' processes, ' "$OUT/ranks.log"; }
    [[ -f $OUT/bench.log ]] && { echo; echo "bench (measured):"; cat "$OUT/bench.log"; }
  } >"$OUT/summary.txt"
  echo; cat "$OUT/summary.txt"
  local r
  for r in "${step_results[@]}"; do [[ $r == pass* || $r == skip* ]] || exit 1; done
}

case ${1:-} in
  bundle) shift; bundle "$@" ;;
  plans) shift; [[ $# -eq 2 ]] || die "usage: $0 plans DIR MSCCLC"; compile_plans "$@" ;;
  verify) shift; [[ $# -eq 3 ]] || die "usage: $0 verify DIR MSCCL_RUN BACKEND"; verify_plans "$@" ;;
  verify-ranks) shift; [[ $# -ge 4 ]] || die "usage: $0 verify-ranks DIR MSCCL_RUN BACKEND mpi|env [FILTER]"; verify_ranks "$@" ;;
  run) shift; run "$@" ;;
  *) die "usage: $0 bundle DIR | plans DIR MSCCLC | verify DIR MSCCL_RUN BACKEND | verify-ranks DIR MSCCL_RUN BACKEND mpi|env [FILTER] | run DIR" ;;
esac
