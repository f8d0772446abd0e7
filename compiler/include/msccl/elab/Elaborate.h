//===- Elaborate.h - Evaluate a checked Unit into a DSL program -------------------------===//
//
// Consumes: a Unit that passed the checks phase (Check.h) and the -D / program-option
// overrides of the command line.
// Produces: the ir::Program (Dsl.h) built by running the program body: every DSL object and
// op of the program is one call of the Dsl.h API. Params are evaluated lazily (so order does
// not matter; a cycle is err_param_cycle) with -D values replacing their initializers.
// Errors: every evaluation error (type errors, division by zero, overflow, out-of-range
// indexes, DslError from Dsl.h, assert/error builtins, runaway loops/recursion) becomes one
// diagnostic at the offending expression followed by notes naming the enclosing loop values
// (`in for gpu = 3`) and fn calls (`in call to fn `sync_all``), innermost first; evaluation
// stops at the first error.
// Limits: ElabOptions::maxLoopIterations iterations over all loops of a run (default 50 million)
// and maxCallDepth nested fn calls (default 200).
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/diag/Diagnostics.h"
#include "msccl/elab/Loader.h"
#include "msccl/ir/Dsl.h"
#include "msccl/elab/Style.h"

#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace msccl::elab {

struct ElabOptions {
  /// -D NAME=VALUE, in command-line order (VALUE: an int with suffixes, true/false/none, a
  /// quoted or bare string).
  std::vector<std::pair<std::string, std::string>> defines;
  /// Drop the `defines` that name no param of the program instead of refusing them
  /// (err_define_unknown_param): for defines given to a directory of programs at once
  /// (MSCCL_PLANS_DEFINES, PlanRegistry::addDirectory), which not every program declares.
  bool skipUnknownDefines = false;
  /// Program-option overrides (`--instances=N`, `--option NAME=VALUE`), applied after the
  /// program's own options; same VALUE syntax, plus enum members (`interleaved`).
  std::vector<std::pair<std::string, std::string>> optionOverrides;
  int64_t maxLoopIterations = 50'000'000;
  unsigned maxCallDepth = 200;
  /// Limit on the plan's size: ops, threadblocks, channels and semaphores of all ranks, times
  /// `instances` (err_plan_too_large), counted as the program runs. The default (2^22) keeps the
  /// compiler within about 1 GB.
  uint64_t maxPlanSize = uint64_t(1) << 22;
  /// Where print(...) writes (stderr by default).
  llvm::raw_ostream *printStream = nullptr;
  /// The front-end styles a program may select besides "current" (`style = "NAME"`, Style.h),
  /// owned by the caller; the compiler session passes the mscclpplang style.
  std::vector<const Style *> styles;
};

/// The elaborated program: today's DSL program, or the program of a plugged-in style.
struct ElabResult {
  std::unique_ptr<ir::Program> program;
  /// The program of a plugged-in style (`style = "NAME"`, ElabOptions::styles); `program` is
  /// null then.
  std::unique_ptr<StyleProgram> style;
};

/// Runs the program. Returns a null program (and null style) if an error was reported.
ElabResult elaborate(const Unit &unit, diag::DiagEngine &diag, const ElabOptions &options);

} // namespace msccl::elab
