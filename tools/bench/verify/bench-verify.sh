#!/usr/bin/env bash
# bench-verify.sh BUILD_DIR [RANKS...]: how long does the static verifier take on the stdlib?
# For every stdlib program and rank count (default 8 32 64): compiles the plan with
# `mscclc --no-verify`, then times `msccl-verify` on it (wall seconds, CPU seconds = user + sys,
# which a loaded machine inflates less than wall time, peak MB, ops executed by the symbolic run)
# and `mscclc` with its default verification. Prints a table; never fails on time
# (a benchmark, not a test). Goal (issue 11): < 1 s per program at 64 ranks.
set -u
build=${1:?usage: bench-verify.sh BUILD_DIR [RANKS...]}
shift
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(8 32 64)
mscclc=$build/tools/mscclc/mscclc
verify=$build/tools/msccl-verify/msccl-verify
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf "%-28s %5s | %8s %9s %7s %7s %9s | %9s %9s | %s\n" program ranks "plan MB" "verify s" "cpu s" "MB" "ops" "mscclc s" "no-vfy s" verdict
for algo in $("$mscclc" --list-stdlib | awk '{print $1}'); do
  for n in "${sizes[@]}"; do
    plan=$tmp/plan.json
    defs=(-D ranks=$n)
    case $algo in sendrecv/*) defs+=(-D ranks_per_node=$n) ;; esac
    t0=$(date +%s.%N)
    if ! "$mscclc" "stdlib:$algo" "${defs[@]}" --no-verify -o "$plan" 2> "$tmp/err"; then
      printf "%-28s %5d | %s\n" "$algo" "$n" "does not compile: $(head -c 120 "$tmp/err")"
      continue
    fi
    t1=$(date +%s.%N)
    /usr/bin/time -f "%e %M %U %S" -o "$tmp/time" "$verify" --jsonl "$plan" > "$tmp/out" 2>&1
    read -r vs vkb vu vsys < "$tmp/time"
    summary=$(grep '"summary"' "$tmp/out")
    ops=$(sed -E 's/.*"ops_executed":([0-9]+).*/\1/' <<< "$summary")
    verdict=$(grep -q '"proven":true' <<< "$summary" && echo proven || echo "NOT proven")
    t2=$(date +%s.%N)
    "$mscclc" "stdlib:$algo" "${defs[@]}" -o "$plan" 2> /dev/null
    t3=$(date +%s.%N)
    mb=$(awk -v b=$(stat -c %s "$plan") 'BEGIN { printf "%.2f", b / 1048576 }')
    printf "%-28s %5d | %8s %9.3f %7.2f %7.0f %9s | %9.3f %9.3f | %s\n" "$algo" "$n" "$mb" "$vs" "$(echo "$vu + $vsys" | bc)" \
      "$((vkb / 1024))" "$ops" \
      "$(echo "$t3 - $t2" | bc)" "$(echo "$t1 - $t0" | bc)" "$verdict"
  done
done
