// The CUDA benchmark's synthetic plans pass the runtime's validation and lower for the device
// (so the benchmark measures plans the executor accepts).
#include "BenchPlans.h"

#include "msccl/cuda/Lowering.h"
#include "msccl/runtime/PlanValidate.h"

#include <catch2/catch.hpp>

using namespace msccl;

TEST_CASE("benchmark plans validate and lower", "[cuda][bench]") {
  struct Item { plan::Plan p; uint64_t bytes; };
  std::vector<Item> items = {{bench::copyPlan(132), 1ull << 30}, {bench::reducePlan(132), 1ull << 30},
                             {bench::allPairsPacketAllReduce(8), 8192}, {bench::allPairsAllReduce(8, 16), 256ull << 20}};
  for (Item &it : items) {
    INFO(*it.p.name);
    CHECK(runtime::checkPlan(it.p).empty());
    std::vector<cuda::LoweredRank> ranks;
    REQUIRE_NOTHROW(ranks = cuda::lowerForDevice(it.p, it.bytes, it.bytes));
    for (const cuda::LoweredRank &r : ranks) CHECK(r.threadblocks.size() == it.p.gpus[r.rank].threadblocks.size());
  }
  // 16 threadblocks per rank over 8 ranks: the packet plan's single tb touches 7 peers' scratch.
  auto ll = cuda::lowerForDevice(bench::allPairsPacketAllReduce(8), 8192, 8192);
  CHECK(ll[0].usesPackets);
  CHECK(ll[0].scratchBytes >= 2 * 16 * 1024);
}
