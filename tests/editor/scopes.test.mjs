// The TextMate grammar (tools/editors/vscode/syntaxes/msccl.tmLanguage.json), run by the real
// engine VS Code uses, gives every kind of token of samples/scopes.msccl its standard scope, and
// marks text the compiler rejects as invalid.*.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tokenize, allTokens, invalidTokens } from './lib/textmate.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const sample = fs.readFileSync(path.join(here, 'samples', 'scopes.msccl'), 'utf8');
const sampleLines = sample.split('\n');
const tok = await tokenize(sample);

/** Line index of the first line containing `marker`. */
function lineOf(marker) {
  const i = sampleLines.findIndex((l) => l.includes(marker));
  assert.ok(i >= 0, `sample has no line with ${JSON.stringify(marker)}`);
  return i;
}

/** Scopes of the token `text` on the line containing `marker` (nth such token). */
function scopesOf(text, marker = text, nth = 0) {
  const line = lineOf(marker);
  const hits = allTokens(tok).filter((t) => t.line === line && t.text === text);
  assert.ok(hits[nth], `no token ${JSON.stringify(text)} on line ${line + 1}: ${sampleLines[line]}\n` +
    JSON.stringify(tok.lines[line].map((t) => [t.text, t.scopes.at(-1)])));
  return hits[nth].scopes;
}

/** Asserts that the innermost scope of the token is `scope` (exactly) or starts with `scope.`. */
function expectScope(text, scope, marker = text, nth = 0) {
  const inner = scopesOf(text, marker, nth).at(-1);
  assert.ok(inner === scope || inner.startsWith(`${scope}.`) || inner.split(' ').includes(scope),
    `${JSON.stringify(text)} (line with ${JSON.stringify(marker)}): expected ${scope}, got ${inner}`);
}

test('the sample tokenizes without an invalid scope and closes every block', () => {
  assert.deepEqual(invalidTokens(tok).map((t) => `${t.line + 1}:${t.text}`), []);
  assert.ok(tok.closed, 'rule stack not back to the top level at the end of the file');
});

test('keywords', () => {
  expectScope('import', 'keyword.control.import.msccl');
  expectScope('param', 'storage.type.param.msccl', 'param gpus');
  expectScope('fn', 'storage.type.function.msccl');
  expectScope('program', 'storage.type.program.msccl');
  expectScope('let', 'storage.type.let.msccl', 'let out');
  expectScope('let', 'storage.type', 'let (a, b)');
  expectScope('for', 'keyword.control.loop.msccl', 'for i in');
  expectScope('in', 'keyword.control.loop', 'for i in');
  expectScope('in', 'keyword.control.loop.in.msccl', 'for (k, v) in');
  expectScope('k', 'variable.other.readwrite.declaration.msccl', 'for (k, v) in');
  expectScope('items', 'support.function.method.msccl', 'for (k, v) in');
  expectScope('if', 'keyword.control.conditional.msccl', 'if i != j');
  expectScope('else', 'keyword.control.conditional.msccl', '} else if');
  expectScope('if', 'keyword.control.conditional.msccl', '} else if');
  expectScope('continue', 'keyword.control.flow.msccl');
  expectScope('break', 'keyword.control.flow.msccl');
  expectScope('return', 'keyword.control.flow.msccl');
  expectScope('with', 'keyword.control.with.msccl');
  expectScope('and', 'keyword.operator.logical.msccl', 'if i != j');
  expectScope('not', 'keyword.operator.logical.msccl', 'if i != j');
  expectScope('in', 'keyword.operator.logical.msccl', 'if i != j');
  expectScope('or', 'keyword.operator.logical.msccl', 'else if i == j');
  expectScope('true', 'constant.language.boolean.msccl', 'program sample');
  expectScope('false', 'constant.language.boolean.msccl', 'helper(false)');
  expectScope('none', 'constant.language.none.msccl', 'let m =');
});

