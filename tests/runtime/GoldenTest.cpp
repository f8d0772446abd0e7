//===- GoldenTest.cpp - Every golden plan on the CPU executor ----------------------------===//
//
// Every plan under ../shared/golden runs at several message sizes. Real collectives are
// verified element by element (float32 at every size; float16, bfloat16 and int32 at one size;
// LL8 as well as LL16 for packet plans). Plans with collective "test" must run without deadlock
// or misuse - except the DSL unit tests that only emit a consumer whose producer is missing
// (their packets / signals never arrive on a GPU either); for those the test asserts the
// deadlock report names every threadblock of every rank.
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
// DSL unit tests that deadlock by construction: one op waits for packets or signals that no op
// of the plan produces (the DSL test programs only check the emitted JSON).
const std::set<std::string> kDeadlockByConstruction = {
    "unit_tests__read_put_packet_test.json",          // rppkt of packets nobody writes
    "unit_tests__reduce_copy_packet_test.json",       // recpkt
    "unit_tests__reduce_copy_send_packet_test.json",  // recspkt
    "unit_tests__reduce_packet__reduce_packets_fuse_test.json",
    "unit_tests__reduce_packet__reduce_packets_test.json",
    "unit_tests__reduce_send_packet_test.json",       // respkt
    "unit_tests__signal_wait__relaxed_signal_wait_fuse_test.json", // signals 0,1 but waits 2,3
    "unit_tests__signal_wait__signal_wait_fuse_test.json",
};

std::vector<std::string> goldenPlans() {
  std::vector<std::string> out;
  std::string shared = msccl::test::sharedDir();
  if (shared.empty())
    return out;
  for (const char *sub : {"mscclpp-dsl", "mscclpp-executor-tests", "seed"})
    for (const std::string &f : msccl::test::jsonFiles(shared + "/golden/" + sub))
      out.push_back(f);
  return out;
}
} // namespace

TEST_CASE("every golden plan runs on the CPU executor", "[golden]") {
  std::vector<std::string> plans = goldenPlans();
  if (plans.empty()) {
    WARN("../shared/golden is absent; skipping the golden plans");
    return;
  }
  CHECK(plans.size() >= 50);
  std::set<std::string> ranPlans;
  auto ex = makeCpuExecutor();
  for (const std::string &file : plans) {
    const std::string base = std::filesystem::path(file).filename().string();
    Plan plan = readPlanFile(file);
    const bool real = collectiveKind(plan.collective) != CollectiveKind::Other;
    const bool packets = msccl::test::usesPackets(plan);
    std::vector<uint64_t> sizes = msccl::test::sizesFor(plan, {1, 3, 64});
    for (uint64_t size : sizes) {
      std::vector<std::pair<DataType, PacketType>> variants = {{DataType::Float32, PacketType::LL16}};
      if (size == sizes[1] && real)
        for (DataType dt : {DataType::Float16, DataType::BFloat16, DataType::Int32})
          variants.push_back({dt, PacketType::LL16});
      if (packets)
        variants.push_back({DataType::Float32, PacketType::LL8});
      for (auto [dt, pt] : variants) {
        INFO(base << " size " << size << " " << dataTypeName(dt) << " " << packetTypeName(pt));
        RunOptions ro;
        ro.size = size;
        ro.dataType = dt;
        ro.packetType = pt;
        ro.iterations = 2; // two launches first: stale packets/flags and counters must not confuse the checked one
        if (kDeadlockByConstruction.count(base)) {
          try {
            runCollective(*ex, plan, ro);
            FAIL("expected a deadlock");
          } catch (const ExecutionError &e) {
            CHECK(e.kind() == ErrorKind::Deadlock);
            size_t tbs = 0;
            for (const Gpu &g : plan.gpus)
              tbs += g.threadblocks.size();
            CHECK(e.diagnostics().size() == tbs);
            for (size_t r = 0; r < plan.gpus.size(); ++r)
              if (!plan.gpus[r].threadblocks.empty())
                CHECK_THAT(std::string(e.what()), Catch::Contains("rank " + std::to_string(r) + " tb 0 op "));
          }
          ranPlans.insert(file);
          continue;
        }
        RunReport rep;
        try {
          rep = runCollective(*ex, plan, ro);
        } catch (const ExecutionError &e) {
          // A size the plan cannot run at (a message-size rule or an executor limit such as the
          // pipeline iteration count) is skipped with its reason; anything else fails.
          REQUIRE(e.kind() == ErrorKind::InvalidSize);
          WARN("skipped " << base << " at size " << size << ": " << e.what());
          continue;
        }
        ranPlans.insert(file);
        CHECK(rep.verify.checked == real);
        if (real) {
          INFO(rep.verify.describe());
          CHECK(rep.verify.wrong == 0);
          CHECK(rep.verify.elements > 0);
        }
      }
    }
  }
  CHECK(ranPlans.size() == plans.size()); // every plan runs at one size at least
}

