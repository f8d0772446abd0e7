//===- RaceTest.cpp - The CPU executor's data-race checker on the golden plans -------------===//
//
// Every golden plan (../shared/golden) runs under CpuExecutorOptions::raceCheck at two sizes,
// two launches (both halves of a double scratch buffer), LL16 and LL8 for packet plans, and must
// be race-free - except the two reference plans with real races, whose reports are asserted:
//  * mscclpp-dsl unit_tests__put__put_fuse_test: both ranks put their input chunks into the
//    peer's input while the peer reads them as its own put's sources, ordered only by relaxed
//    signal/wait (a DSL unit test of the JSON shape; its data has no meaning);
//  * mscclpp-executor-tests reduce_tbg: thread-block groups split every op over tbs 0 and 1,
//    but each tb signals/waits only its own channel, so rank 0 tb 0 reads the half of rank 1's
//    scratch that rank 1 tb 1 wrote, with no synchronisation with rank 1 tb 1.
// The hand-written racy plans (plans/race_*.json) are run by PlansTest.cpp.
//
//===------------------------------------------------------------------------------------===//
#include "TestSupport.h"

#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/CpuExecutor.h"
#include "msccl/runtime/Verify.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <set>

using namespace msccl::plan;
using namespace msccl::runtime;

namespace {
const std::set<std::string> kDeadlockByConstruction = {
    "unit_tests__read_put_packet_test.json",
    "unit_tests__reduce_copy_packet_test.json",
    "unit_tests__reduce_copy_send_packet_test.json",
    "unit_tests__reduce_packet__reduce_packets_fuse_test.json",
    "unit_tests__reduce_packet__reduce_packets_test.json",
    "unit_tests__reduce_send_packet_test.json",
    "unit_tests__signal_wait__relaxed_signal_wait_fuse_test.json",
    "unit_tests__signal_wait__signal_wait_fuse_test.json",
};

// Real races of reference plans: file -> substrings of the report.
const std::map<std::string, std::vector<std::string>> kRacy = {
    {"unit_tests__put__put_fuse_test.json",
     {"data race: rank 0 tb 0 op 5 (put) at gpus[0].threadblocks[0].ops[5] writes rank 1's input [",
      "while rank 1 tb 0 op 5 (put) at gpus[1].threadblocks[0].ops[5] read it with no signal/wait"}},
    {"reduce_tbg.json",
     {"data race: rank 0 tb 0 op 7 (get) at gpus[0].threadblocks[0].ops[7] reads rank 1's scratch [",
      "while rank 1 tb 1 op 0 (copy) at gpus[1].threadblocks[1].ops[0] wrote it with no signal/wait"}},
};
} // namespace

TEST_CASE("golden plans are race-free under the race checker (except two real races)", "[races]") {
  std::string shared = msccl::test::sharedDir();
  if (shared.empty()) {
    WARN("../shared/golden is absent; skipping");
    return;
  }
  CpuExecutorOptions options;
  options.raceCheck = true;
  auto ex = makeCpuExecutor(options);
  size_t checked = 0, racy = 0;
  for (const char *sub : {"mscclpp-dsl", "mscclpp-executor-tests", "seed"})
    for (const std::string &file : msccl::test::jsonFiles(shared + "/golden/" + sub)) {
      const std::string base = std::filesystem::path(file).filename().string();
      if (kDeadlockByConstruction.count(base))
        continue;
      Plan plan = readPlanFile(file);
      std::vector<uint64_t> sizes = msccl::test::sizesFor(plan, {1, 16});
      std::vector<PacketType> packets = {PacketType::LL16};
      if (msccl::test::usesPackets(plan))
        packets.push_back(PacketType::LL8);
      for (uint64_t size : sizes)
        for (PacketType pt : packets) {
          INFO(base << " size " << size << " " << packetTypeName(pt));
          RunOptions ro;
          ro.size = size;
          ro.packetType = pt;
          ro.iterations = 2;
          auto racyIt = kRacy.find(base);
          if (racyIt == kRacy.end()) {
            RunReport rep;
            try {
              rep = runCollective(*ex, plan, ro);
            } catch (const ExecutionError &e) {
              REQUIRE(e.kind() == ErrorKind::InvalidSize); // a size this plan cannot run at: skipped
              WARN("skipped " << base << " at size " << size << ": " << e.what());
              continue;
            }
            CHECK(rep.verify.wrong == 0);
            ++checked;
            continue;
          }
          try {
            runCollective(*ex, plan, ro);
            FAIL("expected a data race report");
          } catch (const ExecutionError &e) {
            CHECK(e.kind() == ErrorKind::Misuse);
            CHECK(!e.diagnostics().empty());
            CHECK(e.diagnostics().size() <= 8);
            for (const std::string &s : racyIt->second)
              CHECK_THAT(std::string(e.what()), Catch::Contains(s));
            ++racy;
          }
        }
    }
  CHECK(checked >= 80);
  CHECK(racy >= 2);
}

TEST_CASE("the race checker is off by default and changes no result", "[races]") {
  std::string shared = msccl::test::sharedDir();
  if (shared.empty()) {
    WARN("../shared/golden is absent; skipping");
    return;
  }
  Plan plan = readPlanFile(shared + "/golden/mscclpp-executor-tests/reduce_tbg.json");
  RunOptions ro;
  ro.size = msccl::test::sizesFor(plan, {4})[0];
  auto plain = makeCpuExecutor();
  RunReport rep = runCollective(*plain, plan, ro);
  CHECK(rep.verify.checked);
  CHECK(rep.verify.wrong == 0);
}
