#!/usr/bin/env bash
# Upgrading a legacy plan is byte-equal to compiling its program in today's format: `plan-convert`
# of a reference plan of ../shared/legacy/mscclpplang and `mscclc --plan-format=current` of the
# .msccl translation of its example (with MANIFEST.tsv's arguments) write the same bytes.
# usage: convert_equal.sh MSCCLC PLAN_CONVERT SHARED_DIR PLAN SOURCE WORK_DIR PARAM...
#   PARAM   the .msccl params the positional arguments of MANIFEST.tsv set, in order
# Exit status: 0 equal, 1 different or a tool failed, 77 (skip) when the reference is absent.
set -u
mscclc=$1 convert=$2 shared=$3 plan=$4 source=$5 work=$6
shift 6
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
# --no-verify: MSCCLPPLang left data races in several plans, which mscclc's verifier refuses.
cmd=("$mscclc" "$source" --plan-format=current --no-verify)
i=0
for p in "$@"; do
  cmd+=(-D "$p=${values[$i]}")
  i=$((i + 1))
done
mkdir -p "$work"
compiled="$work/${plan%.json}.mscclc.json" upgraded="$work/${plan%.json}.plan-convert.json"
rm -f "$compiled" "$upgraded"
echo "+ ${cmd[*]} -o $compiled"
"${cmd[@]}" -o "$compiled" || { echo "FAIL: mscclc failed"; exit 1; }
echo "+ $convert $dir/$plan -o $upgraded"
"$convert" "$dir/$plan" -o "$upgraded" || { echo "FAIL: plan-convert failed"; exit 1; }
grep -q '"input_chunks"' "$upgraded" || { echo "FAIL: $upgraded is not in today's format"; exit 1; }
if ! cmp -s "$compiled" "$upgraded"; then
  echo "FAIL: $compiled differs from $upgraded:"
  diff "$compiled" "$upgraded" | head -20
  exit 1
fi
echo "byte-equal: mscclc --plan-format=current and plan-convert $plan"
