// A scripted LSP session against the real msccl-lsp binary through vscode-jsonrpc (the JSON-RPC
// library under VS Code's language client): open a stdlib program, introduce a typo and see the
// diagnostic at the right range, hover a builtin, complete a method and a keyword argument,
// jump to a definition in an imported module. MSCCL_LSP names the binary (set by ctest).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import rpc from 'vscode-jsonrpc/node.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const server = process.env.MSCCL_LSP;

/** Line/character of the first `needle` in `text` (plus `delta` characters). */
function pos(text, needle, delta = 0) {
  const off = text.indexOf(needle);
  assert.ok(off >= 0, `"${needle}" not found`);
  const before = text.slice(0, off);
  const line = before.split('\n').length - 1;
  return { line, character: off - (before.lastIndexOf('\n') + 1) + delta };
}

/** The summary of builtin `name` in Builtins.def (the server must show the table's text). */
function builtinSummary(name) {
  const def = fs.readFileSync(path.join(root, 'compiler/include/msccl/elab/Builtins.def'), 'utf8');
  const m = def.match(new RegExp(`MSCCL_BUILTIN_FUNCTION\\(${name}, [^,]+, [^,]+, "((?:[^"\\\\]|\\\\.)*)"\\)`));
  assert.ok(m, `no builtin ${name}`);
  return m[1].replace(/\\"/g, '"');
}

test('scripted session with msccl-lsp', { skip: !server && 'MSCCL_LSP not set' }, async () => {
  const proc = spawn(server, ['--stdio'], { stdio: ['pipe', 'pipe', 'inherit'] });
  proc.exited = new Promise((resolve) => proc.on('exit', resolve));
  const conn = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout), new rpc.StreamMessageWriter(proc.stdin));
  const published = [];
  let waiter = null;
  conn.onNotification('textDocument/publishDiagnostics', (p) => {
    published.push(p);
    if (waiter && waiter.pred(p)) {
      waiter.resolve(p);
      waiter = null;
    }
  });
  const diagnosticsWhere = (pred) =>
    new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no matching diagnostics within 10 s')), 10000);
      waiter = { pred, resolve: (p) => { clearTimeout(t); resolve(p); } };
    });
  conn.listen();
  try {
    await session(conn, diagnosticsWhere, proc);
  } finally {
    proc.kill();
    conn.dispose();
  }
});

async function session(conn, diagnosticsWhere, proc) {

  const init = await conn.sendRequest('initialize', { processId: process.pid, rootUri: pathToFileURL(root).href, capabilities: {} });
  assert.equal(init.serverInfo.name, 'msccl-lsp');
  assert.equal(init.capabilities.hoverProvider, true);
  await conn.sendNotification('initialized', {});

  const file = path.join(root, 'stdlib/allreduce/ring.msccl');
  const uri = pathToFileURL(file).href;
  const text = fs.readFileSync(file, 'utf8');
  let got = diagnosticsWhere((p) => p.uri === uri);
  await conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'msccl', version: 1, text } });
  assert.deepEqual((await got).diagnostics, [], 'the stdlib program has no diagnostics');

  // A typo: ring_mesh -> ring_mash. The diagnostic covers the misspelt name.
  const at = pos(text, 'ring_mesh(');
  got = diagnosticsWhere((p) => p.uri === uri && p.version === 2);
  await conn.sendNotification('textDocument/didChange', {
    textDocument: { uri, version: 2 },
    contentChanges: [{ range: { start: { line: at.line, character: at.character + 6 }, end: { line: at.line, character: at.character + 7 } }, text: 'a' }],
  });
  const diags = (await got).diagnostics;
  assert.equal(diags.length, 1);
  assert.deepEqual(diags[0].range, { start: at, end: { line: at.line, character: at.character + 9 } });
  assert.equal(diags[0].severity, 1);
  assert.match(diags[0].message, /unknown name `ring_mash`.*did you mean `ring_mesh`/);

  // Fix it again: the diagnostics go away.
  got = diagnosticsWhere((p) => p.uri === uri && p.version === 3);
  await conn.sendNotification('textDocument/didChange', { textDocument: { uri, version: 3 }, contentChanges: [{ text }] });
  assert.deepEqual((await got).diagnostics, []);

  // Hover a builtin: the text of Builtins.def.
  const hover = await conn.sendRequest('textDocument/hover', { textDocument: { uri }, position: pos(text, 'range(ranks)', 2) });
  assert.ok(hover.contents.value.includes(builtinSummary('range')), hover.contents.value);

  // Go to a definition in an imported module.
  const defs = await conn.sendRequest('textDocument/definition', { textDocument: { uri }, position: pos(text, 'ring_allreduce_chunk(', 3) });
  assert.equal(defs.length, 1);
  const target = fileURLToPath(defs[0].uri);
  assert.equal(path.relative(root, target), path.join('stdlib', 'common', 'ring.msccl'));
  const lib = fs.readFileSync(target, 'utf8');
  assert.deepEqual(defs[0].range.start, pos(lib, 'fn ring_allreduce_chunk(', 3));

  // Complete a method of a statically known class, then a keyword argument of the call typed.
  const typed = text.replace('    let n = ranks * chunks\n', '    let n = ranks * chunks\n    let rk = Rank(0)\n    rk.\n');
  await conn.sendNotification('textDocument/didChange', { textDocument: { uri, version: 4 }, contentChanges: [{ text: typed }] });
  const methods = await conn.sendRequest('textDocument/completion', { textDocument: { uri }, position: pos(typed, '    rk.\n', 7) });
  const labels = methods.items.map((i) => i.label);
  assert.ok(labels.includes('get_input_buffer'), labels.join(' '));
  assert.ok(labels.includes('copy'));
  assert.ok(!labels.includes('signal'), 'a MemoryChannel method offered on a Rank');
  const typed2 = typed.replace('    rk.\n', '    rk.copy(\n');
  await conn.sendNotification('textDocument/didChange', { textDocument: { uri, version: 5 }, contentChanges: [{ text: typed2 }] });
  const kw = await conn.sendRequest('textDocument/completion', { textDocument: { uri }, position: pos(typed2, 'rk.copy(\n', 8) });
  const kwLabels = kw.items.map((i) => i.label);
  for (const k of ['dst_chunk =', 'src_chunk =', 'tb =']) assert.ok(kwLabels.includes(k), kwLabels.join(' '));

  await conn.sendRequest('shutdown');
  // `exit` is written directly and stdin closed behind it, so that the end of the session does
  // not depend on the library's write queue; the server exits 0 after shutdown + exit.
  const exit = JSON.stringify({ jsonrpc: '2.0', method: 'exit' });
  proc.stdin.end(`Content-Length: ${Buffer.byteLength(exit)}\r\n\r\n${exit}`);
  const timeout = new Promise((resolve) => setTimeout(() => resolve('timeout'), 10000).unref());
  assert.equal(await Promise.race([proc.exited, timeout]), 0);
}

