//===- StreamCompile.h - Compile and write a plan rank by rank --------------------------===//
//
// Consumes: the elaborated ProgramIR (user ops as called, no pass run yet), owned by the caller.
// Produces: the JSON plan text on a std::ostream, byte-identical to
//   plan::writePlan(backend::compile(program)), which makes the same calls in memory.
// Flow (the pass order of passes/Pipeline.h): prepareStream checks the program-wide facts
//   (passes::checkProgram: signal/wait pairing) and values the plan cannot hold, so that the
//   caller may then create its output; streamPlan handles one rank at a time: passes 2-4
//   (passes::runGpuPasses, with its afterPass calls: `--print-after` prints each rank as it
//   streams) in place, lowering with replication (lowerGpuReplicated), plan::PlanStreamWriter::gpu,
//   then frees that rank's IR and plan::Gpu. No IR is copied and replicated IR is never
//   materialized, so the memory held is the unreplicated IR plus one rank of the plan model;
//   time is linear in the plan size.
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

/// Checks everything that would make streamPlan throw: signal/wait pairing (with the afterPass
/// call of "pairing"), then negative chunk indices/sizes/counts, which the plan's unsigned fields
/// cannot hold (for a program that has some, by running the per-rank pipeline on a copy of each
/// rank). Throws ir::DslError with the message and source streamPlan would; does not change `ir`.
void prepareStream(const ir::ProgramIR &ir, const passes::PipelineOptions &opts = {});

/// Writes the plan of `ir` to `os` rank by rank (`indent` as plan::writePlan: 2 = Python's layout,
/// < 0 compact). Call prepareStream first: errors it would have found are thrown here as
/// ir::DslError too, but possibly after part of the text was written. Consumes `ir`: its GPUs
/// are emptied as they are written. `opts.afterPass` is called per rank (Pipeline.h).
/// When `sources` is given it gets the location of every plan op (SourceMap.h) and a copy of the
/// program's source table.
void streamPlan(ir::ProgramIR &ir, const passes::PipelineOptions &opts, std::ostream &os, int indent = 2,
                SourceMap *sources = nullptr);

} // namespace msccl::backend
