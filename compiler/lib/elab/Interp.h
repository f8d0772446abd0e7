//===- Interp.h - The tree-walking interpreter behind elaborate() (private) -------------===//
//
// Walks the checked AST directly (no copies): locals live in a flat frame of Value slots whose
// indices the checks phase assigned; names are never looked up by string at run time. Errors
// are thrown as EvalError, built by fail() with the notes of the dynamic context (loops, calls)
// at the point of failure, and turned into diagnostics by elaborate().
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/elab/Check.h"
#include "msccl/elab/Elaborate.h"
#include "msccl/elab/Value.h"
#include "msccl/ir/IR.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallVector.h>

namespace msccl::elab {

struct EvalNote {
  llvm::SMLoc loc;
  diag::DiagId id;
  std::vector<std::string> args;
};

struct EvalError {
  llvm::SMLoc loc;
  diag::DiagId id;
  std::vector<std::string> args;
  std::vector<EvalNote> notes;
};

class Interp {
public:
  Interp(const Unit &u, diag::DiagEngine &d, const ElabOptions &o);

  // ---- entry points (Elaborate.cpp) ----
  /// The value of param `index` (evaluated on first use at `use`).
  Value param(uint32_t index, llvm::SMLoc use = llvm::SMLoc());
  void setParam(uint32_t index, Value v) { params_[index] = std::move(v); paramState_[index] = 2; }
  Value evalGlobal(const ast::Expr *e); ///< with an empty frame
  void runBody(const ast::Block &body, uint32_t numSlots);
  /// Runs the body as a program of `style` (Style.h): its builtins go to `program`.
  void setStyle(const Style *style, StyleProgram *program) {
    style_ = style;
    styleProgram_ = program;
  }
  const ElabOptions &options() const { return opts_; }
  void setProgram(ir::Program *p) {
    program_ = p;
    if (p)
      p->setContextProvider([this](ir::SourceTable &t, llvm::SMLoc loc) { return sourceRecord(t, loc); });
  }
  /// Adds the record of a DSL call at `loc` to `t` with the dynamic-context frames (loops,
  /// calls, `with`, params): those recorded before and unchanged since are shared with the
  /// previous record, the others are added (ir::Program::setContextProvider). Returns its id.
  uint32_t sourceRecord(ir::SourceTable &t, llvm::SMLoc loc);

  [[noreturn]] void fail(llvm::SMLoc loc, diag::DiagId id, std::vector<std::string> args = {});
  [[noreturn]] void failDsl(llvm::SMLoc loc, const std::string &message) { fail(loc, diag::DiagId::err_dsl, {message}); }
  /// A DslError thrown by the DSL call at `loc`: err_plan_too_large for ir::PlanTooLarge,
  /// err_dsl with its message otherwise.
  [[noreturn]] void failDsl(llvm::SMLoc loc, const ir::DslError &e);

  // ---- argument conversion (used by InterpBuiltins.cpp) ----
  struct ArgCtx {
    /// The callee for messages: "`Cls`" (constructor, method null) or "method `Cls.method`";
    /// built only when an argument is bad.
    const std::string *cls;
    const std::string *method;
    const std::vector<ParamInfo> *params;
    llvm::SMLoc loc;
  };
  int64_t toInt(const Value &v, const ArgCtx &c, size_t p, llvm::SMLoc loc);
  std::optional<int64_t> toOptInt(const Value &v, const ArgCtx &c, size_t p, llvm::SMLoc loc);
  bool toBool(const Value &v, const ArgCtx &c, size_t p, llvm::SMLoc loc);
  const ir::Chunk &toChunk(const Value &v, const ArgCtx &c, size_t p, llvm::SMLoc loc);
  std::vector<ir::Chunk> toChunkList(const Value &v, const ArgCtx &c, size_t p, llvm::SMLoc loc);
  std::vector<int64_t> toIntList(const Value &v, const ArgCtx &c, size_t p, llvm::SMLoc loc);
  int64_t toEnum(const Value &v, EnumId e, const ArgCtx &c, size_t p, llvm::SMLoc loc);
  const ir::ThreadBlockGroup *toTbGroup(const Value &v, const ArgCtx &c, size_t p, llvm::SMLoc loc);
  [[noreturn]] void badArg(const Value &v, const ArgCtx &c, size_t p, llvm::SMLoc loc);
  ir::Program &program(llvm::SMLoc loc);

