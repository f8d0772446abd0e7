// Reads the words of the .msccl language from their single sources of truth:
//   - grammar/MscclLexer.g4 (and any other grammar/*.g4): the keywords (lexer rules whose whole
//     body is one lower-case word literal, e.g. `PARAM : 'param' ;`) and the size suffixes of
//     integer literals (the literals of the `SIZE_SUFFIX` fragment);
//   - compiler/include/msccl/elab/Builtins.def: the builtin functions, DSL classes, value types,
//     their methods and attributes, the enums with their members and the program options
//     (X-macros, MACRO_KINDS below).
// Produces a plain `Words` object (sorted, de-duplicated arrays) that every editor file is
// generated from (tools/editors/generate.mjs) and that the tests check the editors against.
// Errors: throws an Error naming the file when a source is missing or holds a macro this
// reader does not know (so a new kind of builtin cannot be silently missed).

import fs from 'node:fs';
import path from 'node:path';

/** Paths of the sources inside the repository rooted at `root`. */
export function sourcePaths(root) {
  const grammarDir = path.join(root, 'grammar');
  const g4 = fs.existsSync(grammarDir)
    ? fs.readdirSync(grammarDir).filter((f) => f.endsWith('.g4')).sort().map((f) => path.join(grammarDir, f))
    : [];
  return {
    g4,
    builtins: path.join(root, 'compiler', 'include', 'msccl', 'elab', 'Builtins.def'),
  };
}

const uniqSorted = (xs) => [...new Set(xs)].sort();

