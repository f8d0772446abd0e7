#!/usr/bin/env bash
# Golden-plan test: compiles a .msccl translation with mscclc and compares the plan with the
# reference plan made by the MSCCL++ Python DSL (plan-diff: same keys, values and list order).
#
# usage: run_golden.sh MSCCLC PLAN_DIFF SHARED_DIR GOLDEN SOURCE WORK_DIR [NAME=VALUE ...]
#   GOLDEN   reference plan, relative to SHARED_DIR (e.g. golden/mscclpp-dsl/unit_tests__put__put_test.json)
#   SOURCE   the .msccl file (absolute path)
#   NAME=VALUE  extra -D overrides (used for the seed plans, which have no MANIFEST); an argument
#            starting with -- is passed to mscclc as it is (--no-verify)
# When the reference plan's folder has a MANIFEST.tsv, the plan's generating-program arguments
# (`--opt value`) are applied as `-D opt=value` overrides: integers as they are, anything else as a
# string; `--num_gpus` sets the Python function parameter it feeds, `gpu_size`.
# Then checks that the two files are also byte-identical (same layout as the Python DSL's output).
# Exit status: 0 equal, 1 mismatch or compile failure, 77 (skip) when SHARED_DIR is absent.
set -u
if [ $# -lt 6 ]; then
  echo "usage: $0 MSCCLC PLAN_DIFF SHARED_DIR GOLDEN SOURCE WORK_DIR [NAME=VALUE ...]" >&2
  exit 2
fi
mscclc=$1 plandiff=$2 shared=$3 golden_rel=$4 source=$5 work=$6
shift 6

if [ ! -d "$shared" ]; then
  echo "SKIP: reference material not found at '$shared' (set MSCCL_SHARED_DIR)"
  exit 77
fi
golden="$shared/$golden_rel"
if [ ! -f "$golden" ]; then
  echo "SKIP: reference plan '$golden' not found"
  exit 77
fi

defines=()
manifest="$(dirname "$golden")/MANIFEST.tsv"
plan="$(basename "$golden")"
if [ -f "$manifest" ]; then
  line=$(awk -F'\t' -v p="$plan" '$1 == p { print $3; found = 1 } END { if (!found) exit 1 }' "$manifest") || {
    echo "FAIL: '$plan' is not listed in $manifest"
    exit 1
  }
  read -r -a words <<< "$line"
  i=0
  while [ $i -lt ${#words[@]} ]; do
    opt=${words[$i]}
    val=${words[$((i + 1))]:-}
    case "$opt" in
      --*) ;;
      *) echo "FAIL: cannot read MANIFEST arguments '$line'"; exit 1 ;;
    esac
    opt=${opt#--}
    [ "$opt" = num_gpus ] && opt=gpu_size
    if [[ "$val" =~ ^-?[0-9]+$ || "$val" =~ ^0[xX][0-9a-fA-F]+$ ]]; then
      defines+=("$opt=$val")
    else
      defines+=("$opt=\"$val\"")
    fi
    i=$((i + 2))
  done
fi
defines+=("$@")

mkdir -p "$work"
out="$work/$(basename "$source" .msccl).json"
rm -f "$out"
cmd=("$mscclc" "$source" -o "$out")
for d in "${defines[@]}"; do
  case "$d" in
    --*) cmd+=("$d") ;; # an mscclc option (e.g. --no-verify for reference programs that are wrong)
    *) cmd+=(-D "$d") ;;
  esac
done
echo "+ ${cmd[*]}"
if ! "${cmd[@]}"; then
  echo "FAIL: mscclc failed"
  exit 1
fi
echo "+ $plandiff $out $golden"
"$plandiff" "$out" "$golden"
rc=$?
if [ $rc -ne 0 ]; then
  echo "FAIL: plan differs from the reference (plan-diff exit $rc); all differences:"
  "$plandiff" --all "$out" "$golden" | head -40
  exit 1
fi
# Same value; the text must be the same too (the Python DSL's json.dumps(indent=2) layout).
if ! cmp -s "$out" "$golden"; then
  echo "FAIL: the plan equals $golden_rel as a JSON value but not byte for byte (layout/number format):"
  cmp "$out" "$golden" | head -1
  exit 1
fi
echo "PASS: identical (value and bytes) to $golden_rel"
