//===- Analysis.cpp - One editor buffer through the compiler's phases -------------------===//
//
// analyze() runs the phases through mscclc's own driver::CompilerSession (Session.h: load ->
// check -> elaborate -> passes, the phase order written there only), with the diagnostics in
// capture mode and the extra checks registered on the Analyzer hung on the session's
// afterPhase (after the passes checked out), then walks the checked AST once to index every
// name occurrence with the resolution the checks phase wrote into it (NameExpr::ref/index,
// binder slots, Enum.member), so the editor's view of a name is the compiler's. Errors of the
// passes are placed as mscclc places them (at the op's .msccl call, with its loop values).
//
//===------------------------------------------------------------------------------------===//
#include "msccl/lsp/Analysis.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/thread.h>

#include <algorithm>
#include <chrono>
#include <set>

namespace msccl::lsp {

using elab::builtins;
using elab::ClassId;

// ---- Text ----------------------------------------------------------------------------------
Text::Text(std::string s) : text_(std::move(s)) {
  lineStarts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n')
      lineStarts_.push_back(i + 1);
}

namespace {
/// UTF-16 code units of the UTF-8 sequence starting with byte `c` (bytes of one code point: see
/// utf8Len).
unsigned utf8Len(unsigned char c) { return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }
unsigned utf16Units(unsigned char c) { return c >= 0xF0 ? 2 : 1; }
} // namespace

std::pair<unsigned, unsigned> Text::position(size_t offset) const {
  offset = std::min(offset, text_.size());
  auto it = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), offset);
  unsigned line = static_cast<unsigned>(it - lineStarts_.begin()) - 1;
  unsigned col = 0;
  for (size_t i = lineStarts_[line]; i < offset;) {
    unsigned char c = static_cast<unsigned char>(text_[i]);
    col += utf16Units(c);
    i += utf8Len(c);
  }
  return {line, col};
}

size_t Text::offset(unsigned line, unsigned col) const {
  if (line >= lineStarts_.size())
    return text_.size();
  size_t i = lineStarts_[line];
  unsigned units = 0;
  while (i < text_.size() && text_[i] != '\n' && units < col) {
    unsigned char c = static_cast<unsigned char>(text_[i]);
    units += utf16Units(c);
    i += utf8Len(c);
  }
  return std::min(i, text_.size());
}

// ---- Analysis ------------------------------------------------------------------------------
std::string Analysis::bufferPath(unsigned buffer) const {
  if (buffer == 0 || buffer > sm.getNumBuffers())
    return "";
  return sm.getMemoryBuffer(buffer)->getBufferIdentifier().str();
}

const Occurrence *Analysis::at(size_t offset) const {
  // The last occurrence in the main buffer starting at or before offset.
  auto it = std::upper_bound(occurrences.begin(), occurrences.end(), std::make_pair(mainBuffer, offset),
                             [](const std::pair<unsigned, size_t> &k, const Occurrence &o) {
                               return k.first < o.buffer || (k.first == o.buffer && k.second < o.offset);
                             });
  while (it != occurrences.begin()) {
    --it;
    if (it->buffer != mainBuffer)
      return nullptr;
    if (offset <= it->offset + it->length)
      return &*it;
    return nullptr;
  }
  return nullptr;
}

std::pair<unsigned, unsigned> Analysis::position(unsigned buffer, size_t offset) const {
  if (buffer == mainBuffer)
    return text.position(offset);
  if (buffer == 0 || buffer > sm.getNumBuffers())
    return {0, 0};
  const llvm::MemoryBuffer *mb = sm.getMemoryBuffer(buffer);
  auto lc = sm.getLineAndColumn(llvm::SMLoc::getFromPointer(mb->getBufferStart() + std::min(offset, mb->getBufferSize())), buffer);
  // Columns of imported files: bytes (stdlib files are ASCII).
  return {lc.first - 1, lc.second - 1};
}

