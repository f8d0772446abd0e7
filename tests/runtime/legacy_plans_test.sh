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
# Plans over the MSCCL++ executor's per-threadblock limits (the old executor's too: it threw above
# 64 ops per threadblock): refused for the default target (mscclpp), with the reason and a note
# naming --target=msccl, in both formats; with --target=msccl they run and verify on this
# project's executors (the CPU one here, the model too), with a warning.
# (The 8-rank all-pairs plans, 448 gpu-level memory channels per gpu but 7 per threadblock, run as is:
# both MSCCL++ executors read a threadblock's gpu-level channel ids as `int`.)
declare -A overlimit=(
  [allreduce_ring__8_8.json]="67 operations (pipeline inner ops included) exceed the executor limit of 64 (MAX_OPERATION)"
)
# Upgraded plans msccl-verify proves; on the others it finds the data races the old compiler left in
# (no start-of-launch handshake before touching a peer's buffers, tbs writing the same packets).
proven=" allreduce_allpairs__4_1.json allreduce_allpairs__8_8.json allreduce_allpairs_packet__4_1.json
 allreduce_allpairs_packet__8_8.json allreduce_ring__4_1.json allreduce_ring__8_8.json send_recv_packet__2.json "
proven=${proven//$'\n'/ }
nrun=0 nproven=0
while IFS=$'\t' read -r plan _; do
  [[ $plan == \#* || -z $plan ]] && continue
  f=$dir/$plan
  if ! "$convert" "$f" -o "$tmp/$plan" 2>"$tmp/err"; then fail "$plan: plan-convert: $(cat "$tmp/err")"; continue; fi
  "$convert" "$tmp/$plan" -o "$tmp/again.json" && cmp -s "$tmp/$plan" "$tmp/again.json" || fail "$plan: converting the upgraded plan again changes it"
  for form in legacy current; do
    p=$f; [[ $form == current ]] && p=$tmp/$plan
    flags=()
    if [[ -n ${overlimit[$plan]:-} ]]; then
      out=$("$run" -n 1 --size 64K "$p" 2>&1); rc=$?
      if [[ $rc == 0 ]] || ! grep -qF "${overlimit[$plan]}" <<<"$out" || ! grep -qF -- "--target=msccl runs the plan on this project's executors" <<<"$out"; then
        fail "$plan ($form): expected a refusal '${overlimit[$plan]}' naming --target=msccl, got exit $rc:"; echo "$out" | tail -5
      fi
      # The paths name the converted plan; msccl-run says so for a file in the older format.
      note="is in MSCCLPPLang's older plan format; the paths name the plan converted"
      if [[ $form == legacy ]] && ! grep -qF "$note" <<<"$out"; then fail "$plan: no note that the paths name the converted plan"; fi
      if [[ $form == current ]] && grep -qF "$note" <<<"$out"; then fail "$plan: upgraded plan reported as older format"; fi
      flags=(--target=msccl)
      # Every backend of this project runs it (the model here), and --allow-over-limits is the
      # older spelling of --target=msccl.
      out=$("$run" --allow-over-limits --backend sim --size 64K "$p" 2>&1); rc=$?
      [[ $rc == 0 ]] || fail "$plan ($form): --allow-over-limits with the sim backend: exit $rc: $out"
    fi
    out=$("$run" "${flags[@]}" -n 1 --size 64K "$p" 2>&1); rc=$?
    if [[ $rc != 0 ]] || ! grep -q "all results correct" <<<"$out"; then
      fail "$plan ($form): msccl-run ${flags[*]} exit $rc:"; echo "$out" | tail -5
    elif [[ -n ${overlimit[$plan]:-} ]] && ! grep -F "warning: $p: gpus[0].threadblocks[0].ops[" <<<"$out" | grep -qF "]: ${overlimit[$plan]}"; then
      fail "$plan ($form): no over-limit warning:"; echo "$out" | head -3
    else
      nrun=$((nrun + 1))
    fi
  done
  vflags=()
  if [[ -n ${overlimit[$plan]:-} ]]; then
    vout=$("$verify" "$tmp/$plan" 2>&1) && fail "$plan: msccl-verify accepts it without --target=msccl"
    grep -F "error: plan: gpus[0].threadblocks[0].ops[" <<<"$vout" | grep -qF "]: ${overlimit[$plan]}" || fail "$plan: msccl-verify does not name the limit"
    vflags=(--target=msccl)
  fi
  vout=$("$verify" "${vflags[@]}" "$tmp/$plan" 2>&1); vrc=$?
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
((nrun == 2 * $(grep -vc '^#' "$dir/MANIFEST.tsv"))) || fail "only $nrun runs verified"
echo "legacy plans: $nrun runs verified on the CPU executor (legacy and upgraded), $nproven upgraded plans proven by msccl-verify"
((fails == 0))
