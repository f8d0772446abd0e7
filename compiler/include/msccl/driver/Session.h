//===- Session.h - One compilation: the compiler's phases, written once -----------------===//
//
// Consumes: a CompilerInvocation (what to compile and how, as typed values) and the text of the
// main file (read from the invocation's input, or handed over by the caller: an editor buffer, a
// --verify-diagnostics case).
// Produces: a CompilerSession that owns everything one compilation makes: the llvm::SourceMgr,
// the diag::DiagEngine, the AST context, the loaded elab::Unit, the elaborated program (or the
// mscclpplang-style program), and the plan. run(upTo) runs the phases in their one order
//   Load (parse the main file and its imports, elab/Loader.h) -> Check (elab/Check.h) ->
//   Elaborate (elab/Elaborate.h) -> Passes (the passes' checks, backend::prepareStream) ->
//   Plan (passes and lowering into plan::Plan, backend::compile; variable sizes; the plan
//   checks and the static verifier of VerifyPlan.h)
// and stops after the chosen phase or at the first phase that reports an error. mscclc (Driver.h),
// compilePlan, compilationSources, --verify-diagnostics and the language server (lsp/Analysis.h)
// all compile through it; what they do differently is a SessionOptions field (the diagnostics'
// prefix and capture, where print(...) and --print-after write, whether the plan is for writing)
// or the afterPhase callback (mscclc's AST and IR dumps, the language server's extra checks).
// Guarantees: the phases run on a thread whose stack fits maxCallDepth nested calls (the parser
// and the interpreter recurse); every error a phase finds is reported through the session's
// DiagEngine, never thrown. Exceptions that are not compile errors (std::bad_alloc above all)
// reach run()'s caller.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/backend/SourceMap.h"
#include "msccl/diag/Diagnostics.h"
#include "msccl/elab/Elaborate.h"
#include "msccl/elab/Loader.h"
#include "msccl/frontend/Ast.h"
#include "msccl/passes/Pipeline.h"
#include "msccl/plan/Plan.h"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <functional>
#include <istream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace msccl::driver {

/// What mscclc writes.
enum class Emit { Ast, Ir, Json };

/// The JSON plan format mscclc writes: today's MSCCL++ format, or MSCCLPPLang's older one
/// (msccl/legacy/LegacyPlanFormat.h; programs in the mscclpplang style only).
enum class PlanFormat { Current, Legacy };
/// Which executors the plan is for (--target). Mscclpp: MSCCL++'s executor as well as ours, so
/// its fixed per-threadblock tables bound the plan (64 ops, 16 channels or remote buffers of a
/// type per threadblock; runtime/PlanValidate.h deviceLimit findings are errors). Msccl: this
/// project's executors only (CPU, CUDA and its host implementation, MPI), which size their
/// tables from the plan: those limits are lifted; every other check stays.
enum class Target { Mscclpp, Msccl };

/// The phases of a compilation, in the order they run. Each needs the one before it.
enum class Phase {
  Load,      ///< read and parse the main file and every import (elab::loadUnit)
  Check,     ///< name resolution and static checks (elab::checkUnit): the AST is complete
  Elaborate, ///< run the program (elab::elaborate): the DSL IR, or an mscclpplang-style program
  Passes,    ///< the passes' checks without keeping their result (backend::prepareStream); for
             ///< an mscclpplang-style program its passes, making the legacy plan's text
  Plan,      ///< passes and lowering into a plan::Plan, variable sizes, the plan checks and the
             ///< static verifier (unless noVerify)
};

/// The largest maxCallDepth accepted (each level may need a few KiB of C++ stack).
constexpr unsigned kMaxCallDepthLimit = 100000;

