// ctest entry point of the editor tests: `node run.mjs [--npm] [--needs PROG] FILE.test.mjs ...`
// runs node's test runner on the given files. Exits 77 (ctest SKIP_RETURN_CODE) with a message
// when --npm is given and the npm packages are not installed (the project's setup runs `npm ci`
// in tests/editor once; tests then run offline), or when PROG is not on the PATH.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
// `--npm`: the test files load npm packages (vscode-textmate, vscode-oniguruma, highlight.js).
if (args.includes('--npm')) {
  args.splice(args.indexOf('--npm'), 1);
  const needed = ['vscode-textmate', 'vscode-oniguruma', 'highlight.js', 'vscode-jsonrpc'];
  const missing = needed.filter((p) => !fs.existsSync(path.join(here, 'node_modules', p, 'package.json')));
  if (missing.length) {
    console.log(`SKIPPED: npm packages ${missing.join(', ')} not installed; run: cd tests/editor && npm ci`);
    process.exit(77);
  }
}
// `--needs PROGRAM`: skip (77) when PROGRAM is not on the PATH (e.g. vim for vim.test.mjs).
for (let i = args.indexOf('--needs'); i >= 0; i = args.indexOf('--needs')) {
  const prog = args[i + 1];
  args.splice(i, 2);
  const found = (process.env.PATH ?? '').split(path.delimiter).some((d) => d && fs.existsSync(path.join(d, prog)));
  if (!found) {
    console.log(`SKIPPED: ${prog} not found on the PATH`);
    process.exit(77);
  }
}
const files = args.map((f) => path.resolve(here, f));
const r = spawnSync(process.execPath, ['--test', '--test-reporter=spec', ...files], { stdio: 'inherit', cwd: here });
process.exit(r.status ?? 1);
