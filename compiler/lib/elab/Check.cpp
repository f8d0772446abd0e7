//===- Check.cpp - The checks phase: names, arity, keywords, static types ---------------===//
#include "msccl/elab/Check.h"

#include "msccl/diag/Spellings.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>

#include <algorithm>
#include <optional>

namespace msccl::elab {

using namespace msccl::ast;
using diag::DiagId;

bool bindArguments(const std::vector<Arg> &args, const std::vector<ParamSig> &params, const std::string &callee,
                   const Interner &names, llvm::SMLoc callLoc, Binding &out,
                   const std::function<void(llvm::SMLoc, DiagId, std::vector<std::string>)> &report) {
  out.argOf.assign(params.size(), -1);
  bool ok = true;
  size_t positional = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg &a = args[i];
    if (a.name == kNoSym) {
      if (positional >= params.size()) {
        report(a.loc, DiagId::err_too_many_args,
               {callee, std::to_string(params.size()), std::to_string(args.size())});
        return false;
      }
      out.argOf[positional++] = static_cast<int>(i);
      continue;
    }
    size_t p = 0;
    while (p < params.size() && params[p].name != a.name)
      ++p;
    if (p == params.size()) {
      // A keyword of the design documents, given to a builtin (a user's fn keeps the plain error).
      const diag::Spelling *old = callee.rfind("fn `", 0) == 0 ? nullptr : diag::findSpelling(diag::Spelling::Kind::Keyword, names.str(a.name));
      if (old) {
        report(a.loc, DiagId::err_old_spelling, {diag::quoteOld(*old), std::string(old->fixIt)});
        ok = false;
        continue;
      }
      std::vector<std::string> cands;
      for (auto &q : params)
        cands.push_back(names.str(q.name));
      report(a.loc, DiagId::err_unknown_keyword, {callee, names.str(a.name), diag::didYouMean(names.str(a.name), cands)});
      ok = false;
      continue;
    }
    if (out.argOf[p] != -1) {
      report(a.loc, DiagId::err_arg_given_twice, {names.str(a.name), callee});
      ok = false;
      continue;
    }
    out.argOf[p] = static_cast<int>(i);
  }
  if (!ok)
    return false;
  for (size_t p = 0; p < params.size(); ++p)
    if (out.argOf[p] == -1 && params[p].required) {
      report(callLoc, DiagId::err_missing_arg, {names.str(params[p].name), callee});
      ok = false;
    }
  return ok;
}

