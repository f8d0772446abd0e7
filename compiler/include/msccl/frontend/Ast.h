//===- Ast.h - The syntax tree of the .msccl language -----------------------------------===//
//
// Produced by parseBuffer (Parser.h) from ANTLR's parse tree; annotated in place by the checks
// phase (elab/Check.h: name resolution into slots, argument bindings); read by the elaborator.
// Every node carries the llvm::SMLoc of its first character (for calls: the callee; for binary
// operators: the operator). Nodes are owned by an AstContext and never copied; names are
// interned symbols (Sym), so the interpreter compares integers, not strings.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SMLoc.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace msccl::ast {

using llvm::SMLoc;

/// An interned name. kNoSym marks "absent" (e.g. a positional argument's keyword).
using Sym = uint32_t;
constexpr Sym kNoSym = ~0u;

class Interner {
public:
  Sym intern(llvm::StringRef s);
  const std::string &str(Sym s) const { return names_[s]; }
  size_t size() const { return names_.size(); }

private:
  llvm::StringMap<Sym> map_;
  std::vector<std::string> names_;
};

// ---- Expressions -------------------------------------------------------------------------
enum class ExprKind : uint8_t {
  Int, Str, Bool, None, Name, Unary, Binary, Logical, Not, Compare, Ternary,
  Call, MethodCall, Index, Slice, Attr, List, Tuple, Map
};

struct Expr {
  ExprKind kind;
  SMLoc loc;
  Expr(ExprKind k, SMLoc l) : kind(k), loc(l) {}
  virtual ~Expr() = default;
};

/// An integer literal. Literals above INT64_MAX (up to 2**64-1) are `u64` (see Value.h: U64).
struct IntExpr : Expr {
  int64_t value;
  bool u64 = false; ///< value holds the bits of an unsigned literal > INT64_MAX
  IntExpr(SMLoc l, int64_t v) : Expr(ExprKind::Int, l), value(v) {}
};
struct StrExpr : Expr { std::string value; StrExpr(SMLoc l, std::string v) : Expr(ExprKind::Str, l), value(std::move(v)) {} };
struct BoolExpr : Expr { bool value; BoolExpr(SMLoc l, bool v) : Expr(ExprKind::Bool, l), value(v) {} };
struct NoneExpr : Expr { explicit NoneExpr(SMLoc l) : Expr(ExprKind::None, l) {} };

/// What a name refers to, filled in by the checks phase.
enum class RefKind : uint8_t { Unresolved, Local, Param, Fn, Builtin, Class, Enum };

struct NameExpr : Expr {
  Sym name;
  RefKind ref = RefKind::Unresolved;
  uint32_t index = 0; ///< frame slot, param/fn index, builtin/class/enum id
  NameExpr(SMLoc l, Sym n) : Expr(ExprKind::Name, l), name(n) {}
};

enum class BinOp : uint8_t { Add, Sub, Mul, Div, Mod, Pow, BitAnd, BitOr, BitXor, Shl, Shr };
const char *spelling(BinOp op);

struct UnaryExpr : Expr {
  bool negate; ///< `-e` (true) or `+e`
  Expr *operand;
  UnaryExpr(SMLoc l, bool n, Expr *e) : Expr(ExprKind::Unary, l), negate(n), operand(e) {}
};
struct BinaryExpr : Expr {
  BinOp op;
  Expr *lhs, *rhs;
  BinaryExpr(SMLoc opLoc, BinOp o, Expr *a, Expr *b) : Expr(ExprKind::Binary, opLoc), op(o), lhs(a), rhs(b) {}
};
struct LogicalExpr : Expr {
  bool isAnd;
  Expr *lhs, *rhs;
  LogicalExpr(SMLoc l, bool a, Expr *x, Expr *y) : Expr(ExprKind::Logical, l), isAnd(a), lhs(x), rhs(y) {}
};
struct NotExpr : Expr { Expr *operand; NotExpr(SMLoc l, Expr *e) : Expr(ExprKind::Not, l), operand(e) {} };

enum class CmpOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };
const char *spelling(CmpOp op);

