//===- Driver.h - msccl-run: run and verify execution plans ------------------------------===//
//
// Consumes msccl-run's command line, parsed into Options at entry (parseCommandLine; llvm::cl
// options that exist only during that call), so runs share no state and tests call the driver
// in-process. Loads one plan - a JSON plan, or a `.msccl` program / `stdlib:NAME` compiled
// in-process with -D/-I as mscclc would - or, with --plans DIR, every plan of a folder, picking
// per size the plan whose collective, rank count and size range fit. Validates each plan once,
// runs it on a backend over a sweep of message sizes, verifies every output element, and prints
// an nccl-tests style table (size, count, type, redop, time, algbw, busbw, #wrong, plan) to
// `out`, flushing each row as it is printed. Errors, deadlock reports and (for runs longer than
// --progress-after seconds) progress lines go to `err`. Returns the process exit status: 0 when
// every row ran and was right (and after --version); 1 on any wrong result, deadlock, misuse or
// plan/size error; 2 on bad usage. Never calls exit() (except llvm::cl's --help).
//
// Usage: msccl-run PLAN.json|ALGO.msccl|stdlib:NAME [-D NAME=VALUE] [-I DIR]
//          [--backend cpu|cuda-virtual|cuda-gpus|sim [--topology T]] [-b MIN] [-e MAX] [-f FACTOR] [--size S]
//          [-d float16|bfloat16|float32|int32|uint32|uint8] [-o sum|min|max]
//          [--in-place|--out-of-place] [-n ITERS -w WARMUP] [--check|--no-check|-c 0|1]
//          [--race-check] [--packet LL16|LL8] [--jsonl FILE] [--progress-after SECONDS]
//          [--plans DIR [--collective C] [--nranks N]] [--version]
//        msccl-run --backend sim [--topology T] --suggest-ranges PLAN.json... [-b -e -f]
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/plan/Plan.h"
#include "msccl/runtime/Executor.h"

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace msccl::run {

/// msccl-run's command line, parsed and checked. Defaults are those of an empty command line.
struct Options {
  std::string input;                     ///< PLAN.json, ALGO.msccl or stdlib:NAME ("" with --plans).
  std::vector<std::string> defines;      ///< -D NAME=VALUE for a .msccl / stdlib: input.
  std::vector<std::string> includeDirs;  ///< -I DIR for a .msccl / stdlib: input.
  std::string backend = "cpu";           ///< Executor registry name.
  std::optional<uint64_t> minBytes;      ///< -b (bytes); nullopt: 4 KiB or the plan's minimum.
  std::optional<uint64_t> maxBytes;      ///< -e (bytes); nullopt: 1 MiB (or 4x -b).
  unsigned factor = 4;                   ///< -f, at least 2.
  std::optional<uint64_t> size;          ///< --size: one size instead of a sweep.
  plan::DataType dataType = plan::DataType::Float32;
  std::optional<plan::ReduceOp> reduceOp;  ///< -o; nullopt: the plan's, else sum.
  std::optional<bool> inPlace;           ///< --in-place / --out-of-place; nullopt: the plan's.
  runtime::PacketType packet = runtime::PacketType::LL16;
  unsigned iterations = 5;               ///< -n timed launches per size.
  unsigned warmup = 1;                   ///< -w
  bool check = true;                     ///< --check / --no-check / -c 0|1
  bool raceCheck = false;                ///< --race-check (cpu backend)
  /// --target=msccl (or its older spelling --allow-over-limits): run a plan over the MSCCL++
  /// executor's per-threadblock table sizes (ValidateOptions::deviceLimits) on any backend of this
  /// project, with a warning naming the first limit exceeded.
  bool allowOverLimits = false;
  std::string jsonlPath;                 ///< --jsonl FILE ("" = none)
  std::string plansDir;                  ///< --plans DIR ("" = a single input)
  std::string collective = "allreduce";  ///< --collective (with --plans)
  unsigned nranks = 0;                   ///< --nranks (with --plans; 0 = any)
  /// Print a progress line on `err` before each size once the run has taken (or the next
  /// size is predicted to take) this many seconds; negative: never.
  double progressAfterSeconds = 3;
  /// --timeout: under mpirun, seconds one launch may take before every rank reports what each of
  /// its threadblocks waits for and the run fails.
  double timeoutSeconds = 60;
  /// --source-map FILE (mscclc --source-map): reports name the .msccl call of each op path.
  std::string sourceMap;
  /// --topology (sim backend): a topology name or FILE.json; "" = hgx-h100.
  std::string topology;
  /// --suggest-ranges (sim backend): print each plan's fastest message-size range instead of a table.
  bool suggestRanges = false;
  std::vector<std::string> morePlans;    ///< further PLAN.json inputs (with --suggest-ranges)
  /// --counts (AllToAllV plans, variable_sizes): uniform | random[:SEED] | skewed | zero | FILE.json
  /// (runtime::makeCounts). Each size S of the sweep is the average per-rank buffer: the matrix's
  /// scale is S / (element size x ranks) elements (a FILE matrix is used as it is).
  std::string counts;
};

/// Parses `argv[0..argc)` (argv[0] is the program name) into `options`. Returns -1 when the
/// caller should go on to run, else the exit status: 0 after --version (printed on `out`), 2
/// after a usage error (reported on `err`).
int parseCommandLine(int argc, const char *const *argv, Options &options, std::ostream &out, std::ostream &err);

/// Runs msccl-run with parsed options; returns the exit status (see above).
int runDriver(const Options &options, std::ostream &out, std::ostream &err);

/// parseCommandLine, then runDriver.
int runDriver(int argc, const char *const *argv, std::ostream &out, std::ostream &err);

} // namespace msccl::run