namespace {

/// What the checker knows statically about an expression's value.
struct SType {
  enum Kind : uint8_t { Unknown, Int, Bool, Str, None, List, Tuple, Map, Enum, Class } kind = Unknown;
  uint8_t id = 0; ///< EnumId or ClassId
  static SType of(Kind k, uint8_t i = 0) { SType t; t.kind = k; t.id = i; return t; }
  std::string describe() const {
    switch (kind) {
    case Int: return "int";
    case Bool: return "bool";
    case Str: return "str";
    case None: return "none";
    case List: return "list";
    case Tuple: return "tuple";
    case Map: return "map";
    case Enum: return builtins().enums[id].name;
    case Class: return builtins().classes[id].name;
    default: return "?";
    }
  }
};

/// The DSL classes that make a collective: every row of the collectives table with a DSL class
/// (Collectives.def, Dsl = Yes), plus the DSL-only AllToAllV and TestCollective.
bool isCollectiveClass(ClassId c) {
#define MSCCL_DSL_CLASS_Yes(Kind) c == ClassId::Kind ||
#define MSCCL_DSL_CLASS_No(Kind)
#define MSCCL_COLLECTIVE(Kind, Name, R, B, I, O, P, T, Out, Nccl, Dsl, ...) MSCCL_DSL_CLASS_##Dsl(Kind)
  return
#include "msccl/runtime/Collectives.def"
      c == ClassId::AllToAllV || c == ClassId::TestCollective;
#undef MSCCL_DSL_CLASS_Yes
#undef MSCCL_DSL_CLASS_No
}

/// Whether a value of static type `t` can be passed where `p` is expected (Unknown: yes).
bool compatible(ParamType p, SType t) {
  if (t.kind == SType::Unknown || p == ParamType::Any)
    return true;
  auto isEnum = [&](EnumId e) { return t.kind == SType::Enum && t.id == static_cast<uint8_t>(e); };
  auto isClass = [&](ClassId c) { return t.kind == SType::Class && t.id == static_cast<uint8_t>(c); };
  switch (p) {
  case ParamType::Int: return t.kind == SType::Int;
  case ParamType::Size: return t.kind == SType::Int;
  case ParamType::OptInt: return t.kind == SType::Int || t.kind == SType::None;
  case ParamType::Bool: return t.kind == SType::Bool;
  case ParamType::Str: return t.kind == SType::Str;
  case ParamType::IntList:
  case ParamType::ChunkList:
  case ParamType::List: return t.kind == SType::List || t.kind == SType::Tuple;
  case ParamType::Map: return t.kind == SType::Map;
  case ParamType::None: return t.kind == SType::None;
  case ParamType::Chunk: return isClass(ClassId::Chunk);
  case ParamType::OptChunk: return isClass(ClassId::Chunk) || t.kind == SType::None;
  case ParamType::TbGroup: return isClass(ClassId::ThreadBlockGroup) || t.kind == SType::None;
  case ParamType::Collective: return t.kind == SType::Class && isCollectiveClass(static_cast<ClassId>(t.id));
  case ParamType::SyncType: return isEnum(EnumId::SyncType);
  case ParamType::ReduceOperationType: return isEnum(EnumId::ReduceOperationType);
  case ParamType::BufferType: return isEnum(EnumId::BufferType);
  case ParamType::ReplicationPolicy: return isEnum(EnumId::ReplicationPolicy);
  default: return true;
  }
}

struct GlobalRef {
  RefKind kind;
  uint32_t index;
  SMLoc loc;
};

class Checker {
public:
  Checker(Unit &u, diag::DiagEngine &d) : unit_(u), diag_(d), names_(u.ctx->names) {
    const auto &b = builtins();
    // The functions of the mscclpplang style exist in that style only (elsewhere `rank` and
    // `chunk` stay free for the program's own names).
    bool legacyStyle = mscclpplangStyle();
    for (size_t i = 0; i < b.fns.size(); ++i)
      if (legacyStyle || (b.fns[i].name != "chunk" && b.fns[i].name != "rank" && b.fns[i].name != "Check"))
        globals_[names_.intern(b.fns[i].name)] = {RefKind::Builtin, static_cast<uint32_t>(i), SMLoc()};
    for (size_t i = 0; i < b.classes.size(); ++i)
      if (b.classes[i].constructible)
        globals_[names_.intern(b.classes[i].name)] = {RefKind::Class, static_cast<uint32_t>(i), SMLoc()};
    for (size_t i = 0; i < b.enums.size(); ++i)
      globals_[names_.intern(b.enums[i].name)] = {RefKind::Enum, static_cast<uint32_t>(i), SMLoc()};
  }

  /// Whether the unit's program declares `style = "mscclpplang"` (a string literal): there,
  /// MSCCLPPLang's `Buffer.input / .output / .scratch` name buffers, and the spellings of
  /// MSCCLPPLang's API (group_load_reduce, ...) are that style's own, not old spellings.
  bool mscclpplangStyle() {
    for (Module *m : unit_.modules)
      for (ProgramDecl *p : m->programs)
        for (auto &o : p->options)
          if (names_.str(o.name) == "style" && o.value->kind == ExprKind::Str &&
              static_cast<StrExpr *>(o.value)->value == "mscclpplang")
            return true;
    return false;
  }
  /// The design documents' spellings (diag/Spellings.def) are today's style's: in the mscclpplang
  /// style `Buffer.input`, `ChannelType.sm`, `group_store`, ... are that style's own names.
  bool oldSpellings() {
    if (!oldSpellings_)
      oldSpellings_ = !mscclpplangStyle();
    return *oldSpellings_;
  }
  std::optional<bool> oldSpellings_;


  bool run() {
    // Declarations of every module.
    for (Module *m : unit_.modules) {
      for (auto &p : m->params)
        declare(p.name, p.loc, RefKind::Param, static_cast<uint32_t>(unit_.params.size()), "param") &&
            (unit_.params.push_back(&p), true);
      for (FnDecl *f : m->fns)
        declare(f->name, f->loc, RefKind::Fn, static_cast<uint32_t>(unit_.fns.size()), "fn") &&
            (unit_.fns.push_back(f), true);
    }
    Module *main = unit_.main;
    if (main->programs.empty()) {
      // Point at the first declaration (or the start of the file).
      SMLoc at = SMLoc::getFromPointer(diag_.sourceMgr().getMemoryBuffer(main->bufferId)->getBufferStart());
      for (SMLoc l : {main->imports.empty() ? SMLoc() : main->imports[0].loc, main->params.empty() ? SMLoc() : main->params[0].loc,
                      main->fns.empty() ? SMLoc() : main->fns[0]->loc})
        if (l.isValid() && (at.getPointer() == diag_.sourceMgr().getMemoryBuffer(main->bufferId)->getBufferStart() ||
                            l.getPointer() < at.getPointer()))
          at = l;
      diag_.report(at, DiagId::err_no_program, {main->filename});
    } else {
      unit_.program = main->programs[0];
      for (size_t i = 1; i < main->programs.size(); ++i) {
        diag_.report(main->programs[i]->loc, DiagId::err_multiple_programs);
        diag_.report(main->programs[0]->loc, DiagId::note_previous_definition);
      }
    }
    // Bodies.
    for (auto *p : unit_.params)
      expr(const_cast<Expr *>(p->value));
    for (FnDecl *f : unit_.fns)
      checkFn(*f);
    if (unit_.program)
      checkProgram(*unit_.program);
    return !diag_.hadError();
  }

private:
  void error(SMLoc l, DiagId id, std::vector<std::string> args = {}) { diag_.report(l, id, std::move(args)); }
  const std::string &str(Sym s) { return names_.str(s); }

