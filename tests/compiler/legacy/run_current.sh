#!/usr/bin/env bash
# Runs an MSCCLPPLang-style program on today's executor: compiles it with
# `mscclc --plan-format=current` (the legacy plan converted by the one plan reader) and runs the
# plan on the CPU executor, which checks every output element ("all results correct").
# usage: run_current.sh MSCCLC MSCCL_RUN SOURCE WORK_DIR [NAME=VALUE ...]
# MSCCLPPLang left data races in several of its plans (no start-of-launch handshake), which
# mscclc's verifier refuses; the plan is compiled with --no-verify, and the run checks the data.
set -u
mscclc=$1 run=$2 source=$3 work=$4
shift 4
cmd=("$mscclc" "$source" --plan-format=current --no-verify)
for d in "$@"; do cmd+=(-D "$d"); done
mkdir -p "$work"
out="$work/$(basename "$source" .msccl).json"
cmd+=(-o "$out")
echo "+ ${cmd[*]}"
"${cmd[@]}" || { echo "FAIL: mscclc failed"; exit 1; }
echo "+ $run -n 1 --size 64K $out"
res=$("$run" -n 1 --size 64K "$out" 2>&1); rc=$?
echo "$res" | tail -4
if [ $rc -ne 0 ] || ! grep -q "all results correct" <<<"$res"; then
  echo "FAIL: msccl-run exit $rc"
  exit 1
fi
