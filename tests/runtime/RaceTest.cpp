//===- RaceTest.cpp - The CPU executor's data-race checker on the golden plans -------------===//
//
// Every golden plan (../shared/golden) runs under CpuExecutorOptions::raceCheck (launch model:
// skewed launches, host accesses at each rank's kernel start/end) at two sizes, three launches
// (both halves of a double scratch buffer, and the first half again), LL16 and LL8 for packet
// plans. The dynamic checker must agree with the static verifier (msccl::verify::verifyPlan) on
// every plan: a race error from one iff a race error from the other. The racy ones are asserted
// by name and report:
//  * mscclpp-dsl unit_tests__put__put_fuse_test: both ranks put their input chunks into the
//    peer's input while the peer reads them as its own put's sources, ordered only by relaxed
//    signal/wait (a DSL unit test of the JSON shape; its data has no meaning);
//  * mscclpp-executor-tests reduce_tbg: thread-block groups split every op over tbs 0 and 1,
//    but each tb signals/waits only its own channel, so rank 0 tb 0 reads the half of rank 1's
//    scratch that rank 1 tb 1 wrote, with no synchronisation with rank 1 tb 1;
//  * mscclpp-dsl multi_node__send_recv and unit_tests__put__put_with_signal_test: the last port
//    `pws` is never flushed, so the next kernel start may rewrite its source while the proxy
//    still reads it;
//  * the switch and tbg unit tests: no handshake at all (a peer's buffers at its kernel start).
// The hand-written single-kernel plans (plans/race_*.json) are run by PlansTest.cpp.
//
//===------------------------------------------------------------------------------------===//
#include "TestSupport.h"

#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/CpuExecutor.h"
#include "msccl/runtime/Verify.h"
#include "msccl/verify/PlanVerify.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
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
    {"multi_node__send_recv.json",
     {"data race: the host (rank 0's kernel start: the caller may write its buffers until then) writes rank 0's "
      "input [",
      "while rank 0 tb 0 op 3 (pws, by the port proxy) at gpus[0].threadblocks[0].ops[3] read it with no flush",
      "(launches 1 and 2)"}},
    {"unit_tests__put__put_with_signal_test.json", {"(pws, by the port proxy)", "read it with no flush"}},
    {"unit_tests__switch_broadcast_test.json", {"(gstore)", "with no entry handshake"}},
    {"unit_tests__switch_reduce_test.json", {"(glre)", "with no entry handshake"}},
    {"unit_tests__tbg__tbg_reduce_send_test.json", {"(res)", "with no entry handshake"}},
};

bool verifierFindsRace(const Plan &plan) {
  for (const msccl::verify::Finding &f : msccl::verify::verifyPlan(plan).findings)
    if (f.kind == msccl::verify::FindingKind::Race && !f.warning)
      return true;
  return false;
}
} // namespace

TEST_CASE("the race checker agrees with the static verifier on every golden plan", "[races]") {
  std::string shared = msccl::test::sharedDir();
  if (shared.empty()) {
    WARN("../shared/golden is absent; skipping");
    return;
  }
  CpuExecutorOptions options;
  options.raceCheck = true;
  auto ex = makeCpuExecutor(options);
  size_t checked = 0, racy = 0, warned = 0;
  for (const char *sub : {"mscclpp-dsl", "mscclpp-executor-tests", "seed"})
    for (const std::string &file : msccl::test::jsonFiles(shared + "/golden/" + sub)) {
      const std::string base = std::filesystem::path(file).filename().string();
      if (kDeadlockByConstruction.count(base))
        continue;
      Plan plan = readPlanFile(file);
      const bool expectRace = kRacy.count(base) > 0;
      unsigned planRaces = 0;
      INFO(base);
      CHECK(verifierFindsRace(plan) == expectRace);
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
          ro.warmup = 1;
          if (!expectRace) {
            RunReport rep;
            try {
              rep = runCollective(*ex, plan, ro);
            } catch (const ExecutionError &e) {
              REQUIRE(e.kind() == ErrorKind::InvalidSize); // a size this plan cannot run at: skipped
              WARN("skipped " << base << " at size " << size << ": " << e.what());
              continue;
            }
            CHECK(rep.verify.wrong == 0);
            if (!rep.warnings.empty()) { // the seed's NVLS plans: a relaxed exit handshake
              CHECK_THAT(rep.warnings[1], Catch::StartsWith("relaxed handshake: the host (rank "));
              ++warned;
            }
            ++checked;
            continue;
          }
          try {
            runCollective(*ex, plan, ro); // a size may be too small to touch the racing bytes
          } catch (const ExecutionError &e) {
            CHECK(e.kind() == ErrorKind::Misuse);
            CHECK(!e.diagnostics().empty());
            CHECK(e.diagnostics().size() <= 8);
            for (const std::string &s : kRacy.at(base))
              CHECK_THAT(std::string(e.what()), Catch::Contains(s));
            ++planRaces;
          }
        }
      if (expectRace) {
        CHECK(planRaces > 0); // at one size at least
        racy += planRaces > 0;
      }
    }
  CHECK(checked >= 70);
  CHECK(racy >= kRacy.size());
  CHECK(warned >= 3);
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

