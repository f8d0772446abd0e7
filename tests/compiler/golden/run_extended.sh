#!/usr/bin/env bash
# Extended golden test: compiles a translation of an MSCCL++ DSL test program that has no plan in
# ../shared/golden and compares the SHA-256 of the canonical plan (plan-diff --canonical) with the
# one recorded in extended/MANIFEST.tsv (made from the Python program's own output; that file says
# how to regenerate the plan for a full plan-diff).
#
# usage: run_extended.sh MSCCLC PLAN_DIFF MANIFEST SOURCE WORK_DIR [MSCCLC-OPTION...]
# Exit status: 0 identical, 1 different or compile failure, 77 (skip) without sha256sum.
set -u
if [ $# -lt 5 ]; then
  echo "usage: $0 MSCCLC PLAN_DIFF MANIFEST SOURCE WORK_DIR [MSCCLC-OPTION...]" >&2
  exit 2
fi
mscclc=$1 plandiff=$2 manifest=$3 source=$4 work=$5
shift 5
command -v sha256sum > /dev/null || { echo "SKIP: sha256sum not found"; exit 77; }

plan=$(basename "$source" .msccl)
line=$(awk -F'\t' -v p="$plan" '$1 == p { print; found = 1 } END { if (!found) exit 1 }' "$manifest") || {
  echo "FAIL: '$plan' is not listed in $manifest"
  exit 1
}
IFS=$'\t' read -r _ program script_args defines expected <<< "$line"

mkdir -p "$work"
out="$work/$plan.json"
rm -f "$out"
cmd=("$mscclc" "$source" -o "$out")
read -r -a words <<< "$defines"
for d in "${words[@]}"; do cmd+=(-D "$d"); done
cmd+=("$@")
echo "+ ${cmd[*]}"
if ! "${cmd[@]}"; then
  echo "FAIL: mscclc failed"
  exit 1
fi
actual=$("$plandiff" --canonical "$out" | sha256sum | cut -d' ' -f1)
if [ "$actual" != "$expected" ]; then
  echo "FAIL: plan differs from the reference ($program $script_args)"
  echo "  sha256 of the canonical plan: $actual, expected $expected"
  echo "  regenerate the reference and compare: cd <mscclpp>/$(dirname "$program") &&"
  echo "    PYTHONPATH=<dsl> python3 $(basename "$program") $script_args > ref.json && plan-diff $out ref.json"
  exit 1
fi
echo "PASS: identical to $program $script_args"
