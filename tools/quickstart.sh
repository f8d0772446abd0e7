#!/usr/bin/env bash
# One-stop set-up for a fresh Debian 12 machine: installs what is missing (Debian packages, and the
# npm packages of the editor-support tests), configures and builds, then
#   demo  (default): compiles an example .msccl program with `mscclc` and runs the plan on the
#                    CPU executor with `msccl-run`, verifying the results;
#   test:            runs the whole test suite (ctest: unit, lit/FileCheck, golden-plan, runtime,
#                    editor tests).
#   fuzz:            hostile-input check, in its own build (FUZZ_BUILD_DIR, default
#                    <repo>/build-fuzz; clang-14, ASan+UBSan, libFuzzer, no CUDA): runs the test
#                    suite under the sanitizers (editor, cuda and mpi tests left out: the first run
#                    no C++, the second need the CUDA build, the third report OpenMPI's own
#                    allocations as leaks), then
#                    each libFuzzer target of fuzz/ for FUZZ_SECONDS (default 60) from its seeds,
#                    printing its execs and coverage. Exits non-zero on any failing test, crash,
#                    sanitizer report, leak or timeout. Does not build the normal build.
# Environment: BUILD_DIR (default <repo>/build), JOBS (default: number of cores), MSCCL_NO_CCACHE.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=${1:-demo}
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}
# A compiler cache where ccache is installed (optional, not installed by this script): CI builds a
# clean clone each time, and ccache, with paths under the clone made relative (CCACHE_BASEDIR)
# and the working directory left out of the key (CCACHE_NOHASHDIR: debug info may then name the
# first clone's directory), lets the next clone reuse the objects of the last. C and C++ only
# (not nvcc). MSCCL_NO_CCACHE=1 turns it off.
launcher=()
if [[ -z ${MSCCL_NO_CCACHE:-} ]] && command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
fi

case "$mode" in demo|test|fuzz) ;; *) echo "usage: $0 [demo|test|fuzz]" >&2; exit 2 ;; esac

# --- 1. Debian packages ---------------------------------------------------------------------
packages=(cmake ninja-build g++ antlr4 libantlr4-runtime-dev nlohmann-json3-dev catch2
          llvm-14-dev llvm-14-tools python3 vim openmpi-bin libopenmpi-dev
          libzmq3-dev python3-dev pybind11-dev python3-numpy python3-mpi4py python3-torch)
[[ $mode != fuzz ]] || packages+=(clang-14 libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm (editor-support tests): any installation will do (some images ship a nodejs
# package that bundles npm, which conflicts with Debian's npm package).
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  echo "== installing: ${missing[*]}"
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- 2. npm packages for the editor-support tests (offline afterwards) ----------------------
for dir in "$root"/tests/editor; do
  [[ $mode != fuzz ]] || break # the fuzz mode runs no editor test
  # Installed again when package-lock.json changed since the last install (a stamp copy of it).
  if [[ -f $dir/package-lock.json ]] && ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.msccl-lock-stamp"; then
    echo "== npm ci in ${dir#$root/}"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.msccl-lock-stamp)
  fi
done

# --- 3. Configure and build -------------------------------------------------------------------
if [[ $mode == fuzz ]]; then
  fbuild=${FUZZ_BUILD_DIR:-$root/build-fuzz}
  seconds=${FUZZ_SECONDS:-60}
  echo "== sanitizer + fuzz build in $fbuild"
  cmake -S "$root" -B "$fbuild" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
        -DCMAKE_CXX_COMPILER=clang++-14 -DMSCCL_FUZZ=ON -DMSCCL_ENABLE_CUDA=OFF "${launcher[@]}" >/dev/null
  cmake --build "$fbuild" -j "$jobs"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  echo "== the test suite under ASan+UBSan (editor, cuda, mpi, nccl and python tests excluded)"
  # python: the sanitizer build has no Python module (an uninstrumented interpreter cannot load it).
  # mpi: OpenMPI's own allocations are reported as leaks by LeakSanitizer; the multi-process
  # runtime's op code is the CPU executor's, which the other tests run under the sanitizers.
  (cd "$fbuild" && ctest --output-on-failure -j "$jobs" -E '^(editor|cuda|mpi|nccl|python)\.')
  status=0
  for target in compile plan cpu rendezvous; do
    dict=(-dict=plan.dict) seeds=(seeds/plan)
    [[ $target == compile ]] && dict=(-dict=compile.dict) seeds=(seeds/source)
    [[ $target == rendezvous ]] && dict=() seeds=() # binary messages: its regressions are its seeds
    corpus="$fbuild/fuzz/corpus/$target"
    mkdir -p "$corpus"
    echo "== fuzzing $target for ${seconds}s"
    log="$fbuild/fuzz/$target.log"
    # -timeout: one input may take at most 10 s (a hang is a failure); -rss_limit_mb: memory.
    if ! (cd "$fbuild/fuzz" && "./msccl-fuzz-$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2560 \
            -print_final_stats=1 "${dict[@]}" -artifact_prefix="$fbuild/fuzz/$target-" \
            "$corpus" "${seeds[@]}" "$root/fuzz/regressions/$target") >"$log" 2>&1; then
      echo "FAIL: msccl-fuzz-$target found a problem (log: $log):"
      grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$log" | head -20
      status=1
    fi
    grep -E "^#[0-9]+[[:space:]]+DONE" "$log" | tail -1 || true
    grep -E "^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)" "$log" || true
  done
  exit $status
fi
echo "== building in $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
cmake --build "$build" -j "$jobs"

# --- 4. The job -------------------------------------------------------------------------------
if [[ $mode == test ]]; then
  echo "== running the test suite"
  cd "$build"
  exec ctest --output-on-failure -j "$jobs"
fi

example="$root/../shared/examples/allreduce_nvls.msccl"
[[ -f $example ]] || example="$root/stdlib/allreduce/nvls.msccl"
plan="$build/allreduce_nvls.json"
echo "== mscclc ${example#$root/} -o ${plan#$root/}"
"$build/tools/mscclc/mscclc" "$example" -o "$plan"
echo "== msccl-run ${plan#$root/}"
"$build/tools/msccl-run/msccl-run" "$plan"
echo "== msccl-run on every reference plan in ../shared/golden"
"$root/tools/run-golden-plans.sh" "$build/tools/msccl-run/msccl-run" "$root/../shared"