test('declared names and parameters', () => {
  expectScope('pairs', 'entity.name.function.msccl', 'fn pairs');
  expectScope('sample', 'entity.name.function.program.msccl', 'program sample');
  expectScope('gpus', 'variable.other.constant.param.msccl', 'param gpus');
  for (const p of ['n', 'first', 'label']) expectScope(p, 'variable.parameter.msccl', 'fn pairs');
  // A default value is an expression.
  expectScope('0', 'constant.numeric.integer.decimal.msccl', 'fn pairs');
  assert.ok(scopesOf('0', 'fn pairs').includes('meta.parameter.default.msccl'));
  // Keyword arguments of calls and program options.
  for (const p of ['collective', 'protocol', 'instances']) {
    expectScope(p, 'variable.parameter.msccl', 'program sample');
    assert.ok(scopesOf(p, 'program sample').includes('support.variable.option.msccl'));
  }
  expectScope('tb', 'variable.parameter.msccl', 'MemoryChannel(1, 0)');
  expectScope('reduce_op', 'variable.parameter.msccl', 'reduce_op =');
  expectScope('unit', 'variable.parameter.msccl', 'with Loop');
  // `==` inside parentheses is a comparison, not a keyword argument.
  const eq = tokenize('f(a == b)').then((t) => t.lines[0].find((x) => x.text === 'a').scopes.at(-1));
  return eq.then((s) => assert.equal(s, 'variable.other.readwrite.msccl'));
});

test('builtin functions and DSL classes', () => {
  for (const f of ['range', 'len', 'assert']) expectScope(f, 'support.function.builtin.msccl', f === 'range' ? 'for i in' : 'assert(');
  for (const f of ['min', 'max', 'abs']) expectScope(f, 'support.function.builtin.msccl', 'let (a, b)');
  expectScope('str', 'support.function.builtin.msccl', 'm[a, b]');
  expectScope('print', 'support.function.builtin.msccl');
  expectScope('AllReduce', 'support.class.msccl', 'program sample');
  expectScope('LoopIterationContext', 'support.class.msccl');
  expectScope('Rank', 'support.class.msccl', 'let input');
  expectScope('Buffer', 'support.class.msccl', 'let scratch');
  expectScope('MemoryChannel', 'support.class.msccl');
  expectScope('Semaphore', 'support.class.msccl');
  // A user function call.
  expectScope('pairs', 'entity.name.function.call.msccl', 'let p = pairs');
});

test('method calls, attributes and enum members', () => {
  expectScope('append', 'support.function.method.msccl');
  expectScope('get_input_buffer', 'support.function.method.msccl');
  expectScope('put', 'support.function.method.msccl', 'MemoryChannel(1, 0)');
  expectScope('reduce', 'support.function.method.msccl', 'Rank(0).reduce');
  expectScope('acquire', 'support.function.method.msccl');
  expectScope('helper', 'entity.name.function.member.msccl');
  expectScope('field', 'variable.other.property.msccl');
  expectScope('size', 'support.variable.property.msccl', 'input.size');
  expectScope('.', 'punctuation.accessor.msccl', 'Rank(0).get_input_buffer');
  for (const [member, marker] of [['sum', 'reduce_op'], ['both', 'SyncType.both'], ['scratch', 'BufferType.scratch']]) {
    const scopes = scopesOf(member, marker);
    const inner = scopes.at(-1).split(' ');
    assert.ok(scopes.includes('variable.other.enummember.msccl') || inner.includes('variable.other.enummember.msccl'), scopes.join(' '));
    assert.ok(scopes.includes('support.constant.enum.msccl'), scopes.join(' '));
  }
  expectScope('ReduceOperationType', 'support.class.enum.msccl');
  expectScope('SyncType', 'support.class.enum.msccl');
});

