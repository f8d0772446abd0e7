// Host-only: plans in MSCCLPPLang's older format (plan/LegacyPlan.h) reach the CUDA executor
// through the same reader, and lower to device structs: the hand-written ones of tests/plan/legacy
// and every reference plan of ../shared/legacy/mscclpplang. (Lowering itself has no limit on ids
// or op counts; the executors' plan validation refuses the reference plan beyond MSCCL++'s limits.)
#include "msccl/cuda/Lowering.h"

#include "msccl/plan/LegacyPlan.h"
#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/Executor.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>

using namespace msccl;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> jsonFiles(const fs::path &dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir))
    return out;
  for (auto &e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json")
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

TEST_CASE("plans in the older format lower for the device", "[cuda][lowering][legacy]") {
  std::vector<fs::path> plans = jsonFiles(fs::path(MSCCL_SOURCE_DIR) / "tests/plan/legacy");
  REQUIRE(!plans.empty());
  auto shared = jsonFiles(fs::path(MSCCL_SHARED_DIR) / "legacy/mscclpplang");
  if (shared.empty())
    WARN("no reference plans under " MSCCL_SHARED_DIR "/legacy/mscclpplang; only the hand-written ones");
  plans.insert(plans.end(), shared.begin(), shared.end());
  unsigned lowered = 0;
  for (const fs::path &path : plans) {
    INFO(path.string());
    REQUIRE(plan::isLegacyPlanFile(path.string()));
    plan::Plan p = plan::readPlanFile(path.string());
    const uint64_t c = 1024;
    uint64_t in = p.gpus[0].inputChunks * c, out = p.gpus[0].outputChunks * c;
    std::vector<cuda::LoweredRank> ranks = cuda::lowerForDevice(p, in, out);
    REQUIRE(ranks.size() == p.gpus.size());
    for (const cuda::LoweredRank &lr : ranks) {
      CHECK(lr.chunkBytes == c);
      CHECK(lr.threadblocks.size() == p.gpus[lr.rank].threadblocks.size());
    }
    ++lowered;
  }
  CHECK(lowered == plans.size());
}
