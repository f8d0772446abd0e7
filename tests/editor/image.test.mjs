// The picture in docs/editor.md (docs/images/editor-highlight.svg) is what
// tools/editors/render-sample.mjs makes from the real tokenizer output, and the theme colours
// reach the tokens (keywords, classes, numbers, strings, comments, enum members).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { colouredLines, renderShowcase, samplePath, svgPath } from '../../tools/editors/render-sample.mjs';

test('docs/images/editor-highlight.svg is up to date (node tools/editors/render-sample.mjs)', async () => {
  assert.ok(fs.existsSync(svgPath), svgPath);
  assert.equal(fs.readFileSync(svgPath, 'utf8'), await renderShowcase());
});

test('the Dark+ colours reach the tokens', async () => {
  const lines = await colouredLines(fs.readFileSync(samplePath, 'utf8'));
  const colour = {};
  for (const t of lines.flat()) colour[t.text.trim()] ??= t.color;
  const expect = {
    program: '#569CD6', param: '#569CD6', let: '#569CD6', for: '#C586C0', return: '#C586C0',
    true: '#569CD6', peers: '#DCDCAA', range: '#DCDCAA', get_input_buffer: '#DCDCAA',
    AllReduce: '#4EC9B0', MemoryChannel: '#4EC9B0', SyncType: '#4EC9B0', after: '#4FC1FF',
    '1MiB': '#B5CEA8', '4K': '#B5CEA8', '"LL"': '#CE9178', tb: '#9CDCFE', '=': '#D4D4D4',
    '/* per chunk, in bytes */': '#6A9955',
  };
  for (const [text, c] of Object.entries(expect)) assert.equal(colour[text], c, text);
  const svg = fs.readFileSync(svgPath, 'utf8');
  assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.ok(svg.includes('<tspan fill="#4EC9B0">AllReduce</tspan>'));
  assert.equal((svg.match(/<text /g) ?? []).length > lines.length, true);
});