/** Removes // and /* *\/ comments from ANTLR or C text, keeping literals quoted by `quotes` intact. */
export function stripComments(text, quotes = `"'`) {
  let out = '';
  for (let i = 0; i < text.length; ) {
    const c = text[i];
    if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end < 0 ? text.length : end + 2;
      out += text.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop;
    } else if (quotes.includes(c)) {
      let j = i + 1;
      while (j < text.length && text[j] !== c && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Lexer rules of an ANTLR grammar: [{name, fragment, body}] (body without the trailing `;`). */
export function antlrRules(text) {
  const rules = [];
  const re = /^\s*(fragment\s+)?([A-Za-z_]\w*)\s*:([^;]*(?:'[^']*'[^;]*)*);/gm;
  const clean = stripComments(text, "'");
  for (const m of clean.matchAll(re)) rules.push({ name: m[2], fragment: !!m[1], body: m[3].trim() });
  return rules;
}

/** Keywords and size suffixes from the grammar files. */
export function readGrammarWords(g4Files) {
  if (g4Files.length === 0) throw new Error('no grammar/*.g4 file found');
  const keywords = [];
  const sizeSuffixes = [];
  for (const file of g4Files) {
    for (const rule of antlrRules(fs.readFileSync(file, 'utf8'))) {
      const single = /^'([a-z_][a-z0-9_]*)'(\s*->.*)?$/.exec(rule.body);
      if (single && !rule.fragment) keywords.push(single[1]);
      if (rule.name === 'SIZE_SUFFIX') {
        for (const lit of rule.body.matchAll(/'([^']*)'/g)) sizeSuffixes.push(lit[1]);
      }
    }
  }
  if (keywords.length === 0) throw new Error(`no keyword rule found in ${g4Files.join(', ')}`);
  // Longest first, so that an alternation tries `KiB` before `K`.
  const suffixes = uniqSorted(sizeSuffixes).sort((a, b) => b.length - a.length || a.localeCompare(b));
  return { keywords: uniqSorted(keywords), sizeSuffixes: suffixes };
}

/** Splits the argument text of a macro call at top-level commas. */
function splitArgs(text) {
  const args = [];
  let depth = 0;
  let cur = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < text.length && text[j] !== c) j += text[j] === '\\' ? 2 : 1;
      cur += text.slice(i, j + 1);
      i = j;
      continue;
    }
    if ('([{'.includes(c)) depth++;
    if (')]}'.includes(c)) depth--;
    if (c === ',' && depth === 0) {
      args.push(cur.trim());
      cur = '';
    } else cur += c;
  }
  if (cur.trim() !== '' || args.length) args.push(cur.trim());
  return args;
}

/** Macro invocations at the start of a line: [{macro, args, line}], `#` lines skipped. */
export function macroCalls(text) {
  const clean = stripComments(text);
  const calls = [];
  const re = /^[ \t]*([A-Z][A-Z0-9_]*)[ \t]*\(/gm;
  for (let m; (m = re.exec(clean)); ) {
    let depth = 1;
    let i = re.lastIndex;
    for (; i < clean.length && depth > 0; i++) {
      const c = clean[i];
      if (c === '"' || c === "'") {
        let j = i + 1;
        while (j < clean.length && clean[j] !== c) j += clean[j] === '\\' ? 2 : 1;
        i = j;
      } else if (c === '(') depth++;
      else if (c === ')') depth--;
    }
    const line = clean.slice(0, m.index).split('\n').length + (clean[m.index] === '\n' ? 1 : 0);
    calls.push({ macro: m[1], args: splitArgs(clean.slice(re.lastIndex, i - 1)), line });
    re.lastIndex = i;
  }
  return calls;
}

// What each X-macro of Builtins.def declares (see the comment at the top of that file).
// `fields` names the positional arguments this reader uses; the others (argument counts,
// types, defaults, summaries) are ignored. Parameter entries carry no new word.
export const MACRO_KINDS = {
  MSCCL_BUILTIN_FUNCTION: { kind: 'function', fields: ['name'] },
  MSCCL_BUILTIN_CLASS: { kind: 'class', fields: ['name'] },
  MSCCL_BUILTIN_TYPE: { kind: 'type', fields: ['name'] },
  MSCCL_BUILTIN_CTOR_PARAM: { kind: 'parameter', fields: ['owner', 'name'] },
  MSCCL_BUILTIN_METHOD: { kind: 'method', fields: ['owner', 'name'] },
  MSCCL_BUILTIN_METHOD_PARAM: { kind: 'parameter', fields: ['owner', 'method', 'name'] },
  MSCCL_BUILTIN_ATTR: { kind: 'attribute', fields: ['owner', 'name'] },
  MSCCL_BUILTIN_ENUM: { kind: 'enum', fields: ['name'] },
  MSCCL_BUILTIN_ENUM_MEMBER: { kind: 'member', fields: ['owner', 'name'] },
  MSCCL_BUILTIN_PROGRAM_OPTION: { kind: 'option', fields: ['name'] },
};

const identOf = (arg) => {
  const s = arg.replace(/^"(.*)"$/, '$1');
  return /^[A-Za-z_]\w*$/.test(s) ? s : null;
};

/** Functions, classes, methods and enums from Builtins.def. */
export function readBuiltins(defFile) {
  if (!fs.existsSync(defFile)) throw new Error(`builtin table not found: ${defFile}`);
  const functions = [];
  const classes = [];
  const types = [];
  const methods = {};
  const attributes = {};
  const programOptions = [];
  const enums = {};
  const unknown = new Set();
  for (const call of macroCalls(fs.readFileSync(defFile, 'utf8'))) {
    const spec = MACRO_KINDS[call.macro];
    if (!spec) {
      unknown.add(call.macro);
      continue;
    }
    const f = {};
    spec.fields.forEach((field, i) => {
      const id = identOf(call.args[i] ?? '');
      if (!id) throw new Error(`${defFile}:${call.line}: ${call.macro}: argument ${i + 1} (${field}) is not a name`);
      f[field] = id;
    });
    if (spec.kind === 'function') functions.push(f.name);
    else if (spec.kind === 'class') classes.push(f.name);
    else if (spec.kind === 'type') types.push(f.name);
    else if (spec.kind === 'option') programOptions.push(f.name);
    else if (spec.kind === 'attribute') (attributes[f.owner] ??= []).push(f.name);
    else if (spec.kind === 'method') (methods[f.owner] ??= []).push(f.name);
    else if (spec.kind === 'enum') enums[f.name] ??= [];
    else if (spec.kind === 'member') (enums[f.owner] ??= []).push(f.name);
  }
  if (unknown.size) {
    throw new Error(
      `${defFile}: unknown X-macro(s) ${[...unknown].join(', ')}: ` +
        'add them to MACRO_KINDS in tools/editors/gen/sources.mjs',
    );
  }
  if (functions.length + classes.length === 0) throw new Error(`${defFile}: no builtin found`);
  const sortMap = (m) => Object.fromEntries(Object.keys(m).sort().map((k) => [k, uniqSorted(m[k])]));
  return {
    functions: uniqSorted(functions),
    classes: uniqSorted(classes),
    types: uniqSorted(types),
    methods: sortMap(methods),
    attributes: sortMap(attributes),
    enums: sortMap(enums),
    programOptions: uniqSorted(programOptions),
  };
}

/** All the words, from the repository rooted at `root`. */
export function readWords(root, overrides = {}) {
  const paths = { ...sourcePaths(root), ...overrides };
  return { ...readGrammarWords(paths.g4), ...readBuiltins(paths.builtins) };
}

/** Attribute names of every class, de-duplicated and sorted. */
export function allAttributeNames(words) {
  return uniqSorted(Object.values(words.attributes).flat());
}

/** Method names of every class, de-duplicated and sorted. */
export function allMethodNames(words) {
  return uniqSorted(Object.values(words.methods).flat());
}
