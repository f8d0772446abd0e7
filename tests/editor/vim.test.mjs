// The Vim files of tools/editors/vim, run by vim itself (headless, -es): *.msccl gets filetype
// msccl; the syntax file gives each kind of token of samples/scopes.msccl its group and marks
// nothing in the real programs as an error; the indent file re-indents the sample as written.
// ctest skips this file (77) when vim is not installed (run.mjs --needs vim).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { repoRoot } from './lib/textmate.mjs';

const vimDir = path.join(repoRoot, 'tools/editors/vim');
const samplePath = path.join(repoRoot, 'tests/editor/samples/scopes.msccl');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'msccl-vim-'));
test.after(() => fs.rmSync(work, { recursive: true, force: true }));

const vq = (s) => `'${s.replace(/'/g, "''")}'`;

/** Runs vim on `file` with our runtime files and `body` (Vim script), returns the lines it wrote to OUT. */
function runVim(file, body) {
  const out = path.join(work, `out-${Math.random().toString(36).slice(2)}.txt`);
  const script = path.join(work, 'script.vim');
  fs.writeFileSync(script, [
    `let &rtp = ${vq(vimDir)} . ',' . &rtp`,
    'filetype plugin indent on',
    'syntax on',
    `edit ${file.replace(/ /g, '\\ ')}`,
    'let out = []',
    body.replaceAll('OUT', vq(out)),
    'qa!',
    '',
  ].join('\n'));
  const r = spawnSync('vim', ['-Nu', 'NONE', '-i', 'NONE', '-n', '-es', '-S', script], { encoding: 'utf8', timeout: 60000 });
  assert.equal(r.status, 0, `vim failed: ${r.stderr}${r.stdout}`);
  return fs.readFileSync(out, 'utf8').split('\n');
}

/** Per line, per column (0-based) the syntax group name at that position. */
function syntaxGroups(file) {
  const lines = runVim(file, `
for l in range(1, line('$'))
  let cols = []
  for c in range(1, col([l, '$']) - 1)
    call add(cols, synIDattr(synID(l, c, 1), 'name'))
  endfor
  call add(out, join(cols, ','))
endfor
call insert(out, &filetype)
call writefile(out, OUT)`);
  return { filetype: lines[0], groups: lines.slice(1).map((l) => l.split(',')) };
}

const sampleLines = fs.readFileSync(samplePath, 'utf8').split('\n');
const sample = syntaxGroups(samplePath);

/** Group at the first character of the nth `word` on the line containing `marker`. */
function groupOf(word, marker = word, nth = 0) {
  const line = sampleLines.findIndex((l) => l.includes(marker));
  assert.ok(line >= 0, marker);
  let col = -1;
  for (let i = 0; i <= nth; i++) {
    col = sampleLines[line].indexOf(word, col + 1);
    while (col >= 0 && /\w/.test(word[0]) && (/\w/.test(sampleLines[line][col - 1] ?? '') || /\w/.test(sampleLines[line][col + word.length] ?? ''))) {
      col = sampleLines[line].indexOf(word, col + 1);
    }
  }
  assert.ok(col >= 0, `${word} on ${marker}`);
  return sample.groups[line][col];
}

test('*.msccl files get filetype msccl and the msccl syntax', () => {
  assert.equal(sample.filetype, 'msccl');
});