// plans-launch/: 2-rank stdlib plans (mscclc) and one mutation each, one per class the launch
// model adds: no entry / exit handshake, scratch rewritten by the next launch while the peer still
// reads it, an unflushed last port put, LL scratch reused without the double buffer, a relaxed exit
// handshake (a warning). Each carries x_expect {kind: ok|race|warning, contains: [...]}. The
// checker must report exactly that, the verifier must agree, and the old lockstep model
// (raceCheckLaunches = false) must miss every one of them. launch_race_inplace_rank0_entry: an
// in-place AllGather whose rank 1 puts into rank 0's output before rank 0's kernel starts; rank
// 0's input is the first block of its output (same pointer), which the checker once took for the
// whole output, missing the race. The 4-rank in-place AllGathers (mscclc stdlib:allgather/allpairs
// -D ranks=4 -D inplace=true): the plan as written (ok) and three mutants whose victim's input is a
// block inside its output: no peer waits for rank 0's (first block) or rank 2's (a middle block:
// output bytes on both sides of the input) entry signal before putting into it, and rank 0's kernel
// ends without waiting for its peers' exit signals. The rank 0 mutants were missed while the host
// model compared pointers.
TEST_CASE("the launch model: entry/exit handshakes, reuse across launches, flush, LL scratch", "[races]") {
  const std::vector<std::string> files = msccl::test::jsonFiles(msccl::test::plansDir() + "-launch");
  REQUIRE(files.size() >= 12);
  CpuExecutorOptions launches, lockstep;
  launches.raceCheck = lockstep.raceCheck = true;
  lockstep.raceCheckLaunches = false;
  auto ex = makeCpuExecutor(launches), old = makeCpuExecutor(lockstep);
  std::set<std::string> kinds;
  for (const std::string &file : files) {
    INFO(file);
    std::ifstream in(file);
    nlohmann::json j = nlohmann::json::parse(in);
    const std::string kind = j["x_expect"]["kind"];
    const auto contains = j["x_expect"]["contains"].get<std::vector<std::string>>();
    kinds.insert(kind);
    Plan plan = parsePlan(j.dump());
    CHECK(verifierFindsRace(plan) == (kind == "race"));
    RunOptions ro;
    ro.size = 256;
    ro.iterations = 3; // launch 3 reuses the first half of a double scratch buffer
    RunReport lockstepRun = runCollective(*old, plan, ro);
    CHECK(lockstepRun.verify.wrong == 0);
    CHECK(lockstepRun.warnings.empty());
    if (kind == "race") {
      try {
        runCollective(*ex, plan, ro);
        FAIL("expected a data race report");
      } catch (const ExecutionError &e) {
        CHECK(e.kind() == ErrorKind::Misuse);
        CHECK_THAT(std::string(e.what()), Catch::Contains("data races in launch"));
        for (const std::string &s : contains)
          CHECK_THAT(std::string(e.what()), Catch::Contains(s));
      }
      continue;
    }
    RunReport rep = runCollective(*ex, plan, ro);
    CHECK(rep.verify.wrong == 0);
    CHECK(rep.warnings.empty() == (kind == "ok"));
    std::string warnings;
    for (const std::string &w : rep.warnings)
      warnings += w + "\n";
    for (const std::string &s : contains)
      CHECK_THAT(warnings, Catch::Contains(s));
  }
  CHECK(kinds == std::set<std::string>{"ok", "race", "warning"});
}