namespace {

bool isIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::optional<ClassId> classByName(llvm::StringRef name) {
  const auto &t = builtins();
  for (size_t i = 0; i < t.classes.size(); ++i)
    if (t.classes[i].name == name)
      return static_cast<ClassId>(i);
  return std::nullopt;
}

/// Methods named `name`: of `cls` when known, else of every class.
std::vector<elab::MethodId> methodsNamed(const std::string &name, std::optional<ClassId> cls) {
  std::vector<elab::MethodId> out;
  const auto &t = builtins();
  for (size_t i = 0; i < t.methods.size(); ++i)
    if (t.methods[i].name == name && (!cls || t.methods[i].cls == *cls))
      out.push_back(static_cast<elab::MethodId>(i));
  return out;
}

/// The class a method call returns when every candidate method agrees.
std::optional<ClassId> returnClass(const std::vector<elab::MethodId> &ms) {
  std::optional<ClassId> out;
  for (auto m : ms) {
    auto c = classByName(builtins().method(m).returns);
    if (!c || (out && *out != *c))
      return std::nullopt;
    out = c;
  }
  return out;
}

/// Walks the checked AST of every module and records the occurrences.
class Indexer {
public:
  Indexer(Analysis &a) : a_(a), names_(a.ctx.names) {}

  void run() {
    const elab::Unit &u = a_.unit;
    for (ast::Module *m : u.modules) {
      for (auto &p : m->params) {
        Occurrence &o = add(p.loc, names_.str(p.name), SymKind::Param, true);
        o.init = p.value;
        o.defBuffer = o.buffer;
        o.defOffset = o.offset;
        expr(p.value);
      }
      for (ast::FnDecl *f : m->fns) {
        Occurrence &o = add(f->loc, names_.str(f->name), SymKind::Fn, true);
        o.defBuffer = o.buffer;
        o.defOffset = o.offset;
        frame_.assign(std::max<size_t>(f->numSlots, f->params.size()) + 1, {});
        for (size_t i = 0; i < f->params.size(); ++i) {
          expr(f->params[i].defaultValue);
          Occurrence &po = add(f->params[i].loc, names_.str(f->params[i].name), SymKind::Local, true);
          po.defBuffer = po.buffer;
          po.defOffset = po.offset;
          frame_[i] = {po.buffer, po.offset, std::nullopt, nullptr};
        }
        block(f->body);
      }
      for (ast::ProgramDecl *p : m->programs) {
        Occurrence &o = add(p->loc, names_.str(p->name), SymKind::Program, true);
        o.defBuffer = o.buffer;
        o.defOffset = o.offset;
        for (auto &opt : p->options) {
          Occurrence &oo = add(opt.loc, names_.str(opt.name), SymKind::Option, false);
          const auto &opts = builtins().options;
          for (size_t i = 0; i < opts.size(); ++i)
            if (opts[i].name == oo.name)
              oo.id = static_cast<int>(i);
          expr(opt.value);
        }
        frame_.assign(p->numSlots + 1, {});
        block(p->body);
      }
    }
    std::stable_sort(a_.occurrences.begin(), a_.occurrences.end(), [](const Occurrence &x, const Occurrence &y) {
      return x.buffer < y.buffer || (x.buffer == y.buffer && x.offset < y.offset);
    });
  }

private:
  struct SlotDef {
    unsigned buffer = 0;
    size_t offset = 0;
    std::optional<ClassId> cls;
    const ast::Expr *init = nullptr;
  };

  Occurrence &add(llvm::SMLoc loc, const std::string &name, SymKind kind, bool def) {
    Occurrence o;
    o.buffer = a_.sm.FindBufferContainingLoc(loc);
    if (o.buffer)
      o.offset = static_cast<size_t>(loc.getPointer() - a_.sm.getMemoryBuffer(o.buffer)->getBufferStart());
    o.length = static_cast<unsigned>(name.size());
    o.kind = kind;
    o.isDefinition = def;
    o.name = name;
    a_.occurrences.push_back(std::move(o));
    return a_.occurrences.back();
  }

  void block(const ast::Block &b) {
    for (ast::Stmt *s : b.stmts)
      stmt(s);
  }

