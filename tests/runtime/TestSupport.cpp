//===- TestSupport.cpp - Helpers shared by the runtime tests -----------------------------===//
#include "TestSupport.h"

#include "msccl/runtime/Resolve.h"

#include <algorithm>
#include <filesystem>

namespace msccl::test {
namespace fs = std::filesystem;

std::string sharedDir() {
  std::string d = MSCCL_SHARED_DIR;
  return fs::is_directory(d + "/golden") ? d : "";
}

std::string plansDir() { return MSCCL_RUNTIME_PLANS_DIR; }

std::vector<std::string> jsonFiles(const std::string &dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".json")
      out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint64_t> sizesFor(const plan::Plan &plan, std::vector<uint64_t> factors) {
  const plan::Gpu &g = plan.gpus.at(0);
  uint64_t denom = std::max(g.inputChunks, g.outputChunks);
  if (denom == 0)
    denom = std::max<uint64_t>(g.scratchChunks, 1);
  uint64_t unit = denom * plan.bufferAlignment;
  std::vector<uint64_t> out;
  for (uint64_t k : factors) {
    uint64_t s = k * unit;
    while (s < plan.minMessageSize)
      s += unit * k;
    out.push_back(s);
  }
  return out;
}

bool usesPackets(const plan::Plan &plan) {
  for (const auto &g : plan.gpus)
    for (const auto &tb : g.threadblocks)
      for (const auto &op : tb.ops) {
        if (runtime::isPacketOp(op.type))
          return true;
        for (const auto &in : op.ops)
          if (runtime::isPacketOp(in.type))
            return true;
      }
  return false;
}

} // namespace msccl::test
