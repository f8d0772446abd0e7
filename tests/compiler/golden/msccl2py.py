#!/usr/bin/env python3
"""Diagnostic aid (not a test): turns one of the golden .msccl translations back into a Python
program for the MSCCL++ Python DSL, so that a translation can be checked independently of mscclc.

    msccl2py.py FILE.msccl [-D NAME=VALUE ...] [--option NAME=VALUE ...] > prog.py
    PYTHONPATH=<dir holding the mscclpp package> python3 prog.py > plan.json

Handles the subset of the language the translations use (one statement per line, braces for
blocks, `let`, `param`, `fn`, `program`, `with`, `for`, `if`/`else if`/`else`); integer `/` becomes
`//`. If the result matches the reference plan while mscclc's output does not, the difference lies in
mscclc, not in the translation.
"""
import re
import sys

HEADER = """import sys
from mscclpp.language.channel import *
from mscclpp.language.rank import *
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.collectives import *
from mscclpp.language.utils import *
from mscclpp.language.loop import *
from mscclpp.language.thread_block_group import *
def _range(*a):
    return list(range(*a))
def error(msg):
    raise RuntimeError(msg)
"""


def convert_expr(text):
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == '\\' else 1
            out.append(text[i:j + 1])
            i = j + 1
            continue
        m = re.match(r'[A-Za-z_][A-Za-z0-9_]*', text[i:])
        if m:
            w = m.group(0)
            after_dot = i > 0 and text[i - 1] == '.'
            out.append(w if after_dot else {'true': 'True', 'false': 'False', 'none': 'None', 'range': '_range'}.get(w, w))
            i += len(w)
            continue
        m = re.match(r'(0[xX][0-9a-fA-F_]+|[0-9][0-9_]*)(KiB|MiB|GiB|K|M|G)?', text[i:])
        if m:
            scale = {'K': 1, 'KiB': 1, 'M': 2, 'MiB': 2, 'G': 3, 'GiB': 3}.get(m.group(2), 0)
            out.append(str(int(m.group(1).replace('_', ''), 16 if m.group(1)[1:2] in 'xX' and m.group(1)[1:2] else 10) * 1024**scale))
            i += len(m.group(0))
            continue
        if c == '/' and text[i:i + 2] != '//':
            out.append('//')
            i += 1
            continue
        if c == '/' and text[i:i + 2] == '//':
            break  # comment
        out.append(c)
        i += 1
    return ''.join(out).rstrip()


def main():
    args = sys.argv[1:]
    src = args[0]
    overrides = {}
    options = {}
    k = 1
    while k < len(args):
        if args[k] == '-D':
            n, v = args[k + 1].split('=', 1)
            overrides[n] = convert_expr(v)
            k += 2
        elif args[k] == '--option':
            n, v = args[k + 1].split('=', 1)
            options[n] = convert_expr(v)
            k += 2
        else:
            k += 1
    lines = open(src).read().split('\n')
    out = [HEADER]
    depth = 0
    program = None
    params = []

    def emit(s):
        out.append('    ' * depth + s)

    in_opts = False
    opts = []
    for raw in lines:
        line = raw.strip()
        if line.startswith('//') or not line:
            continue
        line = convert_expr(line)
        if in_opts:
            if line.startswith(') {'):
                in_opts = False
                d = dict(o.split(' = ', 1) for o in opts)
                d.update(options)
                name = d.pop('name', repr(program))
                coll = d.pop('collective')
                nr = d.pop('num_ranks', None)
                rest = ', '.join(f'{a}={b}' for a, b in d.items())
                emit(f'_coll = {coll}')
                emit(f'with CollectiveProgram({name}, _coll, {nr or "_coll.num_ranks"}, {rest}):')
                depth += 1
                program_depth = depth
            else:
                opts.append(line.rstrip(','))
            continue
        m = re.match(r'param (\w+) = (.*)$', line)
        if m:
            params.append(m.group(1))
            emit(f'{m.group(1)} = {overrides.get(m.group(1), m.group(2))}')
            continue
        m = re.match(r'program (\w+)\($', line)
        if m:
            program = m.group(1)
            in_opts = True
            continue
        m = re.match(r'fn (\w+)\((.*)\) \{$', line)
        if m:
            emit(f'def {m.group(1)}({m.group(2)}):')
            depth += 1
            continue
        if line == '}':
            depth -= 1
            if program is not None and depth == program_depth - 1 and not in_opts and depth == 0:
                out.append('    print(JSON())')
            continue
        m = re.match(r'\} else if (.*) \{$', line)
        if m:
            depth -= 1
            emit(f'elif {m.group(1)}:')
            depth += 1
            continue
        if line == '} else {':
            depth -= 1
            emit('else:')
            depth += 1
            continue
        m = re.match(r'(for|if|with) (.*?) \{ (.*) \}$', line)
        if m:
            emit(f'{m.group(1)} {m.group(2)}: {m.group(3)}')
            continue
        m = re.match(r'(for|if|with) (.*) \{$', line)
        if m:
            emit(f'{m.group(1)} {m.group(2)}:')
            depth += 1
            continue
        line = re.sub(r'^let ', '', line)
        emit(line)
    print('\n'.join(out))


main()
