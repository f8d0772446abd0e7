// How each keyword of the grammar is coloured, per editor. Consumes the keyword list read from
// grammar/*.g4; produces groups {category: [keywords]}. A keyword that is not in KEYWORD_CATEGORY
// (a keyword added to the grammar later) falls into the `other` category, so it is still
// highlighted as a keyword (TextMate keyword.other) until someone gives it a better place here.

export const KEYWORD_CATEGORY = {
  import: 'import',
  param: 'storage',
  fn: 'storage',
  program: 'storage',
  let: 'storage',
  for: 'loop',
  if: 'conditional',
  else: 'conditional',
  with: 'with',
  return: 'flow',
  break: 'flow',
  continue: 'flow',
  and: 'operator',
  or: 'operator',
  not: 'operator',
  in: 'operator',
  true: 'boolean',
  false: 'boolean',
  none: 'none',
};

/** Per category: TextMate scope (without the `.msccl` suffix), Vim group and its default link,
 *  highlight.js keyword class. Order = order of the TextMate patterns and Vim commands. */
export const CATEGORIES = {
  import: { scope: 'keyword.control.import', vim: ['mscclInclude', 'Include'], hljs: 'keyword' },
  storage: { scope: 'storage.type', vim: ['mscclStorage', 'StorageClass'], hljs: 'keyword' },
  loop: { scope: 'keyword.control.loop', vim: ['mscclRepeat', 'Repeat'], hljs: 'keyword' },
  conditional: { scope: 'keyword.control.conditional', vim: ['mscclConditional', 'Conditional'], hljs: 'keyword' },
  with: { scope: 'keyword.control.with', vim: ['mscclStatement', 'Statement'], hljs: 'keyword' },
  flow: { scope: 'keyword.control.flow', vim: ['mscclStatement', 'Statement'], hljs: 'keyword' },
  operator: { scope: 'keyword.operator.logical', vim: ['mscclOperatorWord', 'Operator'], hljs: 'keyword' },
  boolean: { scope: 'constant.language.boolean', vim: ['mscclBoolean', 'Boolean'], hljs: 'literal' },
  none: { scope: 'constant.language.none', vim: ['mscclNone', 'Constant'], hljs: 'literal' },
  other: { scope: 'keyword.other', vim: ['mscclKeyword', 'Keyword'], hljs: 'keyword' },
};

/** {category: [keywords]} for the given keyword list, categories in CATEGORIES order. */
export function keywordGroups(keywords) {
  const groups = {};
  for (const cat of Object.keys(CATEGORIES)) {
    const words = keywords.filter((k) => (KEYWORD_CATEGORY[k] ?? 'other') === cat);
    if (words.length) groups[cat] = words;
  }
  return groups;
}

/** Words sorted longest first (then alphabetically) for regex alternations. */
export function longestFirst(words) {
  return [...new Set(words)].sort((a, b) => b.length - a.length || a.localeCompare(b));
}
