// Builds the TextMate grammar of .msccl (VS Code, and every editor that reads TextMate grammars:
// Sublime Text, TextMate, Zed via tree-less fallbacks, GitHub Linguist, Shiki) from the `Words`
// of tools/editors/gen/sources.mjs. Produces a plain object, written as JSON to
// tools/editors/vscode/syntaxes/msccl.tmLanguage.json.
// Scope names are the standard ones (https://macromates.com/manual/en/language_grammars#naming_conventions
// and VS Code's): keyword.control.*, keyword.operator.*, keyword.other.*, storage.type.*,
// entity.name.function.*, support.function.*, support.class.*, variable.other.enummember,
// constant.numeric.*, string.quoted.double, comment.line.double-slash, comment.block,
// punctuation.*, meta.block; invalid.illegal.* marks text the compiler rejects.
// Errors: throws when a keyword the declaration rules rely on is missing from the grammar.

import { CATEGORIES, keywordGroups, longestFirst } from './categories.mjs';
import { allAttributeNames, allMethodNames } from './sources.mjs';

const ID = '[A-Za-z_][A-Za-z0-9_]*';
const alt = (words) => longestFirst(words).join('|');
const sc = (s) => `${s}.msccl`;

// Keywords that the hand-written rules below spell out.
const STRUCTURAL = ['fn', 'program', 'param', 'let', 'for', 'in'];

