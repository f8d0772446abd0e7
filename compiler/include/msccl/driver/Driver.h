//===- Driver.h - The mscclc command line as a library call -----------------------------===//
//
// runMscclc is all of `mscclc`: parseMscclcCommandLine turns argv into MscclcOptions (llvm::cl,
// with options that exist only for the duration of that call), toInvocation turns those into a
// CompilerInvocation (Session.h) once, reporting bad values, then runMscclc loads the input (a
// file, `-` for stdin, or `stdlib:NAME` for stdlib/NAME.msccl), compiles it in a CompilerSession
// (parse -> check -> elaborate -> passes -> plan, the phase order written in Session.cpp only)
// and writes the result to `-o FILE` or `out`. Diagnostics go to `err`. Calls share no state:
// two calls in one process see only their own options (tests call the driver in-process;
// libmsccl, msccl-run, msccl-tune and msccl-synth compile through compilePlan with a typed
// CompilerInvocation). tools/mscclc/main.cpp only forwards argv and the std streams.
//
// Exit codes: 0 success (also --version); 1 any error (bad options, missing input, compile
// errors, unwritable output, failed --verify-diagnostics). llvm::cl's --help prints and exits 0.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/driver/Session.h"
#include "msccl/plan/Plan.h"

#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <vector>

namespace msccl::driver {

/// mscclc's command line, parsed. The defaults are those of an empty command line.
struct MscclcOptions {
  std::string input;                      ///< FILE, `-` (the `in` stream) or `stdlib:NAME`; "" = none.
  std::string output;                     ///< -o FILE; "" or `-` writes to `out`.
  std::vector<std::string> defines;       ///< -D NAME=VALUE, in order.
  bool skipUnknownDefines = false;        ///< Drop -D values naming no param (ElabOptions; API only).
  std::vector<std::string> includeDirs;   ///< -I DIR, in order.
  Emit emit = Emit::Json;                 ///< --emit=ast|ir|json
  PlanFormat planFormat = PlanFormat::Current; ///< --plan-format=current|legacy
  Target target = Target::Mscclpp;        ///< --target=mscclpp|msccl
  std::vector<std::string> printAfter;    ///< --print-after=PASS (pass names or `all`).
  bool noFusion = false;                  ///< --no-fusion
  bool noAutoSync = false;                ///< --no-auto-sync
  bool noVerify = false;                  ///< --no-verify: skip the plan checks and the static verifier
  std::string instances;                  ///< --instances=N ("" = the program's).
  std::string protocol;                   ///< --protocol=P ("" = the program's).
  std::vector<std::string> optionOverrides; ///< --option NAME=VALUE, in order.
  bool verifyDiagnostics = false;         ///< --verify-diagnostics
  bool listStdlib = false;                ///< --list-stdlib
  bool compact = false;                   ///< --compact (JSON without indentation)
  int64_t maxLoopIterations = 50'000'000; ///< --max-loop-iterations
  unsigned maxCallDepth = 200;            ///< --max-call-depth (at most 100000)
  uint64_t maxPlanSize = uint64_t(1) << 22; ///< --max-plan-size: ops, threadblocks, channels, semaphores
  bool verifyIrEach = false;              ///< --verify-ir-each: run the IR verifier after every pass
  std::string sourceMap;                  ///< --source-map FILE: plan op path -> .msccl call (JSON); "" = none
  std::string stdlibDir;                  ///< "" = elab::defaultStdlibDir().
};

/// Parses mscclc's `argv[0..argc)` (argv[0] is the program name) into `options`. Returns -1
/// when the caller should go on to run, else the exit status: 0 after `--version` (printed on
/// `out`), 1 after a command-line error (reported on `err`).
int parseMscclcCommandLine(int argc, const char *const *argv, MscclcOptions &options, llvm::raw_ostream &out,
                           llvm::raw_ostream &err);

/// Runs mscclc with parsed options (converted by toInvocation). `in` is read for input `-`.
/// Returns the exit status.
int runMscclc(const MscclcOptions &options, std::istream &in, llvm::raw_ostream &out, llvm::raw_ostream &err);

/// parseMscclcCommandLine, then runMscclc.
int runMscclc(int argc, const char *const *argv, std::istream &in, llvm::raw_ostream &out, llvm::raw_ostream &err);

/// Splits -D arguments NAME=VALUE at the first `=` and appends them to `defines`. Returns false
/// after reporting the first without NAME= on `err` as mscclc does (`mscclc: error: bad -D
/// argument ...`). For tools that take mscclc's -D (msccl-run).
bool splitDefines(const std::vector<std::string> &args, std::vector<std::pair<std::string, std::string>> &defines,
                  llvm::raw_ostream &err);

/// The compiler invocation of parsed command-line options: -D and --option split at `=`,
/// --instances typed when it is a decimal number in uint32_t's range and --protocol as given
/// (any other --instances text is passed on, with --protocol behind it, as option overrides in
/// command-line order, which elaboration reports as it reports every bad override value, after
/// the program loaded and checked), then the checks of checkInvocation. Returns nullopt after
/// reporting the first bad value on `err` as mscclc does (`mscclc: error: ...`): --source-map
/// without --emit=json, an unknown --print-after pass, a --max-call-depth over
/// kMaxCallDepthLimit, a -D or --option without NAME=. The fields output, listStdlib,
/// verifyDiagnostics and compact are not the invocation's (runMscclc reads them).
std::optional<CompilerInvocation> toInvocation(const MscclcOptions &options, llvm::raw_ostream &err);

/// Compiles `invocation.input` (`in` is read for `-`) to a plan in memory: the phases up to
/// Phase::Plan in a CompilerSession (emit is ignored; an mscclpplang-style program's plan is
/// converted to today's format). print(...) and --print-after write to `err`. Returns nullopt
/// after reporting the errors on `err` (diagnostics rendered as mscclc renders them; an
/// allocation failure as mscclc's `out of memory compiling ...`).
std::optional<plan::Plan> compilePlan(const CompilerInvocation &invocation, std::istream &in, llvm::raw_ostream &err);

/// The files a compilation of `invocation.input` reads, with their text, in load order: the main
/// file first (named as loaded; `<stdin>` for `-`), then each import once (Phase::Load only).
/// What a cache key must cover besides the options (libmsccl's compile cache). Returns nullopt
/// after reporting on `err` when the input or an import cannot be loaded or parsed (a compile
/// would fail too).
std::optional<std::vector<std::pair<std::string, std::string>>>
compilationSources(const CompilerInvocation &invocation, std::istream &in, llvm::raw_ostream &err);

/// The names `stdlib:NAME` accepts (NAME relative to `stdlibDir` without `.msccl`, e.g.
/// "allreduce/ring"), sorted; only files that define a program.
std::vector<std::string> stdlibProgramNames(const std::string &stdlibDir);

} // namespace msccl::driver
