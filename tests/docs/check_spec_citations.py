#!/usr/bin/env python3
"""Checks that every citation of the specification (docs/spec) resolves.

Usage: check_spec_citations.py --spec DIR ROOT_OR_FILE...

Reads the anchors `<a id="..."></a>` of DIR/plan-format.md and DIR/dsl-semantics.md, then scans the
given files (folders are walked for source, script and doc files) for citations:

  * short form     plan#3.2, dsl#fusion-F14       -> anchor plan-3.2 / dsl-fusion-F14
  * path form      docs/spec/dsl-semantics.md#dsl-6.3 (also spec/... and ../spec/... links)
  * in-spec links  [text](#plan-3.2) inside a spec document

Fails (exit 1, one line per problem as file:line: message) when a cited anchor is not defined in
the document it names, when a spec document defines an anchor twice or has a section heading
without an anchor on the line before it, or when a scanned file outside the spec folder contains
the section sign or names the shared reference folder outside the repository (the specification
lives in the repository). With --expect-problems N it succeeds iff exactly N problems are found
(for its self-test). Exit 2 on usage errors.
"""
import argparse
import os
import re
import sys

DOCS = {"plan": "plan-format.md", "dsl": "dsl-semantics.md"}
BY_FILE = {v: k for k, v in DOCS.items()}
EXTENSIONS = (".cpp", ".h", ".hpp", ".cc", ".cu", ".cuh", ".def", ".py", ".sh", ".cmake", ".txt",
              ".md", ".msccl", ".g4", ".test", ".tsv", ".in")
SECTION_SIGN = "\u00a7"
OUTSIDE_SPEC = "shared/" + "reference"
SKIP_DIRS = {".git", "build", "__pycache__", "node_modules", "spec-self-test"}

ANCHOR = re.compile(r'<a id="([^"]+)"></a>')
FRAG = r"[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?"
SHORT = re.compile(r"(?<![\w./#-])(plan|dsl)#(" + FRAG + ")")
PATH = re.compile(r"((?:[\w.-]+/)*)(plan-format|dsl-semantics)\.md#(" + FRAG + ")")
LOCAL_LINK = re.compile(r"\]\(#(" + FRAG + r")\)")
HEADING = re.compile(r"^#{2,6} ")


def read_anchors(spec_dir, problems):
    anchors = {}
    for prefix, name in DOCS.items():
        path = os.path.join(spec_dir, name)
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except OSError as e:
            print(f"error: cannot read {path}: {e}", file=sys.stderr)
            sys.exit(2)
        ids = set()
        fence = False
        prev = ""
        for n, line in enumerate(lines, 1):
            if line.startswith("```"):
                fence = not fence
            for a in ANCHOR.findall(line):
                if a in ids:
                    problems.append(f"{path}:{n}: anchor `{a}` is defined twice")
                if not a.startswith(prefix + "-"):
                    problems.append(f"{path}:{n}: anchor `{a}` lacks the prefix `{prefix}-`")
                ids.add(a)
            if not fence and HEADING.match(line) and not ANCHOR.search(prev):
                problems.append(f"{path}:{n}: heading without an anchor on the line before it")
            if line.strip():
                prev = line
        anchors[prefix] = ids
    return anchors


def files_under(root):
    if os.path.isfile(root):
        yield root
        return
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("build"))
        for name in sorted(files):
            if name.endswith(EXTENSIONS):
                yield os.path.join(d, name)


def check_file(path, spec_dir, anchors, problems):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return 0
    in_spec = os.path.abspath(os.path.dirname(path)) == os.path.abspath(spec_dir)
    own = BY_FILE.get(os.path.basename(path)) if in_spec else None
    count = 0

    def need(prefix, anchor, n, shown):
        nonlocal count
        count += 1
        if anchor not in anchors[prefix]:
            problems.append(f"{path}:{n}: `{shown}` cites `{anchor}`, which "
                            f"{DOCS[prefix]} does not define")

    for n, line in enumerate(text.split("\n"), 1):
        for m in SHORT.finditer(line):
            need(m.group(1), f"{m.group(1)}-{m.group(2)}", n, m.group(0))
        for m in PATH.finditer(line):
            directory, doc, frag = m.groups()
            if "spec/" in directory or (in_spec and not directory):
                need(BY_FILE[doc + ".md"], frag, n, m.group(0))
        if own:
            for m in LOCAL_LINK.finditer(line):
                need(own, m.group(1), n, "#" + m.group(1))
        if not in_spec:
            if SECTION_SIGN in line:
                problems.append(f"{path}:{n}: `{SECTION_SIGN}` citation; cite the spec as e.g. "
                                f"plan#3.2 or dsl#6.3 (docs/spec/README.md)")
            if OUTSIDE_SPEC in line:
                problems.append(f"{path}:{n}: points at {OUTSIDE_SPEC}, outside the repository; "
                                f"cite docs/spec instead")
    return count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", required=True, help="the docs/spec folder")
    ap.add_argument("--expect-problems", type=int, default=None,
                    help="succeed iff exactly this many problems are found (self-test)")
    ap.add_argument("paths", nargs="+", help="files or folders to scan")
    args = ap.parse_args()
    problems = []
    anchors = read_anchors(args.spec, problems)
    total = files = 0
    for root in args.paths:
        if not os.path.exists(root):
            print(f"error: {root} does not exist", file=sys.stderr)
            return 2
        for path in files_under(root):
            files += 1
            total += check_file(path, args.spec, anchors, problems)
    for p in problems:
        print(p)
    print(f"{files} files, {total} citations, {len(problems)} problems")
    if args.expect_problems is not None:
        return 0 if len(problems) == args.expect_problems else 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
