// The highlight.js language (tools/editors/highlightjs/msccl.js), run by highlight.js itself:
// it classes each kind of token of samples/scopes.msccl, handles every real program without an
// illegal match, and registers itself when loaded by a <script> tag after highlight.js.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { createRequire } from 'node:module';
import { repoRoot } from './lib/textmate.mjs';

const require = createRequire(import.meta.url);
const langFile = path.join(repoRoot, 'tools/editors/highlightjs/msccl.js');
const hljs = require('highlight.js/lib/core');
hljs.registerLanguage('msccl', require(langFile));
const highlight = (src) => hljs.highlight(src, { language: 'msccl', ignoreIllegals: false });
const sample = fs.readFileSync(path.join(repoRoot, 'tests/editor/samples/scopes.msccl'), 'utf8');

test('classes of the sample tokens', () => {
  const html = highlight(sample).value;
  const expect = [
    ['keyword', 'import'], ['keyword', 'program'], ['keyword', 'fn'], ['keyword', 'with'],
    ['title function_', 'pairs'], ['title function_', 'sample'],
    ['literal', 'true'], ['literal', 'none'],
    ['built_in', 'range'], ['built_in', 'print'],
    ['type', 'AllReduce'], ['type', 'MemoryChannel'], ['type', 'SyncType'],
    ['variable constant_', 'both'], ['variable constant_', 'scratch'],
    ['title function_ invoke__', 'get_input_buffer'], ['title function_ invoke__', 'helper'],
    ['number', '0x1F_FF'], ['number', '48GiB'], ['number', '4K'], ['number', '1_000'],
    ['string', '&quot;stdlib/sync.msccl&quot;'], ['char escape_', '\\n'],
    ['comment', '// Sample for tests/editor: one of every token kind (see scopes.test.mjs).'],
  ];
  for (const [cls, text] of expect) assert.ok(html.includes(`<span class="hljs-${cls}">${text}</span>`), `${cls}: ${text}`);
  assert.match(html, /<span class="hljs-comment">\/\* A block comment\n {3}over two lines\. \*\/<\/span>/);
});

test('real programs: no illegal match, recognised as msccl', () => {
  const files = [path.join(repoRoot, 'tests/editor/samples/scopes.msccl')];
  const stdlib = path.join(repoRoot, 'stdlib');
  if (fs.existsSync(stdlib)) {
    for (const e of fs.readdirSync(stdlib, { recursive: true })) if (String(e).endsWith('.msccl')) files.push(path.join(stdlib, String(e)));
  }
  const examples = path.join(process.env.MSCCL_SHARED_DIR ?? path.join(repoRoot, '..', 'shared'), 'examples');
  if (fs.existsSync(examples)) {
    for (const e of fs.readdirSync(examples)) if (e.endsWith('.msccl')) files.push(path.join(examples, e));
  }
  for (const f of files) {
    const r = highlight(fs.readFileSync(f, 'utf8'));
    assert.equal(r.illegal, false, f);
    assert.ok(r.relevance > 0, f);
  }
});

test('an unterminated string ends at the end of its line', () => {
  const html = highlight('let s = "open\nlet t = 1').value;
  assert.ok(html.includes('<span class="hljs-string">&quot;open</span>\n<span class="hljs-keyword">let</span>'), html);
});

test('loaded by a <script> tag, it registers itself with the global hljs', () => {
  const registered = {};
  const context = { hljs: { registerLanguage: (name, fn) => { registered[name] = fn; } } };
  vm.runInNewContext(fs.readFileSync(langFile, 'utf8'), context);
  assert.equal(typeof registered.msccl, 'function');
  assert.equal(registered.msccl(hljs).name, 'MSCCL');
});
