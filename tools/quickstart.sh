#!/usr/bin/env bash
# One-stop set-up for a fresh Debian 12 machine: installs what is missing (Debian packages, and the
# npm packages of the editor-support tests), configures and builds, then
#   demo  (default): compiles an example .msccl program with `mscclc` and runs the plan on the
#                    CPU executor with `msccl-run`, verifying the results;
#   test:            runs the whole test suite (ctest: unit, lit/FileCheck, golden-plan, runtime,
#                    editor tests).
# Environment: BUILD_DIR (default <repo>/build), JOBS (default: number of cores).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=${1:-demo}
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

case "$mode" in demo|test) ;; *) echo "usage: $0 [demo|test]" >&2; exit 2 ;; esac

# --- 1. Debian packages ---------------------------------------------------------------------
packages=(cmake ninja-build g++ antlr4 libantlr4-runtime-dev nlohmann-json3-dev catch2
          llvm-14-dev llvm-14-tools python3 vim openmpi-bin libopenmpi-dev)
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
  if [[ -f $dir/package-lock.json && ! -d $dir/node_modules ]]; then
    echo "== npm ci in ${dir#$root/}"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done

# --- 3. Configure and build -------------------------------------------------------------------
echo "== building in $build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
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