  bool declare(Sym name, SMLoc loc, RefKind kind, uint32_t index, const char *what) {
    auto it = globals_.find(name);
    if (it != globals_.end()) {
      if (it->second.kind == RefKind::Builtin || it->second.kind == RefKind::Class || it->second.kind == RefKind::Enum) {
        error(loc, DiagId::err_shadows_builtin, {what, str(name)});
      } else {
        error(loc, DiagId::err_redefinition, {what, str(name)});
        error(it->second.loc, DiagId::note_previous_definition);
      }
      return false;
    }
    globals_[name] = {kind, index, loc};
    return true;
  }

  // ---- scopes ----
  struct Scope {
    llvm::SmallDenseMap<Sym, std::pair<uint32_t, SMLoc>, 8> names;
  };
  std::vector<Scope> scopes_;
  uint32_t nextSlot_ = 0, maxSlot_ = 0;
  int loopDepth_ = 0;
  bool inFn_ = false;
  llvm::DenseSet<Sym> reassigned_; ///< names assigned with `=` somewhere in the current body
  llvm::DenseMap<uint32_t, SType> slotType_;

  uint32_t bind(Binder &b) {
    Scope &s = scopes_.back();
    auto it = s.names.find(b.name);
    if (it != s.names.end()) {
      error(b.loc, DiagId::err_redeclared_local, {str(b.name)});
      error(it->second.second, DiagId::note_previous_definition);
      b.slot = it->second.first;
      return b.slot;
    }
    b.slot = nextSlot_++;
    maxSlot_ = std::max(maxSlot_, nextSlot_);
    s.names[b.name] = {b.slot, b.loc};
    slotType_.erase(b.slot);
    return b.slot;
  }
  void push() { scopes_.emplace_back(); }
  void pop() {
    // Slots of a finished block are not reused: a fn frame holds every let of the body.
    scopes_.pop_back();
  }

  void collectAssigned(const Block &b) {
    for (Stmt *s : b.stmts) {
      switch (s->kind) {
      case StmtKind::Assign: {
        auto *a = static_cast<AssignStmt *>(s);
        if (a->target->kind == ExprKind::Name)
          reassigned_.insert(static_cast<NameExpr *>(a->target)->name);
        break;
      }
      case StmtKind::For: collectAssigned(static_cast<ForStmt *>(s)->body); break;
      case StmtKind::If:
        collectAssigned(static_cast<IfStmt *>(s)->then);
        collectAssigned(static_cast<IfStmt *>(s)->otherwise);
        break;
      case StmtKind::With: collectAssigned(static_cast<WithStmt *>(s)->body); break;
      default: break;
      }
    }
  }

  void beginBody(const Block &b) {
    nextSlot_ = maxSlot_ = 0;
    reassigned_.clear();
    slotType_.clear();
    collectAssigned(b);
    scopes_.clear();
    push();
  }

  void checkFn(FnDecl &f) {
    // Defaults see only globals.
    for (auto &p : f.params)
      if (p.defaultValue)
        expr(p.defaultValue);
    beginBody(f.body);
    inFn_ = true;
    for (auto &p : f.params) {
      Binder b{p.name, p.loc};
      bind(b);
    }
    block(f.body, false);
    f.numSlots = maxSlot_;
    inFn_ = false;
    scopes_.clear();
  }

