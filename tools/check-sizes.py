#!/usr/bin/env python3
"""Size rules for the project's own C++/CUDA sources: no function over 150 lines, no file
over 900 lines (the project's style rules; issue 27 item 5).

Usage: check-sizes.py [--root DIR] [--max-function N] [--max-file N] [--list]
                      [--expect-problems N]

Scans *.cpp, *.cc, *.h, *.hpp, *.cu, *.cuh under --root (default: the repository this script
sits in), leaving out build trees (build*/), node_modules/, .git/ and dot-folders. Prints one
line per function or file over its limit (path:line: what, how long) and exits 1 if there is
any that the allow-list below does not name; --list prints every function over the limit
without failing, longest first; --expect-problems N (the self-test, on a fixture) succeeds
exactly when N problems are found.

How functions are found (a scanner, not a compiler): comments, string and character literals
(raw strings included) and preprocessor lines are blanked first; then every `{` is classified
by the text before it since the last `;`, `{` or `}`:
  - `namespace`/`class`/`struct`/`union`/`extern "C"` headers open a declaration scope;
  - at declaration scope, a header with a parameter list (`name(...)`, then qualifiers,
    a trailing return type or a constructor's initialiser list) opens a function body, which
    runs to its matching `}` (lambdas and local classes inside it count as part of it);
  - every other brace (an initialiser, an enum, a brace inside a constructor's initialiser
    list) is skipped as a whole.
A function's length is counted from the line its header starts on to the line of its closing
brace, both included. A macro-defined function (PYBIND11_MODULE(...) {, TEST(...) {) counts
as a function, as it should.
"""
import argparse
import bisect
import os
import re
import sys

EXTENSIONS = ('.cpp', '.cc', '.h', '.hpp', '.cu', '.cuh')

# Generated code only, each entry with the generator that writes it and the reason its size
# is not a style question. Paths are relative to the root, '/'-separated. Nothing the project
# keeps in git is generated today, so the list is empty; a hand-written file never goes here.
ALLOW_FILES = {
    # 'path/to/Generated.cpp': 'written by tools/x/gen.py from y.def',
}