  void binder(const ast::Binder &b, const ast::Expr *init, std::optional<ClassId> cls) {
    Occurrence &o = add(b.loc, names_.str(b.name), SymKind::Local, true);
    o.defBuffer = o.buffer;
    o.defOffset = o.offset;
    o.init = init;
    o.cls = cls;
    if (b.slot >= frame_.size())
      frame_.resize(b.slot + 1);
    frame_[b.slot] = {o.buffer, o.offset, cls, init};
  }

  void stmt(ast::Stmt *s) {
    switch (s->kind) {
    case ast::StmtKind::Let: {
      auto *l = static_cast<ast::LetStmt *>(s);
      std::optional<ClassId> cls = expr(l->value);
      for (auto &b : l->names)
        binder(b, l->tuple ? nullptr : l->value, l->tuple ? std::nullopt : cls);
      break;
    }
    case ast::StmtKind::Assign: {
      auto *as = static_cast<ast::AssignStmt *>(s);
      expr(as->target);
      expr(as->value);
      break;
    }
    case ast::StmtKind::For: {
      auto *f = static_cast<ast::ForStmt *>(s);
      expr(f->iter);
      for (auto &b : f->vars)
        binder(b, nullptr, std::nullopt);
      block(f->body);
      break;
    }
    case ast::StmtKind::If: {
      auto *i = static_cast<ast::IfStmt *>(s);
      expr(i->cond);
      block(i->then);
      block(i->otherwise);
      break;
    }
    case ast::StmtKind::With: {
      auto *w = static_cast<ast::WithStmt *>(s);
      expr(w->context);
      block(w->body);
      break;
    }
    case ast::StmtKind::Return:
      expr(static_cast<ast::ReturnStmt *>(s)->value);
      break;
    case ast::StmtKind::Expr:
      expr(static_cast<ast::ExprStmt *>(s)->expr);
      break;
    case ast::StmtKind::Break:
    case ast::StmtKind::Continue:
      break;
    }
  }

  void args(const std::vector<ast::Arg> &as, const std::string &callee, const std::vector<std::pair<unsigned, size_t>> &paramDefs,
            const std::vector<std::string> &paramNames) {
    for (auto &arg : as) {
      if (arg.name != ast::kNoSym) {
        Occurrence &o = add(arg.loc, names_.str(arg.name), SymKind::KeywordArg, false);
        o.callee = callee;
        for (size_t i = 0; i < paramNames.size(); ++i)
          if (paramNames[i] == o.name && i < paramDefs.size()) {
            o.defBuffer = paramDefs[i].first;
            o.defOffset = paramDefs[i].second;
          }
      }
      expr(arg.value);
    }
  }

  std::optional<ClassId> expr(const ast::Expr *e) {
    if (!e)
      return std::nullopt;
    using K = ast::ExprKind;
    switch (e->kind) {
    case K::Int:
    case K::Str:
    case K::Bool:
    case K::None:
      return std::nullopt;
    case K::Name:
      return nameExpr(static_cast<const ast::NameExpr *>(e));
    case K::Unary:
      expr(static_cast<const ast::UnaryExpr *>(e)->operand);
      return std::nullopt;
    case K::Not:
      expr(static_cast<const ast::NotExpr *>(e)->operand);
      return std::nullopt;
    case K::Binary: {
      auto *b = static_cast<const ast::BinaryExpr *>(e);
      expr(b->lhs);
      expr(b->rhs);
      return std::nullopt;
    }
    case K::Logical: {
      auto *b = static_cast<const ast::LogicalExpr *>(e);
      expr(b->lhs);
      expr(b->rhs);
      return std::nullopt;
    }
    case K::Compare:
      for (auto *x : static_cast<const ast::CompareExpr *>(e)->operands)
        expr(x);
      return std::nullopt;
    case K::Ternary: {
      auto *t = static_cast<const ast::TernaryExpr *>(e);
      expr(t->cond);
      auto a = expr(t->then);
      auto b = expr(t->otherwise);
      return a == b ? a : std::nullopt;
    }
    case K::Call:
      return callExpr(static_cast<const ast::CallExpr *>(e));
    case K::MethodCall:
      return methodCallExpr(static_cast<const ast::MethodCallExpr *>(e));
    case K::Index: {
      auto *i = static_cast<const ast::IndexExpr *>(e);
      expr(i->object);
      for (auto *x : i->indices)
        expr(x);
      return std::nullopt;
    }
    case K::Slice:
      return sliceExpr(static_cast<const ast::SliceExpr *>(e));
    case K::Attr:
      return attrExpr(static_cast<const ast::AttrExpr *>(e));
    case K::List:
    case K::Tuple:
      for (auto *x : static_cast<const ast::SeqExpr *>(e)->elems)
        expr(x);
      return e->kind == K::List ? classByName("list") : std::nullopt;
    case K::Map:
      for (auto &[k, v] : static_cast<const ast::MapExpr *>(e)->entries) {
        expr(k);
        expr(v);
      }
      return classByName("map");
    }
    return std::nullopt;
  }