/// `a < b <= c` (Python chaining): operands.size() == ops.size() + 1.
struct CompareExpr : Expr {
  std::vector<CmpOp> ops;
  std::vector<SMLoc> opLocs;
  std::vector<Expr *> operands;
  explicit CompareExpr(SMLoc l) : Expr(ExprKind::Compare, l) {}
};
struct TernaryExpr : Expr {
  Expr *cond, *then, *otherwise;
  TernaryExpr(SMLoc l, Expr *c, Expr *t, Expr *o) : Expr(ExprKind::Ternary, l), cond(c), then(t), otherwise(o) {}
};

struct Arg {
  Sym name = kNoSym; ///< keyword, or kNoSym for a positional argument
  SMLoc loc;
  Expr *value = nullptr;
};

/// The order in which a callee's parameters take the call's arguments: for parameter i,
/// `argOf[i]` is the index into `args`, or -1 when the default applies.
struct Binding {
  std::vector<int> argOf;
};

/// `f(args)` where f is a name (fn, builtin function or DSL class).
struct CallExpr : Expr {
  NameExpr *callee;
  std::vector<Arg> args;
  Binding binding; ///< set by the checks phase for fns and DSL classes
  bool bound = false;
  CallExpr(SMLoc l, NameExpr *c) : Expr(ExprKind::Call, l), callee(c) {}
};

/// `obj.method(args)`. The receiver's class is known only at run time; the elaborator caches
/// the last (class, binding) pair here so a call site inside a loop binds once.
struct MethodCallExpr : Expr {
  Expr *object;
  Sym method;
  std::vector<Arg> args;
  mutable int cachedMethod = -1;
  mutable Binding cachedBinding;
  MethodCallExpr(SMLoc methodLoc, Expr *o, Sym m) : Expr(ExprKind::MethodCall, methodLoc), object(o), method(m) {}
};

/// `obj[i]` or `obj[a, b]` (tuple key).
struct IndexExpr : Expr {
  Expr *object;
  std::vector<Expr *> indices;
  IndexExpr(SMLoc l, Expr *o) : Expr(ExprKind::Index, l), object(o) {}
};
/// `obj[lo:hi:step]` with any part absent (nullptr).
struct SliceExpr : Expr {
  Expr *object, *lo = nullptr, *hi = nullptr, *step = nullptr;
  bool hasStep = false;
  SliceExpr(SMLoc l, Expr *o) : Expr(ExprKind::Slice, l), object(o) {}
};
/// `obj.name`. For `Enum.member` the checks phase sets enumId/member.
struct AttrExpr : Expr {
  Expr *object;
  Sym name;
  int enumId = -1, member = -1;
  AttrExpr(SMLoc nameLoc, Expr *o, Sym n) : Expr(ExprKind::Attr, nameLoc), object(o), name(n) {}
};
struct SeqExpr : Expr { // List or Tuple
  std::vector<Expr *> elems;
  SeqExpr(ExprKind k, SMLoc l) : Expr(k, l) {}
};
struct MapExpr : Expr {
  std::vector<std::pair<Expr *, Expr *>> entries;
  explicit MapExpr(SMLoc l) : Expr(ExprKind::Map, l) {}
};

// ---- Statements --------------------------------------------------------------------------
enum class StmtKind : uint8_t { Let, Assign, For, If, With, Return, Break, Continue, Expr };

struct Stmt {
  StmtKind kind;
  SMLoc loc;
  Stmt(StmtKind k, SMLoc l) : kind(k), loc(l) {}
  virtual ~Stmt() = default;
};

struct Block {
  std::vector<Stmt *> stmts;
  SMLoc lbrace;
};

/// A name bound by `let`, `for` or a tuple pattern; `slot` is set by the checks phase.
struct Binder {
  Sym name;
  SMLoc loc;
  uint32_t slot = 0;
};

/// `let x = e` or `let (a, b) = e` (tuple = true).
struct LetStmt : Stmt {
  std::vector<Binder> names;
  bool tuple = false;
  Expr *value;
  LetStmt(SMLoc l, Expr *v) : Stmt(StmtKind::Let, l), value(v) {}
};

