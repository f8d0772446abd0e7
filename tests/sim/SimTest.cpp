//===- SimTest.cpp - Properties of the performance model (msccl_sim) ---------------------===//
//
// Hand-built plans (JSON made here) and the runtime tests' hand-written plans, simulated on the
// installed topologies and on tests/sim/alpha-beta.json (only link latency and bandwidth cost):
// no resource above its bandwidth, time monotone in size, contention slows, exact alpha-beta
// times, deadlocks and unsupported shapes reported, bad topology files rejected with the path.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/SimExecutor.h"
#include "msccl/runtime/Verify.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>

using namespace msccl;
using namespace msccl::runtime;
using nlohmann::json;

namespace {

const std::string kAlphaBeta = std::string(MSCCL_SIM_TEST_DIR) + "/alpha-beta.json";

/// Rank 0 runs `tbs` threadblocks; threadblock k puts input chunk k into rank 1's output chunk
/// k through memory channel k (one channel per threadblock, so the transfers are independent).
/// With `sameLink` false the puts go to ranks 1..tbs instead (disjoint links).
plan::Plan putPlan(unsigned tbs, bool sameLink) {
  unsigned nranks = sameLink ? 2 : tbs + 1;
  json gpus = json::array();
  for (unsigned r = 0; r < nranks; ++r) {
    json g = {{"id", r}, {"input_chunks", tbs}, {"output_chunks", tbs}, {"scratch_chunks", 0},
              {"semaphores", json::array()}};
    json channels = json::array(), remote = json::array(), tbl = json::array();
    if (r == 0) {
      json conn = json::array();
      for (unsigned k = 0; k < tbs; ++k)
        conn.push_back(sameLink ? 1 : k + 1);
      channels.push_back({{"channel_type", "memory"}, {"connected_to", conn}});
      for (unsigned k = 0; k < tbs; ++k) {
        remote.push_back({{"rank", sameLink ? 1 : k + 1}, {"type", "o"}, {"access_channel_types", {"memory"}}});
        json put = {{"name", "put"},
                    {"src_buff", {{{"type", "i"}, {"index", k}, {"size", 1}}}},
                    {"dst_buff", {{{"buffer_id", 0}, {"index", k}, {"size", 1}}}},
                    {"channel_ids", {0}},
                    {"channel_type", "memory"}};
        tbl.push_back({{"id", k},
                       {"ops", {put}},
                       {"channels", {{{"channel_type", "memory"}, {"channel_ids", {k}}}}},
                       {"remote_buffer_refs", {{{"access_channel_type", "memory"}, {"remote_buffer_ids", {k}}}}}});
      }
    } else {
      json conn = json::array();
      unsigned count = sameLink ? tbs : 1;
      for (unsigned k = 0; k < count; ++k)
        conn.push_back(0);
      channels.push_back({{"channel_type", "memory"}, {"connected_to", conn}});
    }
    g["channels"] = channels;
    g["remote_buffers"] = remote;
    g["threadblocks"] = tbl;
    gpus.push_back(g);
  }
  json p = {{"name", "puts"}, {"collective", "test"}, {"protocol", "Simple"}, {"inplace", false},
            {"reuse_resources", false}, {"num_threads_per_block", 1024}, {"use_double_scratch_buffer", false},
            {"buffer_alignment", 16}, {"min_message_size", 0}, {"gpus", gpus}};
  return plan::parsePlan(p.dump());
}

/// simulate() for nccl-tests size S (Collective.h's S_in/S_out).
sim::SimReport simSize(const plan::Plan &p, const sim::Topology &t, uint64_t S) {
  auto ms = messageSizesFor(p, S, nullptr);
  REQUIRE(ms);
  return sim::simulate(p, t, ms->inputBytes, ms->outputBytes);
}

double simTime(const plan::Plan &p, const sim::Topology &t, uint64_t bytesPerRank) {
  return sim::simulate(p, t, bytesPerRank, bytesPerRank).seconds;
}

void checkCapacities(const sim::SimReport &r) {
  for (const sim::ResourceUse &u : r.resources) {
    INFO(u.name << " carried " << u.bytes << " B at " << u.utilisation * 100 << "% of " << u.capacityGBps << " GB/s");
    CHECK(u.utilisation <= 1 + 1e-9);
  }
}

} // namespace

TEST_CASE("one put costs its bytes over the link plus nothing else on the alpha-beta machine", "[sim]") {
  sim::Topology t = sim::loadTopology(kAlphaBeta);
  plan::Plan p = putPlan(1, true);
  const uint64_t S = 1 << 20; // one chunk of 1 MiB
  sim::SimReport r = sim::simulate(p, t, S, S);
  CHECK(r.seconds == Approx(double(S) / 100e9).epsilon(1e-9));
  REQUIRE(!r.resources.empty());
  CHECK(r.resources[0].utilisation == Approx(1.0).epsilon(1e-9));
  checkCapacities(r);
}

