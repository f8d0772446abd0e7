//===- SimExecutor.cpp - The "sim" executor backend and suggested size ranges -------------===//
//
// Wraps simulate() (Simulate.cpp) in the Executor interface (placeholder buffers, no data
// moved) and, for a set of plans of one collective, predicts per message size which plan is
// fastest (suggestRanges) and prints the ranges (printRanges). See SimExecutor.h.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/SimExecutor.h"

#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/PlanValidate.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <ostream>

namespace msccl::runtime::sim {

SimExecutor::SimExecutor(Topology topo) : topo_(std::move(topo)) {}

std::string SimExecutor::description() const {
  return "performance model on topology " + topo_.name + ": " + topo_.description + "; times are model output";
}

DeviceBuffer SimExecutor::allocate(size_t bytes) {
  // Placeholder addresses: distinct, aligned, never dereferenced (upload/download do nothing).
  DeviceBuffer b;
  b.ptr = reinterpret_cast<void *>(next_);
  b.bytes = bytes;
  next_ += (bytes + 4095) / 4096 * 4096 + 4096;
  return b;
}

void SimExecutor::release(DeviceBuffer &buffer) { buffer = DeviceBuffer{}; }

ExecuteResult SimExecutor::execute(const ExecuteRequest &request) {
  if (!request.plan)
    throw ExecutionError(ErrorKind::InvalidPlan, "no plan");
  // Validation costs more than the simulation on large plans: once per plan (by address and
  // shape; msccl-run sweeps sizes over one unchanged plan).
  const plan::Plan *p = request.plan;
  bool fresh = p != validated_ || p->gpus.size() != validatedRanks_;
  if (fresh) {
    ValidateOptions vo;
    vo.allowGlre = true;
    vo.deviceLimits = false; // the model has no MSCCL++ per-threadblock table (mscclc --target)
    validatePlan(*p, vo);
    validated_ = p;
    validatedRanks_ = p->gpus.size();
  }
  last_ = simulate(*p, topo_, request.inputBytes, request.outputBytes, request.packetType, /*validate=*/false);
  ExecuteResult r;
  r.seconds = last_.seconds * request.iterations;
  r.launches = request.iterations + request.warmupIterations;
  r.opsExecuted = last_.ops * r.launches;
  return r;
}

std::unique_ptr<SimExecutor> makeSimExecutor(const std::string &nameOrFile) {
  return std::make_unique<SimExecutor>(loadTopology(nameOrFile));
}

std::vector<RangeGroup> suggestRanges(const std::vector<std::string> &labels, const std::vector<const plan::Plan *> &plans,
                                      const Topology &topo, const std::vector<uint64_t> &sizes, PacketType packet) {
  std::vector<RangeGroup> groups;
  std::map<std::pair<std::string, uint32_t>, size_t> index;
  std::vector<std::vector<size_t>> members;
  for (size_t i = 0; i < plans.size(); ++i) {
    auto key = std::make_pair(plans[i]->collective, uint32_t(plans[i]->gpus.size()));
    auto [it, fresh] = index.emplace(key, groups.size());
    if (fresh) {
      RangeGroup g;
      g.collective = key.first;
      g.nranks = key.second;
      groups.push_back(g);
      members.emplace_back();
    }
    PlanRange pr;
    pr.label = labels[i];
    groups[it->second].plans.push_back(pr);
    members[it->second].push_back(i);
  }
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    RangeGroup &g = groups[gi];
    // The plans without their own size range: the point is to suggest one.
    std::vector<plan::Plan> open;
    for (size_t i : members[gi]) {
      ValidateOptions vo;
      vo.allowGlre = true;
      vo.deviceLimits = false; // the model has no MSCCL++ per-threadblock table (mscclc --target)
      validatePlan(*plans[i], vo); // once per plan, not per size
      open.push_back(*plans[i]);
      open.back().minMessageSize = 0;
      open.back().maxMessageSize = std::numeric_limits<uint64_t>::max();
    }
    constexpr double kTie = 0.01;
    for (uint64_t s : sizes) {
      int best = -1;
      double bestT = 0;
      for (size_t k = 0; k < open.size(); ++k) {
        auto ms = messageSizesFor(open[k], s, nullptr);
        if (!ms)
          continue;
        double t;
        try {
          t = simulate(open[k], topo, ms->inputBytes, ms->outputBytes, packet, /*validate=*/false).seconds;
        } catch (const ExecutionError &e) {
          if (e.kind() == ErrorKind::InvalidSize || e.kind() == ErrorKind::Unsupported)
            continue; // offsets past 4 GiB; a switch channel without NVLS: this plan cannot run here
          throw;
        }
        // Within kTie of the best so far, the plan given first keeps the size: list simpler plans
        // (fewer threadblocks) first and a plan has to be clearly faster to be suggested.
        if (best < 0 || t < bestT * (1 - kTie)) {
          best = int(k);
          bestT = t;
        }
      }
      g.sizes.push_back(s);
      g.winner.push_back(best);
      g.winnerSeconds.push_back(bestT);
    }
    // Contiguous ranges: from a winner's first size to just below the next winner's first size.
    for (size_t i = 0; i < g.sizes.size(); ++i) {
      int w = g.winner[i];
      if (w < 0)
        continue;
      PlanRange &p = g.plans[size_t(w)];
      if (!p.fastest) {
        p.fastest = true;
        p.minBytes = g.sizes[i];
      }
      size_t j = i + 1;
      while (j < g.sizes.size() && (g.winner[j] < 0 || g.winner[j] == w))
        ++j;
      p.maxBytes = j < g.sizes.size() ? g.sizes[j] - 1 : g.sizes.back();
      // A plan winning two separate ranges keeps the hull (printRanges lists every size).
    }
  }
  return groups;
}