enum class AssignOp : uint8_t { Set, Add, Sub, Mul };
/// `target op= value`; target is a NameExpr, IndexExpr (or, rejected later, anything else).
struct AssignStmt : Stmt {
  AssignOp op;
  Expr *target, *value;
  SMLoc opLoc;
  AssignStmt(SMLoc l, AssignOp o, Expr *t, Expr *v) : Stmt(StmtKind::Assign, l), op(o), target(t), value(v) {}
};
struct ForStmt : Stmt {
  std::vector<Binder> vars;
  bool tuple = false;
  Expr *iter;
  Block body;
  ForStmt(SMLoc l, Expr *it) : Stmt(StmtKind::For, l), iter(it) {}
};
/// `if c { } else { }`; an `else if` is an else block holding one IfStmt.
struct IfStmt : Stmt {
  Expr *cond;
  Block then, otherwise;
  IfStmt(SMLoc l, Expr *c) : Stmt(StmtKind::If, l), cond(c) {}
};
struct WithStmt : Stmt {
  Expr *context;
  Block body;
  WithStmt(SMLoc l, Expr *c) : Stmt(StmtKind::With, l), context(c) {}
};
struct ReturnStmt : Stmt { Expr *value; ReturnStmt(SMLoc l, Expr *v) : Stmt(StmtKind::Return, l), value(v) {} };
struct ExprStmt : Stmt { Expr *expr; ExprStmt(SMLoc l, Expr *e) : Stmt(StmtKind::Expr, l), expr(e) {} };
struct SimpleStmt : Stmt { SimpleStmt(StmtKind k, SMLoc l) : Stmt(k, l) {} }; // break, continue

// ---- Top level ---------------------------------------------------------------------------
struct ParamDecl {
  Sym name;
  SMLoc loc;
  Expr *value;
};
struct FnParam {
  Sym name;
  SMLoc loc;
  Expr *defaultValue = nullptr;
};
struct FnDecl {
  Sym name;
  SMLoc loc;
  std::vector<FnParam> params;
  Block body;
  uint32_t numSlots = 0; ///< frame size (params first), set by the checks phase
};
struct ProgramOption {
  Sym name;
  SMLoc loc;
  Expr *value;
};
struct ProgramDecl {
  Sym name;
  SMLoc loc;
  std::vector<ProgramOption> options;
  Block body;
  uint32_t numSlots = 0;
};
struct ImportDecl {
  std::string path;
  SMLoc loc;
};

/// One parsed file.
struct Module {
  std::string filename;
  unsigned bufferId = 0;
  std::vector<ImportDecl> imports;
  std::vector<ParamDecl> params;
  std::vector<FnDecl *> fns;
  std::vector<ProgramDecl *> programs;
};

/// Owns every node of every module of one compilation and the name interner.
class AstContext {
public:
  Interner names;

  template <typename T, typename... A> T *expr(A &&...a) {
    auto p = std::make_unique<T>(std::forward<A>(a)...);
    T *raw = p.get();
    exprs_.push_back(std::move(p));
    return raw;
  }
  template <typename T, typename... A> T *stmt(A &&...a) {
    auto p = std::make_unique<T>(std::forward<A>(a)...);
    T *raw = p.get();
    stmts_.push_back(std::move(p));
    return raw;
  }
  FnDecl *fn() { fns_.push_back(std::make_unique<FnDecl>()); return fns_.back().get(); }
  ProgramDecl *program() { programs_.push_back(std::make_unique<ProgramDecl>()); return programs_.back().get(); }
  Module *module() { modules_.push_back(std::make_unique<Module>()); return modules_.back().get(); }
  const std::vector<std::unique_ptr<Module>> &modules() const { return modules_; }

private:
  std::vector<std::unique_ptr<Expr>> exprs_;
  std::vector<std::unique_ptr<Stmt>> stmts_;
  std::vector<std::unique_ptr<FnDecl>> fns_;
  std::vector<std::unique_ptr<ProgramDecl>> programs_;
  std::vector<std::unique_ptr<Module>> modules_;
};

} // namespace msccl::ast
