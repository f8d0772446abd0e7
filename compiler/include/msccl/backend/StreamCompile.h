//===- StreamCompile.h - Compile and write a plan rank by rank --------------------------===//
//
// Consumes: the elaborated ProgramIR (user ops as called, no pass run yet), owned by the caller.
// Produces: the JSON plan text on a std::ostream, byte-identical to
//   plan::writePlan(backend::compile(program)) (the whole-program path of Lower.h).
// Flow: prepareStream validates what is global or can fail (signal/wait pairing, values the plan
//   cannot hold), so that the caller may then create its output; streamPlan handles one rank at
//   a time: passes 2-4 (passes::runGpuPasses) in place, lowering with replication
//   (lowerGpuReplicated), plan::PlanStreamWriter::gpu, then frees that rank's IR and plan::Gpu.
//   No IR is copied and replicated IR is never materialized, so the memory held is the
//   unreplicated IR plus one rank of the plan model; time is linear in the plan size.
// --print-after needs the whole program after each pass: the driver then uses Lower.h's compile.
//
// Mirrors: program.py post_process_operations + to_json, with the per-tb passes GPU by GPU as
// Python runs them.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/backend/SourceMap.h"
#include "msccl/ir/IR.h"
#include "msccl/passes/Pipeline.h"

#include <iosfwd>

namespace msccl::backend {

/// Checks everything that would make compile() throw: signal/wait pairing, then negative chunk
/// indices/sizes/counts (which the plan's unsigned fields cannot hold). Throws ir::DslError with
/// the same message as compile(program, opts) would; does not change `ir`.
void prepareStream(const ir::ProgramIR &ir, const passes::PipelineOptions &opts = {});

/// Writes the plan of `ir` to `os` rank by rank (`indent` as plan::writePlan: 2 = Python's layout,
/// < 0 compact). Call prepareStream first: errors it would have found are thrown here as
/// ir::DslError too, but possibly after part of the text was written. Consumes `ir`: its GPUs
/// are emptied as they are written. `opts.afterPass` is ignored. Works on a processed IR too.
/// When `sources` is given it gets the location of every plan op (SourceMap.h) and a copy of the
/// program's source table.
void streamPlan(ir::ProgramIR &ir, const passes::PipelineOptions &opts, std::ostream &os, int indent = 2,
                SourceMap *sources = nullptr);

} // namespace msccl::backend
