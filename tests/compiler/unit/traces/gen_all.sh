#!/bin/sh
# Regenerate the traces of the golden programs (needs the Python DSL: PYTHONPATH=/tmp/pydsl and
# the MSCCL++ sources at $MSCCLPP_SRC, default /tmp/mscclpp-src). Test data generator only.
set -e
here=$(cd "$(dirname "$0")" && pwd)
src=${MSCCLPP_SRC:-/tmp/mscclpp-src}
golden=${MSCCL_SHARED_DIR:-$here/../../../../../shared}/golden
for set in mscclpp-dsl mscclpp-executor-tests; do
  grep -v '^#' "$golden/$set/MANIFEST.tsv" | while IFS="$(printf '\t')" read -r plan prog args; do
    [ -n "$plan" ] || continue
    # shellcheck disable=SC2086
    PYTHONPATH=${PYTHONPATH:-/tmp/pydsl} python3 "$here/make_traces.py" "$here/$set.${plan%.json}.trace.json" "$src/$prog" $args \
      || echo "trace failed: $prog" >&2
  done
done