  void checkProgram(ProgramDecl &p) {
    const auto &opts = builtins().options;
    llvm::DenseMap<Sym, SMLoc> seen;
    bool haveCollective = false;
    for (auto &o : p.options) {
      expr(o.value);
      auto prev = seen.find(o.name);
      if (prev != seen.end()) {
        error(o.loc, DiagId::err_duplicate_program_option, {str(o.name)});
        error(prev->second, DiagId::note_previous_definition);
        continue;
      }
      seen[o.name] = o.loc;
      size_t k = 0;
      while (k < opts.size() && opts[k].name != str(o.name))
        ++k;
      if (k == opts.size()) {
        std::vector<std::string> cands;
        for (auto &x : opts)
          cands.push_back(x.name);
        error(o.loc, DiagId::err_unknown_program_option, {str(o.name), diag::didYouMean(str(o.name), cands)});
        continue;
      }
      if (opts[k].name == "collective")
        haveCollective = true;
      SType t = typeOf(o.value);
      if (!compatible(opts[k].type, t))
        error(o.value->loc, DiagId::err_arg_type, {opts[k].name, "program", describe(opts[k].type), t.describe()});
    }
    if (!haveCollective)
      error(p.loc, DiagId::err_missing_collective);
    beginBody(p.body);
    block(p.body, false);
    p.numSlots = maxSlot_;
    scopes_.clear();
  }

  void block(Block &b, bool newScope = true) {
    if (newScope)
      push();
    for (Stmt *s : b.stmts)
      stmt(s);
    if (newScope)
      pop();
  }

  void stmt(Stmt *s) {
    switch (s->kind) {
    case StmtKind::Let: {
      auto *x = static_cast<LetStmt *>(s);
      expr(x->value);
      SType t = typeOf(x->value);
      for (auto &b : x->names) {
        uint32_t slot = bind(b);
        if (!x->tuple && !reassigned_.count(b.name) && t.kind != SType::Unknown)
          slotType_[slot] = t;
      }
      break;
    }
    case StmtKind::Assign: {
      auto *x = static_cast<AssignStmt *>(s);
      expr(x->value);
      if (x->target->kind == ExprKind::Name) {
        auto *n = static_cast<NameExpr *>(x->target);
        if (!resolveLocal(n)) {
          auto it = globals_.find(n->name);
          if (it == globals_.end())
            error(n->loc, DiagId::err_assign_undeclared, {str(n->name)});
          else if (it->second.kind == RefKind::Param)
            error(n->loc, DiagId::err_assign_to_param, {str(n->name)});
          else
            error(n->loc, DiagId::err_assign_to_global, {refDesc(it->second.kind), str(n->name)});
        }
      } else {
        expr(x->target);
      }
      break;
    }
    case StmtKind::For: {
      auto *x = static_cast<ForStmt *>(s);
      expr(x->iter);
      push();
      for (auto &v : x->vars)
        bind(v);
      ++loopDepth_;
      block(x->body, false);
      --loopDepth_;
      pop();
      break;
    }
    case StmtKind::If: {
      auto *x = static_cast<IfStmt *>(s);
      expr(x->cond);
      block(x->then);
      block(x->otherwise);
      break;
    }
    case StmtKind::With: {
      auto *x = static_cast<WithStmt *>(s);
      expr(x->context);
      SType t = typeOf(x->context);
      if (t.kind != SType::Unknown && !(t.kind == SType::Class && t.id == static_cast<uint8_t>(ClassId::LoopIterationContext)))
        error(x->context->loc, DiagId::err_with_not_loop, {t.describe()});
      block(x->body);
      break;
    }
    case StmtKind::Return: {
      auto *x = static_cast<ReturnStmt *>(s);
      if (!inFn_)
        error(s->loc, DiagId::err_return_outside_fn);
      if (x->value)
        expr(x->value);
      break;
    }
    case StmtKind::Break:
    case StmtKind::Continue:
      if (loopDepth_ == 0)
        error(s->loc, DiagId::err_break_outside_loop, {s->kind == StmtKind::Break ? "break" : "continue"});
      break;
    case StmtKind::Expr: {
      Expr *e = static_cast<ExprStmt *>(s)->expr;
      expr(e);
      if (e->kind != ExprKind::Call && e->kind != ExprKind::MethodCall)
        error(e->loc, DiagId::warn_unused_result);
      break;
    }
    }
  }

  static const char *refDesc(RefKind k) {
    switch (k) {
    case RefKind::Fn: return "fn";
    case RefKind::Builtin: return "builtin function";
    case RefKind::Class: return "class";
    case RefKind::Enum: return "enum";
    case RefKind::Param: return "param";
    default: return "name";
    }
  }

