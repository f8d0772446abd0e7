//===- Pipeline.h - The pass order of the MSCCL++ DSL, written once ---------------------===//
//
// Consumes: the ProgramIR built through Dsl.h (user ops as called).
// Produces: per rank, the processed GpuIR that the backend lowers (msccl/backend/Lower.h).
// Order (program.py post_process_operations, spec dsl#6.0):
//   1. pairing         program-wide: signal/wait pairing (checkProgram; throws DslError)
//   then per rank (runGpuPasses), as the plan streams (backend/StreamCompile.h):
//   2. fusion          instruction fusion per tb (if instr_fusion and not skipFusion)
//   3. sync-insertion  nops from data_sync flags per tb (always)
//   4. dependency      data-dependency nops per tb (if auto_sync and not skipAutoSync)
//   5. replication     `instances` copies of every tb (always), applied by lowering
//                      (backend::lowerGpuReplicated, the one implementation; Replication.h)
// Passes 2-4 only read and write one rank's threadblocks, so checking pairing once and then
// running 2-5 rank by rank gives the Python DSL's result. There is one compile path: mscclc
// streams (backend::streamPlan); backend::compile builds a whole plan::Plan with the same calls.
// Guarantees: the input program is never changed by backend::compile (it works on a copy), so
// compiling twice gives the same plan (unlike Python's JSON(), which re-processes).
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
  /// Run the IR verifier (IRVerifier.h) after elaboration and each per-rank pass
  /// (`--verify-ir-each`); a violation throws std::logic_error naming the pass, rank, tb and op.
  bool verifyEach = false;
  /// Called after each pass that ran (or was skipped): "pairing" once with `gpu` null and the
  /// whole program; the per-rank passes once per rank, as it streams, with that rank (for
  /// "replication": the rank lowering replicates, `ir.options.instances` copies per tb).
  std::function<void(std::string_view pass, const ir::ProgramIR &ir, const ir::GpuIR *gpu)> afterPass;
};

/// Pass 1, the program-wide facts: signal/wait pairing. Throws ir::DslError (with the source of
/// the unmatched call).
void checkProgram(const ir::ProgramIR &ir, const PipelineOptions &opts = {});
/// Passes 2-4 on rank `gpu` of `ir` in place (its ops unpacked first), then the afterPass call of
/// "replication". Throws only with opts.verifyEach, when the IR verifier finds a violation.
void runGpuPasses(const ir::ProgramIR &ir, ir::GpuIR &gpu, const PipelineOptions &opts = {});

} // namespace msccl::passes
