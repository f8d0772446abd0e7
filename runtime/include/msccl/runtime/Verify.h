//===- Verify.h - Run a plan on a backend with generated inputs and check the outputs ----===//
//
// Consumes a backend, a plan, an nccl-tests style message size S and run options; allocates the
// per-rank buffers through the backend (aliased per spec plan#10.5 when in place), fills the
// inputs with inputValue (Collective.h), runs `warmup + iterations` timed launches, then - when
// checking - refills the inputs, runs one more launch and compares every output element with the
// collective's end state (OutputChecker, block by block: the host memory this takes beyond the
// backend's buffers is one block, OutputChecker::kBlockBytes). Produces the timing (per launch), algbw/busbw (nccl-tests factors) and
// the verification result. Errors of the backend (ExecutionError) propagate to the caller.
// Used by msccl-run, the runtime tests and the CPU benchmark.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/runtime/Collective.h"
#include "msccl/runtime/Counts.h"
#include "msccl/runtime/Executor.h"

#include <functional>
#include <optional>

namespace msccl::runtime {

struct RunOptions {
  uint64_t size = 0;                        ///< nccl-tests size S (bytes), see Collective.h.
  plan::DataType dataType = plan::DataType::Float32;
  std::optional<plan::ReduceOp> reduceOp;   ///< nullopt: the plan's reduce_op, else sum.
  std::optional<bool> inPlace;              ///< nullopt: the plan's `inplace`.
  PacketType packetType = PacketType::LL16;
  unsigned iterations = 1;                  ///< Timed launches (0: only the checked launch).
  unsigned warmup = 0;
  bool check = true;
  /// Launches of the checked run (> 1 only makes sense for collectives whose end state does not
  /// depend on the number of launches, e.g. allgather, alltoall, sendrecv, or out-of-place ones).
  /// Exercises LL flag advance and double-scratch alternation before the compare.
  unsigned checkLaunches = 1;
  /// The plan already passed validatePlan with allowGlre (ExecuteRequest::planValidated).
  bool planValidated = false;
  /// AllToAllV: the count matrix (elements) a plan with variable_sizes runs with; `size` is then
  /// ignored. Required by such plans (ExecutionError(InvalidSize) without), ignored by others.
  const CountMatrix *counts = nullptr;
};

struct RunReport {
  MessageSizes sizes;
  plan::ReduceOp reduceOp = plan::ReduceOp::Sum; ///< The op used (and verified against).
  bool inPlace = false;
  double secondsPerLaunch = 0;
  double algbw = 0, busbw = 0;              ///< GB/s (1e9 bytes per second).
  VerifyResult verify;                      ///< checked == false when not verified.
  std::vector<std::string> warnings;         ///< ExecuteResult::warnings of the runs (race checker).
  uint64_t bytesMoved = 0;                  ///< AllToAllV: bytes of all blocks (sum of counts x element size); else 0.
  double resolveSeconds = 0;                ///< AllToAllV: time of one CountsResolver::resolve (per call).
};

/// What every run of `plan` at `options.size` starts from, whatever runs it (runCollective, the
/// MPI runner of DistributedRun.h): the message sizes, the reduce op (options', else the plan's,
/// else sum) and in-place-ness (options', else the plan's); timing and verification are left
/// empty. Throws ExecutionError(InvalidSize) when the plan cannot take the size (the message says
/// why, see messageSizesFor), ExecutionError(Unsupported) when `options.reduceOp` conflicts with
/// the reduce_op of the plan's ops.
RunReport startRun(const plan::Plan &plan, const RunOptions &options);

/// Run and verify. With a backend that moves no data (Executor::movesData() false) the inputs
/// are not filled and nothing is verified (verify.checked stays false).
/// Throws ExecutionError(InvalidSize) when the plan cannot take size S (the message says why, see messageSizesFor), ExecutionError(Unsupported) when `reduceOp` conflicts
/// with the reduce_op the plan's ops fix, and whatever the backend throws.
/// A plan with variable_sizes (AllToAllV) needs `options.counts`: it is resolved once
/// (CountsResolver, Counts.h), the concrete plan runs, and each rank's output is checked against
/// the matrix; report.bytesMoved is the bytes of all blocks and algbw is bytesMoved / ranks / time.
RunReport runCollective(Executor &executor, const plan::Plan &plan, const RunOptions &options);
/// AllToAllV report figures from the matrix (bytesMoved, algbw, busbw).
void finishVariableReport(RunReport &report, const CountMatrix &counts, plan::DataType type, uint32_t nranks);
/// The AllToAllV prologue of every runner (runCollective, the MPI runner): checks that `options`
/// carry counts and ask for an out-of-place run, resolves the plan once (CountsResolver), calls
/// `run` with the concrete plan and options sized for it (planValidated cleared), then fills the
/// report's bytesMoved/algbw/busbw and resolveSeconds.
/// Throws ExecutionError(InvalidSize) without counts, ExecutionError(Unsupported) in place, what
/// CountsResolver::resolve throws for a bad matrix, and what `run` throws.
RunReport runVariableSizes(const plan::Plan &plan, const RunOptions &options,
                           const std::function<RunReport(const plan::Plan &, const RunOptions &)> &run);

} // namespace msccl::runtime