/// What to compile and how: the compiler's options as typed values. The defaults are those of
/// an empty mscclc command line.
struct CompilerInvocation {
  std::string input; ///< FILE, `-` (the stream given to readInput) or `stdlib:NAME`; "" = none.
  std::vector<std::pair<std::string, std::string>> defines; ///< -D NAME=VALUE, in order (VALUE as ElabOptions).
  bool skipUnknownDefines = false;       ///< drop defines naming no param (ElabOptions)
  std::vector<std::string> includeDirs;  ///< -I DIR, in order
  std::string stdlibDir;                 ///< "" = elab::defaultStdlibDir()
  /// Editor buffers read instead of the files on disk when an import resolves to their path
  /// (elab::SearchPath::overlay; the language server's). Empty for mscclc.
  std::map<std::string, std::string> overlay;
  std::optional<uint32_t> instances;     ///< the program option `instances` (nullopt: the program's)
  /// The program option `protocol` ("Simple" or "LL"; nullopt: the program's). Checked in one
  /// place, where every protocol is (ir::Program, reached by elaboration): another value is
  /// reported there as the program's own `protocol = ...` would be.
  std::optional<std::string> protocol;
  /// Further program-option overrides NAME=VALUE (--option), applied after instances and
  /// protocol, in order; VALUE as ElabOptions::optionOverrides.
  std::vector<std::pair<std::string, std::string>> optionOverrides;
  Emit emit = Emit::Json;                ///< what mscclc writes (read by the driver, not the phases)
  PlanFormat planFormat = PlanFormat::Current;
  Target target = Target::Mscclpp;
  std::vector<std::string> printAfter;   ///< print the IR after these passes (names or `all`)
  bool noFusion = false;                 ///< skip instruction fusion
  bool noAutoSync = false;               ///< skip the data-dependency sync pass
  bool noVerify = false;                 ///< skip the plan checks and the static verifier
  bool verifyIrEach = false;             ///< run the IR verifier after every pass
  bool sourceMap = false;                ///< keep the plan op -> .msccl call map (--source-map)
  int64_t maxLoopIterations = 50'000'000;
  unsigned maxCallDepth = 200;           ///< at most kMaxCallDepthLimit
  uint64_t maxPlanSize = uint64_t(1) << 22;

  /// stdlibDir, or elab::defaultStdlibDir() when it is empty.
  std::string stdlibDirOrDefault() const;
};

/// Checks what the phases cannot: every printAfter name is a pass or `all` (err_bad_argument
/// with the closest name), maxCallDepth is at most kMaxCallDepthLimit. Reports the first problem
/// through `diag` (without a location) and returns false; true when the invocation is sound.
bool checkInvocation(const CompilerInvocation &inv, diag::DiagEngine &diag);

/// The main file's text named by `inv.input`: `in` for `-` (named `<stdin>`), stdlib/NAME.msccl
/// for `stdlib:NAME` (an unknown NAME is reported with the closest stdlib name), else the file.
/// Null after reporting the error through `diag`.
std::unique_ptr<llvm::MemoryBuffer> readInput(const CompilerInvocation &inv, std::istream &in,
                                              diag::DiagEngine &diag);

class CompilerSession;

/// How a session's caller differs from mscclc writing a plan to a file.
struct SessionOptions {
  std::string tool = "mscclc";       ///< prefixes diagnostics without a location (DiagEngine)
  bool captureDiagnostics = false;   ///< record diagnostics (diag().takeCaptured()) instead of printing
  /// Where the program's print(...) and --print-after write; null: standard error.
  llvm::raw_ostream *printStream = nullptr;
  /// The plan is for writing out (mscclc), not for use in memory: Phase::Plan then leaves an
  /// unverified plan without variable sizes to be streamed (streaming(): the passes are checked,
  /// backend::streamPlan runs them while writing), and with PlanFormat::Legacy keeps the legacy
  /// plan's text (legacyPlanText()) instead of converting it.
  bool planForWriting = false;
  /// Called on the compiling thread after each phase that succeeded, with that phase; returning
  /// false stops the run as a failure (the callback reports why). Callers hang what they do
  /// between phases here: mscclc's AST and IR dumps, the language server's extra checks.
  std::function<bool(Phase, CompilerSession &)> afterPhase;
};

/// One compilation. Not copyable; not for use from two threads at once.
class CompilerSession {
public:
  /// A session that prints its diagnostics on `diagOut` (unless options.captureDiagnostics).
  CompilerSession(CompilerInvocation invocation, llvm::raw_ostream &diagOut, SessionOptions options = {});
  /// A session that reports through `diag` and its SourceMgr, owned by the caller and
  /// outliving the session (--verify-diagnostics, which captures every case's diagnostics).
  CompilerSession(CompilerInvocation invocation, diag::DiagEngine &diag, SessionOptions options = {});
  ~CompilerSession();
  CompilerSession(const CompilerSession &) = delete;
  CompilerSession &operator=(const CompilerSession &) = delete;

