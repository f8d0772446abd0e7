//===- Bound.cpp - The time no schedule can beat on a topology (model output) -------------===//
//
// Consumes a collective, a rank count, a topology and a message size; produces the model's lower
// bound (SimExecutor.h lowerBound): the launch, then the longer of one hop and the traffic every
// schedule must move (collectiveTraffic) over the links it must cross. Independent of any plan,
// so the tuner and msccl-run print it beside each prediction.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/SimExecutor.h"

#include <algorithm>

namespace msccl::runtime::sim {

LowerBound lowerBound(CollectiveKind kind, uint32_t nranks, const Topology &topo, uint64_t bytes) {
  LowerBound b;
  if (nranks < 2 || collectiveTraffic(kind, nranks, 1, false).rankLink == 0)
    return b;
  const uint32_t perNode = std::max<uint32_t>(topo.gpusPerNode, 1);
  const uint32_t nodes = (nranks + perNode - 1) / perNode;
  const double S = double(bytes);
  const double hopUs = nodes > 1 ? topo.netLatencyUs : topo.intraLatencyUs;
  b.latencySeconds = (topo.launchUs + hopUs) * 1e-6;
  std::string limit = nodes > 1 ? "network" : topo.intraKind;
  double linkSeconds = 0;
  if (topo.intraGBps > 0) {
    const CollectiveTraffic p2p = collectiveTraffic(kind, nranks, nodes, false);
    linkSeconds = p2p.rankLink * S / (topo.intraGBps * 1e9);
    if (topo.nvls && topo.nvlsEfficiency > 0) {
      const CollectiveTraffic sw = collectiveTraffic(kind, nranks, nodes, true);
      const double nvlsSeconds = sw.rankLink * S / (topo.intraGBps * topo.nvlsEfficiency * 1e9);
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
