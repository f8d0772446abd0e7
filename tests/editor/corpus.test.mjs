// Every real .msccl program tokenizes without an invalid scope and leaves no block, string or
// comment open: the files of stdlib/ (any number, also none), the samples of tests/editor, and
// the examples of the shared reference folder ($MSCCL_SHARED_DIR/examples; skipped if absent).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { tokenize, invalidTokens, repoRoot } from './lib/textmate.mjs';

/** .msccl files under `dir`, recursively, sorted; [] when `dir` does not exist. */
function mscclFiles(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.msccl'))
    .map((e) => path.join(e.parentPath ?? e.path, e.name))
    .sort();
}

async function checkFile(file) {
  const tok = await tokenize(fs.readFileSync(file, 'utf8'));
  const bad = invalidTokens(tok).map((t) => `${path.basename(file)}:${t.line + 1}:${t.start + 1}: ${JSON.stringify(t.text)} ${t.scopes.at(-1)}`);
  assert.deepEqual(bad, [], `invalid scopes in ${file}`);
  assert.ok(tok.closed, `${file}: a block, string or comment is still open at the end`);
}

test('stdlib/', async (t) => {
  const files = mscclFiles(path.join(repoRoot, 'stdlib'));
  if (files.length === 0) t.diagnostic('stdlib/ has no .msccl file yet');
  for (const f of files) await t.test(path.relative(repoRoot, f), () => checkFile(f));
});

test('tests/editor/samples/', async (t) => {
  const files = mscclFiles(path.join(repoRoot, 'tests/editor/samples'));
  assert.ok(files.length > 0);
  for (const f of files) await t.test(path.relative(repoRoot, f), () => checkFile(f));
});

test('shared examples', async (t) => {
  const shared = process.env.MSCCL_SHARED_DIR ?? path.join(repoRoot, '..', 'shared');
  const files = mscclFiles(path.join(shared, 'examples'));
  if (files.length === 0) {
    t.skip(`no .msccl file in ${shared}/examples (set MSCCL_SHARED_DIR)`);
    return;
  }
  for (const f of files) await t.test(path.basename(f), () => checkFile(f));
});
