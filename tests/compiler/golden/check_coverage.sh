#!/usr/bin/env bash
# usage: check_coverage.sh SHARED_DIR GOLDEN_DIR
# Fails when a reference plan in SHARED_DIR/golden/{mscclpp-dsl,mscclpp-executor-tests} has no
# translation GOLDEN_DIR/<plan>.msccl, a translation has no reference plan, or extended/MANIFEST.tsv
# names a plan without its translation. Skips (77) without SHARED_DIR.
shared=$1 here=$2
[ -d "$shared/golden" ] || { echo "SKIP: '$shared/golden' not found"; exit 77; }
status=0
for plan in "$shared"/golden/mscclpp-dsl/*.json "$shared"/golden/mscclpp-executor-tests/*.json; do
  base=$(basename "$plan" .json)
  [ -f "$here/$base.msccl" ] || { echo "FAIL: no translation $base.msccl for $plan"; status=1; }
done
for src in "$here"/*.msccl; do
  base=$(basename "$src" .msccl)
  [ -f "$shared/golden/mscclpp-dsl/$base.json" ] || [ -f "$shared/golden/mscclpp-executor-tests/$base.json" ] ||
    { echo "FAIL: $base.msccl has no reference plan"; status=1; }
done
# Every entry of extended/MANIFEST.tsv has its translation (run_extended.sh checks the converse).
for base in $(awk -F'\t' '!/^#/ { print $1 }' "$here/extended/MANIFEST.tsv"); do
  [ -f "$here/extended/$base.msccl" ] || { echo "FAIL: extended/MANIFEST.tsv lists $base without extended/$base.msccl"; status=1; }
done
[ $status -eq 0 ] && echo "PASS: every reference plan has a translation"
exit $status