test('numbers with hex, separators and size suffixes', () => {
  expectScope('0x1F_FF', 'constant.numeric.integer.hexadecimal.msccl');
  expectScope('1_000', 'constant.numeric.integer.decimal.msccl');
  const marker = 'param size';
  for (const [digits, suffix] of [['4', 'K'], ['2', 'M'], ['1', 'G'], ['16', 'KiB'], ['1', 'MiB'], ['48', 'GiB']]) {
    const nth = digits === '1' && suffix === 'MiB' ? 1 : 0;
    expectScope(digits, 'constant.numeric.integer.decimal.msccl', marker, nth);
    const s = scopesOf(suffix, marker);
    assert.equal(s.at(-1), 'keyword.other.unit.suffix.msccl');
    assert.equal(s.at(-2), 'constant.numeric.integer.decimal.msccl', `suffix ${suffix} is part of the number`);
  }
});

test('strings and escapes', () => {
  expectScope('stdlib/sync.msccl', 'string.quoted.double.msccl', 'import');
  expectScope('"', 'punctuation.definition.string.begin.msccl', 'import');
  for (const e of ['\\"', '\\\\', '\\n', '\\t']) expectScope(e, 'constant.character.escape.msccl', 'fn pairs');
  expectScope('LL', 'string.quoted.double.msccl', 'program sample');
});

test('line and block comments', () => {
  expectScope('//', 'punctuation.definition.comment.msccl', '// Sample');
  assert.ok(scopesOf('//', '// Sample').includes('comment.line.double-slash.msccl'));
  expectScope('/*', 'punctuation.definition.comment.begin.msccl', '/* A block');
  expectScope('   over two lines. ', 'comment.block.msccl', 'over two lines');
  expectScope('*/', 'punctuation.definition.comment.end.msccl', 'over two lines');
});

test('nested braces are nested meta.block scopes; map literals are dictionaries', () => {
  const depth = (scopes) => scopes.filter((s) => s === 'meta.block.msccl').length;
  assert.equal(depth(scopesOf('let', 'let out')), 1);
  assert.equal(depth(scopesOf('for', 'for j in')), 2);
  assert.equal(depth(scopesOf('out', 'out.append')), 4);
  assert.equal(depth(scopesOf('continue')), 4);
  assert.equal(depth(scopesOf('break')), 4);
  assert.equal(depth(scopesOf('return')), 1);
  assert.equal(depth(scopesOf('print')), 2);
  expectScope('{', 'punctuation.section.block.begin.bracket.curly.msccl', 'fn pairs');
  expectScope('}', 'punctuation.section.block.end.bracket.curly.msccl', '} else if');
  assert.ok(scopesOf('1', 'let m =').includes('meta.structure.dictionary.msccl'));
  expectScope(':', 'punctuation.separator.dictionary.key-value.msccl', 'let m =');
  expectScope(':', 'punctuation.separator.slice.msccl', '.put(input');
  expectScope('**', 'keyword.operator.arithmetic.msccl');
  expectScope('+=', 'keyword.operator.assignment.compound.msccl');
  expectScope('!=', 'keyword.operator.comparison.msccl');
});

test('text the compiler rejects is marked invalid', async () => {
  const cases = {
    '12ab': 'invalid.illegal.numeric.msccl',
    '1MB': 'invalid.illegal.numeric.msccl',
    '"a\\qb"': 'invalid.illegal.unknown-escape.msccl',
    'x @ y': 'invalid.illegal.character.msccl',
    'f(x))': 'invalid.illegal.stray-bracket.msccl',
    'let s = "open': 'invalid.illegal.unterminated-string.msccl',
    'a */': 'invalid.illegal.stray-comment-end.msccl',
    'program p(collective = AllReduce(2, 1, true), no_such_option = 1) {}': 'invalid.illegal.unknown-option.msccl',
  };
  for (const [src, scope] of Object.entries(cases)) {
    const t = await tokenize(src);
    const bad = invalidTokens(t).map((x) => x.scopes.at(-1));
    assert.ok(bad.includes(scope), `${src}: expected ${scope}, got ${JSON.stringify(bad)}`);
    assert.ok(t.closed, `${src}: a single bad line must not leave a rule open`);
  }
  // Unclosed constructs stay open at the end of the file.
  for (const src of ['program p() {', '/* never closed', 'f(\n  1,']) {
    assert.equal((await tokenize(src)).closed, false, src);
  }
});
