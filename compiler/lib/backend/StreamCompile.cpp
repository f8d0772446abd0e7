//===- StreamCompile.cpp - Rank-by-rank compilation into a PlanStreamWriter -------------===//
#include "msccl/backend/StreamCompile.h"

#include "msccl/backend/Lower.h"
#include "msccl/passes/Pairing.h"
#include "msccl/plan/PlanJson.h"

namespace msccl::backend {

using namespace msccl::ir;

namespace {

bool nonNegative(const LocalChunk &c) { return c.index >= 0 && c.size >= 0; }
bool nonNegative(const RemoteChunk &c) { return c.index >= 0 && c.size >= 0; }
template <class T> bool allNonNegative(const std::vector<T> &v) {
  for (auto &x : v)
    if (!nonNegative(x)) return false;
  return true;
}

bool isSwitchOp(OpKind k) {
  return k == OpKind::MultiLoadReduce || k == OpKind::MultiStore || k == OpKind::MultiStorePackets ||
         k == OpKind::MultiLoadReduceStore;
}

/// Whether every value lowering reads from `op` (or from what fusion may build out of it) is
/// non-negative. Replication maps a non-negative index i of size s >= 0 to i*n + k*s >= 0, and
/// fusion only moves values between ops, so then lowering cannot throw.
bool opFits(const Op &op) {
  if (!allNonNegative(op.localSrc) || !allNonNegative(op.localDst) || !allNonNegative(op.localPktDst) ||
      !allNonNegative(op.remoteSrc) || !allNonNegative(op.remoteDst))
    return false;
  if (isSwitchOp(op.kind)) {
    if (op.bufferOffset < 0 || op.switchSize < 0 || op.userChunk.index < 0 || op.userChunk.size < 0) return false;
    for (auto i : op.srcIndex)
      if (i < 0) return false;
  }
  if (op.kind == OpKind::Pipeline) {
    if (op.unit < 0 || op.numChunks < 0) return false;
    for (auto &inner : op.ops)
      if (!opFits(inner)) return false;
  }
  return true;
}

/// Conservative: true only if lowering the program after the passes cannot throw.
bool fitsPlan(const ProgramIR &ir) {
  if (ir.options.instances < 1) return false;
  for (auto &g : ir.gpus) {
    if (g.inputChunks < 0 || g.outputChunks < 0 || g.scratchChunks < 0) return false;
    for (auto &tb : g.threadblocks)
      for (auto &op : tb.ops)
        if (!opFits(op)) return false;
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

void streamPlan(ProgramIR &ir, const passes::PipelineOptions &opts, std::ostream &os, int indent) {
  plan::PlanStreamWriter writer(os, planHeader(ir.options), indent);
  passes::PipelineOptions gpuOpts = opts;
  gpuOpts.afterPass = nullptr;
  for (auto &g : ir.gpus) {
    if (ir.processed) {
      writer.gpu(lowerGpu(g));
    } else {
      passes::runGpuPasses(ir.options, g, gpuOpts);
      writer.gpu(lowerGpuReplicated(ir.options, g));
    }
    release(g);
  }
  writer.finish();
}

} // namespace msccl::backend
