#!/usr/bin/env bash
# usage: expect_exit.sh CODE REGEX COMMAND [ARGS...]
# Runs COMMAND; succeeds iff it exits with CODE and (when REGEX is not empty) its standard output
# matches the extended regular expression REGEX. Used by the plan-diff self-tests.
want=$1 regex=$2
shift 2
output=$("$@")
got=$?
printf '%s\n' "$output"
if [ "$got" -ne "$want" ]; then
  echo "FAIL: '$*' exited with $got, expected $want"
  exit 1
fi
if [ -n "$regex" ] && ! grep -Eq -- "$regex" <<< "$output"; then
  echo "FAIL: output does not match /$regex/"
  exit 1
fi