  /// A name, by what the checks phase resolved it to: a local carries its binding's class.
  std::optional<ClassId> nameExpr(const ast::NameExpr *n) {
    const std::string &name = names_.str(n->name);
    switch (n->ref) {
    case ast::RefKind::Unresolved:
      return std::nullopt;
    case ast::RefKind::Local: {
      Occurrence &o = add(n->loc, name, SymKind::Local, false);
      if (n->index < frame_.size()) {
        o.defBuffer = frame_[n->index].buffer;
        o.defOffset = frame_[n->index].offset;
        o.cls = frame_[n->index].cls;
        o.init = frame_[n->index].init;
      }
      return o.cls;
    }
    case ast::RefKind::Param: {
      Occurrence &o = add(n->loc, name, SymKind::Param, false);
      if (n->index < a_.unit.params.size()) {
        const ast::ParamDecl *p = a_.unit.params[n->index];
        setDef(o, p->loc);
        o.init = p->value;
      }
      return std::nullopt;
    }
    case ast::RefKind::Fn: {
      Occurrence &o = add(n->loc, name, SymKind::Fn, false);
      if (n->index < a_.unit.fns.size())
        setDef(o, a_.unit.fns[n->index]->loc);
      return std::nullopt;
    }
    case ast::RefKind::Builtin:
      add(n->loc, name, SymKind::BuiltinFn, false).id = static_cast<int>(n->index);
      return std::nullopt;
    case ast::RefKind::Class:
      add(n->loc, name, SymKind::Class, false).id = static_cast<int>(n->index);
      return std::nullopt;
    case ast::RefKind::Enum:
      add(n->loc, name, SymKind::Enum, false).id = static_cast<int>(n->index);
      return std::nullopt;
    }
    return std::nullopt;
  }

  /// A call of a constructor (its class is the result) or a fn, with its keyword arguments.
  std::optional<ClassId> callExpr(const ast::CallExpr *c) {
    expr(c->callee);
    std::vector<std::pair<unsigned, size_t>> defs;
    std::vector<std::string> pnames;
    std::string callee = names_.str(c->callee->name);
    std::optional<ClassId> result;
    if (c->callee->ref == ast::RefKind::Class) {
      result = static_cast<ClassId>(c->callee->index);
      for (auto &p : builtins().cls(*result).ctorParams)
        pnames.push_back(p.name);
    } else if (c->callee->ref == ast::RefKind::Fn && c->callee->index < a_.unit.fns.size()) {
      callee = "fn " + callee;
      for (auto &p : a_.unit.fns[c->callee->index]->params) {
        pnames.push_back(names_.str(p.name));
        unsigned buf = a_.sm.FindBufferContainingLoc(p.loc);
        defs.push_back({buf, buf ? static_cast<size_t>(p.loc.getPointer() - a_.sm.getMemoryBuffer(buf)->getBufferStart()) : 0});
      }
    }
    args(c->args, callee, defs, pnames);
    return result;
  }

