//===- Knowledge.cpp - Hover texts and completions ---------------------------------------===//
//
// Everything the editor is told about builtins comes from elab::builtins() (Builtins.def);
// everything about user names from an Analysis' index. Completion reads the current text around
// the cursor (which is usually not parseable while typing) and takes user names and the classes
// of `let` variables from the latest analysis that parsed.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/lsp/Analysis.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

namespace msccl::lsp {

using elab::builtins;
using elab::ClassId;
using elab::MethodId;
using elab::ParamType;

namespace {

bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::optional<ClassId> classByNameK(llvm::StringRef name) {
  const auto &t = builtins();
  for (size_t i = 0; i < t.classes.size(); ++i)
    if (t.classes[i].name == name)
      return static_cast<ClassId>(i);
  return std::nullopt;
}

const char *typeName(ParamType t) {
  switch (t) {
  case ParamType::Any: return "any";
  case ParamType::Int: return "int";
  case ParamType::Bool: return "bool";
  case ParamType::Str: return "str";
  case ParamType::IntList: return "list[int]";
  case ParamType::Chunk: return "Chunk";
  case ParamType::ChunkList: return "list[Chunk]";
  case ParamType::OptChunk: return "Chunk | none";
  case ParamType::OptInt: return "int | none";
  case ParamType::Collective: return "Collective";
  case ParamType::TbGroup: return "ThreadBlockGroup | none";
  case ParamType::SyncType: return "SyncType";
  case ParamType::ReduceOperationType: return "ReduceOperationType";
  case ParamType::BufferType: return "BufferType";
  case ParamType::ReplicationPolicy: return "ReplicationPolicy";
  case ParamType::List: return "list";
  case ParamType::Map: return "map";
  case ParamType::None: return "none";
  case ParamType::Size: return "size";
  }
  return "any";
}

std::string defaultText(const elab::DefaultValue &d) {
  switch (d.kind) {
  case elab::DefaultValue::Required: return "";
  case elab::DefaultValue::None: return "none";
  case elab::DefaultValue::Int: return std::to_string(d.i);
  case elab::DefaultValue::Bool: return d.i ? "true" : "false";
  case elab::DefaultValue::Str: return "\"" + d.s + "\"";
  case elab::DefaultValue::Enum: return builtins().enumInfo(d.enumId).name + "." + d.s;
  }
  return "";
}

std::string paramText(const elab::ParamInfo &p) {
  std::string s = p.name + ": " + typeName(p.type);
  if (p.def.kind != elab::DefaultValue::Required)
    s += " = " + defaultText(p.def);
  return s;
}

std::string paramList(const std::vector<elab::ParamInfo> &ps) {
  std::string s;
  for (size_t i = 0; i < ps.size(); ++i)
    s += (i ? ", " : "") + paramText(ps[i]);
  return s;
}

std::string code(const std::string &s) { return "```msccl\n" + s + "\n```\n"; }

/// The `//` comment lines right above line `line` of `text` (a fn's documentation).
std::string docAbove(llvm::StringRef text, size_t offset) {
  size_t lineStart = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  lineStart = lineStart == llvm::StringRef::npos ? 0 : lineStart + 1;
  std::vector<std::string> lines;
  size_t end = lineStart;
  while (end > 0) {
    size_t prevEnd = end - 1; // the '\n' ending the previous line
    size_t prevStart = text.rfind('\n', prevEnd == 0 ? 0 : prevEnd - 1);
    prevStart = (prevStart == llvm::StringRef::npos || prevEnd == 0) ? 0 : prevStart + 1;
    llvm::StringRef l = text.slice(prevStart, prevEnd).trim();
    if (!l.startswith("//"))
      break;
    lines.push_back(l.drop_front(2).trim().str());
    end = prevStart;
  }
  std::reverse(lines.begin(), lines.end());
  std::string out;
  for (auto &l : lines)
    out += l + "\n";
  return out;
}

/// The source text of an expression: from its location to the end of its line or the first
/// top-level `,` / `)` (for showing initialisers).
std::string exprText(const Analysis &a, const ast::Expr *e) {
  if (!e)
    return "";
  unsigned b = a.sm.FindBufferContainingLoc(e->loc);
  if (!b)
    return "";
  llvm::StringRef buf = a.sm.getMemoryBuffer(b)->getBuffer();
  size_t start = static_cast<size_t>(e->loc.getPointer() - buf.data());
  // Binary operators carry the operator's location: back up to the line's `=`.
  size_t i = start;
  int depth = 0;
  for (; i < buf.size() && buf[i] != '\n'; ++i) {
    char c = buf[i];
    if (c == '(' || c == '[' || c == '{')
      ++depth;
    else if (c == ')' || c == ']' || c == '}') {
      if (depth == 0)
        break;
      --depth;
    } else if ((c == ',' || c == ':') && depth == 0)
      break;
    else if (c == '/' && i + 1 < buf.size() && buf[i + 1] == '/')
      break;
  }
  return buf.slice(start, i).rtrim().str();
}

std::optional<int64_t> constInt(const Analysis &a, const ast::Expr *e, const AnalysisOptions &opts, int depth = 0);

std::optional<int64_t> paramValue(const Analysis &a, const ast::ParamDecl *p, const AnalysisOptions &opts, int depth) {
  const std::string &name = a.ctx.names.str(p->name);
  for (auto it = opts.defines.rbegin(); it != opts.defines.rend(); ++it)
    if (it->first == name) {
      char *end = nullptr;
      long long v = std::strtoll(it->second.c_str(), &end, 0);
      if (end && *end == 0)
        return v;
      return std::nullopt;
    }
  return constInt(a, p->value, opts, depth + 1);
}

/// The value of an integer expression made of literals, params and + - * (else nullopt).
std::optional<int64_t> constInt(const Analysis &a, const ast::Expr *e, const AnalysisOptions &opts, int depth) {
  if (!e || depth > 20)
    return std::nullopt;
  switch (e->kind) {
  case ast::ExprKind::Int: {
    auto *i = static_cast<const ast::IntExpr *>(e);
    return i->u64 ? std::nullopt : std::optional<int64_t>(i->value);
  }
  case ast::ExprKind::Unary: {
    auto *u = static_cast<const ast::UnaryExpr *>(e);
    auto v = constInt(a, u->operand, opts, depth + 1);
    return v ? std::optional<int64_t>(u->negate ? -*v : *v) : std::nullopt;
  }
  case ast::ExprKind::Binary: {
    auto *b = static_cast<const ast::BinaryExpr *>(e);
    auto x = constInt(a, b->lhs, opts, depth + 1), y = constInt(a, b->rhs, opts, depth + 1);
    if (!x || !y)
      return std::nullopt;
    switch (b->op) {
    case ast::BinOp::Add: return *x + *y;
    case ast::BinOp::Sub: return *x - *y;
    case ast::BinOp::Mul: return *x * *y;
    default: return std::nullopt;
    }
  }
  case ast::ExprKind::Name: {
    auto *n = static_cast<const ast::NameExpr *>(e);
    if (n->ref == ast::RefKind::Param && n->index < a.unit.params.size())
      return paramValue(a, a.unit.params[n->index], opts, depth);
    return std::nullopt;
  }
  default:
    return std::nullopt;
  }
}

std::string literalType(const ast::Expr *e) {
  if (!e)
    return "";
  switch (e->kind) {
  case ast::ExprKind::Int: return "int";
  case ast::ExprKind::Str: return "str";
  case ast::ExprKind::Bool: return "bool";
  case ast::ExprKind::None: return "none";
  case ast::ExprKind::List: return "list";
  case ast::ExprKind::Map: return "map";
  case ast::ExprKind::Tuple: return "tuple";
  default: return "";
  }
}

std::string enumDoc(const elab::EnumInfo &e) {
  std::string s = code("enum " + e.name) + e.summary + "\n\nMembers: ";
  for (size_t i = 0; i < e.members.size(); ++i)
    s += (i ? ", " : "") + std::string("`") + e.name + "." + e.members[i].first + "`";
  return s;
}

std::string classDoc(ClassId id) {
  const auto &c = builtins().cls(id);
  std::string s = code(classSignature(id)) + c.summary;
  if (!c.methods.empty()) {
    s += "\n\nMethods: ";
    for (size_t i = 0; i < c.methods.size(); ++i)
      s += (i ? ", " : "") + std::string("`") + builtins().method(c.methods[i]).name + "`";
  }
  if (!c.attrs.empty()) {
    s += "\n\nAttributes: ";
    for (size_t i = 0; i < c.attrs.size(); ++i)
      s += (i ? ", " : "") + std::string("`") + builtins().attr(c.attrs[i]).name + "`";
  }
  return s;
}

std::string methodDoc(MethodId id) { return code(methodSignature(id)) + builtins().method(id).summary; }

/// The local's definition occurrence in `a` (for its init and class).
const Occurrence *definitionOf(const Analysis &a, const Occurrence &o) {
  for (const Occurrence &d : a.occurrences)
    if (d.isDefinition && d.buffer == o.defBuffer && d.offset == o.defOffset)
      return &d;
  return nullptr;
}

/// "input buffer of rank 0" etc. for a Buffer-valued initialiser.
std::string bufferDesc(const Analysis &a, const ast::Expr *init, const AnalysisOptions &opts) {
  if (!init)
    return "";
  if (init->kind == ast::ExprKind::MethodCall) {
    auto *m = static_cast<const ast::MethodCallExpr *>(init);
    const std::string &name = a.ctx.names.str(m->method);
    std::string kind = name == "get_input_buffer" ? "input" : name == "get_output_buffer" ? "output" : "";
    if (kind.empty())
      return "";
    std::string rank = "?";
    if (m->object->kind == ast::ExprKind::Call) {
      auto *c = static_cast<const ast::CallExpr *>(m->object);
      if (!c->args.empty()) {
        auto v = constInt(a, c->args[0].value, opts);
        rank = v ? std::to_string(*v) : "`" + exprText(a, c->args[0].value) + "`";
      }
    }
    return "the " + kind + " buffer of rank " + rank;
  }
  if (init->kind == ast::ExprKind::Call) {
    auto *c = static_cast<const ast::CallExpr *>(init);
    if (a.ctx.names.str(c->callee->name) == "Buffer")
      return "a scratch buffer";
  }
  return "";
}

/// What is known statically of the buffer an expression denotes ("the input buffer of rank 0").
std::string bufferOf(const Analysis &a, const ast::Expr *e, const AnalysisOptions &opts) {
  if (!e)
    return "";
  if (e->kind == ast::ExprKind::Name) {
    unsigned b = a.sm.FindBufferContainingLoc(e->loc);
    if (!b)
      return "";
    size_t off = static_cast<size_t>(e->loc.getPointer() - a.sm.getMemoryBuffer(b)->getBufferStart());
    for (const Occurrence &o : a.occurrences)
      if (o.buffer == b && o.offset == off) {
        const Occurrence *d = o.isDefinition ? &o : definitionOf(a, o);
        return d ? bufferDesc(a, d->init, opts) : "";
      }
    return "";
  }
  return bufferDesc(a, e, opts);
}

/// "chunk `input[i : i + 1]`: the input buffer of rank 0, index `i`, size 1" for a slice.
std::string chunkDesc(const Analysis &a, const ast::SliceExpr *s, const AnalysisOptions &opts) {
  std::string out = "chunk";
  std::string buf = bufferOf(a, s->object, opts);
  if (!buf.empty())
    out += " of " + buf;
  auto lo = s->lo ? constInt(a, s->lo, opts) : std::optional<int64_t>(0);
  std::optional<int64_t> size;
  if (auto hi = constInt(a, s->hi, opts); lo && hi)
    size = *hi - *lo;
  else if (s->lo && s->hi && s->hi->kind == ast::ExprKind::Binary) {
    // `x : x + k` has size k whatever x is.
    auto *b = static_cast<const ast::BinaryExpr *>(s->hi);
    if (b->op == ast::BinOp::Add && s->lo->kind == ast::ExprKind::Name && b->lhs->kind == ast::ExprKind::Name &&
        static_cast<const ast::NameExpr *>(s->lo)->name == static_cast<const ast::NameExpr *>(b->lhs)->name)
      size = constInt(a, b->rhs, opts);
  }
  out += lo ? ", index " + std::to_string(*lo) : s->lo ? ", index `" + exprText(a, s->lo) + "`" : "";
  if (size)
    out += ", size " + std::to_string(*size);
  if (s->hasStep)
    out += " (with a step)";
  return out;
}

} // namespace

std::string methodSignature(MethodId id) {
  const auto &m = builtins().method(id);
  return builtins().cls(m.cls).name + "." + m.name + "(" + paramList(m.params) + ") -> " + m.returns;
}

std::string classSignature(ClassId id) {
  const auto &c = builtins().cls(id);
  if (!c.constructible)
    return "type " + c.name;
  return "class " + c.name + "(" + paramList(c.ctorParams) + ")";
}

namespace {
std::string hoverBody(const Analysis &a, const Occurrence &o, const AnalysisOptions &opts);
} // namespace

std::string hoverText(const Analysis &a, const Occurrence &o, const AnalysisOptions &opts) {
  std::string text = hoverBody(a, o, opts);
  if (o.slice)
    text += (text.empty() ? "" : "\n\n") + chunkDesc(a, o.slice, opts);
  return text;
}

namespace {
/// A keyword argument: of a builtin callee, its parameter's type and default; of a fn, the
/// parameter's line.
std::string keywordArgHover(const Occurrence &o) {
  const auto &t = builtins();
  std::string callee = o.callee;
  if (llvm::StringRef(callee).startswith("fn "))
    return code(callee + "(... " + o.name + " ...)") + "parameter `" + o.name + "` of " + callee;
  llvm::StringRef cls, meth;
  std::tie(cls, meth) = llvm::StringRef(callee).split('.');
  std::vector<const std::vector<elab::ParamInfo> *> lists;
  if (meth.empty()) {
    for (auto &c : t.classes)
      if (c.name == cls)
        lists.push_back(&c.ctorParams);
    for (auto &m : t.methods)
      if (m.name == cls) // a method of unknown class: every class' method of that name
        lists.push_back(&m.params);
  } else {
    for (auto &m : t.methods)
      if (m.name == meth && t.cls(m.cls).name == cls)
        lists.push_back(&m.params);
  }
  for (auto *ps : lists)
    for (auto &p : *ps)
      if (p.name == o.name)
        return code(p.name + ": " + typeName(p.type) +
                    (p.def.kind != elab::DefaultValue::Required ? " = " + defaultText(p.def) : std::string())) +
               "keyword argument of `" + callee + "`: " + elab::describe(p.type) +
               (p.def.kind == elab::DefaultValue::Required ? " (required)" : "");
  return "";
}

/// A param: its declaration's initialiser, type, value (with -D) and doc comment.
std::string paramHover(const Analysis &a, const Occurrence &o, const AnalysisOptions &opts) {
  const ast::ParamDecl *decl = nullptr;
  for (auto *p : a.unit.params)
    if (a.ctx.names.str(p->name) == o.name)
      decl = p;
  if (!decl)
    for (auto *m : a.unit.modules)
      for (auto &p : m->params)
        if (a.ctx.names.str(p.name) == o.name)
          decl = &p;
  if (!decl)
    return code("param " + o.name);
  std::string s = code("param " + o.name + " = " + exprText(a, decl->value));
  std::string type = literalType(decl->value);
  auto v = paramValue(a, decl, opts, 0);
  for (auto &d : opts.defines)
    if (d.first == o.name)
      s += "overridden by the workspace settings: `-D " + d.first + "=" + d.second + "`\n\n";
  if (v) {
    s += "value: `" + std::to_string(*v) + "`";
    type = "int";
  }
  if (!type.empty())
    s += std::string(v ? ", " : "") + "type: `" + type + "`";
  unsigned b = a.sm.FindBufferContainingLoc(decl->loc);
  if (b) {
    llvm::StringRef buf = a.sm.getMemoryBuffer(b)->getBuffer();
    std::string doc = docAbove(buf, static_cast<size_t>(decl->loc.getPointer() - buf.data()));
    if (!doc.empty())
      s += "\n\n" + doc;
  }
  return s;
}

/// A fn: its signature, doc comment and, when imported, the file it comes from.
std::string fnHover(const Analysis &a, const Occurrence &o) {
  for (auto *f : a.unit.fns.empty() ? std::vector<ast::FnDecl *>{} : a.unit.fns)
    if (a.ctx.names.str(f->name) == o.name) {
      std::string sig = "fn " + o.name + "(";
      for (size_t i = 0; i < f->params.size(); ++i) {
        sig += (i ? ", " : "") + a.ctx.names.str(f->params[i].name);
        if (f->params[i].defaultValue)
          sig += " = " + exprText(a, f->params[i].defaultValue);
      }
      sig += ")";
      unsigned b = a.sm.FindBufferContainingLoc(f->loc);
      std::string doc;
      std::string where;
      if (b) {
        llvm::StringRef buf = a.sm.getMemoryBuffer(b)->getBuffer();
        doc = docAbove(buf, static_cast<size_t>(f->loc.getPointer() - buf.data()));
        if (b != a.mainBuffer)
          where = "\n\nfrom `" + llvm::sys::path::filename(a.bufferPath(b)).str() + "`";
      }
      return code(sig) + doc + where;
    }
  return code("fn " + o.name);
}

/// A local: its binding and type; a Buffer's description, a Chunk's index, size and buffer.
std::string localHover(const Analysis &a, const Occurrence &o, const AnalysisOptions &opts) {
  const auto &t = builtins();
  const Occurrence *d = o.isDefinition ? &o : definitionOf(a, o);
  std::string s = code("let " + o.name + (d && d->init ? " = " + exprText(a, d->init) : std::string()));
  std::optional<ClassId> cls = d ? d->cls : o.cls;
  if (cls) {
    s += "type: `" + t.cls(*cls).name + "`";
    if (t.cls(*cls).name == "Buffer") {
      std::string bd = bufferDesc(a, d ? d->init : nullptr, opts);
      if (!bd.empty())
        s += " — " + bd;
    } else if (t.cls(*cls).name == "Chunk" && d && d->init && d->init->kind == ast::ExprKind::Slice) {
      auto *sl = static_cast<const ast::SliceExpr *>(d->init);
      auto lo = sl->lo ? constInt(a, sl->lo, opts) : std::optional<int64_t>(0);
      auto hi = constInt(a, sl->hi, opts);
      if (lo)
        s += "; index " + std::to_string(*lo);
      if (lo && hi)
        s += ", size " + std::to_string(*hi - *lo);
      if (sl->object->kind == ast::ExprKind::Name) {
        for (const Occurrence &bo : a.occurrences)
          if (bo.buffer == a.sm.FindBufferContainingLoc(sl->object->loc) &&
              bo.offset == static_cast<size_t>(sl->object->loc.getPointer() -
                                               a.sm.getMemoryBuffer(bo.buffer)->getBufferStart())) {
            const Occurrence *bd = definitionOf(a, bo);
            std::string desc = bd ? bufferDesc(a, bd->init, opts) : "";
            if (!desc.empty())
              s += "; of " + desc;
            break;
          }
      }
    }
  }
  return s;
}

std::string hoverBody(const Analysis &a, const Occurrence &o, const AnalysisOptions &opts) {
  const auto &t = builtins();
  switch (o.kind) {
  case SymKind::BuiltinFn: {
    const auto &f = t.fns[static_cast<size_t>(o.id)];
    return code("builtin " + f.name) + f.summary;
  }
  case SymKind::Class:
    return classDoc(static_cast<ClassId>(o.id));
  case SymKind::Enum:
    return enumDoc(t.enums[static_cast<size_t>(o.id)]);
  case SymKind::EnumMember: {
    const auto &e = t.enums[static_cast<size_t>(o.id)];
    if (o.member < 0 || static_cast<size_t>(o.member) >= e.members.size())
      return enumDoc(e);
    const auto &m = e.members[static_cast<size_t>(o.member)];
    return code(e.name + "." + m.first + " = " + std::to_string(m.second)) + e.summary;
  }
  case SymKind::Method: {
    if (o.id >= 0)
      return methodDoc(static_cast<MethodId>(o.id));
    std::string s;
    for (MethodId m : [&] {
           std::vector<MethodId> v;
           for (size_t i = 0; i < t.methods.size(); ++i)
             if (t.methods[i].name == o.name)
               v.push_back(static_cast<MethodId>(i));
           return v;
         }())
      s += (s.empty() ? "" : "\n---\n") + methodDoc(m);
    return s;
  }
  case SymKind::Attr: {
    std::string s;
    for (const auto &at : t.attrs)
      if (at.name == o.name && (!o.cls || at.cls == *o.cls))
        s += (s.empty() ? "" : "\n---\n") + code(t.cls(at.cls).name + "." + at.name + ": " + typeName(at.type)) + at.summary;
    return s;
  }
  case SymKind::Option: {
    if (o.id < 0)
      return "";
    const auto &op = t.options[static_cast<size_t>(o.id)];
    std::string s = code("program option " + op.name + ": " + typeName(op.type) +
                         (op.def.kind != elab::DefaultValue::Required ? " = " + defaultText(op.def) : std::string()));
    return s + op.summary;
  }
  case SymKind::KeywordArg:
    return keywordArgHover(o);
  case SymKind::Param:
    return paramHover(a, o, opts);
  case SymKind::Fn:
    return fnHover(a, o);
  case SymKind::Program:
    return code("program " + o.name);
  case SymKind::Local:
    return localHover(a, o, opts);
  }
  return "";
}

} // namespace

// ---- Completion ----------------------------------------------------------------------------
namespace {

enum Kind { KMethod = 2, KFunction = 3, KField = 5, KVariable = 6, KClass = 7, KModule = 9, KProperty = 10,
            KKeyword = 14, KFile = 17, KEnum = 13, KEnumMember = 20, KConstant = 21 };

/// Forward scan of text[0, offset): the stack of unclosed brackets (their offsets), and whether
/// `offset` is inside a string or comment.
struct Context {
  std::vector<size_t> open;
  bool inString = false, inComment = false;
  size_t stringStart = 0;
};

Context scan(const std::string &text, size_t offset) {
  Context c;
  for (size_t i = 0; i < offset; ++i) {
    char ch = text[i];
    if (c.inString) {
      if (ch == '\\')
        ++i;
      else if (ch == '"' || ch == '\n')
        c.inString = false;
      continue;
    }
    if (ch == '/' && i + 1 < offset && text[i + 1] == '/') {
      size_t nl = text.find('\n', i);
      if (nl == std::string::npos || nl >= offset) {
        c.inComment = true;
        return c;
      }
      i = nl;
      continue;
    }
    if (ch == '/' && i + 1 < offset && text[i + 1] == '*') {
      size_t e = text.find("*/", i + 2);
      if (e == std::string::npos || e + 2 > offset) {
        c.inComment = true;
        return c;
      }
      i = e + 1;
      continue;
    }
    if (ch == '"') {
      c.inString = true;
      c.stringStart = i;
    } else if (ch == '(' || ch == '[' || ch == '{')
      c.open.push_back(i);
    else if ((ch == ')' || ch == ']' || ch == '}') && !c.open.empty())
      c.open.pop_back();
  }
  return c;
}

/// The identifier ending at `end` (exclusive), or "".
std::string identBefore(const std::string &text, size_t end, size_t *start = nullptr) {
  size_t s = end;
  while (s > 0 && isIdentChar(text[s - 1]))
    --s;
  if (start)
    *start = s;
  return text.substr(s, end - s);
}

size_t skipSpaceBack(const std::string &text, size_t i) {
  while (i > 0 && (text[i - 1] == ' ' || text[i - 1] == '\t'))
    --i;
  return i;
}

/// The class of a `let` variable named `name` in the last analysis (the nearest definition at
/// or before `offset`).
std::optional<ClassId> classOfLocal(const Analysis *last, const std::string &name, size_t offset) {
  if (!last)
    return std::nullopt;
  std::optional<ClassId> out;
  size_t best = 0;
  bool found = false;
  for (const Occurrence &o : last->occurrences)
    if (o.buffer == last->mainBuffer && o.isDefinition && o.kind == SymKind::Local && o.name == name) {
      if (!found || (o.offset <= offset && o.offset >= best)) {
        out = o.cls;
        best = o.offset;
        found = true;
      }
    }
  return out;
}

/// The class of the receiver expression ending at `end` (before the `.`), when known.
std::optional<ClassId> receiverClass(const std::string &text, size_t end, const Analysis *last, int depth = 0) {
  end = skipSpaceBack(text, end);
  if (end == 0 || depth > 8)
    return std::nullopt;
  if (text[end - 1] == ')' || text[end - 1] == ']') {
    // Find the matching bracket.
    char close = text[end - 1], open = close == ')' ? '(' : '[';
    int d = 0;
    size_t i = end;
    while (i > 0) {
      --i;
      if (text[i] == close)
        ++d;
      else if (text[i] == open && --d == 0)
        break;
    }
    if (d != 0)
      return std::nullopt;
    if (open == '[') {
      auto c = receiverClass(text, i, last, depth + 1);
      if (c && builtins().cls(*c).name == "Buffer")
        return classByNameK("Chunk");
      return std::nullopt;
    }
    size_t s;
    std::string callee = identBefore(text, skipSpaceBack(text, i), &s);
    if (callee.empty())
      return std::nullopt;
    if (s > 0 && text[s - 1] == '.') {
      auto recv = receiverClass(text, s - 1, last, depth + 1);
      std::vector<MethodId> ms;
      for (size_t k = 0; k < builtins().methods.size(); ++k)
        if (builtins().methods[k].name == callee && (!recv || builtins().methods[k].cls == *recv))
          ms.push_back(static_cast<MethodId>(k));
      std::optional<ClassId> out;
      for (auto m : ms) {
        auto c = classByNameK(builtins().method(m).returns);
        if (!c || (out && *out != *c))
          return std::nullopt;
        out = c;
      }
      return out;
    }
    auto c = classByNameK(callee);
    if (c && builtins().cls(*c).constructible)
      return c;
    return std::nullopt;
  }
  std::string name = identBefore(text, end);
  if (name.empty())
    return std::nullopt;
  // The current text first: the last `let NAME = EXPR` before the cursor, EXPR's class read
  // from its text (the user may just have typed the `let`); then the latest analysis.
  std::string letText = "let " + name + " = ";
  for (size_t at = text.rfind(letText, end); at != std::string::npos && at > 0; at = text.rfind(letText, at - 1)) {
    if (isIdentChar(text[at - 1]))
      continue;
    size_t b = at + letText.size();
    size_t e = text.find('\n', b);
    std::string rhs = text.substr(b, (e == std::string::npos ? text.size() : e) - b);
    if (size_t c = rhs.find("//"); c != std::string::npos)
      rhs.resize(c);
    while (!rhs.empty() && (rhs.back() == ' ' || rhs.back() == '\r' || rhs.back() == '\t'))
      rhs.pop_back();
    if (auto c = receiverClass(rhs, rhs.size(), last, depth + 1))
      return c;
    break;
  }
  return classOfLocal(last, name, end);
}

void addKeywords(std::vector<Completion> &out) {
  for (const char *k : {"param", "import", "fn", "program", "let", "for", "in", "if", "else", "with", "return", "break",
                        "continue", "and", "or", "not", "true", "false", "none"})
    out.push_back({k, KKeyword, "keyword", "", ""});
}

void addGlobals(std::vector<Completion> &out, const Analysis *last, size_t offset) {
  const auto &t = builtins();
  for (const auto &f : t.fns)
    out.push_back({f.name, KFunction, "builtin", f.summary, ""});
  for (size_t i = 0; i < t.classes.size(); ++i)
    if (t.classes[i].constructible)
      out.push_back({t.classes[i].name, KClass, classSignature(static_cast<ClassId>(i)), t.classes[i].summary, ""});
  for (const auto &e : t.enums)
    out.push_back({e.name, KEnum, "enum", e.summary, ""});
  addKeywords(out);
  if (!last)
    return;
  std::set<std::string> seen;
  for (const Occurrence &o : last->occurrences) {
    if (!o.isDefinition || !seen.insert(o.name).second)
      continue;
    if (o.kind == SymKind::Param)
      out.push_back({o.name, KConstant, "param", "", ""});
    else if (o.kind == SymKind::Fn)
      out.push_back({o.name, KFunction, "fn", "", ""});
    else if (o.kind == SymKind::Local && o.buffer == last->mainBuffer && o.offset <= offset + 64)
      out.push_back({o.name, KVariable, o.cls ? builtins().cls(*o.cls).name : "let", "", ""});
  }
}

void addMembers(std::vector<Completion> &out, std::optional<ClassId> cls) {
  const auto &t = builtins();
  std::set<std::string> seen;
  for (size_t i = 0; i < t.methods.size(); ++i) {
    const auto &m = t.methods[i];
    if ((cls && m.cls != *cls) || !seen.insert(m.name).second)
      continue;
    out.push_back({m.name, KMethod, methodSignature(static_cast<MethodId>(i)), m.summary, ""});
  }
  for (const auto &at : t.attrs) {
    if ((cls && at.cls != *cls) || !seen.insert(at.name).second)
      continue;
    out.push_back({at.name, KProperty, t.cls(at.cls).name + "." + at.name + ": " + typeName(at.type), at.summary, ""});
  }
}

/// Keyword-argument names of the call whose `(` is at `open`.
bool addKeywordArgs(std::vector<Completion> &out, const std::string &text, size_t open, const Analysis *last) {
  const auto &t = builtins();
  size_t s;
  std::string callee = identBefore(text, skipSpaceBack(text, open), &s);
  if (callee.empty())
    return false;
  auto addParams = [&](const std::vector<elab::ParamInfo> &ps, const std::string &of) {
    for (auto &p : ps)
      out.push_back({p.name + " =", KField, paramText(p), "keyword argument of `" + of + "`", p.name + " = "});
  };
  // `program NAME(`: the program options.
  size_t kw = skipSpaceBack(text, s);
  std::string before = identBefore(text, kw);
  if (before == "program") {
    for (auto &op : t.options)
      out.push_back({op.name + " =", KProperty, std::string(typeName(op.type)), op.summary, op.name + " = "});
    return true;
  }
  if (s > 0 && text[s - 1] == '.') {
    auto recv = receiverClass(text, s - 1, last);
    bool any = false;
    std::set<std::string> seen;
    for (size_t i = 0; i < t.methods.size(); ++i) {
      const auto &m = t.methods[i];
      if (m.name != callee || (recv && m.cls != *recv))
        continue;
      for (auto &p : m.params)
        if (seen.insert(p.name).second)
          out.push_back({p.name + " =", KField, paramText(p), "keyword argument of `" + t.cls(m.cls).name + "." + m.name + "`",
                         p.name + " = "});
      any = true;
    }
    return any;
  }
  if (auto c = classByNameK(callee); c && t.cls(*c).constructible) {
    addParams(t.cls(*c).ctorParams, callee);
    return true;
  }
  if (last)
    for (auto *f : last->unit.fns)
      if (last->ctx.names.str(f->name) == callee) {
        for (auto &p : f->params)
          out.push_back({last->ctx.names.str(p.name) + " =", KField, "parameter of fn " + callee, "",
                         last->ctx.names.str(p.name) + " = "});
        return true;
      }
  return false;
}

/// Library modules (files without a `program`) under the stdlib directory, as import paths.
void addModules(std::vector<Completion> &out, const AnalysisOptions &opts) {
  std::string dir = opts.path.stdlibDir.empty() ? elab::defaultStdlibDir() : opts.path.stdlibDir;
  std::error_code ec;
  std::vector<std::string> names;
  for (llvm::sys::fs::recursive_directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::StringRef p = it->path();
    if (!p.endswith(".msccl"))
      continue;
    auto buf = llvm::MemoryBuffer::getFile(p);
    if (!buf)
      continue;
    llvm::StringRef text = (*buf)->getBuffer();
    bool program = text.startswith("program ") || text.contains("\nprogram ");
    if (program)
      continue;
    llvm::StringRef rel = p.drop_front(dir.size());
    while (rel.startswith("/"))
      rel = rel.drop_front();
    names.push_back(rel.str());
  }
  std::sort(names.begin(), names.end());
  for (auto &n : names)
    out.push_back({n, KFile, "stdlib module", "", ""});
}

} // namespace

std::vector<Completion> complete(const std::string &text, size_t offset, const Analysis *last, const AnalysisOptions &opts) {
  std::vector<Completion> out;
  offset = std::min(offset, text.size());
  Context c = scan(text, offset);
  if (c.inComment)
    return out;
  size_t lineStart = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  lineStart = (lineStart == std::string::npos || offset == 0) ? 0 : lineStart + 1;
  if (c.inString) {
    llvm::StringRef before = llvm::StringRef(text).slice(lineStart, c.stringStart).trim();
    if (before == "import")
      addModules(out, opts);
    return out;
  }
  size_t wordStart;
  identBefore(text, offset, &wordStart);
  // `X.partial`: enum members, or the receiver's methods and attributes.
  if (wordStart > 0 && text[wordStart - 1] == '.') {
    size_t s;
    std::string recv = identBefore(text, wordStart - 1, &s);
    for (size_t i = 0; i < builtins().enums.size(); ++i)
      if (builtins().enums[i].name == recv) {
        for (auto &m : builtins().enums[i].members)
          out.push_back({m.first, KEnumMember, recv + "." + m.first + " = " + std::to_string(m.second), "", ""});
        return out;
      }
    addMembers(out, receiverClass(text, wordStart - 1, last));
    return out;
  }
  // Top of a line: `import`-level words too; inside a call at an argument start: keywords first.
  if (!c.open.empty() && text[c.open.back()] == '(') {
    size_t p = skipSpaceBack(text, wordStart);
    while (p > 0 && (text[p - 1] == '\n' || text[p - 1] == ' ' || text[p - 1] == '\t' || text[p - 1] == '\r'))
      --p;
    if (p > 0 && (text[p - 1] == '(' || text[p - 1] == ','))
      addKeywordArgs(out, text, c.open.back(), last);
  }
  addGlobals(out, last, offset);
  return out;
}

} // namespace msccl::lsp
