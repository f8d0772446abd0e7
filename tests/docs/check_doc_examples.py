#!/usr/bin/python3
"""Check the ```msccl examples of Markdown documents with mscclc and msccl-run.

Every fenced block whose info string starts with `msccl` must name what it is, as the second
word of the info string:

  ```msccl run          a whole program: mscclc compiles it and `msccl-run --race-check` runs the
                        plan on the CPU executor; every result must verify and no data race may be
                        reported.
  ```msccl run-fails    a whole program whose plan msccl-run must refuse (deadlock, data race,
                        invalid plan, misuse): mscclc's plan checks and verifier must refuse it
                        already; compiled with `--no-verify`, msccl-run --race-check must exit
                        non-zero and print every `// expect-run-error: TEXT` line of the block.
  ```msccl compile-error  a program mscclc must reject: `mscclc --verify-diagnostics` checks its
                        `// expected-error {{...}}` comments (at least one is required).
  ```msccl fragment     a piece of a program, shown for reading only (not checked).

Optional comment lines inside a block: `// mscclc-args: ARGS` (extra mscclc arguments, e.g.
`-D ranks=8`) and `// msccl-run-args: ARGS` (extra msccl-run arguments, e.g. `--size 64K`).

Exit status 0 when every block behaves as marked, 1 otherwise (each failure is printed with the
document's file:line), 2 on bad usage. A document without any ```msccl block is an error, so
a broken extraction cannot pass silently.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

KINDS = ("run", "run-fails", "compile-error", "fragment")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")


def extract(path):
    """Yield (line, info words, text) for every fenced block whose info string starts with msccl."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3).strip()
        start = i + 1
        body = []
        i += 1
        while i < len(lines):
            c = FENCE.match(lines[i])
            if c and c.group(2)[0] == fence[0] and len(c.group(2)) >= len(fence) and not c.group(3).strip():
                break
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line)
            i += 1
        i += 1
        words = info.split()
        if words and words[0] == "msccl":
            yield start, words[1:], "\n".join(body) + "\n"


def directive(text, name):
    out = []
    for line in text.split("\n"):
        m = re.search(r"//\s*" + re.escape(name) + r":\s*(.*?)\s*$", line)
        if m:
            out.append(m.group(1))
    return out


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    return p.returncode, p.stdout


def check_block(args, tmp, where, words, text):
    """Returns None when the block behaves as marked, else the reason it does not."""
    if not words or words[0] not in KINDS:
        return "the info string must be `msccl KIND` with KIND one of " + ", ".join(KINDS)
    kind = words[0]
    if kind == "fragment":
        return None
    src = os.path.join(tmp, "example.msccl")
    with open(src, "w", encoding="utf-8") as f:
        f.write(text)
    extra = []
    for a in directive(text, "mscclc-args"):
        extra += shlex.split(a)
    if kind == "compile-error":
        if "expected-error" not in text:
            return "a compile-error block needs an `// expected-error {{...}}` comment"
        rc, out = run([args.mscclc, "--verify-diagnostics"] + extra + [src])
        return None if rc == 0 else "mscclc --verify-diagnostics failed:\n" + out
    plan = os.path.join(tmp, "plan.json")
    if os.path.exists(plan):
        os.remove(plan)
    if kind == "run-fails":
        # The compiler proves plans before it writes them: it must refuse this one already.
        rc, out = run([args.mscclc, src, "-o", plan] + extra)
        if rc == 0:
            return "mscclc's verifier accepted a plan the block says msccl-run refuses"
        extra = extra + ["--no-verify"]
    rc, out = run([args.mscclc, src, "-o", plan] + extra)
    if rc != 0:
        return "mscclc failed:\n" + out
    run_args = []
    for a in directive(text, "msccl-run-args"):
        run_args += shlex.split(a)
    rc, out = run([args.msccl_run, plan, "--race-check"] + run_args)
    if kind == "run":
        if rc != 0:
            return "msccl-run --race-check failed (exit %d):\n%s" % (rc, out)
        return None
    expect = directive(text, "expect-run-error")
    if not expect:
        return "a run-fails block needs an `// expect-run-error: TEXT` comment"
    if rc == 0:
        return "msccl-run accepted the plan, but the block expects it to fail:\n" + out
    missing = [e for e in expect if e not in out]
    if missing:
        return "msccl-run failed, but its output lacks %r:\n%s" % (missing, out)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mscclc", required=True)
    ap.add_argument("--msccl-run", dest="msccl_run", required=True)
    ap.add_argument("docs", nargs="+", help="Markdown files")
    args = ap.parse_args()
    failures = 0
    for doc in args.docs:
        blocks = list(extract(doc))
        if not blocks:
            print("%s: FAIL: no ```msccl block found" % doc)
            failures += 1
            continue
        counts = {}
        for line, words, text in blocks:
            where = "%s:%d" % (doc, line)
            with tempfile.TemporaryDirectory(prefix="doc-example-") as tmp:
                why = check_block(args, tmp, where, words, text)
            kind = words[0] if words else "?"
            if why is None:
                counts[kind] = counts.get(kind, 0) + 1
                print("%s: ok (%s)" % (where, kind))
            else:
                failures += 1
                print("%s: FAIL (%s): %s" % (where, kind, why))
        print("%s: %d block(s): %s" % (doc, len(blocks), ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items()))))
    if failures:
        print("%d example(s) failed" % failures)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
