//===- Loader.h - A main file and its imports -> a Unit ---------------------------------===//
//
// Consumes: a buffer of the SourceMgr (the main file) and a search path.
// Produces: a Unit with every parsed module (imports first, each file once) and the main module.
// Imports resolve relative to the importing file, then in each -I directory, then in the stdlib
// directory (`import "stdlib:NAME"` means stdlib/NAME.msccl). Imported files may hold params and
// fns but no `program` (err_import_has_program). A file imported twice is loaded once.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/diag/Diagnostics.h"
#include "msccl/frontend/Ast.h"

#include <llvm/Support/MemoryBuffer.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace msccl::elab {

/// The modules of one compilation and the global declarations (filled by the checks phase).
struct Unit {
  ast::AstContext *ctx = nullptr;
  ast::Module *main = nullptr;
  std::vector<ast::Module *> modules; ///< imports first (in load order), main last
  std::vector<const ast::ParamDecl *> params;
  std::vector<ast::FnDecl *> fns;
  ast::ProgramDecl *program = nullptr;
};

struct SearchPath {
  std::vector<std::string> includeDirs; ///< -I, in order
  std::string stdlibDir;                ///< defaultStdlibDir() unless set otherwise
  /// Unsaved texts (an editor's open buffers, keyed by real path) read instead of the file on
  /// disk when an import resolves to that path. Empty for mscclc.
  std::map<std::string, std::string> overlay;
};

/// The stdlib directory: $MSCCL_STDLIB_PATH if set; else, for an installed tool,
/// `<dir of the running executable>/../share/msccl/stdlib` when that exists; else the source
/// tree's stdlib/ (a build tree).
std::string defaultStdlibDir();

/// The largest source file (main program or import) the compiler reads: 16 MiB. Parsing costs
/// ~25 bytes of memory per source byte, so this bounds a hostile input's memory.
constexpr uint64_t kMaxSourceBytes = uint64_t(16) << 20;

/// The bytes of source file `file`, read up to kMaxSourceBytes (a FIFO or device is read the
/// same way, so /dev/zero ends at the limit); null after reporting err_cannot_open_file or
/// err_source_too_large at `loc`.
std::unique_ptr<llvm::MemoryBuffer> readSourceFile(const std::string &file, diag::DiagEngine &diag, llvm::SMLoc loc);

/// Parses `mainBuffer` and (recursively) its imports. Returns false if any error was reported.
bool loadUnit(ast::AstContext &ctx, diag::DiagEngine &diag, unsigned mainBuffer, const SearchPath &path, Unit &unit);

} // namespace msccl::elab
