//===- FuzzCpuExecutor.cpp - libFuzzer target: plan -> CPU executor run -----------------===//
//
// Reads the input as a JSON plan; a plan that passes runtime::checkPlan and is small (at most
// 8 ranks, 2048 ops, buffers of at most 64 KiB per rank) is run once on the CPU reference
// executor at its smallest message size, with the race checker on for every other input, and
// verified. Work is bounded: the plan's size is bounded above, the scheduler stops at a deadlock
// by itself, and a wall-clock limit of 2 s per run is the last resort. Every ExecutionError
// (invalid size, deadlock, misuse, race) is a fine outcome; a crash, a sanitizer report, a leak
// or another exception is a bug.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/CpuExecutor.h"
#include "msccl/runtime/PlanValidate.h"
#include "msccl/runtime/Verify.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace {

constexpr size_t kMaxRanks = 8, kMaxOps = 2048;
constexpr uint64_t kMaxBytes = 64 << 10;

size_t countOps(const msccl::plan::Plan &p) {
  size_t n = 0;
  for (const auto &g : p.gpus)
    for (const auto &tb : g.threadblocks)
      for (const auto &op : tb.ops)
        n += 1 + op.ops.size();
  return n;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace msccl;
  plan::Plan p;
  try {
    p = plan::parsePlan(std::string(reinterpret_cast<const char *>(data), size));
  } catch (const plan::PlanError &) {
    return 0;
  }
  runtime::ValidateOptions vo;
  vo.allowGlre = true;
  if (p.gpus.empty() || p.gpus.size() > kMaxRanks || countOps(p) > kMaxOps || !runtime::checkPlan(p, vo).empty())
    return 0;
  // The smallest message size the plan takes: max(chunks) * alignment, raised to a multiple
  // above min_message_size; skipped when buffers would exceed kMaxBytes.
  const plan::Gpu &g = p.gpus[0];
  unsigned __int128 denom = std::max<uint64_t>({g.inputChunks, g.outputChunks, 1});
  unsigned __int128 unit = denom * std::max<uint64_t>(p.bufferAlignment, 1);
  if (unit > kMaxBytes)
    return 0;
  unsigned __int128 s = unit;
  if (p.minMessageSize > kMaxBytes)
    return 0;
  while (s < p.minMessageSize)
    s += unit;
  for (const auto &gpu : p.gpus) {
    uint64_t chunks = std::max({gpu.inputChunks, gpu.outputChunks, gpu.scratchChunks});
    if (chunks > denom * 64 || s * chunks / denom > kMaxBytes)
      return 0;
  }
  runtime::CpuExecutorOptions eo;
  eo.timeLimitSeconds = 2;
  eo.raceCheck = (size & 1) != 0;
  auto executor = runtime::makeCpuExecutor(eo);
  runtime::RunOptions ro;
  ro.size = uint64_t(s);
  ro.iterations = 0;
  ro.packetType = (size & 2) ? runtime::PacketType::LL8 : runtime::PacketType::LL16;
  try {
    (void)runtime::runCollective(*executor, p, ro);
  } catch (const runtime::ExecutionError &) {
  }
  return 0;
}
