// The editor files are generated from the language's sources of truth (grammar/*.g4,
// compiler/include/msccl/elab/Builtins.def) by tools/editors/generate.mjs: the committed files
// are up to date, the readers parse those sources, and a new builtin or keyword reaches every
// editor file (or, for a new kind of X-macro, stops the generator with a message).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { repoRoot } from './lib/textmate.mjs';
import { generatedFiles, staleFiles } from '../../tools/editors/generate.mjs';
import { antlrRules, macroCalls, readBuiltins, readGrammarWords, readWords, sourcePaths } from '../../tools/editors/gen/sources.mjs';

const generator = path.join(repoRoot, 'tools/editors/generate.mjs');

test('the committed editor files are what generate.mjs makes from grammar/*.g4 and Builtins.def', () => {
  const stale = staleFiles(repoRoot, generatedFiles(readWords(repoRoot)));
  assert.deepEqual(stale, [], 'out of date; run: node tools/editors/generate.mjs');
  const r = spawnSync(process.execPath, [generator, '--check'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});

test('the sources give the language design words (docs/language.md)', () => {
  const w = readWords(repoRoot);
  for (const k of ['param', 'import', 'fn', 'program', 'let', 'for', 'in', 'if', 'else', 'with', 'return',
    'break', 'continue', 'and', 'or', 'not', 'true', 'false', 'none']) assert.ok(w.keywords.includes(k), k);
  assert.deepEqual([...w.sizeSuffixes].sort(), ['G', 'GiB', 'K', 'KiB', 'M', 'MiB']);
  for (const f of ['range', 'len', 'min', 'max', 'abs', 'str', 'print', 'assert', 'error']) assert.ok(w.functions.includes(f), f);
  for (const c of ['AllReduce', 'Rank', 'Buffer', 'MemoryChannel', 'PortChannel', 'SwitchChannel', 'Semaphore',
    'ThreadBlockGroup', 'LoopIterationContext']) assert.ok(w.classes.includes(c), c);
  assert.deepEqual(w.enums.SyncType, ['after', 'before', 'both', 'none']);
  assert.ok(w.methods.Rank.includes('copy') && w.methods.MemoryChannel.includes('signal'));
  assert.ok(w.programOptions.includes('collective') && w.programOptions.includes('max_message_size'));
});

test('readers: ANTLR rules and X-macro calls', () => {
  const rules = antlrRules(`lexer grammar L;
    // 'commented' : 'no' ;
    FOO : 'foo' ;  /* BAR : 'bar' ; */
    SEMI : ';' ;
    fragment SIZE_SUFFIX : 'Ki' | 'X' ;
    LINE : '//' ~[\\r\\n]* -> skip ;`);
  assert.deepEqual(rules.map((r) => r.name), ['FOO', 'SEMI', 'SIZE_SUFFIX', 'LINE']);
  assert.ok(rules[2].fragment);
  const calls = macroCalls(`#define MSCCL_X(a, b)
    MSCCL_X(one, "two, (three)", f(4, 5)) // MSCCL_X(commented, out)
    /* MSCCL_X(also, out) */
      MSCCL_Y(multi,
              line)`);
  assert.deepEqual(calls.map((c) => [c.macro, c.args]), [
    ['MSCCL_X', ['one', '"two, (three)"', 'f(4, 5)']],
    ['MSCCL_Y', ['multi', 'line']],
  ]);
});

/** A copy of the sources under a temporary root, with `edit(relPath, text) -> text` applied. */
function sourcesCopy(edit) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'msccl-editor-'));
  const src = sourcePaths(repoRoot);
  for (const file of [...src.g4, src.builtins]) {
    const rel = path.relative(repoRoot, file);
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), edit(rel, fs.readFileSync(file, 'utf8')));
  }
  return dir;
}

test('a new builtin function, class, method, enum member or keyword reaches every editor file', () => {
  const dir = sourcesCopy((rel, text) => {
    if (rel.endsWith('Builtins.def')) {
      return `${text}
MSCCL_BUILTIN_FUNCTION(zzfunc, 0, 0, "new")
MSCCL_BUILTIN_CLASS(ZzClass, "new")
MSCCL_BUILTIN_METHOD(ZzClass, zz_method, None, "new")
MSCCL_BUILTIN_ENUM(ZzEnum, "new")
MSCCL_BUILTIN_ENUM_MEMBER(ZzEnum, zz_member, 0)
`;
    }
    return rel.endsWith('MscclLexer.g4') ? text.replace(/^PARAM\b/m, "ZZKW : 'zzkeyword' ;\nPARAM") : text;
  });
  try {
    const files = generatedFiles(readWords(dir));
    for (const [rel, text] of Object.entries(files)) {
      // highlight.js colours every method call alike, so it lists no method names.
      const expected = ['zzfunc', 'ZzClass', 'ZzEnum', 'zz_member', 'zzkeyword'];
      if (!rel.includes('highlightjs')) expected.push('zz_method');
      for (const word of expected) {
        assert.ok(text.includes(word), `${rel} lacks ${word}`);
      }
    }
    // The committed files are then stale, and --check says so.
    fs.cpSync(path.join(repoRoot, 'tools/editors'), path.join(dir, 'tools/editors'), { recursive: true });
    const r = spawnSync(process.execPath, [path.join(dir, 'tools/editors/generate.mjs'), '--check', '--root', dir], { encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /out of date: tools\/editors\/vscode\/syntaxes\/msccl.tmLanguage.json/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('an X-macro the generator does not know stops it with a message', () => {
  const dir = sourcesCopy((rel, text) => (rel.endsWith('Builtins.def') ? `${text}\nMSCCL_BUILTIN_NEWKIND(x, y)\n` : text));
  try {
    assert.throws(() => readBuiltins(sourcePaths(dir).builtins), /unknown X-macro\(s\) MSCCL_BUILTIN_NEWKIND/);
    const r = spawnSync(process.execPath, [generator, '--check', '--root', dir], { encoding: 'utf8' });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /MSCCL_BUILTIN_NEWKIND/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('missing sources are reported', () => {
  assert.throws(() => readGrammarWords([]), /no grammar/);
  assert.throws(() => readBuiltins('/nonexistent/Builtins.def'), /not found/);
});
