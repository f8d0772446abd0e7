// The VS Code extension folder (tools/editors/vscode) is complete and consistent: the manifest
// associates .msccl with the grammar and the language configuration, every path it names
// exists, the configuration's rules do what an editor needs (comments, brackets, auto-closing,
// folding markers, indentation on braces), and the Markdown injection highlights ```msccl blocks.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { repoRoot } from './lib/textmate.mjs';

const ext = path.join(repoRoot, 'tools/editors/vscode');
const manifest = JSON.parse(fs.readFileSync(path.join(ext, 'package.json'), 'utf8'));
const config = JSON.parse(fs.readFileSync(path.join(ext, 'language-configuration.json'), 'utf8'));
const require = createRequire(import.meta.url);

test('the manifest associates .msccl with the language, its grammar and configuration', () => {
  assert.ok(manifest.engines?.vscode, 'engines.vscode');
  const lang = manifest.contributes.languages.find((l) => l.id === 'msccl');
  assert.ok(lang, 'language msccl');
  assert.deepEqual(lang.extensions, ['.msccl']);
  assert.ok(fs.existsSync(path.join(ext, lang.configuration)), lang.configuration);
  const grammar = manifest.contributes.grammars.find((g) => g.language === 'msccl');
  const file = JSON.parse(fs.readFileSync(path.join(ext, grammar.path), 'utf8'));
  assert.equal(file.scopeName, grammar.scopeName);
  assert.equal(grammar.scopeName, 'source.msccl');
  for (const g of manifest.contributes.grammars) assert.ok(fs.existsSync(path.join(ext, g.path)), g.path);
  assert.ok(fs.existsSync(path.join(ext, 'README.md')));
});

test('comments, brackets and auto-closing pairs', () => {
  assert.deepEqual(config.comments, { lineComment: '//', blockComment: ['/*', '*/'] });
  const pairs = config.brackets.map(([o, c]) => o + c).sort();
  assert.deepEqual(pairs, ['()', '[]', '{}']);
  const auto = config.autoClosingPairs.map((p) => p.open + p.close);
  for (const p of ['{}', '[]', '()', '""']) assert.ok(auto.includes(p), p);
  const quote = config.autoClosingPairs.find((p) => p.open === '"');
  assert.deepEqual(quote.notIn, ['string', 'comment']);
});

test('indentation on braces, brackets and parentheses', () => {
  const inc = new RegExp(config.indentationRules.increaseIndentPattern);
  const dec = new RegExp(config.indentationRules.decreaseIndentPattern);
  for (const l of ['program p(', 'fn f(a, b) {', '    for x in range(4) {', '} else {', 'let m = {', 'let l = [', ') {']) {
    assert.ok(inc.test(l), `increase after ${l}`);
  }
  for (const l of ['let x = f(1)', '}', 'let m = {}', '// a comment {', 'print("{")', 'let s = "("']) {
    assert.ok(!inc.test(l), `no increase after ${l}`);
  }
  for (const l of ['}', '    }', ') {', '] ', '} else {']) assert.ok(dec.test(l), `decrease at ${l}`);
  for (const l of ['let x = 1', 'f(x)']) assert.ok(!dec.test(l), `no decrease at ${l}`);
});

test('folding markers and on-enter rules compile and match', () => {
  const start = new RegExp(config.folding.markers.start);
  const end = new RegExp(config.folding.markers.end);
  assert.ok(start.test('    // #region setup') && start.test('// region'));
  assert.ok(end.test('// #endregion') && !end.test('// #region'));
  for (const r of config.onEnterRules) {
    for (const k of ['beforeText', 'afterText']) if (r[k]) new RegExp(r[k]);
  }
  assert.ok(new RegExp(config.onEnterRules[1].beforeText).test('/** doc'));
  const word = new RegExp(`^(?:${config.wordPattern})$`);
  for (const w of ['get_input_buffer', 'x1', '48GiB', '0x1F']) assert.ok(word.test(w), w);
});

test('```msccl code blocks in Markdown are highlighted with source.msccl', async () => {
  const vsctm = require('vscode-textmate');
  const oniguruma = require('vscode-oniguruma');
  const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength)).catch(() => {});
  const injection = manifest.contributes.grammars.find((g) => g.injectTo);
  const files = {
    // A stand-in for VS Code's Markdown grammar: the injection only needs its scope name.
    'text.html.markdown': { scopeName: 'text.html.markdown', patterns: [] },
    'source.msccl': JSON.parse(fs.readFileSync(path.join(ext, 'syntaxes/msccl.tmLanguage.json'), 'utf8')),
    [injection.scopeName]: JSON.parse(fs.readFileSync(path.join(ext, injection.path), 'utf8')),
  };
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (p) => new oniguruma.OnigScanner(p),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scope) => (files[scope] ? vsctm.parseRawGrammar(JSON.stringify(files[scope]), `${scope}.json`) : null),
    getInjections: (scope) => (injection.injectTo.includes(scope) ? [injection.scopeName] : undefined),
  });
  const md = await registry.loadGrammar('text.html.markdown');
  let stack = vsctm.INITIAL;
  const found = {};
  for (const line of ['Text', '```msccl', 'let x = 4K // c', '```', 'let y = 1']) {
    const r = md.tokenizeLine(line, stack);
    for (const t of r.tokens) found[`${line}|${line.slice(t.startIndex, t.endIndex)}`] = t.scopes;
    stack = r.ruleStack;
  }
  assert.ok(found['let x = 4K // c|let'].includes('storage.type.let.msccl'));
  assert.ok(found['let x = 4K // c|let'].includes('meta.embedded.block.msccl'));
  assert.ok(found['let x = 4K // c|K'].includes('keyword.other.unit.suffix.msccl'));
  // After the closing fence, text is Markdown again.
  assert.deepEqual(found['let y = 1|let y = 1'], ['text.html.markdown']);
});
