//===- Fabric.cpp - Graph-shaped node interconnects: routes and names --------------------===//
//
// Consumes a Fabric whose vertices and links a topology file declared (Topology.cpp reads them);
// produces its routes: for every ordered pair of GPUs, the directed links a transfer between them
// loads (fewest hops, then least latency, ties to the links declared first; intermediate vertices
// are switches, or GPUs too when the fabric says GPUs forward), and the route's latency (the sum
// of its links'). Guarantees: every pair of GPUs has a route, or a TopologyError names the first
// pair without one.
//
//===------------------------------------------------------------------------------------===//
#include "Fabric.h"

#include <limits>
#include <map>
#include <queue>
#include <tuple>

namespace msccl::runtime::sim {

std::string Fabric::linkName(uint32_t d) const {
  return vertices[linkFrom(d)] + "->" + vertices[linkTo(d)];
}

std::vector<uint32_t> Fabric::translation(uint32_t r) const {
  uint32_t gpus = 1;
  for (uint32_t d : torusDims)
    gpus *= d;
  std::vector<uint32_t> image(gpus);
  for (uint32_t g = 0; g < gpus; ++g) {
    uint32_t a = g, b = r, out = 0, scale = 1;
    for (uint32_t d : torusDims) {
      out += ((a % d + b % d) % d) * scale;
      a /= d, b /= d, scale *= d;
    }
    image[g] = out;
  }
  return image;
}

void checkTorus(const Fabric &f, uint32_t gpus, const std::string &file) {
  uint32_t product = 1;
  for (uint32_t d : f.torusDims)
    product *= d;
  if (product != gpus)
    throw TopologyError("topology " + file + ": $.fabric.torus_dims: the sides multiply to " + std::to_string(product) +
                        ", not the node's " + std::to_string(gpus) + " GPUs");
  std::map<std::pair<uint32_t, uint32_t>, std::string> kinds;
  for (const FabricLink &l : f.links)
    kinds[{std::min(l.a, l.b), std::max(l.a, l.b)}] = l.kind;
  for (uint32_t r = 1; r < gpus; ++r) {
    const std::vector<uint32_t> t = f.translation(r);
    for (const FabricLink &l : f.links) {
      if (l.a >= gpus || l.b >= gpus)
        throw TopologyError("topology " + file + ": $.fabric.torus_dims: a torus links GPUs only (" +
                            f.vertices[l.a] + " - " + f.vertices[l.b] + ")");
      auto it = kinds.find({std::min(t[l.a], t[l.b]), std::max(t[l.a], t[l.b])});
      if (it == kinds.end() || it->second != l.kind)
        throw TopologyError("topology " + file + ": $.fabric.torus_dims: the translation taking gpu0 to gpu" +
                            std::to_string(r) + " maps link " + f.vertices[l.a] + " - " + f.vertices[l.b] +
                            " to no " + l.kind + " link");
    }
  }
}

void computeRoutes(Fabric &f, uint32_t gpus, const std::string &file) {
  const uint32_t nv = uint32_t(f.vertices.size());
  std::vector<std::vector<uint32_t>> out(nv); // directed links leaving each vertex, in file order
  for (uint32_t i = 0; i < f.links.size(); ++i) {
    out[f.links[i].a].push_back(2 * i);
    out[f.links[i].b].push_back(2 * i + 1);
  }
  f.routes.assign(size_t(gpus) * gpus, {});
  f.routeLatencyUs.assign(size_t(gpus) * gpus, 0);
  using Cost = std::pair<uint32_t, double>; // hops, latency
  constexpr uint32_t kNo = std::numeric_limits<uint32_t>::max();
  for (uint32_t src = 0; src < gpus; ++src) {
    std::vector<Cost> best(nv, {kNo, 0});
    std::vector<uint32_t> via(nv, kNo); // directed link reaching the vertex
    using Item = std::tuple<uint32_t, double, uint32_t>;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> q;
    best[src] = {0, 0};
    q.push({0, 0.0, src});
    while (!q.empty()) {
      auto [hops, lat, v] = q.top();
      q.pop();
      if (Cost{hops, lat} != best[v])
        continue;
      if (v != src && v < gpus && !f.gpusForward)
        continue; // a GPU ends a route here: it does not forward
      for (uint32_t d : out[v]) {
        uint32_t w = f.linkTo(d);
        Cost c{hops + 1, lat + f.links[d / 2].latencyUs};
        if (c < best[w]) {
          best[w] = c;
          via[w] = d;
          q.push({c.first, c.second, w});
        }
      }
    }
    for (uint32_t dst = 0; dst < gpus; ++dst) {
      if (dst == src)
        continue;
      if (via[dst] == kNo)
        throw TopologyError("topology " + file + ": $.fabric: no route from " + f.vertices[src] + " to " +
                            f.vertices[dst] + (f.gpusForward ? "" : " through switches (GPUs do not forward)"));
      std::vector<uint32_t> path;
      for (uint32_t v = dst; v != src; v = f.linkFrom(via[v]))
        path.insert(path.begin(), via[v]);
      f.routes[size_t(src) * gpus + dst] = std::move(path);
      f.routeLatencyUs[size_t(src) * gpus + dst] = best[dst].second;
    }
  }
}

} // namespace msccl::runtime::sim