  /// A method call: the method found by name on the receiver's class (on any class when none
  /// matches), its keyword arguments; the result is the method's return class.
  std::optional<ClassId> methodCallExpr(const ast::MethodCallExpr *m) {
    std::optional<ClassId> recv = expr(m->object);
    std::string name = names_.str(m->method);
    auto ms = methodsNamed(name, recv);
    if (ms.empty() && recv)
      ms = methodsNamed(name, std::nullopt);
    Occurrence &o = add(m->loc, name, SymKind::Method, false);
    o.cls = recv;
    if (ms.size() == 1)
      o.id = static_cast<int>(ms[0]);
    std::string callee = name;
    if (ms.size() == 1)
      callee = builtins().cls(builtins().method(ms[0]).cls).name + "." + name;
    std::vector<std::string> pnames;
    if (!ms.empty())
      for (auto &p : builtins().method(ms[0]).params)
        pnames.push_back(p.name);
    args(m->args, callee, {}, pnames);
    return returnClass(ms);
  }

  /// A slice: marks the occurrence naming the sliced buffer; a Buffer's slice is a Chunk.
  std::optional<ClassId> sliceExpr(const ast::SliceExpr *s) {
    size_t before = a_.occurrences.size();
    auto cls = expr(s->object);
    // The occurrence naming the sliced buffer (`input[...]`, `...get_input_buffer()[...]`).
    for (size_t k = before; k < a_.occurrences.size(); ++k) {
      Occurrence &o = a_.occurrences[k];
      if (o.buffer && a_.sm.getMemoryBuffer(o.buffer)->getBufferStart() + o.offset == s->object->loc.getPointer() &&
          (o.kind == SymKind::Local || o.kind == SymKind::Method)) {
        o.slice = s;
        break;
      }
    }
    expr(s->lo);
    expr(s->hi);
    expr(s->step);
    if (cls && builtins().cls(*cls).name == "Buffer")
      return classByName("Chunk");
    return std::nullopt;
  }

  /// An attribute: an enum member or an attribute of the receiver's class.
  std::optional<ClassId> attrExpr(const ast::AttrExpr *at) {
    auto recv = expr(at->object);
    std::string name = names_.str(at->name);
    if (at->enumId >= 0) {
      Occurrence &o = add(at->loc, name, SymKind::EnumMember, false);
      o.id = at->enumId;
      o.member = at->member;
    } else {
      Occurrence &o = add(at->loc, name, SymKind::Attr, false);
      o.cls = recv;
    }
    return std::nullopt;
  }

  void setDef(Occurrence &o, llvm::SMLoc loc) {
    o.defBuffer = a_.sm.FindBufferContainingLoc(loc);
    if (o.defBuffer)
      o.defOffset = static_cast<size_t>(loc.getPointer() - a_.sm.getMemoryBuffer(o.defBuffer)->getBufferStart());
  }

  Analysis &a_;
  const ast::Interner &names_;
  std::vector<SlotDef> frame_;
};

/// The byte range of the token starting at `offset` of `buf` (an identifier or number: its
/// length; anything else: one character).
size_t tokenEnd(llvm::StringRef buf, size_t offset) {
  if (offset >= buf.size())
    return buf.size();
  size_t e = offset;
  while (e < buf.size() && isIdent(buf[e]))
    ++e;
  if (e == offset && buf[e] != '\n')
    e = offset + utf8Len(static_cast<unsigned char>(buf[e]));
  return std::min(e, buf.size());
}

} // namespace

Analysis::Analysis(std::unique_ptr<driver::CompilerSession> s)
    : session(std::move(s)), sm(session->sourceMgr()), ctx(session->astContext()), unit(session->unit()) {}

Analysis::~Analysis() = default;

