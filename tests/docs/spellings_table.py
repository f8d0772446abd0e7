#!/usr/bin/env python3
"""Print the Markdown table of old spellings from compiler/include/msccl/diag/Spellings.def.

Usage: spellings_table.py SPELLINGS.def

docs/language.md holds this table between the markers `<!-- spellings-table begin -->` and
`<!-- spellings-table end -->`; tests/compiler/lit/docs-spellings.test checks that the two agree, so
the .def stays the one table (paste this script's output there after editing the .def).
"""
import re
import sys

ROW = re.compile(r'MSCCL_SPELLING\((\w+),\s*"([^"]*)",\s*(\w+),\s*"([^"]*)",\s*"([^"]*)",\s*"(.*)"\)\s*$')
ACTION = {"Alias": "alias (warning)", "Error": "error", "Same": "unchanged"}


def quote(kind, old):
    # As diag::quoteOld spells it in diagnostics.
    if kind == "Method":
        return f"`.{old}(...)`"
    if kind == "Keyword":
        return f"`{old} = ...`"
    if kind == "Syntax":
        return f"`with ... {old} NAME`"
    return f"`{old}`"


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    rows = [ROW.match(line) for line in open(sys.argv[1], encoding="utf-8")]
    rows = [m.groups() for m in rows if m]
    if not rows:
        print("no MSCCL_SPELLING rows in " + sys.argv[1], file=sys.stderr)
        return 1
    print("| Old spelling | mscclc | Today |")
    print("|---|---|---|")
    for kind, old, action, _today, _extra, fixit in rows:
        print(f"| {quote(kind, old)} | {ACTION[action]} | {fixit} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
