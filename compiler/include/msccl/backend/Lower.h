//===- Lower.h - Processed IR -> msccl::plan::Plan --------------------------------------===//
//
// Consumes: a ProgramIR after passes::runPipeline (replication applied).
// Produces: the plan model of runtime/include/msccl/plan/Plan.h, which PlanJson.h writes with the
// DSL's key order. Numbering and ordering follow dsl-semantics.md §6.6, optional fields §6.7:
// memory `put`-family ops carry no channel_ids, port ones do; get carries channel_ids; reductions
// carry no channel ids and no channel_type when purely local; gstore's src carries its rank; glre
// has its own fields; glres writes the source index into dst_buff (Python bug, copied for parity).
//
// Mirrors: the to_dict methods of internal/{operations,threadblock,gpu}.py and program.py to_json.
//
//===------------------------------------------------------------------------------------===//
#pragma once

#include "msccl/backend/SourceMap.h"
#include "msccl/ir/IR.h"
#include "msccl/passes/Pipeline.h"
#include "msccl/plan/Plan.h"

namespace msccl::backend {

/// The plan's top-level fields (name, collective, protocol, ...) from the program options; no gpus.
plan::Plan planHeader(const ir::ProgramOptions &options);
/// Lower a processed program. Throws ir::DslError when a value does not fit the plan model
/// (e.g. a negative chunk index), its source() the op's. When `sources` is given, it gets the
/// location of every plan op (SourceMap.h) and a copy of the program's source table.
plan::Plan lowerToPlan(const ir::ProgramIR &ir, SourceMap *sources = nullptr);
/// Lower one GPU of a processed program (replication applied). Throws ir::DslError as
/// lowerToPlan; fills the GPU's entries of `sources` when given.
plan::Gpu lowerGpu(const ir::GpuIR &gpu, SourceMap *sources = nullptr);
/// Lower one GPU that went through passes 2-4 (passes::runGpuPasses) but not replication,
/// replicating while lowering: the result equals lowerGpu of the same GPU after
/// passes::replicateInstances (`options.instances` copies of each threadblock, ids and chunk
/// indices mapped by passes::InstanceShift, signal/wait/flush id sets rebuilt). Throws
/// ir::DslError as lowerToPlan.
plan::Gpu lowerGpuReplicated(const ir::ProgramOptions &options, const ir::GpuIR &gpu, SourceMap *sources = nullptr);
/// Convenience: runPipeline(program.ir(), opts) then lowerToPlan. Does not change `program`.
plan::Plan compile(const ir::Program &program, const passes::PipelineOptions &opts = {}, SourceMap *sources = nullptr);

} // namespace msccl::backend
