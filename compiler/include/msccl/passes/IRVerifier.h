//===- IRVerifier.h - Invariants of the IR, checked between passes ----------------------===//
//
// Consumes: one GPU of a ProgramIR (ops decoded), at any point of the pipeline.
// Produces: a list of violations (empty when the IR is well formed), each naming the rank,
//   threadblock and op position: fields consistent with the op's kind (a data-sync set only on
//   signal/wait/flush, semaphore ids only on sem ops, inner ops only on pipelines, no nested
//   pipelines, a channel type on channel ops), tb-local channel ids and remote buffer ids in
//   range of the threadblock's registrations, and, when the program has op locations, a
//   location on every op. Run by passes::runGpuPasses after each pass when
//   PipelineOptions::verifyEach is set (`mscclc --verify-ir-each`), as MLIR's verifier.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/ir/IR.h"

#include <string>
#include <vector>

namespace msccl::passes {

/// The violations of `gpu`'s IR ("rank R tb T op I: what"); `requireSources`: every op must have
/// a location (Op::source != 0).
std::vector<std::string> verifyGpu(const ir::GpuIR &gpu, bool requireSources);

} // namespace msccl::passes
