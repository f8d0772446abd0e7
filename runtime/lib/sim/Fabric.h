//===- Fabric.h - Routes of a graph-shaped node interconnect (internal to msccl_sim) -----===//
#pragma once

#include "msccl/runtime/SimExecutor.h"

namespace msccl::runtime::sim {

/// Fill f.routes and f.routeLatencyUs for GPUs 0..gpus-1 (Fabric.cpp). Throws TopologyError
/// naming `file` and the first pair of GPUs without a route.
void computeRoutes(Fabric &f, uint32_t gpus, const std::string &file);

/// Check that f.torusDims multiply to `gpus` and that every translation maps each link to a link
/// of the same kind. Throws TopologyError naming `file` and the first link that does not map.
void checkTorus(const Fabric &f, uint32_t gpus, const std::string &file);

} // namespace msccl::runtime::sim
