//===- Pipeline.cpp - The pass order (program.py post_process_operations) ---------------===//
#include "msccl/passes/Pipeline.h"

#include "msccl/passes/Dependency.h"
#include "msccl/passes/Fusion.h"
#include "msccl/passes/IRVerifier.h"
#include "msccl/passes/Pairing.h"
#include "msccl/passes/Replication.h"
#include "msccl/passes/SyncInsertion.h"

#include <stdexcept>

namespace msccl::passes {

const std::vector<std::string_view> &passNames() {
  static const std::vector<std::string_view> names = {"pairing", "fusion", "sync-insertion", "dependency", "replication"};
  return names;
}

bool isPassName(std::string_view name) {
  for (auto n : passNames())
    if (n == name) return true;
  return false;
}

void runPipelineInPlace(ir::ProgramIR &ir, const PipelineOptions &opts) {
  auto after = [&](std::string_view name) {
    if (opts.afterPass) opts.afterPass(name, ir);
  };
  ir::unpackOps(ir);
  if (ir.processed) return; // already post-processed: running again must not replicate twice
  validateSignalWaitPairing(ir);
  after("pairing");
  // Python runs the per-tb passes GPU by GPU; they are independent per threadblock, so running
  // each pass over all GPUs gives the same result and lets --print-after show a whole program.
  if (ir.options.instrFusion && !opts.skipFusion) fuseProgram(ir);
  after("fusion");
  addDataSyncProgram(ir);
  after("sync-insertion");
  if (ir.options.autoSync && !opts.skipAutoSync) resolveDataDependencyProgram(ir);
  after("dependency");
  replicateInstances(ir);
  ir.processed = true;
  after("replication");
}

void runGpuPasses(const ir::ProgramOptions &options, ir::GpuIR &gpu, const PipelineOptions &opts) {
  const bool fuse = options.instrFusion && !opts.skipFusion;
  const bool autoSync = options.autoSync && !opts.skipAutoSync;
  ir::unpackOps(gpu);
  auto verify = [&](const char *pass) {
    if (!opts.verifyEach) return;
    bool sources = false; // locations are required when the program has any (built from .msccl)
    for (auto &tb : gpu.threadblocks)
      for (auto &op : tb.ops) sources |= op.source != 0;
    auto v = verifyGpu(gpu, sources);
    if (!v.empty()) throw std::logic_error(std::string("IR verifier after ") + pass + ": " + v.front());
  };
  verify("elaboration");
  for (auto &tb : gpu.threadblocks)
    if (fuse) fuseOperations(tb.ops);
  verify("fusion");
  for (auto &tb : gpu.threadblocks) addDataSync(tb.ops);
  verify("sync-insertion");
  for (auto &tb : gpu.threadblocks)
    if (autoSync) resolveDataDependency(tb.ops);
  verify("dependency");
}

ir::ProgramIR runPipeline(const ir::ProgramIR &in, const PipelineOptions &opts) {
  ir::ProgramIR copy = in;
  runPipelineInPlace(copy, opts);
  return copy;
}

} // namespace msccl::passes
