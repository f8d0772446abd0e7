// The real TextMate engine (vscode-textmate + vscode-oniguruma, the ones VS Code uses) loaded with
// the .msccl grammar of tools/editors/vscode/syntaxes/msccl.tmLanguage.json. Used by the tests in
// tests/editor and by tools/editors/render-sample.mjs (the picture in docs/editor.md).
// tokenize(text) returns per line the tokens {line, start, end, text, scopes}; the rule stack
// after the last line tells whether every block, string and comment was closed.

import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '..', '..', '..');
export const grammarPath = path.join(repoRoot, 'tools/editors/vscode/syntaxes/msccl.tmLanguage.json');
const require = createRequire(path.join(here, '..', 'package.json'));

let registryPromise;

async function createRegistry(theme) {
  const vsctm = require('vscode-textmate');
  const oniguruma = require('vscode-oniguruma');
  const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scopeName) => {
      if (scopeName !== 'source.msccl') return null;
      return vsctm.parseRawGrammar(fs.readFileSync(grammarPath, 'utf8'), grammarPath);
    },
    theme,
  });
  return { vsctm, registry, grammar: await registry.loadGrammar('source.msccl') };
}

/** {vsctm, registry, grammar}, created once per process (no theme). */
export function engine() {
  registryPromise ??= createRegistry(undefined);
  return registryPromise;
}

/** A separate engine whose registry uses `theme` ({settings: [...]}), for coloured output. */
export function themedEngine(theme) {
  return createRegistry(theme);
}

/** Tokens of `text`: {lines: [[{line, start, end, text, scopes}]], endStack, closed}. */
export async function tokenize(text) {
  const { vsctm, grammar } = await engine();
  let stack = vsctm.INITIAL;
  const lines = [];
  text.split(/\r?\n/).forEach((lineText, line) => {
    const r = grammar.tokenizeLine(lineText, stack);
    lines.push(
      r.tokens
        .map((t) => ({
          line,
          start: t.startIndex,
          end: Math.min(t.endIndex, lineText.length),
          text: lineText.slice(t.startIndex, t.endIndex),
          scopes: t.scopes,
        }))
        .filter((t) => t.end > t.start || lineText.length === 0),
    );
    stack = r.ruleStack;
  });
  // The initial stack has depth 1; anything deeper is an unclosed block, string or comment.
  return { lines, endStack: stack, closed: stack.depth === 1 };
}

/** Every token of a tokenized text, flattened. */
export const allTokens = (tok) => tok.lines.flat();

/** Tokens that carry an invalid.* scope. */
export const invalidTokens = (tok) =>
  allTokens(tok).filter((t) => t.scopes.some((s) => s.startsWith('invalid')));

/** The innermost scope of the first token whose text is exactly `word` (after `from` on its line). */
export function findToken(tok, word, { line, nth = 0 } = {}) {
  const hits = allTokens(tok).filter((t) => t.text === word && (line === undefined || t.line === line));
  return hits[nth];
}