  /// Reads the main file named by the invocation (readInput) into the SourceMgr. False after
  /// reporting the error.
  bool readInput(std::istream &in);
  /// Makes `text` the main file (added to the SourceMgr). Returns its buffer id.
  unsigned setMainBuffer(std::unique_ptr<llvm::MemoryBuffer> text);
  /// Makes buffer `id`, already in the SourceMgr, the main file.
  void setMainBuffer(unsigned id) { mainBuffer_ = id; }

  /// Runs the phases from Load up to `upTo` on the main file, on a big stack. Returns true when
  /// every phase run succeeded; false when one reported an error (through diag()) or afterPhase
  /// returned false: the phases after it do not run. Checks the invocation (checkInvocation)
  /// first. Run once per session. An exception that is not a compile error (std::bad_alloc,
  /// an internal error of the compiler) is rethrown here.
  bool run(Phase upTo);

  const CompilerInvocation &invocation() const { return inv_; }
  llvm::SourceMgr &sourceMgr() { return diag_->sourceMgr(); }
  diag::DiagEngine &diag() { return *diag_; }
  unsigned mainBuffer() const { return mainBuffer_; }
  ast::AstContext &astContext() { return ctx_; }
  /// The loaded modules (valid in part when Load failed: `unit().main` is set once the main
  /// file parsed).
  elab::Unit &unit() { return unit_; }
  /// The elaborated program (after Elaborate; null for an mscclpplang-style program or on error).
  ir::Program *program() { return program_.get(); }
  /// The program of a plugged-in style (elab/Style.h; after Elaborate), or null.
  elab::StyleProgram *styleProgram() { return style_.get(); }
  /// The plan (after Plan), or null: on error, when streaming(), or for the legacy text.
  plan::Plan *plan() { return plan_ ? &*plan_ : nullptr; }
  /// Moves the plan out of the session (after Plan).
  std::optional<plan::Plan> takePlan() { return std::move(plan_); }
  /// A plugged-in style's plan in its own format (after Passes, when written in that format:
  /// --plan-format=legacy), or "".
  const std::string &legacyPlanText() const { return legacyText_; }
  /// Phase::Plan left the plan to be streamed from program() with pipeline() (planForWriting).
  bool streaming() const { return streaming_; }
  /// The pass pipeline's options (skips, IR verifier, --print-after), as the passes ran.
  const passes::PipelineOptions &pipeline() const { return pipeline_; }
  /// The plan op -> .msccl call map (after Plan, when verifying or asked for), or null.
  backend::SourceMap *sourceMap() { return sourceMap_.get(); }

private:
  bool runPhases(Phase upTo);
  bool after(Phase done) { return !options_.afterPhase || options_.afterPhase(done, *this); }
  bool elaboratePhase();
  bool passesPhase();
  bool planPhase();
  bool stylePlanPhase();
  void makePipeline();

  CompilerInvocation inv_;
  SessionOptions options_;
  std::unique_ptr<llvm::SourceMgr> ownSm_;  ///< null when the DiagEngine is the caller's
  std::unique_ptr<diag::DiagEngine> ownDiag_;
  diag::DiagEngine *diag_ = nullptr;
  unsigned mainBuffer_ = 0;
  ast::AstContext ctx_;
  elab::Unit unit_;
  std::unique_ptr<ir::Program> program_;
  std::unique_ptr<elab::StyleProgram> style_;
  std::string legacyText_;
  std::optional<plan::Plan> plan_;
  passes::PipelineOptions pipeline_;
  std::unique_ptr<backend::SourceMap> sourceMap_;
  bool streaming_ = false;
};

/// Runs `fn` on a thread whose stack fits `maxCallDepth` nested fn calls (the interpreter and
/// the ANTLR parser recurse on the C++ stack): 16 MiB plus 4 KiB per allowed call level. An
/// exception of `fn` is rethrown to the caller.
void onBigStack(unsigned maxCallDepth, const std::function<void()> &fn);

} // namespace msccl::driver
