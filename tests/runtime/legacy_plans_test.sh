#!/usr/bin/env bash
# Every MSCCLPPLang reference plan of ../shared/legacy/mscclpplang (older JSON format) runs and is
# verified by msccl-run on the CPU executor as it is (the reader detects and converts it) and after
# plan-convert upgraded it; converting twice changes nothing; msccl-verify's verdict on each upgraded
# plan is reported and compared with the expected table below.
# First, the hand-written older-format plans of tests/plan/legacy (always present) run with the race
# checker, upgrade, and are proven; a broken one is refused with its JSON path.
# Usage: legacy_plans_test.sh MSCCL_RUN PLAN_CONVERT MSCCL_VERIFY HANDWRITTEN_DIR SHARED_DIR
set -uo pipefail
run=$1 convert=$2 verify=$3 handwritten=$4 shared=$5
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for f in "$handwritten"/*.json; do
  b=$(basename "$f")
  out=$("$run" --race-check -n 1 --size 64K "$f" 2>&1) && grep -q "all results correct" <<<"$out" || { fail "$b: msccl-run:"; echo "$out" | tail -5; }
  "$convert" "$f" -o "$tmp/$b" || fail "$b: plan-convert"
  grep -q '"input_chunks"' "$tmp/$b" || fail "$b: the upgraded plan is not in today's format"
  "$verify" "$tmp/$b" | grep -q "proven" || fail "$b: msccl-verify does not prove the upgraded plan"
  # The same plan with an op name the older executor did not have: refused, with the JSON path.
  sed '0,/"name": "put"/s//"name": "putt"/' "$f" > "$tmp/bad.json"
  out=$("$convert" "$tmp/bad.json" 2>&1); rc=$?
  [[ $rc == 1 ]] && grep -qF 'ops[4].name: unknown operation `putt` of the older plan format' <<<"$out" || fail "$b: a bad op name: exit $rc: $out"
  echo "hand-written: $b runs race-free, upgrades and is proven"
done
dir=$shared/legacy/mscclpplang
if [[ ! -f $dir/MANIFEST.tsv ]]; then
  echo "note: $dir is absent; the legacy reference plans were not run"
  ((fails == 0))
  exit
fi
# Plans today's executor limits refuse (as MSCCL++'s executor would): more than 255 gpu-level channels
# per type or more than 64 ops in a threadblock. The reason is checked, in both formats.
declare -A refused=(
  [allreduce_allpairs__8_8.json]="exceeds 255, the executor's 8-bit index width"
  [allreduce_allpairs_get__8_8.json]="exceeds 255, the executor's 8-bit index width"
  [allreduce_allpairs_packet__8_8.json]="exceeds 255, the executor's 8-bit index width"
  [allreduce_ring__8_8.json]="exceed the executor limit of 64"
)
# Upgraded plans msccl-verify proves; on the others it finds the data races the old compiler left in
# (no start-of-launch handshake before touching a peer's buffers, tbs writing the same packets).
proven=" allreduce_allpairs__4_1.json allreduce_allpairs_packet__4_1.json allreduce_ring__4_1.json send_recv_packet__2.json "
nrun=0 nproven=0
while IFS=$'\t' read -r plan _; do
  [[ $plan == \#* || -z $plan ]] && continue
  f=$dir/$plan
  if ! "$convert" "$f" -o "$tmp/$plan" 2>"$tmp/err"; then fail "$plan: plan-convert: $(cat "$tmp/err")"; continue; fi
  "$convert" "$tmp/$plan" -o "$tmp/again.json" && cmp -s "$tmp/$plan" "$tmp/again.json" || fail "$plan: converting the upgraded plan again changes it"
  for form in legacy current; do
    p=$f; [[ $form == current ]] && p=$tmp/$plan
    out=$("$run" -n 1 --size 64K "$p" 2>&1); rc=$?
    if [[ -n ${refused[$plan]:-} ]]; then
      if [[ $rc == 0 ]] || ! grep -qF "${refused[$plan]}" <<<"$out"; then fail "$plan ($form): expected a refusal '${refused[$plan]}', got exit $rc:"; echo "$out" | tail -5; fi
      # The paths name the converted plan; msccl-run says so for a file in the older format.
      note="is in MSCCLPPLang's older plan format; the paths name the plan converted"
      if [[ $form == legacy ]] && ! grep -qF "$note" <<<"$out"; then fail "$plan: no note that the paths name the converted plan"; fi
      if [[ $form == current ]] && grep -qF "$note" <<<"$out"; then fail "$plan: upgraded plan reported as older format"; fi
    elif [[ $rc != 0 ]] || ! grep -q "all results correct" <<<"$out"; then
      fail "$plan ($form): msccl-run exit $rc:"; echo "$out" | tail -5
    else
      nrun=$((nrun + 1))
    fi
  done
  [[ -n ${refused[$plan]:-} ]] && { echo "refused by today's limits: $plan"; continue; }
  vout=$("$verify" "$tmp/$plan" 2>&1); vrc=$?
  if [[ $proven == *" $plan "* ]]; then
    if [[ $vrc == 0 ]] && grep -q "proven" <<<"$vout"; then nproven=$((nproven + 1)); echo "proven: $plan"
    else fail "$plan: msccl-verify no longer proves it:"; echo "$vout" | head -3; fi
  elif [[ $vrc == 0 ]]; then
    fail "$plan: msccl-verify now proves it; add it to the proven list"
  elif grep -q "error: race" <<<"$vout"; then
    echo "races (as written by MSCCLPPLang): $plan: $(grep -m1 -o 'error: race: [^(]*' <<<"$vout")"
  else
    fail "$plan: msccl-verify: unexpected finding:"; echo "$vout" | head -3
  fi
done <"$dir/MANIFEST.tsv"
echo "legacy plans: $nrun runs verified on the CPU executor (legacy and upgraded), $nproven upgraded plans proven by msccl-verify"
((fails == 0))