TEST_CASE("transfers sharing a link slow each other; disjoint links do not", "[sim]") {
  sim::Topology t = sim::loadTopology(kAlphaBeta);
  const uint64_t chunk = 1 << 20;
  double one = simTime(putPlan(1, true), t, chunk);
  double shared = simTime(putPlan(4, true), t, 4 * chunk);    // 4 puts of one chunk into rank 1
  double disjoint = simTime(putPlan(4, false), t, 4 * chunk); // 4 puts into ranks 1..4
  CHECK(shared == Approx(4 * one).epsilon(1e-9));  // rank 0's link out (and rank 1's in) shared fairly
  CHECK(disjoint == Approx(4 * one).epsilon(1e-9)); // rank 0's link out is still shared
  // On the H100 machine one threadblock (36.7 GB/s) cannot fill the link (370.8 GB/s): four
  // threadblocks each move their chunk as fast as one alone; sixteen (587 GB/s) contend.
  sim::Topology h = sim::loadTopology("hgx-h100");
  double hOne = simTime(putPlan(1, true), h, chunk);
  double hFour = simTime(putPlan(4, true), h, 4 * chunk);
  double hSixteen = simTime(putPlan(16, true), h, 16 * chunk);
  CHECK(hFour == Approx(hOne).epsilon(1e-9));
  CHECK(hSixteen > hOne * 1.5);
  sim::SimReport r8 = sim::simulate(putPlan(8, true), h, 64 * chunk, 64 * chunk);
  REQUIRE(!r8.resources.empty());
  CHECK(r8.resources[0].isThreadblock); // 8 x 36.7 GB/s < 370.8 GB/s: the threadblocks bound
  sim::SimReport r = sim::simulate(putPlan(12, true), h, 96 * chunk, 96 * chunk);
  checkCapacities(r);
  REQUIRE(!r.resources.empty());
  CHECK(r.resources[0].name.find("nvlink") != std::string::npos); // 12 threadblocks: the link bounds
  CHECK(r.boundBy().find("nvlink") != std::string::npos);
}

TEST_CASE("time grows with the message size and no resource exceeds its bandwidth", "[sim]") {
  for (const char *name : {"hgx-h100", "pcie-l40s"}) {
    sim::Topology t = sim::loadTopology(name);
    for (unsigned tbs : {1u, 3u, 8u}) {
      plan::Plan p = putPlan(tbs, true);
      double prev = 0;
      for (uint64_t chunk = 16; chunk <= (64u << 20); chunk *= 4) {
        sim::SimReport r = sim::simulate(p, t, chunk * tbs, chunk * tbs);
        INFO(name << " tbs " << tbs << " chunk " << chunk);
        CHECK(r.seconds > prev);
        prev = r.seconds;
        checkCapacities(r);
      }
    }
  }
}

TEST_CASE("signal and wait cost one link hop; the critical path follows it", "[sim]") {
  sim::Topology t = sim::loadTopology(kAlphaBeta);
  plan::Plan p = plan::readPlanFile(std::string(MSCCL_RUNTIME_PLANS_DIR) + "/ok_put_signal_wait_read.json");
  sim::SimReport small = simSize(p, t, 1024);
  sim::SimReport big = simSize(p, t, 1 << 24);
  CHECK(small.seconds >= 1e-6); // at least the one hop of the signal
  CHECK(big.seconds > small.seconds);
  REQUIRE(!big.criticalPath.empty());
  bool hasWait = false;
  for (const sim::CriticalStep &s : big.criticalPath)
    hasWait |= s.name == "wait";
  CHECK(hasWait);
  CHECK(big.criticalTransferUs + big.criticalLatencyUs == Approx(big.seconds * 1e6).epsilon(1e-6));
}

TEST_CASE("deadlocked plans are reported with the blocked threadblocks", "[sim]") {
  sim::Topology t = sim::loadTopology("hgx-h100");
  for (const char *f : {"deadlock_wait_before_signal.json", "deadlock_semaphores.json",
                        "deadlock_packets_never_arrive.json"}) {
    INFO(f);
    plan::Plan p = plan::readPlanFile(std::string(MSCCL_RUNTIME_PLANS_DIR) + "/" + f);
    try {
      sim::simulate(p, t, 4096, 4096);
      FAIL("no deadlock reported");
    } catch (const ExecutionError &e) {
      CHECK(e.kind() == ErrorKind::Deadlock);
      REQUIRE(!e.diagnostics().empty());
      CHECK(e.diagnostics()[0].find("rank ") == 0);
      CHECK(e.diagnostics()[0].find(" waits") != std::string::npos);
    }
  }
}