test('syntax groups of keywords, builtins, methods, enum members, numbers, strings, comments', () => {
  const expect = [
    ['import', 'mscclInclude'], ['param', 'mscclStorage', 'param gpus'], ['fn', 'mscclStorage'],
    ['pairs', 'mscclFunctionName', 'fn pairs'], ['program', 'mscclStorage'], ['sample', 'mscclFunctionName', 'program sample'],
    ['for', 'mscclRepeat', 'for i in'], ['if', 'mscclConditional', 'if i != j'], ['else', 'mscclConditional', '} else if'],
    ['return', 'mscclStatement'], ['with', 'mscclStatement'], ['and', 'mscclOperatorWord'], ['not', 'mscclOperatorWord', 'and not'],
    ['true', 'mscclBoolean', 'program sample'], ['none', 'mscclNone', 'let m ='],
    ['range', 'mscclBuiltinFunction', 'for i in'], ['len', 'mscclBuiltinFunction'], ['print', 'mscclBuiltinFunction'],
    ['AllReduce', 'mscclClass'], ['Rank', 'mscclClass', 'let input'], ['MemoryChannel', 'mscclClass'],
    ['ReduceOperationType', 'mscclEnum'], ['sum', 'mscclEnumMember', 'ReduceOperationType.sum'],
    ['both', 'mscclEnumMember', 'SyncType.both'], ['scratch', 'mscclEnumMember', 'BufferType.scratch'],
    ['append', 'mscclMethod'], ['get_input_buffer', 'mscclMethod'], ['acquire', 'mscclMethod'],
    ['size', 'mscclAttribute', 'input.size'],
    ['0x1F_FF', 'mscclNumber'], ['1_000', 'mscclNumber'], ['48GiB', 'mscclNumber'], ['16KiB', 'mscclNumber'], ['4K', 'mscclNumber'],
    ['"stdlib', 'mscclString', 'import'], ['\\"', 'mscclEscape', 'fn pairs'], ['\\n', 'mscclEscape', 'fn pairs'],
    ['//', 'mscclLineComment', '// Sample'], ['over', 'mscclBlockComment', 'over two lines'],
  ];
  for (const [word, group, marker, nth] of expect) {
    assert.equal(groupOf(word, marker, nth), group, `${word} (line with ${marker ?? word})`);
  }
  // The last character of a size suffix is still part of the number.
  const line = sampleLines.findIndex((l) => l.includes('48GiB'));
  assert.equal(sample.groups[line][sampleLines[line].indexOf('48GiB') + 4], 'mscclNumber');
});

test('errors are marked: bad numbers, escapes, stray closers', () => {
  const file = path.join(work, 'bad.msccl');
  fs.writeFileSync(file, 'let a = 12ab\nlet s = "x\\qy"\nf(x))\n');
  const { groups } = syntaxGroups(file);
  assert.equal(groups[0][8], 'mscclNumberError');
  assert.equal(groups[1][10], 'mscclEscapeError');
  assert.equal(groups[2][4], 'mscclBraceError');
});

test('no error group in the sample, stdlib/ and the shared examples', () => {
  const files = [samplePath];
  const stdlib = path.join(repoRoot, 'stdlib');
  if (fs.existsSync(stdlib)) {
    for (const e of fs.readdirSync(stdlib, { recursive: true })) if (String(e).endsWith('.msccl')) files.push(path.join(stdlib, String(e)));
  }
  const examples = path.join(process.env.MSCCL_SHARED_DIR ?? path.join(repoRoot, '..', 'shared'), 'examples');
  if (fs.existsSync(examples)) {
    for (const e of fs.readdirSync(examples)) if (e.endsWith('.msccl')) files.push(path.join(examples, e));
  }
  for (const f of files) {
    const { groups } = syntaxGroups(f);
    const bad = [];
    groups.forEach((cols, l) => cols.forEach((g, c) => { if (/Error$/.test(g)) bad.push(`${l + 1}:${c + 1} ${g}`); }));
    assert.deepEqual(bad, [], f);
  }
});

test('the indent file re-indents the sample and the shared example as written', () => {
  const files = [samplePath];
  const example = path.join(process.env.MSCCL_SHARED_DIR ?? path.join(repoRoot, '..', 'shared'), 'examples/allreduce_nvls.msccl');
  if (fs.existsSync(example)) files.push(example);
  for (const f of files) {
    const flat = path.join(work, 'flat.msccl');
    const original = fs.readFileSync(f, 'utf8').split('\n');
    fs.writeFileSync(flat, original.map((l) => l.trimStart()).join('\n'));
    const got = runVim(flat, "normal! gg=G\ncall writefile(getline(1, '$'), OUT)");
    // Block-comment continuation lines keep their own layout; compare the code lines.
    const code = (lines) => lines.map((l, i) => (/^\s*(\/\*|\*|over)/.test(original[i] ?? '') ? '' : l));
    assert.deepEqual(code(got.slice(0, original.length)), code(original), f);
  }
});
