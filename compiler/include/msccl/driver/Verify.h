//===- Verify.h - `mscclc --verify-diagnostics` -----------------------------------------===//
//
// Checks the diagnostics of a test file against its comments, like MLIR's -verify-diagnostics:
//   // expected-error {{text}}       an error on this line whose message contains `text`
//   // expected-error@+1 {{text}}    ... on the next line (@-N: N lines above)
//   expected-warning, expected-note  the same for warnings and notes
// The file is split at lines `// -----` into cases compiled independently (line numbers stay
// those of the file). Every expected diagnostic must appear; every error and warning must be
// expected; notes are only checked when expected (unexpected notes are ignored).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/diag/Diagnostics.h"

#include <functional>
#include <string>

namespace msccl::driver {

/// Compiles one case: the callback gets the buffer id of the case in `diag.sourceMgr()` and
/// reports through `diag` (which is in capture mode).
using CaseCompiler = std::function<void(diag::DiagEngine &diag, unsigned bufferId)>;

/// Runs the verification of `text` (named `filename`); mismatches are printed to `err`.
/// Returns true when every case matched.
bool verifyDiagnostics(const std::string &filename, const std::string &text, const CaseCompiler &compile,
                       llvm::raw_ostream &err);

} // namespace msccl::driver
