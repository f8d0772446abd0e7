//===- Bound.cpp - The time no schedule can beat on a topology (model output) -------------===//
//
// Consumes a collective, a rank count, a topology and a message size; produces the model's lower
// bound (SimExecutor.h lowerBound): the launch, then the longer of one hop and the traffic every
// schedule must move (collectiveTraffic) over the links it must cross. On a graph-shaped node
// (a fabric) the bandwidth term is the min-cut bound (ForestColl's and Blink's argument): for
// every set of vertices with ranks on both sides, the share of S that must leave it
// (cutTraffic) over the capacity of the links leaving it; the latency term is the longest route
// a rank's data must take. Independent of any plan, so the tuner and msccl-run print it beside
// each prediction.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/SimExecutor.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

namespace msccl::runtime::sim {

namespace {

/// The bandwidth term of a fabric per byte of S (seconds), and the cut that gives it.
struct CutBound {
  double secondsPerByte = 0;
  std::string cut; // "cpu0->cpu1" (the links leaving the tightest set)
};

// Every vertex set up to this many vertices is tried (Gray code, one vertex moved per step);
// larger fabrics try the single vertices and their complements only.
constexpr uint32_t kExhaustiveVertices = 24;

CutBound fabricCutBound(CollectiveKind kind, uint32_t nranks, const Topology &topo) {
  const Fabric &f = topo.fabric;
  const uint32_t nv = uint32_t(f.vertices.size());
  // Links are full duplex at one bandwidth each way: a vertex's neighbours and that bandwidth
  // serve both directions.
  std::vector<std::vector<std::pair<uint32_t, double>>> adj(nv);
  for (const FabricLink &l : f.links) {
    adj[l.a].push_back({l.b, l.GBps * 1e9});
    adj[l.b].push_back({l.a, l.GBps * 1e9});
  }
  const size_t phases = cutTraffic(kind, nranks, 1, true).size();
  std::vector<double> best(phases, 0);
  std::vector<uint64_t> bestSet(phases, 0);
  auto consider = [&](uint64_t set, double capOut) {
    uint32_t inside = 0;
    for (uint32_t r = 0; r < nranks; ++r)
      inside += (set >> r) & 1;
    std::vector<double> share = cutTraffic(kind, nranks, inside, set & 1);
    if (share.empty() || capOut <= 0)
      return;
    for (size_t p = 0; p < phases; ++p)
      if (share[p] / capOut > best[p])
        best[p] = share[p] / capOut, bestSet[p] = set;
  };
  auto capOf = [&](uint64_t set) {
    double c = 0;
    for (uint32_t v = 0; v < nv; ++v)
      if ((set >> v) & 1)
        for (auto [w, cap] : adj[v])
          if (!((set >> w) & 1))
            c += cap;
    return c;
  };
  if (nv <= kExhaustiveVertices) {
    uint64_t set = 0;
    double cap = 0;
    for (uint64_t i = 1; i < (uint64_t(1) << nv); ++i) {
      uint32_t v = uint32_t(__builtin_ctzll(i)); // Gray code: vertex v changes side
      const bool joins = !((set >> v) & 1);
      // Joining, v adds its links to outside vertices and makes those from inside ones internal;
      // leaving, the reverse.
      for (auto [w, c] : adj[v])
        cap += joins != bool((set >> w) & 1) ? c : -c;
      set ^= uint64_t(1) << v;
      consider(set, cap);
    }
  } else {
    const uint64_t all = nv >= 64 ? ~uint64_t(0) : (uint64_t(1) << nv) - 1;
    for (uint32_t v = 0; v < nv && v < 64; ++v) {
      consider(uint64_t(1) << v, capOf(uint64_t(1) << v));
      consider(all & ~(uint64_t(1) << v), capOf(all & ~(uint64_t(1) << v)));
    }
  }
  CutBound b;
  size_t tight = 0;
  for (size_t p = 0; p < phases; ++p) {
    b.secondsPerByte += best[p];
    if (best[p] > best[tight])
      tight = p;
  }
  if (phases > 0) {
    const uint64_t set = bestSet[tight];
    for (uint32_t d = 0; d < 2 * f.links.size(); ++d) {
      if (((set >> f.linkFrom(d)) & 1) && !((set >> f.linkTo(d)) & 1))
        b.cut += (b.cut.empty() ? "" : ", ") + f.linkName(d);
    }
  }
  return b;
}

const CutBound &cachedCutBound(CollectiveKind kind, uint32_t nranks, const Topology &topo) {
  static std::mutex mu;
  static std::map<std::tuple<std::string, std::string, int, uint32_t>, CutBound> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_tuple(topo.file, topo.name, int(kind), nranks);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, fabricCutBound(kind, nranks, topo)).first;
  return it->second;
}

LowerBound fabricLowerBound(CollectiveKind kind, uint32_t nranks, const Topology &topo, uint64_t bytes) {
  LowerBound b;
  // Latency: the longest route some rank's data must take (from the root for Broadcast-like).
  double hopUs = 0;
  const std::vector<double> oneRank = cutTraffic(kind, nranks, 1, false); // a non-root rank alone
  const bool fromRoot = oneRank.empty() || oneRank[0] == 0;               // only the root's side sends
  for (uint32_t a = 0; a < nranks; ++a)
    for (uint32_t c = 0; c < nranks; ++c)
      if (a != c && (!fromRoot || a == 0))
        hopUs = std::max(hopUs, topo.hopLatencyUs(a, c));
  b.latencySeconds = (topo.launchUs + hopUs) * 1e-6;
  const CutBound &cut = cachedCutBound(kind, nranks, topo);
  b.bandwidthSeconds = cut.secondsPerByte * double(bytes);
  const double hopSeconds = hopUs * 1e-6;
  b.seconds = topo.launchUs * 1e-6 + std::max(hopSeconds, b.bandwidthSeconds);
  b.limitedBy = hopSeconds >= b.bandwidthSeconds ? "latency (launch + the longest route)" : "cut " + cut.cut;
  return b;
}

} // namespace