TEST_CASE("plans a topology cannot run are refused", "[sim]") {
  plan::Plan p = putPlan(4, false); // 5 ranks
  sim::Topology small = sim::loadTopology(kAlphaBeta);
  small.gpusPerNode = 4;
  try {
    sim::simulate(p, small, 4096, 4096);
    FAIL("more ranks than GPUs accepted");
  } catch (const ExecutionError &e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK(std::string(e.what()).find("5 ranks") != std::string::npos);
  }
  plan::Plan glre = plan::readPlanFile(std::string(MSCCL_RUNTIME_PLANS_DIR) + "/ok_allreduce_glre_2.json");
  CHECK_NOTHROW(sim::simulate(glre, sim::loadTopology("hgx-h100"), 4096, 4096));
  try {
    sim::simulate(glre, sim::loadTopology("pcie-l40s"), 4096, 4096);
    FAIL("switch channel accepted without NVLS");
  } catch (const ExecutionError &e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK(std::string(e.what()).find("NVLS") != std::string::npos);
  }
  // Memory channels between nodes: ranks 0 and 8 of 2x-hgx-h100.
  plan::Plan nine = putPlan(8, false); // rank 0 puts to ranks 1..8
  try {
    sim::simulate(nine, sim::loadTopology("2x-hgx-h100"), 8 * 4096, 8 * 4096);
    FAIL("memory channel between nodes accepted");
  } catch (const ExecutionError &e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK(std::string(e.what()).find("crosses nodes") != std::string::npos);
  }
}

TEST_CASE("port channels between nodes go through the NICs", "[sim]") {
  plan::Plan p = plan::readPlanFile(std::string(MSCCL_RUNTIME_PLANS_DIR) + "/ok_port_put_flush_signal.json");
  sim::Topology one = sim::loadTopology("hgx-h100");
  sim::Topology two = sim::loadTopology("2x-hgx-h100");
  two.gpusPerNode = 1; // ranks 0 and 1 on different nodes
  two.nodes = 16;
  const uint64_t S = 64 << 20;
  sim::SimReport intra = simSize(p, one, S), inter = simSize(p, two, S);
  CHECK(inter.seconds > intra.seconds);
  bool nic = false;
  for (const sim::ResourceUse &u : inter.resources)
    nic |= u.name.find("nic") != std::string::npos;
  CHECK(nic);
  checkCapacities(inter);
}

TEST_CASE("the sim backend runs through runCollective without data", "[sim]") {
  auto ex = sim::makeSimExecutor("hgx-h100");
  CHECK_FALSE(ex->movesData());
  plan::Plan p = plan::readPlanFile(std::string(MSCCL_RUNTIME_PLANS_DIR) + "/ok_allgather_put_2.json");
  RunOptions o;
  o.size = 1 << 30; // 1 GiB per rank: nothing may be allocated for real
  o.iterations = 3;
  RunReport r = runCollective(*ex, p, o);
  CHECK_FALSE(r.verify.checked);
  CHECK(r.secondsPerLaunch == Approx(ex->lastReport().seconds).epsilon(1e-12));
  CHECK(r.busbw > 0);
}

TEST_CASE("topology files: every built-in one loads; bad ones name the problem", "[sim]") {
  std::vector<std::string> names = sim::builtinTopologies();
  for (const char *want :
       {"hgx-h100", "hgx-h200", "gb200-nvl72", "2x-hgx-h100", "4x-hgx-h100", "8x-hgx-h100", "pcie-l40s"})
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
  for (const std::string &n : names) {
    sim::Topology t = sim::loadTopology(n);
    CHECK(t.name == n);
    CHECK(t.intraGBps > 0);
  }
  CHECK(sim::loadTopology("4x-hgx-h100").gpus() == 32);
  CHECK(sim::loadTopology("8x-hgx-h100").gpus() == 64);
  CHECK(sim::loadTopology("gb200-nvl72").gpus() == 72);
  CHECK_FALSE(sim::loadTopology("pcie-l40s").nvls);
  CHECK_THROWS_WITH(sim::loadTopology("dgx-nope"), Catch::Contains("unknown topology 'dgx-nope'") &&
                                                         Catch::Contains("hgx-h100"));
  json j = json::parse(std::ifstream(kAlphaBeta));
  j["intra_node"]["bandwidth_GBps"].erase("source");
  std::string bad = std::string(MSCCL_SIM_BINARY_DIR) + "/bad-topology.json";
  std::ofstream(bad) << j.dump();
  CHECK_THROWS_WITH(sim::loadTopology(bad), Catch::Contains("$.intra_node.bandwidth_GBps") &&
                                                Catch::Contains("source"));
  j = json::parse(std::ifstream(kAlphaBeta));
  j["gpu"]["hbm_GBps"]["value"] = -1;
  std::ofstream(bad) << j.dump();
  CHECK_THROWS_WITH(sim::loadTopology(bad), Catch::Contains("$.gpu.hbm_GBps.value"));
  std::ofstream(bad) << "{ not json";
  CHECK_THROWS_WITH(sim::loadTopology(bad), Catch::Contains("not valid JSON"));
}