// The VS Code extension starts the server named by `msccl.server.path` through
// vscode-languageclient over stdio for msccl documents. VS Code's `vscode` module and the client
// library are stood in for by recorders (the extension's own code runs unchanged).
test('the VS Code extension starts msccl-lsp from its setting', async () => {
  const ext = path.join(root, 'tools/editors/vscode');
  const manifest = JSON.parse(fs.readFileSync(path.join(ext, 'package.json'), 'utf8'));
  assert.equal(manifest.main, './extension.js');
  assert.ok(manifest.activationEvents.includes('onLanguage:msccl'));
  assert.ok(manifest.dependencies['vscode-languageclient']);
  const props = manifest.contributes.configuration.properties;
  assert.equal(props['msccl.server.path'].default, 'msccl-lsp');

  const { createRequire } = await import('node:module');
  const Module = (await import('node:module')).default;
  const started = [];
  const settings = { 'server.path': '/opt/msccl/bin/msccl-lsp', defines: { ranks: 16 } };
  const fakeVscode = {
    workspace: {
      getConfiguration: () => ({ get: (k, d) => (k in settings ? settings[k] : d) }),
      createFileSystemWatcher: (glob) => ({ glob }),
      onDidChangeConfiguration: () => ({ dispose() {} }),
    },
    window: { showWarningMessage: (m) => started.push({ warning: m }), showInformationMessage() {} },
  };
  class LanguageClient {
    constructor(id, name, serverOptions, clientOptions) {
      Object.assign(this, { id, serverOptions, clientOptions });
    }
    async start() { started.push(this); }
    async stop() {}
  }
  const fakes = { vscode: fakeVscode, 'vscode-languageclient/node': { LanguageClient, TransportKind: { stdio: 0 } } };
  const origLoad = Module._load;
  Module._load = function (request, ...rest) {
    return request in fakes ? fakes[request] : origLoad.call(this, request, ...rest);
  };
  try {
    const extension = createRequire(import.meta.url)(path.join(ext, 'extension.js'));
    await extension.activate({ subscriptions: [] });
  } finally {
    Module._load = origLoad;
  }
  assert.equal(started.length, 1);
  const c = started[0];
  assert.equal(c.serverOptions.command, '/opt/msccl/bin/msccl-lsp');
  assert.equal(c.serverOptions.transport, 0);
  assert.ok(c.clientOptions.documentSelector.some((s) => s.language === 'msccl'));
  assert.deepEqual(c.clientOptions.initializationOptions.defines, { ranks: 16 });
  assert.equal(c.clientOptions.synchronize.configurationSection, 'msccl');
});

// docs/editor.md's picture of a diagnostic is drawn from this server's output and is current.
test('the diagnostic picture of docs/editor.md is current', { skip: !server && 'MSCCL_LSP not set' }, async () => {
  const { renderDiagnostic, svgPath } = await import('../../tools/editors/render-lsp.mjs');
  const fresh = await renderDiagnostic(server);
  assert.ok(fresh.includes('has no parameter `datasync`'), 'the sample gives its diagnostic');
  assert.equal(fs.readFileSync(svgPath, 'utf8'), fresh, 'out of date: run node tools/editors/render-lsp.mjs build/tools/msccl-lsp/msccl-lsp');
});