def blank(text):
    """Comments, literals and preprocessor lines replaced by spaces; newlines kept."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in ' \t':
            out.append(c)
            i += 1
            continue
        if line_start and c == '#':
            # A preprocessor line, continued by backslash-newline.
            while i < n and text[i] != '\n':
                if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
                    out.append(' \n')
                    i += 2
                    continue
                out.append(' ')
                i += 1
            continue
        line_start = False
        if c == '\n':
            out.append(c)
            line_start = True
            i += 1
        elif text.startswith('//', i):
            while i < n and text[i] != '\n':
                out.append(' ')
                i += 1
        elif text.startswith('/*', i):
            end = text.find('*/', i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:end]))
            i = end
        elif c == 'R' and i + 1 < n and text[i + 1] == '"' and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_') or text[i - 1] in 'uUL8'):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            close = ')' + m.group(1) + '"'
            end = text.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            out.append(re.sub(r'[^\n]', ' ', text[i:end]))
            i = end
        elif c in '"\'':
            # A digit separator (1'000'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and re.match(r"[0-9a-fA-F]", text[i + 1:i + 2] or ' ') \
                    and re.search(r"\b(0[xXbB])?[0-9][0-9a-fA-F']*$", text[max(0, i - 40):i]):
                out.append(' ')
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(' ' * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


SCOPE_HEAD = re.compile(r'^(template\s*<.*>\s*)?(class|struct|union)\b|^(inline\s+)?namespace\b|^extern\s*$', re.S)
QUALIFIERS = (r'(const|volatile|noexcept(\s*\([^)]*\))?|override|final|mutable|constexpr|&&?|'
              r'->\s*[^{;=]+?|__attribute__\s*\(\(.*?\)\)|\[\[.*?\]\]|\s)*')
# A constructor's initialiser list, whose entries may be braced: `) : a_{x}, b_(y)`.
INIT_LIST = r'\s*:\s*(?:[^;{}]|\{[^{}]*\})*'
# A parameter list, then what may stand between it and a body: qualifiers, a trailing return
# type, an initialiser list.
FUNC_TAIL = re.compile(r'\)' + QUALIFIERS + '(' + INIT_LIST + ')?$', re.S)
# The same, stopped inside an initialiser list just before one of its braced entries.
INIT_BRACE = re.compile(r'\)' + QUALIFIERS + INIT_LIST + r'[A-Za-z0-9_>]$', re.S)
CTRL_HEAD = re.compile(r'^(if|for|while|switch|catch|do|else|try)\b')
ACCESS = re.compile(r'\s*((public|private|protected)\s*:(?!:)\s*)+')


def header_start(text, begin, end):
    """Index of the first non-blank character in text[begin:end]."""
    m = re.search(r'\S', text[begin:end])
    return begin + m.start() if m else end


def match_brace(text, i):
    depth = 0
    n = len(text)
    while i < n:
        if text[i] == '{':
            depth += 1
        elif text[i] == '}':
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return n - 1


def functions(text):
    """(name, start offset, end offset) of every function body at declaration scope."""
    found = []
    head = 0   # where the current header begins
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == ';':
            head = i + 1
        elif c == '}':
            head = i + 1
        elif c == '{':
            m = ACCESS.match(text, head, i)
            if m:
                head = m.end()
            h = text[head:i].strip()
            if SCOPE_HEAD.search(h) and not FUNC_TAIL.search(h):
                # namespace x {  /  class Foo : public Bar {  /  extern "C" {  (string blanked)
                head = i + 1
                i += 1
                continue
            if '(' in h and not CTRL_HEAD.match(h) and not re.search(r'=\s*$', h):
                if INIT_BRACE.search(h):
                    # `Foo() : a_` then `{x}`: an initialiser's brace; skip it, keep the header.
                    i = match_brace(text, i) + 1
                    continue
                if FUNC_TAIL.search(h):
                    end = match_brace(text, i)
                    start = header_start(text, head, i)
                    name = re.sub(r'\s+', ' ', h.split('(')[0]).strip().split(' ')[-1]
                    found.append((name, start, end))
                    head = end + 1
                    i = end + 1
                    continue
            # Anything else (an initialiser, an enum, an aggregate) is skipped whole; its header
            # goes on after it (`x = {..};`, `enum E {..};`) to the next `;`.
            i = match_brace(text, i) + 1
            continue
        i += 1
    return found


def scan_file(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        raw = f.read()
    text = blank(raw)
    lines = raw.count('\n') + (0 if raw.endswith('\n') or not raw else 1)
    starts = [0] + [m.end() for m in re.finditer('\n', text)]

    def ln(off):
        return bisect.bisect_right(starts, off)

    funcs = [(name, ln(s), ln(e)) for name, s, e in functions(text)]
    return lines, funcs


def source_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith('.') and not d.startswith('build')
                             and d not in ('node_modules', 'third_party', '__pycache__'))
        for name in sorted(filenames):
            if name.endswith(EXTENSIONS):
                yield os.path.normpath(os.path.join(rel, name)).replace(os.sep, '/')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument('--max-function', type=int, default=150)
    ap.add_argument('--max-file', type=int, default=900)
    ap.add_argument('--list', action='store_true', help='report, longest first, and do not fail')
    ap.add_argument('--expect-problems', type=int, default=None,
                    help='succeed exactly when this many problems are found (self-test)')
    args = ap.parse_args()

    problems = []
    count = 0
    for rel in source_files(args.root):
        count += 1
        lines, funcs = scan_file(os.path.join(args.root, rel))
        allowed = rel in ALLOW_FILES
        if lines > args.max_file:
            problems.append((lines, f'{rel}:1: file has {lines} lines (limit {args.max_file})', allowed))
        for name, first, last in funcs:
            length = last - first + 1
            if length > args.max_function:
                problems.append((length, f'{rel}:{first}: function {name} has {length} lines '
                                         f'(limit {args.max_function})', allowed))
    if count == 0:
        print(f'check-sizes: no sources under {args.root}', file=sys.stderr)
        return 2
    problems.sort(key=lambda p: -p[0])
    failing = 0
    for _, text, allowed in problems:
        print(text + (f' [allowed: {ALLOW_FILES[text.split(":")[0]]}]' if allowed else ''))
        failing += not allowed
    print(f'check-sizes: {count} files, {failing} over the limits'
          + (f', {len(problems) - failing} allowed (generated)' if len(problems) > failing else ''))
    if args.expect_problems is not None:
        if failing != args.expect_problems:
            print(f'check-sizes: expected {args.expect_problems} problems', file=sys.stderr)
            return 1
        return 0
    return 0 if args.list or failing == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
