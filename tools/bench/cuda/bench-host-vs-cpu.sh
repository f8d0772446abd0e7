#!/usr/bin/env bash
# Benchmark (prints figures; for information): the CUDA executor's device code on host threads
# (msccl-run --backend cuda-host) against the CPU reference executor (--backend cpu) on the same
# plan, stdlib:allreduce/ring at 8 ranks, 1 MiB, float32, results verified. Time per launch is
# msccl-run's time(us): the mean of the timed launches after one warm-up.
# usage: tools/bench/cuda/bench-host-vs-cpu.sh [BUILD_DIR] [SIZE] [LAUNCHES]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
build=${1:-$root/build}
size=${2:-1M}
launches=${3:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/tools/mscclc/mscclc" stdlib:allreduce/ring -D ranks=8 -o "$tmp/ring8.json"
echo "# 8-rank ring AllReduce (stdlib:allreduce/ring), $size float32, $launches launches + 1 warm-up, verified"
echo "# $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
printf '%-10s %14s %s\n' backend "us/launch" description
for b in cpu cuda-host cuda-host-gpus; do
  "$build/tools/msccl-run/msccl-run" "$tmp/ring8.json" --backend "$b" --size "$size" -n "$launches" -w 1 \
    --jsonl "$tmp/$b.jsonl" >"$tmp/$b.out" 2>&1 || { echo "$b: msccl-run failed:"; tail -3 "$tmp/$b.out"; exit 1; }
  us=$(sed -n 's/.*"time_us":\([0-9.]*\).*/\1/p' "$tmp/$b.jsonl")
  printf '%-10s %14.1f %s\n' "$b" "$us" "$(sed -n 's/^# msccl-run: backend [^ ]* (\(.*\))$/\1/p' "$tmp/$b.out" | cut -c1-90)"
done
