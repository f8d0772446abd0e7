#!/usr/bin/env bash
# Runs every plan under ../shared/golden with msccl-run on the CPU executor at its default sweep
# and prints one line per plan. Plans of real collectives (allreduce, allgather, ...) must verify;
# the DSL's single-op unit-test plans (collective "test") have no defined result: they must run
# without misuse, and the ones that wait for signals or packets no op of the plan produces are
# reported as the deadlocks they are (they would hang on a GPU too). Every plan that verifies is
# run once more under the happens-before race checker (msccl-run --race-check); a race is reported
# as a finding (such a plan may give wrong results on a GPU) without failing the script.
# Usage: tools/run-golden-plans.sh MSCCL_RUN [SHARED_DIR]
set -uo pipefail
run=${1:?usage: $0 MSCCL_RUN [SHARED_DIR]}
shared=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/shared}
[[ -d $shared/golden ]] || { echo "no golden plans under $shared (skipped)"; exit 0; }
failed=0; total=0; races_found=0
while IFS= read -r plan; do
  total=$((total + 1))
  collective=$(grep -m1 -o '"collective": *"[a-z]*"' "$plan" | sed 's/.*"\([a-z]*\)"$/\1/')
  out=$("$run" "$plan" 2>&1); rc=$?
  name=${plan#$shared/golden/}
  if ((rc == 0)); then
    if [[ $collective == test ]]; then result="ran clean (no defined result)"; else result="verified, 0 wrong"; fi
    if ! races=$("$run" "$plan" --race-check 2>&1); then
      result="$result; DATA RACE: $(grep -m1 -o 'rank [0-9]* tb [0-9]* op [0-9]* ([a-z_]*) at [^ ]* [a-z]* [^)]*) while .*' <<<"$races" | cut -c1-200)"
      races_found=$((races_found + 1))
    fi
  elif [[ $collective == test ]] && grep -q "deadlock" <<<"$out" && ! grep -qiE "misuse|out of bounds|invalid" <<<"$out"; then
    result="deadlock, as written: $(grep -m1 -o 'waits for [^;]*' <<<"$out")"
  else
    result="FAILED: $(grep -m1 -E 'error|wrong|FAILED' <<<"$out")"
    failed=$((failed + 1))
  fi
  printf '%-70s %-13s %s\n' "$name" "$collective" "$result"
done < <(find "$shared/golden" -name '*.json' | sort)
echo "golden plans: $total run, $failed failed, $races_found with a data race (msccl-run --race-check)"
((failed == 0))
