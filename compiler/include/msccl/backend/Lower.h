//===- Lower.h - Processed IR -> msccl::plan::Plan --------------------------------------===//
//
// Consumes: a rank after the passes of passes/Pipeline.h (passes::runGpuPasses).
// Produces: the plan model of runtime/include/msccl/plan/Plan.h, which PlanJson.h writes with the
// DSL's key order. Numbering and ordering follow spec dsl#6.6, optional fields dsl#6.7:
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
/// Lower a program as it is (no pass, no replication: for IR that is already processed, or to
/// inspect a pass's output). Throws ir::DslError when a value does not fit the plan model
/// (e.g. a negative chunk index), its source() the op's. When `sources` is given, it gets the
/// location of every plan op (SourceMap.h) and a copy of the program's source table.
plan::Plan lowerToPlan(const ir::ProgramIR &ir, SourceMap *sources = nullptr);
/// Lower one GPU of a processed program (replication applied). Throws ir::DslError as
/// lowerToPlan; fills the GPU's entries of `sources` when given.
plan::Gpu lowerGpu(const ir::GpuIR &gpu, SourceMap *sources = nullptr);
/// Lower one GPU that went through passes 2-4 (passes::runGpuPasses), applying pass 5,
/// replication (passes/Replication.h; its one implementation): `options.instances` copies of
/// each threadblock, ids and chunk indices mapped by passes::InstanceShift, signal/wait/flush id
/// sets rebuilt, GPU-level counts and declarations repeated. Throws ir::DslError as lowerToPlan.
plan::Gpu lowerGpuReplicated(const ir::ProgramOptions &options, const ir::GpuIR &gpu, SourceMap *sources = nullptr);
/// The whole plan in memory: on a copy of program.ir(), passes::checkProgram, then per rank
/// passes::runGpuPasses and lowerGpuReplicated (the calls of the streamed path,
/// StreamCompile.h). Does not change `program`. Throws ir::DslError.
plan::Plan compile(const ir::Program &program, const passes::PipelineOptions &opts = {}, SourceMap *sources = nullptr);

} // namespace msccl::backend
