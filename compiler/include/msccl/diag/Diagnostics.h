//===- Diagnostics.h - The diagnostics engine of mscclc ---------------------------------===//
//
// Every message mscclc prints goes through DiagEngine. The kinds are listed once, in
// Diagnostics.def; a diagnostic is a kind, a source location (llvm::SMLoc into a buffer of the
// engine's llvm::SourceMgr, or none for driver messages) and the message text made from the
// kind's format and its arguments. Rendering is llvm::SourceMgr's: `file:line:col: error: msg`,
// the source line and a caret. In capture mode (used by --verify-diagnostics) diagnostics are
// recorded instead of printed.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include <llvm/Support/SMLoc.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace msccl::diag {

enum class DiagId : uint16_t {
#define DIAG(ID, LEVEL, MESSAGE) ID,
#include "msccl/diag/Diagnostics.def"
};

enum class Level { Error, Warning, Note };

/// The level (error/warning/note) a kind is declared with in Diagnostics.def.
Level levelOf(DiagId id);
/// The kind's name as written in Diagnostics.def, e.g. "err_unknown_name".
const char *nameOf(DiagId id);
/// The kind's message with {0}, {1}, ... replaced by `args` (missing arguments become "").
std::string formatMessage(DiagId id, const std::vector<std::string> &args);

/// One reported diagnostic.
struct Diagnostic {
  DiagId id;
  Level level;
  llvm::SMLoc loc; ///< invalid for messages not tied to source text
  std::string message;
};

class DiagEngine {
public:
  /// Prints to `os`, rendering locations through `sm`. `tool` prefixes location-less messages.
  DiagEngine(llvm::SourceMgr &sm, llvm::raw_ostream &os, std::string tool = "mscclc");

  /// Reports a diagnostic of kind `id` at `loc` (may be invalid) with message arguments.
  void report(llvm::SMLoc loc, DiagId id, std::vector<std::string> args = {});

  unsigned errorCount() const { return errors_; }
  bool hadError() const { return errors_ != 0; }
  void resetErrors() { errors_ = 0; }

  /// Capture mode: diagnostics are recorded (see captured()) instead of printed.
  void setCapture(bool on) { capture_ = on; }
  std::vector<Diagnostic> takeCaptured();

  /// Prints one diagnostic the way report() would (used by the verifier for its own findings).
  void print(const Diagnostic &d);

  llvm::SourceMgr &sourceMgr() { return sm_; }
  llvm::raw_ostream &stream() { return os_; }

private:
  llvm::SourceMgr &sm_;
  llvm::raw_ostream &os_;
  std::string tool_;
  unsigned errors_ = 0;
  bool capture_ = false;
  std::vector<Diagnostic> captured_;
};

/// "`a`, `b`" style did-you-mean helper: returns " (did you mean `X`?)" for the candidate
/// closest to `name` by edit distance (at most a third of the length, min 1), or "".
std::string didYouMean(const std::string &name, const std::vector<std::string> &candidates);

} // namespace msccl::diag