namespace {

/// Two ranks on two nodes, port channels both ways (channel 0: rank 0 -> rank 1, channel 1:
/// back). Rank 0 puts its 4 input chunks into rank 1's output with one put-with-signal of 4
/// entries; rank 1 waits for the first signal only, then sends its own 4 chunks back the same
/// way (and consumes the other 3 signals); rank 0 waits for those 4.
plan::Plan pingPongPlan() {
  json gpus = json::array();
  for (unsigned r = 0; r < 2; ++r) {
    json entriesSrc = json::array(), entriesDst = json::array();
    for (unsigned k = 0; k < 4; ++k) {
      entriesSrc.push_back({{"type", "i"}, {"index", k}, {"size", 1}});
      entriesDst.push_back({{"buffer_id", 0}, {"index", k}, {"size", 1}});
    }
    json pws = {{"name", "pws"}, {"src_buff", entriesSrc}, {"dst_buff", entriesDst},
                {"channel_ids", json::array({0, 0, 0, 0})}, {"channel_type", "port"}};
    json wait = {{"name", "wait"}, {"channel_ids", {0}}, {"channel_type", "port"}};
    json refs = {{{"access_channel_type", "port"}, {"remote_buffer_ids", {0}}}};
    json send = {{"id", 0}, {"channels", {{{"channel_type", "port"}, {"channel_ids", {r}}}}},
                 {"remote_buffer_refs", refs}};
    json recv = {{"id", 1}, {"channels", {{{"channel_type", "port"}, {"channel_ids", {1 - r}}}}},
                 {"ops", json::array({wait, wait, wait, wait})}};
    if (r == 0) {
      send["ops"] = json::array({pws});
    } else {
      // Rank 1 sends on its channel 1 (tb 0) after the first signal on channel 0 (tb 1's).
      send = {{"id", 0},
              {"channels", {{{"channel_type", "port"}, {"channel_ids", {0, 1}}}}},
              {"remote_buffer_refs", refs}};
      json back = pws;
      back["channel_ids"] = json::array({1, 1, 1, 1});
      send["ops"] = json::array({wait, back, wait, wait, wait});
      recv = nullptr;
    }
    json tbs = json::array({send});
    if (!recv.is_null())
      tbs.push_back(recv);
    gpus.push_back({{"id", r}, {"input_chunks", 4}, {"output_chunks", 4}, {"scratch_chunks", 0},
                    {"semaphores", json::array()},
                    {"channels", {{{"channel_type", "port"}, {"connected_to", {1 - r, 1 - r}}}}},
                    {"remote_buffers", {{{"rank", 1 - r}, {"type", "o"}, {"access_channel_types", {"port"}}}}},
                    {"threadblocks", tbs}});
  }
  json p = {{"name", "ping_pong"}, {"collective", "test"}, {"protocol", "Simple"}, {"inplace", false},
            {"reuse_resources", false}, {"num_threads_per_block", 1024}, {"use_double_scratch_buffer", false},
            {"buffer_alignment", 16}, {"min_message_size", 0}, {"gpus", gpus}};
  return plan::parsePlan(p.dump());
}

} // namespace

TEST_CASE("a port put with signal of several entries signals each entry as its bytes land", "[sim]") {
  // MSCCL++'s executor pushes one proxy trigger per entry, served in order: the first entry's
  // signal lands after a quarter of the op's bytes, so rank 1's reply overlaps the rest of the
  // transfer: about 5 entry times in all, where signals at the op's end would make it 8.
  sim::Topology two = sim::loadTopology("2x-hgx-h100");
  two.gpusPerNode = 1; // ranks 0 and 1 on different nodes
  two.nodes = 16;
  const uint64_t chunk = 16 << 20;
  const double entry = double(chunk) / (two.nicGBps * 1e9); // one entry through a NIC
  sim::SimReport r = sim::simulate(pingPongPlan(), two, 4 * chunk, 4 * chunk);
  CHECK(r.seconds > 5 * entry);
  CHECK(r.seconds < 5.2 * entry);
  checkCapacities(r);
}
