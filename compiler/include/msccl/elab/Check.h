//===- Check.h - The checks phase: names, arity, keywords, static types -----------------===//
//
// Consumes: a loaded Unit (Loader.h) whose modules are freshly parsed.
// Produces: the same AST annotated in place: every NameExpr resolved (local frame slot, param,
// fn, builtin function, DSL class or enum), every `let`/`for` binder given a slot, frame sizes of
// fns and the program, argument bindings of calls to fns and DSL classes, `Enum.member`
// constants; Unit::params/fns/program filled.
// Reports (all in one run, several per file): unknown names (with did-you-mean), redefinitions,
// names used wrongly (assigning to a param, using a fn as a value), arity and keyword errors
// against the callee's signature (fns, builtins and DSL classes from Builtins.def, and methods
// when the receiver's class is statically known), static type mismatches of literal and
// constructor arguments, `return`/`break`/`continue` out of place, program options.
// Guarantees: if it returns true, the elaborator never meets an unresolved name.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/diag/Diagnostics.h"
#include "msccl/elab/Builtins.h"
#include "msccl/elab/Loader.h"

#include <functional>

namespace msccl::elab {

/// Runs the checks phase. Returns false if any error was reported.
bool checkUnit(Unit &unit, diag::DiagEngine &diag);

/// A callee's parameters as the binder sees them.
struct ParamSig {
  ast::Sym name;
  bool required;
};

/// Binds call arguments to parameters (positional first, then keywords). On error calls
/// `report(loc, id, args)` with one of err_too_many_args, err_unknown_keyword,
/// err_arg_given_twice, err_missing_arg (message names the callee as `calleeDesc`) and returns
/// false. Used by the checks phase for static callees and by the elaborator for methods.
bool bindArguments(const std::vector<ast::Arg> &args, const std::vector<ParamSig> &params, const std::string &calleeDesc,
                   const ast::Interner &names, llvm::SMLoc callLoc, ast::Binding &out,
                   const std::function<void(llvm::SMLoc, diag::DiagId, std::vector<std::string>)> &report);

} // namespace msccl::elab
