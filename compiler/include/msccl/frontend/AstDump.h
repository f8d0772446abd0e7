//===- AstDump.h - `mscclc --emit=ast` ---------------------------------------------------===//
//
// Prints the AST as an indented tree, one node per line with its line:col, e.g.
//   Program allreduce_nvls @3:1
//     Option instances @7:5
//       Int 8 @7:17
// Names resolved by the checks phase show their binding (local slot, param, fn, builtin).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/frontend/Ast.h"

#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

namespace msccl::frontend {

/// Dumps `module` (locations through `sm`) to `os`.
void dumpAst(const ast::AstContext &ctx, const ast::Module &module, const llvm::SourceMgr &sm,
             llvm::raw_ostream &os);

} // namespace msccl::frontend
