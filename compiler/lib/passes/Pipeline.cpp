//===- Pipeline.cpp - The pass order (program.py post_process_operations) ---------------===//
#include "msccl/passes/Pipeline.h"

#include "msccl/passes/Dependency.h"
#include "msccl/passes/Fusion.h"
#include "msccl/passes/IRVerifier.h"
#include "msccl/passes/Pairing.h"
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

void checkProgram(const ir::ProgramIR &ir, const PipelineOptions &opts) {
  validateSignalWaitPairing(ir);
  if (opts.afterPass) opts.afterPass("pairing", ir, nullptr);
}

void runGpuPasses(const ir::ProgramIR &ir, ir::GpuIR &gpu, const PipelineOptions &opts) {
  ir::unpackOps(gpu);
  auto after = [&](const char *pass) {
    if (opts.verifyEach) {
      bool sources = false; // locations are required when the program has any (built from .msccl)
      for (auto &tb : gpu.threadblocks)
        for (auto &op : tb.ops) sources |= op.source != 0;
      auto v = verifyGpu(gpu, sources);
      if (!v.empty()) throw std::logic_error(std::string("IR verifier after ") + pass + ": " + v.front());
    }
    if (opts.afterPass && std::string_view(pass) != "elaboration") opts.afterPass(pass, ir, &gpu);
  };
  after("elaboration");
  // The per-tb passes, in order; each is independent per threadblock.
  if (ir.options.instrFusion && !opts.skipFusion)
    for (auto &tb : gpu.threadblocks) fuseOperations(tb.ops);
  after("fusion");
  for (auto &tb : gpu.threadblocks) addDataSync(tb.ops);
  after("sync-insertion");
  if (ir.options.autoSync && !opts.skipAutoSync)
    for (auto &tb : gpu.threadblocks) resolveDataDependency(tb.ops);
  after("dependency");
  // Replication is applied by lowering (backend::lowerGpuReplicated).
  if (opts.afterPass) opts.afterPass("replication", ir, &gpu);
}

} // namespace msccl::passes
