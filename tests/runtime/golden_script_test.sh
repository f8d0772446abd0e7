#!/usr/bin/env bash
# tools/run-golden-plans.sh (the demo's last step) classifies each reference plan by what it is:
# a fake shared/ folder of hand-written plans checks that only wrong results, misuse and crashes
# fail it, that refused plans and parity inputs are reported, and that the real ../shared passes.
# Usage: golden_script_test.sh SCRIPT MSCCL_RUN PLANS_DIR [SHARED_DIR]
set -uo pipefail
script=$1 run=$2 plans=$3 shared=${4:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
expect() { # expect RC PATTERN -- plans...
  local rc=$1 pattern=$2; shift 3
  rm -rf "$tmp/shared"; mkdir -p "$tmp/shared/golden/algos" "$tmp/shared/golden/quirks"
  for p in "$@"; do cp "$plans/${p#*:}" "$tmp/shared/golden/${p%%:*}/"; done
  out=$("$script" "$run" "$tmp/shared" 2>&1); got=$?
  if [[ $got != "$rc" ]] || ! grep -qE "$pattern" <<<"$out"; then
    echo "FAIL: $* -> exit $got (want $rc), output:"; echo "$out"; fails=$((fails + 1))
  else
    echo "ok: $* -> exit $got: $(grep -m1 -E "$pattern" <<<"$out" | cut -c1-150)"
  fi
}
expect 0 "algos/ok_allgather_put_2.json +allgather +verified, 0 wrong" -- algos:ok_allgather_put_2.json
expect 1 "algos/wrong_allreduce_no_reduce.json +allreduce +FAILED" -- algos:wrong_allreduce_no_reduce.json
expect 1 "FAILED" -- algos:misuse_semaphore_unbalanced.json
expect 0 "refused: .*channel_ids" -- algos:invalid_channels_per_op.json
expect 0 "quirks/deadlock_wait_before_signal.json .*deadlock, as written: waits" -- quirks:deadlock_wait_before_signal.json
expect 0 "quirks/wrong_allreduce_no_reduce.json .*fails as written" -- quirks:wrong_allreduce_no_reduce.json
expect 1 "1 failed" -- algos:ok_allgather_put_2.json algos:wrong_allgather_block.json quirks:deadlock_wait_before_signal.json
if [[ -n $shared && -d $shared/golden ]]; then
  out=$("$script" "$run" "$shared" 2>&1) || { echo "FAIL: the reference plans in $shared:"; grep -E "FAILED" <<<"$out"; fails=$((fails + 1)); }
  echo "${out##*$'\n'}"
else
  echo "note: ../shared/golden is absent; the reference plans were not run"
fi
((fails == 0)) && echo "golden script: all cases passed"
((fails == 0))
