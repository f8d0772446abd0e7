//===- StreamCompile.cpp - Rank-by-rank compilation into a PlanStreamWriter -------------===//
#include "msccl/backend/StreamCompile.h"

#include "msccl/backend/Lower.h"
#include "msccl/passes/Pairing.h"
#include "msccl/plan/PlanJson.h"

namespace msccl::backend {

using namespace msccl::ir;

namespace {

/// Conservative: true only if lowering the program after the passes cannot throw.
bool fitsPlan(const ProgramIR &ir) {
  if (ir.options.instances < 1) return false;
  for (auto &g : ir.gpus) {
    if (g.inputChunks < 0 || g.outputChunks < 0 || g.scratchChunks < 0) return false;
    for (auto &tb : g.threadblocks) {
      if (!tb.packed.nonNegative) return false;
      for (auto &op : tb.ops)
        if (!hasNonNegativeValues(op)) return false;
    }
  }
  return true;
}

/// Drops a rank's IR and returns its memory.
void release(GpuIR &g) { g = GpuIR(); }

} // namespace

void prepareStream(const ProgramIR &ir, const passes::PipelineOptions &opts) {
  passes::checkProgram(ir, opts);
  if (fitsPlan(ir)) return;
  // Rare: a value the plan cannot hold (the check is conservative). Run the per-rank pipeline
  // on a copy of each rank, which throws the error streamPlan would throw.
  if (ir.options.instances < 1) return; // no threadblock is written: nothing can fail
  passes::PipelineOptions quiet = opts;
  quiet.afterPass = nullptr;
  for (auto &g : ir.gpus) {
    GpuIR copy = g;
    passes::runGpuPasses(ir, copy, quiet);
    (void)lowerGpuReplicated(ir.options, copy);
  }
}

void streamPlan(ProgramIR &ir, const passes::PipelineOptions &opts, std::ostream &os, int indent, SourceMap *sources) {
  plan::PlanStreamWriter writer(os, planHeader(ir.options), indent);
  for (auto &g : ir.gpus) {
    passes::runGpuPasses(ir, g, opts);
    writer.gpu(lowerGpuReplicated(ir.options, g, sources));
    release(g);
  }
  writer.finish();
  if (sources) sources->setSources(ir.sources);
}

} // namespace msccl::backend