std::unique_ptr<Analysis> Analyzer::analyze(const std::string &path, const std::string &text,
                                            const std::map<std::string, std::string> &overlay) const {
  auto t0 = std::chrono::steady_clock::now();
  driver::CompilerInvocation inv;
  inv.defines = opts_.defines;
  inv.includeDirs = opts_.path.includeDirs;
  inv.stdlibDir = opts_.path.stdlibDir;
  inv.overlay = overlay; // the open documents (the workspace's path has none of its own)
  inv.maxLoopIterations = opts_.maxLoopIterations;
  inv.maxCallDepth = std::min(opts_.maxCallDepth, driver::kMaxCallDepthLimit);
  // Diagnostics are captured; print(...) goes nowhere; the extra checks run on a program whose
  // passes checked out.
  driver::SessionOptions so;
  so.tool = "msccl-lsp";
  so.captureDiagnostics = true;
  so.printStream = &llvm::nulls();
  so.afterPhase = [this](driver::Phase done, driver::CompilerSession &s) {
    if (done == driver::Phase::Passes && s.program())
      for (auto &check : checks_)
        check(s.unit(), *s.program(), s.diag());
    return true;
  };
  auto a = std::make_unique<Analysis>(std::make_unique<driver::CompilerSession>(std::move(inv), llvm::nulls(), so));
  a->path = path;
  a->text = Text(text);
  a->mainBuffer = a->session->setMainBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, path));
  diag::DiagEngine &diag = a->session->diag();
  try {
    a->session->run(opts_.elaborate ? driver::Phase::Passes : driver::Phase::Check);
  } catch (const std::exception &e) {
    diag.report(llvm::SMLoc(), diag::DiagId::err_pass, {std::string("internal error: ") + e.what()});
  }
  a->parsed = a->unit.main != nullptr;

  // Diagnostics: locate; notes join the diagnostic they follow; those of imported files are
  // shown at the import that brought the file in, with the real place as the first note.
  auto locate = [&](const diag::Diagnostic &d) {
    LocatedDiag l;
    l.level = d.level;
    l.message = d.message;
    l.kindName = diag::nameOf(d.id);
    if (d.loc.isValid()) {
      l.buffer = a->sm.FindBufferContainingLoc(d.loc);
      if (l.buffer) {
        llvm::StringRef buf = a->sm.getMemoryBuffer(l.buffer)->getBuffer();
        l.begin = static_cast<size_t>(d.loc.getPointer() - buf.data());
        l.end = tokenEnd(buf, l.begin);
      }
    }
    return l;
  };
  bool skipNotes = false;
  for (const diag::Diagnostic &d : diag.takeCaptured()) {
    // A file without a program is a library module (what `import` loads): not an error in an
    // editor, which opens modules as often as programs.
    if (d.id == diag::DiagId::err_no_program) {
      skipNotes = true;
      continue;
    }
    if (d.level != diag::Level::Note)
      skipNotes = false;
    else if (skipNotes)
      continue;
    LocatedDiag l = locate(d);
    if (d.level == diag::Level::Note && !a->diagnostics.empty()) {
      a->diagnostics.back().notes.push_back(std::move(l));
      continue;
    }
    if (l.buffer != 0 && l.buffer != a->mainBuffer) {
      // Climb the import chain to the import statement of the main file.
      unsigned b = l.buffer;
      llvm::SMLoc site;
      while (b != 0 && b != a->mainBuffer) {
        site = a->sm.getParentIncludeLoc(b);
        b = site.isValid() ? a->sm.FindBufferContainingLoc(site) : 0;
      }
      LocatedDiag outer;
      outer.level = l.level;
      outer.kindName = l.kindName;
      outer.message = "in imported file `" + a->bufferPath(l.buffer) + "`: " + l.message;
      if (b == a->mainBuffer) {
        outer.buffer = b;
        outer.begin = static_cast<size_t>(site.getPointer() - a->sm.getMemoryBuffer(b)->getBufferStart());
        outer.end = tokenEnd(a->sm.getMemoryBuffer(b)->getBuffer(), outer.begin);
      }
      l.level = diag::Level::Note;
      outer.notes.push_back(std::move(l));
      a->diagnostics.push_back(std::move(outer));
      continue;
    }
    a->diagnostics.push_back(std::move(l));
  }

  if (a->parsed) {
    Indexer ix(*a);
    ix.run();
  }
  a->millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return a;
}

} // namespace msccl::lsp
