#!/usr/bin/env bash
# Runs every plan under ../shared/golden with msccl-run on the CPU executor at its default sweep
# and prints one line per plan. What each plan must do depends on what it is:
#  - plans of real collectives (allreduce, allgather, ...) must verify with 0 wrong elements;
#  - the DSL's single-op unit-test plans (collective "test") have no defined result: they must run
#    without misuse, and the ones that wait for signals or packets no op of the plan produces are
#    reported as the deadlocks they are (they would hang on a GPU too);
#  - compiler-parity inputs (golden/quirks: plans the Python DSL makes for programs that exercise its
#    quirks; the programs live in tests/compiler/unit/data/quirks) are not runnable algorithms:
#    whatever the runtime does with them (verify, deadlock, refuse) is reported "as written";
#  - a plan the runtime refuses (invalid for this executor, or no size of the sweep it can run) is
#    reported as refused with the reason, not failed, so a new reference file cannot break the run.
# Only wrong results, misuse and crashes fail the script. Every plan that verifies is run once more
# under the happens-before race checker (msccl-run --race-check, with the static verifier's launch
# model: skewed launches, host accesses at kernel start/end); a race is reported as a finding
# (such a plan may give wrong results on a GPU) without failing the script.
# Usage: tools/run-golden-plans.sh MSCCL_RUN [SHARED_DIR]
set -uo pipefail
run=${1:?usage: $0 MSCCL_RUN [SHARED_DIR]}
shared=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/shared}
[[ -d $shared/golden ]] || { echo "no golden plans under $shared (skipped)"; exit 0; }
failed=0; total=0; races_found=0; refused=0
# first_problem TEXT PATTERN...: the first line of TEXT (comment lines aside) that matches the
# first PATTERN any line matches, trimmed.
first_problem() {
  local text p; text=$(grep -v '^#' <<<"$1"); shift
  for p in "$@"; do
    if grep -qE "$p" <<<"$text"; then grep -m1 -E "$p" <<<"$text" | sed 's/^ *//' | cut -c1-160; return; fi
  done
}
while IFS= read -r plan; do
  total=$((total + 1))
  collective=$(grep -m1 -o '"collective": *"[a-z]*"' "$plan" | sed 's/.*"\([a-z]*\)"$/\1/')
  name=${plan#$shared/golden/}
  parity=false; [[ $name == quirks/* ]] && parity=true
  out=$("$run" "$plan" 2>&1); rc=$?
  if ((rc == 0)); then
    if [[ $collective == test ]]; then result="ran clean (no defined result)"; else result="verified, 0 wrong"; fi
    $parity && result="$result, as written"
    if ! races=$("$run" "$plan" --race-check 2>&1); then
      result="$result; DATA RACE: $(grep -m1 -o 'data race: .*' <<<"$races" | cut -c12-211)"
      races_found=$((races_found + 1))
    fi
  elif ((rc >= 128)) || grep -qiE "internal error|terminate called|Assertion|Sanitizer" <<<"$out"; then
    result="FAILED: crashed (exit $rc): $(first_problem "$out" 'error|terminate|Assertion|Sanitizer')"
    failed=$((failed + 1))
  elif grep -q "deadlock" <<<"$out" && ! grep -qiE "misuse|out of bounds" <<<"$out" &&
       { [[ $collective == test ]] || $parity; }; then
    result="deadlock, as written: $(grep -m1 -o 'waits [^;]*' <<<"$out" | cut -c1-120)"
  elif grep -qE "invalid plan|InvalidSize|no message size could run" <<<"$out" &&
       ! grep -qE " wrong  | Deadlock: | Misuse: " <<<"$out"; then
    why=$(first_problem "$out" '^ *gpus\[|InvalidSize|no message size' 'invalid')
    result="refused$($parity && echo ', as written'): $why"
    refused=$((refused + 1))
  elif $parity; then
    result="fails as written: $(first_problem "$out" '^msccl-run: ' 'error|wrong|deadlock')"
  else
    result="FAILED: $(first_problem "$out" '^msccl-run: ' 'error|wrong')"
    failed=$((failed + 1))
  fi
  printf '%-70s %-13s %s\n' "$name" "$collective" "$result"
done < <(find "$shared/golden" -name '*.json' | sort)
echo "golden plans: $total run, $failed failed, $refused refused by the runtime, $races_found with a data race (msccl-run --race-check)"
((failed == 0))