/** The TextMate grammar (an object to serialize as JSON). */
export function tmLanguage(words) {
  const missing = STRUCTURAL.filter((k) => !words.keywords.includes(k));
  if (missing.length) throw new Error(`keywords missing from the grammar: ${missing.join(', ')} (update gen/textmate.mjs)`);
  const groups = keywordGroups(words.keywords);
  const methods = allMethodNames(words);
  const attributes = allAttributeNames(words);
  const enumNames = Object.keys(words.enums);
  const suffix = words.sizeSuffixes.length ? `(${alt(words.sizeSuffixes)})?` : '()?';

  const repository = {
    comments: {
      patterns: [
        {
          name: sc('comment.block'),
          begin: '/\\*',
          end: '\\*/',
          beginCaptures: { 0: { name: sc('punctuation.definition.comment.begin') } },
          endCaptures: { 0: { name: sc('punctuation.definition.comment.end') } },
        },
        {
          name: sc('comment.line.double-slash'),
          match: '(//).*',
          captures: { 1: { name: sc('punctuation.definition.comment') } },
        },
      ],
    },
    string: {
      name: sc('string.quoted.double'),
      begin: '"',
      end: '(")|([^"\\n]?(?=\\n))',
      beginCaptures: { 0: { name: sc('punctuation.definition.string.begin') } },
      endCaptures: {
        1: { name: sc('punctuation.definition.string.end') },
        2: { name: sc('invalid.illegal.unterminated-string') },
      },
      patterns: [
        { name: sc('constant.character.escape'), match: '\\\\["\\\\nt]' },
        { name: sc('invalid.illegal.unknown-escape'), match: '\\\\.' },
      ],
    },
    numbers: {
      patterns: [
        {
          name: sc('constant.numeric.integer.hexadecimal'),
          match: `\\b0[xX][0-9A-Fa-f_]+${suffix}\\b`,
          captures: { 1: { name: sc('keyword.other.unit.suffix') } },
        },
        {
          name: sc('constant.numeric.integer.decimal'),
          match: `\\b[0-9][0-9_]*${suffix}\\b`,
          captures: { 1: { name: sc('keyword.other.unit.suffix') } },
        },
        { name: sc('invalid.illegal.numeric'), match: '\\b[0-9][A-Za-z0-9_]*' },
      ],
    },
    'enum-members': {
      patterns: enumNames
        .filter((e) => words.enums[e].length)
        .map((e) => ({
          match: `\\b(${e})\\s*(\\.)\\s*(${alt(words.enums[e])})\\b`,
          captures: {
            1: { name: sc('support.class.enum') },
            2: { name: sc('punctuation.accessor') },
            3: { name: `${sc('support.constant.enum')} ${sc('variable.other.enummember')}` },
          },
        })),
    },
    'member-access': {
      patterns: [
        ...(methods.length
          ? [
              {
                match: `(\\.)\\s*(${alt(methods)})\\s*(?=\\()`,
                captures: { 1: { name: sc('punctuation.accessor') }, 2: { name: sc('support.function.method') } },
              },
            ]
          : []),
        {
          match: `(\\.)\\s*(${ID})\\s*(?=\\()`,
          captures: { 1: { name: sc('punctuation.accessor') }, 2: { name: sc('entity.name.function.member') } },
        },
        ...(attributes.length
          ? [
              {
                match: `(\\.)\\s*(${alt(attributes)})\\b`,
                captures: { 1: { name: sc('punctuation.accessor') }, 2: { name: sc('support.variable.property') } },
              },
            ]
          : []),
        {
          match: `(\\.)\\s*(${ID})`,
          captures: { 1: { name: sc('punctuation.accessor') }, 2: { name: sc('variable.other.property') } },
        },
      ],
    },
    keywords: {
      patterns: Object.entries(groups).map(([cat, ws]) => ({
        name: sc(CATEGORIES[cat].scope),
        match: `\\b(?:${alt(ws)})\\b`,
      })),
    },
    builtins: {
      patterns: [
        ...(words.classes.length ? [{ name: sc('support.class'), match: `\\b(?:${alt(words.classes)})\\b` }] : []),
        ...(enumNames.length ? [{ name: sc('support.class.enum'), match: `\\b(?:${alt(enumNames)})\\b` }] : []),
        ...(words.functions.length
          ? [{ name: sc('support.function.builtin'), match: `\\b(?:${alt(words.functions)})\\b(?=\\s*\\()` }]
          : []),
      ],
    },
    'function-call': {
      name: sc('entity.name.function.call'),
      match: `\\b${ID}\\b(?=\\s*\\()`,
    },
    identifier: { name: sc('variable.other.readwrite'), match: `\\b${ID}\\b` },
    map: {
      name: sc('meta.structure.dictionary'),
      begin: '(?:(?<=[=(,:\\[])|(?<=\\breturn))\\s*(\\{)',
      end: '\\}',
      beginCaptures: { 1: { name: sc('punctuation.definition.dictionary.begin') } },
      endCaptures: { 0: { name: sc('punctuation.definition.dictionary.end') } },
      patterns: [
        { name: sc('punctuation.separator.dictionary.key-value'), match: ':' },
        { include: '#expression' },
      ],
    },
    block: {
      name: sc('meta.block'),
      begin: '\\{',
      end: '\\}',
      beginCaptures: { 0: { name: sc('punctuation.section.block.begin.bracket.curly') } },
      endCaptures: { 0: { name: sc('punctuation.section.block.end.bracket.curly') } },
      patterns: [{ include: '$self' }],
    },
    parens: {
      name: sc('meta.parens'),
      begin: '\\(',
      end: '\\)',
      beginCaptures: { 0: { name: sc('punctuation.section.parens.begin.bracket.round') } },
      endCaptures: { 0: { name: sc('punctuation.section.parens.end.bracket.round') } },
      patterns: [{ include: '#comments' }, { include: '#keyword-argument' }, { include: '#expression' }],
    },
    'keyword-argument': {
      match: `\\b(${ID})\\s*(=)(?!=)`,
      captures: { 1: { name: sc('variable.parameter') }, 2: { name: sc('keyword.operator.assignment') } },
    },
    brackets: {
      name: sc('meta.brackets'),
      begin: '\\[',
      end: '\\]',
      beginCaptures: { 0: { name: sc('punctuation.section.brackets.begin.bracket.square') } },
      endCaptures: { 0: { name: sc('punctuation.section.brackets.end.bracket.square') } },
      patterns: [{ name: sc('punctuation.separator.slice'), match: ':' }, { include: '#expression' }],
    },
    operators: {
      patterns: [
        { name: sc('keyword.operator.assignment.compound'), match: '[-+*]=' },
        { name: sc('keyword.operator.bitwise'), match: '<<|>>|[&|^]' },
        { name: sc('keyword.operator.comparison'), match: '==|!=|<=|>=|<|>' },
        { name: sc('keyword.operator.arithmetic'), match: '\\*\\*|[-+*/%]' },
        { name: sc('keyword.operator.assignment'), match: '=' },
        { name: sc('punctuation.separator.comma'), match: ',' },
        { name: sc('punctuation.terminator.statement'), match: ';' },
        { name: sc('punctuation.separator.colon'), match: ':' },
        { name: sc('punctuation.accessor'), match: '\\.' },
      ],
    },
    invalid: {
      patterns: [
        { name: sc('invalid.illegal.stray-bracket'), match: '[)\\]}]' },
        { name: sc('invalid.illegal.character'), match: '\\S' },
      ],
    },
    expression: {
      patterns: [
        { include: '#comments' },
        { include: '#string' },
        { include: '#numbers' },
        { include: '#enum-members' },
        { include: '#member-access' },
        { include: '#keywords' },
        { include: '#builtins' },
        { include: '#function-call' },
        { include: '#identifier' },
        { include: '#map' },
        { include: '#block' },
        { include: '#parens' },
        { include: '#brackets' },
        { include: '#invalid-comment-end' },
        { include: '#operators' },
        { include: '#invalid' },
      ],
    },
    'invalid-comment-end': { name: sc('invalid.illegal.stray-comment-end'), match: '\\*/' },
    'fn-declaration': {
      name: sc('meta.function'),
      begin: `\\b(fn)\\s+(${ID})\\s*(\\()`,
      end: '\\)',
      beginCaptures: {
        1: { name: sc('storage.type.function') },
        2: { name: sc('entity.name.function') },
        3: { name: sc('punctuation.definition.parameters.begin.bracket.round') },
      },
      endCaptures: { 0: { name: sc('punctuation.definition.parameters.end.bracket.round') } },
      patterns: [
        { include: '#comments' },
        {
          name: sc('meta.parameter.default'),
          begin: '=',
          end: '(?=[,)])',
          beginCaptures: { 0: { name: sc('keyword.operator.assignment') } },
          patterns: [{ include: '#expression' }],
        },
        { name: sc('variable.parameter'), match: ID },
        { name: sc('punctuation.separator.parameters'), match: ',' },
        { name: sc('invalid.illegal.character'), match: '\\S' },
      ],
    },
    'program-declaration': {
      name: sc('meta.program'),
      begin: `\\b(program)\\s+(${ID})\\s*(\\()`,
      end: '\\)',
      beginCaptures: {
        1: { name: sc('storage.type.program') },
        2: { name: sc('entity.name.function.program') },
        3: { name: sc('punctuation.definition.parameters.begin.bracket.round') },
      },
      endCaptures: { 0: { name: sc('punctuation.definition.parameters.end.bracket.round') } },
      patterns: [
        { include: '#comments' },
        ...(words.programOptions.length
          ? [
              {
                match: `\\b(${alt(words.programOptions)})\\s*(=)(?!=)`,
                captures: {
                  1: { name: `${sc('support.variable.option')} ${sc('variable.parameter')}` },
                  2: { name: sc('keyword.operator.assignment') },
                },
              },
              {
                match: `\\b(${ID})\\s*(=)(?!=)`,
                captures: {
                  1: { name: sc('invalid.illegal.unknown-option') },
                  2: { name: sc('keyword.operator.assignment') },
                },
              },
            ]
          : [{ include: '#keyword-argument' }]),
        { include: '#expression' },
      ],
    },
    'param-declaration': {
      match: `\\b(param)\\s+(${ID})`,
      captures: { 1: { name: sc('storage.type.param') }, 2: { name: sc('variable.other.constant.param') } },
    },
    'let-declaration': {
      match: `\\b(let)\\s+(${ID})`,
      captures: { 1: { name: sc('storage.type.let') }, 2: { name: sc('variable.other.readwrite.declaration') } },
    },
    'for-header': {
      patterns: [
        {
          match: `\\b(for)\\s+(${ID})\\s+(in)\\b`,
          captures: {
            1: { name: sc('keyword.control.loop') },
            2: { name: sc('variable.other.readwrite.declaration') },
            3: { name: sc('keyword.control.loop.in') },
          },
        },
        {
          // for (a, b) in e
          match: `\\b(for)\\s*(\\([\\sA-Za-z0-9_,]*\\))\\s*(in)\\b`,
          captures: {
            1: { name: sc('keyword.control.loop') },
            2: {
              patterns: [
                { name: sc('variable.other.readwrite.declaration'), match: ID },
                { name: sc('punctuation.separator.comma'), match: ',' },
                { name: sc('punctuation.section.parens.bracket.round'), match: '[()]' },
              ],
            },
            3: { name: sc('keyword.control.loop.in') },
          },
        },
      ],
    },
  };

  return {
    $schema: 'https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json',
    name: 'MSCCL',
    scopeName: 'source.msccl',
    fileTypes: ['msccl'],
    comment:
      'GENERATED by tools/editors/generate.mjs from grammar/*.g4 and compiler/include/msccl/elab/Builtins.def; do not edit.',
    patterns: [
      { include: '#comments' },
      { include: '#fn-declaration' },
      { include: '#program-declaration' },
      { include: '#param-declaration' },
      { include: '#let-declaration' },
      { include: '#for-header' },
      { include: '#expression' },
    ],
    repository,
  };
}
