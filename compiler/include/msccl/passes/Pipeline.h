//===- Pipeline.h - The post-processing pass order of the MSCCL++ DSL -------------------===//
//
// Consumes: the ProgramIR built through Dsl.h (user ops as called).
// Produces: the processed ProgramIR that the backend lowers (msccl/backend/Lower.h).
// Order (program.py post_process_operations, dsl-semantics.md §6.0):
//   1. pairing         signal/wait pairing validation (whole program; throws DslError)
//   2. fusion          instruction fusion per tb (if instr_fusion and not skipFusion)
//   3. sync-insertion  nops from data_sync flags per tb (always)
//   4. dependency      data-dependency nops per tb (if auto_sync and not skipAutoSync)
//   5. replication     instance replication per GPU (always)
// Guarantees: running the pipeline does not change its input (the `const &` overload copies), so
// compiling twice gives the same plan (unlike Python's JSON(), which re-processes).
// Rank by rank: passes 2-4 only read and write one GPU's threadblocks, so a compiler that streams
// the plan (backend/StreamCompile.h) validates pairing once, then runs runGpuPasses on each rank
// and replicates while lowering; the result is the same as the whole-program pipeline.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/ir/IR.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace msccl::passes {

/// Pass names, in pipeline order: "pairing", "fusion", "sync-insertion", "dependency", "replication".
const std::vector<std::string_view> &passNames();
/// Whether `name` is one of passNames().
bool isPassName(std::string_view name);

struct PipelineOptions {
  bool skipFusion = false;   ///< Skip fusion even when the program asks for it.
  bool skipAutoSync = false; ///< Skip the dependency pass even when auto_sync is on.
  /// Run the IR verifier (IRVerifier.h) after each per-rank pass (`--verify-ir-each`); a
  /// violation throws std::logic_error naming the pass, rank, threadblock and op.
  bool verifyEach = false;
  /// Called after each pass that ran (or was skipped) with its name and the IR at that point.
  std::function<void(std::string_view pass, const ir::ProgramIR &)> afterPass;
};

/// Run the passes on a copy of `in`. Throws ir::DslError (pairing mismatch).
ir::ProgramIR runPipeline(const ir::ProgramIR &in, const PipelineOptions &opts = {});
/// Run the passes in place on `ir` (for callers that compile once). Throws ir::DslError.
void runPipelineInPlace(ir::ProgramIR &ir, const PipelineOptions &opts = {});
/// Passes 2-4 (fusion, sync-insertion, dependency) on one GPU of a program whose options are
/// `options`, in place; no pairing validation, no replication, no afterPass calls. Throws only
/// with opts.verifyEach, when the IR verifier finds a violation (a compiler bug).
void runGpuPasses(const ir::ProgramOptions &options, ir::GpuIR &gpu, const PipelineOptions &opts = {});

} // namespace msccl::passes