void printRanges(std::ostream &out, const std::vector<RangeGroup> &groups, const Topology &topo) {
  char buf[512];
  for (const RangeGroup &g : groups) {
    out << "# suggested size ranges (model output) on " << topo.name << ": " << g.collective << ", " << g.nranks
        << " ranks\n";
    out << "#  plan                                   min_message_size      max_message_size\n";
    for (const PlanRange &p : g.plans) {
      if (p.fastest)
        std::snprintf(buf, sizeof buf, "   %-38s %20llu  %20llu\n", p.label.c_str(), (unsigned long long)p.minBytes,
                      (unsigned long long)p.maxBytes);
      else
        std::snprintf(buf, sizeof buf, "   %-38s %s\n", p.label.c_str(), "never fastest");
      out << buf;
    }
    out << "#  fastest per size:\n";
    for (size_t i = 0; i < g.sizes.size(); ++i) {
      if (g.winner[i] < 0)
        std::snprintf(buf, sizeof buf, "#  %12s  none of the plans can run this size\n", messageSizeText(g.sizes[i]).c_str());
      else
        std::snprintf(buf, sizeof buf, "#  %12s  %10.2f us  %s\n", messageSizeText(g.sizes[i]).c_str(), g.winnerSeconds[i] * 1e6,
                      g.plans[size_t(g.winner[i])].label.c_str());
      out << buf;
    }
  }
}

int suggestRangesMain(const std::vector<std::string> &files, const std::string &topology,
                      const std::vector<uint64_t> &sizes, PacketType packet, std::ostream &out, std::ostream &err) {
  try {
    Topology topo = loadTopology(topology);
    std::vector<plan::Plan> loaded;
    std::vector<std::string> labels;
    unsigned unreadable = 0;
    for (const std::string &f : files) { // every file is read; each one that cannot be is named
      try {
        loaded.push_back(plan::readPlanFile(f));
        labels.push_back(std::filesystem::path(f).filename().string());
      } catch (const plan::PlanError &e) {
        err << "msccl-run: error: " << f << ": " << e.what() << "\n"; // a parse error does not name it
        ++unreadable;
      }
    }
    if (unreadable)
      err << "msccl-run: " << unreadable << " of " << files.size() << " plan file(s) could not be read"
          << (loaded.empty() ? "\n" : "; the ranges below are for the others\n");
    if (loaded.empty())
      return 1;
    std::vector<const plan::Plan *> ptrs;
    for (const plan::Plan &p : loaded)
      ptrs.push_back(&p);
    printRanges(out, suggestRanges(labels, ptrs, topo, sizes, packet), topo);
    return unreadable ? 1 : 0;
  } catch (const std::exception &e) { // PlanError, TopologyError, ExecutionError
    err << "msccl-run: error: " << e.what() << "\n";
    return 1;
  }
}

} // namespace msccl::runtime::sim

namespace msccl::runtime {
void registerSimExecutor() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerExecutor("sim", "performance model (no GPU; topology hgx-h100 unless --topology)",
                     [](const BackendOptions &o) {
                       return std::unique_ptr<Executor>(
                           sim::makeSimExecutor(o.topology.empty() ? "hgx-h100" : o.topology));
                     });
  });
}
} // namespace msccl::runtime