TEST_CASE("compiler-parity inputs run or are refused with a located reason", "[golden]") {
  // golden/quirks holds the Python DSL's plans for programs that exercise its quirks (the programs
  // are tests/compiler/unit/data/quirks/*.py). They are compiler-parity inputs, not algorithms: some
  // deadlock or break an executor limit as written. The executor must still give each one an outcome:
  // a clean run, or an error whose every diagnostic names the op or field by its JSON path.
  std::string shared = msccl::test::sharedDir();
  std::vector<std::string> plans = shared.empty() ? std::vector<std::string>{} : msccl::test::jsonFiles(shared + "/golden/quirks");
  if (plans.empty()) {
    WARN("../shared/golden/quirks is absent; skipping");
    return;
  }
  auto ex = makeCpuExecutor();
  for (const std::string &file : plans) {
    Plan plan = readPlanFile(file);
    RunOptions ro;
    ro.size = msccl::test::sizesFor(plan, {1})[0];
    ro.iterations = 1;
    INFO(file);
    try {
      RunReport rep = runCollective(*ex, plan, ro);
      CHECK(rep.verify.checked == (collectiveKind(plan.collective) != CollectiveKind::Other));
    } catch (const ExecutionError &e) {
      CHECK((e.kind() == ErrorKind::Deadlock || e.kind() == ErrorKind::InvalidPlan || e.kind() == ErrorKind::InvalidSize));
      REQUIRE(!e.diagnostics().empty());
      for (const std::string &d : e.diagnostics())
        CHECK_THAT(d, Catch::Contains("gpus["));
    }
  }
}

TEST_CASE("golden collectives also run out of place when they do not rely on aliasing", "[golden]") {
  std::string shared = msccl::test::sharedDir();
  if (shared.empty()) {
    WARN("../shared/golden is absent; skipping");
    return;
  }
  auto ex = makeCpuExecutor();
  // send_recv is an out-of-place plan; the in-place allreduce plans read and write only input,
  // so running them out of place must leave the output untouched and be reported wrong.
  Plan sr = readPlanFile(shared + "/golden/mscclpp-dsl/multi_node__send_recv.json");
  RunOptions ro;
  ro.size = msccl::test::sizesFor(sr, {4})[0];
  RunReport rep = runCollective(*ex, sr, ro);
  CHECK(rep.verify.checked);
  CHECK(rep.verify.wrong == 0);
  Plan ar = readPlanFile(shared + "/golden/mscclpp-executor-tests/reduce.json");
  ro.size = msccl::test::sizesFor(ar, {4})[0];
  ro.inPlace = false;
  rep = runCollective(*ex, ar, ro);
  CHECK(rep.verify.wrong == rep.verify.elements);
  CHECK(rep.verify.firstRank == 0);
  CHECK(rep.verify.firstIndex == 0);
}

TEST_CASE("repeated launches keep idempotent collectives right (flags, double scratch)", "[golden]") {
  std::string shared = msccl::test::sharedDir();
  if (shared.empty()) {
    WARN("../shared/golden is absent; skipping");
    return;
  }
  auto ex = makeCpuExecutor();
  for (const char *name : {"mscclpp-executor-tests/transfer_pack.json", "mscclpp-executor-tests/transfer_pack_tbg.json",
                           "mscclpp-dsl/single_node__allgather.json", "mscclpp-dsl/multi_node__send_recv.json"}) {
    Plan plan = readPlanFile(shared + "/golden/" + name);
    for (PacketType pt : {PacketType::LL16, PacketType::LL8}) {
      INFO(name << " " << packetTypeName(pt));
      RunOptions ro;
      ro.size = msccl::test::sizesFor(plan, {8})[0];
      ro.iterations = 0;
      ro.packetType = pt;
      ro.checkLaunches = 5;
      RunReport rep = runCollective(*ex, plan, ro);
      CHECK(rep.verify.checked);
      CHECK(rep.verify.wrong == 0);
    }
  }
}
