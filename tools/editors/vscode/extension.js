// The MSCCL extension's code: starts the msccl-lsp language server (diagnostics, hover,
// completion, go to definition, references, outline, semantic colours) for .msccl files through
// vscode-languageclient. Without the server (setting `msccl.server.path`, default `msccl-lsp`
// on the PATH) the extension still highlights; it shows one warning.
const vscode = require('vscode');
const { LanguageClient, TransportKind } = require('vscode-languageclient/node');

let client;

/** The analysis settings sent to the server (msccl.defines, msccl.includeDirs, ...). */
function analysisSettings() {
  const cfg = vscode.workspace.getConfiguration('msccl');
  return {
    defines: cfg.get('defines', {}),
    includeDirs: cfg.get('includeDirs', []),
    maxLoopIterations: cfg.get('maxLoopIterations', 10000000),
  };
}

async function activate(context) {
  const cfg = vscode.workspace.getConfiguration('msccl');
  if (!cfg.get('server.enabled', true)) return;
  const command = cfg.get('server.path') || 'msccl-lsp';
  const serverOptions = { command, args: cfg.get('server.args', []), transport: TransportKind.stdio };
  const clientOptions = {
    documentSelector: [{ scheme: 'file', language: 'msccl' }, { scheme: 'untitled', language: 'msccl' }],
    initializationOptions: analysisSettings(),
    synchronize: {
      configurationSection: 'msccl',
      fileEvents: vscode.workspace.createFileSystemWatcher('**/.mscclc'),
    },
  };
  client = new LanguageClient('msccl', 'MSCCL language server', serverOptions, clientOptions);
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('msccl.server'))
        vscode.window.showInformationMessage('msccl: reload the window to restart the language server with the new settings.');
    }),
  );
  try {
    await client.start();
  } catch (err) {
    vscode.window.showWarningMessage(`msccl: cannot start the language server \`${command}\` (${err.message}); ` +
      'set msccl.server.path to the msccl-lsp binary. Highlighting works without it.');
  }
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
