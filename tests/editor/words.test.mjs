// Every word of the language, read afresh from grammar/*.g4 and Builtins.def (not from the
// generated files), is highlighted by each editor: the TextMate grammar through the real
// engine, highlight.js through the real library, and the Vim syntax file's word lists.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { tokenize, repoRoot } from './lib/textmate.mjs';
import { readWords, allMethodNames } from '../../tools/editors/gen/sources.mjs';

const words = readWords(repoRoot);
const require = createRequire(import.meta.url);

/** Innermost scope of the token `text` in `line` tokenized alone. */
async function scopeIn(line, text) {
  const t = await tokenize(line);
  const tokf = t.lines[0].find((x) => x.text === text);
  assert.ok(tokf, `${line}: no token ${text}: ${JSON.stringify(t.lines[0].map((x) => x.text))}`);
  return tokf.scopes;
}

test('TextMate: every keyword of the grammar is a keyword, storage type or language constant', async () => {
  for (const k of words.keywords) {
    const inner = (await scopeIn(`${k} `, k)).at(-1);
    assert.match(inner, /^(keyword|storage\.type|constant\.language)(\.[\w-]+)*\.msccl$/, `${k}: ${inner}`);
  }
});

test('TextMate: every builtin function, class, method, attribute and enum member', async () => {
  for (const f of words.functions) assert.equal((await scopeIn(`x = ${f}(1)`, f)).at(-1), 'support.function.builtin.msccl', f);
  for (const c of words.classes) assert.equal((await scopeIn(`x = ${c}(1)`, c)).at(-1), 'support.class.msccl', c);
  for (const m of allMethodNames(words)) assert.equal((await scopeIn(`x.${m}(1)`, m)).at(-1), 'support.function.method.msccl', m);
  for (const a of Object.values(words.attributes).flat()) {
    assert.equal((await scopeIn(`y = x.${a} + 1`, a)).at(-1), 'support.variable.property.msccl', a);
  }
  for (const [e, members] of Object.entries(words.enums)) {
    assert.equal((await scopeIn(`x = ${e}.${members[0]}`, e)).at(-1), 'support.class.enum.msccl', e);
    for (const m of members) {
      const scopes = await scopeIn(`f(a = ${e}.${m})`, m);
      assert.equal(scopes.at(-1), 'variable.other.enummember.msccl', `${e}.${m}`);
      assert.ok(scopes.includes('support.constant.enum.msccl'), `${e}.${m}`);
    }
  }
  for (const o of words.programOptions) {
    const scopes = await scopeIn(`program p(${o} = 1) {}`, o);
    assert.ok(scopes.includes('support.variable.option.msccl'), `${o}: ${scopes.join(' ')}`);
  }
});

test('TextMate: every size suffix of the lexer, on decimal and hex integers', async () => {
  for (const s of words.sizeSuffixes) {
    for (const n of ['1', '1_0', '0x1F']) {
      const scopes = await scopeIn(`x = ${n}${s}`, s);
      assert.equal(scopes.at(-1), 'keyword.other.unit.suffix.msccl', `${n}${s}`);
      assert.match(scopes.at(-2), /^constant\.numeric\.integer\./, `${n}${s}`);
    }
  }
});

test('highlight.js: every keyword, builtin, class, enum member and size suffix', () => {
  const hljs = require('highlight.js/lib/core');
  hljs.registerLanguage('msccl', require(path.join(repoRoot, 'tools/editors/highlightjs/msccl.js')));
  const html = (src) => hljs.highlight(src, { language: 'msccl' }).value;
  for (const k of words.keywords) assert.match(html(`${k} x`), new RegExp(`^<span class="hljs-(keyword|literal)">${k}</span>`), k);
  for (const f of words.functions) assert.ok(html(`${f}(1)`).includes(`<span class="hljs-built_in">${f}</span>`), f);
  for (const c of words.classes) assert.ok(html(`${c}(1)`).includes(`<span class="hljs-type">${c}</span>`), c);
  for (const [e, members] of Object.entries(words.enums)) {
    for (const m of members) assert.ok(html(`${e}.${m}`).includes(`<span class="hljs-variable constant_">${m}</span>`), `${e}.${m}`);
  }
  for (const s of words.sizeSuffixes) assert.ok(html(`x = 4${s}`).includes(`<span class="hljs-number">4${s}</span>`), s);
});

test('Vim: the syntax file names every keyword, builtin and enum member', () => {
  const vim = fs.readFileSync(path.join(repoRoot, 'tools/editors/vim/syntax/msccl.vim'), 'utf8');
  const named = new Set(vim.match(/[A-Za-z_]\w*/g));
  const all = [...words.keywords, ...words.functions, ...words.classes, ...allMethodNames(words),
    ...Object.keys(words.enums), ...Object.values(words.enums).flat(), ...words.sizeSuffixes];
  assert.deepEqual(all.filter((w) => !named.has(w)), []);
});
