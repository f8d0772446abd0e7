#!/usr/bin/env bash
# Legacy golden test: compiles a .msccl translation of an MSCCLPPLang example with
# `mscclc --plan-format=legacy` and compares it byte for byte with the reference plan the old
# Python compiler wrote (../shared/legacy/mscclpplang).
# usage: run_legacy.sh MSCCLC SHARED_DIR PLAN SOURCE WORK_DIR PARAM...
#   PLAN    reference plan file name (listed in MANIFEST.tsv with its positional arguments)
#   PARAM   the .msccl params the positional arguments set, in order (`gpus instances`)
# Exit status: 0 equal, 1 mismatch or compile failure, 77 (skip) when the reference is absent.
set -u
mscclc=$1 shared=$2 plan=$3 source=$4 work=$5
shift 5
dir=$shared/legacy/mscclpplang
if [ ! -f "$dir/$plan" ] || [ ! -f "$dir/MANIFEST.tsv" ]; then
  echo "SKIP: reference plan '$dir/$plan' not found"
  exit 77
fi
line=$(awk -F'\t' -v p="$plan" '$1 == p { print $3; found = 1 } END { if (!found) exit 1 }' "$dir/MANIFEST.tsv") || {
  echo "FAIL: '$plan' is not listed in $dir/MANIFEST.tsv"
  exit 1
}
read -r -a values <<< "$line"
if [ ${#values[@]} -ne $# ]; then
  echo "FAIL: MANIFEST gives ${#values[@]} arguments ($line) for $# params ($*)"
  exit 1
fi
cmd=("$mscclc" "$source" --plan-format=legacy)
i=0
for p in "$@"; do
  cmd+=(-D "$p=${values[$i]}")
  i=$((i + 1))
done
mkdir -p "$work"
out="$work/$plan"
rm -f "$out"
cmd+=(-o "$out")
echo "+ ${cmd[*]}"
"${cmd[@]}" || { echo "FAIL: mscclc failed"; exit 1; }
if ! cmp -s "$out" "$dir/$plan"; then
  echo "FAIL: $out differs from $dir/$plan:"
  diff "$out" "$dir/$plan" | head -20
  exit 1
fi
echo "byte-equal: $plan"
