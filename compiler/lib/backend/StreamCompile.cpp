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
  if (ir.processed) {
    if (!fitsPlan(ir)) (void)lowerToPlan(ir);
    return;
  }
  passes::validateSignalWaitPairing(ir);
  // Rare: a value the plan cannot hold. Run the whole-program path, which throws the error
  // compile() reports (the conservative check may also flag programs that compile fine).
  if (!fitsPlan(ir)) (void)lowerToPlan(passes::runPipeline(ir, opts));
}

void streamPlan(ProgramIR &ir, const passes::PipelineOptions &opts, std::ostream &os, int indent, SourceMap *sources) {
  plan::PlanStreamWriter writer(os, planHeader(ir.options), indent);
  passes::PipelineOptions gpuOpts = opts;
  gpuOpts.afterPass = nullptr;
  for (auto &g : ir.gpus) {
    if (ir.processed) {
      writer.gpu(lowerGpu(g, sources));
    } else {
      passes::runGpuPasses(ir.options, g, gpuOpts);
      writer.gpu(lowerGpuReplicated(ir.options, g, sources));
    }
    release(g);
  }
  writer.finish();
  if (sources) sources->setSources(ir.sources);
}

} // namespace msccl::backend
