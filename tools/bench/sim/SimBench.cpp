//===- SimBench.cpp - Simulation time of the largest stdlib plans -------------------------===//
//
// Compiles stdlib algorithms at 64 ranks in-process (mscclc's driver), then times simulate()
// (SimExecutor.h, resolution + lowering + replay, the plan validated once beforehand and timed
// apart) per message size and prints: algorithm, threadblocks, op instances simulated,
// wall time of the simulation and the predicted time. Single-domain algorithms run on
// gb200-nvl72 (72 GPUs in one NVLink domain), multi-node ones on 8 nodes of hgx-h100.
// Usage: msccl-bench-sim [RANKS]   (default 64)
//
//===------------------------------------------------------------------------------------===//
#include "msccl/driver/Driver.h"
#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/PlanValidate.h"
#include "msccl/runtime/SimExecutor.h"

#include <llvm/Support/raw_ostream.h>

#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

using namespace msccl;
using namespace msccl::runtime;

/// CPU time of this process in ms: steadier than wall time on a shared machine.
static double cpuMs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static bool compile(const std::string &algo, const std::vector<std::string> &defines, plan::Plan &out) {
  std::vector<std::string> args{"mscclc", "stdlib:" + algo};
  for (const std::string &d : defines) {
    args.push_back("-D");
    args.push_back(d);
  }
  std::vector<const char *> argv;
  for (const std::string &a : args)
    argv.push_back(a.c_str());
  std::string json, diags;
  llvm::raw_string_ostream os(json), es(diags);
  std::istringstream in;
  if (driver::runMscclc(int(argv.size()), argv.data(), in, os, es) != 0) {
    std::fprintf(stderr, "msccl-bench-sim: %s failed:\n%s\n", algo.c_str(), es.str().c_str());
    return false;
  }
  out = plan::parsePlan(os.str());
  return true;
}

int main(int argc, char **argv) {
  unsigned ranks = argc > 1 ? unsigned(std::atoi(argv[1])) : 64;
  if (ranks < 2 || ranks > 72) {
    std::fprintf(stderr, "usage: msccl-bench-sim [RANKS 2..72]\n");
    return 2;
  }
  sim::Topology domain = sim::loadTopology("gb200-nvl72");
  sim::Topology nodes = sim::loadTopology("hgx-h100");
  nodes.nodes = (ranks + 7) / 8;
  nodes.nicGBps = 47;
  nodes.netLatencyUs = 2.7;
  nodes.name = std::to_string(nodes.nodes) + "x-hgx-h100";
  std::string r = "ranks=" + std::to_string(ranks);
  struct Case {
    std::string algo;
    std::vector<std::string> defines;
    bool multiNode;
  };
  std::vector<Case> cases = {
      {"allreduce/ring", {r}, false},
      {"allreduce/pipelined", {r}, false},
      {"allreduce/allpairs", {r}, false},
      {"allreduce/allpairs_packet", {r}, false},
      {"allreduce/nvls", {r}, false},
      {"allgather/ring", {r}, false},
      {"alltoall/allpairs", {r}, false},
      {"allreduce/hierarchical", {r, "ranks_per_node=8"}, true},
      {"alltoall/multinode", {r, "ranks_per_node=8"}, true},
  };
  std::printf("# msccl-bench-sim: simulation time per message size, %u ranks (goal: well under 1 s per size)\n",
              ranks);
  std::printf("# %-44s %-12s %6s %10s %10s %12s %14s\n", "algorithm", "topology", "tbs", "size", "op inst.",
              "sim cpu (ms)", "predicted (us)");
  double worst = 0;
  for (const Case &c : cases) {
    plan::Plan p;
    if (!compile(c.algo, c.defines, p))
      return 1;
    const sim::Topology &t = c.multiNode ? nodes : domain;
    double v0 = cpuMs();
    validatePlan(p, ValidateOptions{true});
    double validateMs = cpuMs() - v0;
    size_t tbs = 0;
    for (const auto &g : p.gpus)
      tbs += g.threadblocks.size();
    std::string label = c.algo;
    for (size_t i = 1; i < c.defines.size(); ++i)
      label += " " + c.defines[i];
    std::printf("  %-44s %-12s %6zu  validatePlan once per plan: %.1f ms\n", label.c_str(), t.name.c_str(), tbs,
                validateMs);
    for (uint64_t size : {uint64_t(1) << 20, uint64_t(64) << 20, uint64_t(1) << 30}) {
      uint64_t s = size;
      auto ms = messageSizesFor(p, s, nullptr);
      for (uint64_t step = 16; !ms && s < 2 * size; s += step)
        ms = messageSizesFor(p, s + step, nullptr), s = ms ? s + step : s;
      if (!ms) {
        std::printf("  %-44s %-12s %6zu %10llu  (size not runnable)\n", label.c_str(), t.name.c_str(), tbs,
                    (unsigned long long)size);
        continue;
      }
      double t0 = cpuMs();
      sim::SimReport rep;
      try {
        rep = sim::simulate(p, t, ms->inputBytes, ms->outputBytes, PacketType::LL16, /*validate=*/false);
      } catch (const std::exception &e) {
        std::string what = e.what();
        std::printf("  %-44s %-12s %6zu %10llu  error: %s\n", label.c_str(), t.name.c_str(), tbs,
                    (unsigned long long)s, what.substr(0, what.find('\n')).c_str());
        continue;
      }
      double ms_ = cpuMs() - t0;
      worst = std::max(worst, ms_);
      std::printf("  %-44s %-12s %6zu %10llu %10llu %12.1f %14.1f\n", label.c_str(), t.name.c_str(), tbs,
                  (unsigned long long)s, (unsigned long long)rep.ops, ms_, rep.seconds * 1e6);
    }
  }
  std::printf("# slowest simulation: %.1f ms per size\n", worst);
  return 0;
}