  bool resolveLocal(NameExpr *n) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->names.find(n->name);
      if (f != it->names.end()) {
        n->ref = RefKind::Local;
        n->index = f->second.first;
        return true;
      }
    }
    return false;
  }

  /// Resolves a name; returns false (after reporting) if unknown.
  bool resolve(NameExpr *n) {
    if (resolveLocal(n))
      return true;
    auto it = globals_.find(n->name);
    if (it == globals_.end()) {
      if (auto *old = oldSpellings() ? diag::findSpelling(diag::Spelling::Kind::Name, str(n->name)) : nullptr) {
        error(n->loc, DiagId::err_old_spelling, {diag::quoteOld(*old), std::string(old->fixIt)});
        return false;
      }
      std::vector<std::string> cands;
      for (auto &s : scopes_)
        for (auto &kv : s.names)
          cands.push_back(str(kv.first));
      for (auto &kv : globals_)
        cands.push_back(str(kv.first));
      const std::string &nm = str(n->name);
      if (nm == "chunk" || nm == "rank" || nm == "Check")
        error(n->loc, DiagId::err_unknown_name,
              {nm, "; `" + nm + "` belongs to the mscclpplang style: declare the program with `style = \"mscclpplang\"`"});
      else
        error(n->loc, DiagId::err_unknown_name, {nm, diag::didYouMean(nm, cands)});
      return false;
    }
    n->ref = it->second.kind;
    n->index = it->second.index;
    return true;
  }

  void args(std::vector<Arg> &as) {
    for (auto &a : as)
      expr(a.value);
  }

  void report(SMLoc l, DiagId id, std::vector<std::string> a) { error(l, id, std::move(a)); }

  void checkArgTypes(const std::vector<Arg> &as, const Binding &b, const std::vector<ParamInfo> &params,
                     const std::string &callee) {
    for (size_t p = 0; p < params.size() && p < b.argOf.size(); ++p) {
      if (b.argOf[p] < 0)
        continue;
      const Arg &a = as[static_cast<size_t>(b.argOf[p])];
      SType t = typeOf(a.value);
      if (!compatible(params[p].type, t))
        error(a.value->loc, DiagId::err_arg_type, {params[p].name, callee, describe(params[p].type), t.describe()});
    }
  }

  std::vector<ParamSig> sigOf(const std::vector<ParamInfo> &ps) {
    std::vector<ParamSig> out;
    for (auto &p : ps)
      out.push_back({names_.intern(p.name), p.def.kind == DefaultValue::Required});
    return out;
  }

  void call(CallExpr *c) {
    args(c->args);
    NameExpr *n = c->callee;
    if (!resolve(n))
      return;
    auto rep = [&](SMLoc l, DiagId id, std::vector<std::string> a) { error(l, id, std::move(a)); };
    switch (n->ref) {
    case RefKind::Fn: {
      FnDecl *f = unit_.fns[n->index];
      std::vector<ParamSig> sig;
      for (auto &p : f->params)
        sig.push_back({p.name, p.defaultValue == nullptr});
      c->bound = bindArguments(c->args, sig, "fn `" + str(f->name) + "`", names_, c->loc, c->binding, rep);
      break;
    }
    case RefKind::Class: {
      const ClassInfo &ci = builtins().classes[n->index];
      std::string desc = "`" + ci.name + "`";
      aliasKeywords(c->args, &ci.ctorParams);
      c->bound = bindArguments(c->args, sigOf(ci.ctorParams), desc, names_, c->loc, c->binding, rep);
      if (c->bound)
        checkArgTypes(c->args, c->binding, ci.ctorParams, desc);
      break;
    }
    case RefKind::Builtin: {
      const FnInfo &fi = builtins().fns[n->index];
      for (auto &a : c->args)
        if (a.name != kNoSym) {
          error(a.loc, DiagId::err_unknown_keyword, {"builtin `" + fi.name + "`", str(a.name), ""});
          return;
        }
      int nargs = static_cast<int>(c->args.size());
      if (fi.maxArgs >= 0 && nargs > fi.maxArgs)
        error(c->args[static_cast<size_t>(fi.maxArgs)].loc, DiagId::err_too_many_args,
              {"builtin `" + fi.name + "`", std::to_string(fi.maxArgs), std::to_string(nargs)});
      else if (nargs < fi.minArgs)
        error(c->loc, DiagId::err_missing_arg, {"#" + std::to_string(nargs + 1), "builtin `" + fi.name + "`"});
      break;
    }
    default:
      error(c->loc, DiagId::err_not_callable);
      break;
    }
  }

  const MethodInfo *findMethod(ClassId cls, Sym name, MethodId *idOut = nullptr) {
    const auto &b = builtins();
    for (MethodId m : b.cls(cls).methods)
      if (b.method(m).name == str(name)) {
        if (idOut)
          *idOut = m;
        return &b.method(m);
      }
    return nullptr;
  }

  /// `sync = "before"` -> `data_sync = SyncType.before` (a Keyword alias of Spellings.def), in a call
  /// of a builtin whose parameters `params` include today's keyword but not the old one (null: a
  /// method of a receiver known only at run time, which then checks the keyword), when the value
  /// is a string literal naming a member of the enum. Other uses stay for bindArguments, which
  /// names today's spelling in an error.
  void aliasKeywords(std::vector<Arg> &as, const std::vector<ParamInfo> *params) {
    auto has = [&](std::string_view name) {
      return !params || std::any_of(params->begin(), params->end(), [&](const ParamInfo &p) { return p.name == name; });
    };
    for (Arg &a : as) {
      if (a.name == kNoSym || a.value->kind != ExprKind::Str)
        continue;
      const diag::Spelling *old = oldSpellings() ? diag::findSpelling(diag::Spelling::Kind::Keyword, str(a.name)) : nullptr;
      if (!old || old->action != diag::Spelling::Action::Alias || (params && has(old->old)) || !has(old->today))
        continue;
      const std::string &member = static_cast<StrExpr *>(a.value)->value;
      const auto &enums = builtins().enums;
      auto e = std::find_if(enums.begin(), enums.end(), [&](const EnumInfo &x) { return x.name == old->extra; });
      if (e == enums.end() || std::none_of(e->members.begin(), e->members.end(), [&](const auto &m) { return m.first == member; }))
        continue;
      std::string today = std::string(old->today) + " = " + e->name + "." + member;
      error(a.loc, DiagId::warn_old_spelling, {"`" + str(a.name) + " = \"" + member + "\"`", "`" + today + "`"});
      auto *attr = unit_.ctx->expr<AttrExpr>(a.value->loc, unit_.ctx->expr<NameExpr>(a.value->loc, names_.intern(e->name)),
                                             names_.intern(member));
      a.name = names_.intern(std::string(old->today));
      a.value = attr;
      expr(attr);
    }
  }

  /// `x.relaxedSignal(args)` -> `x.signal(args, relaxed = true)` (a Method alias of Spellings.def).
  void rewriteAlias(MethodCallExpr *m, const diag::Spelling &old) {
    m->method = names_.intern(std::string(old.today));
    m->args.push_back(Arg{names_.intern(std::string(old.extra)), m->loc, unit_.ctx->expr<BoolExpr>(m->loc, true)});
  }

  void methodCall(MethodCallExpr *m) {
    const diag::Spelling *old = oldSpellings() ? diag::findSpelling(diag::Spelling::Kind::Method, str(m->method)) : nullptr;
    if (old && old->action == diag::Spelling::Action::Error) {
      args(m->args); // the receiver may be a class name (`Rank.Semaphore(...)`): not checked
      error(m->loc, DiagId::err_old_spelling, {diag::quoteOld(*old), std::string(old->fixIt)});
      return;
    }
    expr(m->object);
    args(m->args);
    SType t = typeOf(m->object);
    ClassId cls;
    if (t.kind == SType::Class)
      cls = static_cast<ClassId>(t.id);
    else if (t.kind == SType::List)
      cls = ClassId::list;
    else if (t.kind == SType::Map)
      cls = ClassId::map;
    else if (t.kind == SType::Unknown) {
      if (old && old->action == diag::Spelling::Action::Alias) {
        // The receiver's class is known only when the program runs: rewrite here, the elaborator
        // reports a receiver without today's form (`PortChannel.signal` has no `relaxed`).
        error(m->loc, DiagId::warn_old_spelling, {diag::quoteOld(*old), std::string(old->fixIt)});
        rewriteAlias(m, *old);
      }
      aliasKeywords(m->args, nullptr);
      return;
    } else {
      error(m->loc, DiagId::err_unknown_method, {t.describe(), str(m->method), ""});
      return;
    }
    const auto &b = builtins();
    const MethodInfo *mi = findMethod(cls, m->method);
    if (!mi && old && old->action == diag::Spelling::Action::Alias) {
      // `ch.relaxedSignal(tb)` -> `ch.signal(tb, relaxed = true)`, where today's method has that parameter.
      Sym today = names_.intern(std::string(old->today));
      const MethodInfo *target = findMethod(cls, today);
      bool hasExtra = target && std::any_of(target->params.begin(), target->params.end(),
                                            [&](const ParamInfo &p) { return p.name == old->extra; });
      if (!hasExtra) {
        error(m->loc, DiagId::err_old_spelling, {diag::quoteOld(*old), std::string(old->fixIt) + " (`" + b.cls(cls).name +
                                                                           "` has no such form)"});
        return;
      }
      error(m->loc, DiagId::warn_old_spelling, {diag::quoteOld(*old), std::string(old->fixIt)});
      rewriteAlias(m, *old);
      mi = target;
    }
    if (!mi) {
      std::vector<std::string> cands;
      for (MethodId x : b.cls(cls).methods)
        cands.push_back(b.method(x).name);
      error(m->loc, DiagId::err_unknown_method, {b.cls(cls).name, str(m->method), diag::didYouMean(str(m->method), cands)});
      return;
    }
    aliasKeywords(m->args, &mi->params);
    Binding bnd;
    std::string desc = "method `" + b.cls(cls).name + "." + mi->name + "`";
    auto rep = [&](SMLoc l, DiagId id, std::vector<std::string> a) { error(l, id, std::move(a)); };
    if (bindArguments(m->args, sigOf(mi->params), desc, names_, m->loc, bnd, rep))
      checkArgTypes(m->args, bnd, mi->params, desc);
  }

  void attr(AttrExpr *a) {
    if (a->object->kind == ExprKind::Name) {
      auto *n = static_cast<NameExpr *>(a->object);
      if (!resolveLocal(n)) {
        // `ChannelType.memory`: an enum of the mscclpplang style only; its Name row says what to write.
        const diag::Spelling *old = nullptr;
        if (oldSpellings()) {
          old = diag::findSpelling(diag::Spelling::Kind::Attr, str(n->name) + "." + str(a->name));
          if (!old)
            if (auto *name = diag::findSpelling(diag::Spelling::Kind::Name, str(n->name)); name && globals_.count(n->name))
              old = name;
        }
        if (old) {
          if (old->action == diag::Spelling::Action::Error) {
            error(n->loc, DiagId::err_old_spelling, {diag::quoteOld(*old), std::string(old->fixIt)});
            return;
          }
          // `Buffer.scratch` -> `BufferType.scratch`: read on as today's `Enum.member`.
          error(n->loc, DiagId::warn_old_spelling, {diag::quoteOld(*old), std::string(old->fixIt)});
          std::string_view today = old->today;
          size_t dot = today.find('.');
          n->name = names_.intern(std::string(today.substr(0, dot)));
          a->name = names_.intern(std::string(today.substr(dot + 1)));
        }
        auto it = globals_.find(n->name);
        if (it != globals_.end() && it->second.kind == RefKind::Enum) {
          n->ref = RefKind::Enum;
          n->index = it->second.index;
          const EnumInfo &e = builtins().enums[n->index];
          std::vector<std::string> cands;
          for (size_t i = 0; i < e.members.size(); ++i) {
            cands.push_back(e.members[i].first);
            if (e.members[i].first == str(a->name)) {
              a->enumId = static_cast<int>(n->index);
              a->member = static_cast<int>(e.members[i].second);
            }
          }
          if (a->enumId < 0)
            error(a->loc, DiagId::err_unknown_enum_member, {e.name, str(a->name), diag::didYouMean(str(a->name), cands)});
          return;
        }
        // In the mscclpplang style, MSCCLPPLang's `Buffer.input / .output / .scratch` (the class
        // `Buffer` is not an enum) are the members of BufferType.
        if (it != globals_.end() && it->second.kind == RefKind::Class &&
            static_cast<ClassId>(it->second.index) == ClassId::Buffer && mscclpplangStyle()) {
          const EnumInfo &e = builtins().enumInfo(EnumId::BufferType);
          for (auto &m : e.members)
            if (m.first == str(a->name)) {
              n->ref = RefKind::Enum;
              n->index = static_cast<uint32_t>(EnumId::BufferType);
              a->enumId = static_cast<int>(EnumId::BufferType);
              a->member = static_cast<int>(m.second);
              return;
            }
        }
      }
    }
    expr(a->object);
    SType t = typeOf(a->object);
    if (t.kind == SType::Class) {
      const auto &b = builtins();
      ClassId cls = static_cast<ClassId>(t.id);
      std::vector<std::string> cands;
      for (AttrId x : b.cls(cls).attrs) {
        cands.push_back(b.attr(x).name);
        if (b.attr(x).name == str(a->name))
          return;
      }
      error(a->loc, DiagId::err_unknown_attribute, {b.cls(cls).name, str(a->name), diag::didYouMean(str(a->name), cands)});
    }
  }

  void expr(Expr *e) {
    switch (e->kind) {
    case ExprKind::Int: case ExprKind::Str: case ExprKind::Bool: case ExprKind::None: return;
    case ExprKind::Name: {
      auto *n = static_cast<NameExpr *>(e);
      if (resolve(n) && n->ref != RefKind::Local && n->ref != RefKind::Param)
        error(n->loc, DiagId::err_not_a_value, {refDesc(n->ref), str(n->name)});
      return;
    }
    case ExprKind::Unary: expr(static_cast<UnaryExpr *>(e)->operand); return;
    case ExprKind::Binary: expr(static_cast<BinaryExpr *>(e)->lhs); expr(static_cast<BinaryExpr *>(e)->rhs); return;
    case ExprKind::Logical: expr(static_cast<LogicalExpr *>(e)->lhs); expr(static_cast<LogicalExpr *>(e)->rhs); return;
    case ExprKind::Not: expr(static_cast<NotExpr *>(e)->operand); return;
    case ExprKind::Compare:
      for (auto *o : static_cast<CompareExpr *>(e)->operands)
        expr(o);
      return;
    case ExprKind::Ternary: {
      auto *t = static_cast<TernaryExpr *>(e);
      expr(t->cond); expr(t->then); expr(t->otherwise);
      return;
    }
    case ExprKind::Call: call(static_cast<CallExpr *>(e)); return;
    case ExprKind::MethodCall: methodCall(static_cast<MethodCallExpr *>(e)); return;
    case ExprKind::Index: {
      auto *x = static_cast<IndexExpr *>(e);
      expr(x->object);
      for (auto *i : x->indices)
        expr(i);
      return;
    }
    case ExprKind::Slice: {
      auto *x = static_cast<SliceExpr *>(e);
      expr(x->object);
      for (Expr *p : {x->lo, x->hi, x->step})
        if (p)
          expr(p);
      return;
    }
    case ExprKind::Attr: attr(static_cast<AttrExpr *>(e)); return;
    case ExprKind::List: case ExprKind::Tuple:
      for (auto *i : static_cast<SeqExpr *>(e)->elems)
        expr(i);
      return;
    case ExprKind::Map:
      for (auto &kv : static_cast<MapExpr *>(e)->entries) {
        expr(kv.first);
        expr(kv.second);
      }
      return;
    }
  }

  /// Static type of an already-resolved expression (Unknown when not obvious).
  SType typeOf(Expr *e) {
    switch (e->kind) {
    case ExprKind::Int: return SType::of(SType::Int);
    case ExprKind::Str: return SType::of(SType::Str);
    case ExprKind::Bool: return SType::of(SType::Bool);
    case ExprKind::None: return SType::of(SType::None);
    case ExprKind::List: return SType::of(SType::List);
    case ExprKind::Tuple: return SType::of(SType::Tuple);
    case ExprKind::Map: return SType::of(SType::Map);
    case ExprKind::Not: return SType::of(SType::Bool);
    case ExprKind::Compare: return SType::of(SType::Bool);
    case ExprKind::Attr: {
      auto *a = static_cast<AttrExpr *>(e);
      if (a->enumId >= 0)
        return SType::of(SType::Enum, static_cast<uint8_t>(a->enumId));
      return {};
    }
    case ExprKind::Name: {
      auto *n = static_cast<NameExpr *>(e);
      if (n->ref == RefKind::Local) {
        auto it = slotType_.find(n->index);
        if (it != slotType_.end())
          return it->second;
      }
      return {};
    }
    case ExprKind::Call: {
      auto *c = static_cast<CallExpr *>(e);
      if (c->callee->ref == RefKind::Class)
        return SType::of(SType::Class, static_cast<uint8_t>(c->callee->index));
      return {};
    }
    case ExprKind::Slice: {
      SType o = typeOf(static_cast<SliceExpr *>(e)->object);
      if (o.kind == SType::Class && o.id == static_cast<uint8_t>(ClassId::Buffer))
        return SType::of(SType::Class, static_cast<uint8_t>(ClassId::Chunk));
      return {};
    }
    case ExprKind::MethodCall: {
      auto *m = static_cast<MethodCallExpr *>(e);
      SType o = typeOf(m->object);
      if (o.kind != SType::Class)
        return {};
      const MethodInfo *mi = findMethod(static_cast<ClassId>(o.id), m->method);
      if (!mi)
        return {};
      if (mi->returns == "Buffer")
        return SType::of(SType::Class, static_cast<uint8_t>(ClassId::Buffer));
      if (mi->returns == "SwitchChannelRankView")
        return SType::of(SType::Class, static_cast<uint8_t>(ClassId::SwitchChannelRankView));
      if (mi->returns == "None")
        return SType::of(SType::None);
      return {};
    }
    default: return {};
    }
  }

  Unit &unit_;
  diag::DiagEngine &diag_;
  Interner &names_;
  llvm::DenseMap<Sym, GlobalRef> globals_;
};

} // namespace

bool checkUnit(Unit &unit, diag::DiagEngine &diag) {
  unsigned before = diag.errorCount();
  Checker c(unit, diag);
  c.run();
  return diag.errorCount() == before;
}

} // namespace msccl::elab