  const Unit &unit() const { return unit_; }
  const ast::Interner &names() const { return unit_.ctx->names; }

private:
  enum class Flow { Normal, Break, Continue, Return };

  Flow exec(const ast::Block &b);
  Flow exec(const ast::Stmt *s);
  Flow execFor(const ast::ForStmt *f);
  void bindLoopVars(const ast::ForStmt *f, const Value &item);
  void assign(const ast::AssignStmt *a);
  void unpack(const std::vector<ast::Binder> &names, const Value &v, llvm::SMLoc loc);

  Value eval(const ast::Expr *e);
  Value binary(ast::BinOp op, const Value &a, const Value &b, llvm::SMLoc loc);
  bool compare(ast::CmpOp op, const Value &a, const Value &b, llvm::SMLoc loc);
  bool contains(const Value &container, const Value &item, llvm::SMLoc loc);
  Value index(const Value &obj, const Value &key, llvm::SMLoc loc);
  /// obj[a, b, ...] (two or more indices).
  Value indexTuple(const ast::IndexExpr *x, const Value &obj);
  Value slice(const ast::SliceExpr *s);
  Value attr(const ast::AttrExpr *a);
  Value callFn(const ast::CallExpr *c);
  Value callBuiltin(const ast::CallExpr *c);
  Value construct(const ast::CallExpr *c);
  Value methodCall(const ast::MethodCallExpr *m);
  /// Argument lists of builtin calls: inline for the usual few arguments (no allocation).
  using ArgValues = llvm::SmallVector<Value, 8>;
  using ArgLocs = llvm::SmallVector<llvm::SMLoc, 8>;
  Value callMethod(MethodId id, const Value &self, ArgValues &args, const ArgLocs &locs,
                   llvm::SMLoc loc);
  Value defaultValue(const DefaultValue &d);

  /// Collects the arguments of a static or cached binding into `out` (defaults filled in).
  void collectArgs(const std::vector<ast::Arg> &args, const ast::Binding &b, const std::vector<ParamInfo> &params,
                   ArgValues &out, ArgLocs &locs, llvm::SMLoc callLoc);
  void tick(llvm::SMLoc loc) {
    if (++iterations_ > opts_.maxLoopIterations)
      fail(loc, diag::DiagId::err_loop_limit, {std::to_string(opts_.maxLoopIterations)});
  }

  struct Ctx {
    enum Kind : uint8_t { For, Call, With, Param } kind;
    const void *node;
    Value *frame;
    llvm::SMLoc loc = llvm::SMLoc(); ///< Param: where it was first used
    bool recorded = false;           ///< In the last record of the program's SourceTable, unchanged
  };

  const Unit &unit_;
  diag::DiagEngine &diag_;
  const ElabOptions &opts_;
  ir::Program *program_ = nullptr;
  // A plugged-in style's program (InterpStyle.cpp), when the program is of that style.
  const Style *style_ = nullptr;
  StyleProgram *styleProgram_ = nullptr;
  StyleProgram &styleProgram(llvm::SMLoc loc, const std::string &what);
  [[noreturn]] void failStyle(const StyleError &e, llvm::ArrayRef<llvm::SMLoc> locs, llvm::SMLoc loc);
  Value styleCall(BuiltinFnId fn, StyleArgs a, llvm::ArrayRef<llvm::SMLoc> locs, llvm::SMLoc loc);
  Value styleMethod(MethodId id, const Value &self, StyleArgs a, llvm::ArrayRef<llvm::SMLoc> locs, llvm::SMLoc loc);
  Value styleAttr(AttrId id, const Value &self, llvm::SMLoc loc);
  Value *fp_ = nullptr; ///< current frame
  std::vector<Ctx> ctx_;
  llvm::DenseMap<const void *, uint32_t> sourceSites_; ///< AST node -> SourceTable site
  std::vector<ir::SourceTable::NewFrame> newFrames_;
  std::vector<std::string> frameTexts_;
  std::vector<Value> params_;
  std::vector<uint8_t> paramState_; ///< 0 = not evaluated, 1 = evaluating, 2 = done
  Value retVal_;
  int64_t iterations_ = 0;
  unsigned depth_ = 0;
};

} // namespace msccl::elab