LowerBound lowerBound(CollectiveKind kind, uint32_t nranks, const Topology &topo, uint64_t bytes) {
  LowerBound b;
  if (nranks < 2 || collectiveTraffic(kind, nranks, 1, false).rankLink == 0)
    return b;
  if (!topo.fabric.empty() && nranks <= topo.gpusPerNode)
    return fabricLowerBound(kind, nranks, topo, bytes);
  const uint32_t perNode = std::max<uint32_t>(topo.gpusPerNode, 1);
  const uint32_t nodes = (nranks + perNode - 1) / perNode;
  const double S = double(bytes);
  const double hopUs = nodes > 1 ? topo.netLatencyUs : topo.intraLatencyUs;
  b.latencySeconds = (topo.launchUs + hopUs) * 1e-6;
  std::string limit = nodes > 1 ? "network" : topo.intraKind;
  double linkSeconds = 0;
  // A rank's links: NVLink, and across nodes its NIC as well (a second way in and out: the
  // hierarchical AllGather brings a block from another node through it), so the cut around one
  // GPU has both capacities.
  const double nic = nodes > 1 ? std::max(topo.nicGBps, 0.0) : 0;
  if (topo.intraGBps > 0) {
    const CollectiveTraffic p2p = collectiveTraffic(kind, nranks, nodes, false);
    linkSeconds = p2p.rankLink * S / ((topo.intraGBps + nic) * 1e9);
    if (topo.nvls && topo.nvlsEfficiency > 0) {
      const CollectiveTraffic sw = collectiveTraffic(kind, nranks, nodes, true);
      const double nvlsSeconds = sw.rankLink * S / ((topo.intraGBps * topo.nvlsEfficiency + nic) * 1e9);
      if (nvlsSeconds < linkSeconds)
        linkSeconds = nvlsSeconds, limit = "nvls";
      else
        limit = topo.intraKind;
    } else {
      limit = topo.intraKind;
    }
  }
  double netSeconds = 0;
  if (nodes > 1 && topo.nicGBps > 0)
    netSeconds = collectiveTraffic(kind, nranks, nodes, false).nodeNetwork * S / (perNode * topo.nicGBps * 1e9);
  if (netSeconds > linkSeconds)
    limit = "network";
  b.bandwidthSeconds = std::max(linkSeconds, netSeconds);
  const double hopSeconds = hopUs * 1e-6;
  b.seconds = topo.launchUs * 1e-6 + std::max(hopSeconds, b.bandwidthSeconds);
  b.limitedBy = hopSeconds >= b.bandwidthSeconds
                    ? "latency (launch + one " + std::string(nodes > 1 ? "network" : topo.intraKind) + " hop)"
                    : limit;
  return b;
}

} // namespace msccl::runtime::sim
