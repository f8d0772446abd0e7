//===- AstDump.cpp - `mscclc --emit=ast` ------------------------------------------------===//
#include "msccl/frontend/AstDump.h"

namespace msccl::frontend {

using namespace msccl::ast;

namespace {
class Dumper {
public:
  Dumper(const AstContext &c, const llvm::SourceMgr &sm, llvm::raw_ostream &os) : ctx_(c), sm_(sm), os_(os) {}

  void module(const Module &m) {
    line(0, "Module " + m.filename, SMLoc());
    for (auto &i : m.imports)
      line(1, "Import \"" + i.path + "\"", i.loc);
    for (auto &p : m.params) {
      line(1, "Param " + n(p.name), p.loc);
      expr(2, p.value);
    }
    for (auto *f : m.fns) {
      std::string sig = "Fn " + n(f->name) + "(";
      for (size_t i = 0; i < f->params.size(); ++i)
        sig += (i ? ", " : "") + n(f->params[i].name) + (f->params[i].defaultValue ? "=" : "");
      line(1, sig + ") slots=" + std::to_string(f->numSlots), f->loc);
      for (auto &p : f->params)
        if (p.defaultValue) {
          line(2, "Default " + n(p.name), p.loc);
          expr(3, p.defaultValue);
        }
      block(2, f->body);
    }
    for (auto *p : m.programs) {
      line(1, "Program " + n(p->name) + " slots=" + std::to_string(p->numSlots), p->loc);
      for (auto &o : p->options) {
        line(2, "Option " + n(o.name), o.loc);
        expr(3, o.value);
      }
      block(2, p->body);
    }
  }

private:
  std::string n(Sym s) { return ctx_.names.str(s); }
  void line(int depth, const std::string &text, SMLoc loc) {
    os_.indent(2 * depth) << text;
    if (loc.isValid()) {
      auto lc = sm_.getLineAndColumn(loc);
      os_ << " @" << lc.first << ":" << lc.second;
    }
    os_ << "\n";
  }
  std::string binders(const std::vector<Binder> &bs) {
    std::string s;
    for (size_t i = 0; i < bs.size(); ++i)
      s += (i ? ", " : "") + n(bs[i].name) + "#" + std::to_string(bs[i].slot);
    return s;
  }
  void block(int d, const Block &b) {
    for (auto *s : b.stmts)
      stmt(d, s);
  }
  void stmt(int d, const Stmt *s) {
    switch (s->kind) {
    case StmtKind::Let: {
      auto *x = static_cast<const LetStmt *>(s);
      line(d, "Let " + binders(x->names), s->loc);
      expr(d + 1, x->value);
      break;
    }
    case StmtKind::Assign: {
      auto *x = static_cast<const AssignStmt *>(s);
      const char *ops[] = {"=", "+=", "-=", "*="};
      line(d, std::string("Assign ") + ops[static_cast<int>(x->op)], s->loc);
      expr(d + 1, x->target);
      expr(d + 1, x->value);
      break;
    }
    case StmtKind::For: {
      auto *x = static_cast<const ForStmt *>(s);
      line(d, "For " + binders(x->vars), s->loc);
      expr(d + 1, x->iter);
      line(d + 1, "Body", x->body.lbrace);
      block(d + 2, x->body);
      break;
    }
    case StmtKind::If: {
      auto *x = static_cast<const IfStmt *>(s);
      line(d, "If", s->loc);
      expr(d + 1, x->cond);
      line(d + 1, "Then", x->then.lbrace);
      block(d + 2, x->then);
      if (!x->otherwise.stmts.empty()) {
        line(d + 1, "Else", x->otherwise.lbrace);
        block(d + 2, x->otherwise);
      }
      break;
    }
    case StmtKind::With: {
      auto *x = static_cast<const WithStmt *>(s);
      line(d, "With", s->loc);
      expr(d + 1, x->context);
      block(d + 1, x->body);
      break;
    }
    case StmtKind::Return: {
      auto *x = static_cast<const ReturnStmt *>(s);
      line(d, "Return", s->loc);
      if (x->value)
        expr(d + 1, x->value);
      break;
    }
    case StmtKind::Break: line(d, "Break", s->loc); break;
    case StmtKind::Continue: line(d, "Continue", s->loc); break;
    case StmtKind::Expr:
      line(d, "ExprStmt", s->loc);
      expr(d + 1, static_cast<const ExprStmt *>(s)->expr);
      break;
    }
  }
  void args(int d, const std::vector<Arg> &as) {
    for (auto &a : as) {
      if (a.name != kNoSym) {
        line(d, "Keyword " + n(a.name), a.loc);
        expr(d + 1, a.value);
      } else {
        expr(d, a.value);
      }
    }
  }
  void expr(int d, const Expr *e) {
    if (!e)
      return;
    switch (e->kind) {
    case ExprKind::Int: {
      auto *x = static_cast<const IntExpr *>(e);
      line(d, "Int " + (x->u64 ? std::to_string(static_cast<uint64_t>(x->value)) : std::to_string(x->value)), e->loc);
      break;
    }
    case ExprKind::Str: line(d, "Str \"" + static_cast<const StrExpr *>(e)->value + "\"", e->loc); break;
    case ExprKind::Bool: line(d, static_cast<const BoolExpr *>(e)->value ? "Bool true" : "Bool false", e->loc); break;
    case ExprKind::None: line(d, "None", e->loc); break;
    case ExprKind::Name: {
      auto *x = static_cast<const NameExpr *>(e);
      const char *kinds[] = {"", " local#", " param#", " fn#", " builtin#", " class#", " enum#"};
      std::string ref = x->ref == RefKind::Unresolved ? "" : kinds[static_cast<int>(x->ref)] + std::to_string(x->index);
      line(d, "Name " + n(x->name) + ref, e->loc);
      break;
    }
    case ExprKind::Unary: {
      auto *x = static_cast<const UnaryExpr *>(e);
      line(d, x->negate ? "Neg" : "Pos", e->loc);
      expr(d + 1, x->operand);
      break;
    }
    case ExprKind::Binary: {
      auto *x = static_cast<const BinaryExpr *>(e);
      line(d, std::string("Binary ") + spelling(x->op), e->loc);
      expr(d + 1, x->lhs);
      expr(d + 1, x->rhs);
      break;
    }
    case ExprKind::Logical: {
      auto *x = static_cast<const LogicalExpr *>(e);
      line(d, x->isAnd ? "And" : "Or", e->loc);
      expr(d + 1, x->lhs);
      expr(d + 1, x->rhs);
      break;
    }
    case ExprKind::Not:
      line(d, "Not", e->loc);
      expr(d + 1, static_cast<const NotExpr *>(e)->operand);
      break;
    case ExprKind::Compare: {
      auto *x = static_cast<const CompareExpr *>(e);
      std::string ops;
      for (auto o : x->ops)
        ops += std::string(" ") + spelling(o);
      line(d, "Compare" + ops, e->loc);
      for (auto *o : x->operands)
        expr(d + 1, o);
      break;
    }
    case ExprKind::Ternary: {
      auto *x = static_cast<const TernaryExpr *>(e);
      line(d, "IfExpr", e->loc);
      expr(d + 1, x->cond);
      expr(d + 1, x->then);
      expr(d + 1, x->otherwise);
      break;
    }
    case ExprKind::Call: {
      auto *x = static_cast<const CallExpr *>(e);
      line(d, "Call " + n(x->callee->name), e->loc);
      args(d + 1, x->args);
      break;
    }
    case ExprKind::MethodCall: {
      auto *x = static_cast<const MethodCallExpr *>(e);
      line(d, "MethodCall ." + n(x->method), e->loc);
      expr(d + 1, x->object);
      args(d + 1, x->args);
      break;
    }
    case ExprKind::Index: {
      auto *x = static_cast<const IndexExpr *>(e);
      line(d, "Index", e->loc);
      expr(d + 1, x->object);
      for (auto *i : x->indices)
        expr(d + 1, i);
      break;
    }
    case ExprKind::Slice: {
      auto *x = static_cast<const SliceExpr *>(e);
      line(d, "Slice", e->loc);
      expr(d + 1, x->object);
      const char *names[] = {"Lo", "Hi", "Step"};
      const Expr *parts[] = {x->lo, x->hi, x->step};
      for (int i = 0; i < 3; ++i)
        if (parts[i]) {
          line(d + 1, names[i], SMLoc());
          expr(d + 2, parts[i]);
        }
      break;
    }
    case ExprKind::Attr: {
      auto *x = static_cast<const AttrExpr *>(e);
      line(d, "Attr ." + n(x->name), e->loc);
      expr(d + 1, x->object);
      break;
    }
    case ExprKind::List:
    case ExprKind::Tuple: {
      auto *x = static_cast<const SeqExpr *>(e);
      line(d, e->kind == ExprKind::List ? "List" : "Tuple", e->loc);
      for (auto *i : x->elems)
        expr(d + 1, i);
      break;
    }
    case ExprKind::Map: {
      auto *x = static_cast<const MapExpr *>(e);
      line(d, "Map", e->loc);
      for (auto &kv : x->entries) {
        expr(d + 1, kv.first);
        expr(d + 2, kv.second);
      }
      break;
    }
    }
  }

  const AstContext &ctx_;
  const llvm::SourceMgr &sm_;
  llvm::raw_ostream &os_;
};
} // namespace

void dumpAst(const AstContext &ctx, const Module &module, const llvm::SourceMgr &sm, llvm::raw_ostream &os) {
  Dumper(ctx, sm, os).module(module);
}

} // namespace msccl::frontend
